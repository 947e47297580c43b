"""The consumer groups and brokers seen in the capture, and the groups over time: every
JoinGroup, SyncGroup, Heartbeat, LeaveGroup and ConsumerGroupHeartbeat with the generation and
the members after it; Enter on one shows its exchange."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Footer, Static

from analyzer.session.report import TABLES
from analyzer.tui.messages import ShowExchanges
from analyzer.tui.screens.base import View, fill_table, table_text

TIMELINE = ["#", "time", "group", "API", "member", "generation", "members", "leader", "error"]


class GroupsScreen(View):
    NAME = "groups"
    MAX_EVENTS = 5000

    def __init__(self, tables: dict, events: list[dict] | None = None) -> None:
        super().__init__()
        self.tables = tables
        self.events = events or []

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            for key in ("groups", "brokers"):
                title, cols = TABLES[key]
                rows = self.tables.get(key) or []
                yield Static(f"{title} ({len(rows)})", classes="view-title")
                if rows:
                    table: DataTable = DataTable(id=f"{key}-table", cursor_type="row")
                    fill_table(table, cols, rows)
                    yield table
                else:
                    yield Static(f"no {title.lower()} seen in the capture", classes="view-empty")
            n = len(self.events)
            more = f", the first {self.MAX_EVENTS}" if n > self.MAX_EVENTS else ""
            yield Static(
                f"Groups over time ({n} exchanges{more})  enter: show the exchange", classes="view-title"
            )
            if self.events:
                table = DataTable(id="timeline-table", cursor_type="row", zebra_stripes=True)
                fill_table(table, TIMELINE, self.events, self.MAX_EVENTS)
                yield table
            else:
                yield Static("no consumer group protocol exchanges", classes="view-empty")
        yield Footer()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "timeline-table":
            row = self.events[int(event.row_key.value or 0)]
            self.app.post_message(ShowExchanges(index=row["#"] - 1))

    def text(self, key: str) -> str:
        return table_text(self.query_one(f"#{key}-table", DataTable))
