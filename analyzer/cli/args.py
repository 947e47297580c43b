"""The arguments several subcommands share: the capture files and their options, the limits, the
display filter and ``read``'s filter shorthands; argument types."""

from __future__ import annotations

import argparse
import os
import sys

from analyzer.dissect.codecs import DEFAULT_LIMITS
from analyzer.session.bounded import DEFAULT_BOUNDS, Bounds


def add_capture_args(p: argparse.ArgumentParser, capture: bool = True, nargs: str = "+") -> None:
    """The capture files (``capture=False``: none, ``live``), ``-j``, the broker ports, secrets,
    the limits and the TLS key log."""
    if capture:
        p.add_argument(
            "capture",
            nargs=nargs,
            help="pcap or pcapng files (optionally gzip/zstd compressed), or - for stdin",
        )
        p.add_argument(
            "-j",
            "--jobs",
            type=int,
            default=1,
            metavar="N",
            help="N processes: several capture files that are not one recording are analysed N at "
            "a time; export and stats share one capture's connections among N processes (the same "
            "output)",
        )
        p.add_argument(
            "--separate",
            action="store_true",
            help="analyse each capture file on its own, even when they are pieces of one recording",
        )
        p.add_argument("--one-recording", action="store_true", help=argparse.SUPPRESS)
    p.add_argument(
        "--port",
        type=int,
        action="append",
        metavar="PORT",
        help="a broker port (repeatable); Kafka is found by content anyway, this settles roles",
    )
    p.add_argument(
        "--show-secrets", action="store_true", help="do not mask SASL passwords, SCRAM proofs and signatures"
    )
    add_limit_args(p)
    p.add_argument(
        "--tls-keylog",
        metavar="FILE",
        help="decrypt TLS with this NSS key log (SSLKEYLOGFILE); pcapng secrets blocks are used anyway",
    )


def add_limit_args(p: argparse.ArgumentParser) -> None:
    """The decoding limits (every command that decodes, the Spark job's executors too)."""
    lim = p.add_argument_group("limits (hostile or huge captures; each limit hit is reported as an issue)")
    lim.add_argument(
        "--max-records",
        type=int,
        metavar="N",
        help=f"records decoded one by one per batch or wrapper (default {DEFAULT_LIMITS.max_records})",
    )
    lim.add_argument(
        "--max-decompressed",
        type=int,
        metavar="MIB",
        help="decompressed record bytes per request or response "
        f"(default {DEFAULT_LIMITS.max_total_output >> 20} MiB)",
    )
    lim.add_argument(
        "--max-elements",
        type=int,
        metavar="N",
        help=f"array elements decoded per message (default {DEFAULT_LIMITS.max_elements})",
    )
    lim.add_argument(
        "--max-connections",
        type=int,
        metavar="N",
        help=f"TCP connections tracked at once (default {DEFAULT_LIMITS.max_connections})",
    )


def add_state_args(p: argparse.ArgumentParser) -> None:
    """The bounds of the long-lived tables (groups, producers, clients, the statistics' clients,
    connections and topics; latencies kept exactly): ``live`` for weeks, offline the same."""
    g = p.add_argument_group("state bounds (each table lets the longest idle go first, counted)")
    g.add_argument(
        "--state-idle",
        type=float,
        metavar="SECONDS",
        help="let an entry go after SECONDS of capture time unused; 0: never "
        f"(default {DEFAULT_BOUNDS.idle:g})",
    )
    g.add_argument(
        "--state-max",
        type=int,
        metavar="N",
        help=f"entries per table at most (default {DEFAULT_BOUNDS.max_entries})",
    )
    g.add_argument(
        "--exact-latencies",
        type=int,
        metavar="N",
        help="latencies per API kept exactly for the percentiles, then log buckets within 1%% "
        f"(default {DEFAULT_BOUNDS.exact_latencies})",
    )


def bounds_of(args) -> Bounds | str:
    """The :class:`Bounds` of :func:`add_state_args`' options (a string: what is wrong)."""
    idle = getattr(args, "state_idle", None)
    most = getattr(args, "state_max", None)
    exact = getattr(args, "exact_latencies", None)
    if idle is not None and (idle < 0 or idle != idle):
        return f"--state-idle {idle:g}: not a number of seconds >= 0"
    if most is not None and most < 1:
        return f"--state-max {most}: at least 1"
    if exact is not None and exact < 0:
        return f"--exact-latencies {exact}: at least 0"
    return Bounds(
        idle=DEFAULT_BOUNDS.idle if idle is None else (idle or None),
        max_entries=DEFAULT_BOUNDS.max_entries if most is None else most,
        every=DEFAULT_BOUNDS.every if idle is None or not idle else min(DEFAULT_BOUNDS.every, idle),
        exact_latencies=DEFAULT_BOUNDS.exact_latencies if exact is None else exact,
    )


def state_bounds(args) -> Bounds | None:
    """:func:`bounds_of`, or None after saying on stderr what is wrong."""
    bounds = bounds_of(args)
    if isinstance(bounds, str):
        print(f"kafka-analyzer: {bounds}", file=sys.stderr)
        return None
    return bounds


def with_evictions(report: dict, evictions, bounds: Bounds) -> dict:
    """``report`` with its ``evictions`` rows (:meth:`Evictions.rows`) when a table let any go."""
    if evictions:
        report["evictions"] = evictions.rows(bounds)
    return report


def evictions_text(report: dict) -> list[str]:
    """The text lines of a report's ``evictions`` (none when nothing was let go)."""
    rows = report.get("evictions") or []
    return ([""] if rows else []) + [f"let go to stay bounded: {r['said']}" for r in rows]


def byte_size(text: str) -> int:
    """A size in bytes: a number with an optional K, M or G (binary) suffix."""
    t = text.strip().upper().removesuffix("B")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    try:
        n = int(t[:-1] if mult > 1 else t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (bytes, or with K, M, G)") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"not a size: {text!r}")
    return n * mult


def add_display_filter_arg(
    p: argparse.ArgumentParser, what: str = "only the exchanges matching EXPR"
) -> None:
    p.add_argument(
        "-Y",
        "--display-filter",
        metavar="EXPR",
        help=f"{what}, e.g. 'api == Produce and latency > 5ms' (see `kafka-analyzer filters`)",
    )


def add_filter_args(p: argparse.ArgumentParser) -> None:
    """``-Y`` and the shorthands of ``read`` and ``live`` (joined into one display filter)."""
    add_display_filter_arg(p)
    p.add_argument(
        "--api",
        action="append",
        metavar="API",
        help="only these APIs (names or keys, repeatable): api in {...}",
    )
    p.add_argument(
        "--topic", action="append", metavar="TOPIC", help="only exchanges naming this topic: topic in {...}"
    )
    p.add_argument(
        "--client", action="append", metavar="CLIENT_ID", help="only this client id: client_id in {...}"
    )
    p.add_argument(
        "--errors",
        action="store_true",
        help="only exchanges with error codes or problems: (error or severity >= warning)",
    )
    p.add_argument(
        "--slower-than", type=float, metavar="MS", help="only exchanges slower than MS ms: latency >= MS"
    )
    p.add_argument("--absolute", action="store_true", help="absolute UTC times instead of seconds from start")
    p.add_argument("-v", "--verbose", action="store_true", help="also print connection-level issues")


# The options naming a file a command writes, with the flag a message names: checked in one place
# (cli.main) before anything is read, so that no run writes over a file it reads (a capture, the
# key log, the rules, the baseline it compares with) and a path that cannot be written is one line
# at once, not a traceback after the analysis.
OUTPUT_OPTIONS = (
    ("output", "-o"),
    ("write", "-w"),
    ("junit", "--junit"),
    ("sarif", "--sarif"),
    ("metrics_file", "--metrics-file"),
)


def check_writable(out_path: str, reads: list[tuple[str, str]]) -> str | None:
    """Why a file cannot be written at ``out_path`` (a sentence), or None when it can. ``reads``:
    the files the run reads, each with what it is ("the capture")."""
    if os.path.isdir(out_path):
        return f"is a directory: {out_path}"
    if os.path.exists(out_path):
        for path, what in reads:
            if os.path.exists(path) and os.path.samefile(out_path, path):
                return f"{out_path} is {what} being read"
    parent = os.path.dirname(os.path.abspath(out_path))
    if not os.path.isdir(parent):
        return f"no such directory: {parent}"
    if not os.access(parent, os.W_OK) or (os.path.exists(out_path) and not os.access(out_path, os.W_OK)):
        return f"cannot write {out_path}: permission denied"
    return None


def output_problem(args, captures: list[str]) -> str | None:
    """The first output option of ``args`` that cannot be written (``FLAG: why``), or None. What
    the run reads: the captures, ``--tls-keylog``, ``--rules`` and, unless it is the file
    ``--update-baseline`` writes, ``--baseline``."""
    update = getattr(args, "update_baseline", False)
    reads = [(c, "the capture") for c in captures if c != "-"]
    named = (("tls_keylog", "the key log"), ("rules", "the rules file"), ("baseline", "the baseline"))
    for attr, what in named:
        path = getattr(args, attr, None)
        if isinstance(path, str) and not (attr == "baseline" and update):
            reads.append((path, what))
    outputs = [(flag, getattr(args, attr, None)) for attr, flag in OUTPUT_OPTIONS]
    if update:
        outputs.append(("--baseline", getattr(args, "baseline", None)))
    for flag, path in outputs:
        if isinstance(path, str) and path and path != "-":
            problem = check_writable(path, reads)
            if problem:
                return f"{flag}: {problem}"
    return None
