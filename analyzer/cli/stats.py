"""``stats``: tables per API, topic, client, connection and anomalies, counted here, by ``-j``
processes, or read from the Parquet output of ``kafka-analyzer spark`` (``--parquet``); the
tables as text (rich on a terminal) or JSON."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from analyzer.cli.args import add_capture_args, add_display_filter_arg, add_state_args, bounds_of
from analyzer.cli.common import (
    EXIT_DAMAGED,
    EXIT_OK,
    EXIT_USAGE,
    analysis,
    display_filter,
    finish,
    one_process_instead,
    options,
    parallel_paths,
    print_json,
    usage,
)
from analyzer.cli.metrics import add_metric_args, available, write_file
from analyzer.cli.metrics import limits as metric_limits
from analyzer.pipeline import Outcome
from analyzer.session.bounded import Bounds
from analyzer.session.insights import Insights
from analyzer.session.report import TABLES, cell, stats_tables
from analyzer.session.stats import Stats

if TYPE_CHECKING:
    from analyzer.session.metrics import MetricLimits, Metrics


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stats", help="tables per API, topic, client, connection, and anomalies")
    add_capture_args(p)
    add_state_args(p)
    add_display_filter_arg(p, "tables over the exchanges matching EXPR only")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument(
        "--parquet",
        action="store_true",
        help="CAPTURE is an output directory of `kafka-analyzer spark`: the tables from its Parquet "
        "tables (no capture read; needs pyarrow)",
    )
    p.add_argument("--set", metavar="NAME", help="(--parquet) that capture set only")
    p.add_argument(
        "--metrics-file",
        metavar="OUT.prom",
        help="also write the Prometheus metrics of the capture to OUT.prom (the text exposition, "
        "as `live --metrics` serves it; written whole, then renamed: node_exporter's textfile collector)",
    )
    add_metric_args(p)
    p.set_defaults(func=run, func_parquet=run_parquet)


def _parallel(
    args, paths: list[str], metrics: Metrics | None, bounds: Bounds
) -> tuple[Outcome, Stats, Insights] | None:
    """(outcome, statistics, insights) of ``-j`` processes, or None when they failed (said)."""
    from analyzer.export.parallel import PartFailed, statistics

    try:
        return statistics(
            paths,
            args.jobs,
            options(args),
            ports=tuple(args.port or ()),
            keylog=getattr(args, "tls_keylog", None),
            metrics=metrics,
            bounds=bounds,
        )
    except PartFailed as exc:
        one_process_instead("stats", args.jobs, exc, "counting")
        return None


def run(args) -> int:
    bounds = bounds_of(args)
    if isinstance(bounds, str):
        usage(bounds)
        return EXIT_USAGE
    limits = None
    if args.metrics_file:
        problem = metric_limits(args)
        if isinstance(problem, str) or available() is not None:
            usage(problem if isinstance(problem, str) else str(available()))
            return EXIT_USAGE
        limits = problem
    paths = parallel_paths(args)
    done = None
    metrics = _new_metrics(limits)
    if paths is not None:
        try:
            done = _parallel(args, paths, metrics, bounds)
        except KeyboardInterrupt:
            print("kafka-analyzer: interrupted", file=sys.stderr)
            return 130
    if done is not None:
        outcome, stats, insights = done
    else:
        metrics = _new_metrics(limits)  # (-j may have begun counting)
        with analysis(args, flt=display_filter(args)) as a:
            stats = Stats(a.knowledge.topic_ids, bounds)
            insights = Insights(a.knowledge.topic_ids, bounds=bounds)
            if metrics is not None:
                metrics.topic_ids = a.knowledge.topic_ids
                outcome = a.run(stats, insights, metrics)
                metrics.evicted = a.pipeline.reasm.evicted
                metrics.state_of(stats, a.knowledge)
            else:
                outcome = a.run(stats, insights)
    if metrics is not None and not _write_metrics(args.metrics_file, metrics, outcome, insights):
        return EXIT_USAGE
    tables = stats_tables(stats, outcome, insights)
    if args.format == "json":
        print_json(tables)
    else:
        render_tables(tables, sys.stdout)
    return finish(outcome)


def _new_metrics(limits: MetricLimits | None) -> Metrics | None:
    """The metrics of ``--metrics-file`` (None without: the metrics module is not even loaded)."""
    if limits is None:
        return None
    from analyzer.session.metrics import Metrics

    return Metrics(limits)


def _write_metrics(path: str, metrics: Metrics, outcome: Outcome, insights: Insights) -> bool:
    """The capture's metrics written to ``path`` (False: could not, said)."""
    from analyzer.session.metrics import Health, families

    health = Health(
        packets=outcome.packets,
        received=outcome.received,
        kernel_dropped=outcome.dropped,
        connections=outcome.connections,
    )
    now = outcome.last_ts if outcome.packets else None
    try:
        write_file(path, families(metrics, health, insights, now))
    except OSError as exc:
        print(f"kafka-analyzer: cannot write {path}: {exc}", file=sys.stderr)
        return False
    return True


def run_parquet(args) -> int:
    """``stats --parquet DIR``: the tables from the Parquet output of ``kafka-analyzer spark``."""
    if args.metrics_file:
        usage("stats --parquet does not give --metrics-file (the Parquet tables keep no latency buckets)")
        return EXIT_USAGE
    if len(args.capture) != 1 or args.display_filter:
        usage("stats --parquet takes one output directory of `kafka-analyzer spark` (and no -Y)")
        return EXIT_USAGE
    try:
        from analyzer.spark.parquet import NotTables, read_stats
    except ImportError as exc:
        usage(f"stats --parquet needs pyarrow (pip install 'kafka-analyzer[spark]'): {exc}")
        return EXIT_USAGE
    try:
        tables = read_stats(args.capture[0], args.set)
    except NotTables as exc:
        usage(str(exc))
        return EXIT_USAGE
    except OSError as exc:  # pyarrow's errors reading the files are OSErrors (ArrowIOError...)
        usage(f"{args.capture[0]}: {exc}")
        return EXIT_USAGE
    if args.format == "json":
        print_json(tables)
    else:
        render_tables(tables, sys.stdout)
    return EXIT_OK if tables["capture"]["exchanges"] else EXIT_DAMAGED


def render_tables(tables: dict, out) -> None:
    """The statistics tables as text: rich tables on a terminal, aligned columns elsewhere."""
    cap = tables["capture"]
    head = (
        f"{cap['packets']} packets, {cap['tcp_connections']} TCP connections, "
        f"{cap['exchanges']} Kafka exchanges"
    )
    if cap["first_ts"] is not None and cap["last_ts"] is not None:
        head += f", {cap['last_ts'] - cap['first_ts']:.3f} s"
    if cap.get("dropped_packets") is not None:
        head += f", {cap['dropped_packets']} dropped by the kernel"
    tty = out.isatty()
    if tty:
        from rich.console import Console
        from rich.table import Table

        console = Console(file=out)
        console.print(head)
        for key, (title, cols) in TABLES.items():
            rows = tables.get(key)
            if not rows:
                continue
            t = Table(title=title, title_justify="left")
            for c in cols:
                t.add_column(c, justify="right" if isinstance(rows[0].get(c), int | float) else "left")
            for r in rows:
                t.add_row(*(cell(r.get(c)) for c in cols))
            console.print(t)
        return
    out.write(head + "\n")
    for key, (title, cols) in TABLES.items():
        rows = tables.get(key)
        if not rows:
            continue
        cells = [[cell(r.get(c)) for c in cols] for r in rows]
        widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
        out.write(f"\n{title}\n")
        out.write("  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)).rstrip() + "\n")
        for row in cells:
            out.write("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() + "\n")
