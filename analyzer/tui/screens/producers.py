"""The producers view (``:producers``): one row per producer (client id, producer id and epoch,
transactional id, batches, records, records retried, failed, unanswered and written twice,
sequence gaps, fencing, batching), the one under the cursor said in full as the ``producers``
command says it, and its retries below. Enter on a retry: the exchange list at its FIRST
attempt (``l``: at the later one). What the capture could not see is said on top. It reloads
as the index grows (a capture still being read, a live capture)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Static

from analyzer.session.producer_text import producers_coverage
from analyzer.tui.messages import ShowExchanges
from analyzer.tui.producer_text import (
    PRODUCER_COLUMNS,
    RETRY_COLUMNS,
    producer_detail,
    producer_rows,
    retries_of,
    retry_detail,
    retry_rows,
)
from analyzer.tui.screens.base import table_text
from analyzer.tui.screens.following import FollowingView
from analyzer.tui.screens.groups import refill

if TYPE_CHECKING:
    from analyzer.tui.session import Session


class ProducersScreen(FollowingView):
    NAME = "producers"

    DEFAULT_CSS = """
    ProducersScreen #producers-head { height: 1; padding: 0 1; background: $panel; }
    ProducersScreen #producers-coverage { height: auto; max-height: 2; padding: 0 1; }
    ProducersScreen #producers-table { height: 1fr; min-height: 3; }
    ProducersScreen #producer-detail { height: auto; max-height: 4; padding: 0 1; background: $boost; }
    ProducersScreen #retries-title { height: 1; padding: 0 1; text-style: bold; }
    ProducersScreen #retries-table { height: 1fr; min-height: 3; }
    ProducersScreen #retry-detail { height: auto; max-height: 2; padding: 0 1; background: $boost; }
    """
    BINDINGS = [Binding("l", "later", "Later attempt")]

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self.report: dict = {"producers": [], "retries": [], "origin": None}
        self.retries: list[dict] = []  # the retries of the producer under the cursor
        self.sent: list[int | None] = []  # their first and later attempts' rows, in turn
        self.shown: tuple | None = None  # the producer whose retries are shown
        self.reload()

    def load(self) -> None:
        self.report = self.session.producer_report()

    @property
    def producer(self) -> dict | None:
        ps = self.report["producers"]
        if not ps:
            return None
        row = self.query_one("#producers-table", DataTable).cursor_row if self.is_mounted else 0
        return ps[min(max(row, 0), len(ps) - 1)]

    def compose(self) -> ComposeResult:
        yield Static(id="producers-head")
        yield Static(id="producers-coverage")
        yield DataTable(id="producers-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="producer-detail")
        yield Static(id="retries-title")
        yield DataTable(id="retries-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="retry-detail")
        yield Footer()

    def on_mount(self) -> None:
        self.show()
        self.query_one("#producers-table").focus()
        self.follow()

    def show(self) -> None:
        r = self.report
        ps = r["producers"]
        note = "" if self.loaded_done else "  (still reading: partial)"
        if ps:
            head = (
                f"{len(ps)} producer{'s' if len(ps) != 1 else ''}, {r['retries_seen']} retries{note}"
                f"{'' if note else '  tab: its retries, enter on one: its first attempt'}"
            )
        else:
            head = "no producer in the capture (no Produce with a record batch)" + note
        self.query_one("#producers-head", Static).update(head)
        cov = self.query_one("#producers-coverage", Static)
        cov.update(Text("coverage: ", style="dim") + Text(producers_coverage(r)) if ps else "")
        refill(self.query_one("#producers-table", DataTable), PRODUCER_COLUMNS, producer_rows(ps))
        self._show_producer()

    def _show_producer(self) -> None:
        p, origin = self.producer, self.report["origin"]
        self.query_one("#producer-detail", Static).update(producer_detail(p, origin) if p else "")
        self.retries = retries_of(self.report, p) if p is not None else []
        attempts = [a for x in self.retries for a in (x["first"], x["later"])]
        self.sent = self.session.sent_rows(attempts) if attempts else []
        n = len(self.retries)
        who = f" of {p['client_id'] or '-'} {p['client']}" if p is not None else ""
        self.query_one("#retries-title", Static).update(
            f"{n} retr{'y' if n == 1 else 'ies'}{who}" + ("" if n else ": every batch sent once")
        )
        table = self.query_one("#retries-table", DataTable)
        key = (p["client_id"], p["client"], p["producer_id"]) if p is not None else None
        if key != self.shown:  # another producer: its first retry
            self.shown = key
            table.move_cursor(row=0, animate=False)
        refill(table, RETRY_COLUMNS, retry_rows(self.retries, self.sent, origin))
        table.display = bool(n)
        self._show_retry()

    def _show_retry(self) -> None:
        detail = self.query_one("#retry-detail", Static)
        i = self._retry_index()
        detail.display = i is not None
        if i is not None:
            detail.update(retry_detail(self.retries[i], self.report["origin"]))

    def _retry_index(self) -> int | None:
        if not self.retries:
            return None
        row = self.query_one("#retries-table", DataTable).cursor_row
        return min(max(row, 0), len(self.retries) - 1)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "producers-table":
            self._show_producer()
        elif event.data_table.id == "retries-table":
            self._show_retry()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "retries-table":
            self._jump(0)
        elif event.data_table.id == "producers-table" and self.retries:
            self.query_one("#retries-table", DataTable).focus()

    def action_later(self) -> None:
        """l: the exchange list at the later attempt of the retry under the cursor."""
        self._jump(1)

    def _jump(self, which: int) -> None:
        i = self._retry_index()
        if i is None:
            self.notify("no retry to show", timeout=2)
            return
        row = self.sent[2 * i + which]
        what = ("first", "later")[which]
        if row is None:
            self.notify(f"the retry's {what} attempt is not kept in the list", timeout=3)
            return
        self.app.post_message(ShowExchanges(index=row))

    def text(self, key: str) -> str:
        return table_text(self.query_one(f"#{key}-table", DataTable))
