"""The banner above the list that says what is wrong with the input (hidden when nothing is)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class ProblemBanner(Static):
    def show(self, lines: list[Text]) -> bool:
        """Show ``lines`` (none: hide); True when shown."""
        if lines:
            self.update(Text("\n").join(lines))
            self.add_class("shown")
            return True
        self.remove_class("shown")
        return False
