"""The timeline of one connection: its exchanges on a time axis, one bar per exchange from
its request to its response (red: errors; ▶┄ unanswered); Enter shows the exchange."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.widgets import Footer, Static

from analyzer.tui.messages import RowChosen, ShowExchanges
from analyzer.tui.rows import Row
from analyzer.tui.screens.base import View
from analyzer.tui.widgets.timeline import Timeline


class TimelineScreen(View):
    NAME = "timeline"

    def __init__(self, conn: int, title: str, rows: list[Row], origin: float | None) -> None:
        super().__init__()
        self.conn = conn
        self.title_text = title
        self.rows = rows
        self.origin = origin

    def compose(self) -> ComposeResult:
        tl = Timeline(self.rows, self.origin, id="timeline")
        yield Static(
            f"Connection {self.conn}: {self.title_text}, {len(self.rows)} exchanges in "
            f"{tl.span * 1000:.1f} ms  enter: the exchange  esc: back",
            classes="view-title",
        )
        yield tl
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(Timeline).focus()

    @on(RowChosen)
    def _chosen(self, event: RowChosen) -> None:
        event.stop()
        self.app.post_message(ShowExchanges(conn=self.conn, index=event.index))
