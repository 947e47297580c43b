"""The ``:`` views, built from a session's state (``:conn :stats :issues :groups :clients :topology
:producers :transactions :io :help``)."""

from __future__ import annotations

from analyzer.tui.rows import Picked
from analyzer.tui.screens.base import View
from analyzer.tui.screens.clients import ClientsScreen
from analyzer.tui.screens.connections import ConnectionsScreen
from analyzer.tui.screens.groups import GroupsScreen
from analyzer.tui.screens.help import HelpScreen
from analyzer.tui.screens.io import IOScreen
from analyzer.tui.screens.issues import IssuesScreen
from analyzer.tui.screens.producers import ProducersScreen
from analyzer.tui.screens.stats import StatsScreen
from analyzer.tui.screens.timeline import TimelineScreen
from analyzer.tui.screens.topology import TopologyScreen
from analyzer.tui.screens.transactions import TransactionsScreen
from analyzer.tui.session import Session


def make_view(what: str, session: Session, conn: int | None = None) -> View:
    """The view ``what`` (``conn``, ``stats``, ``issues``, ``groups``, ``io``, ``timeline`` of
    connection ``conn``; else help) over what ``session`` holds now (a note says the numbers
    are partial while it is indexing)."""
    se = session
    note = "" if se.done else "analysis still running: partial numbers"
    if what == "conn":
        return ConnectionsScreen(se.connection_rows(), note)
    if what == "stats":
        return StatsScreen(se.stats_snapshot(), note, se.latencies())
    if what == "issues":
        return IssuesScreen(se.issue_rows(), se.rows, se.index.origin)
    if what == "groups":
        return GroupsScreen(se)
    if what == "clients":
        return ClientsScreen(se)
    if what == "topology":
        return TopologyScreen(se)
    if what == "producers":
        return ProducersScreen(se)
    if what == "transactions":
        return TransactionsScreen(se)
    if what == "timeline" and conn is not None:
        title, rows = se.connection_timeline(conn)
        return TimelineScreen(conn, title, rows, se.index.origin)
    if what == "io":
        lv = se.list
        if lv.text or lv.conn is not None:  # what the list shows
            scope = " ".join(x for x in (lv.text, f"conn {lv.conn}" if lv.conn is not None else "") if x)
            picked = Picked(se.rows, lv.shown)
            return IOScreen(picked, se.index.origin, f"the {len(picked)} exchanges the list shows ({scope})")
        return IOScreen(se.rows, se.index.origin)
    return HelpScreen()
