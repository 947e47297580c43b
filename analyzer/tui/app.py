"""A Textual TUI to browse a capture or a live interface: exchange list, decoded field tree, hex
view, and views of the connections, statistics, issues and groups (``:`` command line, ``?``
help).

The app is thin: what it browses (the analysis, its index, the list's state, the decoded
exchanges, the display filter glue) is a :class:`~analyzer.tui.session.Session`, without
Textual; the widgets (``widgets/``) and views (``screens/``) are one per file. The capture is
read once by the one driver, :class:`~analyzer.pipeline.Analysis`, in a worker thread; rows
reach the UI in batches (at most one in flight). A live session (``tui -i IFACE``) follows the
new exchanges until the user scrolls away, and ``c`` stops the capture (the session stays).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Header, Input
from textual.worker import get_current_worker

from analyzer.dissect.message import Options
from analyzer.filter import FilterError
from analyzer.model import Exchange, Field
from analyzer.pipeline import Exit
from analyzer.tui.indexer import Progress
from analyzer.tui.listview import SortedRows
from analyzer.tui.messages import (
    AnalysisBatch,
    FilterExchanges,
    HeaderClicked,
    ListScrolledUp,
    RowChosen,
    RowHighlighted,
    ShowExchanges,
    ShowTimeline,
)
from analyzer.tui.rows import COLUMNS, Indexes, Row
from analyzer.tui.screens.base import View
from analyzer.tui.screens.command import CommandScreen, parse_command
from analyzer.tui.screens.records import RecordsScreen, record_rows
from analyzer.tui.screens.views import make_view
from analyzer.tui.session import Session
from analyzer.tui.spool import SpoolError
from analyzer.tui.widgets.detail_pane import DetailPane
from analyzer.tui.widgets.detail_tree import DetailTree
from analyzer.tui.widgets.exchange_list import ExchangeList
from analyzer.tui.widgets.filter_bar import FilterBar
from analyzer.tui.widgets.filter_hint import FilterHint
from analyzer.tui.widgets.labels import NodeData
from analyzer.tui.widgets.problem_banner import ProblemBanner
from analyzer.tui.widgets.status_bar import StatusBar

if TYPE_CHECKING:
    from analyzer.capture.live import LiveCapture

LAYOUTS = ("both", "list", "detail")
NARROW = 100  # below this width the hex pane starts hidden
SHORT = 30  # below this height the exchange list takes two thirds (the screen's class "-short")


class AnalyzerApp(App[int]):
    """Browse the Kafka exchanges of one capture (a path, a binary file object such as stdin)
    or of a live source (a :class:`~analyzer.capture.ring.RingCapture`)."""

    CSS_PATH = "app.tcss"
    TITLE = "kafka-analyzer"
    VERTICAL_BREAKPOINTS = [(0, "-short"), (SHORT, "-tall")]  # app.tcss: Screen.-short

    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("c", "stop_capture", "Stop capture"),  # live only (hidden otherwise)
        Binding("colon", "command", ":cmd"),
        Binding("question_mark", "help", "Help"),
        Binding("slash", "filter", "Filter"),
        Binding("f", "field_filter", "Field filter", show=False),
        Binding("e", "next_error", "Next error"),
        Binding("o", "sort", "Sort"),
        Binding("O", "reverse", "Reverse", show=False),
        Binding("r", "toggle_hex", "Req/Resp"),
        Binding("v", "records", "Records"),
        Binding("x", "export", "Export"),
        Binding("y", "copy", "Copy JSON", show=False),
        Binding("z", "layout", "Layout"),
        Binding("w", "hex_pane", "Hex", show=False),
        Binding("s", "stats", "Stats", show=False),
        Binding("t", "theme", "Theme", show=False),
        Binding("escape", "back", "Back", show=False),
    ]

    def __init__(
        self,
        source: str | BinaryIO | Any,
        opts: Options | None = None,
        ports: tuple[int, ...] = (),
        name: str | None = None,
        tls_keylog: str | None = None,
        display_filter: str | None = None,
        max_exchanges: int | None = None,
        spill_after: int | None = None,
    ) -> None:
        super().__init__()
        self.session = s = Session(source, opts, ports, tls_keylog, max_exchanges, spill_after)
        self.live = s.live
        self.path = name or (source if isinstance(source, str) else getattr(source, "name", "-"))
        if self.live:
            self.path = cast("LiveCapture", source).interface
        self.initial_filter = display_filter
        self.filter_error: FilterError | None = None  # the filter text does not compile (the list unchanged)
        self.current: Row | None = None
        self.view: Exchange | None = None  # the current exchange with its field trees
        self.layout_mode = "both"
        self.follow = self.live  # the list follows new exchanges (live, until the user moves up)
        self._ack = threading.Event()  # the UI has taken the last batch
        self._ack.set()
        self._stop = threading.Event()
        self.sub_title = f"live on {self.path}" if self.live else os.path.basename(str(self.path))

    # what the session holds, as the app's (tests and the bench read these) ------------------------
    analysis = property(lambda self: self.session.analysis)
    stats = property(lambda self: self.session.stats)
    index = property(lambda self: self.session.index)
    list = property(lambda self: self.session.list)
    done = property(lambda self: self.session.done)
    packets = property(lambda self: self.session.packets)
    first_row_at = property(lambda self: self.session.first_row_at)
    started_at = property(lambda self: self.session.started_at)
    capture_issues = property(lambda self: self.session.capture_issues)
    exit_code = property(lambda self: self.session.exit_code)

    # the list's state ----------------------------------------------------------------------------
    @property
    def rows(self) -> Sequence[Row]:
        """Every row taken from the indexer, in arrival order (``rows[i].index == i``)."""
        return self.list.rows

    @property
    def shown(self) -> Indexes:
        """The row indexes the list shows, in its order."""
        return self.list.shown

    @property
    def order(self) -> SortedRows:
        return self.list.order

    @property
    def filter_text(self) -> str:
        return self.list.text

    @property
    def conn_scope(self) -> int | None:
        return self.list.conn

    # layout -------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header()
        yield ProblemBanner(id="message")
        yield FilterBar(history=self.session.filter_history, id="filter")
        yield FilterHint(id="filter-hint")
        yield ExchangeList(id="exchanges")
        yield DetailPane(show_secrets=self.session.opts.show_secrets, id="detail")
        yield StatusBar(id="status")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(ExchangeList)
        table.set_rows(self.rows, self.shown)
        self._title_list()
        if self.size.width < NARROW:
            self.query_one("#hex").display = False
        table.focus()
        self._update_status()
        if self.initial_filter:
            self.set_filter(self.initial_filter)
        if self.live:
            self.set_interval(1.0, self._live_tick)
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

        def post(p: Progress) -> bool:
            while not self._ack.wait(0.05):
                if cancelled():
                    return False
            if cancelled():
                return False
            self._ack.clear()
            self.post_message(AnalysisBatch(p))
            return True

        self.session.run_indexer(post, cancelled, self._ack.is_set)

    # batches (UI thread) ------------------------------------------------------------------------------
    @on(AnalysisBatch)
    def _on_batch(self, batch: AnalysisBatch) -> None:
        try:
            self._take_batch(batch)
        finally:
            self._ack.set()

    def _take_batch(self, batch: AnalysisBatch) -> None:
        table = self.query_one(ExchangeList)
        table.origin = self.index.origin
        added = self.session.take(batch.progress)
        if added is None:
            table.set_rows(self.rows, self.shown, self.current.index if self.current else None)
        elif added:
            table.rows_added(added)
        if batch.progress.done:
            self._show_problems()
        if self.shown and (self.current is None or (self.follow and batch.rows)):
            last = len(self.shown) - 1 if self.follow else 0
            table.move_cursor(last)
            self._show(self.rows[self.shown[last]])
        self._update_status()

    def _show_problems(self) -> None:
        lines = self.session.problem_lines()
        if self.query_one(ProblemBanner).show(lines):
            self.notify(str(lines[0]), severity="error" if self.exit_code else "warning", timeout=8)

    def _title_list(self) -> None:
        table = self.query_one(ExchangeList)
        col, rev = self.order.sort, self.order.reverse
        title = f"Exchanges  sort: {COLUMNS[col].name} {'desc' if rev else 'asc'}"
        if self.list.picked is not None:
            title += f"  {self.list.picked_label} (esc: all)"
        if self.conn_scope is not None:
            title += f"  connection {self.conn_scope} (esc: all)"
        table.border_title = title
        table.sort = (col, rev)

    def _live_tick(self) -> None:
        """Packets/s and drops once a second while live; the app's timer still ticks while its
        screen is torn down on exit, when the widgets are already gone."""
        if self.is_running:
            self._update_status()

    def _update_status(self) -> None:
        self.query_one(StatusBar).show(self.session, str(self.path), self.follow)
        self._filter_hint()

    # selection --------------------------------------------------------------------------------------------
    @on(RowHighlighted)
    def _row_highlighted(self, event: RowHighlighted) -> None:
        row = self.rows[event.index]
        if self.live:  # moving up stops following new exchanges; the last row (G) follows again
            self.follow = event.cursor_row == len(self.shown) - 1
        if self.current is None or row.index != self.current.index:
            self._show(row)

    @on(ListScrolledUp)
    def _list_scrolled_up(self) -> None:
        if self.follow:  # the user looks back: new exchanges no longer move the list
            self.follow = False
            self._update_status()

    @on(RowChosen)
    def _row_chosen(self, event: RowChosen) -> None:
        if self.layout_mode == "list":
            self._set_layout("both")
        self.query_one(DetailTree).focus()

    def _show(self, row: Row | None) -> None:
        self.current = row
        self.view = self.full_exchange(row) if row is not None else None
        self.query_one(DetailPane).show(self.view, row.index if row is not None else 0)

    def full_exchange(self, row: Row) -> Exchange:
        """The exchange of ``row`` with its field trees and record bodies (cached)."""
        return self.session.exchange(row)

    @property
    def selected(self) -> NodeData | None:
        return self.query_one(DetailPane).selected

    @property
    def hex_kind(self) -> str:
        return self.query_one(DetailPane).hex_kind

    def select_exchange(self, index: int) -> bool:
        """Move the list cursor to exchange ``index`` (0-based) if the list shows it."""
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
        return self.query_one(DetailPane).reveal(kind, target)

    def find_field(self, kind: str, pred) -> Field | None:
        """The first field of the current exchange's ``kind`` message for which ``pred`` is true."""
        return self.query_one(DetailPane).find_field(kind, pred)

    # the list: filter, scope, sort ------------------------------------------------------------------
    def _refresh_list(self) -> None:
        """Rebuild the list from the filter, the connection scope and the sort order; the cursor
        stays on the current exchange when it is still shown, else goes to the first."""
        self.list.rebuild()
        table = self.query_one(ExchangeList)
        cur = self.current
        table.set_rows(self.rows, self.shown, cur.index if cur is not None else None)
        if table.cursor_row < 0:
            if self.shown:
                table.move_cursor(0)
                self._show(self.rows[self.shown[0]])
            else:
                self._show(None)
        self._title_list()
        self._update_status()
        self._filter_hint()

    def set_filter(self, text: str) -> None:
        """Filter the list as if ``text`` had been typed in the filter input."""
        self.query_one(FilterBar).set_text(text)
        self._hint_shown(bool(text.strip()))
        self._apply_filter(text, announce=True)

    def _apply_filter(self, text: str, announce: bool = False) -> bool:
        """A display filter (``kafka-analyzer filters``) when ``text`` compiles; plain words
        that do not are a text search over the rows (the hint says so); anything else is an
        error shown under the bar with its position (and, with ``announce``, as a message),
        and the list stays as it was. False on an error."""
        self.query_one(FilterBar).cancel_pending()
        norm = " ".join(text.split())
        if norm == self.filter_text and self.filter_error is None:
            self._filter_hint()
            return True
        predicate, error, note = self.session.filter_choice(text.strip() and text)
        if error is not None:
            self.filter_error = error
            self._show_filter_error(text, error)
            if announce:
                self.notify(
                    f"bad display filter: {error.message}\n{error.caret(text)}", severity="error", timeout=6
                )
            return False
        self.filter_error = None
        self.filter_note = note
        self.list.text = norm
        self.list.predicate = predicate
        self._refresh_list()
        return True

    filter_note: str | None = None  # a text search: why the words are not a display filter

    def _show_filter_error(self, text: str, error: FilterError) -> None:
        self._hint_shown(True)
        self.query_one(FilterHint).show_error(text, error.message, error.position, error.end)

    hint_visible = False  # the filter bar and its hint are shown

    def _hint_shown(self, shown: bool) -> None:
        self.hint_visible = shown
        self.query_one(FilterBar).set_class(shown, "shown")
        self.query_one(FilterHint).set_class(shown, "shown")

    def _filter_hint(self) -> None:
        """The match count under the bar (live: it follows the rows streaming in)."""
        if not self.hint_visible or self.filter_error is not None:
            return
        hint = self.query_one(FilterHint)
        bar = self.query_one(FilterBar)
        pending = " ".join(bar.value.split()) != self.filter_text
        hint.show_count(bar.value, None if pending else len(self.shown), len(self.rows), self.filter_note)

    @on(FilterBar.Edited)
    def _filter_edited(self, event: FilterBar.Edited) -> None:
        """Validate as the user types: an error (and where) at once, the count once applied."""
        text = event.text
        _, error, note = self.session.filter_choice(text.strip() and text)
        if error is not None:
            self._show_filter_error(text, error)
            return
        self.query_one(FilterHint).show_count(text, None, len(self.rows), note)

    def set_scope(self, conn: int | None) -> None:
        """Show only the exchanges of connection ``conn`` (None: all)."""
        if conn != self.conn_scope:
            self.list.conn = conn
            self._refresh_list()

    def set_pick(self, rows: Sequence[int] | None, label: str = "") -> None:
        """Show only the exchanges ``rows`` (row indexes; ``label`` says what they are), or
        (None) every exchange again."""
        self.list.picked = frozenset(rows) if rows is not None else None
        self.list.picked_label = label if rows is not None else ""
        self._refresh_list()

    def set_sort(self, column: int, reverse: bool = False) -> None:
        self.list.sort_by(column, reverse)
        self._refresh_list()

    # actions ------------------------------------------------------------------------------------------------
    MAIN_ONLY = frozenset(
        (
            "filter",
            "field_filter",
            "toggle_hex",
            "next_error",
            "sort",
            "reverse",
            "records",
            "export",
            "copy",
            "layout",
            "hex_pane",
            "stop_capture",
        )
    )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "stop_capture" and (not self.live or self.done):
            return False  # (not in the footer)
        return not (action in self.MAIN_ONLY and isinstance(self.screen, View | CommandScreen))

    def action_stop_capture(self) -> None:
        """End the live capture; its exchanges stay browsable."""
        if self.session.stop_capture():
            self.notify("stopping the capture: the exchanges stay (q quits)", timeout=3)
            self.refresh_bindings()

    async def action_back(self) -> None:
        """Esc: close the view on top; on the list, close the filter, then the connection scope."""
        if isinstance(self.screen, View):
            self.pop_screen()
            return
        bar = self.query_one(FilterBar)
        if bar.has_class("shown") and self.focused is bar:
            self._apply_filter(bar.value)  # an error stays shown under the bar
            if not bar.value.strip():
                self._hint_shown(False)
            self.query_one(ExchangeList).focus()
        elif bar.has_class("shown") and (self.filter_error is not None or not bar.value.strip()):
            # a bad filter left in the bar: back to the one in force
            bar.set_text(self.filter_text)
            self.filter_error = None
            self._hint_shown(bool(self.filter_text))
            self._filter_hint()
        elif self.list.picked is not None:
            self.set_pick(None)
        elif self.conn_scope is not None:
            self.set_scope(None)
        elif self.focused is not self.query_one(ExchangeList):
            self.query_one(ExchangeList).focus()

    def action_filter(self) -> None:
        if self.layout_mode == "detail":
            self._set_layout("both")
        inp = self.query_one("#filter", Input)
        self._hint_shown(True)
        if self.filter_error is None:
            self._filter_hint()
        inp.focus()

    @on(FilterBar.Apply)
    def _filter_apply(self, event: FilterBar.Apply) -> None:
        ok = self._apply_filter(event.text)
        if event.submitted and ok:
            self.session.remember_filter(event.text)
            if not event.text.strip():
                self._hint_shown(False)
            self.query_one(ExchangeList).focus()

    def action_field_filter(self) -> None:
        """``f`` on a tree field: filter the list by ``field == value`` (the field's value in
        this exchange), remembered in the filter history."""
        sel = self.selected
        if self.current is None or sel is None or sel.field is None or sel.kind is None:
            self.notify("f: put the tree cursor on a field of the request or response", timeout=3)
            return
        expr, why = self.session.field_filter(self.current, sel.kind, sel.path)
        if expr is None:
            self.notify(f"no filter for this field: {why}", severity="warning", timeout=4)
            return
        self.set_filter(expr)
        self.session.remember_filter(expr)
        self.notify(f"filter: {expr}", timeout=3)

    def action_sort(self) -> None:
        """The next column shown, ascending (time order again after the last column)."""
        cols = self.query_one(ExchangeList).visible_columns()
        later = [c for c in cols if c > self.order.sort]
        self.set_sort(later[0] if later else cols[0])
        self.notify(f"sorted by {COLUMNS[self.order.sort].name}", timeout=1.5)

    @on(HeaderClicked)
    def _header_clicked(self, event: HeaderClicked) -> None:
        """A click on a column's title sorts by it; on the sorted column, reverses the order."""
        col = event.column
        self.set_sort(col, not self.order.reverse if col == self.order.sort else False)

    def action_reverse(self) -> None:
        self.set_sort(self.order.sort, not self.order.reverse)

    def action_toggle_hex(self) -> None:
        """Focus the other message's hex view (the request's, the response's)."""
        note = self.query_one(DetailPane).other_hex()
        if note:
            self.notify(note, timeout=2)

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

    def _set_layout(self, mode: str) -> None:
        self.layout_mode = mode
        self.query_one(ExchangeList).display = mode != "detail"
        self.query_one("#detail").display = mode != "list"
        self.screen.set_class(mode == "list", "-list-only")
        self.screen.set_class(mode == "detail", "-detail-only")
        if mode == "detail":
            self.query_one(DetailTree).focus()
        elif mode == "list":
            self.query_one(ExchangeList).focus()

    def action_layout(self) -> None:
        """List and detail, list only, detail only."""
        self._set_layout(LAYOUTS[(LAYOUTS.index(self.layout_mode) + 1) % len(LAYOUTS)])

    def action_hex_pane(self) -> None:
        hv = self.query_one("#hex")
        hv.display = not hv.display

    def action_theme(self) -> None:
        self.theme = "textual-light" if self.theme != "textual-light" else "textual-dark"

    def action_export(self) -> None:
        """Write the current exchange (decoded, with record bodies) as JSON into the cwd."""
        if self.view is None or self.current is None:
            self.notify("no exchange selected", timeout=2)
            return
        path = os.path.abspath(f"kafka-exchange-{self.current.index + 1}.json")
        try:
            with open(path, "wb") as f:
                f.write(self.session.exchange_json(self.view))
        except OSError as e:
            self.notify(f"cannot write {path}: {e.strerror}", severity="error")
            return
        self.exported = path
        self.notify(f"exchange #{self.current.index + 1} written to {path}", timeout=6)

    exported: str | None = None

    def action_copy(self) -> None:
        """Copy the current exchange as JSON to the terminal's clipboard (OSC 52)."""
        if self.view is None or self.current is None:
            self.notify("no exchange selected", timeout=2)
            return
        text = self.session.exchange_json(self.view).decode()
        self.copy_to_clipboard(text)
        self.notify(
            f"exchange #{self.current.index + 1} copied as JSON ({len(text)} characters) to the "
            "clipboard (terminals that allow OSC 52); x writes it to a file",
            timeout=6,
        )

    def action_records(self) -> None:
        if self.view is None or self.current is None:
            self.notify("no exchange selected", timeout=2)
            return
        rows = record_rows(self.view, self.analysis.knowledge.topic_ids)
        if not rows:
            self.notify("this exchange carries no records", timeout=2)
            return
        title = f"#{self.current.index + 1} {self.current.api} corr={self.current.corr}"
        self.push_screen(RecordsScreen(title, rows))

    # views -----------------------------------------------------------------------------------------------
    def action_command(self) -> None:
        if isinstance(self.screen, CommandScreen):
            return
        self.push_screen(CommandScreen(), self._run_command)

    def _run_command(self, text: str | None) -> None:
        if text is None or not text.strip():
            return
        what = parse_command(text)
        if what is None:
            self.notify(f"unknown command: {text.strip()} (try :help)", severity="warning", timeout=3)
            return
        self.open_view(what)

    def open_view(self, what: str, conn: int | None = None) -> None:
        """Show view ``what`` (``conn``, ``ex``, ``stats``, ``issues``, ``groups``, ``io``,
        ``timeline`` of connection ``conn``, ``help``, ``quit``) in place of the view on top.
        The timeline's connection is by default the list's (its scope, else the current
        exchange's)."""
        if what == "quit":
            self.exit()
            return
        if what == "timeline" and conn is None:
            conn = self.conn_scope if self.conn_scope is not None else None
            if conn is None and self.current is not None:
                conn = self.current.conn.id
            if conn is None:
                self.notify("timeline: no exchange selected (or pick a connection in :conn, l)", timeout=3)
                return
        while isinstance(self.screen, View):
            self.pop_screen()
        if what == "ex":
            return
        screen = make_view(what, self.session, conn)
        self.push_screen(screen)

    @on(ShowTimeline)
    def _show_timeline(self, event: ShowTimeline) -> None:
        self.open_view("timeline", event.conn)

    @on(ShowExchanges)
    def _show_exchanges(self, event: ShowExchanges) -> None:
        self.open_view("ex")
        if event.rows is not None:  # a view's pick: every one of them shown, nothing else
            if self.filter_text or self.filter_error is not None:
                self.set_filter("")
                self._hint_shown(False)
            self.set_scope(None)
            self.set_pick(event.rows, event.label)
            if event.rows:
                self.select_exchange(event.index if event.index is not None else event.rows[0])
            self.query_one(ExchangeList).focus()
            return
        if self.list.picked is not None:
            self.set_pick(None)
        if event.conn is not None:
            self.set_scope(event.conn)
        if event.index is not None:
            if event.index not in self.shown:
                self.set_filter("")
                self.set_scope(None)
            self.select_exchange(event.index)
        self.query_one(ExchangeList).focus()

    @on(FilterExchanges)
    def _filter_exchanges(self, event: FilterExchanges) -> None:
        """A view's display filter (a client's exchanges): every exchange it keeps, in the list."""
        self.open_view("ex")
        if self.list.picked is not None:
            self.set_pick(None)
        self.set_scope(None)
        self.set_filter(event.text)
        if self.shown:
            self.select_exchange(self.shown[0])
        self.query_one(ExchangeList).focus()
        if event.label:
            self.notify(f"{event.label}: {len(self.shown)} exchanges (/: the filter)", timeout=3)

    def action_help(self) -> None:
        self.open_view("help")

    def action_stats(self) -> None:
        self.open_view("stats")

    def stats_snapshot(self) -> dict:
        return self.session.stats_snapshot()


def run_tui(
    source: str | Any,
    opts: Options | None = None,
    ports: tuple[int, ...] = (),
    tls_keylog: str | None = None,
    display_filter: str | None = None,
    max_exchanges: int | None = None,
) -> int:
    """Run the TUI on a capture file, ``-`` (stdin, read once; the keyboard is then read from
    the terminal) or a live source opened by the caller; returns an exit code (0 ok, 1 damaged
    or no Kafka, 2 unusable)."""
    src: str | BinaryIO | Any = source
    if source == "-":
        if sys.stdin.isatty():
            print("kafka-analyzer: tui -: stdin is a terminal, not a capture", file=sys.stderr)
            return Exit.USAGE
        src = os.fdopen(os.dup(0), "rb")
        try:
            tty = os.open("/dev/tty", os.O_RDONLY)
        except OSError:
            print("kafka-analyzer: tui -: no terminal to read keys from", file=sys.stderr)
            return Exit.USAGE
        os.dup2(tty, 0)
        os.close(tty)
    try:
        app = AnalyzerApp(
            src,
            opts,
            tuple(ports),
            name="-" if source == "-" else None,
            tls_keylog=tls_keylog,
            display_filter=display_filter,
            max_exchanges=max_exchanges,
        )
    except SpoolError as e:
        print(f"kafka-analyzer: tui: {e}", file=sys.stderr)
        return Exit.USAGE
    try:
        app.run()
    finally:
        app.session.close()
    rc = app.return_code or 0
    return rc if rc else app.exit_code
