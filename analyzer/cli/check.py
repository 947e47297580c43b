"""``check``: CI rules over recorded traffic (the work is in :mod:`analyzer.check.run`), over
capture files or the Parquet output of ``kafka-analyzer spark``."""

from __future__ import annotations

import argparse

from analyzer.cli.args import add_capture_args, add_display_filter_arg
from analyzer.cli.common import EXIT_USAGE, usage


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check",
        help="CI rules over recorded traffic: built-in pack, rules file, baseline; text, JSON, "
        "GitHub, JUnit, SARIF; exit 0 pass, 1 findings, 2 configuration error, 3 inconclusive",
    )
    add_capture_args(p)
    p.add_argument("--rules", metavar="FILE.toml", help="rules, pack settings and waivers (see README)")
    p.add_argument("--baseline", metavar="FILE.json", help="compare each client with this baseline")
    p.add_argument(
        "--update-baseline", action="store_true", help="write the captures' profile to --baseline FILE"
    )
    p.add_argument("--sarif", metavar="FILE.sarif", help="write a SARIF 2.1.0 report")
    p.add_argument(
        "--format",
        choices=("text", "json", "github"),
        default="text",
        help="github: workflow annotations (::error/::warning) before the text",
    )
    p.add_argument(
        "--fail-on",
        choices=("error", "warning"),
        help="the least severity that fails the run (default error, or the rules file's)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="list every finding")
    p.add_argument("--today", help=argparse.SUPPRESS)  # waiver expiry, for tests
    p.add_argument(
        "--allow",
        action="append",
        metavar="CODE",
        help="issue code not to count as a problem (repeatable), e.g. records.crc_mismatch",
    )
    p.add_argument("--max-kafka-errors", type=int, metavar="N", help="at most N responses with error codes")
    p.add_argument(
        "--forbid-error",
        action="append",
        metavar="NAME",
        help="fail on any response with this Kafka error (names, comma-separated, repeatable)",
    )
    p.add_argument("--max-unanswered", type=int, metavar="N", help="at most N unanswered requests")
    p.add_argument(
        "--latency",
        action="append",
        metavar="API=[pNN:]MS",
        help="latency bound, p99 by default: Produce=50, Fetch=p95:600, Metadata=max:10",
    )
    p.add_argument("--expect-api", action="append", metavar="API", help="these APIs must occur")
    add_display_filter_arg(p, "the rules look at the exchanges matching EXPR only")
    p.add_argument(
        "--assert",
        dest="assert_",
        action="append",
        metavar="EXPR",
        help="every (selected) exchange must satisfy this display filter (repeatable), "
        "e.g. 'not error' or 'api != Produce or produce.acks == -1'",
    )
    p.add_argument("--junit", metavar="FILE.xml", help="write a JUnit XML report")
    p.add_argument(
        "--parquet",
        action="store_true",
        help="CAPTURE is an output directory of `kafka-analyzer spark` (written with --records "
        "when a rule reads record bodies, as kafka.invalid-batches does): the same rules, verdicts "
        "and reports from its Parquet tables (no capture read; needs pyarrow, not Spark)",
    )
    p.add_argument("--set", metavar="NAME", help="(--parquet) that capture set only")
    p.set_defaults(func=run, func_parquet=run_parquet)


def run(args) -> int:
    from analyzer.check import run as check

    return check.run(args, getattr(args, "chains", None) or [[args.capture]])


def run_parquet(args) -> int:
    """``check --parquet DIR``: the rules over the Parquet output of ``kafka-analyzer spark``."""
    if len(args.capture) != 1:
        usage("check --parquet takes one output directory of `kafka-analyzer spark`")
        return EXIT_USAGE
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError as exc:
        usage(f"check --parquet needs pyarrow (pip install 'kafka-analyzer[spark]'): {exc}")
        return EXIT_USAGE
    from analyzer.check import run as check

    return check.run(args, [])
