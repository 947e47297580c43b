"""A timeline of exchanges (the line API): one line per exchange, a bar from its request to
its response on a time axis shared by every line, so the latencies and the gaps are seen."""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from analyzer.tui.charts import timeline_bar
from analyzer.tui.messages import RowChosen
from analyzer.tui.rows import Row

LABEL = 53  # the columns before the bars: time, API, corr, latency
NARROW_LABEL = 40  # below WIDE columns: time, API (shorter), latency
WIDE = 110


class Timeline(ScrollView, can_focus=True):
    """``rows`` (sorted by request time) against their time span; the cursor's Enter posts
    :class:`RowChosen` with the exchange's row index."""

    COMPONENT_CLASSES = {
        "timeline--axis",
        "timeline--bar",
        "timeline--error",
        "timeline--open",
        "timeline--cursor",
    }
    DEFAULT_CSS = """
    Timeline { background: $surface; }
    Timeline > .timeline--axis { color: $text-muted; text-style: bold; }
    Timeline > .timeline--bar { color: $success; }
    Timeline > .timeline--error { color: $error; }
    Timeline > .timeline--open { color: $warning; }
    Timeline > .timeline--cursor { background: $accent 50%; }
    """
    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup,ctrl+b", "page(-1)", "Page up", show=False),
        Binding("pagedown,ctrl+f", "page(1)", "Page down", show=False),
        Binding("home,g", "edge(0)", "First", show=False),
        Binding("end,G", "edge(1)", "Last", show=False),
        Binding("enter", "choose", "Show exchange"),
    ]

    def __init__(self, rows: list[Row], origin: float | None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.rows = rows
        self.origin = origin if origin is not None else (rows[0].ts if rows else 0.0)
        self.t0 = rows[0].ts if rows else 0.0
        ends = [r.ts + (r.latency or 0.0) for r in rows]
        self.t1 = max(ends, default=self.t0)
        self.cursor = 0 if rows else -1

    @property
    def span(self) -> float:
        return max(self.t1 - self.t0, 1e-6)

    def on_mount(self) -> None:
        self.virtual_size = Size(0, len(self.rows) + 1)

    def on_resize(self) -> None:
        self.virtual_size = Size(0, len(self.rows) + 1)

    @property
    def wide(self) -> bool:
        return self.scrollable_content_region.width >= WIDE

    @property
    def label_width(self) -> int:
        return LABEL if self.wide else NARROW_LABEL

    @property
    def bar_width(self) -> int:
        return max(10, self.scrollable_content_region.width - self.label_width - 1)

    def axis_text(self) -> str:
        w = self.bar_width
        left = f"{self.t0 - self.origin:.6f}s"
        right = f"{self.t1 - self.origin:.6f}s"
        middle = f"← {self.span * 1000:.1f} ms →"
        if len(left) + len(middle) + len(right) + 2 > w:
            middle = ""
        pad = max(1, w - len(left) - len(right) - len(middle))
        axis = left + " " * (pad // 2) + middle + " " * (pad - pad // 2) + right
        if self.wide:
            head = f"{'time':>10}  {'API':<20} {'corr':>6} {'latency':>11}"
        else:
            head = f"{'time':>10}  {'API':<14} {'latency':>11}"
        return head.ljust(self.label_width) + axis[:w]

    def line_text(self, i: int) -> tuple[str, int, int, str]:
        """The label of exchange ``i`` and its bar: (label, start column, length, kind)."""
        r = self.rows[i]
        corr = r.corr if r.corr is not None else "-"
        if self.wide:
            label = f"{r.ts - self.origin:10.6f}  {r.api[:20]:<20} {corr:>6} {r.latency_text:>11}"
        else:
            label = f"{r.ts - self.origin:10.6f}  {r.api[:14]:<14} {r.latency_text:>11}"
        n = self.label_width
        label = label[: n - 2].ljust(n - 2) + "  "
        start, length = timeline_bar(r, self.t0, self.span, self.bar_width)
        kind = "error" if r.has_errors else ("open" if r.latency is None else "bar")
        return label, start, length, kind

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style
        if y == 0:
            style = base + self.get_component_rich_style("timeline--axis")
            return Strip([Segment(self.axis_text(), style)]).crop_extend(0, width, base)
        i = round(self.scroll_offset.y) + y - 1
        if i >= len(self.rows):
            return Strip.blank(width, base)
        label, start, length, kind = self.line_text(i)
        line = base + self.get_component_rich_style("timeline--cursor") if i == self.cursor else base
        bar = line + self.get_component_rich_style(f"timeline--{kind}")
        glyph = "█" if kind != "open" else "▶"
        segs = [
            Segment(label, line),
            Segment("·" * start, line + Style(dim=True)),
            Segment(glyph * length if kind != "open" else glyph + "┄" * (length - 1), bar),
        ]
        return Strip(segs).crop_extend(0, width, line)

    # cursor ------------------------------------------------------------------------------------
    @property
    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def move_cursor(self, i: int) -> None:
        if not self.rows:
            return
        self.cursor = max(0, min(i, len(self.rows) - 1))
        top = round(self.scroll_offset.y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + self._page:
            self.scroll_to(y=self.cursor - self._page + 1, animate=False, immediate=True)
        self.refresh()

    def action_cursor(self, delta: int) -> None:
        self.move_cursor(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self.move_cursor(self.cursor + direction * self._page)

    def action_edge(self, end: int) -> None:
        self.move_cursor(len(self.rows) - 1 if end else 0)

    def action_choose(self) -> None:
        if 0 <= self.cursor < len(self.rows):
            self.post_message(RowChosen(self.rows[self.cursor].index))

    def on_click(self, event) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1:
            return
        self.move_cursor(round(self.scroll_offset.y) + offset.y - 1)
