"""kafka-analyzer command line: read, stats, export, live, protocol.

Exit codes: 0 success; 1 the capture was damaged (truncated or corrupt: partial results were
printed) or held no Kafka traffic; 2 usage errors, missing or unreadable files, not a capture.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import os
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import BinaryIO

from analyzer import __version__
from analyzer.capture.files import check_readable
from analyzer.dissect import schema
from analyzer.dissect.codecs import DEFAULT_LIMITS, Limits
from analyzer.dissect.message import Options
from analyzer.events import CaptureIssue, CaptureStats, ConnectionEnd, ConnIssue
from analyzer.model import Exchange, Severity
from analyzer.pipeline import Analysis, Exit, Outcome
from analyzer.session.report import (
    TABLES,
    api_text,
    cell,
    endpoints,
    exchange_flags,
    latency_text,
    sizes_text,
    stats_tables,
    topics_text,
)
from analyzer.session.stats import Stats

EXIT_OK, EXIT_DAMAGED, EXIT_USAGE = Exit.OK, Exit.DAMAGED, Exit.USAGE


# -- shared plumbing -----------------------------------------------------------------------------


def options(args, records: bool = False) -> Options:
    return Options(
        records_bodies=records or getattr(args, "records", False),
        show_secrets=getattr(args, "show_secrets", False),
        limits=Limits.from_settings(args),
    )


@contextlib.contextmanager
def analysis(args, source=None, flt=None, **kw) -> Iterator[Analysis]:
    """The one driver for a command's capture (a path, ``-``, or a capture set), with a progress
    bar on a terminal for big files; the first Ctrl-C ends the packets early and the command
    still prints what it has. ``flt``: the compiled display filter of the run (the exchanges
    it drops reach no consumer)."""
    a = Analysis(
        source if source is not None else args.capture,
        options(args, kw.pop("records", False)),
        ports=args.port or (),
        tls_keylog=getattr(args, "tls_keylog", None),
        display_filter=flt,
        **kw,
    )
    bar = _Progress(a) if source is None and _want_progress(a) else None
    if bar is not None:
        a.progress = bar.update
    with _graceful_interrupt(a):
        try:
            yield a
        finally:
            if bar is not None:
                bar.close()


@contextlib.contextmanager
def _graceful_interrupt(a: Analysis) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_sigint(*_) -> None:
        a.stop()
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C is forceful

    old_int = signal.signal(signal.SIGINT, on_sigint)
    old_term = signal.signal(signal.SIGTERM, lambda *_: a.stop())
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)


def finish(outcome: Outcome) -> int:
    """Say what the user must know about the input on stderr; the exit code."""
    for line in outcome.problems():
        print(f"kafka-analyzer: {line}", file=sys.stderr)
    return int(outcome.exit_code())


def _want_progress(a: Analysis) -> bool:
    size = getattr(a.source, "size", None)
    return bool(size and size > 50 << 20 and sys.stderr.isatty())


class _Progress:
    def __init__(self, a: Analysis) -> None:
        from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

        self.p = Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            DownloadColumn(),
            TimeRemainingColumn(),
            transient=True,
            console=_stderr_console(),
        )
        self.task = self.p.add_task(os.path.basename(a.source.name), total=getattr(a.source, "size", None))
        self.p.start()

    def update(self, a: Analysis) -> None:
        self.p.update(self.task, completed=getattr(a.source, "position", 0))

    def close(self) -> None:
        self.p.stop()


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)


def _fmt_ts(ts: float, origin: float | None, absolute: bool) -> str:
    if absolute or origin is None:
        try:
            return _dt.datetime.fromtimestamp(ts, _dt.UTC).strftime("%H:%M:%S.%f")
        except (ValueError, OverflowError, OSError):  # a capture's timestamp beyond any date
            return f"{ts:.6f}"
    return f"{ts - origin:12.6f}"


# -- read ------------------------------------------------------------------------------------------


class BadFilter(Exception):
    """A display filter that does not compile (already reported on stderr)."""


def display_filter(args, expr: str | None = None):
    """The compiled ``-Y`` expression joined with the old ``read`` flags (one code path), or
    None; a :class:`~analyzer.filter.FilterError` is printed with a caret, then :class:`BadFilter`
    (``main`` returns EXIT_USAGE) is raised."""
    wanted = ("display_filter", "api", "topic", "client", "errors", "slower_than")
    if expr is None and not any(getattr(args, k, None) for k in wanted):
        return None  # no filter: the filter language is not even loaded
    from analyzer.filter import FilterError, compile_filter, shorthand

    if expr is None:
        own = getattr(args, "display_filter", None)
        if own is not None and own.strip():
            try:  # errors point into what was typed, not into the joined expression
                compile_filter(own)
            except FilterError as exc:
                print(filter_error_text(exc, own), file=sys.stderr)
                raise BadFilter from None
        expr = shorthand(
            own,
            api=getattr(args, "api", None),
            topic=getattr(args, "topic", None),
            client=getattr(args, "client", None),
            errors=getattr(args, "errors", False),
            slower_than=getattr(args, "slower_than", None),
        )
    if expr is None:
        return None
    try:
        return compile_filter(expr)
    except FilterError as exc:
        print(filter_error_text(exc, expr), file=sys.stderr)
        raise BadFilter from None


def filter_error_text(exc, expr: str) -> str:
    text, _, caret = exc.caret(expr).rpartition("\n")
    return f"kafka-analyzer: bad display filter: {exc.message}\n  {text}\n  {caret}"


def exchange_line(ex: Exchange, origin: float | None, absolute: bool = False) -> str:
    a, b, _known = endpoints(ex)
    flags, _worst = exchange_flags(ex)
    cid = ex.client_id if ex.client_id is not None else "-"
    corr = ex.correlation_id if ex.correlation_id is not None else "-"
    return (
        f"{_fmt_ts(ex.ts, origin, absolute)}  {a} -> {b}  {cid}  {api_text(ex.api_key, ex.api_version)}  "
        f"corr={corr}  {topics_text(ex.topics)}  {sizes_text(ex)}B  {latency_text(ex)}"
        + (f"  [{'; '.join(flags)}]" if flags else "")
    ).replace("    ", "  ")


def tls_line(conn, origin: float | None, absolute: bool = False) -> str:
    """One line per TLS connection (printed when it ends): what was negotiated, decrypted or not."""
    t = conn.tls
    client, broker = (conn.client, conn.broker) if conn.client_direction is not None else (conn.a, conn.b)
    what = " ".join(str(v) for v in (t["version"] or "TLS", t["cipher"]) if v)
    if t["sni"]:
        what += f" SNI={t['sni']}"
    if t["resumed"]:
        what += " resumed"
    state = "decrypted" if t["decrypted"] else "not decrypted"
    when = _fmt_ts(conn.ts_first, origin, absolute)
    line = f"{when}  {client} -> {broker}  TLS connection: {what} [{state}]"
    return line.replace("    ", "  ")


class ReadPrinter:
    """``read``'s consumer: a line per exchange (and per TLS connection at its end); connection
    issues listed with ``-v``, else counted and said once at the end on stderr."""

    def __init__(self, a: Analysis, out, verbose: bool, absolute: bool) -> None:
        self.a, self.out, self.verbose, self.absolute = a, out, verbose, absolute
        self.origin: float | None = None
        self.unlisted: Counter[str] = Counter()  # connection issues without -v: said once, counted

    def event(self, ev) -> None:
        t = type(ev)
        if t is Exchange:
            if self.origin is None:
                self.origin = self.a.first_ts
            self.out.write(exchange_line(ev, self.origin, self.absolute) + "\n")
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


def cmd_read(args) -> int:
    with analysis(args, flt=display_filter(args)) as a:
        outcome = a.run(ReadPrinter(a, sys.stdout, args.verbose, args.absolute))
    return finish(outcome)


# -- stats -----------------------------------------------------------------------------------------


def _stats_parallel(args, paths: list[str]):
    """(analysis, statistics) counted by ``-j`` processes, or None when they failed (said)."""
    from analyzer.export.parallel import PartFailed, statistics

    try:
        return statistics(
            paths,
            args.jobs,
            options(args),
            ports=tuple(args.port or ()),
            keylog=getattr(args, "tls_keylog", None),
        )
    except PartFailed as exc:
        print(
            f"kafka-analyzer: stats -j {args.jobs} failed ({exc}); counting in one process", file=sys.stderr
        )
        return None


def cmd_stats(args) -> int:
    paths = _parallel_paths(args)
    done = None
    if paths is not None:
        try:
            done = _stats_parallel(args, paths)
        except KeyboardInterrupt:
            print("kafka-analyzer: interrupted", file=sys.stderr)
            return 130
    if done is not None:
        outcome, stats = done
    else:
        with analysis(args, flt=display_filter(args)) as a:
            stats = Stats(a.knowledge.topic_ids)
            outcome = a.run(stats)
    tables = stats_tables(stats, outcome)
    if args.format == "json":
        import orjson

        sys.stdout.buffer.write(orjson.dumps(tables, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        render_tables(tables, sys.stdout)
    return finish(outcome)


def cmd_stats_parquet(args) -> int:
    """``stats --parquet DIR``: the tables from the Parquet output of ``kafka-analyzer spark``."""
    if len(args.capture) != 1 or args.display_filter:
        _usage("stats --parquet takes one output directory of `kafka-analyzer spark` (and no -Y)")
        return EXIT_USAGE
    try:
        from analyzer.spark.parquet import NotTables, read_stats
    except ImportError as exc:
        _usage(f"stats --parquet needs pyarrow (pip install 'kafka-analyzer[spark]'): {exc}")
        return EXIT_USAGE
    try:
        tables = read_stats(args.capture[0], args.set)
    except NotTables as exc:
        _usage(str(exc))
        return EXIT_USAGE
    except OSError as exc:  # pyarrow's errors reading the files are OSErrors (ArrowIOError...)
        _usage(f"{args.capture[0]}: {exc}")
        return EXIT_USAGE
    if args.format == "json":
        import orjson

        sys.stdout.buffer.write(orjson.dumps(tables, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        render_tables(tables, sys.stdout)
    return EXIT_OK if tables["capture"]["exchanges"] else EXIT_DAMAGED


def render_tables(tables: dict, out) -> None:
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
            rows = tables[key]
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
        rows = tables[key]
        if not rows:
            continue
        cells = [[cell(r.get(c)) for c in cols] for r in rows]
        widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
        out.write(f"\n{title}\n")
        out.write("  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)).rstrip() + "\n")
        for row in cells:
            out.write("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() + "\n")


# -- export ----------------------------------------------------------------------------------------


def _parallel_paths(args) -> list[str] | None:
    """The capture files of a run that ``export -j N`` can share among processes: a file or the
    pieces of one recording, without a display filter (its fields read the knowledge of the
    moment); None: one process does it all."""
    if getattr(args, "jobs", 1) <= 1:
        return None
    if any(
        getattr(args, k, None) for k in ("display_filter", "api", "topic", "client", "errors", "slower_than")
    ):
        return None
    cap = args.capture
    paths = list(cap.paths) if hasattr(cap, "paths") else [cap] if isinstance(cap, str) else []
    if not paths or "-" in paths:
        return None
    return paths


@contextlib.contextmanager
def _export_output(args) -> Iterator[BinaryIO]:
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


def _export_parallel(args, paths: list[str]) -> int | None:
    """None: the processes failed before writing anything (said on stderr): one process must."""
    from analyzer.export.parallel import PartFailed, export

    try:
        with _export_output(args) as out:
            outcome = export(
                paths,
                out,
                args.format,
                args.jobs,
                options(args),
                ports=tuple(args.port or ()),
                keylog=getattr(args, "tls_keylog", None),
                spans=not args.no_spans,
            )
    except PartFailed as exc:
        print(
            f"kafka-analyzer: export -j {args.jobs} failed ({exc}); exporting in one process", file=sys.stderr
        )
        return None
    except KeyboardInterrupt:
        print("kafka-analyzer: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    return finish(outcome)


def cmd_export(args) -> int:
    from analyzer.export.writer import Writer

    paths = _parallel_paths(args)
    if paths is not None:
        rc = _export_parallel(args, paths)
        if rc is not None:
            return rc
    try:
        with _export_output(args) as out, analysis(args, flt=display_filter(args)) as a:
            stats = Stats(a.knowledge.topic_ids)
            w = Writer(out, args.format, spans=not args.no_spans, records=args.records)
            w.begin(a.source.name)
            outcome = a.run(stats, w)
            w.end(stats_tables(stats, outcome))
    except BrokenPipeError:
        return EXIT_OK
    return finish(outcome)


# -- live ------------------------------------------------------------------------------------------


def cmd_live(args) -> int:
    if args.user:
        _preload_rich()
    workers = _live_workers(args)
    if workers > 1:
        return _live_fanout(args, workers)
    source = _live_source(args)
    if source is None:
        return EXIT_USAGE
    flt = display_filter(args)
    writer = None
    if args.mode == "export":
        from analyzer.export.writer import Writer

        writer = Writer(sys.stdout.buffer, "ndjson", spans=not args.no_spans, records=args.records)
        writer.begin(f"live:{args.interface}")
    with analysis(args, source=source, idle_timeout=300.0, flt=flt) as a:
        stats = Stats(a.knowledge.topic_ids)
        outcome = a.run(LiveOutput(a, stats, writer, args.mode == "read", args.absolute))
    tables = stats_tables(stats, outcome)
    if writer is not None:
        writer.end(tables)
    elif outcome.unusable():  # the capture never started: the reason is enough
        pass
    elif args.mode == "stats" or outcome.interrupted or args.mode == "read":
        render_tables(tables, sys.stdout if args.mode == "stats" else sys.stderr)
    return finish(outcome)


class LiveOutput:
    """``live``'s consumer in one process: drops said as they grow, the statistics counted,
    each exchange printed (``read``) or written (``export``) as it comes."""

    def __init__(self, a: Analysis, stats: Stats, writer, lines: bool, absolute: bool) -> None:
        self.a, self.stats, self.writer, self.lines, self.absolute = a, stats, writer, lines, absolute
        self.origin: float | None = None

    def event(self, ev) -> None:
        t = type(ev)
        if t is CaptureStats:
            _say_drops(ev)
            return
        self.stats.event(ev)
        if self.lines and t is Exchange:
            if self.origin is None:
                self.origin = self.a.first_ts
            print(exchange_line(ev, self.origin, self.absolute), flush=True)
        if self.writer is not None:
            self.writer.event(ev)
            sys.stdout.buffer.flush()


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


def _live_workers(args) -> int:
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


def _live_fanout(args, n: int) -> int:
    """``live`` over n ring sockets in one PACKET_FANOUT group, one process each
    (:mod:`analyzer.fanout`)."""
    import io

    from analyzer.capture.ring import CaptureError, Ring, RingCapture, drop_privileges
    from analyzer.fanout import Fanout

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

    def make_source(i: int, ring) -> RingCapture:
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
    if args.mode == "export":
        from analyzer.export.writer import Writer

        writer = Writer(sys.stdout.buffer, "ndjson", spans=not args.no_spans, records=args.records)
        writer.begin(f"live:{args.interface}")
        buf = io.BytesIO()
        worker_writer = Writer(buf, "ndjson", spans=not args.no_spans, records=args.records)

        def formatter(ev):
            worker_writer.event(ev)
            data = buf.getvalue()
            if not data:
                return None
            buf.seek(0)
            buf.truncate()
            return data

        def output(data) -> None:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()

    else:

        def formatter(ev):
            if args.mode == "read" and type(ev) is Exchange:
                return exchange_line(ev, origin, args.absolute)
            return None

        def output(line) -> None:
            print(line, flush=True)

    fan = Fanout(f"live:{args.interface}", rings, make_source, make_analysis, formatter, output, _say_drops)
    with _graceful_interrupt(fan):  # type: ignore[arg-type]
        stats, outcome = fan.run()
    tables = stats_tables(stats, outcome)
    if writer is not None:
        for issue in outcome.capture_issues:
            writer.event(CaptureIssue(issue, None))
        writer.end(tables)
    elif args.mode == "stats" or outcome.interrupted or args.mode == "read":
        render_tables(tables, sys.stdout if args.mode == "stats" else sys.stderr)
    return finish(outcome)


def _live_source(args):
    """The capture source of ``live``: the AF_PACKET ring on Linux (several in a fanout group
    with ``--workers``), scapy elsewhere or with ``--backend scapy``; None after printing why
    it cannot work."""
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


# -- check -----------------------------------------------------------------------------------------


def cmd_check(args) -> int:
    from analyzer.check.run import run

    return run(args, getattr(args, "chains", None) or [[args.capture]])


def cmd_check_parquet(args) -> int:
    """``check --parquet DIR``: the rules over the Parquet output of ``kafka-analyzer spark``."""
    if len(args.capture) != 1:
        _usage("check --parquet takes one output directory of `kafka-analyzer spark`")
        return EXIT_USAGE
    try:
        import pyarrow.dataset  # noqa: F401
    except ImportError as exc:
        _usage(f"check --parquet needs pyarrow (pip install 'kafka-analyzer[spark]'): {exc}")
        return EXIT_USAGE
    from analyzer.check.run import run

    return run(args, [])


# -- tui -------------------------------------------------------------------------------------------


def cmd_tui(args) -> int:
    """The TUI on a capture file (or ``-``: stdin), or on a live interface (``-i``)."""
    from analyzer.tui.app import run_tui

    opts = Options(records_bodies=True, show_secrets=args.show_secrets, limits=Limits.from_settings(args))
    flt = args.display_filter
    if flt is not None and flt.strip():
        display_filter(args)  # a bad expression is reported (with a caret) before the screen opens
    if args.interface:
        if args.capture:
            _usage("tui: a capture file or -i INTERFACE, not both")
            return EXIT_USAGE
        source = _tui_live_source(args)
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
        _usage("tui: -f, --write and --max-exchanges go with -i INTERFACE (a live capture)")
        return EXIT_USAGE
    if not args.capture:
        _usage("tui: give a capture file, - (stdin), or -i INTERFACE")
        return EXIT_USAGE
    return run_tui(args.capture, opts, tuple(args.port or ()), tls_keylog=args.tls_keylog, display_filter=flt)


def _tui_live_source(args):
    """The live source of ``tui -i``: the AF_PACKET ring ``live`` uses, opened now so a capture
    that cannot start is said on stderr before the screen opens; None after printing why.

    One reader, no fanout workers: the TUI needs every exchange in its own process (the index,
    the spool, the statistics), and handing a decoded exchange over from a worker costs more
    than decoding it (unpickling one took about 560 us on the bench capture, a lean decode
    60-300 us)."""
    if not sys.platform.startswith("linux"):
        _usage("tui -i: live capture in the TUI needs Linux (the AF_PACKET ring)")
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
        _usage(f"error: {src.error}")
        return None
    return src


# -- protocol --------------------------------------------------------------------------------------


def cmd_spark(args) -> int:
    """Thin: the work is in :mod:`analyzer.spark.jobs` (pyspark is imported only here)."""
    try:
        from analyzer.spark.jobs import spark_command
    except ImportError as exc:
        _usage(f"the spark command needs PySpark (pip install 'kafka-analyzer[spark]'): {exc}")
        return EXIT_USAGE
    return spark_command(args)


def cmd_protocol(args) -> int:
    from analyzer.dissect.protocol_table import API_NAMES

    rows = []
    for key in sorted(API_NAMES):
        rng = schema.version_range(key)
        if rng is None:
            continue
        rows.append({"api_key": key, "name": API_NAMES[key], "min_version": rng[0], "max_version": rng[1]})
    if args.format == "json":
        import orjson

        sys.stdout.buffer.write(orjson.dumps(rows, option=orjson.OPT_INDENT_2) + b"\n")
        return EXIT_OK
    print(f"{'key':>4}  {'name':<36} versions")
    for r in rows:
        print(f"{r['api_key']:>4}  {r['name']:<36} v{r['min_version']}-v{r['max_version']}")
    print(f"{len(rows)} APIs; every version decoded from the Kafka 3.9 and 4.2 message schemas")
    return EXIT_OK


# -- filters -------------------------------------------------------------------------------------------


def cmd_filters(args) -> int:
    from analyzer.filter import fields

    key = None
    if args.api is not None:
        key = int(args.api) if args.api.lstrip("-").isdigit() else fields.api_key_of(args.api)
        if key is None or key not in fields.api_prefixes().values():
            print(
                f"kafka-analyzer: unknown API {args.api!r} (see `kafka-analyzer protocol`)", file=sys.stderr
            )
            return EXIT_USAGE
    rows = fields.describe(key)
    if args.format == "json":
        import orjson

        sys.stdout.buffer.write(orjson.dumps(rows, option=orjson.OPT_INDENT_2) + b"\n")
        return EXIT_OK
    out = sys.stdout
    if key is None:
        out.write(fields.SYNTAX_HELP + "\n\nExchange and records fields:\n")
        width = max(len(r["name"]) for r in rows)
        for r in rows:
            many = " [several values]" if r["many"] else ""
            out.write(f"  {r['name']:<{width}}  {r['type']:<8}  {r['help']}{many}\n")
            out.write(f"  {'':<{width}}  {'':<8}  e.g. {r['example']}\n")
        out.write(
            "\nDecoded fields: API.path in the protocol guide's snake_case names (produce.acks,\n"
            "metadata.topics.name, fetch.request.isolation_level), or a path without the API\n"
            "for any API (throttle_time_ms); `kafka-analyzer filters API` lists one API's fields.\n"
        )
        return EXIT_OK
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        where = "/".join(r["in"])
        many = ", any element" if r["many"] else ""
        out.write(f"{r['name']:<{width}}  {r['type']:<14} ({where}{many})  e.g. {r['example']}\n")
    return EXIT_OK


# -- argument parsing ------------------------------------------------------------------------------


def _common(p: argparse.ArgumentParser, capture: bool = True, nargs: str = "+") -> None:
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
    p.add_argument(
        "--tls-keylog",
        metavar="FILE",
        help="decrypt TLS with this NSS key log (SSLKEYLOGFILE); pcapng secrets blocks are used anyway",
    )


def _byte_size(text: str) -> int:
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


def _display_filter_arg(p: argparse.ArgumentParser, what: str = "only the exchanges matching EXPR") -> None:
    p.add_argument(
        "-Y",
        "--display-filter",
        metavar="EXPR",
        help=f"{what}, e.g. 'api == Produce and latency > 5ms' (see `kafka-analyzer filters`)",
    )


def _filters(p: argparse.ArgumentParser) -> None:
    _display_filter_arg(p)
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


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="kafka-analyzer", description="Kafka wire-protocol analyzer")
    ap.add_argument("--version", action="version", version=f"kafka-analyzer {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("read", help="one line per request/response exchange")
    _common(p)
    _filters(p)
    p.set_defaults(func=cmd_read)

    p = sub.add_parser("stats", help="tables per API, topic, client, connection, and anomalies")
    _common(p)
    _display_filter_arg(p, "tables over the exchanges matching EXPR only")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument(
        "--parquet",
        action="store_true",
        help="CAPTURE is an output directory of `kafka-analyzer spark`: the tables from its Parquet "
        "tables (no capture read; needs pyarrow)",
    )
    p.add_argument("--set", metavar="NAME", help="(--parquet) that capture set only")
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("export", help="every exchange as JSON or NDJSON")
    _common(p)
    _display_filter_arg(p, "export only the exchanges matching EXPR")
    p.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    p.add_argument("--format", choices=("json", "ndjson"), default="ndjson")
    p.add_argument("--records", action="store_true", help="decode record bodies (keys, values, headers)")
    p.add_argument("--no-spans", action="store_true", help="leave out the byte span of every field")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("live", help="sniff an interface (needs capture privileges)")
    _common(p, capture=False)
    _filters(p)
    p.add_argument("-i", "--interface", required=True)
    p.add_argument("-f", "--filter", metavar="BPF", help="capture filter, e.g. 'tcp port 9092'")
    p.add_argument("--write", metavar="FILE.pcap", help="also save the packets")
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
    p.set_defaults(func=cmd_live)

    p = sub.add_parser(
        "check",
        help="CI rules over recorded traffic: built-in pack, rules file, baseline; text, JSON, "
        "GitHub, JUnit, SARIF; exit 0 pass, 1 findings, 2 configuration error, 3 inconclusive",
    )
    _common(p)
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
    _display_filter_arg(p, "the rules look at the exchanges matching EXPR only")
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
    p.set_defaults(func=cmd_check)

    p = sub.add_parser(
        "tui", help="browse a capture, or a live interface (-i): exchanges, field tree, hex view"
    )
    _common(p, nargs="*")
    _display_filter_arg(p, "the filter bar starts with EXPR")
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
    p.set_defaults(func=cmd_tui)

    p = sub.add_parser("filters", help="the display-filter fields (-Y), their types and examples")
    p.add_argument("api", nargs="?", metavar="API", help="list the decoded fields of this API (name or key)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=cmd_filters)

    p = sub.add_parser(
        "spark",
        help="analyse capture sets on Spark (local mode, or a cluster with --master): Parquet "
        "tables partitioned by date/hour/capture set",
    )
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="capture files, globs, directories or Hadoop URIs (hdfs://, s3a://)",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="where the Parquet tables go (a path or URI)")
    p.add_argument("--master", metavar="URL", help="Spark master (default: spark-submit's, else local[*])")
    p.add_argument("--records", action="store_true", help="decode record bodies: also the records table")
    p.add_argument(
        "--set", metavar="NAME", help="the capture_set partition (default: the first INPUT's folder or name)"
    )
    p.add_argument("--port", type=int, action="append", metavar="PORT", help="a broker port (repeatable)")
    p.add_argument("--tls-keylog", metavar="FILE", help="decrypt TLS with this NSS key log (read here)")
    p.add_argument(
        "--separate",
        action="store_true",
        help="analyse each file on its own, even when files are rotated pieces of one recording",
    )
    p.add_argument("--recursive", action="store_true", help="take the files of subdirectories too")
    p.add_argument(
        "--show-secrets",
        action="store_true",
        help="do not mask SASL passwords, SCRAM proofs and signatures (in the Parquet tables)",
    )
    p.add_argument("--partitions", type=int, metavar="N", help="number of analysis tasks")
    p.add_argument(
        "--split-size",
        type=_byte_size,
        metavar="SIZE",
        help="cut a capture file (local or a URI) bigger than SIZE (bytes; K, M, G suffixes) into"
        " splits of about SIZE analysed by several tasks and stitched (default 128M; 0: never)",
    )
    _display_filter_arg(p, "only the exchanges matching EXPR (and their records)")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting")
    p.add_argument(
        "--log-level", default="OFF", help="Spark's log level (default OFF; WARN or INFO to diagnose)"
    )
    p.set_defaults(func=cmd_spark)

    p = sub.add_parser("protocol", help="the API keys and versions this analyzer decodes")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=cmd_protocol)
    return ap


def _chains(args, caps: list[str]) -> list[list[str]] | None:
    """The capture files grouped into chains (the pieces of each recording)."""
    if len(caps) == 1:
        return [caps]
    if "-" in caps:
        _usage("stdin (-) cannot be combined with other capture files")
        return None
    if args.separate:
        return [[c] for c in caps]
    if args.one_recording:
        return [caps]
    from analyzer.capture.sets import plan

    return plan(caps)


def _usage(message: str) -> None:
    print(f"kafka-analyzer: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    keylog = getattr(args, "tls_keylog", None)
    problem = check_readable(keylog) if keylog else None
    if problem:
        print(f"kafka-analyzer: --tls-keylog: {problem}", file=sys.stderr)
        return EXIT_USAGE
    caps = getattr(args, "capture", None)
    if getattr(args, "parquet", False):
        return cmd_check_parquet(args) if args.command == "check" else cmd_stats_parquet(args)
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


def _many(args, argv: list[str], caps: list[str], chains: list[list[str]]) -> int:
    """Capture files that are not one recording: each chain (one file, or the rotated pieces of
    one recording) is analysed by its own process (``-j`` at a time); outputs are printed in
    the order of the chains, each under a ``==> FILES <==`` line for read/stats/check."""
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    if args.command == "tui":
        print("kafka-analyzer: the TUI opens one capture at a time", file=sys.stderr)
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


if __name__ == "__main__":
    sys.exit(main())
