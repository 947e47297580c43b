"""A partition's lag over time: the lag at each commit held until the next, as columns of
blocks on a time axis (the numbers from :mod:`analyzer.tui.charts`)."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from analyzer.tui.charts import column_plot, step_series


def _num(v: float, seconds: bool) -> str:
    if seconds:
        return f"{v:.3g}s" if v < 100 else f"{v:.0f}s"
    return f"{v:.0f}"


class LagPlot(Widget):
    """``points`` ((time, value): a partition's lag or lag in seconds at each commit) from
    ``t0`` to ``t1`` (times from ``origin`` on the axis), drawn to the widget's size."""

    DEFAULT_CSS = """
    LagPlot { height: 1fr; min-height: 5; border: round $primary 50%; padding: 0 1; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.points: list[tuple[float, float]] = []
        self.t0 = self.t1 = self.origin = 0.0
        self.seconds = False
        self.empty = "no lag seen"

    def show(
        self,
        points: list[tuple[float, float]],
        t0: float,
        t1: float,
        origin: float | None,
        seconds: bool = False,
        title: str = "",
        empty: str = "no lag seen",
    ) -> None:
        self.points = points
        self.t0, self.t1 = t0, max(t1, t0)
        self.origin = origin if origin is not None else t0
        self.seconds = seconds
        self.border_title = title
        self.empty = empty
        self.refresh()

    def lines(self, width: int, height: int) -> list[str]:
        """The picture as text lines (the y labels, the plot, the time axis): for tests too."""
        if not self.points:
            return [self.empty]
        top = max(v for _, v in self.points)
        if top <= 0:
            what = "lag 0 s" if self.seconds else "lag 0"
            return [f"{what} at each of its {len(self.points)} commits: caught up"]
        labels = [_num(top, self.seconds), _num(0, self.seconds)]
        lw = max(len(x) for x in labels)
        cols = max(1, width - lw - 1)
        rows = max(1, height - 2)
        plot = column_plot(step_series(self.points, self.t0, self.t1, cols), rows, top)
        out = []
        for i, line in enumerate(plot):
            label = labels[0] if i == 0 else labels[1] if i == rows - 1 and rows > 1 else ""
            out.append(f"{label:>{lw}}{'┤' if label else '│'}{line}")
        out.append(" " * lw + "└" + "─" * cols)
        left = f"{self.t0 - self.origin:.1f}s"
        right = f"{self.t1 - self.origin:.1f}s"
        out.append(" " * (lw + 1) + left + right.rjust(max(0, cols - len(left))))
        return out

    def render(self) -> Text:
        size = self.content_region.size
        t = Text(no_wrap=True, overflow="crop")
        lines = self.lines(size.width, size.height)
        for i, line in enumerate(lines):
            if i:
                t.append("\n")
            if len(lines) > 2 and i < len(lines) - 2:
                cut = line.find("┤") if "┤" in line else line.find("│")
                t.append(line[: cut + 1], style="dim")
                t.append(line[cut + 1 :], style="bold green")
            else:
                t.append(line, style="dim")
        return t
