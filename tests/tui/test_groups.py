"""The groups view (``:groups``) on the generated group scenarios, against their clients' own
view (captures/<name>.truth.json) and an independent run of the pipeline: the rebalance
timeline and its causes, the generations' members and assignments, each rebalance's and
generation's exchanges (enter), Burrow's status per group and partition, the lag plot; and the
view reloading while the capture is still being read."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from analyzer.dissect.message import Options
from analyzer.model import Exchange
from analyzer.pipeline import Analysis
from analyzer.session.insights import GroupInsights
from analyzer.tui.app import AnalyzerApp
from analyzer.tui.screens.groups import GroupsScreen
from analyzer.tui.widgets.lag_plot import LagPlot
from tests.helpers.tui_live import GatedLive, until_done, until_first_part

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = ROOT / "captures"
SIZE = (120, 40)


def truth(name: str) -> dict:
    return json.loads((CAPTURES / f"{name}.truth.json").read_text())


def reference(name: str) -> tuple[list[Exchange], dict]:
    """Every exchange of the capture, and the insights of a run of their own (``groups``')."""
    path = CAPTURES / f"{name}.pcap"
    exchanges = [ev for ev in Analysis(path, Options()).events() if type(ev) is Exchange]
    a = Analysis(path)
    ins = GroupInsights(a.knowledge.topic_ids)
    out = a.run(ins)
    return exchanges, {g["group"]: g for g in ins.report(out.last_ts)}


async def opened(app: AnalyzerApp, pilot) -> GroupsScreen:
    await until_done(app, pilot, timeout=20)
    app.open_view("groups")
    await pilot.pause()
    assert isinstance(app.screen, GroupsScreen)
    return app.screen


def column(screen: GroupsScreen, table: str, name: str) -> list[str]:
    lines = screen.text(table).splitlines()
    cols = lines[0].split("  ")
    i = cols.index(name)
    t = screen.query_one(f"#{table}-table")
    return [str(t.get_row_at(r)[i]) for r in range(t.row_count)]


def test_rebalance_timeline_generations_and_their_exchanges():
    name = "group-joins"
    tr = truth(name)
    exchanges, ref = reference(name)
    gid = tr["expect"]["group"]
    clients = tr["clients"]

    def mid(who: str) -> str:
        (m,) = clients[who]["member_ids"]
        return m

    want_causes = []
    for step in tr["expect"]["rebalance_causes"]:
        who, what = step.split()
        want_causes.append(
            {
                "joins": f"member joining ({clients[who]['config']['client.id']})",
                "leaves": f"member leaving ({mid(who)})",
                "expires": f"session expiry of {mid(who)}",
            }[what]
        )

    async def go():
        app = AnalyzerApp(str(CAPTURES / f"{name}.pcap"))
        async with app.run_test(size=SIZE) as pilot:
            screen = await opened(app, pilot)
            head = str(screen.query_one("#groups-head").content)
            assert gid in head and "group 1/1" in head and "5 rebalances" in head
            assert "complete for the generations seen" in str(screen.query_one("#groups-coverage").content)
            # the timeline: one row per rebalance, its cause as the clients lived it
            assert column(screen, "rebalances", "cause") == want_causes
            gens = [(r["generation_before"], r["generation_after"]) for r in ref[gid]["rebalances"]]
            assert column(screen, "rebalances", "gen") == [f"{'?' if b is None else b}->{a}" for b, a in gens]
            assert column(screen, "rebalances", "evicted") == ["0", "0", "0", "0", "1"]
            table = screen.query_one("#rebalances-table")
            assert app.focused is table
            table.move_cursor(row=4)  # the last rebalance: the expiry
            await pilot.pause()
            detail = str(screen.query_one("#rebalance-detail").content)
            assert f"evicted: {mid('c3')}" in detail and "session expiry" in detail
            # enter: the exchanges of that rebalance, nothing else; esc: all again
            for k, r in enumerate(ref[gid]["rebalances"]):
                app.open_view("groups")
                await pilot.pause()
                screen = app.screen
                screen.query_one("#rebalances-table").move_cursor(row=k)
                await pilot.press("enter")
                await pilot.pause()
                assert not isinstance(app.screen, GroupsScreen)
                expected = [
                    i
                    for i, e in enumerate(exchanges)
                    if e.api_key in (8, 11, 12, 13, 14, 68)
                    and e.request.body.get("group_id") == gid
                    and r["start"] <= e.request.frame.ts_first <= r["end"]
                ]
                assert sorted(app.shown) == expected
                kinds = {exchanges[i].api_key for i in expected}
                assert {11, 14} <= kinds  # its JoinGroups and SyncGroups
                assert f"rebalance {k + 1} of {gid}" in app.query_one("#exchanges").border_title
                # the cursor on the first sent (the list in time order)
                assert app.current.index == min(expected, key=lambda i: exchanges[i].request.frame.ts_first)
            await pilot.press("escape")
            await pilot.pause()
            assert len(app.shown) == len(exchanges) and app.list.picked is None
            # generations: members and assignments as each client received them
            app.open_view("groups")
            await pilot.pause()
            screen = app.screen
            await pilot.press("2")
            await pilot.pause()
            assert app.focused is screen.query_one("#generations-table")
            given = {
                (e["generation"], e["member_id"]): sorted(tuple(x) for x in e["assignment"])
                for c in clients.values()
                for e in c["events"]
                if e["event"] == "assign"
            }
            generations = ref[gid]["generations"]
            assert [int(x) for x in column(screen, "generations", "generation")] == [
                g["generation"] for g in generations
            ]
            for k, g in enumerate(generations):
                screen.query_one("#generations-table").move_cursor(row=k)
                await pilot.pause()
                members = screen.text("members")
                for m in g["members"]:
                    assert m["member_id"] in members
                    got = sorted((t, p) for t, ps in m["assignment"].items() for p in ps)
                    assert got == given[(g["generation"], m["member_id"])]
                    assert f"grp-joins[{','.join(str(p) for _, p in got)}]" in members if got else True
            screen.query_one("#generations-table").move_cursor(row=1)
            await pilot.press("enter")
            await pilot.pause()
            gen = generations[1]["generation"]
            expected = [  # the JoinGroups answered with it, the SyncGroups naming it
                i
                for i, e in enumerate(exchanges)
                if e.request.body.get("group_id") == gid
                and (
                    (e.api_key == 11 and e.response.body.get("generation_id") == gen)
                    or (e.api_key == 14 and e.request.body.get("generation_id") == gen)
                )
            ]
            assert sorted(app.shown) == expected and len(expected) >= 2 * len(generations[1]["members"])

    asyncio.run(go())


def test_burrow_status_per_group_and_partition_and_the_lag_plot():
    name = "group-lag"
    tr = truth(name)
    _, ref = reference(name)
    burrow = tr["expect"]["burrow"]

    async def go():
        app = AnalyzerApp(str(CAPTURES / f"{name}.pcap"))
        async with app.run_test(size=SIZE) as pilot:
            screen = await opened(app, pilot)
            await pilot.press("3")
            await pilot.pause()
            assert app.focused is screen.query_one("#partitions-table")
            seen = []
            for _ in range(len(burrow)):
                g = screen.group
                gid = g["group"]
                seen.append(gid)
                expected = burrow[gid]
                group_status = "ERR" if expected in ("STOP", "STALL", "REWIND") else expected
                assert f"Burrow: {group_status}" in str(screen.query_one("#lag-status").content)
                assert group_status in str(screen.query_one("#groups-head").content)
                assert set(column(screen, "partitions", "status")) == {expected}
                st = ref[gid]["status"]
                assert [int(x) for x in column(screen, "partitions", "lag")] == [
                    p["lag"] for p in st["partitions"]
                ]
                plot = screen.query_one(LagPlot)
                for k, p in enumerate(st["partitions"]):
                    screen.query_one("#partitions-table").move_cursor(row=k)
                    await pilot.pause()
                    rows = [
                        r
                        for r in ref[gid]["lag"]
                        if (r["topic"], r["partition"]) == (p["topic"], p["partition"])
                        and r["lag"] is not None
                    ]
                    assert plot.points == [(r["time"], r["lag"]) for r in rows]
                    assert f"{p['topic']}[{p['partition']}]" in str(plot.border_title)
                    if any(r["lag"] for r in rows):  # the peak labels the axis
                        assert plot.lines(60, 10)[0].lstrip().startswith(str(max(r["lag"] for r in rows)))
                await pilot.press("u")  # in seconds
                await pilot.pause()
                assert plot.seconds and plot.points == [
                    (r["time"], r["lag_seconds"])
                    for r in ref[gid]["lag"]
                    if (r["topic"], r["partition"]) == (p["topic"], p["partition"])
                    and r["lag_seconds"] is not None
                ]
                await pilot.press("u", "right_square_bracket")
                await pilot.pause()
            assert sorted(seen) == sorted(burrow) and screen.group["group"] == seen[0]
            await pilot.press("left_square_bracket")
            await pilot.pause()
            assert screen.group["group"] == seen[-1]

    asyncio.run(go())


def test_help_lists_the_groups_view_keys():
    from analyzer.tui.screens.help import KEYS

    keys = dict(KEYS)
    assert "[ / ]" in keys and "1 2 3 4" in keys and "u" in keys
    assert "rebalance" in keys["enter"] and "generation" in keys["enter"]


def test_the_view_follows_a_live_capture(monkeypatch):
    """A live capture (replayed): the open view shows the rebalances seen so far, then, as more
    packets arrive, the later ones, without being opened again."""
    monkeypatch.setattr(GroupsScreen, "POLL", 0.1)
    _, ref = reference("group-joins")
    (g,) = ref.values()
    src = GatedLive(CAPTURES / "group-joins.pcap", g["rebalances"][2]["end"] + 0.5)

    async def go():
        app = AnalyzerApp(src)
        async with app.run_test(size=SIZE) as pilot:
            try:
                await until_first_part(src, pilot)
                app.open_view("groups")
                await pilot.pause()
                screen = app.screen
                assert not app.done and isinstance(screen, GroupsScreen)
                shown = column(screen, "rebalances", "cause")
                # the last one of the first part is closed when the next begins (or at the end)
                assert 2 <= len(shown) <= 3 and shown == [r["cause"] for r in g["rebalances"]][: len(shown)]
                src.gate.set()
                await until_done(app, pilot, timeout=40, step=0.05)  # (the replay ends: the capture with it)
                await pilot.pause(0.5)
                assert app.screen is screen
                assert column(screen, "rebalances", "cause") == [r["cause"] for r in g["rebalances"]]
                assert "5 rebalances" in str(screen.query_one("#groups-head").content)
            finally:
                src.gate.set()
                src.stop()

    asyncio.run(go())


class _Empty:
    rebalances: list = []


@pytest.mark.parametrize("name", ["group-kip848", "group-static", "group-cooperative"])
def test_every_scenario_shows_its_timeline(name):
    """The other scenarios: as many rows as rebalances, each generation's members listed."""
    _, ref = reference(name)

    async def go():
        app = AnalyzerApp(str(CAPTURES / f"{name}.pcap"))
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await opened(app, pilot)
            g = ref[truth(name)["expect"]["group"]]
            while screen.group["group"] != g["group"]:
                await pilot.press("right_square_bracket")
            assert column(screen, "rebalances", "cause") == [r["cause"] for r in g["rebalances"]]
            await pilot.press("2")
            await pilot.pause()
            last = len(g["generations"]) - 1
            screen.query_one("#generations-table").move_cursor(row=last)
            await pilot.pause()
            members = screen.text("members")
            assert all(m["member_id"] in members for m in g["generations"][last]["members"])

    asyncio.run(go())
