"""The producers, transactions and end-to-end latency (analyzer.session.producers, transactions,
e2e) on the generated producer scenarios, against what each scenario's clients saw
(captures/producer-*.truth.json: delivery reports, statistics, transactions, what the mock was
told to inject, each record consumed; tools/gen/producers.py): records sent again, failed and
written twice; each transaction's outcome, records and offsets; each record's latency bounded by
the clients' own times; and -j 2 equal to -j 1."""

from __future__ import annotations

import json
from collections import Counter, defaultdict

import pytest

from analyzer.cli import main
from analyzer.dissect.message import Options
from analyzer.pipeline import Analysis
from analyzer.session.producer_insights import ProducerInsights
from tests.helpers.captures import CAPTURES

SCENARIOS = ["producer-idempotent", "producer-plain", "producer-txn", "producer-mix"]


def analyse(name: str):
    truth = json.loads((CAPTURES / f"{name}.truth.json").read_text())
    a = Analysis(str(CAPTURES / f"{name}.pcap"))
    ins = ProducerInsights(a.knowledge.topic_ids)
    outcome = a.run(ins)
    return truth, ins, outcome


def producer_row(truth: dict, ins: ProducerInsights, name: str) -> dict:
    client_id = truth["clients"][name]["config"]["client.id"]
    [row] = [r for r in ins.producers.rows() if r["client_id"] == client_id]
    return row


@pytest.mark.parametrize("name", ["producer-idempotent", "producer-plain"])
def test_retried_failed_and_duplicated_records_are_the_clients(name):
    truth, ins, _ = analyse(name)
    expect = truth["expect"]
    row = producer_row(truth, ins, expect["producer"])
    seen = expect["observed"]
    # records sent again: the producer's statistics (messages transmitted minus produced)
    assert row["retried_records"] == seen["records_sent_again"] == expect["retried_records"]
    assert ins.producers.retry_count == expect["retries"]
    # failed: the delivery reports with an error (never written: lost)
    assert row["failed_records"] == seen["failed"] == expect["failed_records"]
    # written twice: the records the reader got at two offsets (the mock writes an idempotent
    # producer's resend again too: a real broker would not)
    assert row["duplicates_written"] == expect["duplicates_written"] == len(seen["keys_read_twice"])
    assert row["records"] == seen["records"] and row["idempotent"] == expect["idempotent"]
    assert row["unanswered_records"] == 0 and row["sequence_gaps"] == 0 and row["fenced"] == 0
    # every retry names what its attempt before had got: an injected error or no answer (timed out)
    errors = Counter(r["error"] for r in ins.producers.retries)
    assert set(errors) - {"no answer"} <= set(expect["injected_errors"])
    assert errors["no answer"] == expect["timed_out_requests"]


def test_transactions_outcomes_records_and_offsets():
    truth, ins, outcome = analyse("producer-txn")
    expect = truth["expect"]
    txns = ins.txns.transactions(outcome.last_ts)
    assert Counter(t["outcome"] for t in txns) == Counter(expect["outcomes"])
    by_outcome: dict[str, int] = defaultdict(int)
    for t in txns:
        by_outcome[t["outcome"]] += t["records"]
    assert by_outcome["commit"] == expect["committed_records"]
    assert by_outcome["abort"] == expect["aborted_records"]
    assert by_outcome["hanging"] == expect["hanging_records"]
    ids = expect["transactional_ids"]
    main_txns = [t for t in txns if t["transactional_id"] == ids["transactional"]]
    assert [t["outcome"] for t in main_txns] == [x["outcome"] for x in expect["transactions"][:-1]]
    # consume-transform-produce: every transaction sent its consumer's offsets
    assert all(t["offsets_committed"] for t in main_txns)
    assert {o["group"] for t in main_txns for o in t["offsets_committed"]} == {expect["group"]}
    [hanging] = [t for t in txns if t["transactional_id"] == ids["hanging"]]
    assert hanging["timeout_ms"] == expect["transaction_timeout_ms"]["hanging"] and hanging["end"] is None
    # the delayed round took longer than the request timeout
    delayed = [i for i, x in enumerate(expect["transactions"]) if x.get("delayed_answer")]
    assert all(main_txns[i]["duration_ms"] > 1000 for i in delayed)
    row = producer_row(truth, ins, "transactional")
    assert row["transactional_id"] == ids["transactional"] and row["failed_records"] == 0
    assert row["duplicates_written"] == expect["duplicates_written"]


def test_each_records_latency_is_within_the_clients_times():
    """A record's wire latency (Fetch answer minus Produce request) lies inside the clients' own
    (consumed callback minus the produce() call); the timestamp-based one as well."""
    truth, ins, _ = analyse("producer-mix")
    produced = {}
    client_of = {}
    for name, c in truth["clients"].items():
        if c["role"] != "producer":
            continue
        client_of[name] = c["config"]["client.id"]
        for e in c["events"]:
            if e["event"] == "delivery" and e["offset"] is not None:
                produced[(e["partition"], e["offset"])] = (name, e["produce_t"])
    spans: dict[tuple, list[float]] = defaultdict(list)
    for c in truth["clients"].values():
        for e in c["events"]:
            if e["event"] == "consumed" and (e["partition"], e["offset"]) in produced:
                name, t0 = produced[(e["partition"], e["offset"])]
                spans[(e["partition"], client_of[name])].append((e["t"] - t0) * 1000)
    rows = {(r["partition"], r["producer_client"].split("@")[0]): r for r in ins.e2e.rows()}
    assert set(spans) <= set(rows)
    for key, lat in spans.items():
        r = rows[key]
        assert r["count"] == len(lat), key  # each consumed record fetched once
        assert r["max_ms"] <= max(lat) + 1.0, (key, r, max(lat))
        assert r["timestamp"] is not None and r["timestamp"]["max_ms"] <= max(lat) + 1.0
        assert r["p50_ms"] <= sorted(lat)[len(lat) // 2] + 1.0
        assert r["group"] == truth["expect"]["group"]
    # the acks=0 producer's records have no offsets in any answer: matched by batch identity
    fire = client_of[truth["expect"]["acks0_producer"]]
    assert sum(r["count"] for r in ins.e2e.rows() if r["producer_client"].startswith(fire + "@")) == 25


@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.parametrize("command", [["stats", "--format", "json"], ["export"]])
def test_two_processes_give_what_one_gives(name, command, capsys):
    outputs = []
    for jobs in ("1", "2"):
        main([command[0], str(CAPTURES / f"{name}.pcap"), *command[1:], "-j", jobs])
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    assert '"producer"' in outputs[0] or '"producers"' in outputs[0]


def test_compression_ratio_is_the_same_inflated_or_not():
    """Each producer's compression ratio (its compressed batches' records, decompressed bytes
    per byte sent): a `stats` run decodes no record bodies, so it reads the size a codec
    declares (gzip's ISIZE, snappy's lengths) and inflates one in four of the lz4 and zstd
    batches librdkafka sends without one (by CRC) when the producers ask; `export --records`
    inflates every batch while decoding. Both give the same ratio over the same batches for the
    four codecs of producer-mix."""
    truth = json.loads((CAPTURES / "producer-mix.truth.json").read_text())
    ratios = []
    for bodies in (False, True):
        a = Analysis(str(CAPTURES / "producer-mix.pcap"), Options(records_bodies=bodies))
        ins = ProducerInsights(a.knowledge.topic_ids)
        a.run(ins)
        ratios.append(
            {
                r["client_id"]: (r["codecs"], r["compression_ratio"], r["compression_batches"])
                for r in ins.producers.rows()
            }
        )
    assert ratios[0] == ratios[1]
    for name, conf in truth["expect"]["producers"].items():
        codecs, ratio, measured = ratios[0][truth["clients"][name]["config"]["client.id"]]
        assert conf["compression.type"] in codecs and 0 < measured <= codecs[conf["compression.type"]]
        # the records carry repetitive keys and values: every codec shrinks them
        assert ratio is not None and ratio > 1.0, (name, ratio)
