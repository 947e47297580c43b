"""``read``: one line per request/response exchange (and per TLS connection at its end)."""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from analyzer.cli.args import add_capture_args, add_filter_args
from analyzer.cli.common import EXIT_USAGE, analysis, display_filter, exchange_line, finish, tls_line, usage
from analyzer.dissect.constants import ApiKey
from analyzer.events import ConnectionEnd, ConnIssue
from analyzer.model import Exchange, Field, Severity
from analyzer.pipeline import Analysis, Outcome
from analyzer.session.fieldtree import plain, tree_lines
from analyzer.session.internal import InternalRecord, annotate, exchange_internal_records
from analyzer.session.records import FETCH_APIS

_CARRIERS = FETCH_APIS | {ApiKey.PRODUCE}  # the exchanges whose records read -v may decode


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("read", help="one line per request/response exchange")
    add_capture_args(p)
    add_filter_args(p)
    p.add_argument(
        "-V",
        "--tree",
        action="store_true",
        help="under each exchange, its decoded field tree (request, response, issues), as the TUI's "
        "detail tree shows it; record bodies decoded, secrets masked (unless --show-secrets)",
    )
    p.add_argument(
        "-w",
        "--write",
        metavar="OUT",
        help="also write the packets of the exchanges shown (-Y and the shorthands) to OUT, pcap or "
        "pcapng as the input is, in capture order, with their connections' handshake and FIN/RST "
        "packets, so that Wireshark reassembles them; - writes them to stdout (and no line is "
        "printed). A TLS connection's packets are written whole and encrypted, as captured (with "
        "the pcapng's decryption secrets, if any; give Wireshark the key log for the others). "
        "Topics named by id (Fetch v13+) show as ids in OUT unless the Metadata exchanges naming "
        "them are kept too (--api Fetch,Metadata). The capture is read twice: a file, not stdin",
    )
    p.set_defaults(func=run)


class ReadPrinter:
    """``read``'s consumer: a line per exchange (and per TLS connection at its end); connection
    issues listed with ``-v``, else counted and said once at the end on stderr."""

    def __init__(self, a: Analysis, out, verbose: bool, absolute: bool, tree: bool = False) -> None:
        self.a, self.out, self.verbose, self.absolute, self.tree = a, out, verbose, absolute, tree
        self.origin: float | None = None
        self.unlisted: Counter[str] = Counter()  # connection issues without -v: said once, counted

    def event(self, ev) -> None:
        t = type(ev)
        if t is Exchange:
            if self.origin is None:
                self.origin = self.a.first_ts
            self.out.write(exchange_line(ev, self.origin, self.absolute) + "\n")
            if self.tree:
                self.out.write(tree_text(ev))
            if self.verbose and ev.api_key in _CARRIERS:
                for r in exchange_internal_records(ev, self.a.knowledge.topic_ids):
                    self.out.write(internal_lines(r))
        elif t is ConnIssue:
            if self.verbose:
                print(f"# {ev.issue.severity}: {ev.issue.code}: {ev.issue.message}", file=self.out)
            elif ev.issue.severity >= Severity.WARNING:
                self.unlisted[ev.issue.code] += 1
        elif t is ConnectionEnd and ev.conn.tls is not None:
            if self.origin is None:
                self.origin = self.a.first_ts
            self.out.write(tls_line(ev.conn, self.origin, self.absolute) + "\n")

    def done(self, outcome: Outcome) -> None:
        if self.unlisted:
            n = sum(self.unlisted.values())
            codes = ", ".join(f"{code} ({k})" for code, k in sorted(self.unlisted.items()))
            print(
                f"kafka-analyzer: warning: {n} connection issue{'s' if n != 1 else ''} between the "
                f"exchanges: {codes}; read -v lists them",
                file=sys.stderr,
            )


def tree_text(ex: Exchange) -> str:
    """``read -V``'s lines under an exchange: its field tree, every node expanded, indented two
    spaces a level (:func:`~analyzer.session.fieldtree.tree_lines`, the TUI's tree); the records
    of internal topics carry their decoded keys and values, as in the TUI."""
    for m in (ex.request, ex.response):
        annotate(m)
    return "".join(f"{'  ' * (depth + 1)}{plain(parts)}\n" for depth, parts in tree_lines(ex))


def internal_lines(r: InternalRecord) -> str:
    """``read -v``'s lines for a record of an internal topic, under its exchange: where it is and
    its summary, then its key's and value's fields (:class:`~analyzer.dissect.coordinator.\
    CoordinatorRecord`), a tombstone's value named."""
    rec = r.record
    at = f"offset {r.offset}" if r.offset is not None else "offset -"
    out = [f"    {r.topic}[{r.partition}] {at}: {rec.summary}"]
    if rec.key is not None:
        out += _field_lines("key", rec.key, 6)
    if rec.tombstone:
        out.append("      value: null (tombstone)")
    elif rec.value is not None:
        out += _field_lines("value", rec.value, 6)
    out += [f"      # {i.severity}: {i.code}: {i.message}" for i in rec.issues]
    return "\n".join(out) + "\n"


def _field_lines(name: str, f: Field, indent: int) -> list[str]:
    pad = " " * indent
    if f.children is None or (f.type == "bytes" and not f.children):
        v = f.value
        text = v.hex() if isinstance(v, bytes | bytearray | memoryview) else repr(v)
        shown = f" ({f.display})" if f.display is not None and f.display != v else ""
        return [f"{pad}{name}: {text}{shown}"]
    head = f"{pad}{name}:"
    if f.type.startswith("[]"):
        head += f" {f.value} element{'s' if f.value != 1 else ''}" if isinstance(f.value, int) else " null"
    elif f.type == "bytes":
        head += f" {len(f.value or b'')} bytes: {f.display}"
    out = [head]
    for i, c in enumerate(f.children):
        out += _field_lines(f"[{i}]" if f.type.startswith("[]") else c.name, c, indent + 2)
    return out


def run(args) -> int:
    flt = display_filter(args)
    if args.write is not None:
        return _run_write(args, flt)
    with analysis(args, flt=flt, records=args.tree) as a:
        outcome = a.run(ReadPrinter(a, sys.stdout, args.verbose, args.absolute, args.tree))
    return finish(outcome)


def _run_write(args, flt) -> int:
    """``read -w OUT``: pass 1 finds the packets of the exchanges shown, pass 2 copies them."""
    from analyzer.capture.keep import ExchangePackets
    from analyzer.capture.pcapwriter import CopyError, copy_packets

    cap = args.capture
    paths = list(cap.paths) if hasattr(cap, "paths") else [cap]
    out_path = args.write
    if "-" in paths:
        usage("read -w reads the capture twice: give a capture file, not stdin (-)")
        return EXIT_USAGE
    keep = ExchangePackets()
    with analysis(args, flt=flt, records=args.tree) as a:
        shown = (
            [] if out_path == "-" else [ReadPrinter(a, sys.stdout, args.verbose, args.absolute, args.tree)]
        )
        outcome = a.run(keep, *shown)
    if outcome.unusable():
        return finish(outcome)
    try:
        if out_path == "-":
            sys.stdout.flush()
            written = copy_packets(paths, keep.keep, sys.stdout.buffer)
            sys.stdout.buffer.flush()
        else:
            with open(out_path, "wb") as f:
                written = copy_packets(paths, keep.keep, f)
    except CopyError as exc:
        usage(f"-w: cannot write one capture: {exc}")
        return EXIT_USAGE
    except OSError as exc:
        usage(f"-w: cannot write {out_path}: {exc.strerror or exc}")
        return EXIT_USAGE
    if out_path != "-":
        n = keep.exchanges
        print(
            f"kafka-analyzer: wrote {written} packet{'s' if written != 1 else ''} of {n} "
            f"exchange{'s' if n != 1 else ''} to {out_path}",
            file=sys.stderr,
        )
    return finish(outcome)
