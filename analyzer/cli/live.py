"""``live``: sniff an interface; ``read`` lines, ``stats`` tables or ``export`` NDJSON as the
exchanges come, in one process or in a ``PACKET_FANOUT`` group of worker processes
(:mod:`analyzer.fanout`)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from contextlib import nullcontext
from typing import TYPE_CHECKING

from analyzer.cli.args import add_capture_args, add_filter_args, add_state_args, bounds_of
from analyzer.cli.common import (
    EXIT_USAGE,
    analysis,
    display_filter,
    exchange_line,
    finish,
    graceful_interrupt,
    options,
    service_exit,
)
from analyzer.cli.metrics import Server, add_metric_args, available, parse_address
from analyzer.cli.metrics import limits as metric_limits
from analyzer.cli.stats import render_tables
from analyzer.events import CaptureIssue, CaptureStats, ConnectionEnd
from analyzer.model import Exchange
from analyzer.pipeline import Analysis, Outcome
from analyzer.session.metrics import LiveMetrics, Metrics
from analyzer.session.report import bounds_rows, stats_tables
from analyzer.session.stats import Stats

if TYPE_CHECKING:
    from analyzer.session.live_feed import InsightFeed

# the live machinery (the fan-out's processes, the insight feed, SIGHUP's reopening) is imported
# by the functions that run it: other commands do not pay for it at start-up


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("live", help="sniff an interface (needs capture privileges)")
    add_capture_args(p, capture=False)
    add_state_args(p)
    add_filter_args(p)
    p.add_argument("-i", "--interface", required=True)
    p.add_argument("-f", "--filter", metavar="BPF", help="capture filter, e.g. 'tcp port 9092'")
    p.add_argument("-w", "--write", metavar="FILE.pcap", help="also save the packets")
    p.add_argument(
        "-C", dest="rotate_mb", type=float, metavar="MB", help="(--write) a new file every MB megabytes"
    )
    p.add_argument(
        "-G",
        dest="rotate_seconds",
        type=float,
        metavar="S",
        help="(--write) a new file every S seconds; FILE is an strftime pattern",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="append what goes to stdout (lines, NDJSON, tables) to FILE; SIGHUP reopens FILE and "
        "(ring backend) --write's file: rename, then signal (logrotate)",
    )
    p.add_argument("--user", metavar="USER", help="drop root for USER once the capture socket is open")
    p.add_argument(
        "--backend",
        choices=("ring", "scapy"),
        help="AF_PACKET mmap ring (default on Linux) or scapy (portable, slow)",
    )
    p.add_argument("--buffer", type=int, default=32, metavar="MB", help="(ring) kernel ring size per worker")
    p.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="(ring) N capture processes in a PACKET_FANOUT group (default: one per core, 1 with "
        "--count or --write; with N > 1, --write FILE.pcap writes FILE-w0.pcap, FILE-w1.pcap...)",
    )
    p.add_argument("--count", type=int, help="stop after N packets")
    p.add_argument("--duration", type=float, metavar="S", help="stop after S seconds")
    p.add_argument("--mode", choices=("read", "stats", "export"), default="read")
    p.add_argument("--records", action="store_true", help="(export) decode record bodies")
    p.add_argument("--no-spans", action="store_true", help="(export) leave out byte spans")
    p.add_argument(
        "--metrics",
        metavar="ADDR:PORT",
        help="serve Prometheus metrics on http://ADDR:PORT/metrics (the numbers `stats --metrics-file` "
        "writes) and /healthz (JSON: capturing or not, drop counts)",
    )
    add_metric_args(p)
    p.set_defaults(func=run)


def run(args) -> int:
    bounds = bounds_of(args)
    if isinstance(bounds, str):
        print(f"kafka-analyzer: {bounds}", file=sys.stderr)
        return EXIT_USAGE
    args.bounds = bounds
    reopen = []  # what SIGHUP reopens: the --output file, the source's --write file
    server = None
    if args.metrics:
        server = metrics_server(args)
        if server is None:
            return EXIT_USAGE
    if args.output:
        from analyzer.cli.reopen import output_to

        try:
            reopen.append(output_to(args.output).reopen)
        except OSError as exc:
            print(f"kafka-analyzer: cannot write {args.output}: {exc}", file=sys.stderr)
            return EXIT_USAGE
    try:
        return _run(args, reopen, server[0] if server is not None else None)
    finally:
        sys.stdout.flush()
        if server is not None:
            server[1].close()


def metrics_server(args) -> tuple[LiveMetrics, Server] | None:
    """``--metrics``: the metrics of the run and their server, listening (None: could not, said)."""
    lim = metric_limits(args)
    address = parse_address(args.metrics)
    if isinstance(lim, str) or isinstance(address, str) or available() is not None:
        problem = lim if isinstance(lim, str) else address if isinstance(address, str) else available()
        print(f"kafka-analyzer: {problem}", file=sys.stderr)
        return None
    hub = LiveMetrics(lim)
    try:
        server = Server(address[0], address[1], hub.families, hub.healthz)
    except OSError as exc:
        print(f"kafka-analyzer: --metrics {args.metrics}: {exc}", file=sys.stderr)
        return None
    print(f"kafka-analyzer: metrics on http://{args.metrics}/metrics", file=sys.stderr, flush=True)
    return hub, server


def _run(args, reopen: list, hub: LiveMetrics | None) -> int:
    from analyzer.cli.live_feed import insight_feed, say_bounds
    from analyzer.cli.reopen import on_hangup
    from analyzer.fanout import keep_heap_trimmed
    from analyzer.session.live_feed import InsightFeed

    if args.user:
        _preload_rich()
    workers = _workers(args)
    if workers > 1:
        return _fanout(args, workers, reopen, hub)
    source = _source(args)
    if source is None:
        return EXIT_USAGE
    flt = display_filter(args)
    writer = None
    if args.mode == "export":
        from analyzer.export.writer import Writer

        writer = Writer(sys.stdout.buffer, "ndjson", spans=not args.no_spans, records=args.records)
        writer.begin(f"live:{args.interface}")
    with analysis(args, source=source, idle_timeout=300.0, flt=flt) as a:
        stats = Stats(a.knowledge.topic_ids, args.bounds)
        out = LiveOutput(a, stats, writer, args.mode == "read", args.absolute)
        out.feed = insight_feed(
            args.mode, writer, lambda: out.origin, args.absolute, a.knowledge.topic_ids, args.bounds
        )
        if hub is not None:
            out.feed = out.feed or InsightFeed(
                _quiet, a.knowledge.topic_ids, final_all=False, bounds=args.bounds
            )
            out.watch(hub)
        if hasattr(source, "reopen"):
            reopen.append(source.reopen)
        keep_heap_trimmed()
        with on_hangup(*reopen):
            outcome = a.run(out)
        if hub is not None:
            with hub.lock:
                hub.health.running, hub.ended = False, True
    if out.feed is not None:
        say_bounds(out.feed)
    tables = _tables(stats, outcome, out.feed)
    if writer is not None:
        writer.end(tables)
    elif outcome.unusable():  # the capture never started: the reason is enough
        pass
    elif args.mode == "stats" or outcome.interrupted or args.mode == "read":
        render_tables(tables, sys.stdout if args.mode == "stats" else sys.stderr)
    return service_exit(finish(outcome))


class LiveOutput:
    """``live``'s consumer in one process: drops said as they grow, the statistics counted,
    each exchange printed (``read``) or written (``export``) as it comes, the insights (consumer
    groups, producers, clients) told as they change (:attr:`feed`)."""

    def __init__(self, a: Analysis, stats: Stats, writer, lines: bool, absolute: bool) -> None:
        from analyzer.fanout import count

        self.count = count
        self.a, self.stats, self.writer, self.lines, self.absolute = a, stats, writer, lines, absolute
        self.origin: float | None = None
        self.feed: InsightFeed | None = None
        self.hub: LiveMetrics | None = None
        self.metrics: Metrics | None = None

    def watch(self, hub: LiveMetrics) -> None:
        """Count the metrics too, into ``hub`` (scraped from another thread)."""
        self.hub = hub
        self.metrics = Metrics(hub.limits, self.a.knowledge.topic_ids)
        hub.part(0, self.metrics, hub.health)
        hub.insights = self.feed.all if self.feed is not None else None
        hub.read_health = self._health
        hub.health.running = True

    def _health(self) -> None:
        a, hub = self.a, self.hub
        assert hub is not None and self.metrics is not None
        h, p, src = hub.health, a.pipeline, a.source
        h.packets, h.connections, h.tracked = p.packets, p.connections, p.reasm.tracked
        h.received, h.kernel_dropped = getattr(src, "received", None), getattr(src, "dropped", None)
        ring = getattr(src, "ring", None)
        h.ring_full = ring.freeze_q if ring is not None else None
        self.metrics.evicted = p.reasm.evicted
        self.metrics.state_of(self.stats, a.knowledge)
        hub.now = p.last_ts if p.packets else None

    def event(self, ev) -> None:
        t = type(ev)
        if t is CaptureStats:
            _say_drops(ev)
            return
        if self.hub is None:
            self._event(ev, t)
            return
        with self.hub.lock:
            self._event(ev, t)

    def _event(self, ev, t) -> None:
        self.count(ev, t, self.stats, self.metrics, nullcontext())
        if self.lines and t is Exchange:
            if self.origin is None:
                self.origin = self.a.first_ts
            print(exchange_line(ev, self.origin, self.absolute), flush=True)
        if self.writer is not None:
            self.writer.event(ev)
            sys.stdout.buffer.flush()
        if self.feed is not None:
            if t is Exchange:
                if self.origin is None:
                    self.origin = self.a.first_ts
                self.feed.exchange(ev, self.a.last_ts)
            elif t is ConnectionEnd:
                self.feed.connection_end(ev, self.a.last_ts)

    def done(self, outcome: Outcome) -> None:
        if self.feed is not None:
            self.feed.done(outcome.last_ts if outcome.packets else None)


def _preload_rich() -> None:
    """Import what rendering tables needs while still root (``--user``: the user may not be
    able to read the interpreter's library); rich imports more on its first render."""
    import io

    from rich.console import Console
    from rich.table import Table

    t = Table(title="x")
    t.add_column("a")
    t.add_row("1")
    Console(file=io.StringIO(), force_terminal=True).print(t)


def _say_drops(ev: CaptureStats) -> None:
    print(
        f"kafka-analyzer: warning: the kernel dropped {ev.dropped} of {ev.received} packets "
        "so far; stream gaps from now on may come from these drops",
        file=sys.stderr,
        flush=True,
    )


def _workers(args) -> int:
    """Capture processes: ``--workers``, else one per core with the ring backend, except with
    ``--count`` (an exact count needs one reader) or ``--write`` (one file, not one per worker)."""
    backend = args.backend or ("ring" if sys.platform.startswith("linux") else "scapy")
    if backend != "ring":
        return 1
    if args.workers:
        return max(1, args.workers)
    if args.count or args.write:
        return 1
    return os.cpu_count() or 1


def _quiet(kind: str, obj: dict) -> None:
    """The insights' news, when only the metrics read the insights."""


def _fanout(args, n: int, reopen: list, hub: LiveMetrics | None) -> int:
    """``live`` over n ring sockets in one PACKET_FANOUT group, one process each
    (:mod:`analyzer.fanout`)."""
    import io

    from analyzer.capture.ring import CaptureError, Ring, RingCapture, drop_privileges
    from analyzer.cli.live_feed import insight_feed, say_bounds
    from analyzer.cli.reopen import on_hangup
    from analyzer.fanout import REORDER_DELAY, Fanout
    from analyzer.session.live_feed import InsightFeed

    if args.count:
        print("kafka-analyzer: --count needs one worker (--workers 1)", file=sys.stderr)
        return EXIT_USAGE
    try:
        rings = [
            Ring(args.interface, args.filter, blocks=max(1, args.buffer), fanout=(os.getpid() & 0xFFFF, n))
            for _ in range(n)
        ]
        for ring in rings:  # the group is complete: packets may come in
            ring.start()
        if args.user:
            drop_privileges(args.user)
    except CaptureError as exc:
        print(f"kafka-analyzer: error: {exc}", file=sys.stderr)
        return EXIT_USAGE

    def make_source(i: int, ring: Ring) -> RingCapture:
        write = None
        if args.write:
            stem, ext = os.path.splitext(args.write)
            write = f"{stem}-w{i}{ext}"
        return RingCapture(
            args.interface,
            args.filter,
            write=write,
            duration=args.duration,
            rotate_mb=args.rotate_mb,
            rotate_seconds=args.rotate_seconds,
            ring=ring,
            announce=False,
        )

    flt = display_filter(args)

    def make_analysis(src) -> Analysis:  # in the worker process: the filter reads its knowledge
        return Analysis(src, options(args), ports=args.port or (), idle_timeout=300.0, display_filter=flt)

    origin = time.time()
    writer = None
    formatter: Callable[[object], object]
    output: Callable[[object], None]
    if args.mode == "export":
        from analyzer.export.writer import Writer

        writer = Writer(sys.stdout.buffer, "ndjson", spans=not args.no_spans, records=args.records)
        writer.begin(f"live:{args.interface}")
        buf = io.BytesIO()
        worker_writer = Writer(buf, "ndjson", spans=not args.no_spans, records=args.records)

        def ndjson(ev) -> bytes | None:  # in the worker
            worker_writer.event(ev)
            data = buf.getvalue()
            if not data:
                return None
            buf.seek(0)
            buf.truncate()
            return data

        def write_ndjson(data) -> None:  # (flushed once a round of the workers' batches)
            sys.stdout.buffer.write(data)

        formatter, output, flush = ndjson, write_ndjson, sys.stdout.buffer.flush
    else:

        def line(ev) -> str | None:  # in the worker
            if args.mode == "read" and type(ev) is Exchange:
                return exchange_line(ev, origin, args.absolute)
            return None

        def print_line(text) -> None:  # (flushed once a round of the workers' batches)
            print(text)

        formatter, output, flush = line, print_line, sys.stdout.flush

    feed = insight_feed(args.mode, writer, lambda: origin, args.absolute, bounds=args.bounds)
    if hub is not None:
        feed = feed or InsightFeed(_quiet, final_all=False, bounds=args.bounds)
        hub.insights = feed.all
    fan = Fanout(
        f"live:{args.interface}",
        rings,
        make_source,
        make_analysis,
        formatter,
        output,
        _say_drops,
        feed,
        hub,
        args.bounds,
        flush,
    )
    with on_hangup(*reopen, fan.hangup), graceful_interrupt(fan):
        stats, outcome = fan.run()
    if feed is not None:
        feed.done(outcome.last_ts if outcome.packets else None)
        say_bounds(feed, fan.late, REORDER_DELAY)
    tables = _tables(stats, outcome, feed)
    if writer is not None:
        for issue in outcome.capture_issues:
            writer.event(CaptureIssue(issue, None))
        writer.end(tables)
    elif args.mode == "stats" or outcome.interrupted or args.mode == "read":
        render_tables(tables, sys.stdout if args.mode == "stats" else sys.stderr)
    return service_exit(finish(outcome))


def _tables(stats: Stats, outcome: Outcome, feed: InsightFeed | None) -> dict:
    """The run's tables (the summary, export's end), with what the statistics' and the
    insights' tables let go to stay bounded (also said on stderr)."""
    tables = stats_tables(stats, outcome)
    rows = bounds_rows(stats, feed.all if feed is not None else None, outcome.knowledge)
    if rows:
        tables["evictions"] = rows
        from analyzer.cli.live_feed import say_evictions

        say_evictions(rows)
    return tables


def _source(args):
    """The capture source of ``live`` in one process: the AF_PACKET ring on Linux, scapy
    elsewhere or with ``--backend scapy``; None after printing why it cannot work."""
    backend = args.backend or ("ring" if sys.platform.startswith("linux") else "scapy")
    if backend == "scapy":
        from analyzer.capture import live

        if args.user or args.rotate_mb or args.rotate_seconds or (args.workers or 1) > 1:
            print("kafka-analyzer: --user, -C, -G and --workers need --backend ring", file=sys.stderr)
            return None
        problem = live.check_privileges(args.interface)
        if problem:
            print(f"kafka-analyzer: {problem}", file=sys.stderr)
            return None
        return live.LiveCapture(
            args.interface, bpf=args.filter, write=args.write, count=args.count, duration=args.duration
        )
    from analyzer.capture.ring import RingCapture

    return RingCapture(
        args.interface,
        bpf=args.filter,
        write=args.write,
        count=args.count,
        duration=args.duration,
        rotate_mb=args.rotate_mb,
        rotate_seconds=args.rotate_seconds,
        user=args.user,
        buffer_mb=args.buffer,
    )
