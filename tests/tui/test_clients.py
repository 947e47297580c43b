"""The clients view (``:clients``) and the topology view (``:topology``) on the bundled captures,
against the exchanges themselves and the generated scenarios' truth: legacy clients (old
kafka-python, sarama) not ready for Kafka 4.x with exactly the versions they used that it
refuses, modern ones ready; the Metadata storm and the reconnect loop flagged on their client;
enter and ``r`` filtering the list to a client's (refused) exchanges; the topology of a
generated scenario equal to what its clients produced and consumed, enter on an edge showing
its exchanges; both views following a live capture."""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from pathlib import Path

import pytest

from analyzer.dissect import schema
from analyzer.dissect.message import Options
from analyzer.model import Exchange
from analyzer.pipeline import Analysis
from analyzer.session.clients import ClientTracker
from analyzer.session.consumption import host_of
from analyzer.tui.app import AnalyzerApp
from analyzer.tui.screens.clients import ClientsScreen
from analyzer.tui.screens.topology import TopologyScreen
from tests.helpers.tui_live import GatedLive, until_done, until_first_part

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = ROOT / "captures"
LEGACY = ["kafka-python-0.8.2-gzip", "kafka-python-0.9-none", "kafka-python-0.10.0-lz4", "sarama-zstd"]
MODERN = ["librdkafka-txn", "aiokafka-zstd", "group-kip848"]


def truth(name: str) -> dict:
    return json.loads((CAPTURES / f"{name}.truth.json").read_text())


def exchanges(name: str) -> list[Exchange]:
    """Every exchange of the capture, in the list's order (its row indexes)."""
    return [ev for ev in Analysis(CAPTURES / f"{name}.pcap", Options()).events() if type(ev) is Exchange]


def who(e: Exchange) -> tuple[str, str | None]:
    c = e.conn
    return host_of(str(c.client if c.client_direction is not None else c.a)), e.client_id


def broker(e: Exchange) -> str:
    c = e.conn
    return str(c.broker if c.client_direction is not None else c.b)


async def opened(app: AnalyzerApp, pilot, what: str):
    app.open_view(what)
    await pilot.pause()
    return app.screen


def cells(screen: ClientsScreen, name: str) -> list[str]:
    t = screen.query_one("#clients-table")
    i = [str(c.label) for c in t.ordered_columns].index(name)
    return [str(t.get_row_at(r)[i]) for r in range(t.row_count)]


@pytest.mark.parametrize("name", LEGACY + MODERN)
def test_readiness_names_exactly_the_versions_kafka_4_refuses(name):
    exs = exchanges(name)
    used: dict[tuple, set] = defaultdict(set)
    for e in exs:
        if e.request is not None and e.request.api_key is not None:
            used[who(e)].add((e.request.api_key, e.request.api_version))

    async def go():
        app = AnalyzerApp(str(CAPTURES / f"{name}.pcap"))
        async with app.run_test(size=(120, 35)) as pilot:
            await until_done(app, pilot)
            screen = await opened(app, pilot, "clients")
            assert isinstance(screen, ClientsScreen) and screen.target == "4.2"
            ids, ready, refused = cells(screen, "client_id"), cells(screen, "ready"), cells(screen, "refused")
            assert len(ids) == len(used)
            for row, r in enumerate(screen.clients):
                versions = used[(r["client"], r["client_id"])]
                want = sorted(
                    (k, v)
                    for k, v in versions
                    if schema.version_range(k) is not None and schema.removed(k, v)
                )
                names = [f"{schema.api_name(k)} v{v}" for k, v in want]
                assert refused[row].split(" old batches")[0].split(", ")[: len(names)] == names
                assert ready[row] == ("NOT READY" if name in LEGACY else "ready")
                screen.query_one("#clients-table").move_cursor(row=row)
                await pilot.pause()
                detail = str(screen.query_one("#client-detail").content)
                for (k, v), n in zip(want, names, strict=True):
                    count = sum(
                        1
                        for e in exs
                        if who(e) == (r["client"], r["client_id"]) and e.api_key == k and e.api_version == v
                    )
                    assert f"{n}: {count} requests; Kafka 4.2 accepts v" in detail
                # r: the list shows exactly the client's exchanges in those versions, the first selected
                await pilot.press("r")
                await pilot.pause()
                refused_rows = [
                    i
                    for i, e in enumerate(exs)
                    if who(e) == (r["client"], r["client_id"]) and (e.api_key, e.api_version) in set(want)
                ]
                if name in LEGACY and want:
                    assert not isinstance(app.screen, ClientsScreen)
                    assert sorted(app.shown) == refused_rows
                    assert app.current.index == refused_rows[0]
                    screen = await opened(app, pilot, "clients")
                else:
                    assert app.screen is screen  # nothing refused: the view stays, a note says so
            cov = str(screen.query_one("#clients-coverage").content)
            assert "readiness judged on the versions used while capturing" in cov
            # 3.9 removed nothing: every client ready
            for _ in range(3):
                await pilot.press("left_square_bracket")
            await pilot.pause()
            assert screen.target == "3.9" and set(cells(screen, "ready")) == {"ready"}
            assert "ready for Kafka 3.9" in str(screen.query_one("#clients-head").content)

    asyncio.run(go())


@pytest.mark.parametrize("name", ["client-metadata-storm", "client-reconnect-loop"])
def test_hygiene_flags_the_storm_and_the_reconnect_loop_on_their_client(name):
    doc = truth(name)
    exs = exchanges(name)

    async def go():
        app = AnalyzerApp(str(CAPTURES / f"{name}.pcap"))
        async with app.run_test(size=(120, 35)) as pilot:
            await until_done(app, pilot)
            screen = await opened(app, pilot, "clients")
            flags = dict(zip(cells(screen, "client_id"), cells(screen, "hygiene"), strict=True))
            if name == "client-metadata-storm":
                bad, good = doc["expect"]["storm_client"], doc["expect"]["good_client"]
                assert "Metadata loop" in flags[bad] and "Metadata storm" in flags[bad]
                assert flags[good] == ""
                row = cells(screen, "client_id").index(bad)
            else:
                bad = doc["expect"]["flappy_client"]
                assert "reconnections within 100 ms" in flags[bad]
                row = cells(screen, "client_id").index(bad)
            screen.query_one("#clients-table").move_cursor(row=row)
            await pilot.pause()
            detail = str(screen.query_one("#client-detail").content)
            assert "  ! " in detail
            # enter: the list filtered to that client's exchanges, every one of them
            await pilot.press("enter")
            await pilot.pause()
            r = screen.clients[row]
            mine = [i for i, e in enumerate(exs) if who(e) == (r["client"], r["client_id"])]
            assert sorted(app.shown) == mine and app.filter_text.startswith("client == ")

    asyncio.run(go())


def reference_edges(name: str) -> list[dict]:
    a = Analysis(CAPTURES / f"{name}.pcap")
    tracker = ClientTracker(a.knowledge.topic_ids)
    a.run(tracker)
    return tracker.edges()


def tree_edges(screen: TopologyScreen) -> tuple[dict, dict]:
    """The tree's edges summed over the brokers: produce (client id, topic) and fetch (topic,
    group or client id) -> [records, bytes]."""
    produce: dict = defaultdict(lambda: [0, 0])
    fetch: dict = defaultdict(lambda: [0, 0])
    for n in screen.query_one("#topology-tree").nodes():
        if n.kind is None:
            continue
        _, host, cid, _broker, kind, topic = n.key
        if kind == "produce":
            e = produce[(cid, topic)]
        else:
            e = fetch[(topic, f"group {n.group}" if n.group else cid)]
        e[0] += n.records
        e[1] += n.bytes
    return dict(produce), dict(fetch)


def test_topology_is_what_the_scenario_clients_produced_and_consumed():
    name = "group-lag"
    doc = truth(name)
    produced: dict = defaultdict(int)
    consumed: dict = defaultdict(int)
    for c in doc["clients"].values():
        for e in c["events"]:
            if e["event"] == "delivery" and not e.get("error"):
                produced[(c["config"]["client.id"], e["topic"])] += 1
            if e["event"] == "consumed":
                consumed[(e["topic"], f"group {c['group']}")] += 1
    ref = reference_edges(name)
    exs = exchanges(name)

    async def go():
        app = AnalyzerApp(str(CAPTURES / f"{name}.pcap"))
        async with app.run_test(size=(80, 24)) as pilot:
            await until_done(app, pilot)
            screen = await opened(app, pilot, "topology")
            assert isinstance(screen, TopologyScreen)
            produce, fetch = tree_edges(screen)
            assert {k: v[0] for k, v in produce.items()} == dict(produced)
            assert set(fetch) == set(consumed)
            for k, n in consumed.items():
                assert fetch[k][0] >= n  # a consumer fetches ahead of what it hands out
            # the same numbers as the topology command's edges
            assert {
                (e["from"], e["to"]): [e["records"], e["bytes"]] for e in ref if e["kind"] == "produce"
            } == produce
            assert {
                (e["from"], e["to"]): [e["records"], e["bytes"]] for e in ref if e["kind"] == "fetch"
            } == fetch
            # the keyboard: down to the first edge, enter: exactly its exchanges in the list
            tree = screen.query_one("#topology-tree")
            while tree.cursor_node.data.kind is None:
                await pilot.press("down")
            edge = tree.cursor_node.data
            assert str(screen.query_one("#topology-detail").content).startswith(edge.detail.split(": ")[0])
            await pilot.press("enter")
            await pilot.pause()
            _, host, cid, brk, kind, topic = edge.key
            api = 0 if kind == "produce" else 1
            want = [
                i
                for i, e in enumerate(exs)
                if who(e) == (host, cid) and broker(e) == brk and e.api_key == api and topic in e.topics
            ]
            assert want and sorted(app.shown) == want
            # f on a client: all its exchanges
            screen = await opened(app, pilot, "topology")
            tree = screen.query_one("#topology-tree")
            tree.move_cursor(tree.root.children[0])
            await pilot.pause()
            client = tree.cursor_node.data
            await pilot.press("f")
            await pilot.pause()
            assert sorted(app.shown) == [i for i, e in enumerate(exs) if who(e) == client.key[1:]]

    asyncio.run(go())


@pytest.mark.parametrize("what", ["clients", "topology"])
def test_the_views_follow_a_live_capture(monkeypatch, what):
    """A live capture (replayed): the open view shows the clients and records seen so far, then,
    as more packets arrive, the rest, without being opened again."""
    monkeypatch.setattr(ClientsScreen, "POLL", 0.1)
    monkeypatch.setattr(TopologyScreen, "POLL", 0.1)
    name = "group-lag"
    exs = exchanges(name)
    cut = exs[len(exs) // 3].request.frame.ts_first
    src = GatedLive(CAPTURES / f"{name}.pcap", cut)
    a = Analysis(CAPTURES / f"{name}.pcap")
    tracker = ClientTracker(a.knowledge.topic_ids)
    a.run(tracker)
    ref, rows = tracker.edges(), tracker.rows()
    total = sum(e["records"] for e in ref if e["kind"] == "produce")

    def requests(screen: ClientsScreen) -> int:
        return sum(x["count"] for r in screen.clients for x in r["apis"])

    async def go():
        app = AnalyzerApp(src)
        async with app.run_test(size=(80, 24)) as pilot:
            try:
                await until_first_part(src, pilot)
                screen = await opened(app, pilot, what)
                assert not app.done
                head = str(screen.query_one(f"#{what}-head").content)
                assert "partial" in head
                if what == "topology":
                    early, _ = tree_edges(screen)
                    assert 0 < sum(v[0] for v in early.values()) < total
                else:
                    assert 0 < requests(screen) < sum(x["count"] for r in rows for x in r["apis"])
                src.gate.set()
                await until_done(app, pilot, timeout=40, step=0.05)  # (the replay ends: the capture with it)
                await pilot.pause(0.5)
                assert app.screen is screen
                assert "partial" not in str(screen.query_one(f"#{what}-head").content)
                if what == "topology":
                    produce, _ = tree_edges(screen)
                    want = {
                        (e["from"], e["to"]): [e["records"], e["bytes"]]
                        for e in ref
                        if e["kind"] == "produce"
                    }
                    assert produce == want
                else:
                    assert [r["apis"] for r in screen.clients] == [r["apis"] for r in rows]
                    assert cells(screen, "client_id") == [r["client_id"] for r in rows]
            finally:
                src.gate.set()
                src.stop()

    asyncio.run(go())


def test_help_and_the_command_line_name_the_views():
    from analyzer.tui.screens.command import parse_command
    from analyzer.tui.screens.help import KEYS

    keys = [k for k, _ in KEYS]
    assert ":clients" in keys and ":topology" in keys
    assert parse_command("clients") == "clients" and parse_command("topo") == "topology"


def test_the_filters_of_a_client_compile_for_any_address_and_name():
    """IPv6 hosts in brackets, quotes in client ids and topics escaped, no client id."""
    from analyzer.filter import compile_filter
    from analyzer.tui.clients import client_filter, flow_filter

    for f in (
        client_filter("10.0.0.5", None),
        client_filter("[::1]", 'a"b\\c'),
        client_filter("fe80::1", "x"),
        flow_filter("[fe80::1]", "x", "[fe80::1]:9092", "fetch", 't"1'),
    ):
        compile_filter(f)
    assert client_filter("fe80::1", None) == "client == [fe80::1] and not client_id"
