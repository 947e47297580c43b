"""Pilot-driven tests of the TUI (textual's ``App.run_test``, run with ``asyncio.run``)."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from rich.style import Style
from textual.css.query import NoMatches

from analyzer.dissect.message import Options
from analyzer.model import Exchange, Severity
from analyzer.pipeline import Analysis
from analyzer.session.report import api_text
from analyzer.session.stats import error_names
from analyzer.tui.app import AnalyzerApp
from analyzer.tui.screens.stats import StatsScreen
from analyzer.tui.widgets.detail_tree import DetailTree
from analyzer.tui.widgets.hex_view import HexView

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = ROOT.parent / "shared" / "captures" / "public"
SW8 = PUBLIC / "deepflow_00-produce-v7-sw8.pcap"
NDPI = PUBLIC / "ndpi_kafka.pcapng"
GZIP = ROOT / "captures" / "librdkafka-produce-consume-gzip.pcap"

SIZE = (160, 50)


def need(path: Path) -> Path:
    if not path.is_file():
        pytest.skip(f"capture not available: {path}")
    return path


def pipeline_exchanges(path: Path) -> list[Exchange]:
    a = Analysis(path, Options(records_bodies=True))
    return [ev for ev in a.events() if type(ev) is Exchange]


async def wait_done(app: AnalyzerApp, pilot, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not app.done:
        assert loop.time() < end, "analysis did not finish"
        await pilot.pause(0.02)
    await pilot.pause()


@asynccontextmanager
async def started(path, size=SIZE):
    app = AnalyzerApp(str(path))
    async with app.run_test(size=size) as pilot:
        await wait_done(app, pilot)
        yield app, pilot


def widget_text(app: AnalyzerApp, selector: str) -> str:
    return str(app.screen.query_one(selector).content)


def rendered_highlight(hv: HexView) -> tuple[set[int], set[int]]:
    """Byte offsets drawn with the highlight style: (in the hex column, in the ascii column)."""
    hl: Style = hv.get_component_rich_style("hexview--highlight")
    n = hv.bytes_per_row
    hex_on: set[int] = set()
    ascii_on: set[int] = set()
    for row in range(hv.rows):
        segs = hv.row_segments(row)
        sep = next(i for i, s in enumerate(segs) if s.text.startswith("│"))
        cells = [s for s in segs[2:sep] if len(s.text) == 2]  # after the offset and its gap
        assert len(cells) == min(n, len(hv.data) - row * n)
        hex_on.update(row * n + k for k, s in enumerate(cells) if s.style == hl)
        chars = segs[sep + 1 :]
        ascii_on.update(row * n + k for k, s in enumerate(chars) if s.style == hl)
    return hex_on, ascii_on


def has_errors(ex: Exchange) -> bool:
    return bool(error_names(ex.response)) or any(i.severity >= Severity.WARNING for i in ex.all_issues())


def tree_of(f):
    if f is None:
        return None
    return [(x.name, x.type, repr(x.value), x.offset, x.length, x.display) for x in f.walk()]


def all_captures() -> list[Path]:
    out = sorted(PUBLIC.glob("*.pcap*")) if PUBLIC.is_dir() else []
    return out + [GZIP] if GZIP.is_file() else out


# -- tests ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [SW8, NDPI], ids=lambda p: p.name)
def test_rows_match_pipeline(path):
    need(path)
    expected = pipeline_exchanges(path)

    async def go():
        async with started(path) as (app, _pilot):
            table = app.query_one("#exchanges")
            assert len(app.rows) == len(expected) > 0
            assert table.row_count == len(expected)
            # rows in arrival order; the list in request-time order
            assert [r.corr for r in app.rows] == [e.correlation_id for e in expected]
            assert [r.api_key for r in app.rows] == [e.api_key for e in expected]
            assert sorted(app.shown) == list(range(len(expected)))
            times = [expected[i].ts for i in app.shown]
            assert times == sorted(times)
            assert f"{len(expected)} exchanges" in widget_text(app, "#status")
            assert app.exit_code == 0
            assert not app.query_one("#message").has_class("shown")

    asyncio.run(go())


def test_produce_tree_and_hex_highlight():
    need(SW8)

    async def go():
        async with started(SW8) as (app, pilot):
            produce = [r.index for r in app.rows if r.api_key == 0]
            assert produce
            assert app.select_exchange(produce[0])
            await pilot.pause()
            tree = app.query_one(DetailTree)
            hv = app.query_one("#hex-request", HexView)
            rv = app.query_one("#hex-response", HexView)
            ex = app.view
            assert ex.api_key == 0 and ex.api_version == 7
            # request and response: each frame in its own hex view
            assert hv.data == bytes(ex.request.frame.payload)
            assert rv.data == bytes(ex.response.frame.payload)
            # the topic name is visible without any expansion
            assert any("quickstart-events" in label for label in tree.all_labels())

            # the record header key sw8, inside the (folded) record batch
            sw8 = app.find_field("request", lambda f: f.name == "key" and f.value == "sw8")
            assert sw8 is not None
            assert app.reveal_field("request", sw8)
            await pilot.pause()
            node = tree.cursor_node
            assert node is not None and node.data.field is sw8
            assert "sw8" in str(node.label)
            assert node.parent.data.field.name == "header"
            assert any(str(lab).startswith("key: 'sw8'") for lab in tree.all_labels())
            assert hv.highlight == (sw8.offset, sw8.offset + sw8.length)

            # the topic-name node: its bytes, and only those, are highlighted
            name = app.find_field(
                "request",
                lambda f: f.name == "name" and f.type == "string" and f.value == "quickstart-events",
            )
            assert name is not None
            assert app.reveal_field("request", name)
            await pilot.pause()
            assert tree.cursor_node.data.field is name
            span = set(range(name.offset, name.offset + name.length))
            assert hv.data == bytes(ex.request.frame.payload)
            assert hv.highlight == (name.offset, name.offset + name.length)
            hex_on, ascii_on = rendered_highlight(hv)
            assert hex_on == span and ascii_on == span
            assert bytes(hv.data[name.offset + 2 : name.offset + name.length]) == b"quickstart-events"

            # moving the tree cursor with the keyboard moves the highlight
            tree.focus()
            await pilot.press("down")
            await pilot.pause()
            nxt = tree.cursor_node.data.field
            assert nxt is not None and nxt is not name
            assert hv.highlight == (nxt.offset, nxt.offset + nxt.length)

            assert rv.highlight is None  # the response's view is untouched
            # a response field: highlighted in the response's view; the request's keeps its own
            err = app.find_field("response", lambda f: f.name == "error_code")
            assert err is not None and app.reveal_field("response", err)
            await pilot.pause()
            assert rv.data == bytes(ex.response.frame.payload)
            assert rv.highlight == (err.offset, err.offset + err.length)
            assert hv.data == bytes(ex.request.frame.payload)
            assert hv.highlight == (nxt.offset, nxt.offset + nxt.length)
            # r: focus the other message's hex view, r again: back
            await pilot.press("r")
            await pilot.pause()
            assert app.hex_kind == "request" and app.focused is hv
            await pilot.press("r")
            await pilot.pause()
            assert app.hex_kind == "response" and app.focused is rv

    asyncio.run(go())


def test_decompressed_fields_highlight_in_decompressed_bytes():
    need(GZIP)

    expected = pipeline_exchanges(GZIP)
    rows = [
        i
        for i, e in enumerate(expected)
        if e.api_key == 0
        and e.request is not None
        and any(f.type == "decompressed" for f in e.request.body.walk())
    ]
    if not rows:
        pytest.skip("no compressed Produce batch in the capture")

    async def go():
        async with started(GZIP) as (app, pilot):
            app.select_exchange(rows[0])
            await pilot.pause()
            container = app.find_field("request", lambda f: f.type == "decompressed")
            key = next(f for f in container.walk() if f.name == "key" and f.type == "bytes")
            assert app.reveal_field("request", key)
            await pilot.pause()
            hv = app.query_one("#hex-request", HexView)
            assert hv.data == bytes(container.value)
            assert "decompressed" in hv.title
            assert hv.highlight == (key.offset, key.offset + key.length)
            hex_on, _ = rendered_highlight(hv)
            assert hex_on == set(range(key.offset, key.offset + key.length))
            # the decompressed container itself spans compressed bytes of the frame
            assert app.reveal_field("request", container)
            await pilot.pause()
            assert hv.data == bytes(app.view.request.frame.payload)
            assert hv.highlight == (container.offset, container.offset + container.length)

    asyncio.run(go())


def test_filter():
    need(NDPI)
    expected = pipeline_exchanges(NDPI)

    async def go():
        async with started(NDPI) as (app, pilot):
            table = app.query_one("#exchanges")
            inp = app.query_one("#filter")

            async def apply(text: str, typed: bool = False) -> list:
                if typed:  # with the keys (slow: a few only)
                    await pilot.press("escape", "slash")
                    assert app.focused is inp
                    inp.value = ""
                    await pilot.press(*text, "enter")
                else:
                    app.set_filter(text)
                await pilot.pause()
                return [expected[i] for i in app.shown]

            def in_time_order(exchanges: list) -> list:
                return sorted(exchanges, key=lambda e: e.ts)

            # a bare word matches the API name, the topics or the client id
            shown = await apply("produce", typed=True)
            assert inp.value == "produce"
            want = in_time_order([e for e in expected if e.api_key == 0 or "produce" in (e.client_id or "")])
            assert table.row_count == len(shown) == len(want) > 0
            assert [e.correlation_id for e in shown] == [e.correlation_id for e in want]

            # api: looks at the API column only (Produce and InitProducerId here)
            shown = await apply("api:produce")
            want = in_time_order(
                [e for e in expected if "produce" in api_text(e.api_key, e.api_version).lower()]
            )
            assert {e.api_key for e in want} == {0, 22}
            assert table.row_count == len(shown) == len(want)
            assert [e.correlation_id for e in shown] == [e.correlation_id for e in want]

            shown = await apply("errors")
            assert table.row_count == len(shown) == sum(1 for e in expected if has_errors(e)) > 0
            assert all(has_errors(e) for e in shown)

            shown = await apply("sampletopic")
            assert shown and all("sampleTopic" in e.topics for e in shown)
            # the match count comes first on the status line (80 columns cut its end)
            st = widget_text(app, "#status")
            assert st.startswith(f"{len(shown)} of {len(expected)} match (sampletopic)  "), st

            shown = await apply("client:console-producer api:produce")  # terms are ANDed
            assert [(e.client_id, e.api_key) for e in shown] == [
                ("console-producer", 22),
                ("console-producer", 0),
            ]

            shown = await apply("no-such-thing")
            assert table.row_count == 0 and app.current is None

            # typing q in the filter does not quit
            shown = await apply("q", typed=True)
            assert app.is_running and inp.value == "q"

            shown = await apply("")
            assert table.row_count == len(expected)
            assert app.focused is table
            assert "match" not in widget_text(app, "#status")

    asyncio.run(go())


def test_next_error_key():
    need(NDPI)
    expected = pipeline_exchanges(NDPI)
    want = [i for i, e in enumerate(expected) if has_errors(e)]
    assert want

    async def go():
        async with started(NDPI) as (app, pilot):
            seen = []
            for _ in range(len(want) + 1):
                await pilot.press("e")
                await pilot.pause()
                assert app.current.has_errors
                seen.append(app.current.index)
                assert app.query_one("#exchanges").cursor_row == app.shown.index(app.current.index)
            start = want.index(seen[0])
            assert seen == [want[(start + k) % len(want)] for k in range(len(want) + 1)]

    asyncio.run(go())


def test_stats_screen():
    need(NDPI)

    async def go():
        async with started(NDPI, size=(160, 120)) as (app, pilot):
            await pilot.press("s")
            await pilot.pause()
            assert isinstance(app.screen, StatsScreen)
            text = "\n".join(str(w.content) for w in app.screen.query(".stats-title"))
            for needle in (
                "Requests per API",
                "Topics",
                "Clients",
                "Connections",
                "Anomalies",
                "17 Kafka exchanges",
            ):
                assert needle in text, needle
            screen = app.screen
            apis = screen.section_text("apis")
            assert "p95_ms" in apis and "Produce" in apis and "Metadata" in apis
            assert "LB_MAIN_LOG_INPUT" in screen.section_text("topics")
            assert "pairing.no_response" in screen.section_text("anomalies")
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, StatsScreen)
            assert app.query_one("#exchanges") is not None

    asyncio.run(go())


@pytest.mark.parametrize("kind", ["missing", "not-a-capture", "truncated"])
def test_bad_input_shows_a_message(kind, tmp_path):
    if kind == "missing":
        path, code, needle = tmp_path / "nope.pcap", 2, "no such file"
    elif kind == "not-a-capture":
        path, code, needle = tmp_path / "junk.pcap", 2, "Not a capture file"
        path.write_bytes(b"this is not a capture\x00\x01\x02" * 10)
    else:
        raw = need(SW8).read_bytes()
        path, code, needle = tmp_path / "cut.pcap", 1, "Capture damaged"
        path.write_bytes(raw[: len(raw) - 40])

    async def go():
        async with started(path) as (app, pilot):
            msg = app.query_one("#message")
            assert msg.has_class("shown")
            assert needle in str(msg.content)
            assert app.exit_code == code
            # the rest of the UI still works
            await pilot.press("s")
            await pilot.pause()
            assert isinstance(app.screen, StatsScreen)
            await pilot.press("escape")
            await pilot.press("e", "r", "tab")
            await pilot.pause()
            assert app.is_running

    asyncio.run(go())


def test_q_quits():
    need(SW8)

    async def go():
        async with started(SW8) as (app, pilot):
            await pilot.press("q")
            await pilot.pause()
            assert app.return_code == 0
            assert not app.is_running

    asyncio.run(go())


def test_live_status_tick_while_the_app_closes():
    """The live status timer belongs to the app and can tick once more while the screen's widgets
    are being removed on exit (a CI run failed so: NoMatches for StatusBar); a tick then does
    nothing."""

    async def go():
        async with started(GZIP) as (app, pilot):
            app._live_tick()  # running: the status bar is refreshed
            await pilot.press("q")
            await pilot.pause()
        assert not app.is_running
        app._live_tick()
        with pytest.raises(NoMatches):  # what the tick did before: the widgets are gone
            app._update_status()

    asyncio.run(go())


def test_save_screenshot(tmp_path):
    need(SW8)

    async def go():
        async with started(SW8) as (app, _pilot):
            name = app.save_screenshot(filename="tui.svg", path=str(tmp_path))
            return Path(name)

    out = asyncio.run(go())
    assert out.is_file()
    text = out.read_text()
    assert text.lstrip().startswith("<svg") and "Produce" in text


# -- views, keys, layout ----------------------------------------------------------------------------------

TXN = ROOT / "captures" / "librdkafka-txn.pcap"


async def command(pilot, text: str) -> None:
    await pilot.press("colon")
    await pilot.pause()
    await pilot.press(*text, "enter")
    await pilot.pause()


def test_sort_keys_and_monotonic_time_order():
    from analyzer.tui.rows import COLUMNS

    expected = pipeline_exchanges(TXN)

    async def go():
        async with started(TXN) as (app, pilot):
            table = app.query_one("#exchanges")
            times = [expected[i].ts for i in app.shown]
            assert times == sorted(times)
            # completion order differs from request-time order in this capture
            assert app.shown != list(range(len(expected)))
            assert "time▲" in table.header_text()
            seen = set()
            for _ in range(len(table.visible_columns())):
                await pilot.press("o")
                await pilot.pause()
                col = app.order.sort
                seen.add(col)
                key = COLUMNS[col].key
                keys = [key(app.rows[i]) for i in app.shown]
                assert keys == sorted(keys), COLUMNS[col].name
                assert f"{COLUMNS[col].name}▲" in table.header_text()
                await pilot.press("O")
                await pilot.pause()
                keys = [key(app.rows[i]) for i in app.shown]
                assert keys == sorted(keys, reverse=True)
                assert f"{COLUMNS[col].name}▼" in table.header_text()
            assert seen == set(table.visible_columns())
            assert app.order.sort == COLUMNS.index(COLUMNS[1])  # back to time

    asyncio.run(go())


def test_vim_keys_move_the_cursor():
    async def go():
        async with started(TXN, size=(120, 35)) as (app, pilot):
            table = app.query_one("#exchanges")
            table.focus()
            await pilot.press("g")
            assert table.cursor_row == 0
            await pilot.press("j", "j", "j")
            await pilot.pause()
            assert table.cursor_row == 3 and app.current.index == app.shown[3]
            await pilot.press("k")
            assert table.cursor_row == 2
            await pilot.press("G")
            await pilot.pause()
            assert table.cursor_row == len(app.shown) - 1
            assert app.current.index == app.shown[-1]
            await pilot.press("ctrl+u")
            half = max(1, table._page // 2)
            assert table.cursor_row == len(app.shown) - 1 - half
            await pilot.press("ctrl+d")
            assert table.cursor_row == len(app.shown) - 1
            await pilot.press("g", "enter")
            await pilot.pause()
            tree = app.query_one(DetailTree)
            assert app.focused is tree
            line = tree.cursor_line
            await pilot.press("j", "j")
            assert tree.cursor_line == line + 2
            await pilot.press("k")
            assert tree.cursor_line == line + 1

    asyncio.run(go())


def test_command_line_views_and_back():
    from analyzer.tui.screens.connections import ConnectionsScreen
    from analyzer.tui.screens.groups import GroupsScreen
    from analyzer.tui.screens.help import HelpScreen
    from analyzer.tui.screens.io import IOScreen
    from analyzer.tui.screens.issues import IssuesScreen

    expected = pipeline_exchanges(TXN)

    async def go():
        async with started(TXN, size=(160, 50)) as (app, pilot):
            await command(pilot, "conn")
            screen = app.screen
            assert isinstance(screen, ConnectionsScreen)
            text = screen.text()
            assert "gen-librdkafka-txn" in text and "rdkafka-2.16.0" in text
            conns = {e.conn.id for e in expected}
            assert len(screen.rows) == len(conns)
            first = screen.rows[0]
            assert first["exchanges"] == sum(1 for e in expected if e.conn.id == first["id"])
            # enter: that connection's exchanges
            await pilot.press("enter")
            await pilot.pause()
            assert not isinstance(app.screen, ConnectionsScreen)
            assert app.conn_scope == first["id"]
            assert sorted(app.shown) == [i for i, e in enumerate(expected) if e.conn.id == first["id"]]
            assert f"connection {first['id']}" in app.query_one("#exchanges").border_title
            await pilot.press("escape")
            await pilot.pause()
            assert app.conn_scope is None and len(app.shown) == len(expected)

            await command(pilot, "groups")
            assert isinstance(app.screen, GroupsScreen)
            brokers = app.screen.text("brokers")
            assert "127.0.0.1:43545" in brokers and "127.0.0.1:45069" in brokers
            # no consumer group in this capture: the view says so
            assert "no consumer groups seen" in "\n".join(
                str(w.content) for w in app.screen.query(".view-empty")
            )
            await command(pilot, "stats")  # one view replaces another
            assert isinstance(app.screen, StatsScreen)
            assert len(app.screen_stack) == 2
            assert "p50" in str(app.screen.query_one("#stats-latency").content)
            await command(pilot, "io")
            assert isinstance(app.screen, IOScreen)
            spark = app.screen.query_one("#io-requests")
            assert sum(spark.data) * app.screen.series["step"] == pytest.approx(len(expected))
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            assert "ctrl+d" in str(app.screen.query_one("#help-keys").content.columns[0]._cells)
            await command(pilot, "issu")  # a unique prefix
            assert isinstance(app.screen, IssuesScreen)
            await command(pilot, "nonsense")
            assert isinstance(app.screen, IssuesScreen)
            await command(pilot, "ex")
            assert app.screen is app.screen_stack[0]
            await pilot.press("escape")
            assert app.is_running

    asyncio.run(go())


def test_issues_view_jumps_to_each_exchange():
    from textual.widgets import Tree

    from analyzer.tui.screens.issues import IssuesScreen

    expected = pipeline_exchanges(TXN)

    async def go():
        async with started(TXN, size=(160, 50)) as (app, pilot):
            app.set_filter("produce")  # the jump clears a filter that hides the exchange
            await pilot.pause()
            await command(pilot, "issues")
            screen = app.screen
            assert isinstance(screen, IssuesScreen)
            codes = [g.code for g in screen.groups]
            kafka = next(g for g in screen.groups if g.code.startswith("kafka."))
            name = kafka.code[6:]
            assert kafka.rows == [i for i, e in enumerate(expected) if name in error_names(e.response)]
            assert len(codes) == len(set(codes))
            tree = screen.query_one(Tree)
            node = next(n for n in tree.root.children if kafka.code in str(n.label))
            node.expand()
            await pilot.pause()
            target = node.children[-1].data
            tree.move_cursor(node.children[-1])
            await pilot.press("enter")
            await pilot.pause()
            assert not isinstance(app.screen, IssuesScreen)
            assert app.current.index == target
            assert name in app.current.flags[0]
            assert app.shown[app.query_one("#exchanges").cursor_row] == target

    asyncio.run(go())


def test_records_table_and_export(tmp_path, monkeypatch):
    import orjson

    from analyzer.export.jsonout import exchange_json
    from analyzer.session.records import iter_records
    from analyzer.tui.screens.records import RecordsScreen, bytes_text

    monkeypatch.chdir(tmp_path)
    a = Analysis(GZIP, Options(records_bodies=True))
    expected = [ev for ev in a.events() if type(ev) is Exchange]
    ids = a.knowledge.topic_ids
    fetch = next(
        i
        for i, e in enumerate(expected)
        if e.api_key == 1 and e.response is not None and any(iter_records(e.response))
    )
    want = list(iter_records(expected[fetch].response, ids))
    assert want[0].topic == "rdk-gzip"  # Fetch v13+ names topics by id: the table shows names

    async def go():
        async with started(GZIP) as (app, pilot):
            assert app.select_exchange(fetch)
            await pilot.pause()
            await pilot.press("v")
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, RecordsScreen)
            rows = [r for r in screen.rows if r["msg"] == "response"]
            assert [(r["topic"], r["partition"], r["offset"]) for r in rows] == [
                (w.topic, w.partition, w.offset) for w in want
            ]
            assert [r["value"] for r in rows] == [bytes_text(w.value) for w in want]
            assert [r["key"] for r in rows] == [bytes_text(w.key) for w in want]
            assert all(r["timestamp"].endswith("Z") for r in rows)
            assert "value" in screen.text()
            await pilot.press("escape")
            await pilot.pause()

            await pilot.press("x")
            await pilot.pause()
            path = tmp_path / f"kafka-exchange-{fetch + 1}.json"
            assert app.exported == str(path)
            got = orjson.loads(path.read_bytes())
            assert got == orjson.loads(orjson.dumps(exchange_json(expected[fetch])))
            await pilot.press("y")
            await pilot.pause()
            assert orjson.loads(app.clipboard) == got

    asyncio.run(go())


def test_narrow_terminal_80x24():
    async def go():
        async with started(TXN, size=(80, 24)) as (app, pilot):
            table = app.query_one("#exchanges")
            head = table.header_text()
            for name in ("time", "API", "corr", "latency", "!"):
                assert name in head, name
            assert "client -> broker" not in head
            assert table.size.height - 1 >= 7  # the header and at least seven exchanges
            assert not app.query_one("#hex").display  # hex starts hidden when narrow
            row = table.row_text(0)
            assert "ms" in row and len(row) <= 200
            await pilot.press("w")
            assert app.query_one("#hex").display
            await pilot.press("z")  # list only
            await pilot.pause()
            assert not app.query_one("#detail").display
            assert table.size.height > 15
            await pilot.press("z")  # detail only
            await pilot.pause()
            assert not table.display and app.query_one("#detail").display
            await pilot.press("z")
            await pilot.pause()
            assert table.display and app.query_one("#detail").display
            await pilot.press("t")
            assert app.theme == "textual-light"
            await pilot.press("t")
            assert app.theme == "textual-dark"

    asyncio.run(go())


def test_stdin_source_decodes_from_the_spool():
    expected = pipeline_exchanges(GZIP)

    async def go():
        with open(GZIP, "rb") as f:
            app = AnalyzerApp(f, name="-")
            async with app.run_test(size=SIZE) as pilot:
                await wait_done(app, pilot)
                assert len(app.rows) == len(expected)
                last = [i for i in app.shown if expected[i].api_key == 1 and expected[i].response][-1]
                assert app.select_exchange(last)
                await pilot.pause()
                want = expected[last]
                assert bytes(app.view.request.frame.payload) == bytes(want.request.frame.payload)
                assert tree_of(app.view.response.body) == tree_of(want.response.body)
                assert app.exit_code == 0
                assert "-  done" in widget_text(app, "#status")

    asyncio.run(go())


def test_display_filter_in_the_filter_bar():
    """The bar takes the one display-filter language: fields of the exchange and decoded fields;
    an invalid expression is reported and leaves the list as it was."""
    expected = pipeline_exchanges(GZIP)

    async def go():
        async with started(GZIP) as (app, pilot):

            async def apply(text: str) -> list:
                app.set_filter(text)
                await pilot.pause()
                return [expected[i] for i in app.shown]

            def keys(exs):
                return sorted((e.conn.id, e.correlation_id) for e in exs)

            shown = await apply("api == Produce and latency > 0.05ms")
            want = [e for e in expected if e.api_key == 0 and e.latency is not None and e.latency > 0.00005]
            assert keys(shown) == keys(want) and 0 < len(want) < len(expected)
            assert app.query_one("#exchanges").row_count == len(want)

            shown = await apply("produce.acks == -1")  # a decoded field: decoded again from the spool
            want = [e for e in expected if e.api_key == 0 and e.request.body.get("acks") == -1]
            assert keys(shown) == keys(want) and want

            before = list(app.shown)
            await apply("api == Prodce")
            assert app.shown == before and app.filter_error is not None
            assert "Prodce" in app.filter_error.message

            shown = await apply("")
            assert len(shown) == len(expected)

    asyncio.run(go())


@pytest.mark.parametrize("name", ["librdkafka-txn.pcap", "kafka-python-0.10.0-none.pcap"])
def test_record_labels_show_the_record_shape(name):
    """Batch / message nodes show the export's batch keys; record nodes their absolute offset and
    time (and the marker type of control records), for magic 1 and 2 alike."""
    from analyzer.dissect.records import entry_records
    from analyzer.tui.widgets.labels import field_label

    seen = set()
    for ex in pipeline_exchanges(need(ROOT / "captures" / name)):
        if ex.api_key != 1 or ex.response is None:
            continue
        for f in ex.response.body.walk():
            if f.type not in ("record_batch", "message"):
                continue
            s = f.value
            label = str(field_label(f))
            assert f"magic={s['magic']}" in label and f"record_count={s['record_count']}" in label
            recs = list(entry_records(f))
            if f.type == "record_batch":
                kids = [c for c in f.walk() if c.type == "record"]
                for r, rec in zip(kids, recs, strict=True):
                    assert f"offset {rec.offset}, " in str(field_label(r))
                    if rec.control:
                        assert str(field_label(r)).count(rec.control_type) >= 1
                        seen.add(rec.control_type)
            seen.add(s["magic"])
    assert seen & {1, 2}
    if name == "librdkafka-txn.pcap":
        assert {"COMMIT", "ABORT"} <= seen


def test_display_filter_given_on_the_command_line():
    """``tui -Y EXPR``: the filter bar starts with EXPR, rows are filtered as they stream in."""

    async def go():
        app = AnalyzerApp(str(GZIP), display_filter="api == Produce")
        async with app.run_test(size=SIZE) as pilot:
            await wait_done(app, pilot)
            assert app.filter_text == "api == Produce"
            assert app.shown and all(app.rows[i].api_key == 0 for i in app.shown)
            assert len(app.shown) == sum(1 for r in app.rows if r.api_key == 0)
            assert app.query_one("#filter").value == "api == Produce"

    asyncio.run(go())


def test_filter_validated_as_typed_with_count_and_history():
    """Typing validates at once: an error says what and where (the range marked in the hint),
    a valid filter shows its match count once applied; Enter remembers it; up and down walk
    the history; esc twice on a bad filter goes back to the one in force."""
    from analyzer.tui.widgets.filter_bar import FilterBar
    from analyzer.tui.widgets.filter_hint import FilterHint

    expected = pipeline_exchanges(GZIP)
    produce = sum(1 for e in expected if e.api_key == 0)

    async def go():
        async with started(GZIP, size=(100, 30)) as (app, pilot):
            bar, hint = app.query_one(FilterBar), app.query_one(FilterHint)
            await pilot.press("slash")
            assert app.focused is bar and hint.display
            await pilot.press(*"api == Prodce")
            await pilot.pause()
            text = str(hint.content)
            assert text.startswith("✗ ") and "Prodce" in text and "(at 7)" in text, text
            # the offending range is marked: the span of the bad value has the error style
            marked = [s for s in hint.content.spans if "on red" in str(s.style)]
            plain = hint.content.plain
            assert [plain[s.start : s.end] for s in marked] == ["Prodce"]
            await pilot.pause(0.5)  # past the debounce: the list is unchanged
            assert len(app.shown) == len(expected) and app.filter_error is not None
            for _ in range(6):
                await pilot.press("backspace")
            await pilot.press(*"Produce")
            await pilot.pause()
            assert str(hint.content).startswith("✓ display filter")
            await pilot.press("enter")
            await pilot.pause()
            assert len(app.shown) == produce
            assert f"{produce} of {len(expected)} match" in str(hint.content)
            assert app.session.filter_history == ["api == Produce"]
            # a second filter, then the history
            await pilot.press("slash")
            bar.value = ""
            await pilot.press(*"latency > 1ms", "enter")
            await pilot.pause()
            assert app.session.filter_history == ["api == Produce", "latency > 1ms"]
            await pilot.press("slash")
            bar.DELAY = 60  # (no debounced apply while walking the history on a loaded machine)
            bar.value = "api =="
            await pilot.press("up")
            assert bar.value == "latency > 1ms"
            await pilot.press("up")
            assert bar.value == "api == Produce"
            await pilot.press("up")  # the oldest stays
            assert bar.value == "api == Produce"
            await pilot.press("down", "down")
            assert bar.value == "api =="  # past the newest: what was being typed
            await pilot.press("enter")
            await pilot.pause()
            assert app.filter_error is not None and "✗" in str(hint.content)
            assert app.filter_text == "latency > 1ms"  # the list keeps the filter in force
            assert app.focused is bar  # enter on a bad filter: the bar keeps the focus
            await pilot.press("escape")  # leaves the bar: the error stays in view
            assert app.focused is not bar and bar.value == "api =="
            assert "✗" in str(hint.content)
            await pilot.press("escape")  # again: back to the filter in force
            await pilot.pause()
            assert bar.value == "latency > 1ms" and app.filter_error is None
            assert "match" in str(hint.content)

    asyncio.run(go())


def test_f_on_a_tree_field_builds_field_equals_value():
    """``f`` on a field of the tree filters by ``field == value``: a body field (its path
    without array elements, the message side named), a header field, a record key."""
    from analyzer.tui.widgets.detail_tree import DetailTree

    expected = pipeline_exchanges(need(ROOT / "captures" / "librdkafka-txn.pcap"))
    txn = ROOT / "captures" / "librdkafka-txn.pcap"

    async def go():
        async with started(txn) as (app, pilot):
            produce = next(i for i, e in enumerate(expected) if e.api_key == 0)
            assert app.select_exchange(produce)
            await pilot.pause()
            tree = app.query_one(DetailTree)

            async def f_on(kind: str, pred) -> None:
                field = app.find_field(kind, pred)
                assert field is not None
                assert app.reveal_field(kind, field)
                tree.focus()
                await pilot.pause()
                await pilot.press("f")
                await pilot.pause()

            await f_on("request", lambda f: f.name == "acks")
            acks = expected[produce].request.body.get("acks")
            assert app.filter_text == f"produce.request.acks == {acks}"
            want = [
                i for i, e in enumerate(expected) if e.api_key == 0 and e.request.body.get("acks") == acks
            ]
            assert sorted(app.shown) == want
            assert app.session.filter_history[-1] == app.filter_text

            await f_on("request", lambda f: f.name == "name")  # topic_data[].name
            topic = expected[produce].request.body.child("topic_data").children[0].get("name")
            assert app.filter_text == f'produce.request.topic_data.name == "{topic}"'
            assert produce in app.shown and all(expected[i].api_key == 0 for i in app.shown)

            await f_on("request", lambda f: f.name == "client_id")  # a header field
            cid = expected[produce].client_id
            assert app.filter_text == f'client_id == "{cid}"'
            assert sorted(app.shown) == [i for i, e in enumerate(expected) if e.client_id == cid]

            await f_on("request", lambda f: f.name == "key" and f.type == "bytes")  # a record key
            assert app.filter_text.startswith('records.key == "k-librdkafka-txn')
            assert produce in app.shown

            await f_on("response", lambda f: f.name == "error_code")
            assert app.filter_text == "produce.response.responses.partition_responses.error_code == 0"
            assert produce in app.shown

            # the records table's magic and a field the language does not name
            app.set_filter("")
            await pilot.pause()
            assert app.select_exchange(produce)
            await pilot.pause()
            await f_on("request", lambda f: f.name == "crc")
            assert app.filter_text == ""  # no filter for the batch CRC: a message says so
            assert len(app.shown) == len(expected)

    asyncio.run(go())


def test_connection_timeline_view():
    """``:timeline`` draws the current connection's exchanges on one time axis, a bar per
    exchange from its request to its response; ``l`` in ``:conn`` opens a connection's; Enter
    shows the exchange in the list, scoped to its connection."""
    from analyzer.tui.charts import timeline_bar
    from analyzer.tui.screens.connections import ConnectionsScreen
    from analyzer.tui.screens.timeline import TimelineScreen
    from analyzer.tui.widgets.timeline import LABEL, Timeline

    expected = pipeline_exchanges(TXN)

    async def go():
        async with started(TXN, size=(120, 35)) as (app, pilot):
            # the connection with the most exchanges
            conn = max({e.conn.id for e in expected}, key=lambda c: sum(e.conn.id == c for e in expected))
            mine = sorted(
                (i for i, e in enumerate(expected) if e.conn.id == conn), key=lambda i: expected[i].ts
            )
            assert app.select_exchange(mine[0])
            await pilot.pause()
            await command(pilot, "timeline")
            screen = app.screen
            assert isinstance(screen, TimelineScreen) and screen.conn == conn
            tl = screen.query_one(Timeline)
            assert [r.index for r in tl.rows] == mine
            # the axis spans the first request to the last response
            t0 = expected[mine[0]].ts
            t1 = max(expected[i].ts + (expected[i].latency or 0) for i in mine)
            assert tl.t0 == t0 and tl.t1 == pytest.approx(t1)
            w = tl.bar_width
            assert tl.wide and w == tl.scrollable_content_region.width - LABEL - 1
            for n, i in enumerate(mine):
                label, start, length, kind = tl.line_text(n)
                e = expected[i]
                assert len(label) == LABEL
                assert (start, length) == timeline_bar(app.rows[i], t0, t1 - t0, w)
                assert start == min(w - 1, int((e.ts - t0) / (t1 - t0) * w))
                assert api_text(e.api_key, e.api_version)[:20] in label and str(e.correlation_id) in label
                assert kind == ("error" if has_errors(e) else "bar" if e.latency is not None else "open")
            # the longest exchange has the longest bar
            longest = max(range(len(mine)), key=lambda n: expected[mine[n]].latency or 0)
            assert tl.line_text(longest)[2] == max(tl.line_text(n)[2] for n in range(len(mine)))
            await pilot.press("j", "j", "enter")
            await pilot.pause()
            assert not isinstance(app.screen, TimelineScreen)
            assert app.conn_scope == conn and app.current.index == mine[2]

            # from the connections view
            await command(pilot, "conn")
            assert isinstance(app.screen, ConnectionsScreen)
            third = app.screen.rows[2]["id"]
            await pilot.press("j", "j", "k", "j", "l")  # (vim keys in the views' tables)
            await pilot.pause()
            assert isinstance(app.screen, TimelineScreen) and app.screen.conn == third
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, TimelineScreen)

    asyncio.run(go())


def test_groups_over_time():
    """``:groups`` lists every group-protocol exchange with the generation and the members after
    it (joined, synced, heartbeats, left); Enter shows the exchange."""
    from analyzer.tui.screens.groups import GroupsScreen

    kp = need(ROOT / "captures" / "kafka-python-0.11-none.pcap")
    expected = pipeline_exchanges(kp)
    group_apis = {11, 12, 13, 14}

    async def go():
        async with started(kp, size=(160, 50)) as (app, pilot):
            await command(pilot, "groups")
            screen = app.screen
            assert isinstance(screen, GroupsScreen)
            ev = screen.events
            want = sorted((e.ts, i) for i, e in enumerate(expected) if e.api_key in group_apis)
            assert [r["#"] - 1 for r in ev] == [i for _, i in want]
            assert [r["API"].split()[0] for r in ev] == [
                "JoinGroup",
                "SyncGroup",
                "Heartbeat",
                "Heartbeat",
                "Heartbeat",
                "LeaveGroup",
            ]
            join = expected[want[0][1]]
            member = join.response.body.get("member_id")
            assert {r["group"] for r in ev} == {join.request.body.get("group_id")}
            assert [r["generation"] for r in ev[:5]] == [join.response.body.get("generation_id")] * 5
            assert [r["members"] for r in ev] == [1, 1, 1, 1, 1, 0]  # the leave empties it
            assert all(r["member"] == member for r in ev)
            assert "JoinGroup" in screen.text("timeline")
            table = screen.query_one("#timeline-table")
            table.focus()
            table.move_cursor(row=5)
            await pilot.press("enter")
            await pilot.pause()
            assert not isinstance(app.screen, GroupsScreen)
            assert app.current.index == want[5][1] and app.current.api_key == 13

    asyncio.run(go())


def test_header_click_sorts_and_io_of_the_filtered_list():
    """A click on a column title sorts by it (again: reversed); ``:io`` counts what the list
    shows when it is filtered."""
    from analyzer.tui.rows import COLUMNS
    from analyzer.tui.screens.io import IOScreen
    from analyzer.tui.widgets.exchange_list import ExchangeList

    expected = pipeline_exchanges(TXN)

    async def go():
        async with started(TXN, size=(120, 35)) as (app, pilot):
            table = app.query_one(ExchangeList)
            head = table.header_text()
            lat = [c.name for c in COLUMNS].index("latency")
            x = head.index("latency") + 1  # (the list's border)
            await pilot.click(ExchangeList, offset=(x, 1))
            await pilot.pause()
            assert app.order.sort == lat and not app.order.reverse
            keys = [COLUMNS[lat].key(app.rows[i]) for i in app.shown]
            assert keys == sorted(keys)
            await pilot.click(ExchangeList, offset=(x, 1))
            await pilot.pause()
            assert app.order.sort == lat and app.order.reverse
            # clicking a row still selects it (the third drawn: the border, the header, two rows)
            row = round(table.scroll_offset.y) + 2
            await pilot.click(ExchangeList, offset=(5, 4))
            await pilot.pause()
            assert table.cursor_row == row and app.current.index == app.shown[row]

            app.set_filter("api == Produce")
            await pilot.pause()
            await command(pilot, "io")
            assert isinstance(app.screen, IOScreen)
            n = sum(1 for e in expected if e.api_key == 0)
            assert sum(app.screen.series["requests"]) * app.screen.series["step"] == pytest.approx(n)
            assert f"the {n} exchanges the list shows (api == Produce)" in str(
                app.screen.query_one(".view-title").content
            )

    asyncio.run(go())


def capture_payloads(path: Path) -> dict[int, bytes]:
    """The TCP payload of every packet of ``path`` (numbered from 1), read with scapy: not with
    the analyzer's own reader, decoder or reassembly."""
    from scapy.layers.inet import TCP
    from scapy.utils import rdpcap

    return {i: bytes(p[TCP].payload) for i, p in enumerate(rdpcap(str(path)), 1) if TCP in p}


def packet_cells(hv: HexView) -> tuple[set[int], set[int], set[int]]:
    """Byte offsets drawn in the packet-boundary style (in the hex column, in the ascii column)
    and those followed by the boundary glyph ``┆`` in the hex column."""
    pk = hv.get_component_rich_style("hexview--packet")
    n = hv.bytes_per_row
    hex_on: set[int] = set()
    ascii_on: set[int] = set()
    glyph: set[int] = set()
    for row in range(hv.rows):
        segs = hv.row_segments(row)
        sep = next(i for i, s in enumerate(segs) if s.text.startswith("│"))
        k = -1
        for s in segs[2:sep]:
            if len(s.text) == 2:
                k += 1
                if s.style is not None and s.style.underline and s.style.color == pk.color:
                    hex_on.add(row * n + k)
            elif s.text == "┆":
                glyph.add(row * n + k + 1)
        chars = [s for s in segs[sep + 1 :] if len(s.text) == 1]
        ascii_on.update(row * n + k for k, s in enumerate(chars) if s.style == pk or s.style.underline)
    return hex_on, ascii_on, glyph


@pytest.mark.parametrize("source", ["file", "stdin"])
@pytest.mark.parametrize("size", [SIZE, (80, 24)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_hex_view_marks_packet_boundaries(source, size):
    """A Produce request spread over several 1500-byte-MTU packets: the hex view marks where each
    packet's bytes start, at the offsets the capture's own TCP payload sizes give, and names the
    packet(s) of the selected field."""
    payloads = capture_payloads(GZIP)

    async def go(app: AnalyzerApp):
        async with app.run_test(size=size) as pilot:
            await wait_done(app, pilot)
            row = next(r for r in app.rows if r.api_key == 0 and r.req.packets >= 4)
            assert app.select_exchange(row.index)
            await pilot.pause()
            if not app.query_one("#hex").display:  # hidden at first when narrow
                await pilot.press("w")
                await pilot.pause()
            hv = app.query_one("#hex-request", HexView)
            frame = app.view.request.frame
            data = hv.data
            pks = frame.packet_indexes
            assert len(pks) >= 4 and hv.size.width > 0
            # from the capture alone: the frame starts its first packet (the size prefix first),
            # each packet's payload follows the one before, the last holds the frame's end
            first = payloads[pks[0]]
            assert int.from_bytes(first[:4], "big") == len(data)
            whole = b"".join(payloads[p] for p in pks)
            assert whole[4 : 4 + len(data)] == data and len(whole) - len(payloads[pks[-1]]) < 4 + len(data)
            want, at = [], -4
            for p in pks:
                want.append((max(at, 0), p))
                at += len(payloads[p])
            assert hv.packets == tuple(want)
            sizes = [b[0] - a[0] for a, b in zip(hv.packets, hv.packets[1:], strict=False)]
            assert sizes[0] == len(first) - 4 and sizes[1:] == [len(payloads[p]) for p in pks[1:-1]]
            # drawn: the first byte of every packet but the first, in both columns, after ┆
            hex_on, ascii_on, glyph = packet_cells(hv)
            starts = {off for off, _ in hv.packets[1:]}
            assert hex_on == starts and ascii_on == starts
            assert glyph == {s for s in starts if s % hv.bytes_per_row}
            assert hv.border_subtitle == f"{len(pks)} packets " + " ".join(
                [f"#{pks[0]}"] + [f"#{p}@{o}" for o, p in hv.packets[1:]]
            )
            # a field inside the first packet, then the records, which run across them all
            acks = app.find_field("request", lambda f: f.name == "acks")
            assert acks is not None and app.reveal_field("request", acks)
            await pilot.pause()
            assert hv.border_subtitle.endswith(f"packet #{pks[0]}")
            recs = app.find_field("request", lambda f: f.type == "records" and f.length > 4000)
            assert recs is not None and app.reveal_field("request", recs)
            await pilot.pause()
            assert hv.border_subtitle.endswith(f"packets #{pks[0]}-#{pks[-1]}")
            # on screen: the row in view that holds the second packet's first byte draws it
            # underlined (and its number at the end of the row when the view is wide enough)
            n = hv.bytes_per_row
            b = hv.packets[1][0]
            hv.scroll_to(y=b // n, animate=False)
            await pilot.pause()
            line = hv.render_line(b // n - hv.scroll_offset.y)
            cells = [s for s in line if len(s.text) == 2 and s.style is not None and s.style.underline]
            assert [c.text for c in cells] == [f"{data[b]:02x}"]
            assert (f"◂#{pks[1]}" in line.text) == (hv.size.width >= hv.line_width + 4)
            # the response: its own packets (a one-packet frame lists just that one)
            rv = app.query_one("#hex-response", HexView)
            rpk = app.view.response.frame.packet_indexes
            assert [p for _, p in rv.packets] == list(rpk)

    if source == "file":
        asyncio.run(go(AnalyzerApp(str(GZIP))))
    else:
        with open(GZIP, "rb") as f:
            asyncio.run(go(AnalyzerApp(f, name="-")))


def test_spilled_index_shows_what_the_memory_index_shows():
    """With the spill threshold forced to 50 rows (most of the capture's rows in a temporary
    file), the list's rows, every sort order, the filters' matches, the selected exchange's tree
    and hex, and the views are those of the index kept in memory; the file is open while the app
    runs and closed with its session."""
    from analyzer.tui.rows import COLUMNS

    async def state(spill_after):
        app = AnalyzerApp(str(TXN), spill_after=spill_after)
        out = {}
        async with app.run_test(size=SIZE) as pilot:
            await wait_done(app, pilot)
            table = app.query_one("#exchanges")
            out["spilled"] = app.index.rows.spilled
            f = app.index.rows.spill_file
            out["open"] = f is not None and not f.closed
            out["text"] = [table.row_text(i) for i in range(len(app.shown))]
            for col in range(len(COLUMNS)):
                for rev in (False, True):
                    app.set_sort(col, rev)
                    await pilot.pause()
                    out[("sort", col, rev)] = list(app.shown)
            app.set_sort(1)
            for expr in ("api == Fetch", "fetch", "errors", "produce.acks == -1"):
                app.set_filter(expr)
                await pilot.pause()
                out[("filter", expr)] = list(app.shown)
            app.set_filter("")
            await pilot.pause()
            last = max((r for r in app.rows if r.index >= 50), key=lambda r: r.req_bytes).index
            assert app.select_exchange(last)
            await pilot.pause()
            out["tree"] = app.query_one(DetailTree).all_labels()
            out["hex"] = app.query_one("#hex-request", HexView).data
            for view in ("conn", "issues", "groups", "io", "timeline", "stats"):
                app.open_view(view)
                await pilot.pause()
                out[("view", view)] = type(app.screen).__name__
            app.open_view("ex")
            await pilot.pause()
        app.session.close()
        out["closed"] = f is None or f.closed
        return out

    mem = asyncio.run(state(None))
    spilled = asyncio.run(state(50))
    assert mem["spilled"] == 0 and not mem["open"]
    assert spilled["spilled"] > 50 and spilled["open"] and spilled["closed"]
    for k in mem:
        if k not in ("spilled", "open"):
            assert spilled[k] == mem[k], k
    assert mem[("filter", "api == Fetch")] and mem["tree"]


def test_wireshark_names_in_the_filter_bar():
    """The bar takes Wireshark's Kafka names as aliases: the rows shown are the native name's."""
    expected = pipeline_exchanges(GZIP)

    async def go():
        async with started(GZIP) as (app, pilot):
            for alias, native in (
                ("kafka.request_key == 0", "api == 0"),
                (
                    'kafka.topic_name == "rdk-gzip" and kafka.partition_id == 1',
                    'topic == "rdk-gzip" and partition == 1',
                ),
                ("kafka.required_acks == -1", "produce.acks == -1"),
            ):
                app.set_filter(native)
                await pilot.pause()
                want = list(app.shown)
                app.set_filter(alias)
                await pilot.pause()
                assert app.filter_error is None, alias
                assert app.shown == want and 0 < len(want) < len(expected), alias

    asyncio.run(go())


def test_read_tree_is_the_detail_tree():
    """``read -V`` prints the tree the detail pane shows, node for node (every node opened), for
    an exchange of each API of the capture: requests, responses, records, issues."""
    from analyzer.cli.read import tree_text

    expected = pipeline_exchanges(GZIP)
    firsts: dict = {}
    for i, ex in enumerate(expected):
        firsts.setdefault((ex.api_key, bool(ex.all_issues())), i)

    def opened(tree: DetailTree) -> list[str]:
        out: list[str] = []

        def walk(node, depth):
            tree.populate(node)
            out.append("  " * depth + str(node.label))
            for c in node.children:
                walk(c, depth + 1)

        for c in tree.root.children:
            walk(c, 1)
        return out

    async def go():
        async with started(GZIP) as (app, pilot):
            for i in sorted(firsts.values()):
                assert app.select_exchange(i)
                await pilot.pause()
                tui = opened(app.query_one(DetailTree))
                assert tui == tree_text(expected[i]).splitlines(), expected[i].api_key
            assert len(firsts) >= 6

    asyncio.run(go())
