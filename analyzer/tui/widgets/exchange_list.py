"""The virtual exchange list (line API): only the visible rows are rendered."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from analyzer.tui.messages import HeaderClicked, ListScrolledUp, RowChosen, RowHighlighted
from analyzer.tui.rows import COLUMNS, Row
from analyzer.tui.widgets.labels import SEV_STYLES


class ExchangeList(ScrollView, can_focus=True):
    """The exchange table: a virtual list over the index's rows.

    It keeps only the indexes of the rows shown (filtered and sorted by the app) and renders
    the visible ones, so rows stream in and filters apply instantly. Column widths grow with
    what was measured (a sample of each batch, and every row drawn); at narrow widths the
    columns of lower priority (:attr:`analyzer.tui.rows.Column.priority`) are dropped.
    """

    COMPONENT_CLASSES = {
        "exchangelist--header",
        "exchangelist--cursor",
        "exchangelist--cursor-blurred",
        "exchangelist--odd",
    }
    DEFAULT_CSS = """
    ExchangeList { background: $surface; }
    ExchangeList > .exchangelist--header { background: $panel; color: $text; text-style: bold; }
    ExchangeList > .exchangelist--cursor { background: $accent; color: $text; text-style: bold; }
    ExchangeList > .exchangelist--cursor-blurred { background: $accent 40%; }
    ExchangeList > .exchangelist--odd { background: $surface-lighten-1; }
    """
    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup,ctrl+b", "page(-1)", "Page up", show=False),
        Binding("pagedown,ctrl+f", "page(1)", "Page down", show=False),
        Binding("ctrl+u", "half(-1)", "Half page up", show=False),
        Binding("ctrl+d", "half(1)", "Half page down", show=False),
        Binding("home,g", "edge(0)", "First", show=False),
        Binding("end,G", "edge(1)", "Last", show=False),
        Binding("enter", "choose", "Detail", show=False),
    ]

    GAP = 2
    MIN_LAST = 12  # the last column keeps this width at least
    SAMPLE = 200  # rows measured per batch

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.widths = [len(c.name) + 1 for c in COLUMNS]  # room for the sort arrow
        self.source: Sequence[Row] = []
        self.shown: Sequence[int] = []
        self.cursor_row = -1
        self.origin: float | None = None
        self.sort: tuple[int, bool] | None = None  # (column, reverse) shown in the header

    @property
    def row_count(self) -> int:
        return len(self.shown)

    # data ---------------------------------------------------------------------------------------------
    def set_rows(self, source: Sequence[Row], shown: Sequence[int], cursor_index: int | None = None) -> None:
        """Show ``source[i] for i in shown``; the cursor goes to row ``cursor_index`` when shown
        (without a RowHighlighted message), else nowhere."""
        self.source = source
        self.shown = shown
        self._measure(shown[-self.SAMPLE :])
        self._measure(shown[: self.SAMPLE])
        self.cursor_row = -1
        self._update_size()
        if cursor_index is not None:
            with contextlib.suppress(ValueError):
                self.cursor_row = shown.index(cursor_index)
        if self.cursor_row >= 0:
            self._scroll_to_cursor(center=True)
        else:
            self.scroll_to(0, 0, animate=False, immediate=True)
        self.refresh()

    def rows_added(self, new: Sequence[int]) -> None:
        """``new`` indexes were appended to ``shown`` (by the app, which owns the list)."""
        self._measure(new[: self.SAMPLE])
        self._update_size()
        self.refresh()

    def _measure(self, indexes: Sequence[int]) -> bool:
        widths, src, origin = self.widths, self.source, self.origin
        grew = False
        for i in indexes:
            for c, col in enumerate(COLUMNS):
                n = len(col.text(src[i], origin))
                if n > widths[c]:
                    widths[c] = min(n, col.max_width)
                    grew = True
        return grew

    def visible_columns(self) -> list[int]:
        """The columns that fit the width, by priority (priority 0 always), in column order.
        The width of the vertical scrollbar is always left out: the columns do not depend on
        whether it is shown (which depends on the rows, while they stream in)."""
        width = self.available_width
        keep = [c for c, col in enumerate(COLUMNS) if col.priority == 0]
        used = 1 + sum(min(self.widths[c], 24) + self.GAP for c in keep)
        for prio in sorted({col.priority for col in COLUMNS} - {0}):
            for c, col in enumerate(COLUMNS):
                if col.priority == prio and used + self.widths[c] + self.GAP <= width:
                    keep.append(c)
                    used += self.widths[c] + self.GAP
        return sorted(keep)

    @property
    def available_width(self) -> int:
        return self.size.width - self.styles.scrollbar_size_vertical if self.size.width else 200

    def column_widths(self, cols: list[int]) -> list[int]:
        """The widths of ``cols`` as drawn: the last one (the flags) is cut to what is left of
        the width (at least ``MIN_LAST``), so the list does not scroll sideways for it (the
        detail shows the whole text)."""
        ws = [self.widths[c] for c in cols]
        if ws:
            left = self.available_width - 1 - sum(ws[:-1]) - self.GAP * (len(ws) - 1)
            ws[-1] = min(ws[-1], max(self.MIN_LAST, left))
        return ws

    def _update_size(self) -> None:
        cols = self.visible_columns()
        width = 1 + sum(self.column_widths(cols)) + self.GAP * (len(cols) - 1)
        self.virtual_size = Size(width, len(self.shown) + 1)

    # cursor ---------------------------------------------------------------------------------------------
    def move_cursor(self, row: int, scroll: bool = True) -> None:
        if not self.shown:
            self.cursor_row = -1
            self.refresh()
            return
        row = max(0, min(row, len(self.shown) - 1))
        changed = row != self.cursor_row
        self.cursor_row = row
        if scroll:
            self._scroll_to_cursor()
        self.refresh()
        if changed:
            self.post_message(RowHighlighted(row, self.shown[row]))

    @property
    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def _scroll_to_cursor(self, center: bool = False) -> None:
        row = self.cursor_row
        if row < 0:
            return
        top = round(self.scroll_offset.y)
        page = self._page
        if center and not top <= row < top + page:
            self.scroll_to(y=max(0, row - page // 2), animate=False, immediate=True)
        elif row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= top + page:
            self.scroll_to(y=row - page + 1, animate=False, immediate=True)

    def action_cursor(self, delta: int) -> None:
        self.move_cursor(max(0, self.cursor_row) + delta if self.cursor_row >= 0 else 0)

    def action_page(self, direction: int) -> None:
        self.move_cursor(max(0, self.cursor_row) + direction * self._page)

    def action_half(self, direction: int) -> None:
        self.move_cursor(max(0, self.cursor_row) + direction * max(1, self._page // 2))

    def action_edge(self, end: int) -> None:
        self.move_cursor(len(self.shown) - 1 if end else 0)

    def action_choose(self) -> None:
        if self.cursor_row >= 0:
            self.post_message(RowChosen(self.shown[self.cursor_row]))

    def column_at(self, x: int) -> int | None:
        """The column drawn at content column ``x`` (the horizontal scroll counted)."""
        x += round(self.scroll_offset.x) - 1
        cols = self.visible_columns()
        for c, w in zip(cols, self.column_widths(cols), strict=True):
            w += self.GAP
            if x < w:
                return c
            x -= w
        return None

    def on_click(self, event) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y < 1:
            col = self.column_at(offset.x)
            if col is not None:
                self.post_message(HeaderClicked(col))
            return
        row = round(self.scroll_offset.y) + offset.y - 1
        if 0 <= row < len(self.shown):
            self.move_cursor(row, scroll=False)

    def on_mouse_scroll_up(self, event) -> None:
        self.post_message(ListScrolledUp())

    def on_resize(self) -> None:
        self._update_size()
        self._scroll_to_cursor()

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    # rendering ------------------------------------------------------------------------------------------
    def header_cells(self) -> tuple[str, ...]:
        names = [c.name for c in COLUMNS]
        if self.sort is not None:
            col, rev = self.sort
            names[col] += "▼" if rev else "▲"
        return tuple(names)

    def _line_segments(self, cells, base: Style, last: Style | None, cols: list[int]) -> list[Segment]:
        segs = [Segment(" ", base)]
        gap = " " * self.GAP
        final = cols[-1] if cols else -1
        flags = len(COLUMNS) - 1
        for c, w in zip(cols, self.column_widths(cols), strict=True):
            cell = cells[c]
            text = cell if len(cell) <= w else cell[: max(0, w - 1)] + "…"
            style = base + last if (last is not None and c == flags) else base
            segs.append(Segment(text.ljust(w) + (gap if c != final else ""), style))
        return segs

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        base = self.rich_style
        cols = self.visible_columns()
        if y == 0:
            style = base + self.get_component_rich_style("exchangelist--header")
            segs = self._line_segments(self.header_cells(), style, None, cols)
        else:
            row = scroll_y + y - 1
            if row >= len(self.shown):
                return Strip.blank(width, base)
            item = self.source[self.shown[row]]
            if row == self.cursor_row:
                name = "exchangelist--cursor" if self.has_focus else "exchangelist--cursor-blurred"
                style = base + self.get_component_rich_style(name)
            elif row % 2:
                style = base + self.get_component_rich_style("exchangelist--odd")
            else:
                style = base
            sev = item.severity
            segs = self._line_segments(
                item.cells(self.origin), style, SEV_STYLES.get(sev) if sev is not None else None, cols
            )
        return Strip(segs).crop_extend(scroll_x, scroll_x + width, style)

    def row_text(self, row: int) -> str:
        """The plain text of a displayed row, as drawn (for tests and copy)."""
        item = self.source[self.shown[row]]
        segs = self._line_segments(item.cells(self.origin), Style(), None, self.visible_columns())
        return "".join(s.text for s in segs).rstrip()

    def header_text(self) -> str:
        segs = self._line_segments(self.header_cells(), Style(), None, self.visible_columns())
        return "".join(s.text for s in segs).rstrip()
