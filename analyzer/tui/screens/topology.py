"""The topology view (``:topology``): who produces to and fetches from what, as a tree clients ->
brokers -> topics, records and bytes on each edge (a client's consumer group beside it), the
node under the cursor said in full below. Enter on an edge (a topic under a broker): the list
filtered to its exchanges; ``f`` on any node: a client's, a client's with one broker, an
edge's. It reloads as the index grows (a capture still being read, a live capture)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Static, Tree

from analyzer.dissect.protocol_table import CURRENT_RELEASE
from analyzer.tui.clients import Node, topology_tree
from analyzer.tui.messages import FilterExchanges
from analyzer.tui.screens.following import FollowingView
from analyzer.tui.widgets.topology_tree import TopologyTree

if TYPE_CHECKING:
    from analyzer.tui.session import Session

EMPTY = "no Produce or Fetch with records in the capture: no topology to draw"


def _n(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


class TopologyScreen(FollowingView):
    NAME = "topology"

    DEFAULT_CSS = """
    TopologyScreen #topology-head { height: 1; padding: 0 1; background: $panel; }
    TopologyScreen #topology-coverage { height: auto; max-height: 2; padding: 0 1; color: $text-muted; }
    TopologyScreen TopologyTree { height: 1fr; }
    TopologyScreen #topology-detail { height: auto; max-height: 3; padding: 0 1; background: $boost; }
    """
    BINDINGS = [Binding("f", "filter_node", "Its exchanges")]

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self.topology: list[Node] = []
        self.dropped: dict[str, int] = {}
        self.reload()

    def load(self) -> None:
        report = self.session.client_report(CURRENT_RELEASE)
        self.topology = topology_tree(report["flows"], report["clients"])
        self.dropped = report["dropped"]

    def compose(self) -> ComposeResult:
        yield Static(id="topology-head")
        yield Static(id="topology-coverage")
        yield TopologyTree(id="topology-tree")
        yield Static(id="topology-detail")
        yield Footer()

    def on_mount(self) -> None:
        self.show()
        self.query_one(TopologyTree).focus()
        self.follow()

    def show(self) -> None:
        brokers = {b.key[3] for c in self.topology for b in c.children}
        topics = {e.topic for c in self.topology for b in c.children for e in b.children}
        note = "" if self.loaded_done else "  (still reading: partial)"
        head = (
            f"{_n(len(self.topology), 'client')}, {_n(len(brokers), 'broker')}, {_n(len(topics), 'topic')}"
            f"{note or '  enter on an edge: its exchanges'}"
            if self.topology
            else EMPTY + note
        )
        self.query_one("#topology-head", Static).update(head)
        gone = {k: v for k, v in self.dropped.items() if v}
        cov = "Produce answered without error, Fetch answers with records"
        if gone:
            cov += "; let go to stay bounded: " + ", ".join(f"{v} {k}" for k, v in gone.items())
        self.query_one("#topology-coverage", Static).update(f"coverage: {cov}")
        self.query_one(TopologyTree).show(self.topology)
        self._detail(self.query_one(TopologyTree).cursor_node)

    def _detail(self, node) -> None:
        data = node.data if node is not None else None
        self.query_one("#topology-detail", Static).update(data.detail if data is not None else "")

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted) -> None:
        self._detail(event.node)

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        data = event.node.data
        if data is not None and data.kind is not None:  # an edge (enter on a client or broker: open/close)
            self._filter(data)

    def action_filter_node(self) -> None:
        """f: the list filtered to the exchanges of the node under the cursor."""
        node = self.query_one(TopologyTree).cursor_node
        if node is not None and node.data is not None:
            self._filter(node.data)

    def _filter(self, data: Node) -> None:
        self.app.post_message(FilterExchanges(data.filter, data.detail.split(": ")[0]))
