"""Records of Kafka's internal topics, decoded with the coordinator record schemas.

The group coordinator writes its state into ``__consumer_offsets``, the transaction coordinator
into ``__transaction_state`` and the share coordinator into ``__share_group_state``: a record's
key starts with an int16 that names the record type (in ``__consumer_offsets`` 0 and 1 are
OffsetCommit, 2 GroupMetadata, 3 and up the KIP-848 ConsumerGroup* and KIP-932 ShareGroup*
records), the rest of the key is that type's key schema; the value starts with its own int16
version, the rest is the value schema at that version. A null value is a tombstone: the offset,
group, member or transactional id the key names was deleted. Kafka's OffsetsMessageFormatter,
GroupMetadataMessageFormatter and TransactionLogMessageFormatter print the same records.

The schemas are generated into :mod:`analyzer.dissect.coordinator_table` (tools/gen_protocol.py)
and read by the one generic decoder (:mod:`analyzer.dissect.decoder`); the consumer protocol
bytes of a GroupMetadata value's members (subscription, assignment) are decoded as they are in
JoinGroup and SyncGroup (:func:`analyzer.dissect.message.decode_consumer_protocol`).

Nothing here raises on bad bytes: an unknown record type or version, a cut or overlong key or
value become issues of the record (offsets within the key or the value bytes, ``where`` starts
with ``key`` or ``value``) and what was decoded stays.
"""

from __future__ import annotations

import struct

from analyzer.dissect.coordinator_table import RECORD_TYPES
from analyzer.dissect.decoder import Ctx, coordinator_plan, decode_struct
from analyzer.dissect.message import decode_consumer_protocol
from analyzer.dissect.records_common import iso_timestamp
from analyzer.dissect.schema import coordinator_record_type
from analyzer.issues import (
    DECODE_TRAILING_BYTES,
    DECODE_TRUNCATED,
    RECORDS_COORDINATOR_BAD_KEY,
    RECORDS_COORDINATOR_UNKNOWN_TYPE,
    RECORDS_COORDINATOR_UNKNOWN_VERSION,
)
from analyzer.model import Field, Issue
from analyzer.plain import field, record

_i16 = struct.Struct(">h").unpack_from

# the internal topics whose records the coordinator schemas describe
INTERNAL_TOPICS = frozenset(RECORD_TYPES)
CONSUMER_OFFSETS = "__consumer_offsets"
TRANSACTION_STATE = "__transaction_state"

# Kafka's TransactionState ids (TransactionLogValue.TransactionStatus)
TRANSACTION_STATES = {
    0: "EMPTY",
    1: "ONGOING",
    2: "PREPARE_COMMIT",
    3: "PREPARE_ABORT",
    4: "COMPLETE_COMMIT",
    5: "COMPLETE_ABORT",
    6: "DEAD",
    7: "PREPARE_EPOCH_FENCE",
}


@record
class CoordinatorRecord:
    """One decoded record of an internal topic.

    ``key`` and ``value`` are struct Fields (types ``<name>Key`` / ``<name>Value``) whose first
    child is the int16 ``version`` they start with, then the schema's fields in snake_case; their
    offsets are within the key's and the value's bytes. ``value`` is None for a tombstone, and
    either is None when its bytes did not even hold the version."""

    topic: str
    record_type: int | None  # the key's leading int16; None for a null key or one under 2 bytes
    name: str | None  # "OffsetCommit", "GroupMetadata", "TransactionLog"...; None: unknown type
    key: Field | None
    value: Field | None
    value_version: int | None
    tombstone: bool
    issues: list[Issue] = field(default_factory=list)

    @property
    def summary(self) -> str:
        """One line for ``read``: what the record says (tombstones named)."""
        return describe(self)


def decode_coordinator_record(topic: str, key: bytes | None, value: bytes | None) -> CoordinatorRecord | None:
    """Decode a record of an internal topic; None when ``topic`` is not one. Never raises."""
    if topic not in INTERNAL_TOPICS:
        return None
    ctx = Ctx()
    rec = CoordinatorRecord(topic, None, None, None, None, None, value is None, ctx.issues)
    if key is None or len(key) < 2:
        what = "no key" if key is None else f"a key of {len(key)} byte{'s' if len(key) != 1 else ''}"
        ctx.issues.append(
            RECORDS_COORDINATOR_BAD_KEY(f"{topic} record with {what}: no record type", 0, "key")
        )
        return rec
    rec.record_type = record_type = _i16(key, 0)[0]
    known = coordinator_record_type(topic, record_type)
    if known is None:
        rec.key = Field("key", "unknown", None, 0, len(key), [_version(record_type)])
        ctx.issues.append(
            RECORDS_COORDINATOR_UNKNOWN_TYPE(
                f"{topic} record type {record_type} is not in the coordinator schemas", 0, "key.version"
            )
        )
        return rec
    name, key_version = known
    rec.name = name
    rec.key = _decode(key, f"{name}Key", key_version, "key", ctx)
    if value is None:
        return rec
    if len(value) < 2:
        ctx.issues.append(
            DECODE_TRUNCATED(f"{name} value of {len(value)} byte(s) has no int16 version", 0, "value")
        )
        return rec
    rec.value_version = version = _i16(value, 0)[0]
    if coordinator_plan(f"{name}Value", version) is None:
        rec.value = Field("value", f"{name}Value", None, 0, len(value), [_version(version)])
        ctx.issues.append(
            RECORDS_COORDINATOR_UNKNOWN_VERSION(
                f"{name} value version {version} is not in its schema", 0, "value.version"
            )
        )
        return rec
    rec.value = v = _decode(value, f"{name}Value", version, "value", ctx)
    _annotate(name, v, value, ctx)
    return rec


def _version(v: int) -> Field:
    return Field("version", "int16", v, 0, 2)


def _decode(buf: bytes, schema_name: str, version: int, label: str, ctx: Ctx) -> Field:
    """The struct at ``buf[2:]`` (after the int16 version), with the version as first child."""
    plan = coordinator_plan(schema_name, version)
    assert plan is not None  # (the record type table and the schemas come from one generation)
    f, stop = decode_struct(plan, buf, 2, len(buf), label, schema_name, ctx)
    assert f.children is not None
    f.children.insert(0, _version(version))
    f.offset = 0
    f.length += 2
    if stop != -1 and stop < len(buf):
        ctx.issues.append(
            DECODE_TRAILING_BYTES(
                f"{len(buf) - stop} bytes after the end of the {schema_name} v{version}", stop, label
            )
        )
    return f


def _annotate(name: str, value: Field, raw: bytes, ctx: Ctx) -> None:
    """Displays (timestamps, transaction states) and the consumer protocol of group members."""
    for f in value.walk():
        if f.children is None and isinstance(f.value, int) and f.type == "int64" and "timestamp" in f.name:
            f.display = iso_timestamp(f.value)
    if name == "TransactionLog":
        status = value.child("transaction_status")
        if status is not None and isinstance(status.value, int):
            status.display = TRANSACTION_STATES.get(status.value, f"UNKNOWN({status.value})")
    elif name == "GroupMetadata":
        ptype = value.get("protocol_type")
        members = value.child("members")
        for m in members.children or () if members is not None else ():
            sub = Ctx(max_elements=ctx.elements)
            decode_consumer_protocol(m.child("subscription"), "ConsumerProtocolSubscription", ptype, raw, sub)
            decode_consumer_protocol(m.child("assignment"), "ConsumerProtocolAssignment", ptype, raw, sub)
            ctx.issues.extend(sub.issues)


# -- one line per record -------------------------------------------------------------------------


def _items(f: Field, name: str) -> list[Field]:
    c = f.child(name)
    return c.children or [] if c is not None else []


def _tp(key: Field) -> str:
    return f"{key.get('topic')}[{key.get('partition')}]"


def describe(rec: CoordinatorRecord) -> str:
    """``read``'s line for a record: its type, what its key names and its main values."""
    key, value = rec.key, rec.value
    if value is not None and len(value.children or ()) < 2:
        value = None  # an unknown value version: only the version was read
    if rec.name is None or key is None:
        if rec.record_type is None:
            return f"{rec.topic} record without a record type"
        return f"{rec.topic} record of unknown type {rec.record_type}"
    name = rec.name
    if name == "OffsetCommit":
        group = key.get("group")
        if rec.tombstone:
            return f"OffsetCommit tombstone: the offset of group {group!r} for {_tp(key)} deleted"
        if value is None:
            return f"OffsetCommit group={group!r} {_tp(key)}"
        ts = value.child("commit_timestamp")
        when = f" at {ts.display or ts.value}" if ts is not None else ""
        return f"OffsetCommit group={group!r} {_tp(key)} offset={value.get('offset')}{when}"
    if name == "GroupMetadata":
        group = key.get("group")
        if rec.tombstone:
            return f"GroupMetadata tombstone: group {group!r} deleted"
        if value is None:
            return f"GroupMetadata group={group!r}"
        members = value.get("members")
        return (
            f"GroupMetadata group={group!r} generation={value.get('generation')} "
            f"protocol_type={value.get('protocol_type')!r} protocol={value.get('protocol')!r} "
            f"leader={value.get('leader')!r} members={members}"
        )
    if name == "TransactionLog":
        tid = key.get("transactional_id")
        if rec.tombstone:
            return f"TransactionLog tombstone: transactional id {tid!r} expired"
        if value is None:
            return f"TransactionLog transactional_id={tid!r}"
        status = value.child("transaction_status")
        state = status.display if status is not None else None
        parts = value.child("transaction_partitions")
        tps = ",".join(
            f"{p.get('topic')}{[c.value for c in _items(p, 'partition_ids')]}"
            for p in (parts.children or () if parts is not None else ())
        )
        return (
            f"TransactionLog transactional_id={tid!r} producer_id={value.get('producer_id')} "
            f"epoch={value.get('producer_epoch')} state={state} partitions={tps or '-'}"
        )
    names = " ".join(f"{c.name}={c.value!r}" for c in (key.children or ())[1:] if c.children is None)
    if rec.tombstone:
        return f"{name} tombstone: {names} deleted"
    return f"{name} {names}"


__all__ = [
    "CONSUMER_OFFSETS",
    "INTERNAL_TOPICS",
    "TRANSACTION_STATE",
    "TRANSACTION_STATES",
    "CoordinatorRecord",
    "decode_coordinator_record",
    "describe",
]
