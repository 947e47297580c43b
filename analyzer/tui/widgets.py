"""Widgets of the TUI: the exchange list, the field tree of an exchange, the hex view, the stats
screen.

Everything here is UI-thread code; the pure helpers (:func:`field_label`, :func:`hex_target`,
:func:`field_path`) are also used by the tests.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.geometry import Size
from textual.message import Message as TMessage
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import DataTable, Footer, Static, Tree
from textual.widgets.tree import TreeNode

from analyzer.model import Exchange, Field, Issue, Message, Severity
from analyzer.session.report import TABLES, api_text
from analyzer.session.report import cell as table_cell

# -- labels ----------------------------------------------------------------------------------------

_MAX_TEXT = 160
# a record batch / legacy message node: its ``batch`` object as the export writes it
_SUMMARY_KEYS = (
    "magic",
    "codec",
    "record_count",
    "bytes",
    "base_offset",
    "last_offset",
    "timestamp_type",
    "control_type",
)
SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.NOTE: "dim"}
_SEV_STYLES = {k: Style.parse(v) for k, v in SEVERITY_STYLE.items()}


def _short(s: str, limit: int = _MAX_TEXT) -> str:
    return s if len(s) <= limit else s[: limit - 1] + "…"


def value_text(v) -> str:
    """A leaf value as one line of text."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return _short(repr(v))
    if isinstance(v, bytes | bytearray | memoryview):
        b = bytes(v[:32])
        more = "…" if len(v) > 32 else ""
        return f"{b.hex(' ')}{more} ({len(v)} bytes)" if len(v) else "(0 bytes)"
    if isinstance(v, dict):
        parts = [f"{k}={v[k]}" for k in _SUMMARY_KEYS if v.get(k) is not None]
        if v.get("crc_ok") is False:
            parts.append("CRC MISMATCH")
        if v.get("transactional"):
            parts.append("transactional")
        if v.get("partial"):
            parts.append("partial")
        return " ".join(parts)
    return _short(str(v))


def field_label(f: Field) -> Text:
    """``name: value  (display)  type @offset+length`` as rich Text (never parsed as markup)."""
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(f.name, style="bold")
    v = f.value
    is_array = f.type.startswith("[]") or f.type == "array"
    if is_array:
        t.append(f" [{'null' if v is None else v}]", style="cyan")
    elif isinstance(v, bytes | bytearray | memoryview) and f.display:
        t.append(": ")
        t.append(_short(repr(f.display)), style="green")
        t.append(f" ({len(v)} bytes)", style="dim")
    elif v is not None or f.children is None:
        t.append(": ")
        t.append(value_text(v), style="green" if isinstance(v, str) else "")
        if f.type == "records" and isinstance(v, int):
            t.append(" bytes")
    if f.display and not (isinstance(v, bytes | bytearray | memoryview)):
        bad = bool(v) and f.type == "int16" and f.name.endswith("error_code")
        bad = bad or "mismatch" in f.display.lower()
        t.append(f"  ({_short(f.display)})", style="bold red" if bad else "italic yellow")
    elif f.type == "int16" and f.name.endswith("error_code") and v:
        t.append("  (error)", style="bold red")
    t.append(f"  {f.type} @{f.offset}+{f.length}", style="dim")
    return t


def issue_label(issue: Issue, kind: str | None) -> Text:
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(f"{issue.severity} ", style=SEVERITY_STYLE.get(issue.severity, ""))
    t.append(issue.code, style="bold")
    t.append(f": {issue.message}")
    where = []
    if kind:
        where.append(kind)
    if issue.offset is not None:
        where.append(f"@{issue.offset}")
    if issue.where:
        where.append(issue.where)
    if where:
        t.append(f"  ({', '.join(where)})", style="dim")
    return t


def message_label(m: Message) -> Text:
    f = m.frame
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(m.kind.capitalize(), style="bold magenta")
    t.append(f"  {api_text(m.api_key, m.api_version)}")
    if m.correlation_id is not None:
        t.append(f"  corr={m.correlation_id}")
    t.append(f"  {f.length + 4} bytes", style="dim")
    if f.packet_indexes:
        pk = ",".join(map(str, f.packet_indexes[:8])) + ("…" if len(f.packet_indexes) > 8 else "")
        t.append(f"  packets {pk}", style="dim")
    sev = m.severity
    if sev is not None and sev >= Severity.WARNING:
        t.append(f"  [{sev}]", style=SEVERITY_STYLE[sev])
    return t


# -- field tree --------------------------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class NodeData:
    """What a tree node stands for: a field of the request or response, a message, an issue."""

    kind: str | None = None  # "request" | "response" | None (exchange level)
    field: Field | None = None
    path: tuple[Field, ...] = ()  # from the header/body root down to ``field`` (inclusive)
    issue: Issue | None = None
    populated: bool = True


def field_path(roots: list[Field], target: Field) -> tuple[Field, ...] | None:
    """The chain of fields from one of ``roots`` down to ``target`` (identity match)."""
    for root in roots:
        stack: list[tuple[Field, tuple[Field, ...]]] = [(root, (root,))]
        while stack:
            f, path = stack.pop()
            if f is target:
                return path
            if f.children:
                stack.extend((c, (*path, c)) for c in reversed(f.children))
    return None


def message_roots(m: Message | None) -> list[Field]:
    if m is None:
        return []
    return [f for f in (m.header, m.body) if f is not None]


@dataclass(slots=True)
class HexTarget:
    data: bytes
    start: int | None  # highlighted span [start, end) inside ``data``
    end: int | None
    title: str


def hex_target(ex: Exchange, kind: str, node: NodeData | None) -> HexTarget | None:
    """The bytes a hex view shows for a node of message ``kind`` and the span to highlight.

    Fields below a ``decompressed`` field have offsets in its (decompressed) value: the view
    then shows those bytes. A ``decompressed`` field itself spans the compressed bytes in the
    enclosing coordinates.
    """
    m = ex.request if kind == "request" else ex.response
    if m is None:
        return None
    data: bytes = bytes(m.frame.payload)
    title = f"{kind} frame payload"
    start = end = None
    if node is not None and node.kind == kind:
        if node.field is not None:
            for i in range(len(node.path) - 2, -1, -1):
                container = node.path[i]
                if container.type == "decompressed":
                    v = container.value
                    data = bytes(v) if isinstance(v, bytes | bytearray | memoryview) else b""
                    owner = node.path[i - 1].name if i else "records"
                    title = f"{kind}: decompressed data of {owner} @{container.offset}"
                    break
            f = node.field
            start, end = f.offset, f.offset + max(f.length, 0)
        elif node.issue is not None and node.issue.offset is not None:
            start, end = node.issue.offset, node.issue.offset + 1
        if start is not None:
            start = max(0, min(start, len(data)))
            end = max(start, min(end or start, len(data)))
            if end == start:
                start = end = None
    return HexTarget(data, start, end, title)


class DetailTree(Tree[NodeData]):
    """The decoded request and response of one exchange, plus its issues.

    Nodes are built lazily: a field's children become nodes when it is expanded (or revealed),
    so a Fetch response with thousands of records costs nothing until it is opened.
    """

    AUTO_EXPAND_DEPTH = 6
    EAGER_LINES = 120  # auto-expand levels while the visible tree stays below this many lines

    def __init__(self, *args, **kwargs) -> None:
        super().__init__("(no exchange selected)", *args, **kwargs)
        self.exchange: Exchange | None = None
        self._field_nodes: dict[int, TreeNode[NodeData]] = {}

    def show_exchange(self, ex: Exchange | None, title: str = "") -> None:
        self.clear()
        self._field_nodes.clear()
        self.exchange = ex
        if ex is None:
            self.root.set_label(Text("(no exchange selected)", style="dim"))
            return
        self.root.set_label(Text(title or api_text(ex.api_key, ex.api_version), style="bold"))
        self.root.data = NodeData()
        budget = [self.EAGER_LINES]
        for m in (ex.request, ex.response):
            kind = "request" if m is ex.request else "response"
            if m is None:
                self.root.add_leaf(Text(f"{kind.capitalize()}: not captured", style="dim"), NodeData(kind))
                continue
            mnode = self.root.add(message_label(m), NodeData(kind), expand=True)
            for f in message_roots(m):
                node = self._add_field(mnode, kind, f, (f,))
                self._auto_expand(node, 1, budget)
            if m.header is None and m.body is None:
                mnode.add_leaf(Text("(nothing decoded)", style="dim"), NodeData(kind))
        issues = [(None, i) for i in ex.issues]
        for m, kind in ((ex.request, "request"), (ex.response, "response")):
            if m is not None:
                issues.extend((kind, i) for i in m.issues)
        if issues:
            worst = max(i.severity for _, i in issues)
            inode = self.root.add(
                Text(f"Issues ({len(issues)})", style=SEVERITY_STYLE.get(worst, "")), NodeData(), expand=True
            )
            for kind, i in issues:
                inode.add_leaf(issue_label(i, kind), NodeData(kind, issue=i))
        self.root.expand()
        self.cursor_line = 0
        self.scroll_home(animate=False)

    def _add_field(self, parent: TreeNode[NodeData], kind: str, f: Field, path: tuple) -> TreeNode[NodeData]:
        has = bool(f.children)
        data = NodeData(kind, f, path, populated=not has)
        node = (
            parent.add(field_label(f), data, allow_expand=has)
            if has
            else parent.add_leaf(field_label(f), data)
        )
        self._field_nodes[id(f)] = node
        return node

    def populate(self, node: TreeNode[NodeData]) -> None:
        d = node.data
        if d is None or d.populated or d.field is None:
            return
        d.populated = True
        for c in d.field.children or ():
            self._add_field(node, d.kind or "request", c, (*d.path, c))

    def _auto_expand(self, node: TreeNode[NodeData], depth: int, budget: list[int]) -> None:
        d = node.data
        if d is None or d.field is None or not d.field.children or depth > self.AUTO_EXPAND_DEPTH:
            return
        n = len(d.field.children)
        if budget[0] - n < 0:
            return
        budget[0] -= n
        self.populate(node)
        node.expand()
        if d.field.type == "decompressed" or d.field.type in ("record_batch", "message"):
            return  # records stay folded: expand them on demand
        for child in node.children:
            self._auto_expand(child, depth + 1, budget)

    @on(Tree.NodeExpanded)
    def _expanded(self, event: Tree.NodeExpanded) -> None:
        self.populate(event.node)

    def reveal(self, kind: str, target: Field) -> TreeNode[NodeData] | None:
        """Build, expand and move the cursor to the node of ``target`` (a field of ``kind``)."""
        ex = self.exchange
        if ex is None:
            return None
        m = ex.request if kind == "request" else ex.response
        path = field_path(message_roots(m), target)
        if path is None:
            return None
        for f in path[:-1]:
            node = self._field_nodes.get(id(f))
            if node is None:
                return None
            self.populate(node)
            node.expand()
        node = self._field_nodes.get(id(target))
        if node is None:
            return None
        parent = node.parent
        while parent is not None:
            parent.expand()
            parent = parent.parent
        _ = self.last_line  # rebuild the line index so that node.line is current
        self.move_cursor(node)
        return node

    def all_labels(self) -> list[str]:
        """The plain text of every node built so far (expanded or not)."""
        out = []
        stack = [self.root]
        while stack:
            n = stack.pop()
            out.append(str(n.label))
            stack.extend(n.children)
        return out


# -- hex view ----------------------------------------------------------------------------------------


def _ascii(b: int) -> str:
    return chr(b) if 0x20 <= b < 0x7F else "."


class HexView(ScrollView, can_focus=True):
    """``offset | hex | ascii`` over a byte string, with one highlighted span.

    16 bytes per row when the view is wide enough, else 8 or 4. Rendered line by line (the line
    API), so a payload of megabytes costs only the visible rows.
    """

    COMPONENT_CLASSES = {"hexview--offset", "hexview--highlight", "hexview--separator"}
    DEFAULT_CSS = """
    HexView { background: $surface; }
    HexView > .hexview--offset { color: $text-muted; }
    HexView > .hexview--separator { color: $text-muted; }
    HexView > .hexview--highlight { background: $accent; color: $text; text-style: bold; }
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.data = b""
        self.highlight: tuple[int, int] | None = None
        self.bytes_per_row = 16
        self.title = ""

    # state --------------------------------------------------------------------------------------
    def set_data(self, data: bytes, title: str = "") -> None:
        if data is not self.data:
            self.data = data
            self.highlight = None
            self.scroll_to(0, 0, animate=False)
        self.title = title
        self._update_size()
        self.refresh()

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
            self.border_subtitle = f"selected {s}..{e - 1} (0x{s:x}, {e - s} bytes)"
        else:
            self.border_subtitle = ""

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
        plain = Style()
        start = row * n
        if not data and row == 0:
            return [Segment("(no bytes)", off_style)]
        chunk = data[start : start + n]
        if not chunk:
            return []
        hs, he = self.highlight or (-1, -1)
        segs = [Segment(f"{start:08x}", off_style), Segment("  ", plain)]

        def lit(i: int) -> bool:
            return i < len(chunk) and hs <= start + i < he

        for i in range(n):
            if i == 8 and n == 16:
                segs.append(Segment(" ", hl_style if lit(7) and lit(8) else plain))
            if i < len(chunk):
                segs.append(Segment(f"{chunk[i]:02x}", hl_style if lit(i) else plain))
                # the gap between two highlighted bytes is highlighted too
                segs.append(Segment(" ", hl_style if lit(i) and i + 1 < n and lit(i + 1) else plain))
            else:
                segs.append(Segment("   ", plain))
        segs.append(Segment("│ ", sep_style))
        for i, b in enumerate(chunk):
            on = hs <= start + i < he
            segs.append(Segment(_ascii(b), hl_style if on else plain))
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


# -- exchange list ---------------------------------------------------------------------------------


class ExchangeList(ScrollView, can_focus=True):
    """The exchange table: a virtual list (line API) over rows kept by the app.

    A DataTable measures and stores every row it is given, which costs seconds for a capture
    of tens of thousands of exchanges; this list only keeps the indexes of the rows the filter
    shows and renders the visible ones, so rows stream in and filters apply instantly.

    ``source`` is any list of objects with ``cells`` (a tuple of str, one per column) and
    ``severity`` (a :class:`Severity` or None, colours the last column); ``shown`` are the
    indexes into ``source`` displayed, in order.
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
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "First", show=False),
        Binding("end", "edge(1)", "Last", show=False),
    ]

    class RowHighlighted(TMessage):
        """The cursor moved to row ``cursor_row``, showing ``source[index]``."""

        def __init__(self, exchange_list: ExchangeList, cursor_row: int, index: int) -> None:
            super().__init__()
            self.exchange_list = exchange_list
            self.cursor_row = cursor_row
            self.index = index

        @property
        def control(self) -> ExchangeList:
            return self.exchange_list

    GAP = 2

    def __init__(self, columns: tuple[str, ...], max_widths: tuple[int, ...] | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.columns = columns
        self.max_widths = max_widths or tuple(60 for _ in columns)
        self.widths = [len(c) for c in columns]
        self.source: list = []
        self.shown: list[int] = []
        self.cursor_row = -1

    @property
    def row_count(self) -> int:
        return len(self.shown)

    # data ---------------------------------------------------------------------------------------------
    def set_rows(self, source: list, shown: list[int]) -> None:
        """Show ``source[i] for i in shown`` (a new filter); the cursor goes to the first row."""
        self.source = source
        self.shown = shown
        self._measure(shown)
        self.cursor_row = -1
        self._update_size()
        self.scroll_to(0, 0, animate=False, immediate=True)
        self.refresh()

    def rows_added(self, new: list[int]) -> None:
        """``new`` indexes were appended to ``shown`` (by the app, which owns the list)."""
        self._measure(new)
        self._update_size()
        self.refresh()

    def _measure(self, indexes: list[int]) -> None:
        widths, caps, src = self.widths, self.max_widths, self.source
        for i in indexes:
            for c, cell in enumerate(src[i].cells):
                n = len(cell)
                if n > widths[c]:
                    widths[c] = min(n, caps[c])

    def _update_size(self) -> None:
        width = 1 + sum(self.widths) + self.GAP * (len(self.widths) - 1)
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
            self.post_message(self.RowHighlighted(self, row, self.shown[row]))

    @property
    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def _scroll_to_cursor(self) -> None:
        row = self.cursor_row
        if row < 0:
            return
        top = round(self.scroll_offset.y)
        page = self._page
        if row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= top + page:
            self.scroll_to(y=row - page + 1, animate=False, immediate=True)

    def action_cursor(self, delta: int) -> None:
        self.move_cursor(max(0, self.cursor_row) + delta if self.cursor_row >= 0 else 0)

    def action_page(self, direction: int) -> None:
        self.move_cursor(max(0, self.cursor_row) + direction * self._page)

    def action_edge(self, end: int) -> None:
        self.move_cursor(len(self.shown) - 1 if end else 0)

    def on_click(self, event) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1:
            return
        row = round(self.scroll_offset.y) + offset.y - 1
        if 0 <= row < len(self.shown):
            self.move_cursor(row, scroll=False)

    def on_resize(self) -> None:
        self._scroll_to_cursor()

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    # rendering ------------------------------------------------------------------------------------------
    def _line_segments(self, cells, base: Style, last: Style | None) -> list[Segment]:
        segs = [Segment(" ", base)]
        gap = " " * self.GAP
        n = len(cells)
        for c, (cell, w) in enumerate(zip(cells, self.widths, strict=False)):
            text = cell if len(cell) <= w else cell[: max(0, w - 1)] + "…"
            style = base + last if (last is not None and c == n - 1) else base
            segs.append(Segment(text.ljust(w) + (gap if c < n - 1 else ""), style))
        return segs

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        base = self.rich_style
        if y == 0:
            style = base + self.get_component_rich_style("exchangelist--header")
            segs = self._line_segments(self.columns, style, None)
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
            sev = getattr(item, "severity", None)
            segs = self._line_segments(item.cells, style, _SEV_STYLES.get(sev) if sev is not None else None)
        return Strip(segs).crop_extend(scroll_x, scroll_x + width, style)

    def row_text(self, row: int) -> str:
        """The plain text of a displayed row (for tests and copy)."""
        item = self.source[self.shown[row]]
        return "".join(s.text for s in self._line_segments(item.cells, Style(), None)).rstrip()


# -- stats screen --------------------------------------------------------------------------------------


def stats_head(tables: dict, note: str = "") -> Text:
    cap = tables.get("capture", {})
    head = Text()
    head.append(
        f"{cap.get('packets', 0)} packets, {cap.get('tcp_connections', 0)} TCP connections, "
        f"{cap.get('exchanges', 0)} Kafka exchanges",
        style="bold",
    )
    if cap.get("first_ts") is not None and cap.get("last_ts") is not None:
        head.append(f", {cap['last_ts'] - cap['first_ts']:.3f} s")
    skipped = cap.get("skipped_packets")
    if skipped:
        head.append(f"\nskipped packets: {table_cell(skipped)}", style="dim")
    if note:
        head.append(f"\n{note}", style="italic yellow")
    return head


class StatsScreen(Screen):
    """The ``stats`` tables of the capture: APIs with latency percentiles, topics, clients,
    connections, brokers, groups, anomalies. Long tables are cut at ``MAX_ROWS`` rows."""

    MAX_ROWS = 2000
    BINDINGS = [
        Binding("escape,s", "app.pop_screen", "Back"),
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self, tables: dict, note: str = "") -> None:
        super().__init__()
        self.tables = tables
        self.note = note

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="stats-scroll"):
            yield Static(stats_head(self.tables, self.note), id="stats-head", classes="stats-title")
            for key, (title, cols) in TABLES.items():
                rows = self.tables.get(key) or []
                if not rows:
                    continue
                label = Text(title, style="bold")
                if len(rows) > self.MAX_ROWS:
                    label.append(
                        f"  (first {self.MAX_ROWS} of {len(rows)}; `kafka-analyzer stats` has them all)",
                        style="dim",
                    )
                yield Static(label, classes="stats-title")
                table: DataTable = DataTable(id=f"stats-{key}", classes="stats-table", cursor_type="row")
                for c in cols:
                    v = rows[0].get(c)
                    numeric = isinstance(v, int | float) and not isinstance(v, bool)
                    table.add_column(Text(c, justify="right" if numeric else "left"), key=c)
                table.add_rows(
                    tuple(
                        Text(
                            table_cell(r.get(c)),
                            justify="right" if isinstance(r.get(c), int | float) else "left",
                        )
                        for c in cols
                    )
                    for r in rows[: self.MAX_ROWS]
                )
                yield table
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#stats-scroll").focus()

    def section_text(self, key: str) -> str:
        """The plain text of one section's table (for tests)."""
        table = self.query_one(f"#stats-{key}", DataTable)
        cols = [str(c.label) for c in table.ordered_columns]
        lines = ["  ".join(cols)]
        for r in range(table.row_count):
            lines.append("  ".join(str(x) for x in table.get_row_at(r)))
        return "\n".join(lines)
