"""Records of the internal topics, decoded field for field against an independent encoder.

Every record type of ``__consumer_offsets``, ``__transaction_state`` and ``__share_group_state``
at every value version is written by tests/helpers/coordinator_schemas.py (the JSON schemas read
directly, kio's primitive writers; no code or table shared with the analyzer) from
hypothesis-generated values, decoded by :func:`decode_coordinator_record`, and every field of the
key and the value compared (names, values, nulls, array counts, tagged fields, spans covering
every byte). Tombstones, consumer protocol bytes of group members, and damaged records (cut,
overlong, garbage, unknown types and versions) never raising.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from analyzer.dissect.coordinator import (
    INTERNAL_TOPICS,
    TRANSACTION_STATES,
    CoordinatorRecord,
    decode_coordinator_record,
)
from analyzer.dissect.coordinator_table import RECORD_TYPES, SCHEMAS
from analyzer.issues import (
    DECODE_TRAILING_BYTES,
    DECODE_TRUNCATED,
    RECORDS_COORDINATOR_BAD_KEY,
    RECORDS_COORDINATOR_UNKNOWN_TYPE,
    RECORDS_COORDINATOR_UNKNOWN_VERSION,
)
from tests.helpers import coordinator_schemas as cs

needs_schemas = pytest.mark.skipif(not cs.available(), reason="../shared/kafka-schemas/coordinator is absent")

snake = cs.snake


def _cases() -> list[tuple[str, int, str, int, int]]:
    if not cs.available():
        return []
    return [
        (topic, rtype, record, key_version, vv)
        for topic, rtype, record, key_version in cs.record_types()
        for vv in cs.value_versions(record)
    ]


CASES = _cases()


# -- the table ------------------------------------------------------------------------------------


@needs_schemas
def test_table_has_every_record_type_of_the_schemas():
    from_json = {(t, n): (r, kv) for t, n, r, kv in cs.record_types()}
    from_table = {(t, n): entry for t, known in RECORD_TYPES.items() for n, entry in known.items()}
    assert from_table == from_json
    assert set(SCHEMAS) == set(cs.schemas())


def test_the_well_known_record_types():
    offsets = RECORD_TYPES["__consumer_offsets"]
    assert offsets[0] == ("OffsetCommit", 0)
    assert offsets[1] == ("OffsetCommit", 1)
    assert offsets[2] == ("GroupMetadata", 2)
    assert offsets[3][0] == "ConsumerGroupMetadata"
    assert RECORD_TYPES["__transaction_state"] == {0: ("TransactionLog", 0)}
    assert sorted(INTERNAL_TOPICS) == ["__consumer_offsets", "__share_group_state", "__transaction_state"]
    assert decode_coordinator_record("orders", b"\x00\x00", b"\x00\x00") is None


# -- field for field ------------------------------------------------------------------------------


@needs_schemas
@pytest.mark.parametrize(
    ("topic", "rtype", "record", "key_version", "vv"), CASES, ids=[f"{c[2]}-k{c[1]}-v{c[4]}" for c in CASES]
)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_roundtrip(topic, rtype, record, key_version, vv, data):
    kdata = data.draw(cs.values(record + "Key", key_version), "key")
    vdata = data.draw(cs.values(record + "Value", vv), "value")
    key = cs.encode(record + "Key", key_version, kdata, lead=rtype)
    value = cs.encode(record + "Value", vv, vdata)
    rec = decode_coordinator_record(topic, key, value)
    assert rec is not None
    consumer = record == "GroupMetadata" and vdata.get("protocolType") == "consumer"
    if not consumer:  # (random member bytes of a "consumer" group are decoded as its protocol)
        assert rec.issues == []
    assert rec.record_type == rtype and not rec.tombstone
    assert rec.key is not None and rec.key.length == len(key)
    assert rec.value is not None and rec.value.length == len(value)
    cs.check_record(rec, record, key_version, kdata, vv, vdata)
    assert rec.summary.startswith(record)

    tomb = decode_coordinator_record(topic, key, None)
    assert tomb is not None and tomb.issues == [] and tomb.tombstone
    cs.check_record(tomb, record, key_version, kdata, None, None)
    assert "tombstone" in tomb.summary


@needs_schemas
@pytest.mark.parametrize("vv", [0, 1, 2, 3, 4])
def test_group_metadata_members_with_consumer_protocol(vv):
    sub = ConsumerProtocolSubscription(
        version=1, topics=["orders", "audit"], user_data=None, owned_partitions=[]
    )
    asg = ConsumerProtocolAssignment(
        version=0,
        assigned_partitions=[ConsumerProtocolAssignment.TopicPartition(topic="orders", partitions=[0, 2])],
        user_data=None,
    )
    member = {
        "memberId": "m-1",
        "groupInstanceId": "static-1",
        "clientId": "c",
        "clientHost": "/10.0.0.5",
        "rebalanceTimeout": 300000,
        "sessionTimeout": 45000,
        "subscription": sub.encode(version=1),
        "assignment": asg.encode(version=0),
    }
    value = {
        "protocolType": "consumer",
        "generation": 7,
        "protocol": "range",
        "leader": "m-1",
        "currentStateTimestamp": 1_700_000_000_000,
        "members": [member],
    }
    key = cs.encode("GroupMetadataKey", 2, {"group": "g1"})
    rec = decode_coordinator_record("__consumer_offsets", key, cs.encode("GroupMetadataValue", vv, value))
    assert rec is not None and rec.issues == []
    m = rec.value.child("members").children[0]
    decoded = m.child("assignment").child("assignment")
    assert decoded.child("assigned_partitions").children[0].get("topic") == "orders"
    topics = m.child("subscription").child("subscription").child("topics")
    assert [t.value for t in topics.children] == ["orders", "audit"]
    assert rec.summary == (
        "GroupMetadata group='g1' generation=7 protocol_type='consumer' protocol='range' "
        "leader='m-1' members=1"
    )
    if vv >= 2:
        assert rec.value.child("current_state_timestamp").display == "2023-11-14T22:13:20.000Z"


# -- what read shows --------------------------------------------------------------------------------


@needs_schemas
def test_summaries_and_tombstones_are_named():
    ok = cs.encode("OffsetCommitKey", 1, {"group": "g", "topic": "orders", "partition": 3})
    value = cs.encode(
        "OffsetCommitValue",
        3,
        {"offset": 42, "leaderEpoch": 5, "metadata": "", "commitTimestamp": 1_700_000_000_000},
    )
    rec = decode_coordinator_record("__consumer_offsets", ok, value)
    assert rec.summary == "OffsetCommit group='g' orders[3] offset=42 at 2023-11-14T22:13:20.000Z"
    rec = decode_coordinator_record("__consumer_offsets", ok, None)
    assert rec.summary == "OffsetCommit tombstone: the offset of group 'g' for orders[3] deleted"
    gk = cs.encode("GroupMetadataKey", 2, {"group": "g"})
    assert decode_coordinator_record("__consumer_offsets", gk, None).summary == (
        "GroupMetadata tombstone: group 'g' deleted"
    )
    tk = cs.encode("TransactionLogKey", 0, {"TransactionalId": "tx-1"})
    assert decode_coordinator_record("__transaction_state", tk, None).summary == (
        "TransactionLog tombstone: transactional id 'tx-1' expired"
    )
    tv = cs.encode(
        "TransactionLogValue",
        1,
        {
            "ProducerId": 1000,
            "ProducerEpoch": 2,
            "TransactionTimeoutMs": 60000,
            "TransactionStatus": 1,
            "TransactionPartitions": [{"Topic": "orders", "PartitionIds": [0, 1]}],
            "TransactionLastUpdateTimestampMs": 1,
            "TransactionStartTimestampMs": 1,
            "NextProducerId": 1001,
        },
    )
    rec = decode_coordinator_record("__transaction_state", tk, tv)
    assert rec.issues == []
    assert rec.summary == (
        "TransactionLog transactional_id='tx-1' producer_id=1000 epoch=2 state=ONGOING "
        "partitions=orders[0, 1]"
    )
    assert rec.value.get("next_producer_id") == 1001
    assert rec.value.child("transaction_status").display == TRANSACTION_STATES[1]
    mk = cs.encode("ConsumerGroupMemberMetadataKey", 5, {"GroupId": "g", "MemberId": "m"})
    assert decode_coordinator_record("__consumer_offsets", mk, None).summary == (
        "ConsumerGroupMemberMetadata tombstone: group_id='g' member_id='m' deleted"
    )


# -- damage ------------------------------------------------------------------------------------------


def _codes(rec: CoordinatorRecord) -> set[str]:
    return {i.code for i in rec.issues}


def test_bad_keys_unknown_types_and_versions():
    rec = decode_coordinator_record("__consumer_offsets", None, b"\x00\x00")
    assert _codes(rec) == {RECORDS_COORDINATOR_BAD_KEY.code} and rec.record_type is None
    assert rec.summary == "__consumer_offsets record without a record type"
    rec = decode_coordinator_record("__consumer_offsets", b"\x00", None)
    assert _codes(rec) == {RECORDS_COORDINATOR_BAD_KEY.code}
    rec = decode_coordinator_record("__transaction_state", b"\x00\x07abc", b"\x00\x00")
    assert _codes(rec) == {RECORDS_COORDINATOR_UNKNOWN_TYPE.code} and rec.record_type == 7
    assert rec.summary == "__transaction_state record of unknown type 7"
    key = b"\x00\x02" + struct.pack(">h", 1) + b"g"
    rec = decode_coordinator_record("__consumer_offsets", key, b"\x00\x63rest")
    assert _codes(rec) == {RECORDS_COORDINATOR_UNKNOWN_VERSION.code} and rec.value_version == 99
    assert rec.summary == "GroupMetadata group='g'"
    rec = decode_coordinator_record("__consumer_offsets", key + b"xx", None)
    assert _codes(rec) == {DECODE_TRAILING_BYTES.code}
    rec = decode_coordinator_record("__consumer_offsets", key[:-1], None)
    assert _codes(rec) == {DECODE_TRUNCATED.code}
    assert rec.issues[0].where == "key.group"
    rec = decode_coordinator_record("__consumer_offsets", key, b"\x00")
    assert _codes(rec) == {DECODE_TRUNCATED.code} and rec.value is None and not rec.tombstone


@needs_schemas
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_cut_of_a_record_is_an_issue_never_an_exception(data):
    topic, rtype, record, key_version = data.draw(st.sampled_from(cs.record_types()))
    vv = data.draw(st.sampled_from(list(cs.value_versions(record))))
    key = cs.encode(
        record + "Key", key_version, data.draw(cs.values(record + "Key", key_version)), lead=rtype
    )
    value = cs.encode(record + "Value", vv, data.draw(cs.values(record + "Value", vv)))
    for cut in range(len(value)):
        rec = decode_coordinator_record(topic, key, value[:cut])
        assert rec is not None and rec.issues, (record, vv, cut)
        assert isinstance(rec.summary, str)
    for cut in range(2, len(key)):
        rec = decode_coordinator_record(topic, key[:cut], value)
        assert rec is not None and rec.issues, (record, cut)


@settings(max_examples=300, deadline=None)
@given(
    topic=st.sampled_from(sorted(INTERNAL_TOPICS)),
    key=st.none() | st.binary(max_size=40),
    value=st.none() | st.binary(max_size=80),
)
def test_garbage_never_raises(topic, key, value):
    rec = decode_coordinator_record(topic, key, value)
    assert rec is not None
    assert isinstance(rec.summary, str)
    assert rec.tombstone == (value is None)
