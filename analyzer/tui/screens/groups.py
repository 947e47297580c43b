"""The consumer groups view, one group at a time (``[`` / ``]``), from the insights the index
feeds (:class:`~analyzer.session.insights.GroupInsights`): its rebalance timeline (enter: the
exchanges of one), its generations with members and assignments (enter: their JoinGroup and
SyncGroup exchanges), its Burrow status and lag per partition with a lag plot, and every
group-protocol exchange over time with the groups and brokers tables. Following a live capture
(or a file still being read) it reloads as the index grows."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Footer, Static, TabbedContent, TabPane, Tabs

from analyzer.session.report import TABLES
from analyzer.tui.group_text import (
    GENERATION_COLUMNS,
    MEMBER_COLUMNS,
    PARTITION_COLUMNS,
    REBALANCE_COLUMNS,
    coverage_text,
    generation_rows,
    head_text,
    lag_points,
    member_rows,
    partition_rows,
    rebalance_detail,
    rebalance_rows,
    status_text,
)
from analyzer.tui.messages import ShowExchanges
from analyzer.tui.screens.base import View, fill_table, table_text
from analyzer.tui.widgets.lag_plot import LagPlot

if TYPE_CHECKING:
    from analyzer.tui.session import Session

TIMELINE = ["#", "time", "group", "API", "member", "generation", "members", "leader", "error"]
TABS = ("rebalances", "generations", "lag", "exchanges")
FIRST_TABLE = {
    "rebalances": "#rebalances-table",
    "generations": "#generations-table",
    "lag": "#partitions-table",
    "exchanges": "#timeline-table",
}


def refill(table: DataTable, cols: list[str], rows: list[dict], limit: int | None = None) -> None:
    """``rows`` in ``table`` again, the cursor kept on its row when there still is one."""
    keep = table.cursor_row
    table.clear(columns=True)
    fill_table(table, cols, rows, limit)
    if rows:
        table.move_cursor(row=min(max(keep, 0), table.row_count - 1), animate=False)


class GroupsScreen(View):
    NAME = "groups"
    MAX_EVENTS = 5000
    POLL = 1.0  # seconds between reloads while the analysis runs

    DEFAULT_CSS = """
    GroupsScreen #groups-head { height: 1; padding: 0 1; background: $panel; }
    GroupsScreen #groups-coverage { height: auto; max-height: 2; padding: 0 1; }
    GroupsScreen TabbedContent { height: 1fr; }
    GroupsScreen TabPane { padding: 0; height: 1fr; }
    GroupsScreen ContentSwitcher { height: 1fr; }
    GroupsScreen #rebalances-table { height: 1fr; min-height: 4; }
    GroupsScreen #rebalance-detail { height: auto; max-height: 7; padding: 0 1; background: $boost; }
    GroupsScreen #generations-table { height: 1fr; min-height: 4; }
    GroupsScreen #members-table { height: 1fr; min-height: 4; }
    GroupsScreen #lag-status { height: 1; padding: 0 1; }
    GroupsScreen #partitions-table { height: auto; max-height: 7; }
    GroupsScreen .groups-empty { padding: 0 1; color: $text-muted; }
    """
    BINDINGS = [
        Binding("left_square_bracket", "group(-1)", "Prev group"),
        Binding("right_square_bracket", "group(1)", "Next group"),
        Binding("u", "units", "Lag/seconds"),
        Binding("1", "tab(0)", "Rebalances", show=False),
        Binding("2", "tab(1)", "Generations", show=False),
        Binding("3", "tab(2)", "Lag", show=False),
        Binding("4", "tab(3)", "Exchanges", show=False),
    ]

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session
        self.report: dict = {"groups": [], "origin": None, "now": None, "exchanges": 0}
        self.tables: dict = {}
        self.events: list[dict] = []
        self.current = 0  # the group shown (its index in report["groups"])
        self.seconds = False  # the plot: lag in seconds, not in messages
        self.loaded_done = False
        self._load()

    def _load(self) -> None:
        se = self.session
        self.loaded_done = se.done
        self.seen = len(se.rows) + se.index.dropped
        self.report = se.group_report()
        self.tables = se.stats_snapshot()
        self.events = se.group_events()
        self.current = min(self.current, max(0, len(self.groups) - 1))

    @property
    def groups(self) -> list[dict]:
        return self.report["groups"]

    @property
    def group(self) -> dict | None:
        return self.groups[self.current] if self.groups else None

    # layout ---------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static(id="groups-head")
        yield Static(id="groups-coverage")
        with TabbedContent(id="groups-tabs"):
            with TabPane("1 Rebalances", id="rebalances"):
                yield DataTable(id="rebalances-table", cursor_type="row", zebra_stripes=True)
                yield Static(id="rebalance-detail")
            with TabPane("2 Generations", id="generations"):
                yield DataTable(id="generations-table", cursor_type="row")
                yield DataTable(id="members-table", cursor_type="row")
            with TabPane("3 Lag", id="lag"):
                yield Static(id="lag-status")
                yield DataTable(id="partitions-table", cursor_type="row")
                yield LagPlot(id="lag-plot")
            with TabPane("4 Exchanges", id="exchanges"), VerticalScroll():
                for key in ("groups", "brokers"):
                    yield Static(id=f"{key}-title", classes="view-title")
                    yield DataTable(id=f"{key}-table", cursor_type="row")
                    yield Static(id=f"{key}-empty", classes="view-empty")
                yield Static(id="timeline-title", classes="view-title")
                yield DataTable(id="timeline-table", cursor_type="row", zebra_stripes=True)
                yield Static(id="timeline-empty", classes="view-empty")
        yield Footer()

    def on_mount(self) -> None:
        self._show_all()
        self.query_one("#rebalances-table").focus()
        if not self.loaded_done:
            self.set_interval(self.POLL, self._poll)

    def _poll(self) -> None:
        """While the analysis runs: reload when the index grew (and once more when it ended)."""
        if self.loaded_done:
            return
        se = self.session  # (the rows taken by the UI: no lock to wait for while nothing came)
        grown = len(se.rows) + se.index.dropped != self.seen
        if grown or se.done:
            self._load()
            self._show_all()

    def _show_all(self) -> None:
        self._show_group()
        self._show_exchanges_tab()

    def _show_group(self) -> None:
        g, origin = self.group, self.report["origin"]
        head = self.query_one("#groups-head", Static)
        if g is None:
            head.update("no consumer group seen in the capture (no group protocol exchange, no commit)")
            self.query_one("#groups-coverage", Static).update("")
        else:
            head.update(head_text(g, self.current + 1, len(self.groups)))
            self.query_one("#groups-coverage", Static).update(coverage_text(g))
        empty: dict = {"rebalances": [], "generations": [], "lag": [], "status": None}
        g = g or empty
        refill(self.query_one("#rebalances-table", DataTable), REBALANCE_COLUMNS, rebalance_rows(g, origin))
        refill(
            self.query_one("#generations-table", DataTable), GENERATION_COLUMNS, generation_rows(g, origin)
        )
        refill(self.query_one("#partitions-table", DataTable), PARTITION_COLUMNS, partition_rows(g, origin))
        self.query_one("#lag-status", Static).update(status_text(g) if self.group else "")
        self._show_rebalance()
        self._show_generation()
        self._show_partition()

    def _show_exchanges_tab(self) -> None:
        for key in ("groups", "brokers"):
            title, cols = TABLES[key]
            rows = self.tables.get(key) or []
            self.query_one(f"#{key}-title", Static).update(f"{title} ({len(rows)})")
            table = self.query_one(f"#{key}-table", DataTable)
            refill(table, cols, rows)
            table.display = bool(rows)
            empty = self.query_one(f"#{key}-empty", Static)
            empty.update(f"no {title.lower()} seen in the capture")
            empty.display = not rows
        n = len(self.events)
        more = f", the first {self.MAX_EVENTS}" if n > self.MAX_EVENTS else ""
        self.query_one("#timeline-title", Static).update(
            f"Groups over time ({n} exchanges{more})  enter: show the exchange"
        )
        table = self.query_one("#timeline-table", DataTable)
        refill(table, TIMELINE, self.events, self.MAX_EVENTS)
        table.display = bool(self.events)
        empty = self.query_one("#timeline-empty", Static)
        empty.update("no consumer group protocol exchanges")
        empty.display = not self.events

    # the cursor's row in each tab ---------------------------------------------------------------------
    def _show_rebalance(self) -> None:
        g = self.group
        detail = self.query_one("#rebalance-detail", Static)
        row = self.query_one("#rebalances-table", DataTable).cursor_row
        if g is None or not g["rebalances"]:
            detail.update("no rebalance seen" + (" in the capture" if g is not None else ""))
            return
        detail.update(rebalance_detail(g, max(0, row), self.report["origin"]))

    def _show_generation(self) -> None:
        g = self.group
        table = self.query_one("#members-table", DataTable)
        row = self.query_one("#generations-table", DataTable).cursor_row
        gens = g["generations"] if g is not None else []
        refill(table, MEMBER_COLUMNS, member_rows(gens[max(0, row)]) if gens else [])

    def _show_partition(self) -> None:
        g = self.group
        plot = self.query_one(LagPlot)
        parts = partition_rows(g, self.report["origin"]) if g is not None else []
        if not parts:
            plot.show([], 0, 0, None, title="lag", empty="no commit with a known end offset: no lag to plot")
            return
        row = max(0, self.query_one("#partitions-table", DataTable).cursor_row)
        p = parts[min(row, len(parts) - 1)]
        pts = lag_points(g, p["topic"], p["partition"], self.seconds)  # type: ignore[arg-type]
        times = [r["time"] for r in g["lag"]] if g is not None else []  # one axis for the group
        now = self.report["now"]
        t0 = min(times, default=0.0)
        t1 = max([*times, now] if now is not None else times, default=t0)
        what = "lag in seconds" if self.seconds else "lag (messages)"
        title = f"{what} of {p['topic']}[{p['partition']}]  u: {'messages' if self.seconds else 'seconds'}"
        plot.show(pts, t0, t1, self.report["origin"], self.seconds, title, "no lag known for this partition")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        which = event.data_table.id
        if which == "rebalances-table":
            self._show_rebalance()
        elif which == "generations-table":
            self._show_generation()
        elif which == "partitions-table":
            self._show_partition()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        which, g = event.data_table.id, self.group
        pos = event.cursor_row
        if which == "timeline-table":
            row = self.events[pos]
            self.app.post_message(ShowExchanges(index=row["#"] - 1))
        elif which == "rebalances-table" and g is not None and g["rebalances"]:
            r = g["rebalances"][pos]
            rows = self.session.rebalance_exchanges(g["group"], r["start"], r["end"])
            self._show_rows(rows, f"rebalance {pos + 1} of {g['group']}")
        elif which == "generations-table" and g is not None and g["generations"]:
            gen = g["generations"][pos]["generation"]
            rows = self.session.generation_exchanges(g["group"], gen)
            self._show_rows(rows, f"generation {gen} of {g['group']}")

    def _show_rows(self, rows: list[int], label: str) -> None:
        if not rows:
            self.notify(f"{label}: none of its exchanges is kept in the list", timeout=3)
            return
        self.app.post_message(ShowExchanges(rows=rows, label=label))

    # keys -------------------------------------------------------------------------------------------
    def action_group(self, step: int) -> None:
        """[ / ]: the previous / next group."""
        if len(self.groups) < 2:
            self.notify("only one consumer group" if self.groups else "no consumer group", timeout=2)
            return
        self.current = (self.current + step) % len(self.groups)
        for t in ("#rebalances-table", "#generations-table", "#partitions-table"):
            self.query_one(t, DataTable).move_cursor(row=0, animate=False)
        self._show_group()

    def action_tab(self, n: int) -> None:
        """1-4: the rebalances, generations, lag, exchanges tab (its table focused)."""
        tab = TABS[n]
        self.query_one(TabbedContent).active = tab
        table = self.query_one(FIRST_TABLE[tab], DataTable)
        if table.display:
            table.focus()

    def action_units(self) -> None:
        """u: the lag plot in messages or in seconds."""
        self.seconds = not self.seconds
        self._show_partition()

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        """A tab shown (a click, the tab bar's arrows): its table focused unless the tab bar is."""
        table = self.query_one(FIRST_TABLE.get(event.pane.id or "", "#rebalances-table"), DataTable)
        if table.display and not isinstance(self.focused, Tabs):
            table.focus()

    def text(self, key: str) -> str:
        return table_text(self.query_one(f"#{key}-table", DataTable))
