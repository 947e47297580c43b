"""Producers, transactions and end-to-end latency (analyzer.session.producers, transactions,
e2e) on the facts a Produce, Fetch or transaction exchange gives (plain values, as the -j merge
applies them), and on bundled recordings: retries told apart from new batches, duplicates
written, lost and unanswered records, sequence gaps, epoch bumps, fencing; each transaction's
outcome; each fetched record's latency."""

from __future__ import annotations

import pytest

from analyzer.dissect.constants import ErrorCode as E
from analyzer.pipeline import Analysis
from analyzer.session.e2e import FETCHED, MEMBER, PRODUCED, E2ETracker, Latencies
from analyzer.session.producer_insights import ProducerInsights
from analyzer.session.producers import ACKS0, NO_ANSWER, ProducerTracker
from analyzer.session.transactions import ADD, END, INIT, PRODUCE, TxnTracker

CLIENT = "10.0.0.5:40000"
TP = ("t", None, 0)


def produce(p: ProducerTracker, t, answered, batches, conn="a -> b", corr=1, acks=-1, txn=None):
    """batches: (producer id, epoch, base sequence, records, crc, error, base offset)."""
    rows = [
        (TP, pid, ep, seq, n, crc, 100, "none", None, err, base)
        for pid, ep, seq, n, crc, err, base in batches
    ]
    p.apply((t, answered, conn, corr, "app", CLIENT, acks, txn, rows))


def row(p: ProducerTracker) -> dict:
    p.done()
    [r] = p.rows()
    return r


def test_an_idempotent_retry_is_one_batch_sent_twice_and_written_once():
    p = ProducerTracker()
    produce(p, 1.0, 1.1, [(7, 0, 0, 5, 11, E.NOT_LEADER_OR_FOLLOWER, None)], corr=1)
    produce(p, 1.2, 1.3, [(7, 0, 0, 5, 11, E.NONE, 40)], conn="a -> c", corr=9)
    produce(p, 1.4, 1.5, [(7, 0, 5, 5, 12, E.NONE, 45)], conn="a -> c", corr=10)
    r = row(p)
    assert (
        r["batches"],
        r["records"],
        r["retried_records"],
        r["failed_records"],
        r["duplicates_written"],
    ) == (
        2,
        10,
        5,
        0,
        0,
    )
    [retry] = p.retries
    assert retry["error"] == "NOT_LEADER_OR_FOLLOWER" and retry["attempt"] == 2
    assert (retry["first"]["correlation_id"], retry["later"]["correlation_id"]) == (1, 9)
    assert r["sequence_gaps"] == 0 and r["idempotent"]


def test_a_plain_batch_written_twice_after_a_timeout_is_a_duplicate():
    p = ProducerTracker()
    # the first attempt's answer comes after the second was sent (the client timed out): both written
    produce(p, 1.0, 9.0, [(-1, -1, -1, 3, 99, E.NONE, 10)], corr=1)
    produce(p, 5.0, 5.1, [(-1, -1, -1, 3, 99, E.NONE, 13)], corr=2)
    r = row(p)
    assert (r["batches"], r["retried_records"], r["duplicates_written"]) == (1, 3, 1 * 3)
    assert p.retries[0]["error"] == "no answer"


def test_the_same_plain_batch_after_a_good_answer_is_a_new_batch():
    p = ProducerTracker()
    produce(p, 1.0, 1.1, [(-1, -1, -1, 3, 99, E.NONE, 10)], corr=1)
    produce(p, 2.0, 2.1, [(-1, -1, -1, 3, 99, E.NONE, 13)], corr=2)  # same bytes, sent anew
    r = row(p)
    assert (r["batches"], r["retried_records"], r["duplicates_written"]) == (2, 0, 0)


def test_records_whose_last_attempt_failed_are_lost_and_unanswered_ones_counted_apart():
    p = ProducerTracker()
    produce(p, 1.0, 1.1, [(-1, -1, -1, 2, 1, E.REQUEST_TIMED_OUT, None)])
    produce(p, 1.2, 1.3, [(-1, -1, -1, 2, 1, E.MESSAGE_TOO_LARGE, None)])
    produce(p, 2.0, None, [(-1, -1, -1, 4, 2, NO_ANSWER, None)])
    produce(p, 3.0, None, [(-1, -1, -1, 8, 3, ACKS0, None)], acks=0)  # acks 0: no answer expected
    r = row(p)
    assert (r["failed_records"], r["unanswered_records"], r["retried_records"]) == (2, 4, 2)
    assert p.retries[0]["error"] == "REQUEST_TIMED_OUT"


def test_sequence_gaps_epoch_bumps_and_fencing():
    p = ProducerTracker()
    produce(p, 1.0, 1.1, [(7, 0, 0, 5, 1, E.NONE, 0)])
    produce(p, 1.2, 1.3, [(7, 0, 9, 5, 2, E.OUT_OF_ORDER_SEQUENCE_NUMBER, None)])  # 5..8 never sent
    produce(p, 1.4, 1.5, [(7, 1, 0, 5, 3, E.NONE, 5)])  # a new epoch starts again at 0
    produce(p, 1.6, 1.7, [(7, 0, 14, 5, 4, E.INVALID_PRODUCER_EPOCH, None)])  # the old epoch: fenced
    r = row(p)
    # one gap seen in the sequences and one answered OUT_OF_ORDER_SEQUENCE_NUMBER (the same batch)
    assert (r["sequence_gaps"], r["epoch_bumps"], r["fenced"], r["producer_epoch"]) == (2, 1, 1, 1)


def test_a_transaction_from_its_first_add_to_its_end_and_a_hanging_one():
    x = TxnTracker()
    x.apply((INIT, 0.5, "tx", 10_000))
    x.apply((ADD, 1.0, CLIENT, [("tx", 7, 0, [("t", None, 0), ("t", None, 1)])]))
    x.apply((PRODUCE, 1.1, CLIENT, "tx", [(TP, 7, 0, 3, E.NONE, 40), (TP, 7, 0, 3, E.NONE, 40)]))
    x.apply((END, 1.5, "tx", False, E.CONCURRENT_TRANSACTIONS))  # retriable: asked again
    x.apply((END, 1.7, "tx", True, E.NONE))
    x.apply((ADD, 2.0, CLIENT, [("tx", 7, 0, [("t", None, 2)])]))
    [done, hanging] = x.transactions(now=20.0)
    assert (done["outcome"], done["records"], done["duration_ms"], done["timeout_ms"]) == (
        "commit",
        3,
        700.0,
        10_000,
    )
    assert [p["partition"] for p in done["partitions"]] == [0, 1]
    assert (hanging["outcome"], hanging["end"]) == ("hanging", None)  # 18 s open, its timeout 10 s
    assert x.transactions(now=5.0)[1]["outcome"] == "open"


def test_a_fenced_end_ends_the_transaction_with_its_error():
    x = TxnTracker()
    x.apply((ADD, 1.0, CLIENT, [("tx", 7, 0, [("t", None, 0)])]))
    x.apply((END, 1.5, "tx", True, E.PRODUCER_FENCED))
    [t] = x.transactions()
    assert (t["outcome"], t["error"]) == ("commit", "PRODUCER_FENCED")


def test_e2e_matches_every_fetched_record_inside_a_batch():
    e = E2ETracker()
    producer, consumer = ("10.0.0.5", "p"), ("10.0.0.6", "c")
    e.apply((MEMBER, consumer, "g", 0.5))
    e.apply((PRODUCED, 1.0, producer, [(TP, 100, [(10, 1000.5)])]))  # offsets 100..109
    # a fetch starting inside the batch: the records before its fetch offset are not the consumer's
    e.apply((FETCHED, 1.25, consumer, [(TP, 104, [(100, 109)])]))
    e.apply((FETCHED, 3.0, consumer, [(TP, 120, [(120, 125)])]))  # produced before the capture
    [r] = e.rows()
    assert (r["count"], r["p50_ms"], r["group"], r["producer_client"]) == (6, 250.0, "g", "p@10.0.0.5")
    assert r["timestamp"] is None  # the batch's first record (offset 100) was not this fetch's
    assert e.fetched_unmatched == 6 and "6 fetched records" in e.coverage()


def test_latency_percentiles_exact_then_bucketed():
    lat = Latencies()
    for i in range(1, 101):
        lat.add(float(i), 1)
    assert (lat.quantile(0.5), lat.quantile(0.99), lat.quantile(1.0)) == (50.0, 99.0, 100.0)
    big = Latencies()
    for i in range(1, 60_001):
        big.add(i / 10, 1)
    assert abs(big.quantile(0.5) - 3000) / 3000 < 0.011
    assert big.quantile(1.0) == 6000.0


def test_the_transactional_recording():
    a = Analysis("captures/librdkafka-txn.pcap")
    ins = ProducerInsights(a.knowledge.topic_ids)
    outcome = a.run(ins)
    txns = ins.txns.transactions(outcome.last_ts)
    assert [t["outcome"] for t in txns] == ["commit", "abort", "commit"]
    assert [t["records"] for t in txns] == [3, 3, 3]
    assert txns[2]["offsets_committed"] == [
        {"group": "g-librdkafka-txn", "topic": "rdk-txn-source", "partition": 0, "offset": 7}
    ]
    [p] = ins.producers.rows()
    assert (p["transactional_id"], p["batches"], p["records"], p["retried_records"]) == (
        "txn-librdkafka-txn",
        9,
        9,
        0,
    )


@pytest.mark.parametrize("name", ["kafka-python-0.9-gzip", "tansu-kafka-python-0.10.1-none"])
def test_refused_batches_are_failed_records(name):
    a = Analysis(f"captures/{name}.pcap")
    ins = ProducerInsights(a.knowledge.topic_ids)
    a.run(ins)
    [p] = ins.producers.rows()
    assert p["failed_records"] == p["records"] > 0 and p["duplicates_written"] == 0
