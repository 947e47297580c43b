"""The connections view: one row per TCP connection; Enter lists its exchanges."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Static

from analyzer.tui.messages import ShowExchanges, ShowTimeline
from analyzer.tui.screens.base import View, fill_table, table_text

COLUMNS = [
    "id",
    "client",
    "broker",
    "client_id",
    "software",
    "exchanges",
    "bytes_to_broker",
    "bytes_to_client",
    "gaps",
    "errors",
    "issues",
    "status",
]


class ConnectionsScreen(View):
    NAME = "conn"
    BINDINGS = [Binding("l", "timeline", "Timeline")]

    def __init__(self, rows: list[dict], note: str = "") -> None:
        super().__init__()
        self.rows = rows
        self.note = note

    def compose(self) -> ComposeResult:
        head = f"Connections ({len(self.rows)})  enter: its exchanges  l: its timeline  esc: back"
        yield Static(head + (f"  {self.note}" if self.note else ""), classes="view-title")
        table: DataTable = DataTable(id="conn-table", cursor_type="row", zebra_stripes=True)
        fill_table(table, COLUMNS, self.rows)
        yield table
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        row = self.rows[int(event.row_key.value or 0)]
        self.app.post_message(ShowExchanges(conn=row["id"]))

    def action_timeline(self) -> None:
        table = self.query_one(DataTable)
        if self.rows and table.cursor_row >= 0:
            self.app.post_message(ShowTimeline(self.rows[table.cursor_row]["id"]))

    def text(self) -> str:
        return table_text(self.query_one(DataTable))
