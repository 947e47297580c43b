"""The consumer groups and brokers seen in the capture."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Footer, Static

from analyzer.session.report import TABLES
from analyzer.tui.screens.base import View, fill_table, table_text


class GroupsScreen(View):
    NAME = "groups"

    def __init__(self, tables: dict) -> None:
        super().__init__()
        self.tables = tables

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
        yield Footer()

    def text(self, key: str) -> str:
        return table_text(self.query_one(f"#{key}-table", DataTable))
