"""The TUI on a live interface (``tui -i``): a librdkafka mock cluster in a network namespace of
its own, traffic produced while the app runs; rows appear as exchanges complete, the list
follows them, the status bar says LIVE with no drops, ``c`` stops the capture and the session
stays browsable; ``--write`` saved the same conversation."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest
from textual import events

from tests.helpers.captures import ROOT

pytest.importorskip("confluent_kafka")
pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(os.geteuid() != 0, reason="live capture needs root"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="AF_PACKET is Linux only"),
]

N = 30


def status(app) -> str:
    return str(app.query_one("#status").content)


async def until(pilot, cond, timeout: float, what: str) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        assert loop.time() < end, f"timed out waiting for {what}"
        await pilot.pause(0.05)


def test_tui_live_on_a_mock_cluster(tmp_path):
    from analyzer.capture.ring import RingCapture
    from analyzer.tui.app import AnalyzerApp
    from analyzer.tui.widgets.exchange_list import ExchangeList
    from tests.helpers.kafkamock import Mock
    from tests.helpers.netns import isolated

    pcap = tmp_path / "tui-live.pcap"
    with isolated("tui-live") as ns:
        assert ns is not None  # root, with ip(8)
        mock = Mock(prefix="tui-test")
        src = RingCapture("lo", mock.bpf, write=str(pcap), announce=False, idle_ticks=True)
        assert src.open(), src.error

        async def go():
            app = AnalyzerApp(src)
            async with app.run_test(size=(120, 35)) as pilot:
                assert app.live and app.sub_title == "live on lo"
                await until(pilot, lambda: "LIVE" in status(app), 5, "the LIVE status")
                assert len(app.rows) == 0
                # traffic while the app runs (the clients' threads start in the namespace too)
                await asyncio.to_thread(mock.traffic, N)
                ours = lambda: [r for r in app.rows if (r.client_id or "").startswith("tui-test")]  # noqa: E731
                await until(pilot, lambda: any(r.api_key == 1 for r in ours()), 20, "Fetch rows")
                await pilot.pause(0.5)
                apis = {r.api for r in ours()}
                assert any(a.startswith("Produce") for a in apis), apis
                assert any(a.startswith("Fetch") for a in apis), apis
                # the list follows the tail: the cursor is on the last row shown
                table = app.query_one(ExchangeList)
                assert app.follow and table.cursor_row == len(app.shown) - 1
                st = status(app)
                assert (
                    "LIVE" in st and "pkt/s" in st and "drops kernel 0 queue 0" in st and "following" in st
                ), st
                # scrolling the list away (the mouse wheel) stops following: new rows come, the
                # cursor stays; G follows again; moving the cursor up stops following too
                table.focus()
                table.post_message(events.MouseScrollUp(table, 5, 5, 0, -1, 0, False, False, False))
                await pilot.pause()
                cursor, before = table.cursor_row, len(app.rows)
                await asyncio.to_thread(mock.traffic, 3)
                await until(pilot, lambda: len(app.rows) > before, 20, "more rows")
                await pilot.pause(0.5)
                assert not app.follow and table.cursor_row == cursor < len(app.shown) - 1
                await pilot.press("G")
                await pilot.pause()
                assert app.follow and table.cursor_row == len(app.shown) - 1
                await pilot.press("g")
                await pilot.pause()
                assert not app.follow and table.cursor_row == 0
                # c stops the capture; what was captured stays browsable
                await pilot.press("c")
                await until(pilot, lambda: app.done, 10, "the capture to stop")
                await pilot.pause()
                st = status(app)
                assert "stopped" in st and "LIVE" not in st, st
                assert app.session.kernel_drops[1] == 0 and app.index.dropped == 0
                n = len(app.rows)
                assert n >= 4
                produce = next(r for r in ours() if r.api_key == 0)
                assert app.select_exchange(produce.index)
                await pilot.pause()
                assert app.view is not None and app.view.request is not None
                assert app.view.request.body is not None
                app.set_filter('client_id == "tui-test-p" and api == Produce')
                await pilot.pause()
                assert app.shown and all(app.rows[i].api_key == 0 for i in app.shown)
                assert app.exit_code == 0
            return n

        rows = asyncio.run(go())
    # the saved packets hold the same exchanges
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", "export", str(pcap), "--no-spans"],
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    exchanges = [o for o in map(json.loads, r.stdout.splitlines()) if o["type"] == "exchange"]
    assert len(exchanges) == rows
