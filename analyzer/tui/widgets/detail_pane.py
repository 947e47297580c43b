"""The detail of one exchange: its decoded tree (request and response as two top-level nodes)
beside the bytes of its two frames; the tree's cursor highlights the bytes of its field."""

from __future__ import annotations

from collections.abc import Callable

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Tree

from analyzer.model import Exchange, Field
from analyzer.session.fieldtree import message_roots
from analyzer.session.report import api_text
from analyzer.tui.widgets.detail_tree import DetailTree
from analyzer.tui.widgets.exchange_hex import ExchangeHex
from analyzer.tui.widgets.labels import NodeData


def exchange_title(index: int, ex: Exchange) -> str:
    c = ex.conn
    known = c.client_direction is not None
    return (
        f"#{index + 1}  {api_text(ex.api_key, ex.api_version)}  corr={ex.correlation_id}  "
        f"{c.client if known else c.a} -> {c.broker if known else c.b}"
    )


class DetailPane(Horizontal):
    """:class:`DetailTree` (``#tree``) and :class:`ExchangeHex` (``#hex``) of one exchange."""

    def __init__(self, show_secrets: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self.show_secrets = show_secrets  # SASL secrets in the hex views: shown or masked
        self.exchange: Exchange | None = None
        self.selected: NodeData | None = None  # the tree node whose bytes are highlighted
        self.hex_kind = "request"  # the message of the last node selected

    def compose(self) -> ComposeResult:
        yield DetailTree(id="tree")
        yield ExchangeHex(show_secrets=self.show_secrets, id="hex")

    def on_mount(self) -> None:
        tree = self.query_one(DetailTree)
        tree.border_title = "Decoded"
        tree.show_exchange(None)
        self.query_one(ExchangeHex).show(None)

    def show(self, ex: Exchange | None, index: int = 0) -> None:
        """Exchange ``ex`` (row ``index``), or nothing."""
        self.exchange = ex
        self.selected = None
        tree = self.query_one(DetailTree)
        tree.show_exchange(ex, exchange_title(index, ex) if ex is not None else "")
        if ex is not None:
            self.hex_kind = "request" if ex.request is not None else "response"
        self.query_one(ExchangeHex).show(ex)

    @on(Tree.NodeHighlighted, "#tree")
    def _node_highlighted(self, event: Tree.NodeHighlighted) -> None:
        data = event.node.data
        if isinstance(data, NodeData):
            self._select(data)

    def _select(self, data: NodeData | None) -> None:
        self.selected = data
        if data is not None and data.kind is not None:
            self.hex_kind = data.kind
        self.query_one(ExchangeHex).select(data)

    def reveal(self, kind: str, target: Field) -> bool:
        """Open the tree down to ``target`` (a field of the ``kind`` message), put the cursor on
        it and highlight its bytes."""
        node = self.query_one(DetailTree).reveal(kind, target)
        if node is None:
            return False
        self._select(node.data)
        self.hex_kind = kind
        return True

    def find_field(self, kind: str, pred: Callable[[Field], bool]) -> Field | None:
        """The first field of the ``kind`` message for which ``pred`` is true."""
        if self.exchange is None:
            return None
        m = self.exchange.request if kind == "request" else self.exchange.response
        for root in message_roots(m):
            for f in root.walk():
                if pred(f):
                    return f
        return None

    def other_hex(self) -> str | None:
        """Focus the other message's hex view; a note when that message is missing."""
        ex = self.exchange
        if ex is None:
            return None
        other = "response" if self.hex_kind == "request" else "request"
        if (ex.response if other == "response" else ex.request) is None:
            return f"no {other} in this exchange"
        self.hex_kind = other
        hexes = self.query_one(ExchangeHex)
        if hexes.display:
            hexes.view(other).focus()
        return None
