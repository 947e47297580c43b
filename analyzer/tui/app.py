"""A Textual TUI to browse a capture: exchange list, decoded field tree, hex view, stats.

The capture is analysed by the one driver, :class:`~analyzer.pipeline.Analysis`, in a worker thread;
rows reach the UI in batches (at most one batch in flight, so a huge capture never floods the
message queue) and the UI stays responsive while the file is read.

Keys: ``/`` filter (a display filter, ``kafka-analyzer filters``; plain words that are not a
valid filter search the row text, and the bar says so), ``tab``/``shift+tab`` switch panes,
``r`` request/response in the hex view, ``e`` next exchange with errors, ``s`` stats screen, ``q`` quit.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field, replace

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Footer, Header, Input, Static, Tree
from textual.worker import get_current_worker

from analyzer.capture.files import check_readable
from analyzer.dissect.message import Options, decode_request, decode_response
from analyzer.filter import Filter, FilterError, compile_filter, plain_words
from analyzer.model import Exchange, Field, Issue, Severity
from analyzer.pipeline import UNUSABLE, Analysis, Exit
from analyzer.session.report import api_text, endpoints, exchange_flags, latency_text, sizes_text, topics_text
from analyzer.session.stats import Stats
from analyzer.tui.widgets import (
    DetailTree,
    ExchangeList,
    HexView,
    NodeData,
    StatsScreen,
    hex_target,
    message_roots,
)

# "!": the flags, error names and notable issues
COLUMNS = (
    "#",
    "time",
    "client -> broker",
    "client id",
    "API",
    "corr",
    "topics",
    "req/resp B",
    "latency",
    "!",
)
MAX_WIDTHS = (7, 16, 47, 30, 26, 10, 60, 17, 12, 80)


# -- rows and filtering -------------------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class ExRow:
    """One exchange with its table cells and what the filter searches."""

    index: int
    ex: Exchange
    cells: tuple[str, ...]
    severity: Severity | None  # of the flags: colours the last column
    api: str  # lower case "produce v7"
    topics: tuple[str, ...]
    client: str
    has_errors: bool
    flags: list[str] = field(default_factory=list)
    slim: bool = False  # the decoded trees were dropped: re-decode from the frames to show them


def make_row(index: int, ex: Exchange, origin: float | None) -> ExRow:
    a, b, known = endpoints(ex)
    api = api_text(ex.api_key, ex.api_version)
    cid = ex.client_id
    flags, worst = exchange_flags(ex)
    cells = (
        str(index + 1),
        f"{ex.ts - origin:.6f}" if origin is not None else "-",
        f"{a} -> {b}" if known else f"{a} ?? {b}",
        cid if cid is not None else "-",
        api,
        str(ex.correlation_id) if ex.correlation_id is not None else "-",
        topics_text(ex.topics),
        sizes_text(ex),
        latency_text(ex),
        "; ".join(flags),
    )
    has_errors = worst is not None
    return ExRow(
        index,
        ex,
        cells,
        worst,
        api.lower(),
        tuple(t.lower() for t in ex.topics),
        (cid or "").lower(),
        has_errors,
        flags,
    )


ERROR_WORDS = ("errors", "error", "err")


def parse_filter(text: str) -> list[str]:
    return [t for t in text.lower().split() if t]


def row_matches(row: ExRow, terms: list[str]) -> bool:
    """Text search (when the filter bar holds plain words that are not a display filter).
    Every term must match: ``errors`` keeps exchanges with error codes or problems;
    ``api:X``, ``topic:X``, ``client:X`` look for substring X in that column only; any other
    term is a substring of the API name (``produce``, ``fetch v12``), a topic, the client id or
    any other cell of the row (addresses, flags)."""
    for t in terms:
        if t in ERROR_WORDS:
            if not row.has_errors:
                return False
            continue
        col, sep, value = t.partition(":")
        if sep and col in ("api", "topic", "client"):
            if col == "api":
                ok = value in row.api
            elif col == "topic":
                ok = any(value in topic for topic in row.topics)
            else:
                ok = value in row.client
        else:
            ok = (
                t in row.api
                or t in row.client
                or any(t in topic for topic in row.topics)
                or any(t in c.lower() for c in row.cells[2:])
            )
        if not ok:
            return False
    return True


# -- keeping memory low: trees are dropped after the row is made, and re-decoded when shown ----------


def slim(ex: Exchange) -> bool:
    """Drop the decoded header and body of the exchange's Kafka messages (kept: frames, issues,
    error codes, topics). A capture of a million exchanges keeps a few hundred bytes per
    exchange instead of its whole field trees. SASL tokens (no api key) are kept as decoded."""
    dropped = False
    for m in (ex.request, ex.response):
        if m is not None and m.api_key is not None and (m.header is not None or m.body is not None):
            m.header = m.body = None
            dropped = True
    return dropped


def redecode(ex: Exchange, opts: Options) -> Exchange:
    """The exchange with the field trees of :func:`slim`-med messages decoded again from their
    frames, as the pairing layer decoded them (responses with their request's key and version).
    Issues, error codes and everything else come from the original exchange."""
    req, resp = ex.request, ex.response
    if req is not None and req.api_key is not None and req.header is None and req.body is None:
        d = decode_request(req.frame, opts)
        req = replace(req, header=d.header, body=d.body)
    if resp is not None and resp.api_key is not None and resp.header is None and resp.body is None:
        key, ver = (ex.request.api_key, ex.request.api_version) if ex.request is not None else (None, None)
        d = decode_response(resp.frame, key, ver, opts)
        resp = replace(resp, header=d.header, body=d.body)
    return Exchange(ex.conn, req, resp, ex.issues, ex.topics)


# -- messages from the worker ------------------------------------------------------------------------


class AnalysisBatch(Message):
    """New rows and progress from the analysis thread."""

    def __init__(
        self,
        rows: list[ExRow],
        packets: int,
        fraction: float | None,
        done: bool = False,
        error: str | None = None,
        connections: int = 0,
    ) -> None:
        super().__init__()
        self.rows = rows
        self.packets = packets
        self.fraction = fraction
        self.done = done
        self.error = error
        self.connections = connections


# -- the app ---------------------------------------------------------------------------------------------


class AnalyzerApp(App[int]):
    """Browse the Kafka exchanges of one capture file."""

    CSS_PATH = "app.tcss"
    TITLE = "kafka-analyzer"

    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("slash", "filter", "Filter"),
        Binding("r", "toggle_hex", "Req/Resp hex"),
        Binding("e", "next_error", "Next error"),
        Binding("s", "stats", "Stats"),
        Binding("escape", "close_filter", "Close filter", show=False),
    ]

    BATCH_SECONDS = 0.1  # how often the worker posts rows while reading
    VIEW_CACHE = 8  # re-decoded exchanges kept
    SLICE_SECONDS = 0.05  # how long the worker holds the stats lock at a time

    def __init__(self, path: str, opts: Options | None = None, ports: tuple[int, ...] = ()) -> None:
        super().__init__()
        self.path = path
        self.opts = opts if opts is not None else Options(records_bodies=True)
        self._lock = threading.Lock()  # the analysis and stats, shared with the worker
        self.analysis = Analysis(path, self.opts, ports=ports, lock=self._lock)
        self.stats = Stats(self.analysis.knowledge.topic_ids)
        self.rows: list[ExRow] = []
        self.shown: list[int] = []  # indexes into rows, in table order
        self.terms: list[str] = []  # text search terms (plain words that are not a filter)
        self.filter: Filter | None = None  # the compiled display filter
        self.filter_text = ""  # what the shown rows were filtered with
        self.filter_error: FilterError | None = None  # the bar's text does not compile
        self._hint_text = ""  # the text the hint under the filter bar is about
        self.current: ExRow | None = None
        self.view: Exchange | None = None  # the current exchange with its field trees
        self.slim_exchanges = True
        self._views: dict[int, Exchange] = {}
        self.hex_kind = "request"
        self.selected: NodeData | None = None
        self.packets = 0
        self.error_rows = 0  # exchanges with error codes or problems
        self.connections = 0
        self.fraction: float | None = 0.0
        self.done = False
        self.load_error: str | None = None
        self._ack = threading.Event()  # the UI has taken the last batch
        self._ack.set()
        self._stop = threading.Event()
        self._filter_timer: Timer | None = None
        self.sub_title = os.path.basename(path)

    # layout -------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="message")
        yield Input(
            placeholder='display filter: api == Produce and latency > 5ms, error, topic == "orders", '
            "produce.acks == 1 (plain words search the row text); enter applies, esc closes",
            id="filter",
        )
        yield Static(id="filter-hint")
        yield ExchangeList(COLUMNS, MAX_WIDTHS, id="exchanges")
        with Horizontal(id="detail"):
            yield DetailTree(id="tree")
            yield HexView(id="hex")
        yield Static(id="status")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(ExchangeList)
        table.set_rows(self.rows, self.shown)
        table.border_title = "Exchanges"
        tree = self.query_one(DetailTree)
        tree.border_title = "Decoded"
        tree.show_exchange(None)
        self.query_one(HexView).set_data(b"", "frame payload")
        table.focus()
        self._update_status()
        self._analyze()

    def on_unmount(self) -> None:
        self._stop.set()
        self._ack.set()

    # analysis (worker thread) ------------------------------------------------------------------------
    @work(thread=True, exclusive=True, exit_on_error=False, name="analysis")
    def _analyze(self) -> None:
        worker = get_current_worker()

        def cancelled() -> bool:
            return worker.is_cancelled or self._stop.is_set()

        def post(batch: AnalysisBatch) -> bool:
            while not self._ack.wait(0.05):
                if cancelled():
                    return False
            if cancelled():
                return False
            self._ack.clear()
            self.post_message(batch)
            return True

        problem = check_readable(self.path)
        if problem:
            post(AnalysisBatch([], 0, None, done=True, error=problem))
            return
        a = self.analysis
        a.cancel = cancelled
        rows: list[ExRow] = []
        count = 0
        origin: float | None = None
        last_post = time.monotonic()
        try:
            for events in a.batches(self.SLICE_SECONDS):
                if cancelled():
                    return
                with self._lock:
                    add = self.stats.add
                    for ev in events:
                        add(ev)
                for ev in events:
                    if type(ev) is Exchange:
                        if origin is None:
                            origin = a.first_ts
                        row = make_row(count, ev, origin)
                        if self.slim_exchanges:
                            row.slim = slim(ev)
                        rows.append(row)
                        count += 1
                now = time.monotonic()
                if now - last_post >= self.BATCH_SECONDS and not a.finished:
                    if not post(AnalysisBatch(rows, a.packets, a.fraction, connections=a.connections)):
                        return
                    rows = []
                    last_post = now
            if not cancelled():
                post(AnalysisBatch(rows, a.packets, 1.0, done=True, connections=a.connections))
        except Exception as e:  # a bug must not take the UI down: say what happened
            post(
                AnalysisBatch(
                    rows,
                    a.packets,
                    None,
                    done=True,
                    error=f"analysis failed after {a.packets} packets: {type(e).__name__}: {e}",
                    connections=a.connections,
                )
            )

    # batches (UI thread) ------------------------------------------------------------------------------
    @on(AnalysisBatch)
    def _on_batch(self, batch: AnalysisBatch) -> None:
        try:
            self._take_batch(batch)
        finally:
            self._ack.set()

    def _take_batch(self, batch: AnalysisBatch) -> None:
        table = self.query_one(ExchangeList)
        self.rows.extend(batch.rows)
        self.error_rows += sum(1 for r in batch.rows if r.has_errors)
        new = [r.index for r in batch.rows if self._matches(r)]
        self.shown.extend(new)
        table.rows_added(new)
        if self._hint_text:
            self._update_hint(self._hint_text)
        self.packets = batch.packets
        self.connections = batch.connections
        self.fraction = batch.fraction
        if batch.error:
            self.load_error = batch.error
        if batch.done:
            self.done = True
            self._show_problems()
        if self.current is None and new:
            table.move_cursor(self.shown.index(new[0]))
            self._show(self.rows[new[0]])
        self._update_status()

    def _show_problems(self) -> None:
        lines: list[Text] = []
        if self.load_error:
            lines.append(Text(f"Cannot analyse the capture: {self.load_error}", style="bold"))
        for i in self.capture_issues:
            if i.code in UNUSABLE:
                lines.append(Text(f"Not a capture file: {i.message}", style="bold"))
            elif i.severity >= Severity.ERROR:
                lines.append(Text(f"Capture damaged: {i.message} (showing what was read before the damage)"))
            else:
                lines.append(Text(f"Capture {i.severity}: {i.message}"))
        if not self.rows and not self.load_error and not self.analysis.unusable():
            where = (
                "no TCP traffic at all"
                if self.connections == 0
                else f"{self.connections} TCP connections, none carrying Kafka"
            )
            lines.append(Text(f"No Kafka traffic found in {self.packets} packets ({where})."))
        msg = self.query_one("#message", Static)
        if lines:
            msg.update(Text("\n").join(lines))
            msg.add_class("shown")
            self.notify(str(lines[0]), severity="error" if self.exit_code else "warning", timeout=8)
        else:
            msg.remove_class("shown")

    @property
    def capture_issues(self) -> list[Issue]:
        return self.analysis.capture_issues if self.done else []

    @property
    def exit_code(self) -> int:
        """What ``run_tui`` returns: the analysis' exit code (see :class:`~analyzer.pipeline.Exit`);
        an unreadable file is 2, a failure of the analysis itself 1; 0 when quit before the end."""
        if self.load_error:
            return Exit.USAGE if not self.rows and not self.packets else Exit.DAMAGED
        if not self.done:
            return Exit.OK
        return int(self.analysis.exit_code())

    def _update_status(self) -> None:
        if self.done:
            state = Text("done", style="green")
        elif self.fraction is not None:
            state = Text(f"analysing… {self.fraction * 100:.0f}%", style="yellow")
        else:
            state = Text("analysing…", style="yellow")
        t = Text()
        t.append(os.path.basename(self.path), style="bold")
        t.append("  ")
        t.append_text(state)
        t.append(f"  {self.packets} packets  {len(self.rows)} exchanges")
        if self.error_rows:
            t.append(f"  {self.error_rows} with errors", style="red")
        if self.filter is not None:
            t.append(f"  showing {len(self.shown)} (filter: {self.filter.text})", style="cyan")
        elif self.terms:
            t.append(f"  showing {len(self.shown)} (text search: {' '.join(self.terms)})", style="cyan")
        if self.capture_issues or self.load_error:
            t.append("  capture problems: see top", style="bold red")
        self.query_one("#status", Static).update(t)

    # selection --------------------------------------------------------------------------------------------
    @on(ExchangeList.RowHighlighted)
    def _row_highlighted(self, event: ExchangeList.RowHighlighted) -> None:
        row = self.rows[event.index]
        if row is not self.current:
            self._show(row)

    def _show(self, row: ExRow | None) -> None:
        self.current = row
        self.selected = None
        self.view = None
        tree = self.query_one(DetailTree)
        if row is None:
            tree.show_exchange(None)
            self._update_hex()
            return
        ex = self.view = self.full_exchange(row)
        title = (
            f"#{row.index + 1}  {api_text(ex.api_key, ex.api_version)}  corr={ex.correlation_id}  "
            f"{ex.conn.client if ex.conn.client_direction is not None else ex.conn.a} -> "
            f"{ex.conn.broker if ex.conn.client_direction is not None else ex.conn.b}"
        )
        tree.show_exchange(ex, title)
        self.hex_kind = "request" if ex.request is not None else "response"
        self._update_hex()

    def full_exchange(self, row: ExRow) -> Exchange:
        """The exchange of ``row`` with its field trees (re-decoded if they were dropped)."""
        if not row.slim:
            return row.ex
        view = self._views.pop(row.index, None)
        if view is None:
            try:
                view = redecode(row.ex, self.opts)
            except Exception as e:  # never expected: decoders report problems as issues
                self.notify(f"cannot decode exchange #{row.index + 1} again: {e}", severity="error")
                view = row.ex
        self._views[row.index] = view
        while len(self._views) > self.VIEW_CACHE:
            del self._views[next(iter(self._views))]
        return view

    @on(Tree.NodeHighlighted, "#tree")
    def _node_highlighted(self, event: Tree.NodeHighlighted) -> None:
        data = event.node.data
        if not isinstance(data, NodeData):
            return
        self.selected = data
        if data.kind is not None:
            self.hex_kind = data.kind
        self._update_hex()

    def _update_hex(self) -> None:
        hv = self.query_one(HexView)
        row = self.current
        if row is None:
            hv.set_data(b"", "no exchange selected")
            return
        target = hex_target(self.view or row.ex, self.hex_kind, self.selected)
        if target is None:
            hv.set_data(b"", f"{self.hex_kind}: not captured")
            return
        if target.data != hv.data or target.title != hv.title:
            hv.set_data(target.data, target.title)
        hv.set_highlight(target.start, target.end)

    def select_exchange(self, index: int) -> bool:
        """Move the list cursor to exchange ``index`` (0-based) if the filter shows it."""
        try:
            pos = self.shown.index(index)
        except ValueError:
            return False
        self.query_one(ExchangeList).move_cursor(pos)
        self._show(self.rows[index])
        return True

    def reveal_field(self, kind: str, target: Field) -> bool:
        """Open the tree down to ``target`` (a field of the current exchange's ``kind`` message),
        put the cursor on it and highlight its bytes."""
        node = self.query_one(DetailTree).reveal(kind, target)
        if node is None:
            return False
        self.selected = node.data
        self.hex_kind = kind
        self._update_hex()
        return True

    def find_field(self, kind: str, pred) -> Field | None:
        """The first field of the current exchange's ``kind`` message for which ``pred`` is true."""
        if self.current is None or self.view is None:
            return None
        ex = self.view
        m = ex.request if kind == "request" else ex.response
        for root in message_roots(m):
            for f in root.walk():
                if pred(f):
                    return f
        return None

    # actions ------------------------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        main_only = ("filter", "toggle_hex", "next_error", "stats")
        return not (isinstance(self.screen, StatsScreen) and action in main_only)

    def action_filter(self) -> None:
        inp = self.query_one("#filter", Input)
        inp.add_class("shown")
        self.query_one("#filter-hint", Static).add_class("shown")
        inp.focus()

    def action_close_filter(self) -> None:
        inp = self.query_one("#filter", Input)
        if not inp.has_class("shown"):
            return
        self._apply_filter(inp.value)
        if not inp.value.strip():
            self._hide_filter()
        self.query_one(ExchangeList).focus()

    def _hide_filter(self) -> None:
        self.query_one("#filter", Input).remove_class("shown")
        self.query_one("#filter-hint", Static).remove_class("shown")

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        self._apply_filter(event.value)
        if not event.value.strip():
            self._hide_filter()
        self.query_one(ExchangeList).focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        if self._filter_timer is not None:
            self._filter_timer.stop()
        value = event.value
        self._filter_timer = self.set_timer(0.3, lambda: self._apply_filter(value))

    def set_filter(self, text: str) -> None:
        """Filter the list as if ``text`` had been typed in the filter input."""
        inp = self.query_one("#filter", Input)
        with inp.prevent(Input.Changed):
            inp.value = text
        inp.set_class(bool(text.strip()), "shown")
        self.query_one("#filter-hint", Static).set_class(bool(text.strip()), "shown")
        self._apply_filter(text)

    def _apply_filter(self, text: str) -> None:
        if self._filter_timer is not None:
            self._filter_timer.stop()
            self._filter_timer = None
        text = text.strip()
        flt: Filter | None = None
        terms: list[str] = []
        error: FilterError | None = None
        if text:
            try:
                flt = compile_filter(text)
            except FilterError as exc:
                error = exc
                if plain_words(text):
                    terms = parse_filter(text)
        if error is not None and not terms:
            # not a valid filter and not plain words: say where, keep the rows as they are
            self.filter_error = error
            self._update_hint(text)
            return
        self.filter_error = error
        if text == self.filter_text and (flt is None) == (self.filter is None):
            self._update_hint(text)
            return
        self.filter_text = text
        self.terms = terms
        if flt is not None:
            flt.knowledge = self.pipeline.knowledge
        self.filter = flt
        table = self.query_one(ExchangeList)
        self.shown = [r.index for r in self.rows if self._matches(r)] if text else list(range(len(self.rows)))
        self._update_hint(text)
        table.set_rows(self.rows, self.shown)
        keep = self.current
        if keep is not None and keep.index in self.shown:
            table.move_cursor(self.shown.index(keep.index))
        elif self.shown:
            table.move_cursor(0)
            self._show(self.rows[self.shown[0]])
        else:
            self._show(None)
        self._update_status()

    def _matches(self, row: ExRow) -> bool:
        """Whether the current display filter (or text search) keeps ``row``."""
        flt = self.filter
        if flt is not None:
            ex = row.ex
            if row.slim and flt.needs_trees:
                ex = self._views.get(row.index) or redecode(ex, self.opts)
            return flt(ex)
        return not self.terms or row_matches(row, self.terms)

    def _update_hint(self, text: str) -> None:
        """The line under the filter bar: the error and where it is, the text-search note, or
        the live match count."""
        hint = self.query_one("#filter-hint", Static)
        self._hint_text = text
        err = self.filter_error
        t = Text()
        if not text:
            t.append("display filter, e.g. api == Produce and latency > 5ms (kafka-analyzer filters)", "dim")
        elif err is not None and not self.terms:
            line = err.caret(text).rsplit("\n", 1)[1]
            t.append(line + "\n", style="bold red")
            t.append(f"invalid filter at {err.position + 1}: {err.message}", style="red")
            t.append(f"  (still showing {len(self.shown)})", style="dim")
        elif self.terms:
            t.append(f"text search: {len(self.shown)} rows contain the words", style="yellow")
            t.append(f"  (not a filter: {err.message})" if err is not None else "", style="dim")
        else:
            t.append(f"filter: {len(self.shown)} of {len(self.rows)} exchanges match", style="green")
        hint.update(t)
        hint.set_class(err is not None and not self.terms, "error")

    def action_toggle_hex(self) -> None:
        if self.current is None:
            return
        ex = self.current.ex
        other = "response" if self.hex_kind == "request" else "request"
        if (ex.response if other == "response" else ex.request) is None:
            self.notify(f"no {other} in this exchange", timeout=2)
            return
        self.hex_kind = other
        self._update_hex()

    def action_next_error(self) -> None:
        if not self.shown:
            return
        table = self.query_one(ExchangeList)
        start = table.cursor_row if self.current is not None else -1
        n = len(self.shown)
        for step in range(1, n + 1):
            pos = (start + step) % n
            if self.rows[self.shown[pos]].has_errors:
                table.move_cursor(pos)
                self._show(self.rows[self.shown[pos]])
                return
        self.notify("no exchange with errors", timeout=2)

    def stats_snapshot(self) -> dict:
        from analyzer.session.report import stats_tables

        with self._lock:
            return stats_tables(self.stats, self.analysis)

    def action_stats(self) -> None:
        note = "" if self.done else "analysis still running: partial numbers"
        self.push_screen(StatsScreen(self.stats_snapshot(), note))


def run_tui(path: str, opts: Options | None = None, ports: tuple[int, ...] = ()) -> int:
    """Run the TUI on a capture file; returns an exit code (0 ok, 1 damaged or no Kafka, 2 unusable)."""
    app = AnalyzerApp(path, opts, tuple(ports))
    app.run()
    rc = app.return_code or 0
    return rc if rc else app.exit_code
