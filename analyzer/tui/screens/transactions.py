"""The transactions view (``:transactions``): one row per transaction (transactional id,
producer id and epoch, start, duration, outcome commit / abort / hanging / open, records,
partitions, offsets committed), the one under the cursor said in full as the ``transactions``
command says it, and the read_committed consumers held back below. Enter: the exchange list at
the transaction's first exchange (``e``: at its EndTxn). What the capture could not see is
said on top. It reloads as the index grows (a capture still being read, a live capture)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Static

from analyzer.session.producer_text import HELD_BACK_TITLE, transactions_coverage
from analyzer.tui.messages import ShowExchanges
from analyzer.tui.producer_text import (
    TRANSACTION_COLUMNS,
    held_back_lines,
    transaction_detail,
    transaction_rows,
)
from analyzer.tui.screens.base import table_text
from analyzer.tui.screens.following import FollowingView
from analyzer.tui.screens.groups import refill

if TYPE_CHECKING:
    from analyzer.tui.session import Session


class TransactionsScreen(FollowingView):
    NAME = "transactions"

    DEFAULT_CSS = """
    TransactionsScreen #transactions-head { height: 1; padding: 0 1; background: $panel; }
    TransactionsScreen #transactions-coverage { height: auto; max-height: 2; padding: 0 1; }
    TransactionsScreen #transactions-table { height: 1fr; min-height: 4; }
    TransactionsScreen #transaction-detail { height: auto; max-height: 5; padding: 0 1; background: $boost; }
    TransactionsScreen #held-back { height: auto; max-height: 4; padding: 0 1; }
    """
    BINDINGS = [Binding("e", "end", "EndTxn")]

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self.report: dict = {"transactions": [], "rows": [], "held_back": [], "origin": None}
        self.reload()

    def load(self) -> None:
        self.report = self.session.transaction_report()

    def compose(self) -> ComposeResult:
        yield Static(id="transactions-head")
        yield Static(id="transactions-coverage")
        yield DataTable(id="transactions-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="transaction-detail")
        yield Static(id="held-back")
        yield Footer()

    def on_mount(self) -> None:
        self.show()
        self.query_one("#transactions-table").focus()
        self.follow()

    def show(self) -> None:
        r, origin = self.report, self.report["origin"]
        txns = r["transactions"]
        note = "" if self.loaded_done else "  (still reading: partial)"
        if txns:
            n = Counter(x["outcome"] for x in txns)
            said = ", ".join(f"{n[k]} {k}" for k in ("commit", "abort", "hanging", "open") if n[k])
            head = f"{len(txns)} transaction{'s' if len(txns) != 1 else ''}: {said}{note}"
            head += "" if note else "  enter: its first exchange"
        else:
            head = "no transaction in the capture" + note
        self.query_one("#transactions-head", Static).update(head)
        cov = self.query_one("#transactions-coverage", Static)
        cov.update(Text("coverage: ", style="dim") + Text(transactions_coverage(r)) if txns else "")
        table = self.query_one("#transactions-table", DataTable)
        refill(table, TRANSACTION_COLUMNS, transaction_rows(r, origin))
        table.display = bool(txns)
        held = self.query_one("#held-back", Static)
        lines = held_back_lines(r["held_back"])
        held.update(Text(f"{HELD_BACK_TITLE}:\n", style="bold") + Text("\n".join(lines)) if lines else "")
        held.display = bool(lines)
        self._show_transaction()

    def _index(self) -> int | None:
        txns = self.report["transactions"]
        if not txns:
            return None
        row = self.query_one("#transactions-table", DataTable).cursor_row
        return min(max(row, 0), len(txns) - 1)

    def _show_transaction(self) -> None:
        i = self._index()
        detail = self.query_one("#transaction-detail", Static)
        detail.display = i is not None
        if i is not None:
            detail.update(transaction_detail(self.report["transactions"][i], self.report["origin"]))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_transaction()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self._jump(0)

    def action_end(self) -> None:
        """e: the exchange list at the EndTxn of the transaction under the cursor."""
        self._jump(1)

    def _jump(self, which: int) -> None:
        i = self._index()
        if i is None:
            self.notify("no transaction", timeout=2)
            return
        x = self.report["transactions"][i]
        row = self.report["rows"][i][which]
        if row is None:
            why = (
                "is not kept in the list"
                if which == 0 or x["end"] is not None
                else f"is not in the capture ({x['outcome']})"
            )
            self.notify(f"its {('first exchange', 'EndTxn')[which]} {why}", timeout=3)
            return
        self.app.post_message(ShowExchanges(index=row))

    def text(self, key: str) -> str:
        return table_text(self.query_one(f"#{key}-table", DataTable))
