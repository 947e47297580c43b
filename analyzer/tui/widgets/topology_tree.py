"""The topology as a tree: clients, their brokers, the topics each produced to or fetched from
through each (nodes of :func:`~analyzer.tui.clients.topology_tree`). Shown again as the
topology grows (live), the nodes open and the cursor's node stay as they were."""

from __future__ import annotations

from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from analyzer.tui.clients import Node


class TopologyTree(Tree[Node]):
    def __init__(self, **kwargs) -> None:
        super().__init__("topology", **kwargs)
        self.show_root = False
        self.guide_depth = 2
        self.shown_once = False

    def show(self, nodes: list[Node]) -> None:
        """Show ``nodes`` (the clients; the first time: every client open, so the brokers show)."""
        opened = {n.data.key for n in self._walk() if n.is_expanded and n.data is not None}
        cur = self.cursor_node.data.key if self.cursor_node is not None and self.cursor_node.data else None
        first = not self.shown_once
        self.clear()
        for top in nodes:
            c = self.root.add(top.label, top, expand=first or top.key in opened)
            for b in top.children:
                bn = c.add(b.label, b, expand=first or b.key in opened)
                for e in b.children:
                    bn.add_leaf(e.label, e)
        self.root.expand()
        self.shown_once = True
        self.call_after_refresh(self._cursor_to, cur)

    def _cursor_to(self, key: tuple | None) -> None:
        if key is None:
            if self.cursor_line < 0 and self.root.children:
                self.move_cursor(self.root.children[0])
            return
        for n in self._walk():
            if n.data is not None and n.data.key == key:
                self.move_cursor(n)
                return

    def _walk(self) -> list[TreeNode[Node]]:
        out: list[TreeNode[Node]] = []
        stack = list(reversed(self.root.children))
        while stack:
            n = stack.pop()
            out.append(n)
            stack.extend(reversed(n.children))
        return out

    def nodes(self) -> list[Node]:
        """Every node's data, depth first (for tests)."""
        return [n.data for n in self._walk() if n.data is not None]
