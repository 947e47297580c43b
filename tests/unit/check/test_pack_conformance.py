"""Protocol conformance judgements on crafted bytes (issue #12): each test builds the TCP
conversation of one deviation, runs the real pipeline and `check`'s built-in pack, and asserts the
exact finding: its code, severity, byte offset and the rule that reports it."""

from __future__ import annotations

import gzip
import io
import json
import struct
import zlib
from contextlib import redirect_stderr, redirect_stdout

from analyzer import cli
from analyzer.dissect.constants import ApiKey
from analyzer.dissect.crc import crc32c
from analyzer.dissect.message import Options
from analyzer.events import ConnIssue
from analyzer.model import Exchange, Severity
from analyzer.pipeline import Analysis
from tests.helpers.captures import CAPTURES
from tests.helpers.packets import Conversation, cstr, uvarint, write_pcap

# -- byte builders ------------------------------------------------------------------------------


def zz(n: int) -> bytes:
    return uvarint((n << 1) ^ (n >> 63))


def record(offset_delta: int, ts_delta: int = 0, value: bytes = b"v") -> bytes:
    body = b"\x00" + zz(ts_delta) + zz(offset_delta) + zz(-1) + zz(len(value)) + value + zz(0)
    return zz(len(body)) + body


def batch(
    deltas=(0, 1, 2),
    count=None,
    last_offset_delta=None,
    base_ts=1_700_000_000_000,
    max_ts=None,
    ts_deltas=None,
    pid=-1,
    epoch=-1,
    seq=-1,
    attrs=0,
) -> bytes:
    """A magic 2 record batch with a correct CRC-32C."""
    ts_deltas = ts_deltas or [0] * len(deltas)
    recs = b"".join(record(d, t) for d, t in zip(deltas, ts_deltas, strict=True))
    count = len(deltas) if count is None else count
    lod = (len(deltas) - 1 if deltas else 0) if last_offset_delta is None else last_offset_delta
    max_ts = base_ts + max(ts_deltas, default=0) if max_ts is None else max_ts
    after_crc = struct.pack(">hiqqqhii", attrs, lod, base_ts, max_ts, pid, epoch, seq, count) + recs
    crc = crc32c(after_crc)
    head = struct.pack(">iBI", 0, 2, crc)  # partition leader epoch, magic, crc
    blen = len(head) + len(after_crc)
    return struct.pack(">qi", 0, blen) + head + after_crc


def produce_request(corr: int, batches: list[bytes], acks: int = -1, topic: str = "t", version: int = 7):
    """A size-prefixed Produce v3-v8 request (non-flexible), one partition."""
    records = b"".join(batches)
    body = struct.pack(">hhi", -1, acks, 30000)  # transactional_id null, acks, timeout
    body += struct.pack(">i", 1) + struct.pack(">h", len(topic)) + topic.encode()
    body += struct.pack(">i", 1) + struct.pack(">i", 0) + struct.pack(">i", len(records)) + records
    cid = b"test-client"
    p = struct.pack(">hhih", 0, version, corr, len(cid)) + cid + body
    return struct.pack(">i", len(p)) + p


def produce_response(corr: int, topic: str = "t", version: int = 7) -> bytes:
    body = struct.pack(">i", 1) + struct.pack(">h", len(topic)) + topic.encode()
    body += struct.pack(">i", 1) + struct.pack(">ihqq", 0, 0, 0, -1)
    if version >= 5:
        body += struct.pack(">q", 0)  # log_start_offset
    body += struct.pack(">i", 0)  # throttle
    p = struct.pack(">i", corr) + body
    return struct.pack(">i", len(p)) + p


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def request_header(key: int, version: int, corr: int, flexible: bool, client_id: str = "tc") -> bytes:
    cid = client_id.encode()
    h = struct.pack(">hhih", key, version, corr, len(cid)) + cid
    return h + (b"\x00" if flexible else b"")


# -- running --------------------------------------------------------------------------------------


def capture(tmp_path, *convs: Conversation, name: str = "c.pcap"):
    pkts = [p for c in convs for p in c.pkts]
    path = tmp_path / name
    write_pcap(path, [(1_700_000_000 + i * 0.001, bytes(p)) for i, p in enumerate(pkts)])
    return path


def analyse(path, bodies: bool = True):
    evs = list(Analysis(path, Options(records_bodies=bodies)).events())
    exs = [e for e in evs if type(e) is Exchange]
    conn_issues = [e.issue for e in evs if type(e) is ConnIssue]
    return exs, conn_issues


def check_json(path, *args) -> tuple[int, dict]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = cli.main(["check", str(path), "--format", "json", *args])
    return rc, json.loads(out.getvalue())


def rule(doc: dict, rid: str) -> dict:
    return next(r for r in doc["rules"] if r["id"] == rid)


def issues_of(exs, code: str):
    return [i for ex in exs for i in ex.all_issues() if i.code == code]


def produce_conv(*batch_lists, acks: int = -1, answer: bool = True) -> Conversation:
    c = Conversation().handshake()
    for n, bl in enumerate(batch_lists, 1):
        c.send(0, produce_request(n, bl, acks=acks))
        if answer:
            c.send(1, produce_response(n))
    return c.close()


# Produce v7 request: size(4) key(2) ver(2) corr(4) cid(2+11) txn(2) acks(2) timeout(4) topics(4)
# name(2+1) partitions(4) index(4) records length(4): the first batch starts at frame offset 48
BATCH_AT = 4 + 2 + 2 + 4 + 2 + 11 + 2 + 2 + 4 + 4 + 3 + 4 + 4 + 4 - 4  # payload offset (no size prefix)


# -- 2. record batch validation -------------------------------------------------------------------


def test_batch_with_record_count_0(tmp_path):
    path = capture(tmp_path, produce_conv([batch(deltas=(), count=0, last_offset_delta=0)]))
    exs, _ = analyse(path)
    [i] = issues_of(exs, "records.empty_batch")
    assert i.severity == Severity.WARNING
    assert i.offset == BATCH_AT + 57  # the record_count field
    assert "record_count 0" in i.message
    rc, doc = check_json(path)
    r = rule(doc, "kafka.invalid-batches")
    assert rc == 0 and r["status"] == "warned" and r["count"] == 1
    assert "records.empty_batch" in r["findings"][0]["message"]


def test_wrong_last_offset_delta(tmp_path):
    path = capture(tmp_path, produce_conv([batch(deltas=(0, 1, 2), last_offset_delta=1)]))
    exs, _ = analyse(path)
    [i] = issues_of(exs, "records.bad_offset_range")
    assert i.severity == Severity.WARNING and i.offset == BATCH_AT + 23
    assert "last_offset_delta 1 with 3 records (must be 2)" in i.message and "overlap" in i.message
    _, doc = check_json(path)
    assert rule(doc, "kafka.invalid-batches")["count"] == 1


def test_offset_deltas_out_of_order_and_timestamps_outside_the_batch(tmp_path):
    b = batch(deltas=(0, 2, 1), ts_deltas=[0, 5, -3], max_ts=1_700_000_000_005)
    path = capture(tmp_path, produce_conv([b]))
    exs, _ = analyse(path)
    [d] = issues_of(exs, "records.bad_offset_delta")
    # each record is 8 bytes (length, attributes, timestamp delta, offset delta, null key, value
    # length, value, header count); record 1's offset delta follows its first three
    rec1 = BATCH_AT + 61 + 8
    assert d.severity == Severity.WARNING and d.offset == rec1 + 3
    assert "record 1 has offset delta 2 (expected 1)" in d.message
    [t] = issues_of(exs, "records.bad_timestamp")
    assert t.offset == rec1 + 8 + 2  # record 2's timestamp delta
    assert "record 2" in t.message and "outside the batch range" in t.message
    # without record bodies (check's default) the record headers are scanned: the same findings
    exs, _ = analyse(path, bodies=False)
    assert issues_of(exs, "records.bad_offset_delta") == [d]
    assert issues_of(exs, "records.bad_timestamp") == [t]
    _, doc = check_json(path)
    assert rule(doc, "kafka.invalid-batches")["count"] == 2


def test_max_timestamp_before_base_timestamp(tmp_path):
    path = capture(tmp_path, produce_conv([batch(base_ts=2000, max_ts=1000)]))
    exs, _ = analyse(path, bodies=False)
    [t] = issues_of(exs, "records.bad_timestamp")
    assert t.offset == BATCH_AT + 35 and "1000 ms before base_timestamp 2000" in t.message


def test_a_healthy_batch_says_nothing(tmp_path):
    path = capture(tmp_path, produce_conv([batch(pid=7, epoch=0, seq=0)], [batch(pid=7, epoch=0, seq=3)]))
    exs, _ = analyse(path)
    assert [i for ex in exs for i in ex.all_issues() if i.code.startswith("records.")] == []
    rc, doc = check_json(path)
    assert rc == 0 and rule(doc, "kafka.invalid-batches")["status"] == "passed"


def test_sequence_gap_and_retry_across_requests(tmp_path):
    conv = produce_conv(
        [batch(pid=7, epoch=0, seq=0)],  # 0..2
        [batch(pid=7, epoch=0, seq=0)],  # a retry of the same batch: no finding
        [batch(pid=7, epoch=0, seq=3)],  # 3..5
        [batch(pid=7, epoch=0, seq=9)],  # a gap: 6 expected
        [batch(pid=7, epoch=1, seq=0)],  # a new epoch starts afresh
    )
    path = capture(tmp_path, conv)
    exs, _ = analyse(path)
    [i] = issues_of(exs, "records.bad_sequence")
    assert i.severity == Severity.WARNING and i.offset == BATCH_AT + 53
    assert "base_sequence 9 skips the expected 6" in i.message and "producer 7 epoch 0 on t-0" in i.message
    bad = [ex for ex in exs if any(j.code == "records.bad_sequence" for j in ex.all_issues())]
    assert [ex.correlation_id for ex in bad] == [4]
    _, doc = check_json(path)
    assert rule(doc, "kafka.invalid-batches")["count"] == 1


# -- 4. a broker answering acks=0 -------------------------------------------------------------


def test_broker_answering_acks0_is_paired_and_named_once_per_connection(tmp_path):
    path = capture(tmp_path, produce_conv([batch()], [batch()], [batch()], acks=0))
    exs, conn_issues = analyse(path)
    assert len(exs) == 3
    for ex in exs:
        assert ex.request is not None and ex.response is not None
        assert ex.response.body is not None and ex.response.api_version == 7
        assert [i.code for i in ex.all_issues()] == []
    [q] = conn_issues
    assert q.code == "quirk.acks0_answered" and q.severity == Severity.WARNING
    assert q.message.startswith(
        "the broker answered 3 Produce requests sent with acks=0 (the first: correlation id 1)"
    )
    rc, doc = check_json(path)
    assert rc == 0
    assert rule(doc, "kafka.peer-quirks")["count"] == 1
    assert rule(doc, "kafka.unanswered")["status"] == "passed"
    assert rule(doc, "kafka.protocol-errors")["status"] == "passed"


def test_unanswered_acks0_stays_a_note(tmp_path):
    path = capture(tmp_path, produce_conv([batch()], [batch()], acks=0, answer=False))
    exs, conn_issues = analyse(path)
    assert conn_issues == []
    assert [[i.code for i in ex.all_issues()] for ex in exs] == [["pairing.acks0"], ["pairing.acks0"]]
    assert all(ex.response is None for ex in exs)


# -- 3. an error code too new for its version -------------------------------------------------


def s16(s: str | None) -> bytes:
    return struct.pack(">h", -1) if s is None else struct.pack(">h", len(s)) + s.encode()


def b32(b: bytes) -> bytes:
    return struct.pack(">i", len(b)) + b


def metadata_v2(conv: Conversation, corr: int, cluster_id: str) -> None:
    conv.send(0, frame(request_header(3, 2, corr, False) + struct.pack(">i", 0)))
    body = struct.pack(">i", 1) + struct.pack(">i", 1) + s16("h") + struct.pack(">i", 9092) + s16(None)
    body += s16(cluster_id) + struct.pack(">i", 1) + struct.pack(">i", 0)
    conv.send(1, frame(struct.pack(">i", corr) + body))


def subscription(version: int, topics=("t",), owned: bool = True) -> bytes:
    b = struct.pack(">h", version) + struct.pack(">i", len(topics))
    b += b"".join(s16(t) for t in topics) + b32(b"")  # topics, user_data
    if version >= 1 and owned:
        b += struct.pack(">i", 0)  # owned_partitions
    return b


def join_group_v1(corr: int, meta: bytes, member: str = "") -> bytes:
    body = s16("g") + struct.pack(">ii", 10000, 30000) + s16(member) + s16("consumer")
    body += struct.pack(">i", 1) + s16("range") + b32(meta)
    return frame(request_header(11, 1, corr, False) + body)


def join_group_v1_response(corr: int, error: int, members=()) -> bytes:
    body = struct.pack(">hi", error, -1) + s16("") + s16("") + s16("m-1")
    body += struct.pack(">i", len(members)) + b"".join(s16(m) + b32(meta) for m, meta in members)
    return frame(struct.pack(">i", corr) + body)


def test_member_id_required_below_join_group_v4_names_tansu(tmp_path):
    c = Conversation().handshake()
    metadata_v2(c, 1, "tansu_cluster")
    c.send(0, join_group_v1(2, subscription(0)))
    c.send(1, join_group_v1_response(2, 79))
    path = capture(tmp_path, c.close())
    exs, _ = analyse(path)
    [i] = issues_of(exs, "quirk.error_too_new")
    assert i.severity == Severity.WARNING and i.offset == 4  # the error_code after the correlation id
    assert i.message.startswith("Tansu answered JoinGroup v1 with MEMBER_ID_REQUIRED, which KIP-394")
    rc, doc = check_json(path)
    assert rc == 0 and rule(doc, "kafka.peer-quirks")["count"] == 1
    assert rule(doc, "kafka.error-responses")["status"] == "passed"


def test_member_id_required_at_join_group_v4_is_the_protocol(tmp_path):
    c = Conversation().handshake()
    body = s16("g") + struct.pack(">ii", 10000, 30000) + s16("") + s16("consumer")
    body += struct.pack(">i", 1) + s16("range") + b32(subscription(0))
    c.send(0, frame(request_header(11, 4, 1, False) + body))
    resp = struct.pack(">ihi", 0, 79, -1) + s16("") + s16("") + s16("m-1") + struct.pack(">i", 0)
    c.send(1, frame(struct.pack(">i", 1) + resp))
    exs, _ = analyse(capture(tmp_path, c.close()))
    assert [i.code for ex in exs for i in ex.all_issues()] == []


def message_v1(value: bytes = b"v", ts: int = 1_700_000_000_000) -> bytes:
    """A legacy message set entry, magic 1, with a correct CRC-32."""
    rest = struct.pack(">bbq", 1, 0, ts) + struct.pack(">i", -1) + b32(value)
    crc = zlib.crc32(rest)
    return struct.pack(">qiI", 0, 4 + len(rest), crc) + rest


def produce_v2_request(corr: int, records: bytes) -> bytes:
    body = struct.pack(">hi", -1, 30000) + struct.pack(">i", 1) + s16("t")  # acks, timeout, topic
    body += struct.pack(">i", 1) + struct.pack(">i", 0) + b32(records)
    return frame(request_header(0, 2, corr, False) + body)


def produce_error_response(corr: int, error: int, version: int) -> bytes:
    body = struct.pack(">i", 1) + s16("t") + struct.pack(">i", 1) + struct.pack(">ihqq", 0, error, -1, -1)
    if version >= 5:
        body += struct.pack(">q", -1)  # log_start_offset
    return frame(struct.pack(">i", corr) + body + struct.pack(">i", 0))


def test_unknown_producer_id_to_produce_v2_names_tansu(tmp_path):
    c = Conversation().handshake()
    metadata_v2(c, 1, "tansu_cluster")
    c.send(0, produce_v2_request(2, message_v1()))
    c.send(1, produce_error_response(2, 59, version=2))
    path = capture(tmp_path, c.close())
    exs, _ = analyse(path)
    [i] = issues_of(exs, "quirk.error_too_new")
    # the partition's error_code: corr(4) topics(4) name(3) partitions(4) index(4)
    assert i.severity == Severity.WARNING and i.offset == 19
    assert i.message.startswith("Tansu answered Produce v2 with UNKNOWN_PRODUCER_ID, which KIP-98")
    rc, doc = check_json(path)
    assert rule(doc, "kafka.peer-quirks")["count"] == 1
    assert rule(doc, "kafka.error-responses")["status"] == "passed"
    # the records were not written all the same: lost (the only failure; a waiver names the quirk)
    assert rc == 1 and [r["id"] for r in doc["rules"] if r["status"] == "failed"] == ["kafka.producer-lost"]


def test_unknown_producer_id_to_produce_v3_is_an_error_response(tmp_path):
    c = Conversation().handshake()
    c.send(0, produce_request(1, [batch(pid=7, epoch=0, seq=0)], version=3))
    c.send(1, produce_error_response(1, 59, version=3))
    path = capture(tmp_path, c.close())
    exs, _ = analyse(path)
    assert issues_of(exs, "quirk.error_too_new") == []
    rc, doc = check_json(path)
    r = rule(doc, "kafka.error-responses")
    assert rc == 1 and r["count"] == 1 and "UNKNOWN_PRODUCER_ID" in r["findings"][0]["message"]
    assert rule(doc, "kafka.peer-quirks")["status"] == "passed"


# -- Fetch records newer than the request version reads ----------------------------------------


def fetch_request(corr: int, version: int) -> bytes:
    body = struct.pack(">iiii", -1, 500, 1, 52428800)  # replica, max_wait, min_bytes, max_bytes
    if version >= 4:
        body += b"\x00"  # isolation_level
    body += struct.pack(">i", 1) + s16("t") + struct.pack(">i", 1) + struct.pack(">iqi", 0, 0, 1048576)
    return frame(request_header(1, version, corr, False) + body)


def fetch_response(corr: int, version: int, records: bytes) -> bytes:
    part = struct.pack(">ihq", 0, 0, 3)  # partition, error, high watermark
    if version >= 4:
        part += struct.pack(">qi", 3, -1)  # last_stable_offset, aborted_transactions null
    body = struct.pack(">i", 0) + struct.pack(">i", 1) + s16("t") + struct.pack(">i", 1) + part + b32(records)
    return frame(struct.pack(">i", corr) + body)


# corr(4) throttle(4) topics(4) name(3) partitions(4) partition(4) error(2) hw(8) records size(4)
FETCH_V3_RECORDS_AT = 37


def test_magic_2_batches_to_fetch_v3_name_tansu(tmp_path):
    c = Conversation().handshake()
    metadata_v2(c, 1, "tansu_cluster")
    c.send(0, fetch_request(2, 3))
    c.send(1, fetch_response(2, 3, batch() + batch(deltas=(0,))))
    path = capture(tmp_path, c.close())
    exs, _ = analyse(path)
    [i] = issues_of(exs, "quirk.fetch_magic_too_new")
    assert i.severity == Severity.WARNING
    assert i.offset == FETCH_V3_RECORDS_AT + 16  # the first batch's magic byte
    assert i.message == (
        f"Tansu answered Fetch v3 with 2 record batches of magic 2 (the first at byte "
        f"{FETCH_V3_RECORDS_AT}), which a v3 client does not read: Kafka converts them to magic 1 for it"
    )
    fetch = next(ex for ex in exs if ex.api_key == 1)
    assert fetch.response.body is not None  # decoded as sent
    rc, doc = check_json(path)
    assert rc == 0 and rule(doc, "kafka.peer-quirks")["count"] == 1


def test_magic_1_messages_to_fetch_v1_and_magic_2_to_v4(tmp_path):
    c = Conversation().handshake()
    c.send(0, fetch_request(1, 1))
    c.send(1, fetch_response(1, 1, message_v1()))
    c.send(0, fetch_request(2, 4))
    c.send(1, fetch_response(2, 4, batch()))
    exs, _ = analyse(capture(tmp_path, c.close()))
    [i] = issues_of(exs, "quirk.fetch_magic_too_new")
    assert i.message.startswith("the broker answered Fetch v1 with 1 message of magic 1")
    assert i.message.endswith("Kafka converts them to magic 0 for it")
    assert i.offset == FETCH_V3_RECORDS_AT + 16  # v1's partition header is v3's
    assert [ex.api_version for ex in exs if not ex.all_issues()] == [4]


# -- 5. kafka-go's subscription v1 in the v0 layout -------------------------------------------


def test_kafka_go_subscription_v1_in_v0_layout(tmp_path):
    meta = subscription(1, topics=("a", "b"), owned=False)
    c = Conversation().handshake()
    c.send(0, join_group_v1(1, meta))
    c.send(1, join_group_v1_response(1, 0, members=[("m-1", meta)]))
    path = capture(tmp_path, c.close())
    exs, _ = analyse(path)
    [ex] = exs
    req_q = [i for i in ex.request.issues]
    resp_q = [i for i in ex.response.issues]
    assert [i.code for i in req_q] == ["quirk.kafka_go_subscription"]
    assert [i.code for i in resp_q] == ["quirk.kafka_go_subscription"]
    # the metadata bytes: header (12) + group_id, timeouts, member_id, protocol_type, count, name,
    # length prefix
    assert req_q[0].offset == 12 + 3 + 8 + 2 + 10 + 4 + 7 + 4 and req_q[0].severity == Severity.WARNING
    assert "labelled version 1 but written in the version-0 layout" in req_q[0].message
    assert "segmentio/kafka-go" in req_q[0].message
    m = ex.request.body.child("protocols").children[0].child("metadata")
    assert m.children[0].value == 1  # the label kept
    assert [t.value for t in m.children[1].child("topics").children] == ["a", "b"]
    rc, doc = check_json(path)
    assert rc == 0 and rule(doc, "kafka.peer-quirks")["count"] == 2
    assert rule(doc, "kafka.protocol-errors")["status"] == "passed"


def test_a_real_v1_subscription_is_clean(tmp_path):
    meta = subscription(1, topics=("a",))
    c = Conversation().handshake()
    c.send(0, join_group_v1(1, meta))
    c.send(1, join_group_v1_response(1, 0, members=[("m-1", meta)]))
    exs, _ = analyse(capture(tmp_path, c.close()))
    assert [i.code for ex in exs for i in ex.all_issues()] == []


# -- 1. misalignment diagnosis ----------------------------------------------------------------


def fetch_v17(corr: int, omit_epochs: bool) -> bytes:
    body = struct.pack(">iiibii", 500, 1, 52428800, 0, 0, -1)  # max_wait..session_epoch
    body += uvarint(2) + bytes(range(16))  # one topic, its id
    body += uvarint(2) + struct.pack(">i", 0)  # one partition: partition
    if not omit_epochs:
        body += struct.pack(">i", 5)  # current_leader_epoch
    body += struct.pack(">q", 42)  # fetch_offset
    if not omit_epochs:
        body += struct.pack(">i", 4)  # last_fetched_epoch
    body += struct.pack(">qi", -1, 1048576) + b"\x00"  # log_start_offset, max bytes, tags
    body += b"\x00"  # topic tags
    body += uvarint(1) + uvarint(1) + b"\x00"  # forgotten_topics_data [], rack_id "", tags
    return frame(request_header(1, 17, corr, True) + body)


FLEX_BODY_AT = 2 + 2 + 4 + 2 + 2 + 1  # after a flexible request header with client id "tc"


def test_short_fetch_v17_is_reported_by_its_cause(tmp_path):
    c = Conversation().handshake()
    c.send(0, fetch_v17(1, omit_epochs=True))
    path = capture(tmp_path, c.close())
    exs, _ = analyse(path)
    [ex] = exs
    [i] = ex.request.issues
    assert i.code == "decode.layout_mismatch" and i.severity == Severity.ERROR
    # the first partition's current_leader_epoch would follow its partition index
    assert i.offset == FLEX_BODY_AT + 21 + 1 + 16 + 1 + 4
    assert i.message == (
        "Fetch request v17 is 8 bytes short in every topics.partitions element from "
        "current_leader_epoch on: the sender omitted current_leader_epoch, last_fetched_epoch "
        "(2 fields of Fetch v17); decoded without them"
    )
    part = ex.request.body.child("topics").children[0].child("partitions").children[0]
    assert part.get("fetch_offset") == 42 and part.get("partition_max_bytes") == 1048576
    rc, doc = check_json(path)
    r = rule(doc, "kafka.protocol-errors")
    assert rc == 1 and r["count"] == 1 and "decode.layout_mismatch" in r["findings"][0]["message"]


def test_a_whole_fetch_v17_is_clean(tmp_path):
    c = Conversation().handshake()
    c.send(0, fetch_v17(1, omit_epochs=False))
    exs, _ = analyse(capture(tmp_path, c.close()))
    assert [i.code for ex in exs for i in ex.all_issues()] == ["pairing.no_response"]


def test_a_body_in_the_previous_version_layout(tmp_path):
    # JoinGroup labelled v1 but written as v0 (no rebalance_timeout_ms)
    body = s16("g") + struct.pack(">i", 10000) + s16("") + s16("consumer")
    body += struct.pack(">i", 1) + s16("range") + b32(subscription(0))
    c = Conversation().handshake()
    c.send(0, frame(request_header(11, 1, 1, False) + body))
    exs, _ = analyse(capture(tmp_path, c.close()))
    [i] = [i for i in exs[0].request.issues]
    assert i.code == "decode.layout_mismatch" and i.severity == Severity.ERROR
    assert i.message.startswith("JoinGroup request labelled v1 is written in the v0 layout")
    assert i.offset == 12 + 3 + 4  # where v1's rebalance_timeout_ms would start
    assert exs[0].request.body.get("member_id") == ""


def test_a_body_that_ends_where_its_version_goes_on(tmp_path):
    # OffsetFetch response labelled v2 but written as v1: the top-level error_code v2 appends is
    # missing. It was reported as the knock-on decode.truncated of the v2 decode.
    req = s16("g") + struct.pack(">i", 1) + s16("t") + struct.pack(">ii", 1, 0)
    resp = struct.pack(">i", 1) + s16("t") + struct.pack(">i", 1)
    resp += struct.pack(">iq", 0, 42) + s16("") + struct.pack(">h", 0)  # partition, offset, metadata, error
    c = Conversation().handshake()
    c.send(0, frame(request_header(9, 2, 1, False) + req))
    c.send(1, frame(struct.pack(">i", 1) + resp))
    exs, _ = analyse(capture(tmp_path, c.close()))
    [i] = exs[0].response.issues
    assert i.code == "decode.layout_mismatch" and i.severity == Severity.ERROR
    assert i.message == (
        "OffsetFetch response labelled v2 is written in the v1 layout: it decodes cleanly as v1 and "
        "ends where v2 goes on with error_code"
    )
    assert i.offset == 4 + len(resp)  # the end of the body, where error_code would start
    part = exs[0].response.body.child("topics").children[0].child("partitions").children[0]
    assert part.get("committed_offset") == 42


# -- 6. librdkafka #5049 --------------------------------------------------------------------------


def test_metadata_null_topics_as_a_4_byte_placeholder(tmp_path):
    body = b"\x00\x00\x00\x00" + b"\x01\x00" + b"\x00"  # placeholder, allow_auto, topic ops, tags
    c = Conversation().handshake()
    c.send(0, frame(request_header(3, 12, 1, True) + body))
    path = capture(tmp_path, c.close())
    exs, _ = analyse(path)
    req = exs[0].request
    [i] = req.issues
    assert i.code == "quirk.librdkafka_metadata_placeholder" and i.severity == Severity.WARNING
    assert i.offset == FLEX_BODY_AT and "librdkafka issue #5049" in i.message
    topics = req.body.child("topics")
    assert topics.value is None and (topics.offset, topics.length) == (FLEX_BODY_AT, 4)
    assert req.body.get("allow_auto_topic_creation") is True
    _, doc = check_json(path)
    assert rule(doc, "kafka.peer-quirks")["count"] == 1
    assert rule(doc, "kafka.protocol-errors")["status"] == "passed"


# -- 7. librdkafka < 2.2 hanging up after ApiVersions tagged fields -----------------------------


def api_versions_exchange(conv: Conversation, software: str, version: str, tagged: bool) -> int:
    body = cstr(software) + cstr(version) + b"\x00"
    conv.send(0, frame(request_header(18, 3, 1, True) + body))
    resp = struct.pack(">ih", 1, 0) + uvarint(2) + struct.pack(">hhh", 18, 0, 3) + b"\x00"
    resp += struct.pack(">i", 0)
    resp += (uvarint(1) + uvarint(1) + uvarint(8) + struct.pack(">q", 7)) if tagged else b"\x00"
    at = len(conv.sent[1])
    conv.send(1, frame(resp))
    return at


def test_librdkafka_before_2_2_hangs_up_after_tagged_api_versions(tmp_path):
    c = Conversation().handshake()
    at = api_versions_exchange(c, "confluent-kafka-python", "2.1.1-rdkafka-2.1.1", tagged=True)
    path = capture(tmp_path, c.close())
    exs, conn_issues = analyse(path)
    assert [i.code for i in exs[0].all_issues()] == []
    assert exs[0].response.body.get("finalized_features_epoch") == 7
    [q] = conn_issues
    assert q.code == "quirk.librdkafka_tagged_hangup" and q.severity == Severity.WARNING
    assert q.offset == at
    assert q.message.startswith(
        "confluent-kafka-python 2.1.1-rdkafka-2.1.1 (librdkafka 2.1.1) closed the connection right "
        "after an ApiVersions v3 answer with tagged fields (finalized_features_epoch)"
    )
    assert "PR #4278" in q.message
    rc, doc = check_json(path)
    assert rc == 0 and rule(doc, "kafka.peer-quirks")["count"] == 1


def test_newer_librdkafka_or_untagged_answer_says_nothing(tmp_path):
    c = Conversation().handshake()
    api_versions_exchange(c, "librdkafka", "2.3.0", tagged=True)
    c2 = Conversation(client=("10.0.0.1", 40001)).handshake()
    api_versions_exchange(c2, "librdkafka", "2.0.2", tagged=False)
    _, conn_issues = analyse(capture(tmp_path, c.close(), c2.close()))
    assert conn_issues == []


# -- the librdkafka mock's extra byte after flexible Metadata responses ------------------------


def metadata_v13_exchange(conv: Conversation, cluster_id: str) -> None:
    conv.send(0, frame(request_header(3, 13, 1, True) + uvarint(1) + b"\x00\x00\x00"))
    body = struct.pack(">i", 0) + uvarint(2) + struct.pack(">i", 1) + cstr("h") + struct.pack(">i", 9092)
    body += uvarint(0) + b"\x00"  # rack null, broker tags
    body += cstr(cluster_id) + struct.pack(">i", 1) + uvarint(1) + struct.pack(">h", 0) + b"\x00"
    conv.send(1, frame(struct.pack(">i", 1) + b"\x00" + body + b"\x00"))


def test_mock_metadata_trailing_byte_is_named(tmp_path):
    c = Conversation().handshake()
    metadata_v13_exchange(c, "mockCluster1a2b")
    c2 = Conversation(client=("10.0.0.1", 40001)).handshake()
    metadata_v13_exchange(c2, "some-cluster")
    exs, _ = analyse(capture(tmp_path, c.close(), c2.close()))
    mock, other = sorted(exs, key=lambda ex: ex.conn.client.port)
    [i] = mock.response.issues
    assert i.code == "quirk.mock_metadata_trailing_byte" and i.severity == Severity.WARNING
    assert i.offset == len(mock.response.frame.payload) - 1 and "mockCluster1a2b" in i.message
    assert [j.code for j in other.response.issues] == ["decode.trailing_bytes"]


# -- 9. the librdkafka mock's LeaveGroup answer in the v1-v2 layout ------------------------------


def leave_group_v3(conv: Conversation, corr: int, response_body: bytes) -> None:
    """kafkajs' LeaveGroup v3 request (group "g", one member "m-1", no instance id), answered with
    ``response_body``."""
    body = s16("g") + struct.pack(">i", 1) + s16("m-1") + struct.pack(">h", -1)
    conv.send(0, frame(request_header(13, 3, corr, False) + body))
    conv.send(1, frame(struct.pack(">i", corr) + response_body))


def test_mock_leave_group_v3_answer_in_the_v2_layout(tmp_path):
    c = Conversation().handshake()
    leave_group_v3(c, 1, struct.pack(">ih", 0, 25))  # throttle, UNKNOWN_MEMBER_ID; no members
    path = capture(tmp_path, c.close())
    exs, _ = analyse(path)
    [ex] = exs
    assert ex.request.issues == []
    [i] = ex.response.issues
    assert i.code == "quirk.mock_leave_group_layout" and i.severity == Severity.WARNING
    assert i.offset == 4 + 4 + 2  # correlation id, throttle_time_ms, error_code: members would start
    assert i.message.startswith(
        "LeaveGroup v3 response in the v1-v2 layout (throttle_time_ms, error_code UNKNOWN_MEMBER_ID; "
        "no members array), as the librdkafka mock cluster answers every LeaveGroup"
    )
    assert ex.response.body.get("error_code") == 25 and ex.response.body.child("members") is None
    rc, doc = check_json(path)
    assert rule(doc, "kafka.peer-quirks")["count"] == 1
    assert rule(doc, "kafka.protocol-errors")["status"] == "passed"
    # its UNKNOWN_MEMBER_ID is the mock's misreading of the v3 request: the quirk's, not a failure
    assert rc == 0 and rule(doc, "kafka.error-responses")["status"] == "passed"


def test_unknown_member_id_to_a_whole_leave_group_v3_answer_still_fails(tmp_path):
    c = Conversation().handshake()
    members = struct.pack(">i", 1) + s16("m-1") + s16(None) + struct.pack(">h", 25)
    leave_group_v3(c, 1, struct.pack(">ih", 0, 25) + members)
    rc, doc = check_json(capture(tmp_path, c.close()))
    assert rc == 1 and rule(doc, "kafka.error-responses")["count"] == 1


def test_a_whole_leave_group_v3_answer_is_clean(tmp_path):
    c = Conversation().handshake()
    members = struct.pack(">i", 1) + s16("m-1") + s16(None) + struct.pack(">h", 0)
    leave_group_v3(c, 1, struct.pack(">ih", 0, 0) + members)
    exs, _ = analyse(capture(tmp_path, c.close()))
    assert [i.code for ex in exs for i in ex.all_issues()] == []
    assert exs[0].response.body.child("members").children[0].get("member_id") == "m-1"


def test_the_layout_search_is_bounded():
    from analyzer.dissect import layout

    mem = layout.Memory()
    mem.budget = 0
    payload = fetch_v17(1, omit_epochs=True)[4:]
    assert layout.diagnose(payload, FLEX_BODY_AT, 1, "request", 17, mem) is None
    mem = layout.Memory()
    got = layout.diagnose(payload, FLEX_BODY_AT, 1, "request", 17, mem)
    assert got is not None and got[0] == (
        "omit",
        ("Topics", "Partitions"),
        ("CurrentLeaderEpoch", "LastFetchedEpoch"),
    )
    assert mem.budget < layout.BUDGET and mem.found[(1, "request", 17)] == got[0]


def test_two_batches_in_one_partition_of_produce_v3_plus(tmp_path):
    path = capture(tmp_path, produce_conv([batch(), batch()]))
    exs, _ = analyse(path)
    [i] = issues_of(exs, "records.produce_batches")
    assert i.severity == Severity.WARNING and i.offset == BATCH_AT - 4  # the records field
    assert "Produce v7 partition t-0 holds 2 entries of magic 2" in i.message
    assert issues_of(exs, "records.mixed_magic") == []


def test_transactional_batch_without_transactional_id(tmp_path):
    path = capture(tmp_path, produce_conv([batch(pid=3, epoch=0, seq=0, attrs=0x10)]))
    exs, _ = analyse(path)
    [i] = issues_of(exs, "records.transactional_without_id")
    assert i.severity == Severity.WARNING and i.offset == BATCH_AT + 21
    _, doc = check_json(path)
    assert rule(doc, "kafka.invalid-batches")["count"] == 1


# -- 10. the librdkafka mock's refusals of valid requests --------------------------------------


def gzip_message_v1(*values: bytes) -> bytes:
    """A gzip-compressed magic 1 wrapper message (attributes 1) holding ``values`` as magic 1
    messages, CRCs valid: what kafka-python 0.10 sends with compression_type="gzip"."""
    inner = b"".join(message_v1(v) for v in values)
    rest = struct.pack(">bbq", 1, 1, 1_700_000_000_000) + struct.pack(">i", -1) + b32(gzip.compress(inner))
    return struct.pack(">qiI", len(values) - 1, 4 + len(rest), zlib.crc32(rest)) + rest


def test_compressed_legacy_message_set_refused_names_the_mock(tmp_path):
    c = Conversation().handshake()
    metadata_v2(c, 1, "mockCluster1f2e")
    c.send(0, produce_v2_request(2, gzip_message_v1(b"a", b"b")))
    c.send(1, produce_error_response(2, 35, version=2))
    path = capture(tmp_path, c.close())
    exs, _ = analyse(path)
    [i] = issues_of(exs, "quirk.legacy_format_rejected")
    # the partition's error_code: corr(4) topics(4) name(3) partitions(4) index(4)
    assert i.severity == Severity.WARNING and i.offset == 19
    assert i.message.startswith(
        "the librdkafka mock cluster answered Produce v2 with UNSUPPORTED_VERSION for 1 partition "
        "(t-0) whose records are magic 1 message sets (codec gzip)"
    )
    rc, doc = check_json(path)
    assert rule(doc, "kafka.peer-quirks")["count"] == 1
    assert rule(doc, "kafka.error-responses")["status"] == "passed"
    # the records were not written all the same: lost (the only failure; a waiver names the quirk)
    assert rc == 1 and [r["id"] for r in doc["rules"] if r["status"] == "failed"] == ["kafka.producer-lost"]


def test_unsupported_version_to_produce_v3_record_batches_is_an_error_response(tmp_path):
    c = Conversation().handshake()
    metadata_v2(c, 1, "mockCluster1f2e")
    c.send(0, produce_request(2, [batch()], version=3))
    c.send(1, produce_error_response(2, 35, version=3))
    path = capture(tmp_path, c.close())
    exs, _ = analyse(path)
    assert issues_of(exs, "quirk.legacy_format_rejected") == []
    rc, doc = check_json(path)
    r = rule(doc, "kafka.error-responses")
    assert rc == 1 and r["count"] == 1 and "UNSUPPORTED_VERSION" in r["findings"][0]["message"]


def offset_commit_v2(corr: int, generation: int, member: str) -> bytes:
    body = s16("g") + struct.pack(">i", generation) + s16(member) + struct.pack(">q", -1)
    body += struct.pack(">i", 1) + s16("t") + struct.pack(">i", 1) + struct.pack(">iq", 0, 5) + s16("")
    return frame(request_header(8, 2, corr, False) + body)


def offset_commit_v2_response(corr: int, error: int) -> bytes:
    body = struct.pack(">i", 1) + s16("t") + struct.pack(">i", 1) + struct.pack(">ih", 0, error)
    return frame(struct.pack(">i", corr) + body)


def leave_group_v0(conv: Conversation, corr: int, member: str) -> None:
    conv.send(0, frame(request_header(13, 0, corr, False) + s16("g") + s16(member)))
    conv.send(1, frame(struct.pack(">ih", corr, 0)))


def simple_commit_capture(tmp_path, *, join: bool, leave: bool):
    """The mock's cluster id, optionally a member "m-1" joining group "g" (and leaving it), then
    an admin's OffsetCommit v2 (generation -1, no member id) answered UNKNOWN_MEMBER_ID."""
    c = Conversation().handshake()
    metadata_v2(c, 1, "mockCluster1f2e")
    if join:
        c.send(0, join_group_v1(2, subscription(0)))
        c.send(1, join_group_v1_response(2, 0))
    if leave:
        leave_group_v0(c, 3, "m-1")
    c.send(0, offset_commit_v2(4, -1, ""))
    c.send(1, offset_commit_v2_response(4, 25))
    return capture(tmp_path, c.close())


def test_simple_commit_to_a_group_its_members_left_names_the_mock(tmp_path):
    path = simple_commit_capture(tmp_path, join=True, leave=True)
    exs, _ = analyse(path)
    [i] = issues_of(exs, "quirk.simple_commit_rejected")
    # the partition's error_code: corr(4) topics(4) name(3) partitions(4) index(4)
    assert i.severity == Severity.WARNING and i.offset == 19
    assert i.message.startswith(
        "the librdkafka mock cluster answered UNKNOWN_MEMBER_ID to OffsetCommit v2 of group 'g' "
        "with generation -1 and an empty member id, while the capture shows no live member of it"
    )
    rc, doc = check_json(path)
    assert rc == 0 and rule(doc, "kafka.peer-quirks")["count"] == 1
    assert rule(doc, "kafka.error-responses")["status"] == "passed"


def test_simple_commit_to_a_group_never_seen_is_named(tmp_path):
    exs, _ = analyse(simple_commit_capture(tmp_path, join=False, leave=False))
    [i] = issues_of(exs, "quirk.simple_commit_rejected")
    assert i.offset == 19 and "no live member of it" in i.message


def test_simple_commit_while_a_member_is_live_is_an_error_response(tmp_path):
    path = simple_commit_capture(tmp_path, join=True, leave=False)
    exs, _ = analyse(path)
    assert issues_of(exs, "quirk.simple_commit_rejected") == []
    rc, doc = check_json(path)
    r = rule(doc, "kafka.error-responses")
    assert rc == 1 and r["count"] == 1 and "UNKNOWN_MEMBER_ID" in r["findings"][0]["message"]


def test_a_members_commit_answered_unknown_member_id_is_an_error_response(tmp_path):
    c = Conversation().handshake()
    c.send(0, offset_commit_v2(1, 3, "m-9"))
    c.send(1, offset_commit_v2_response(1, 25))
    path = capture(tmp_path, c.close())
    exs, _ = analyse(path)
    assert issues_of(exs, "quirk.simple_commit_rejected") == []
    assert check_json(path)[0] == 1


def test_the_bundled_captures_mock_refusals(tmp_path):
    exs, _ = analyse(CAPTURES / "librdkafka-admin.pcap", bodies=False)
    [i] = issues_of(exs, "quirk.simple_commit_rejected")
    ex = next(ex for ex in exs if i in ex.issues)
    assert ex.api_key == ApiKey.OFFSET_COMMIT and ex.correlation_id == 9
    # OffsetCommit v9 response: corr(4) tagged(1) throttle(4) topics(1) name(10) partitions(1) index(4)
    assert i.severity == Severity.WARNING and i.offset == 25
    assert "group 'g-librdkafka-admin'" in i.message
    exs, _ = analyse(CAPTURES / "kafka-python-0.9-gzip.pcap", bodies=False)
    found = issues_of(exs, "quirk.legacy_format_rejected")
    assert [(i.severity, i.offset) for i in found] == [(Severity.WARNING, 25), (Severity.WARNING, 25)]
    assert "2 partitions (kp-gzip-1, kp-gzip-2) whose records are magic 0 message sets" in found[0].message
