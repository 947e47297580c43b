"""The Textual messages of the TUI, in one place."""

from __future__ import annotations

from textual.message import Message

from analyzer.tui.indexer import Progress


class AnalysisBatch(Message):
    """New rows and progress from the indexing thread (see :class:`~analyzer.tui.indexer.Progress`)."""

    def __init__(self, p: Progress) -> None:
        super().__init__()
        self.progress = p
        self.rows = p.rows
        self.done = p.done


class RowHighlighted(Message):
    """The exchange list's cursor moved to ``cursor_row``, showing row ``index``."""

    def __init__(self, cursor_row: int, index: int) -> None:
        super().__init__()
        self.cursor_row = cursor_row
        self.index = index


class ListScrolledUp(Message):
    """The user scrolled the exchange list up (the mouse wheel): a live list stops following."""


class RowChosen(Message):
    """Enter on the exchange list: open row ``index`` in the detail pane."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index


class ShowExchanges(Message):
    """A view asks for the exchange list: of connection ``conn`` (None: all), or only the
    exchanges ``rows`` (row indexes; ``label`` says what they are: a rebalance's), with the
    cursor on exchange ``index`` when given (else on the first of ``rows``)."""

    def __init__(
        self,
        conn: int | None = None,
        index: int | None = None,
        rows: list[int] | None = None,
        label: str = "",
    ) -> None:
        super().__init__()
        self.conn = conn
        self.index = index
        self.rows = rows
        self.label = label


class ShowTimeline(Message):
    """A view asks for the timeline of connection ``conn``."""

    def __init__(self, conn: int) -> None:
        super().__init__()
        self.conn = conn


class HeaderClicked(Message):
    """A click on the exchange list's header, on column ``column``: sort by it."""

    def __init__(self, column: int) -> None:
        super().__init__()
        self.column = column


class FilterExchanges(Message):
    """A view asks for the exchange list filtered by the display filter ``text`` (``label`` says
    what they are: a client's), the cursor on the first exchange it keeps."""

    def __init__(self, text: str, label: str = "") -> None:
        super().__init__()
        self.text = text
        self.label = label
