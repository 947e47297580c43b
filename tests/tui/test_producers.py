"""The producers view (``:producers``) and the transactions view (``:transactions``) on the
generated producer scenarios, against what their clients saw (captures/producer-*.truth.json:
delivery reports, statistics, each transaction's outcome): the records retried, failed and
written twice per producer, one retry row per retry with enter landing on the retried batch's
FIRST attempt (the Produce exchange the retry's error answered) and ``l`` on the later one; each
transaction's outcome and records, enter on its first exchange and ``e`` on its EndTxn; the
coverage the commands say; both views following a live capture."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest

from analyzer.dissect.constants import ApiKey
from analyzer.dissect.message import Options
from analyzer.model import Exchange
from analyzer.pipeline import Analysis
from analyzer.session.producer_insights import ProducerInsights, producers_report, transactions_report
from analyzer.session.producer_text import producers_coverage, transactions_coverage
from analyzer.session.walks import produced
from analyzer.tui.app import AnalyzerApp
from analyzer.tui.screens.producers import ProducersScreen
from analyzer.tui.screens.transactions import TransactionsScreen
from tests.helpers.tui_live import GatedLive, until_done, until_first_part

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = ROOT / "captures"
TXN_APIS = (ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.TXN_OFFSET_COMMIT, ApiKey.PRODUCE)


def truth(name: str) -> dict:
    return json.loads((CAPTURES / f"{name}.truth.json").read_text())


def exchanges(name: str) -> list[Exchange]:
    """Every exchange of the capture, in the list's order (its row indexes)."""
    return [ev for ev in Analysis(CAPTURES / f"{name}.pcap", Options()).events() if type(ev) is Exchange]


def client_id(tr: dict, who: str) -> str:
    return tr["clients"][who]["config"]["client.id"]


async def opened(app: AnalyzerApp, pilot, what: str):
    await until_done(app, pilot, timeout=20)
    app.open_view(what)
    await pilot.pause()
    assert isinstance(app.screen, ProducersScreen if what == "producers" else TransactionsScreen)
    return app.screen


def cells(screen, table: str, name: str) -> list[str]:
    t = screen.query_one(f"#{table}-table")
    i = [str(c.label) for c in t.ordered_columns].index(name)
    return [str(t.get_row_at(r)[i]) for r in range(t.row_count)]


def batches(ex: Exchange, topic: str, partition: int) -> set[tuple]:
    """The (CRC, record count) of the record batches a Produce request sent to ``topic[partition]``."""
    return {
        (b["crc"], b["record_count"])
        for pp in produced(ex)
        if pp.ref[0] == topic and pp.ref[2] == partition
        for b in pp.batches
    }


@pytest.mark.parametrize("name", ["producer-idempotent", "producer-plain"])
def test_retries_jump_to_their_first_attempt(name):
    """One row per producer with the records its client saw sent again, failed and written
    twice; one row per retry; enter on each: the list at the exchange that sent the batch first
    (a Produce to its partition whose answer, if it came before the resend, is the retry's
    error), ``l``: at the resend."""
    tr = truth(name)
    expect = tr["expect"]
    seen = expect["observed"]
    exs = exchanges(name)
    cid = client_id(tr, expect["producer"])

    async def go():
        app = AnalyzerApp(str(CAPTURES / f"{name}.pcap"))
        async with app.run_test(size=(120, 35)) as pilot:
            screen = await opened(app, pilot, "producers")
            ids = cells(screen, "producers", "client_id")
            row = ids.index(cid)
            assert cells(screen, "producers", "retried")[row] == str(seen["records_sent_again"])
            assert cells(screen, "producers", "failed")[row] == str(seen["failed"])
            assert cells(screen, "producers", "dup")[row] == str(expect["duplicates_written"])
            assert cells(screen, "producers", "records")[row] == str(seen["records"])
            assert cells(screen, "producers", "idem")[row] == ("yes" if expect["idempotent"] else "no")
            screen.query_one("#producers-table").move_cursor(row=row)
            await pilot.pause()
            assert cid in str(screen.query_one("#producer-detail").content)
            retries = screen.retries
            assert len(retries) == expect["retries"] == len(cells(screen, "retries", "error"))
            errors = Counter(r["error"] for r in retries)
            assert errors["no answer"] == expect["timed_out_requests"]
            assert set(errors) - {"no answer"} <= set(expect["injected_errors"])
            assert "coverage: " in str(screen.query_one("#producers-coverage").content)
            sent_first: dict[int, int] = {}
            for k, r in enumerate(retries):
                for key, which in (("enter", "first"), ("l", "later")):
                    app.open_view("producers")
                    await pilot.pause()
                    screen = app.screen
                    screen.query_one("#producers-table").move_cursor(row=row)
                    await pilot.pause()
                    table = screen.query_one("#retries-table")
                    table.focus()
                    table.move_cursor(row=k)
                    await pilot.pause()
                    shown = cells(screen, "retries", f"{which} #")[k]
                    await pilot.press(key)
                    await pilot.pause()
                    assert not isinstance(app.screen, ProducersScreen)
                    ex = exs[app.current.index]
                    attempt = r[which]
                    assert ex.api_key == ApiKey.PRODUCE and ex.client_id == cid
                    assert ex.correlation_id == attempt["correlation_id"]
                    assert ex.request.frame.ts_first == attempt["time"]
                    assert r["partition"] in ex.topics[r["topic"]]
                    assert shown == str(app.current.index + 1)  # the number the row said
                    if which == "first" and r["attempt"] == 2 and r["error"] != "no answer":
                        answer = ex.response.body
                        got = [
                            pr.get("error_code")
                            for t in answer.elements("responses")
                            for pr in t.elements("partition_responses")
                            if t.get("name") == r["topic"] and pr.get("index") == r["partition"]
                        ]
                        assert got and got[0] != 0  # the error the retry followed
                    # the same batch (CRC, records) in both; none of the client's Produce
                    # requests sent it before the first attempt
                    same = batches(ex, r["topic"], r["partition"])
                    assert same
                    if which == "first":
                        assert not [
                            e
                            for e in exs
                            if e.api_key == ApiKey.PRODUCE
                            and e.client_id == cid
                            and e.request.frame.ts_first < attempt["time"]
                            and batches(e, r["topic"], r["partition"]) & same
                        ]
                    else:
                        assert same & batches(exs[sent_first[k]], r["topic"], r["partition"])
                    if which == "first":
                        sent_first[k] = app.current.index

    asyncio.run(go())


def test_producer_mix_rows_are_the_clients():
    """Four producers with different linger, acks and codecs: a row each, 25 records, nothing
    retried, failed or written twice, their codecs and compression ratio."""
    name = "producer-mix"
    tr = truth(name)
    expect = tr["expect"]

    async def go():
        app = AnalyzerApp(str(CAPTURES / f"{name}.pcap"))
        async with app.run_test(size=(120, 35)) as pilot:
            screen = await opened(app, pilot, "producers")
            ids = cells(screen, "producers", "client_id")
            for who, conf in expect["producers"].items():
                row = ids.index(client_id(tr, who))
                assert cells(screen, "producers", "records")[row] == str(expect["records_per_producer"])
                for col in ("retried", "failed", "dup"):
                    assert cells(screen, "producers", col)[row] == "0", (who, col)
                assert conf["compression.type"] in cells(screen, "producers", "codecs")[row]
                # every one compresses: records decompressed / compressed
                assert float(cells(screen, "producers", "ratio")[row]) > 1, who
            assert not screen.query_one("#retries-table").display
            assert "every batch sent once" in str(screen.query_one("#retries-title").content)

    asyncio.run(go())


def test_transactions_outcomes_and_their_exchanges():
    """A row per transaction with the outcome and records the producer saw; enter: its first
    exchange (AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit or transactional Produce
    of its id, at its start); e: its EndTxn (committed as the outcome says); the hanging one
    has none."""
    name = "producer-txn"
    tr = truth(name)
    expect = tr["expect"]
    exs = exchanges(name)
    a = Analysis(CAPTURES / f"{name}.pcap")
    ins = ProducerInsights(a.knowledge.topic_ids)
    out = a.run(ins)
    ref = transactions_report(ins, out.last_ts)

    def txn_id(ex: Exchange) -> str | None:
        body = ex.request.body
        return (
            body.get("transactional_id")
            or body.get("v3_and_below_transactional_id")
            or next((x.get("transactional_id") for x in body.elements("transactions")), None)
        )

    async def go():
        app = AnalyzerApp(str(CAPTURES / f"{name}.pcap"))
        async with app.run_test(size=(120, 35)) as pilot:
            screen = await opened(app, pilot, "transactions")
            outcomes = cells(screen, "transactions", "outcome")
            assert Counter(outcomes) == Counter(expect["outcomes"])
            ids = cells(screen, "transactions", "transactional_id")
            main = [
                o
                for o, i in zip(outcomes, ids, strict=True)
                if i == expect["transactional_ids"]["transactional"]
            ]
            assert main == [x["outcome"] for x in expect["transactions"] if x["producer"] == "transactional"]
            records = Counter()
            for o, n in zip(outcomes, cells(screen, "transactions", "records"), strict=True):
                records[o] += int(n)
            assert records["commit"] == expect["committed_records"]
            assert records["abort"] == expect["aborted_records"]
            assert records["hanging"] == expect["hanging_records"]
            head = str(screen.query_one("#transactions-head").content)
            assert "5 commit, 1 abort, 1 hanging" in head
            assert str(screen.query_one("#transactions-coverage").content) == (
                f"coverage: {transactions_coverage(ref)}"
            )
            for k, x in enumerate(ref["transactions"]):
                for key in ("enter", "e"):
                    app.open_view("transactions")
                    await pilot.pause()
                    screen = app.screen
                    screen.query_one("#transactions-table").move_cursor(row=k)
                    await pilot.pause()
                    await pilot.press(key)
                    await pilot.pause()
                    if key == "e" and x["outcome"] == "hanging":
                        assert isinstance(app.screen, TransactionsScreen)  # no EndTxn: it stays
                        continue
                    assert not isinstance(app.screen, TransactionsScreen)
                    ex = exs[app.current.index]
                    assert txn_id(ex) == x["transactional_id"]
                    if key == "enter":
                        assert ex.api_key in TXN_APIS and ex.request.frame.ts_first == x["start"]
                        # nothing of its id between the end of the one before and its start
                        before = [
                            y
                            for y in ref["transactions"][:k]
                            if y["transactional_id"] == x["transactional_id"]
                        ]
                        after = before[-1]["end"] if before else None
                        assert not [
                            e
                            for e in exs
                            if e.api_key in TXN_APIS
                            and txn_id(e) == x["transactional_id"]
                            and (after is None or e.request.frame.ts_first > after)
                            and e.request.frame.ts_first < x["start"]
                        ]
                    else:
                        assert ex.api_key == ApiKey.END_TXN
                        assert ex.response.frame.ts_first == x["end"]
                        assert bool(ex.request.body.get("committed")) == (x["outcome"] == "commit")

    asyncio.run(go())


def test_coverage_is_the_commands():
    """The views' coverage lines are the producers and transactions commands' text."""
    name = "producer-plain"
    a = Analysis(CAPTURES / f"{name}.pcap")
    ins = ProducerInsights(a.knowledge.topic_ids)
    out = a.run(ins)
    want_p = producers_coverage(producers_report(ins))
    want_t = transactions_coverage(transactions_report(ins, out.last_ts))

    async def go():
        app = AnalyzerApp(str(CAPTURES / f"{name}.pcap"))
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await opened(app, pilot, "producers")
            assert str(screen.query_one("#producers-coverage").content) == f"coverage: {want_p}"
            screen = await opened(app, pilot, "transactions")
            assert "no transaction in the capture" in str(screen.query_one("#transactions-head").content)
            assert want_t  # (said by the command; the view has no transaction to say it of)

    asyncio.run(go())


@pytest.mark.parametrize("what", ["producers", "transactions"])
def test_the_views_follow_a_live_capture(monkeypatch, what):
    """A live capture (replayed): the open view shows what was seen so far, then, as more
    packets arrive, the rest, without being opened again."""
    monkeypatch.setattr(ProducersScreen, "POLL", 0.1)
    monkeypatch.setattr(TransactionsScreen, "POLL", 0.1)
    name = "producer-txn"
    expect = truth(name)["expect"]
    exs = exchanges(name)
    ends = [e.response.frame.ts_first for e in exs if e.api_key == ApiKey.END_TXN and e.response is not None]
    cut = ends[2] + 0.001  # three transactions ended
    src = GatedLive(CAPTURES / f"{name}.pcap", cut)

    async def go():
        app = AnalyzerApp(src)
        async with app.run_test(size=(80, 24)) as pilot:
            try:
                await until_first_part(src, pilot)
                app.open_view(what)
                await pilot.pause()
                screen = app.screen
                assert not app.done
                assert "partial" in str(screen.query_one(f"#{what}-head").content)
                if what == "transactions":
                    early = [o for o in cells(screen, "transactions", "outcome") if o in ("commit", "abort")]
                    assert len(early) == 3
                else:
                    early = sum(int(n) for n in cells(screen, "producers", "records"))
                    assert early > 0
                src.gate.set()
                await until_done(app, pilot, timeout=40, step=0.05)  # (the replay ends: the capture with it)
                await pilot.pause(0.5)
                assert app.screen is screen
                assert "partial" not in str(screen.query_one(f"#{what}-head").content)
                if what == "transactions":
                    assert Counter(cells(screen, "transactions", "outcome")) == Counter(expect["outcomes"])
                else:
                    final = sum(int(n) for n in cells(screen, "producers", "records"))
                    assert final > early and len(cells(screen, "producers", "client_id")) == 3
            finally:
                src.gate.set()
                src.stop()

    asyncio.run(go())


def test_help_and_the_command_line_name_the_views():
    from analyzer.tui.screens.command import parse_command
    from analyzer.tui.screens.help import KEYS

    keys = [k for k, _ in KEYS]
    assert ":producers" in keys and ":transactions" in keys
    assert parse_command("producers") == "producers" and parse_command("prod") == "producers"
    assert parse_command("transactions") == "transactions" and parse_command("txn") == "transactions"
    assert "producers" in dict(KEYS)[":"] and "transactions" in dict(KEYS)[":"]


def test_read_committed_consumers_held_back_are_listed(monkeypatch):
    """(No bundled capture holds a read_committed consumer behind an open transaction long enough:
    one is added to the session's report.) The view lists it in the ``transactions`` words."""
    from analyzer.session.producer_text import held_back_text
    from analyzer.tui.session import Session

    held = {
        "client_id": "reader",
        "client": "10.0.0.9:4000",
        "topic": "ptx-out",
        "partition": 0,
        "fetches": 12,
        "max_held_back": 7,
        "last_held_back": 5,
        "growing": True,
    }
    real = Session.transaction_report
    monkeypatch.setattr(Session, "transaction_report", lambda self: real(self) | {"held_back": [held]})

    async def go():
        app = AnalyzerApp(str(CAPTURES / "producer-txn.pcap"))
        async with app.run_test(size=(120, 35)) as pilot:
            screen = await opened(app, pilot, "transactions")
            text = str(screen.query_one("#held-back").render())
            assert "read_committed consumers held back" in text and held_back_text(held) in text

    asyncio.run(go())


def test_a_capture_without_producers_says_so():
    """Encrypted TLS without keys: no Produce decoded; both views say there is nothing, and enter
    and the jump keys only say there is nothing to show."""

    async def go():
        app = AnalyzerApp(str(CAPTURES / "kafka-python-tls-tls12-aes128gcm.pcap"))
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await opened(app, pilot, "producers")
            assert "no producer in the capture" in str(screen.query_one("#producers-head").content)
            await pilot.press("enter", "l")
            assert app.screen is screen
            screen = await opened(app, pilot, "transactions")
            assert "no transaction in the capture" in str(screen.query_one("#transactions-head").content)
            await pilot.press("enter", "e")
            assert app.screen is screen

    asyncio.run(go())
