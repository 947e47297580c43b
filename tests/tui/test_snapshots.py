"""SVG snapshots of every view at 80x24 and 120x35 (pytest-textual-snapshot; update them with
``pytest tests/tui/test_snapshots.py --snapshot-update`` and look at the SVGs)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from analyzer.tui.app import AnalyzerApp

ROOT = Path(__file__).resolve().parents[2]
TXN = ROOT / "captures" / "librdkafka-txn.pcap"
GZIP = ROOT / "captures" / "librdkafka-produce-consume-gzip.pcap"
JOINS = ROOT / "captures" / "group-joins.pcap"  # a consumer group: 5 rebalances
LAG = ROOT / "captures" / "group-lag.pcap"  # four groups, lag growing, stopped, rewinding
SARAMA = ROOT / "captures" / "sarama-zstd.pcap"  # a legacy client: OffsetCommit v1, refused by Kafka 4
IDEMPOTENT = ROOT / "captures" / "producer-idempotent.pcap"  # retries, a batch written twice
PTXN = ROOT / "captures" / "producer-txn.pcap"  # commits, an abort, a hanging transaction

SIZES = [(80, 24), (120, 35)]


async def until_done(app: AnalyzerApp, pilot) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + 20
    while not app.done:
        assert loop.time() < end, "analysis did not finish"
        await asyncio.sleep(0.02)
    await pilot.pause()


def view(what: str):
    async def run_before(pilot) -> None:
        app = pilot.app
        await until_done(app, pilot)
        if what == "records":
            fetch = next(r.index for r in app.rows if r.api_key == 1 and r.resp_bytes > 200)
            app.select_exchange(fetch)
            await pilot.pause()
            app.action_records()
        elif what == "detail":  # detail only: a Produce over 4 packets, their boundaries marked
            produce = next(r.index for r in app.rows if r.api_key == 0 and r.req.packets >= 4)
            app.select_exchange(produce)
            await pilot.pause()
            await pilot.press("z", "z")
            if not app.query_one("#hex").display:  # (hidden at first when narrow)
                await pilot.press("w")
            await pilot.pause()
            hv = app.query_one("#hex-request")  # scrolled to where the second packet starts
            hv.scroll_to(y=hv.packets[1][0] // hv.bytes_per_row - 2, animate=False)
        elif what == "filter":  # a bad filter being typed: the error and where, under the bar
            bar = app.query_one("#filter")
            bar.DELAY = 60  # (nothing applied while typing on a loaded machine)
            bar.cursor_blink = False  # (the picture does not depend on the blink)
            await pilot.press("slash", *"api == Prodce and latency > 5ms")
        elif what == "timeline":  # the busiest connection's
            busiest = max(app.index.conns.values(), key=lambda s: s.exchanges).info.id
            app.select_exchange(next(r.index for r in app.rows if r.conn.id == busiest))
            await pilot.pause()
            app.open_view("timeline")
        elif what == "groups-lag":  # the lag tab of the rewinding group, its plot
            app.open_view("groups")
            await pilot.pause()
            await pilot.press("right_square_bracket", "3")
        elif what != "ex":
            app.open_view(what)
        await pilot.pause()
        app.clear_notifications()
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize(
    "what",
    [
        "ex",
        "detail",
        "conn",
        "stats",
        "issues",
        "groups",
        "groups-lag",
        "clients",
        "topology",
        "producers",
        "transactions",
        "io",
        "help",
        "records",
        "timeline",
        "filter",
    ],
)
def test_view_snapshot(snap_compare, what, size):
    path = {
        "records": GZIP,
        "detail": GZIP,
        "groups": JOINS,
        "groups-lag": LAG,
        "clients": SARAMA,
        "topology": LAG,
        "producers": IDEMPOTENT,
        "transactions": PTXN,
    }.get(what, TXN)
    assert snap_compare(AnalyzerApp(str(path)), terminal_size=size, run_before=view(what))
