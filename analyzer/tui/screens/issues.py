"""The issues view: every issue code and Kafka error name, worst first, with the exchanges that
have it; Enter on an exchange shows it in the list."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Footer, Static, Tree

from analyzer.tui.messages import ShowExchanges
from analyzer.tui.model import IssueGroup
from analyzer.tui.rows import Row
from analyzer.tui.screens.base import View
from analyzer.tui.widgets.labels import SEVERITY_STYLE


class IssuesScreen(View):
    NAME = "issues"
    MAX_LEAVES = 1000  # exchanges listed per code

    def __init__(self, groups: list[IssueGroup], rows: Sequence[Row], origin: float | None) -> None:
        super().__init__()
        self.groups = groups
        self.rows = rows
        self.origin = origin

    def compose(self) -> ComposeResult:
        n = sum(len(g.rows) + g.events for g in self.groups)
        yield Static(
            f"Issues: {len(self.groups)} codes, {n} occurrences  enter: show the exchange  esc: back",
            classes="view-title",
        )
        tree: Tree[int | None] = Tree("issues", id="issues-tree")
        tree.show_root = False
        for g in self.groups:
            label = Text(no_wrap=True, overflow="ellipsis")
            if g.severity is not None:
                label.append(f"{g.severity} ", style=SEVERITY_STYLE.get(g.severity, ""))
            label.append(g.code, style="bold")
            label.append(f"  {len(g.rows)} exchanges")
            if g.events:
                label.append(f", {g.events} connection/capture events")
            label.append(f"  {g.example}", style="dim")
            node = tree.root.add(label, None, expand=len(self.groups) == 1)
            for i in g.rows[: self.MAX_LEAVES]:
                r = self.rows[i]
                cells = r.cells(self.origin)
                node.add_leaf(f"#{i + 1}  {cells[1]}  {r.api}  corr={cells[5]}  {r.endpoints}", i)
            if len(g.rows) > self.MAX_LEAVES:
                node.add_leaf(Text(f"… {len(g.rows) - self.MAX_LEAVES} more (filter the list)", style="dim"))
        yield tree
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(Tree).focus()

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        if isinstance(event.node.data, int):
            self.app.post_message(ShowExchanges(index=event.node.data))
