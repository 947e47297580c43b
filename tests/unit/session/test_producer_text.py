"""The producers' and transactions' words (analyzer.session.producer_text): what the coverage
says as the capture shows more or less (unanswered records, rows let go, timeouts not seen),
and a producer's and a transaction's lines."""

from __future__ import annotations

from analyzer.session.producer_text import (
    producer_head,
    producer_problems,
    producers_coverage,
    transaction_text,
    transactions_coverage,
)


def producer(**kw) -> dict:
    p = {
        "client_id": "app",
        "client": "10.0.0.1:5000",
        "producer_id": 7,
        "producer_epoch": 2,
        "transactional_id": None,
        "idempotent": True,
        "retried_records": 0,
        "failed_records": 0,
        "unanswered_records": 0,
        "duplicates_written": 0,
        "sequence_gaps": 0,
        "epoch_bumps": 0,
        "fenced": 0,
    }
    return p | kw


def txn(**kw) -> dict:
    x = {
        "transactional_id": "t1",
        "producer_id": 7,
        "producer_epoch": 0,
        "start": 10.0,
        "end": 10.5,
        "duration_ms": 500.0,
        "outcome": "commit",
        "error": None,
        "timeout_ms": 60000,
        "partitions": [{"topic": "out", "partition": 1}],
        "records": 3,
        "offsets_committed": [],
    }
    return x | kw


def test_producers_coverage_says_what_the_capture_missed():
    base = {"producers": [producer()], "retries_dropped": 0, "e2e": [], "e2e_coverage": "x"}
    assert (
        producers_coverage(base) == "a batch first sent before the capture starts at its first attempt seen"
    )
    more = base | {
        "producers": [producer(unanswered_records=4), producer(unanswered_records=1)],
        "retries_dropped": 12,
        "e2e": [{}],
        "e2e_coverage": "every fetched record's Produce was in the capture",
    }
    said = producers_coverage(more)
    assert "5 records whose last attempt had no answer in the capture" in said
    assert "12 older retries let go" in said
    assert said.endswith("end-to-end: every fetched record's Produce was in the capture")


def test_transactions_coverage_says_what_the_capture_missed():
    base = {"transactions": [txn()], "finished_dropped": 0, "open_dropped": 0}
    assert transactions_coverage(base) == "a transaction begun before the capture is not listed"
    more = {"transactions": [txn(timeout_ms=None), txn()], "finished_dropped": 3, "open_dropped": 2}
    said = transactions_coverage(more)
    assert "1 without their InitProducerId in the capture" in said and "(60 s)" in said
    assert "3 older finished transactions let go" in said and "2 open transactions let go" in said


def test_a_producer_and_a_transaction_in_words():
    assert producer_head(producer()) == "producer app 10.0.0.1:5000 (producer id 7 epoch 2)"
    plain = producer(idempotent=False, producer_id=-1, client_id=None, transactional_id=None)
    assert producer_head(plain) == "producer - 10.0.0.1:5000 (not idempotent)"
    assert producer_problems(producer()) == "every batch written once, at the first attempt"
    assert producer_problems(producer(retried_records=3, failed_records=2)) == (
        "3 records sent again; 2 records failed (last attempt refused, none written: lost unless resent)"
    )
    when = lambda t: "-" if t is None else f"{t - 10:.3f}"  # noqa: E731
    assert transaction_text(txn(), when) == "0.000  t1 pid 7 epoch 0: commit 500.0 ms; 3 records to out[1]"
    hanging = txn(outcome="hanging", end=None, duration_ms=None, timeout_ms=2000)
    assert "HANGING (timeout 2000 ms)" in transaction_text(hanging, when)
