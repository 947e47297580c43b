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
from collections.abc import Iterator

from analyzer import __version__
from analyzer.capture.files import check_readable
from analyzer.dissect import schema
from analyzer.dissect.message import Options
from analyzer.events import ConnIssue
from analyzer.model import Exchange, Severity
from analyzer.pipeline import Analysis, Exit
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
    )


@contextlib.contextmanager
def analysis(args, source=None, **kw) -> Iterator[Analysis]:
    """The one driver for a command's capture, with a progress bar on a terminal for big files;
    the first Ctrl-C ends the packets early and the command still prints what it has."""
    path = args.capture if source is None else None
    bar = _Progress(path) if path is not None and _want_progress(path) else None
    a = Analysis(
        source if source is not None else path,
        options(args, kw.pop("records", False)),
        ports=args.port or (),
        progress=bar.update if bar is not None else None,
        **kw,
    )
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


def finish(a: Analysis) -> int:
    """Say what the user must know about the input on stderr; the exit code."""
    for line in a.problems():
        print(f"kafka-analyzer: {line}", file=sys.stderr)
    return int(a.exit_code())


def _want_progress(path: str) -> bool:
    if path == "-" or not sys.stderr.isatty():
        return False
    try:
        return os.path.getsize(path) > 50 << 20
    except OSError:
        return False


class _Progress:
    def __init__(self, path: str) -> None:
        from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

        self.p = Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            DownloadColumn(),
            TimeRemainingColumn(),
            transient=True,
            console=_stderr_console(),
        )
        self.task = self.p.add_task(os.path.basename(path), total=os.path.getsize(path))
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
        return _dt.datetime.fromtimestamp(ts, _dt.UTC).strftime("%H:%M:%S.%f")
    return f"{ts - origin:12.6f}"


# -- read ------------------------------------------------------------------------------------------


def _api_filter(values: list[str] | None) -> set[int] | None:
    if not values:
        return None
    names = {(schema.api_name(k) or "").lower(): k for k in range(200) if schema.api_name(k)}
    out = set()
    for v in values:
        for part in v.split(","):
            part = part.strip()
            if part.lstrip("-").isdigit():
                out.add(int(part))
            elif part.lower() in names:
                out.add(names[part.lower()])
            else:
                raise SystemExit(f"kafka-analyzer: unknown API {part!r} (see `kafka-analyzer protocol`)")
    return out


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


def cmd_read(args) -> int:
    apis = _api_filter(args.api)
    out = sys.stdout
    origin = None
    with analysis(args) as a:
        for ev in a.events():
            if type(ev) is not Exchange:
                if args.verbose and type(ev) is ConnIssue:
                    print(f"# {ev.issue.severity}: {ev.issue.code}: {ev.issue.message}", file=out)
                continue
            if origin is None:
                origin = a.first_ts
            if not _keep(ev, args, apis):
                continue
            out.write(exchange_line(ev, origin, args.absolute) + "\n")
    return finish(a)


def _keep(ex: Exchange, args, apis) -> bool:
    if apis is not None and ex.api_key not in apis:
        return False
    if args.topic and not any(t in ex.topics for t in args.topic):
        return False
    if args.client and ex.client_id not in args.client:
        return False
    if args.errors:
        has_err = ex.response is not None and ex.response.errors
        bad = any(i.severity >= Severity.WARNING for i in ex.all_issues())
        if not (has_err or bad):
            return False
    if args.slower_than is not None:
        lat = ex.latency
        if lat is None or lat * 1000.0 < args.slower_than:
            return False
    return True


# -- stats -----------------------------------------------------------------------------------------


def cmd_stats(args) -> int:
    with analysis(args) as a:
        stats = Stats(a.knowledge.topic_ids)
        for ev in a.events():
            stats.add(ev)
    tables = stats_tables(stats, a)
    if args.format == "json":
        import orjson

        sys.stdout.buffer.write(orjson.dumps(tables, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        render_tables(tables, sys.stdout)
    return finish(a)


def render_tables(tables: dict, out) -> None:
    cap = tables["capture"]
    head = (
        f"{cap['packets']} packets, {cap['tcp_connections']} TCP connections, "
        f"{cap['exchanges']} Kafka exchanges"
    )
    if cap["first_ts"] is not None and cap["last_ts"] is not None:
        head += f", {cap['last_ts'] - cap['first_ts']:.3f} s"
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


def cmd_export(args) -> int:
    from analyzer.export.writer import Writer

    out = open(args.output, "wb") if args.output and args.output != "-" else sys.stdout.buffer  # noqa: SIM115
    try:
        with analysis(args) as a:
            stats = Stats(a.knowledge.topic_ids)
            w = Writer(out, args.format, spans=not args.no_spans)
            w.begin(args.capture)
            for ev in a.events():
                stats.add(ev)
                w.event(ev)
            w.end(stats_tables(stats, a))
    except BrokenPipeError:
        return EXIT_OK
    finally:
        if out is not sys.stdout.buffer:
            out.close()
        else:
            out.flush()
    return finish(a)


# -- live ------------------------------------------------------------------------------------------


def cmd_live(args) -> int:
    from analyzer.capture import live

    problem = live.check_privileges(args.interface)
    if problem:
        print(f"kafka-analyzer: {problem}", file=sys.stderr)
        return EXIT_USAGE
    sniffer = live.LiveCapture(
        args.interface, bpf=args.filter, write=args.write, count=args.count, duration=args.duration
    )
    apis = _api_filter(args.api)
    writer = None
    if args.mode == "export":
        from analyzer.export.writer import Writer

        writer = Writer(sys.stdout.buffer, "ndjson", spans=not args.no_spans)
        writer.begin(f"live:{args.interface}")
    origin = None
    with analysis(args, source=sniffer, idle_timeout=300.0) as a:
        stats = Stats(a.knowledge.topic_ids)
        for ev in a.events():
            stats.add(ev)
            if args.mode == "read" and type(ev) is Exchange:
                if origin is None:
                    origin = a.first_ts
                if _keep(ev, args, apis):
                    print(exchange_line(ev, origin, args.absolute), flush=True)
            if writer is not None:
                writer.event(ev)
                sys.stdout.buffer.flush()
    tables = stats_tables(stats, a)
    if writer is not None:
        writer.end(tables)
    elif args.mode == "stats" or a.interrupted or args.mode == "read":
        render_tables(tables, sys.stdout if args.mode == "stats" else sys.stderr)
    return finish(a)


# -- check -----------------------------------------------------------------------------------------


def cmd_check(args) -> int:
    from analyzer.session.check import Checker, CheckResult, LatencyRule, junit_xml

    try:
        rules = tuple(LatencyRule.parse(t) for t in args.latency or ())
    except ValueError as exc:
        print(f"kafka-analyzer: {exc}", file=sys.stderr)
        return EXIT_USAGE
    checker = Checker(
        allow=tuple(args.allow or ()),
        max_kafka_errors=args.max_kafka_errors,
        forbid_errors=tuple(x for v in args.forbid_error or () for x in v.split(",")),
        max_unanswered=args.max_unanswered,
        latency=rules,
        expect_apis=tuple(x for v in args.expect_api or () for x in v.split(",")),
    )
    t0 = time.monotonic()
    with analysis(args) as a:
        for ev in a.events():
            checker.add(ev)
    results = checker.results()
    if a.exchanges == 0:
        results = [*results, CheckResult("kafka_traffic", False, "no Kafka exchange in the capture")]
    for r in results:
        print(f"{'PASS' if r.passed else 'FAIL'}  {r.name}: {r.summary}")
        for e in r.examples:
            print(f"      {e}")
    failed = sum(1 for r in results if not r.passed)
    print(f"{len(results) - failed} passed, {failed} failed")
    if args.junit:
        with open(args.junit, "w", encoding="utf-8") as f:
            f.write(junit_xml(results, os.path.basename(args.capture), time.monotonic() - t0))
    if a.unusable():
        return EXIT_USAGE
    return EXIT_DAMAGED if failed else EXIT_OK


# -- tui -------------------------------------------------------------------------------------------


def cmd_tui(args) -> int:
    from analyzer.tui.app import run_tui

    return run_tui(
        args.capture, Options(records_bodies=True, show_secrets=args.show_secrets), tuple(args.port or ())
    )


# -- protocol --------------------------------------------------------------------------------------


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


# -- argument parsing ------------------------------------------------------------------------------


def _common(p: argparse.ArgumentParser, capture: bool = True) -> None:
    if capture:
        p.add_argument(
            "capture",
            nargs="+",
            help="pcap or pcapng files (optionally gzip/zstd compressed), or - for stdin",
        )
        p.add_argument(
            "-j",
            "--jobs",
            type=int,
            default=1,
            metavar="N",
            help="with several capture files: analyse N files at a time in parallel processes",
        )
    p.add_argument(
        "--port",
        type=int,
        action="append",
        metavar="PORT",
        help="a broker port (repeatable); Kafka is found by content anyway, this settles roles",
    )
    p.add_argument("--show-secrets", action="store_true", help="do not mask SASL passwords and SCRAM proofs")


def _filters(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--api", action="append", metavar="API", help="only these APIs (names or keys, repeatable)"
    )
    p.add_argument("--topic", action="append", metavar="TOPIC", help="only exchanges naming this topic")
    p.add_argument("--client", action="append", metavar="CLIENT_ID", help="only this client id")
    p.add_argument("--errors", action="store_true", help="only exchanges with error codes or problems")
    p.add_argument("--slower-than", type=float, metavar="MS", help="only exchanges slower than MS ms")
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
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("export", help="every exchange as JSON or NDJSON")
    _common(p)
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
    p.add_argument("--count", type=int, help="stop after N packets")
    p.add_argument("--duration", type=float, metavar="S", help="stop after S seconds")
    p.add_argument("--mode", choices=("read", "stats", "export"), default="read")
    p.add_argument("--records", action="store_true", help="(export) decode record bodies")
    p.add_argument("--no-spans", action="store_true", help="(export) leave out byte spans")
    p.set_defaults(func=cmd_live)

    p = sub.add_parser("check", help="CI regression checks: exit 1 when a rule fails; JUnit report")
    _common(p)
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
    p.add_argument("--junit", metavar="FILE.xml", help="write a JUnit XML report")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("tui", help="browse a capture: exchanges, field tree, hex view")
    _common(p)
    p.set_defaults(func=cmd_tui)

    p = sub.add_parser("protocol", help="the API keys and versions this analyzer decodes")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=cmd_protocol)
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    caps = getattr(args, "capture", None)
    if caps is not None:
        for cap in caps:
            problem = None if cap == "-" else check_readable(cap)
            if problem:
                print(f"kafka-analyzer: {problem}", file=sys.stderr)
                return EXIT_USAGE
        if len(caps) > 1:
            return _many(args, argv, caps)
        args.capture = caps[0]
    try:
        return args.func(args)
    except BrokenPipeError:
        # stdout closed early (| head): not an error
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        return EXIT_OK


def _many(args, argv: list[str], caps: list[str]) -> int:
    """Several capture files: each is analysed by its own process (``-j`` at a time); outputs
    are printed in the order of the files, each under a ``==> FILE <==`` line for read/stats."""
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    if "-" in caps:
        print("kafka-analyzer: stdin (-) cannot be combined with other capture files", file=sys.stderr)
        return EXIT_USAGE
    if args.command == "tui":
        print("kafka-analyzer: the TUI opens one capture at a time", file=sys.stderr)
        return EXIT_USAGE
    if args.command == "export" and (args.format == "json" or args.output):
        print("kafka-analyzer: several captures export as NDJSON to stdout only", file=sys.stderr)
        return EXIT_USAGE
    rest = [a for a in argv if a not in caps]
    jobs = [j for j in range(len(rest)) if rest[j] in ("-j", "--jobs")]
    for j in reversed(jobs):
        del rest[j : j + 2]
    rest = [a for a in rest if not a.startswith("--jobs=")]

    def one(cap: str):
        cmd = [sys.executable, "-m", "analyzer", rest[0], cap, *rest[1:]]
        return subprocess.run(cmd, capture_output=True)

    rc = EXIT_OK
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for cap, r in zip(caps, pool.map(one, caps), strict=True):
            if args.command != "export":
                sys.stdout.write(f"==> {cap} <==\n")
                sys.stdout.flush()
            sys.stdout.buffer.write(r.stdout)
            sys.stdout.buffer.flush()
            sys.stderr.buffer.write(r.stderr)
            rc = max(rc, r.returncode)
    return rc


if __name__ == "__main__":
    sys.exit(main())
