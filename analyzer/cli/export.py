"""``export``: every exchange as JSON or NDJSON (the statistics tables at the end), in one
process or shared among ``-j`` processes."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from typing import BinaryIO

from analyzer.cli.args import add_capture_args, add_display_filter_arg, add_state_args, bounds_of
from analyzer.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    analysis,
    display_filter,
    finish,
    one_process_instead,
    options,
    parallel_paths,
    usage,
)
from analyzer.session.bounded import Bounds
from analyzer.session.insights import Insights
from analyzer.session.report import stats_tables
from analyzer.session.stats import Stats


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="every exchange as JSON or NDJSON")
    add_capture_args(p)
    add_state_args(p)
    add_display_filter_arg(p, "export only the exchanges matching EXPR")
    p.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    p.add_argument("--format", choices=("json", "ndjson"), default="ndjson")
    p.add_argument("--records", action="store_true", help="decode record bodies (keys, values, headers)")
    p.add_argument("--no-spans", action="store_true", help="leave out the byte span of every field")
    p.set_defaults(func=run)


@contextlib.contextmanager
def _output(args) -> Iterator[BinaryIO]:
    """Where ``export`` writes: ``-o FILE`` (closed at the end, whatever happens) or stdout
    (flushed at the end)."""
    if args.output and args.output != "-":
        with open(args.output, "wb") as f:
            yield f
        return
    try:
        yield sys.stdout.buffer
    finally:
        sys.stdout.buffer.flush()


def _parallel(args, paths: list[str], bounds: Bounds) -> int | None:
    """None: the processes failed before writing anything (said on stderr): one process must."""
    from analyzer.export.parallel import PartFailed, export

    try:
        with _output(args) as out:
            outcome = export(
                paths,
                out,
                args.format,
                args.jobs,
                options(args),
                ports=tuple(args.port or ()),
                keylog=getattr(args, "tls_keylog", None),
                spans=not args.no_spans,
                bounds=bounds,
            )
    except PartFailed as exc:
        one_process_instead("export", args.jobs, exc, "exporting")
        return None
    except KeyboardInterrupt:
        print("kafka-analyzer: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    return finish(outcome)


def run(args) -> int:
    from analyzer.export.writer import Writer

    bounds = bounds_of(args)
    if isinstance(bounds, str):
        usage(bounds)
        return EXIT_USAGE
    paths = parallel_paths(args)
    if paths is not None:
        rc = _parallel(args, paths, bounds)
        if rc is not None:
            return rc
    try:
        with _output(args) as out, analysis(args, flt=display_filter(args)) as a:
            stats = Stats(a.knowledge.topic_ids, bounds)
            insights = Insights(a.knowledge.topic_ids, bounds=bounds)
            w = Writer(out, args.format, spans=not args.no_spans, records=args.records)
            w.begin(a.source.name)
            outcome = a.run(stats, w, insights)
            w.objects(insights.objects(outcome.last_ts if outcome.packets else None))
            w.end(stats_tables(stats, outcome, insights))
    except BrokenPipeError:
        return EXIT_OK
    return finish(outcome)
