"""What a group's members fetched (analyzer.session.consumption): KIP-227 fetch sessions
followed per connection, the pause of each partition across a rebalance, the consumer's
position lag between commits.

The Fetch exchanges here are encoded by kio (an encoder that shares nothing with the analyzer)
and decoded by the analyzer, as on the wire; none of the bundled recordings has a client that
asks for incremental fetch sessions (the librdkafka mock answers session id 0)."""

from __future__ import annotations

import datetime as dt
import io

from kio.schema.fetch.v7 import request as rq
from kio.schema.fetch.v7 import response as rs
from kio.serial import entity_writer
from kio.static.primitive import i8, i16, i32, i64

from analyzer.dissect.message import decode_request, decode_response
from analyzer.model import ConnInfo, Endpoint, Exchange, Frame
from analyzer.session.consumption import ConsumptionTracker, host_of

CONN = ConnInfo(3, Endpoint("10.0.0.5", 40000), Endpoint("10.0.0.7", 9092), 0.0, True, client_direction=0)
ME = ("10.0.0.5", "app")


def _bytes(entity) -> bytes:
    buf = io.BytesIO()
    entity_writer(type(entity))(buf, entity)
    return buf.getvalue()


def _frame(payload: bytes, ts: float, kind: str) -> Frame:
    return Frame(
        conn=3,
        direction=0,
        offset=0,
        length=len(payload),
        payload=payload,
        ts_first=ts,
        ts_last=ts,
        packet_indexes=(1,),
        kind=kind,
    )


def fetch(t, wants, forgotten=(), session_id=0, epoch=-1, answer_session=0, hws=None, corr=1):
    """A Fetch v7 exchange at ``t`` asking ``wants`` {(topic, partition): offset}, forgetting
    ``forgotten`` [(topic, partition)], answered 0.1 s later with the high watermarks ``hws``."""
    topics: dict[str, list] = {}
    for (topic, p), off in wants.items():
        topics.setdefault(topic, []).append(
            rq.FetchPartition(
                partition=i32(p),
                fetch_offset=i64(off),
                log_start_offset=i64(0),
                partition_max_bytes=i32(1 << 20),
            )
        )
    gone: dict[str, list] = {}
    for topic, p in forgotten:
        gone.setdefault(topic, []).append(i32(p))
    req = rq.FetchRequest(
        replica_id=i32(-1),
        max_wait=dt.timedelta(milliseconds=500),
        min_bytes=i32(1),
        max_bytes=i32(1 << 24),
        isolation_level=i8(0),
        session_id=i32(session_id),
        session_epoch=i32(epoch),
        topics=tuple(rq.FetchTopic(topic=t_, partitions=tuple(ps)) for t_, ps in topics.items()),
        forgotten_topics_data=tuple(
            rq.ForgottenTopic(topic=t_, partitions=tuple(ps)) for t_, ps in gone.items()
        ),
    )
    head = rq.FetchRequest.__header_schema__(
        request_api_key=i16(1), request_api_version=i16(7), correlation_id=i32(corr), client_id="app"
    )
    resp_topics: dict[str, list] = {}
    for (topic, p), hw in (hws or {}).items():
        resp_topics.setdefault(topic, []).append(
            rs.PartitionData(
                partition_index=i32(p),
                error_code=rs.ErrorCode.none,
                high_watermark=i64(hw),
                last_stable_offset=i64(hw),
                log_start_offset=i64(0),
                aborted_transactions=(),
                records=None,
            )
        )
    resp = rs.FetchResponse(
        throttle_time=dt.timedelta(0),
        error_code=rs.ErrorCode.none,
        session_id=i32(answer_session),
        responses=tuple(
            rs.FetchableTopicResponse(topic=t_, partitions=tuple(ps)) for t_, ps in resp_topics.items()
        ),
    )
    rhead = rs.FetchResponse.__header_schema__(correlation_id=i32(corr))
    qbytes, abytes = _bytes(head) + _bytes(req), _bytes(rhead) + _bytes(resp)
    q = decode_request(_frame(qbytes, t, "request"))
    a = decode_response(_frame(abytes, t + 0.1, "response"), 1, 7)
    assert q.issues == [] and a.issues == [], (q.issues, a.issues)
    return Exchange(CONN, q, a, [])


def test_an_incremental_fetch_names_the_partitions_of_its_session():
    c = ConsumptionTracker()
    full = fetch(1.0, {("t", 0): 5, ("t", 1): 7}, session_id=0, epoch=0, answer_session=77, hws={("t", 0): 9})
    facts = c.facts(full)
    assert facts is not None and facts[2] == ME
    assert sorted(ref for ref, _, _ in facts[3]) == [("t", None, 0), ("t", None, 1)]
    # incremental: only partition 1 moved on, partition 2 is added, partition 0 stays in the session
    inc = c.facts(fetch(2.0, {("t", 1): 8, ("t", 2): 0}, session_id=77, epoch=1, answer_session=77))
    assert inc is not None
    named = {ref[2]: off for ref, off, _ in inc[3]}
    assert named == {0: None, 1: 8, 2: 0}  # 0 named by the session, without an offset of its own
    # forgotten: partition 0 leaves the session
    inc2 = c.facts(fetch(3.0, {}, forgotten=[("t", 0)], session_id=77, epoch=2, answer_session=77))
    assert inc2 is not None and sorted(ref[2] for ref, _, _ in inc2[3]) == [1, 2]
    # a full fetch without a session (epoch -1) starts again from what it names
    again = c.facts(fetch(4.0, {("t", 3): 1}, session_id=0, epoch=-1))
    assert again is not None and [ref[2] for ref, _, _ in again[3]] == [3]


def test_a_pause_runs_from_the_last_answer_before_the_assignment_to_the_owners_first_fetch():
    c = ConsumptionTracker()
    other = ("10.0.0.6", "other")
    c.apply((1.0, 1.5, other, [(("t", None, 0), 4, 9)]))  # the old owner's last fetch, answered at 1.5
    c.assigned("g", 0, "m1", ME, {ME, other}, {"t": [0]}, 3.0)
    c.apply((2.9, 3.2, other, [(("t", None, 0), 4, 9)]))  # not the new owner: the pause goes on
    [p] = c.rebalance_pauses("g", 0)
    assert p.first_fetch is None and p.pause_ms is None
    c.apply((4.0, 4.5, ME, [(("t", None, 0), 4, 9)]))
    [p] = c.rebalance_pauses("g", 0)
    assert (p.last_fetch, p.first_fetch, p.pause_ms, p.member) == (1.5, 4.0, 2500.0, "m1")


def test_a_kept_partition_barely_pauses_and_the_longest_wait_of_a_partition_is_kept():
    c = ConsumptionTracker()
    c.apply((1.0, 1.5, ME, [(("t", None, 0), 4, 9), (("t", None, 1), 4, 9)]))
    c.assigned("g", 0, "m1", ME, {ME}, {"t": [0, 1]}, 1.6)  # cooperative, first round: kept
    c.apply((1.5, 2.0, ME, [(("t", None, 0), 4, 9), (("t", None, 1), 4, 9)]))  # fetching across
    c.assigned("g", 0, "m1", ME, {ME}, {"t": [0]}, 2.5)  # second round: 0 kept again
    c.apply((2.6, 2.7, ME, [(("t", None, 0), 4, 9)]))
    pauses = {p.partition: p.pause_ms for p in c.rebalance_pauses("g", 0)}
    assert pauses == {0: 600.0, 1: 0.0}  # 0: from the answer at 2.0 to the request at 2.6


def test_position_lag_between_commits():
    c = ConsumptionTracker()
    tp = ("t", None, 0)
    c.apply((1.0, 1.1, ME, [(tp, 10, 30)]))
    c.apply((2.0, 2.1, ME, [(tp, 12, 50)]))  # 38 behind: the largest since the last commit
    c.apply((3.0, 3.1, ME, [(tp, 40, 52)]))
    assert c.take(ME, ("t", 0)) == (40, 38)
    assert c.take(ME, ("t", 0)) == (40, 12)  # since that commit: the lag it had then
    assert c.take(("10.0.0.9", "x"), ("t", 0)) == (None, None)


def test_a_follower_fetching_is_not_a_consumer():
    c = ConsumptionTracker()
    ex = fetch(1.0, {("t", 0): 5})
    ex.request.body.child("replica_id").value = 2  # type: ignore[union-attr]
    assert c.facts(ex) is None


def test_hosts():
    assert host_of("10.0.0.5:40000") == "10.0.0.5"
    assert host_of("[::1]:9092") == "[::1]"
    assert host_of(None) == ""
