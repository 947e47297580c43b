"""The records of internal topics in Fetch responses and Produce requests, and their group facts.

Frames are written by kio (Fetch v12 naming topics, v13 by id; Produce v8) around record batches
of kafka-python's DefaultRecordBatchBuilder; the coordinator records in them are written here by
hand from the schemas (OffsetCommitKey v1, OffsetCommitValue v3, GroupMetadataKey v2,
GroupMetadataValue v3 with kafka-python's consumer protocol bytes, TransactionLogKey/Value v0).
"""

from __future__ import annotations

import datetime
import io
import struct
import uuid
from base64 import urlsafe_b64encode

from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.util import calc_crc32c
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12 import response as fetch12
from kio.schema.fetch.v13 import response as fetch13
from kio.schema.produce.v8 import request as produce8
from kio.schema.types import BrokerId, TopicName
from kio.serial import entity_writer
from kio.static.primitive import i16, i32, i64

from analyzer.dissect.constants import ApiKey
from analyzer.dissect.message import Options, decode_request, decode_response
from analyzer.model import ConnInfo, Endpoint, Exchange, Frame
from analyzer.session.internal import (
    GroupMember,
    GroupMetadataFact,
    InternalRecord,
    OffsetCommitFact,
    exchange_internal_records,
    group_metadata,
    internal_records,
    offset_commit,
)

TS = 1_700_000_000_000
OPTS = Options(records_bodies=True)


def s(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    b = text.encode()
    return struct.pack(">h", len(b)) + b


def b32(raw: bytes) -> bytes:
    return struct.pack(">i", len(raw)) + raw


def commit_key(group: str, topic: str, partition: int) -> bytes:
    return struct.pack(">h", 1) + s(group) + s(topic) + struct.pack(">i", partition)


def commit_value(offset: int, ts: int) -> bytes:
    return struct.pack(">hqi", 3, offset, 4) + s("meta") + struct.pack(">q", ts)


SUBSCRIPTION = ConsumerProtocolSubscription(version=0, topics=["orders"], user_data=None).encode(version=0)
ASSIGNMENT = ConsumerProtocolAssignment(
    version=0,
    assigned_partitions=[ConsumerProtocolAssignment.TopicPartition(topic="orders", partitions=[0, 1])],
    user_data=None,
).encode(version=0)


def group_key(group: str) -> bytes:
    return struct.pack(">h", 2) + s(group)


def group_value() -> bytes:
    member = (
        s("m-1")
        + s(None)
        + s("client-a")
        + s("/10.0.0.5")
        + struct.pack(">ii", 300000, 45000)
        + b32(SUBSCRIPTION)
        + b32(ASSIGNMENT)
    )
    return (
        struct.pack(">h", 3)
        + s("consumer")
        + struct.pack(">i", 5)
        + s("range")
        + s("m-1")
        + struct.pack(">q", TS)
        + struct.pack(">i", 1)
        + member
    )


def batch(records, base_offset: int, ts: int = TS, transactional: bool = False) -> bytes:
    pid = 77 if transactional else -1
    b = DefaultRecordBatchBuilder(
        2, 0, transactional, pid, 0 if transactional else -1, -1, batch_size=1 << 30
    )
    for i, (k, v) in enumerate(records):
        assert b.append(i, timestamp=ts + i, key=k, value=v, headers=[]) is not None
    buf = bytearray(b.build())
    struct.pack_into(">q", buf, 0, base_offset)
    return bytes(buf)


def control_batch(base_offset: int) -> bytes:
    buf = bytearray(
        batch([(struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 0))], base_offset, transactional=True)
    )
    struct.pack_into(">h", buf, 21, 0x30)  # transactional + control
    struct.pack_into(">I", buf, 17, calc_crc32c(bytes(buf[21:])))
    return bytes(buf)


OFFSETS_RECORDS = batch(
    [
        (commit_key("g", "orders", 1), commit_value(42, TS + 5)),
        (commit_key("g", "orders", 0), None),  # the offset deleted
        (group_key("g"), group_value()),
        (group_key("old"), None),  # the group deleted
    ],
    base_offset=100,
) + control_batch(104)
ORDERS_RECORDS = batch([(b"k", b"v")], base_offset=7)


def _write(entity) -> bytes:
    buf = io.BytesIO()
    entity_writer(type(entity))(buf, entity)
    return buf.getvalue()


def _frame(payload: bytes, kind: str) -> Frame:
    return Frame(1, 1 if kind == "response" else 0, 0, len(payload), payload, 2.0, 2.0, (1,), kind)


def fetch12_response():
    def part(index, records):
        return fetch12.PartitionData(
            partition_index=i32(index),
            error_code=ErrorCode.none,
            high_watermark=i64(200),
            aborted_transactions=None,
            preferred_read_replica=BrokerId(-1),
            records=records,
        )

    body = fetch12.FetchResponse(
        throttle_time=datetime.timedelta(0),
        error_code=ErrorCode.none,
        session_id=i32(0),
        responses=(
            fetch12.FetchableTopicResponse(topic=TopicName("orders"), partitions=(part(0, ORDERS_RECORDS),)),
            fetch12.FetchableTopicResponse(
                topic=TopicName("__consumer_offsets"), partitions=(part(17, OFFSETS_RECORDS),)
            ),
        ),
    )
    payload = struct.pack(">i", 9) + b"\x00" + _write(body)  # response header v1: no tagged fields
    return decode_response(_frame(payload, "response"), ApiKey.FETCH, 12, OPTS)


TOPIC_ID = uuid.UUID("12345678-1234-5678-1234-567812345678")
TOPIC_ID_TEXT = urlsafe_b64encode(TOPIC_ID.bytes).rstrip(b"=").decode()


def fetch13_response():
    part = fetch13.PartitionData(
        partition_index=i32(17),
        error_code=ErrorCode.none,
        high_watermark=i64(200),
        aborted_transactions=None,
        preferred_read_replica=BrokerId(-1),
        records=OFFSETS_RECORDS,
    )
    body = fetch13.FetchResponse(
        throttle_time=datetime.timedelta(0),
        error_code=ErrorCode.none,
        session_id=i32(0),
        responses=(fetch13.FetchableTopicResponse(topic_id=TOPIC_ID, partitions=(part,)),),
    )
    payload = struct.pack(">i", 9) + b"\x00" + _write(body)
    return decode_response(_frame(payload, "response"), ApiKey.FETCH, 13, OPTS)


def txn_key(tid: str) -> bytes:
    return struct.pack(">h", 0) + s(tid)


def txn_value() -> bytes:
    return (
        struct.pack(">hqhib", 0, 1000, 3, 60000, 4)
        + struct.pack(">i", 1)
        + s("orders")
        + struct.pack(">iii", 2, 1, 2)  # PartitionIds [1, 2]
        + struct.pack(">qq", TS, TS - 10)
    )


def produce8_request():
    body = produce8.ProduceRequest(
        transactional_id=None,
        acks=i16(-1),
        timeout=datetime.timedelta(seconds=30),
        topic_data=(
            produce8.TopicProduceData(
                name=TopicName("__transaction_state"),
                partition_data=(
                    produce8.PartitionProduceData(
                        index=i32(4), records=batch([(txn_key("tx-1"), txn_value())], base_offset=0)
                    ),
                ),
            ),
        ),
    )
    header = struct.pack(">hhi", ApiKey.PRODUCE, 8, 5) + s("client")
    return decode_request(_frame(header + _write(body), "request"), OPTS)


def _conn() -> ConnInfo:
    return ConnInfo(3, Endpoint("10.0.0.5", 40000), Endpoint("10.0.0.7", 9092), 0.0, True, client_direction=0)


def test_fetch_by_name_yields_the_internal_records_only():
    resp = fetch12_response()
    assert resp.issues == []
    got = list(internal_records(resp))
    assert [(r.topic, r.partition, r.offset, r.timestamp) for r in got] == [
        ("__consumer_offsets", 17, 100 + i, TS + i) for i in range(4)
    ]  # the transaction marker (offset 104) is left out, the orders record is not internal
    assert all(isinstance(r, InternalRecord) and r.record.issues == [] for r in got)
    assert [r.record.name for r in got] == ["OffsetCommit", "OffsetCommit", "GroupMetadata", "GroupMetadata"]
    assert [r.record.tombstone for r in got] == [False, True, False, True]
    ex = Exchange(_conn(), None, resp)
    assert list(exchange_internal_records(ex)) == got


def test_fetch_by_topic_id_needs_the_name():
    resp = fetch13_response()
    assert resp.issues == []
    assert list(internal_records(resp)) == []  # the id alone does not say the topic is internal
    got = list(internal_records(resp, {TOPIC_ID_TEXT: "__consumer_offsets"}))
    assert [(r.topic, r.partition, r.offset) for r in got] == [
        ("__consumer_offsets", 17, 100 + i) for i in range(4)
    ]


def test_offset_commits_and_their_tombstones():
    recs = [r.record for r in internal_records(fetch12_response())]
    assert offset_commit(recs[0]) == OffsetCommitFact("g", "orders", 1, 42, 4, "meta", TS + 5, None, False)
    assert offset_commit(recs[1]) == OffsetCommitFact("g", "orders", 0, None, None, None, None, None, True)
    assert offset_commit(recs[2]) is None  # a GroupMetadata record
    assert group_metadata(recs[0]) is None


def test_group_metadata_with_decoded_assignments():
    recs = [r.record for r in internal_records(fetch12_response())]
    fact = group_metadata(recs[2])
    assert fact == GroupMetadataFact(
        "g",
        "consumer",
        5,
        "range",
        "m-1",
        TS,
        (
            GroupMember(
                "m-1",
                None,
                "client-a",
                "/10.0.0.5",
                300000,
                45000,
                ("orders",),
                {"orders": [0, 1]},
                SUBSCRIPTION,
                ASSIGNMENT,
            ),
        ),
        False,
    )
    assert group_metadata(recs[3]) == GroupMetadataFact("old", None, None, None, None, None, (), True)


def test_a_damaged_record_gives_no_fact():
    rec = internal_records(fetch12_response())
    first = next(rec).record
    from analyzer.dissect.coordinator import decode_coordinator_record

    cut = decode_coordinator_record(
        "__consumer_offsets", commit_key("g", "orders", 1), commit_value(1, TS)[:-3]
    )
    assert cut is not None and cut.issues
    assert offset_commit(cut) is None
    assert offset_commit(first) is not None


def test_produce_request_of_the_transaction_log():
    req = produce8_request()
    assert [i.code for i in req.issues] == []
    ex = Exchange(_conn(), req, None)
    got = list(exchange_internal_records(ex))
    assert len(got) == 1
    r = got[0]
    assert (r.topic, r.partition, r.offset) == ("__transaction_state", 4, 0)
    assert r.record.summary == (
        "TransactionLog transactional_id='tx-1' producer_id=1000 epoch=3 state=COMPLETE_COMMIT "
        "partitions=orders[1, 2]"
    )
    # other APIs carry none
    assert list(exchange_internal_records(Exchange(_conn(), None, None))) == []
