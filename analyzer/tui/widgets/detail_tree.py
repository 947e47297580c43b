"""The decoded request and response of one exchange, as a lazily built tree (the nodes and
their text: :mod:`analyzer.session.fieldtree`, as ``read -V`` prints them)."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.binding import Binding
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from analyzer.model import Exchange, Field
from analyzer.session.fieldtree import exchange_issues, field_path, message_roots
from analyzer.session.report import api_text
from analyzer.tui.widgets.labels import (
    SEVERITY_STYLE,
    NodeData,
    field_label,
    issue_label,
    message_label,
)


class DetailTree(Tree[NodeData]):
    """The decoded request and response of one exchange, plus its issues.

    Nodes are built lazily: a field's children become nodes when it is expanded (or revealed),
    so a Fetch response with thousands of records costs nothing until it is opened.
    """

    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "scroll_home", "Top", show=False),
        Binding("G", "scroll_end", "Bottom", show=False),
    ]
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
        issues = exchange_issues(ex)  # (side, issue)
        if issues:
            worst = max(i.severity for _, i in issues)
            inode = self.root.add(
                Text(f"Issues ({len(issues)})", style=SEVERITY_STYLE.get(worst, "")), NodeData(), expand=True
            )
            for side, i in issues:
                inode.add_leaf(issue_label(i, side), NodeData(side, issue=i))
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
