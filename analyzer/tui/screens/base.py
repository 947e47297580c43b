"""What every view shares: Esc goes back, q quits; ``:`` and ``?`` are the app's."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable


class View(Screen):
    """A view pushed over the exchange list (``:conn``, ``:stats``...)."""

    NAME = ""  # the command that opens it
    BINDINGS = [
        Binding("escape", "app.back", "Back"),
        Binding("q", "app.quit", "Quit"),
        Binding("j", "vim(1)", "Down", show=False),
        Binding("k", "vim(-1)", "Up", show=False),
    ]

    def action_vim(self, step: int) -> None:
        """j / k: the cursor of the focused table or tree down / up."""
        w = self.focused
        action = getattr(w, "action_cursor_down" if step > 0 else "action_cursor_up", None)
        if action is not None:
            action()


def fill_table(table: DataTable, cols: list[str], rows: list[dict], limit: int | None = None) -> None:
    """Columns ``cols`` (numbers right-aligned) and one table row per dict (keyed by position)."""
    from analyzer.session.report import cell

    for c in cols:
        v = rows[0].get(c) if rows else None
        numeric = isinstance(v, int | float) and not isinstance(v, bool)
        table.add_column(Text(c, justify="right" if numeric else "left"), key=c)
    for n, r in enumerate(rows[:limit] if limit else rows):
        table.add_row(
            *(
                Text(cell(r.get(c)), justify="right" if isinstance(r.get(c), int | float) else "left")
                for c in cols
            ),
            key=str(n),
        )


def table_text(table: DataTable) -> str:
    """The plain text of a DataTable (for tests)."""
    cols = [str(c.label) for c in table.ordered_columns]
    lines = ["  ".join(cols)]
    for r in range(table.row_count):
        lines.append("  ".join(str(x) for x in table.get_row_at(r)))
    return "\n".join(lines)
