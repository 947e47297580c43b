"""The bytes of one exchange: the request frame and the response frame, each in its own hex view
(request above, response below), each keeping the highlight of the last field selected in it."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical

from analyzer.model import Exchange
from analyzer.tui.widgets.hex_view import HexView
from analyzer.tui.widgets.labels import NodeData, hex_target

KINDS = ("request", "response")


class ExchangeHex(Vertical):
    """Two :class:`HexView` (``#hex-request``, ``#hex-response``). :meth:`show` puts an exchange
    in both; :meth:`select` highlights a tree node's bytes in the view of its message only."""

    def __init__(self, show_secrets: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self.show_secrets = show_secrets  # SASL secrets: shown, or overwritten with *
        self.exchange: Exchange | None = None
        self.nodes: dict[str, NodeData | None] = dict.fromkeys(KINDS)

    def compose(self) -> ComposeResult:
        for kind in KINDS:
            yield HexView(id=f"hex-{kind}")

    def view(self, kind: str) -> HexView:
        return self.query_one(f"#hex-{kind}", HexView)

    def show(self, ex: Exchange | None) -> None:
        """A new exchange (None: nothing selected): both frames, nothing highlighted."""
        self.exchange = ex
        self.nodes = dict.fromkeys(KINDS)
        for kind in KINDS:
            self._draw(kind)

    def select(self, node: NodeData | None) -> None:
        """Highlight ``node``'s bytes in its message's view (the other view keeps its own)."""
        if node is not None and node.kind in KINDS:
            self.nodes[node.kind] = node
            self._draw(node.kind)

    def _draw(self, kind: str) -> None:
        hv = self.view(kind)
        ex = self.exchange
        if ex is None:
            hv.set_data(b"", f"{kind}: no exchange selected")
            return
        target = hex_target(ex, kind, self.nodes[kind], self.show_secrets)
        if target is None:
            hv.set_data(b"", f"{kind}: not captured")
            return
        if target.data != hv.data or target.title != hv.title or target.packets != hv.packets:
            hv.set_data(target.data, target.title, target.packets)
        hv.set_highlight(target.start, target.end)
