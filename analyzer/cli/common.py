"""What the subcommands share: the decoding options of a run, the driver of a capture (progress
bar, Ctrl-C), the display filter, the exchange and TLS lines of ``read`` and ``live``, the end of a
run (problems on stderr, the exit code)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Protocol

from analyzer.dissect.codecs import Limits
from analyzer.dissect.message import Options
from analyzer.model import Exchange
from analyzer.pipeline import Analysis, Exit, Outcome
from analyzer.session.report import api_text, endpoints, exchange_flags, latency_text, sizes_text, topics_text

EXIT_OK, EXIT_DAMAGED, EXIT_USAGE = Exit.OK, Exit.DAMAGED, Exit.USAGE

# the arguments that make a display filter (-Y and read's shorthands)
FILTER_ARGS = ("display_filter", "api", "topic", "client", "errors", "slower_than")


def usage(message: str) -> None:
    print(f"kafka-analyzer: {message}", file=sys.stderr)


def print_json(obj) -> None:
    import orjson

    sys.stdout.buffer.write(orjson.dumps(obj, option=orjson.OPT_INDENT_2) + b"\n")


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
    most = getattr(args, "state_max", None)
    if most is not None and most > 0:  # --state-max: the knowledge's tables too
        a.knowledge.most = most
    bar = _Progress(a) if source is None and _want_progress(a) else None
    if bar is not None:
        a.progress = bar.update
    with graceful_interrupt(a):
        try:
            yield a
        finally:
            if bar is not None:
                bar.close()


class Stoppable(Protocol):
    def stop(self) -> None: ...


# set by a SIGTERM: the run was stopped as a service is (``live`` then exits 0, its drops and
# damage said on stderr and in its summary: see :func:`service_exit`)
terminated = threading.Event()


def service_exit(code: int) -> int:
    """``live``'s exit code: a run stopped by SIGTERM (systemd's stop) that worked exits 0 even
    with partial results (drops, gaps: they are in its summary and metrics); else ``code``."""
    return 0 if terminated.is_set() and code == 1 else code


def on_sigterm(a: Stoppable) -> None:
    terminated.set()
    a.stop()


@contextlib.contextmanager
def graceful_interrupt(a: Stoppable) -> Iterator[None]:
    """The first Ctrl-C (or a SIGTERM) stops ``a`` (an analysis, the live fanout), the second
    is forceful; nothing changes outside the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_sigint(*_) -> None:
        a.stop()
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C is forceful

    old_int = signal.signal(signal.SIGINT, on_sigint)
    old_term = signal.signal(signal.SIGTERM, lambda *_: on_sigterm(a))
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
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

        self.p = Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            DownloadColumn(),
            TimeRemainingColumn(),
            transient=True,
            console=Console(stderr=True),
        )
        self.task = self.p.add_task(os.path.basename(a.source.name), total=getattr(a.source, "size", None))
        self.p.start()

    def update(self, a: Analysis) -> None:
        self.p.update(self.task, completed=getattr(a.source, "position", 0))

    def close(self) -> None:
        self.p.stop()


def one_process_instead(command: str, jobs: int, exc: Exception, doing: str) -> None:
    """Say on stderr why ``-j`` hands the work back to one process: what an option asks for
    needs one (``OneProcess``: not a failure), or a process failed."""
    from analyzer.export.parallel import OneProcess

    why = f": {exc}" if isinstance(exc, OneProcess) else f" failed ({exc})"
    print(f"kafka-analyzer: {command} -j {jobs}{why}; {doing} in one process", file=sys.stderr)


def parallel_paths(args) -> list[str] | None:
    """The capture files of a run that ``export -j N`` and ``stats -j N`` can share among
    processes: a file or the pieces of one recording, without a display filter (its fields read
    the knowledge of the moment); None: one process does it all."""
    if getattr(args, "jobs", 1) <= 1:
        return None
    if any(getattr(args, k, None) for k in FILTER_ARGS):
        return None
    cap = args.capture
    paths = list(cap.paths) if hasattr(cap, "paths") else [cap] if isinstance(cap, str) else []
    if not paths or "-" in paths:
        return None
    return paths


# -- the display filter --------------------------------------------------------------------------


class BadFilter(Exception):
    """A display filter that does not compile (already reported on stderr)."""


def display_filter(args, expr: str | None = None):
    """The compiled ``-Y`` expression joined with the old ``read`` flags (one code path), or
    None; a :class:`~analyzer.filter.FilterError` is printed with a caret, then :class:`BadFilter`
    (``main`` returns EXIT_USAGE) is raised."""
    if expr is None and not any(getattr(args, k, None) for k in FILTER_ARGS):
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


# -- the lines of read and live --------------------------------------------------------------------


def fmt_ts(ts: float, origin: float | None, absolute: bool) -> str:
    if absolute or origin is None:
        from datetime import UTC, datetime  # (read's absolute times: datetime loads then)

        try:
            return datetime.fromtimestamp(ts, UTC).strftime("%H:%M:%S.%f")
        except (ValueError, OverflowError, OSError):  # a capture's timestamp beyond any date
            return f"{ts:.6f}"
    return f"{ts - origin:12.6f}"


def exchange_line(ex: Exchange, origin: float | None, absolute: bool = False) -> str:
    a, b, _known = endpoints(ex)
    flags, _worst = exchange_flags(ex)
    cid = ex.client_id if ex.client_id is not None else "-"
    corr = ex.correlation_id if ex.correlation_id is not None else "-"
    return (
        f"{fmt_ts(ex.ts, origin, absolute)}  {a} -> {b}  {cid}  {api_text(ex.api_key, ex.api_version)}  "
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
    when = fmt_ts(conn.ts_first, origin, absolute)
    line = f"{when}  {client} -> {broker}  TLS connection: {what} [{state}]"
    return line.replace("    ", "  ")
