"""The IO view: requests/s, bytes/s and exchanges with errors/s over the capture's time."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Footer, Sparkline, Static

from analyzer.tui.charts import io_series
from analyzer.tui.rows import Row
from analyzer.tui.screens.base import View


def _rate(v: float) -> str:
    for unit in ("", "k", "M", "G"):
        if abs(v) < 1000:
            return f"{v:.1f}{unit}"
        v /= 1000
    return f"{v:.1f}T"


class IOScreen(View):
    NAME = "io"
    BUCKETS = 120

    def __init__(self, rows: Sequence[Row], origin: float | None, scope: str = "") -> None:
        super().__init__()
        self.series = io_series(rows, self.BUCKETS)
        self.origin = origin
        self.scope = scope or "the whole capture"

    def compose(self) -> ComposeResult:
        s = self.series
        with VerticalScroll():
            yield Static(
                f"IO of {self.scope} over {s['seconds']:.3f} s of request times "
                f"({len(s['requests'])} slices of {s['step'] * 1000:.1f} ms)",
                classes="view-title",
            )
            for key, title in (
                ("requests", "requests/s"),
                ("bytes", "bytes/s (requests + responses)"),
                ("errors", "exchanges with errors/s"),
            ):
                vals = s[key]
                peak = max(vals, default=0.0)
                mean = sum(vals) / len(vals) if vals else 0.0
                yield Static(f"{title}: peak {_rate(peak)}, mean {_rate(mean)}", classes="io-label")
                yield Sparkline(vals, summary_function=max, id=f"io-{key}", classes="io-spark")
        yield Footer()
