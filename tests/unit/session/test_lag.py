"""Lag from the wire (analyzer.session.lag) on the bundled recordings, against what their clients
recorded (captures/manifest.json): the end offset of each partition is the offset after the last
record the producer's delivery reports gave (a transaction's markers take an offset each), a
group's last commit of a partition is the offset after the last record its consumer received
(or what the transactional producer sent to the transaction), and the lag at that commit is
their difference."""

import json
from collections import defaultdict

import pytest

from analyzer.pipeline import Analysis
from analyzer.session.burrow import Params
from analyzer.session.lag import LagTracker
from tests.helpers.captures import CAPTURES, is_tls_capture

MANIFEST = {e["file"]: e for e in json.loads((CAPTURES / "manifest.json").read_text())}
KEYS = "\n".join(p.read_text() for p in sorted(CAPTURES.glob("*.keys")))
# (the producer-* scenarios, errors injected on purpose, are tests/captures/test_producer_truth.py's;
# producer-txn's markers and the mock's duplicate answers leave its delivery offsets apart)
PRODUCED = sorted(
    n
    for n, e in MANIFEST.items()
    if any(r["offset"] is not None for r in e["produced"]) and n != "producer-txn.pcap"
)
# recordings whose consumers commit nothing: assign() readers (acks0), kafka-python at
# api_version 0.8.2 (no group API), sarama against Tansu (its group session never joins)
UNCOMMITTED = {"librdkafka-acks0.pcap", "tansu-librdkafka-acks0.pcap", "kafka-python-0.8.2-none.pcap"}
UNCOMMITTED.add("tansu-sarama-zstd.pcap")
# (the group-* scenarios, several groups each, are tests/captures/test_group_insights.py's; the
# producer-idempotent and producer-plain readers commit nothing; producer-txn's processor commits
# through its transactions, consume-transform-produce, checked by test_producer_truth.py)
UNCOMMITTED |= {"producer-idempotent.pcap", "producer-plain.pcap"}
COMMITTED = sorted(
    n
    for n, e in MANIFEST.items()
    if e["consumed"] and n not in UNCOMMITTED and not n.startswith("group-") and n != "producer-txn.pcap"
)


def track(name: str, tmp_path) -> LagTracker:
    keys = tmp_path / "keys"
    keys.write_text(KEYS)
    a = Analysis(str(CAPTURES / name), tls_keylog=str(keys) if is_tls_capture(CAPTURES / name) else None)
    t = LagTracker(a.knowledge.topic_ids)
    a.run(t)
    return t


def last_offsets(records) -> dict[tuple[str, int], int]:
    out: dict[tuple[str, int], int] = defaultdict(lambda: -1)
    for r in records:
        if r["offset"] is not None:
            tp = (r["topic"], r["partition"])
            out[tp] = max(out[tp], r["offset"])
    return dict(out)


@pytest.mark.parametrize("name", PRODUCED)
def test_end_offsets_follow_the_delivery_reports(name, tmp_path):
    t = track(name, tmp_path)
    for tp, last in last_offsets(MANIFEST[name]["produced"]).items():
        if name == "librdkafka-txn.pcap":  # each of the transactions' markers takes an offset
            assert t.ends[tp] > last + 1
        else:
            assert t.ends[tp] == last + 1, tp


@pytest.mark.parametrize("name", [n for n in COMMITTED if n in PRODUCED])
def test_the_last_commit_is_after_the_last_record_consumed_and_its_lag_is_exact(name, tmp_path):
    t = track(name, tmp_path)
    e = MANIFEST[name]
    if name == "librdkafka-txn.pcap":  # consume-transform-produce: the offsets sent to the transaction
        (op,) = [op for op in e["operations"] if op["name"] == "send_offsets_to_transaction"]
        expected = {(op["group"], topic, p): off for topic, p, off in op["offsets"]}
    else:
        (group,) = {g for (g, _t, _p) in t.last}
        expected = {(group, *tp): last + 1 for tp, last in last_offsets(e["consumed"]).items()}
    assert {k: t.last[k].committed_offset for k in expected} == expected
    for key, row in t.last.items():
        tp = key[1:]
        if tp in t.ends:
            assert row.lag == max(0, row.end_offset - row.committed_offset)
            assert row.end_offset <= t.ends[tp]
            if row.lag == 0:
                assert row.lag_seconds == 0.0
        else:  # the source topic of the transactional reader is not fetched in the recording
            assert row.lag is None and row.lag_seconds is None
            assert "no end offset seen" in t.coverage(key[0])


def test_a_caught_up_group_is_ok_with_no_lag(tmp_path):
    (status,) = track("librdkafka-produce-consume-zstd.pcap", tmp_path).status()
    assert status["status"] == "OK" and all(p["lag"] == 0 for p in status["partitions"])
    assert status["coverage"] == "end offsets seen for every committed partition"


def test_lag_in_seconds_is_the_commit_time_minus_the_first_uncommitted_append(tmp_path):
    """A commit behind the end: its lag in seconds counts from the append time of the first record
    it has not committed (the batch holding it, as its Produce answer or a Fetch gave it)."""
    for name in COMMITTED:
        if name not in PRODUCED:
            continue
        t = track(name, tmp_path)
        for row in t.rows:
            if row.lag:
                a = t.appends[(row.topic, row.partition)]
                when = a.time_of(row.committed_offset)
                assert when is None or row.lag_seconds == pytest.approx(max(0.0, row.time - when))


def test_burrow_windows_follow_the_commits(tmp_path):
    t = LagTracker(params=Params(intervals=2))
    a = Analysis(str(CAPTURES / "librdkafka-produce-consume-zstd.pcap"))
    t.topic_ids = a.knowledge.topic_ids
    a.run(t)
    for windows in t.windows.values():
        for w in windows.values():
            assert 0 < len(w.commits) <= 2


@pytest.mark.parametrize("name", sorted(UNCOMMITTED))
def test_readers_that_commit_nothing_have_no_lag_rows(name, tmp_path):
    t = track(name, tmp_path)
    assert t.rows == [] and t.status() == []
