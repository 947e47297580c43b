"""The clients view (``:clients``): a row per client (a client id on a host) with its software,
its readiness for a Kafka release (``[`` / ``]``: the target; the versions it used that the
release refuses), its hygiene (Metadata storms and loops, reconnections, churn, throttling) and
the APIs it used; under the table the ``clients`` command's text of the client under the cursor.
Enter: the list filtered to that client's exchanges; ``r``: to those the target refuses. It
reloads as the index grows (a capture still being read, a live capture)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Footer, Static

from analyzer.dissect.protocol_table import CURRENT_RELEASE
from analyzer.session.client_text import client_lines, coverage_text, readiness_head
from analyzer.session.clients import TARGETS
from analyzer.tui.clients import CLIENT_COLUMNS, client_filter, client_rows, refused_filter
from analyzer.tui.messages import FilterExchanges
from analyzer.tui.screens.base import table_text
from analyzer.tui.screens.following import FollowingView
from analyzer.tui.screens.groups import refill

if TYPE_CHECKING:
    from analyzer.tui.session import Session


class ClientsScreen(FollowingView):
    NAME = "clients"

    DEFAULT_CSS = """
    ClientsScreen #clients-head { height: 1; padding: 0 1; background: $panel; }
    ClientsScreen #clients-coverage { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    ClientsScreen #clients-table { height: 1fr; min-height: 4; }
    ClientsScreen #client-scroll { height: auto; max-height: 45%; background: $boost; }
    ClientsScreen #client-detail { padding: 0 1; }
    """
    BINDINGS = [
        Binding("left_square_bracket", "target(-1)", "Prev target"),
        Binding("right_square_bracket", "target(1)", "Next target"),
        Binding("r", "refused", "Refused"),
    ]

    def __init__(self, session: Session, target: str = CURRENT_RELEASE) -> None:
        super().__init__(session)
        self.target = target if target in TARGETS else TARGETS[-1]
        self.report: dict = {"clients": [], "flows": [], "dropped": {}}
        self.reload()

    def load(self) -> None:
        self.report = self.session.client_report(self.target)

    @property
    def clients(self) -> list[dict]:
        return self.report["clients"]

    def compose(self) -> ComposeResult:
        yield Static(id="clients-head")
        yield Static(id="clients-coverage")
        yield DataTable(id="clients-table", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="client-scroll"):
            yield Static(id="client-detail")
        yield Footer()

    def on_mount(self) -> None:
        self.show()
        self.query_one("#clients-table").focus()
        self.follow()

    def show(self) -> None:
        rows = self.clients
        note = "" if self.loaded_done else "  (still reading: partial)"
        head = readiness_head(rows, self.target)
        keys = "  enter: its exchanges" if rows else ""
        self.query_one("#clients-head", Static).update(head + note + keys)
        cov = coverage_text(rows, self.report["dropped"])
        self.query_one("#clients-coverage", Static).update(f"coverage: {cov}" if cov else "")
        refill(self.query_one("#clients-table", DataTable), CLIENT_COLUMNS, client_rows(rows))
        self._show_client()

    def _current(self) -> dict | None:
        rows = self.clients
        if not rows:
            return None
        row = self.query_one("#clients-table", DataTable).cursor_row
        return rows[min(max(row, 0), len(rows) - 1)]

    def _show_client(self) -> None:
        r = self._current()
        detail = self.query_one("#client-detail", Static)
        if r is None:
            detail.update("no client seen in the capture (no request with an API key)")
            return
        detail.update("\n".join(client_lines(r)))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_client()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        r = self._current()
        if r is not None:
            label = f"client {r['client_id'] or '-'} on {r['client']}"
            self.app.post_message(FilterExchanges(client_filter(r["client"], r["client_id"]), label))

    def action_refused(self) -> None:
        """r: the list filtered to the client's exchanges in the versions the target refuses."""
        r = self._current()
        if r is None:
            return
        flt = refused_filter(r)
        if flt is None:
            self.notify(f"{r['client_id'] or '-'} used no version Kafka {self.target} refuses", timeout=3)
            return
        label = f"{r['client_id'] or '-'}: the versions Kafka {self.target} refuses"
        self.app.post_message(FilterExchanges(flt, label))

    def action_target(self, step: int) -> None:
        """[ / ]: judge the readiness for the previous / next Kafka release."""
        self.target = TARGETS[(TARGETS.index(self.target) + step) % len(TARGETS)]
        self.load()
        self.show()

    def text(self) -> str:
        return table_text(self.query_one("#clients-table", DataTable))
