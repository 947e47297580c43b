"""The help view: every key and command."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Footer, Static

from analyzer.tui.screens.base import View

KEYS = [
    ("Anywhere", None),
    (
        ":",
        "command line: conn, ex, stats, issues, groups, clients, topology, producers, transactions (txn), "
        "io, timeline (tl), help, quit",
    ),
    ("?", "this help"),
    ("esc", "back (closes a view, the filter, the connection scope)"),
    ("t", "light / dark theme"),
    ("q", "quit"),
    ("Exchange list", None),
    ("j / k, down / up", "next / previous exchange"),
    ("g / G, home / end", "first / last"),
    ("ctrl+d / ctrl+u", "half a page down / up"),
    ("ctrl+f / ctrl+b", "a page down / up"),
    ("enter", "open the exchange's decoded tree"),
    ("/", "display filter (api == Produce and latency > 5ms; kafka-analyzer filters); plain words search"),
    ("  up / down", "in the filter: the filters applied before (history)"),
    ("e", "next exchange with errors"),
    ("o / O", "sort by the next column / reverse the order (time order by default)"),
    ("click a title", "sort by that column (again: reverse)"),
    ("tab / shift+tab", "list, tree, hex"),
    ("z", "layout: list and detail, list only, detail only"),
    ("w", "show / hide the hex pane"),
    ("Detail", None),
    ("f", "filter by the tree field under the cursor: field == value"),
    ("r", "the request's / the response's hex view (each keeps its highlight)"),
    ("v", "the records of the exchange (offset, timestamp, key, value, headers)"),
    ("x", "export the exchange as JSON to a file in the current directory"),
    ("y", "copy the exchange as JSON to the clipboard (OSC 52)"),
    ("s", "statistics"),
    ("Views", None),
    (":conn", "connections; enter: its exchanges, l: its timeline"),
    (":timeline", "the current connection's exchanges on a time axis (bars of latency)"),
    (":groups", "consumer groups: rebalances, generations, lag and Burrow's status, exchanges"),
    (":io", "requests/s, bytes/s, errors/s over time (of the exchanges the list shows)"),
    (":clients", "clients: software, readiness for Kafka 4.x (the refused versions), hygiene"),
    ("  ", "[ / ]: the release judged (3.9-4.2); enter: the client's exchanges; r: the refused ones"),
    (":topology", "who produces to and fetches from what: clients -> brokers -> topics"),
    ("  ", "enter on an edge (a topic): its exchanges; f: the exchanges of any node"),
    (":producers", "producers: batches, records retried, failed, written twice, sequence gaps, batching"),
    ("  ", "its retries below (tab); enter on a retry: its FIRST attempt's exchange, l: the later one"),
    (":transactions", "transactions: outcome (commit, abort, hanging), records, partitions, offsets"),
    ("  ", "enter: its first exchange, e: its EndTxn; read_committed consumers held back below"),
    ("Groups view (:groups)", None),
    ("[ / ]", "previous / next consumer group"),
    ("1 2 3 4", "tabs: rebalances, generations, lag, exchanges (tab / shift+tab: next pane)"),
    ("enter", "on a rebalance: its exchanges; on a generation: its JoinGroup / SyncGroup"),
    ("  ", "on an exchange (tab 4): that exchange; esc in the list: every exchange again"),
    ("j / k", "the rebalance, generation, partition under the cursor (lag plotted: tab 3)"),
    ("u", "the lag plot in messages / in seconds"),
    ("Live (tui -i IFACE)", None),
    ("c", "stop the capture (the exchanges stay browsable)"),
    ("G / end", "follow new exchanges again (moving up stops following)"),
]


def help_table() -> Table:
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold cyan", no_wrap=True)
    t.add_column()
    for key, what in KEYS:
        if what is None:
            t.add_row(Text(key, style="bold underline"), "")
        else:
            t.add_row(key, what)
    return t


class HelpScreen(View):
    NAME = "help"

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(help_table(), id="help-keys")
        yield Footer()
