"""``tui``: browse a capture file (or stdin), or a live interface (``-i``); the screen is
:mod:`analyzer.tui` (textual is imported only here)."""

from __future__ import annotations

import argparse
import sys

from analyzer.cli.args import add_capture_args, add_display_filter_arg
from analyzer.cli.common import EXIT_USAGE, display_filter, usage
from analyzer.dissect.codecs import Limits
from analyzer.dissect.message import Options


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tui", help="browse a capture, or a live interface (-i): exchanges, field tree, hex view"
    )
    add_capture_args(p, nargs="*")
    add_display_filter_arg(p, "the filter bar starts with EXPR")
    p.add_argument("-i", "--interface", help="capture live on this interface (needs capture privileges)")
    p.add_argument("-f", "--filter", metavar="BPF", help="(-i) capture filter, e.g. 'tcp port 9092'")
    p.add_argument("--write", metavar="FILE.pcap", help="(-i) also save the packets")
    p.add_argument("--buffer", type=int, default=32, metavar="MB", help="(-i) kernel ring size")
    p.add_argument(
        "--max-exchanges",
        type=int,
        metavar="N",
        help="(-i) keep at most N exchanges (default 500000, about 300 MB); later ones are counted "
        "as queue drops in the status line",
    )
    p.set_defaults(func=run)


def run(args) -> int:
    """The TUI on a capture file (or ``-``: stdin), or on a live interface (``-i``)."""
    from analyzer.tui.app import run_tui

    opts = Options(records_bodies=True, show_secrets=args.show_secrets, limits=Limits.from_settings(args))
    flt = args.display_filter
    if flt is not None and flt.strip():
        display_filter(args)  # a bad expression is reported (with a caret) before the screen opens
    if args.interface:
        if args.capture:
            usage("tui: a capture file or -i INTERFACE, not both")
            return EXIT_USAGE
        source = _live_source(args)
        if source is None:
            return EXIT_USAGE
        return run_tui(
            source,
            opts,
            tuple(args.port or ()),
            tls_keylog=args.tls_keylog,
            display_filter=flt,
            max_exchanges=args.max_exchanges,
        )
    if args.filter or args.write or args.max_exchanges:
        usage("tui: -f, --write and --max-exchanges go with -i INTERFACE (a live capture)")
        return EXIT_USAGE
    if not args.capture:
        usage("tui: give a capture file, - (stdin), or -i INTERFACE")
        return EXIT_USAGE
    return run_tui(args.capture, opts, tuple(args.port or ()), tls_keylog=args.tls_keylog, display_filter=flt)


def _live_source(args):
    """The live source of ``tui -i``: the AF_PACKET ring ``live`` uses, opened now so a capture
    that cannot start is said on stderr before the screen opens; None after printing why.

    One reader, no fanout workers: the TUI needs every exchange in its own process (the index,
    the spool, the statistics), and handing a decoded exchange over from a worker costs more
    than decoding it (unpickling one took about 560 us on the bench capture, a lean decode
    60-300 us)."""
    if not sys.platform.startswith("linux"):
        usage("tui -i: live capture in the TUI needs Linux (the AF_PACKET ring)")
        return None
    from analyzer.capture.ring import RingCapture

    src = RingCapture(
        args.interface,
        bpf=args.filter,
        write=args.write,
        buffer_mb=args.buffer,
        announce=False,
        idle_ticks=True,
    )
    if not src.open():
        usage(f"error: {src.error}")
        return None
    return src
