"""Widgets of the TUI: the field tree of an exchange, the hex view, the stats screen.

Everything here is UI-thread code; the pure helpers (:func:`field_label`, :func:`hex_target`,
:func:`field_path`) are also used by the tests.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.geometry import Size
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Footer, Static, Tree
from textual.widgets.tree import TreeNode

from analyzer.dissect import schema
from analyzer.model import Exchange, Field, Issue, Message, Severity

# -- labels ----------------------------------------------------------------------------------------

_MAX_TEXT = 160
_SUMMARY_KEYS = ("magic", "codec", "records", "bytes", "base_offset", "last_offset", "control_type")
SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.NOTE: "dim"}


def api_text(key: int | None, version: int | None) -> str:
    name = (schema.api_name(key) if key is not None else None) or ("?" if key is None else f"Api{key}")
    return f"{name} v{version}" if version is not None else name


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

    AUTO_EXPAND_DEPTH = 4
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

    16 bytes per row when the view is wide enough, 8 otherwise. Rendered line by line (the line
    API), so a payload of megabytes costs only the visible rows.
    """

    COMPONENT_CLASSES = {"hexview--offset", "hexview--highlight", "hexview--separator"}
    DEFAULT_CSS = """
    HexView { background: $surface; }
    HexView > .hexview--offset { color: $text-muted; }
    HexView > .hexview--separator { color: $text-muted; }
    HexView > .hexview--highlight { background: $accent; color: $text; text-style: bold; }
    """

    WIDE = 77  # width needed for 16 bytes per row

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
        width = self.size.width
        self.bytes_per_row = 16 if width == 0 or width >= self.WIDE else 8
        self.virtual_size = Size(self.line_width, self.rows)
        self._update_title()

    @property
    def line_width(self) -> int:
        n = self.bytes_per_row
        return 10 + 3 * n + (1 if n == 16 else 0) + 2 + n

    def _update_title(self) -> None:
        t = f"{self.title} ({len(self.data)} bytes)" if self.title else f"{len(self.data)} bytes"
        if self.highlight:
            s, e = self.highlight
            t += f" · selected {s}..{e - 1} ({e - s} bytes)"
        self.border_title = t

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


# -- stats screen --------------------------------------------------------------------------------------

STATS_SECTIONS = {
    "apis": (
        "Requests per API (latency in ms)",
        ["api_name", "count", "p50_ms", "p95_ms", "p99_ms", "max_ms", "unanswered", "errors"],
    ),
    "topics": (
        "Topics",
        ["topic", "requests", "produced_records", "produced_bytes", "fetched_records", "fetched_bytes"],
    ),
    "clients": ("Clients", ["client_id", "software", "requests", "responses_with_errors", "connections"]),
    "connections": (
        "Connections",
        ["connection", "client", "broker", "exchanges", "bytes_to_broker", "bytes_to_client", "gaps"]
        + ["duration_s", "status"],
    ),
    "brokers": ("Brokers", ["node_id", "address", "rack"]),
    "groups": ("Consumer groups", ["group_id", "protocol_type", "protocol", "generations", "members"]),
    "anomalies": ("Anomalies", ["anomaly", "count", "example"]),
}


def _cell(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, dict):
        return ", ".join(f"{k}={n}" for k, n in v.items()) or "-"
    if isinstance(v, list):
        return ",".join(map(str, v)) or "-"
    return str(v)


def stats_renderables(tables: dict, note: str = "") -> list:
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
        head.append(f"\nskipped packets: {_cell(skipped)}", style="dim")
    if note:
        head.append(f"\n{note}", style="italic yellow")
    out: list = [head]
    for key, (title, cols) in STATS_SECTIONS.items():
        rows = tables.get(key) or []
        if not rows:
            continue
        t = Table(title=title, title_justify="left", expand=False)
        for c in cols:
            numeric = isinstance(rows[0].get(c), int | float) and not isinstance(rows[0].get(c), bool)
            t.add_column(c, justify="right" if numeric else "left", overflow="fold")
        for r in rows:
            t.add_row(*(Text(_cell(r.get(c))) for c in cols))
        out.append(t)
    return out


class StatsScreen(Screen):
    """The ``stats`` tables of the capture: APIs with latency percentiles, topics, anomalies..."""

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
            for i, r in enumerate(stats_renderables(self.tables, self.note)):
                yield Static(r, classes="stats-section", id=f"stats-{i}")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#stats-scroll").focus()
