"""The line under the filter bar: the filter's error and where it is, or its match count."""

from __future__ import annotations

from textual.widgets import Static

from analyzer.tui.widgets.status import filter_hint


class FilterHint(Static):
    """Shown with the filter bar; :meth:`show_error`, :meth:`show_count` say what the text does."""

    def show_error(self, text: str, message: str, position: int, end: int) -> None:
        self.update(filter_hint(text, message, position, end))

    def show_count(self, text: str, shown: int | None, total: int, note: str | None = None) -> None:
        self.update(filter_hint(text, note=note, shown=shown, total=total))
