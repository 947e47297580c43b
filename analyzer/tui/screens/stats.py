"""The statistics view: the ``stats`` tables of the capture."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Footer, Static

from analyzer.session.report import TABLES
from analyzer.session.report import cell as table_cell
from analyzer.session.stats import percentile
from analyzer.tui.charts import latency_histogram
from analyzer.tui.screens.base import View


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


BAR = 30


def latency_text(latencies: dict[str, list[float]]) -> Text:
    """Per API: p50/p90/p99/max, then a histogram of its latencies, one bar per bin."""
    t = Text()
    for name, values in sorted(latencies.items()):
        vals = sorted(values)
        if not vals:
            continue
        ps = "  ".join(
            f"{label} {percentile(vals, q) * 1000:.3f}ms"  # type: ignore[operator]
            for label, q in (("p50", 50), ("p90", 90), ("p99", 99))
        )
        t.append(f"{name}", style="bold cyan")
        t.append(f"  n={len(vals)}  {ps}  max {vals[-1] * 1000:.3f}ms\n")
        hist = latency_histogram(vals, 8)
        peak = max((n for _, _, n in hist), default=1) or 1
        for lo, hi, n in hist:
            bar = "█" * max(1 if n else 0, round(n / peak * BAR))
            t.append(f"  {lo:10.3f} - {hi:10.3f} ms  ", style="dim")
            t.append(bar.ljust(BAR), style="green")
            t.append(f" {n}\n")
    return t


class StatsScreen(View):
    """The ``stats`` tables of the capture: APIs with latency percentiles, topics, clients,
    connections, brokers, groups, anomalies. Long tables are cut at ``MAX_ROWS`` rows."""

    NAME = "stats"
    MAX_ROWS = 2000
    BINDINGS = [Binding("s", "app.back", "Back", show=False)]

    def __init__(self, tables: dict, note: str = "", latencies: dict[str, list[float]] | None = None) -> None:
        super().__init__()
        self.tables = tables
        self.note = note
        self.latencies = latencies or {}

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
                if key == "apis" and self.latencies:
                    yield Static(
                        Text("Latency per API (log-spaced bins)", style="bold"), classes="stats-title"
                    )
                    yield Static(latency_text(self.latencies), id="stats-latency")
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
