"""kafka-analyzer command line: read, stats, groups, producers, transactions, clients, topology,
export, live, check, tui, filters, spark, protocol.

This module is the command table: each subcommand's parser and handler live in their own module
of this package (its ``add_parser`` adds the parser and sets ``func``, the handler); what they
share is :mod:`analyzer.cli.common` (the run) and :mod:`analyzer.cli.args` (the arguments).
:func:`main` checks the files named, groups capture files into recordings, and runs the handler.

Exit codes: 0 success; 1 the capture was damaged (truncated or corrupt: partial results were
printed) or held no Kafka traffic; 2 usage errors, missing or unreadable files, not a capture.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys

from analyzer import __version__
from analyzer.capture.files import check_readable
from analyzer.cli.args import byte_size, output_problem
from analyzer.cli.common import EXIT_OK, EXIT_USAGE, BadFilter, usage

__all__ = ["build_parser", "byte_size", "main"]

# the subcommands, in the order of ``--help``, and the module of analyzer.cli that adds each one's
# parser (its ``add_parser``; producers adds transactions too, clients topology)
COMMANDS = {
    "read": "read",
    "stats": "stats",
    "groups": "groups",
    "producers": "producers",
    "transactions": "producers",
    "clients": "clients",
    "topology": "clients",
    "export": "export",
    "live": "live",
    "check": "check",
    "tui": "tui",
    "filters": "filters",
    "spark": "spark",
    "protocol": "protocol",
}


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand; given the arguments of a run naming one (``stats ...``),
    only that subcommand's module is imported and its parser added (the usage and every message
    read the same: the top-level usage names all of them)."""
    ap = argparse.ArgumentParser(prog="kafka-analyzer", description="Kafka wire-protocol analyzer")
    ap.add_argument("--version", action="version", version=f"kafka-analyzer {__version__}")
    named = argv[0] if argv and argv[0] in COMMANDS else None
    if named is None:
        sub = ap.add_subparsers(dest="command", required=True)
        modules = list(dict.fromkeys(COMMANDS.values()))
    else:  # (the metavar: the usage the full parser prints, {read,stats,...})
        sub = ap.add_subparsers(dest="command", required=True, metavar="{" + ",".join(COMMANDS) + "}")
        modules = [COMMANDS[named]]
    for module in modules:
        importlib.import_module(f"analyzer.cli.{module}").add_parser(sub)
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(argv).parse_args(argv)
    keylog = getattr(args, "tls_keylog", None)
    problem = check_readable(keylog) if keylog else None
    if problem:
        print(f"kafka-analyzer: --tls-keylog: {problem}", file=sys.stderr)
        return EXIT_USAGE
    if keylog:
        kept = _kept_keylog(keylog)
        if kept != keylog:  # a pipe (<(...), /dev/stdin): read once, kept for every reader
            args.tls_keylog = kept
            argv = [
                kept if a == keylog else a.replace(keylog, kept) if a.startswith("--tls-keylog=") else a
                for a in argv
            ]
    caps = getattr(args, "capture", None)
    problem = output_problem(args, caps) if caps else None  # (live's outputs are its own)
    if problem:
        usage(problem)
        return EXIT_USAGE
    if getattr(args, "parquet", False):
        return args.func_parquet(args)
    if caps:  # (tui -i has none)
        for cap in caps:
            problem = None if cap == "-" else check_readable(cap)
            if problem:
                print(f"kafka-analyzer: {problem}", file=sys.stderr)
                return EXIT_USAGE
        chains = _chains(args, caps)
        if chains is None:
            return EXIT_USAGE
        if args.command == "check":  # every chain in one run: one capture set, one report
            args.chains = chains
        elif len(caps) > 1:
            if len(chains) > 1:
                return _many(args, argv, caps, chains)
            if args.command == "tui":
                print("kafka-analyzer: the TUI opens one capture file at a time", file=sys.stderr)
                return EXIT_USAGE
            from analyzer.capture.sets import CaptureSet

            args.capture = CaptureSet(chains[0])
        else:
            args.capture = caps[0]
    try:
        return args.func(args)
    except BadFilter:
        return EXIT_USAGE
    except BrokenPipeError:
        # stdout closed early (| head): not an error
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        return EXIT_OK


def _chains(args, caps: list[str]) -> list[list[str]] | None:
    """The capture files grouped into chains (the pieces of each recording)."""
    if len(caps) == 1:
        return [caps]
    if "-" in caps:
        usage("stdin (-) cannot be combined with other capture files")
        return None
    if args.separate:
        return [[c] for c in caps]
    if args.one_recording:
        return [caps]
    from analyzer.capture.sets import plan

    return plan(caps)


def _kept_keylog(path: str) -> str:
    """``path`` when it is a regular file; else (a pipe, a process substitution) its text,
    read once into a private temporary file removed at exit: every capture of the run, and
    every process of ``-j`` or of several captures, reads the key log again."""
    import atexit
    import os
    import stat
    import tempfile

    try:
        if stat.S_ISREG(os.stat(path).st_mode):
            return path
        with open(path, "rb") as f:
            text = f.read()
    except OSError:
        return path  # (check_readable said it is readable: the reader will say what fails)
    fd, kept = tempfile.mkstemp(prefix="kafka-analyzer-keylog-")  # mode 0600: secrets
    with os.fdopen(fd, "wb") as out:
        out.write(text)

    def remove() -> None:
        if os.path.exists(kept):
            os.unlink(kept)

    atexit.register(remove)
    return kept


def _many(args, argv: list[str], caps: list[str], chains: list[list[str]]) -> int:
    """Capture files that are not one recording: each chain (one file, or the rotated pieces of
    one recording) is analysed by its own process (``-j`` at a time); outputs are printed in
    the order of the chains, each under a ``==> FILES <==`` line for read/stats/check."""
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    if args.command == "tui":
        print("kafka-analyzer: the TUI opens one capture at a time", file=sys.stderr)
        return EXIT_USAGE
    if args.command == "read" and args.write is not None:
        print(
            "kafka-analyzer: read -w writes one capture: give one file or the pieces of one recording",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if args.command == "export" and (args.format == "json" or args.output):
        print("kafka-analyzer: several captures export as NDJSON to stdout only", file=sys.stderr)
        return EXIT_USAGE
    rest = [a for a in argv if a not in caps and a not in ("--separate", "--one-recording")]
    jobs = [j for j in range(len(rest)) if rest[j] in ("-j", "--jobs")]
    for j in reversed(jobs):
        del rest[j : j + 2]
    rest = [a for a in rest if not a.startswith("--jobs=")]

    def one(chain: list[str]):
        cmd = [sys.executable, "-m", "analyzer", rest[0], *chain, *rest[1:]]
        if len(chain) > 1:
            cmd.append("--one-recording")
        return subprocess.run(cmd, capture_output=True)

    rc = EXIT_OK
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for chain, r in zip(chains, pool.map(one, chains), strict=True):
            if args.command != "export":
                sys.stdout.write(f"==> {' + '.join(chain)} <==\n")
                sys.stdout.flush()
            sys.stdout.buffer.write(r.stdout)
            sys.stdout.buffer.flush()
            sys.stderr.buffer.write(r.stderr)
            rc = max(rc, r.returncode)
    return rc
