"""A hex and ASCII view of a byte string with one highlighted span and its packet boundaries
(the line API)."""

from __future__ import annotations

from bisect import bisect_right

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip


def _ascii(b: int) -> str:
    return chr(b) if 0x20 <= b < 0x7F else "."


class HexView(ScrollView, can_focus=True):
    """``offset | hex | ascii`` over a byte string, with one highlighted span.

    16 bytes per row when the view is wide enough, else 8 or 4. Rendered line by line (the line
    API), so a payload of megabytes costs only the visible rows.

    ``packets`` says where the bytes of each captured packet start (``(offset, packet number)``,
    by offset): the first byte of every packet but the first is drawn underlined in the packet
    style in both columns, after a ``┆`` in the hex column, and its row ends with the packet
    number (``◂#12``) when the view is wide enough; the subtitle names the packet(s) of the
    selection, or lists the packets when nothing is selected.
    """

    COMPONENT_CLASSES = {"hexview--offset", "hexview--highlight", "hexview--separator", "hexview--packet"}
    DEFAULT_CSS = """
    HexView { background: $surface; }
    HexView > .hexview--offset { color: $text-muted; }
    HexView > .hexview--separator { color: $text-muted; }
    HexView > .hexview--highlight { background: $accent; color: $text; text-style: bold; }
    HexView > .hexview--packet { color: $warning; text-style: bold underline; }
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.data = b""
        self.highlight: tuple[int, int] | None = None
        self.bytes_per_row = 16
        self.title = ""
        self.packets: tuple[tuple[int, int], ...] = ()
        self._starts: list[int] = []  # the packets' start offsets (bisected per row)

    # state --------------------------------------------------------------------------------------
    def set_data(self, data: bytes, title: str = "", packets: tuple[tuple[int, int], ...] = ()) -> None:
        if data is not self.data:
            self.data = data
            self.highlight = None
            self.scroll_to(0, 0, animate=False)
        self.title = title
        self.packets = packets
        self._starts = [off for off, _ in packets]
        self._update_size()
        self.refresh()

    def packet_at(self, offset: int) -> int | None:
        """The number of the packet byte ``offset`` came in (None: not known)."""
        i = bisect_right(self._starts, offset) - 1
        return self.packets[i][1] if i >= 0 else None

    def boundaries(self, start: int, end: int) -> list[tuple[int, int]]:
        """The packet boundaries (first bytes of every packet but the first) in ``start..end``."""
        st = self._starts
        lo = max(bisect_right(st, start - 1), 1)
        hi = bisect_right(st, end - 1)
        return list(self.packets[lo:hi]) if lo < hi else []

    def set_highlight(self, start: int | None, end: int | None) -> None:
        if start is None or end is None or end <= start:
            self.highlight = None
        else:
            self.highlight = (start, end)
            self._scroll_to_highlight()
        self._update_title()
        self.refresh()

    @property
    def rows(self) -> int:
        return max(1, -(-len(self.data) // self.bytes_per_row))

    def _update_size(self) -> None:
        width = self.scrollable_content_region.width
        if width == 0 or width >= self.line_width_for(16):
            self.bytes_per_row = 16
        elif width >= self.line_width_for(8):
            self.bytes_per_row = 8
        else:
            self.bytes_per_row = 4
        self.virtual_size = Size(self.line_width, self.rows)
        self._update_title()

    @staticmethod
    def line_width_for(n: int) -> int:
        return 10 + 3 * n + (1 if n == 16 else 0) + 2 + n

    @property
    def line_width(self) -> int:
        return self.line_width_for(self.bytes_per_row)

    def _update_title(self) -> None:
        size = f"{len(self.data)} bytes"
        self.border_title = f"{self.title} ({size})" if self.title else size
        if self.highlight:
            s, e = self.highlight
            sub = f"selected {s}..{e - 1} (0x{s:x}, {e - s} bytes)"
            first, last = self.packet_at(s), self.packet_at(e - 1)
            if first is not None:
                sub += f" packet #{first}" if first == last else f" packets #{first}-#{last}"
            self.border_subtitle = sub
        else:
            self.border_subtitle = self.packets_text()

    def packets_text(self, most: int = 6) -> str:
        """The packets and where they start: ``packets #31 #32@1444 #33@2892``."""
        p = self.packets
        if len(p) < 2:
            return f"packet #{p[0][1]}" if p else ""
        words = [f"#{pk}@{off}" if off else f"#{pk}" for off, pk in p[:most]]
        more = f" …{len(p) - most} more" if len(p) > most else ""
        return f"{len(p)} packets " + " ".join(words) + more

    def _scroll_to_highlight(self) -> None:
        if not self.highlight:
            return
        row = self.highlight[0] // self.bytes_per_row
        last = (self.highlight[1] - 1) // self.bytes_per_row
        top = self.scroll_offset.y
        height = max(1, self.size.height)
        if row < top or last >= top + height:
            self.scroll_to(y=max(0, row - 1), animate=False)

    def on_resize(self) -> None:
        self._update_size()
        self._scroll_to_highlight()

    # rendering -------------------------------------------------------------------------------------
    def row_segments(self, row: int) -> list[Segment]:
        """The segments of one row: the offset, one segment per byte in the hex and ascii columns."""
        n = self.bytes_per_row
        data = self.data
        off_style = self.get_component_rich_style("hexview--offset")
        sep_style = self.get_component_rich_style("hexview--separator")
        hl_style = self.get_component_rich_style("hexview--highlight")
        pk_style = self.get_component_rich_style("hexview--packet")
        hl_pk_style = hl_style + Style(underline=True)
        plain = Style()
        start = row * n
        if not data and row == 0:
            return [Segment("(no bytes)", off_style)]
        chunk = data[start : start + n]
        if not chunk:
            return []
        hs, he = self.highlight or (-1, -1)
        marks = self.boundaries(start, start + len(chunk)) if self.packets else []
        first = {off - start for off, _ in marks}  # row positions of a packet's first byte
        segs = [Segment(f"{start:08x}", off_style), Segment("  ", plain)]

        def lit(i: int) -> bool:
            return i < len(chunk) and hs <= start + i < he

        def style(i: int) -> Style:
            if i in first:
                return hl_pk_style if lit(i) else pk_style
            return hl_style if lit(i) else plain

        for i in range(n):
            if i == 8 and n == 16:
                segs.append(Segment(" ", hl_style if lit(7) and lit(8) else plain))
            if i < len(chunk):
                segs.append(Segment(f"{chunk[i]:02x}", style(i)))
                if i + 1 in first:  # a packet starts at the next byte
                    segs.append(Segment("┆", pk_style))
                else:  # the gap between two highlighted bytes is highlighted too
                    segs.append(Segment(" ", hl_style if lit(i) and i + 1 < n and lit(i + 1) else plain))
            else:
                segs.append(Segment("   ", plain))
        segs.append(Segment("│ ", sep_style))
        for i, b in enumerate(chunk):
            segs.append(Segment(_ascii(b), style(i)))
        if marks:  # past the line width: shown when the view is wide enough
            segs.append(Segment(" " * (n - len(chunk)) + " ", plain))
            numbers = "◂" + " ".join(f"#{pk}" for _, pk in marks)
            segs.append(Segment(numbers, pk_style + Style(underline=False)))
        return segs

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = scroll_y + y
        if row >= self.rows:
            return Strip.blank(self.size.width, self.rich_style)
        strip = Strip(self.row_segments(row))
        return strip.crop_extend(scroll_x, scroll_x + self.size.width, self.rich_style).apply_style(
            self.rich_style
        )
