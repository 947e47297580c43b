"""The records of Kafka's internal topics that a capture holds, decoded, and the group facts in them.

A consumer reading ``__consumer_offsets`` (Burrow, ``kafka-console-consumer --formatter``), a
follower replicating it, or a coordinator's replication traffic carry the coordinators' own
records: every offset commit, every group's metadata after each rebalance, every transaction's
state. :func:`internal_records` yields those of a Fetch/ShareFetch response or a Produce request
(decoded with record bodies: ``Options(records_bodies=True)``; without them a record has no key
or value to decode), each decoded by :func:`analyzer.dissect.coordinator.decode_coordinator_record`.

:func:`offset_commit` and :func:`group_metadata` turn an OffsetCommit or GroupMetadata record into
the plain facts the group timeline and the lag take from OffsetCommit and SyncGroup exchanges.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from analyzer.dissect.constants import ApiKey
from analyzer.dissect.coordinator import INTERNAL_TOPICS, CoordinatorRecord, decode_coordinator_record
from analyzer.dissect.records import decode_records
from analyzer.dissect.records_common import Record
from analyzer.dissect.records_view import entry_records
from analyzer.model import Exchange, Field, Message, Severity
from analyzer.session.entities import topic_refs
from analyzer.session.records import FETCH_APIS, partition_records

PLAUSIBLE_MS = 86_400_000  # a record's own time further than this from the capture's is not taken


class InternalRecord(NamedTuple):
    """One record of an internal topic with where it was."""

    topic: str  # "__consumer_offsets", "__transaction_state" or "__share_group_state"
    partition: int | None
    offset: int | None  # absolute in a Fetch response; a producer's batch counts from 0
    timestamp: int | None  # ms since the epoch (the batch's for LogAppendTime batches)
    record: CoordinatorRecord


def internal_records(
    msg: Message | None, topic_ids: dict[str, str] | None = None
) -> Iterator[InternalRecord]:
    """The records of internal topics in a Produce request or Fetch/ShareFetch response body
    (topics named by name, or by id when ``topic_ids`` has its name); control records (the
    transaction markers of transactional offset commits) are left out."""
    if msg is None:
        return
    for t in topic_refs(msg, topic_ids):
        if t.topic not in INTERNAL_TOPICS:
            continue
        for partition, rec in partition_records(t):
            for r in bodies(msg, rec):
                if r.control:
                    continue
                got = decode_coordinator_record(t.topic, r.key, r.value)
                if got is not None:
                    yield InternalRecord(t.topic, partition, r.offset, r.timestamp, got)


def internal_partitions(msg: Message | None, topic_ids: dict[str, str] | None = None) -> dict[int, str]:
    """The records fields (by ``id()``) of a message's internal-topic partitions, with the topic:
    what the export looks up when it writes a records field."""
    out: dict[int, str] = {}
    for t in topic_refs(msg, topic_ids):
        if t.topic in INTERNAL_TOPICS:
            for _partition, rec in partition_records(t):
                out[id(rec)] = t.topic
    return out


def bodies(msg: Message, records: Field) -> Iterator[Record]:
    """The records of a records field, decoded again from the frame's bytes with their bodies
    when the message was decoded without (``stats``, ``groups``, ``export`` without
    ``--records``): only an internal topic's are, the others never pay for it."""
    entries = records.children or ()
    if all(_has_bodies(e) for e in entries):
        for e in entries:
            yield from entry_records(e)
        return
    end = records.offset + records.length
    n = records.value if isinstance(records.value, int) else 0
    again, _issues = decode_records(memoryview(msg.frame.payload)[end - n : end], end - n)  # (told already)
    for e in again:
        yield from entry_records(e)


def _has_bodies(entry: Field) -> bool:
    s = entry.value
    if not isinstance(s, dict) or not s.get("record_count") or s.get("control"):
        return True
    return next(entry_records(entry), None) is not None


def exchange_internal_records(
    ex: Exchange, topic_ids: dict[str, str] | None = None
) -> Iterator[InternalRecord]:
    """The internal-topic records an exchange carries: a Fetch/ShareFetch response's (a consumer
    or a follower reading them), a Produce request's (a client writing them, which a broker
    refuses: the coordinators append them in-process)."""
    key = ex.api_key
    if key in FETCH_APIS:
        return internal_records(ex.response, topic_ids)
    if key == ApiKey.PRODUCE:
        return internal_records(ex.request, topic_ids)
    return iter(())


def annotate(msg: Message | None, topic_ids: dict[str, str] | None = None) -> None:
    """Hang each internal record's decoded key and value (the Fields of
    :func:`~analyzer.dissect.coordinator.decode_coordinator_record`, offsets moved to the record's
    bytes) under the ``key`` and ``value`` Fields of its ``record`` in a message decoded with
    record bodies (the TUI's field tree); the record's display is the record's summary."""
    if msg is None:
        return
    for t in topic_refs(msg, topic_ids):
        if t.topic not in INTERNAL_TOPICS:
            continue
        for _partition, rec in partition_records(t):
            for entry in rec.children or ():
                for r in _record_fields(entry):
                    _annotate_record(t.topic, r)


def _record_fields(entry: Field) -> Iterator[Field]:
    """The records of an entry: the ``record`` Fields of a v2 batch, a v0/v1 message itself or
    the messages inside its ``decompressed`` child."""
    if entry.type == "message" and entry.child("decompressed") is None:
        yield entry
        return
    for c in entry.children or ():
        if c.type == "record" or c.type == "message":
            yield from ([c] if c.type == "record" else _record_fields(c))
        elif c.name == "records" or c.type == "decompressed":  # (a v2 batch's rows; compressed data)
            yield from _record_fields(c)


def _annotate_record(topic: str, r: Field) -> None:
    key, value = r.child("key"), r.child("value")
    if key is None or value is None or key.children or value.children:
        return  # not a record's key and value, or a control record's (or done already)
    kb, vb = _raw(key.value), _raw(value.value)
    rec = decode_coordinator_record(topic, kb, vb)
    if rec is None:
        return
    r.display = f"{r.display}, {rec.summary}" if r.display else rec.summary
    for f, got, raw in ((key, rec.key, kb), (value, rec.value, vb)):
        if got is None or not isinstance(raw, bytes):
            continue
        shift = f.offset + f.length - len(raw)
        for x in got.walk():
            x.offset += shift
        f.children = got.children
        version = got.children[0].value if got.children else "?"
        f.display = f"{rec.name or 'unknown'} {'key' if f is key else 'value'} v{version}"
    if rec.tombstone:
        value.display = "tombstone"


def _raw(v) -> bytes | None:
    return bytes(v) if isinstance(v, bytes | bytearray | memoryview) else None


def fetched_commits(msg: Message | None) -> list[tuple[str, str, int, int, float]]:
    """(group, topic, partition, offset, commit time in seconds) of the OffsetCommit records of
    ``__consumer_offsets`` in a Fetch answer (tombstones left out), for the lag. Topics are
    recognised by their name in the message only, so that processes sharing the work (which
    know different topic ids) see the same commits."""
    if msg is None or msg.body is None:
        return []
    t = msg.frame.ts_first
    out = []
    for r in internal_records(msg):
        c = offset_commit(r.record)
        if c is not None and not c.deleted and isinstance(c.offset, int) and c.offset >= 0:
            out.append((c.group, c.topic, c.partition, c.offset, record_time(c.commit_timestamp, t)))
    return out


def fetched_group_metadata(msg: Message | None) -> list[tuple[GroupMetadataFact, float]]:
    """The GroupMetadata records of ``__consumer_offsets`` in a Fetch answer (tombstones too),
    each with its time (its current_state_timestamp, else the answer's), for the group timeline;
    topics by name only, as :func:`fetched_commits`."""
    if msg is None or msg.body is None:
        return []
    t = msg.frame.ts_first
    out = []
    for r in internal_records(msg):
        g = group_metadata(r.record)
        if g is not None:
            out.append((g, record_time(g.current_state_timestamp, t)))
    return out


def record_time(ms: int | None, t: float) -> float:
    """A record's own time (ms since the epoch) when it is plausible against the capture's ``t``,
    else ``t``."""
    if isinstance(ms, int) and abs(ms - t * 1000) < PLAUSIBLE_MS:
        return ms / 1000
    return t


# -- group facts ----------------------------------------------------------------------------------


class OffsetCommitFact(NamedTuple):
    """An OffsetCommit record: the offset a group committed for a partition (its tombstone: the
    offset deleted, ``offset`` None)."""

    group: str
    topic: str
    partition: int
    offset: int | None  # None: a tombstone
    leader_epoch: int | None  # value v3+; None before (or -1 as written)
    metadata: str | None
    commit_timestamp: int | None  # ms since the epoch
    expire_timestamp: int | None  # value v1 only
    deleted: bool


class GroupMember(NamedTuple):
    """A member of a GroupMetadata record, its consumer protocol bytes decoded."""

    member_id: str
    instance_id: str | None  # value v3+
    client_id: str | None
    client_host: str | None
    rebalance_timeout_ms: int | None  # value v1+
    session_timeout_ms: int | None
    subscription: tuple[str, ...] | None  # topics of its ConsumerProtocolSubscription; None: not decoded
    assignment: dict[str, list[int]] | None  # its ConsumerProtocolAssignment; None: not decoded
    subscription_bytes: bytes | None
    assignment_bytes: bytes | None


class GroupMetadataFact(NamedTuple):
    """A GroupMetadata record: a classic group's state after a rebalance (its tombstone: the
    group deleted, every other field None or empty)."""

    group: str
    protocol_type: str | None
    generation: int | None
    protocol: str | None
    leader: str | None
    current_state_timestamp: int | None  # ms since the epoch, value v2+
    members: tuple[GroupMember, ...]
    deleted: bool


def _clean(rec: CoordinatorRecord, name: str) -> bool:
    """An error-free record of type ``name`` with a decoded key (and value, unless a tombstone)."""
    if rec.name != name or rec.key is None or any(i.severity is Severity.ERROR for i in rec.issues):
        return False
    return rec.tombstone or (rec.value is not None and len(rec.value.children or ()) > 1)


def offset_commit(rec: CoordinatorRecord) -> OffsetCommitFact | None:
    """The commit an OffsetCommit record holds; None for any other record, or a damaged one."""
    if not _clean(rec, "OffsetCommit"):
        return None
    key = rec.key
    assert key is not None
    group, topic, partition = key.get("group"), key.get("topic"), key.get("partition")
    if rec.tombstone or rec.value is None:
        return OffsetCommitFact(group, topic, partition, None, None, None, None, None, True)
    v = rec.value
    return OffsetCommitFact(
        group,
        topic,
        partition,
        v.get("offset"),
        v.get("leader_epoch"),
        v.get("metadata"),
        v.get("commit_timestamp"),
        v.get("expire_timestamp"),
        False,
    )


def group_metadata(rec: CoordinatorRecord) -> GroupMetadataFact | None:
    """The group state a GroupMetadata record holds; None for any other record, or a damaged one."""
    if not _clean(rec, "GroupMetadata"):
        return None
    key = rec.key
    assert key is not None
    group = key.get("group")
    if rec.tombstone or rec.value is None:
        return GroupMetadataFact(group, None, None, None, None, None, (), True)
    v = rec.value
    members = v.child("members")
    return GroupMetadataFact(
        group,
        v.get("protocol_type"),
        v.get("generation"),
        v.get("protocol"),
        v.get("leader"),
        v.get("current_state_timestamp"),
        tuple(_member(m) for m in (members.children or () if members is not None else ())),
        False,
    )


def _member(m: Field) -> GroupMember:
    sub, asg = m.child("subscription"), m.child("assignment")
    return GroupMember(
        m.get("member_id"),
        m.get("group_instance_id"),
        m.get("client_id"),
        m.get("client_host"),
        m.get("rebalance_timeout"),
        m.get("session_timeout"),
        _subscription(sub),
        _assignment(asg),
        None if sub is None else sub.value,
        None if asg is None else asg.value,
    )


def _decoded(f: Field | None, name: str) -> Field | None:
    """The consumer protocol struct decoded under a bytes field (None: not the consumer protocol)."""
    return None if f is None or not f.display else f.child(name)


def _subscription(f: Field | None) -> tuple[str, ...] | None:
    inner = _decoded(f, "subscription")
    if inner is None:
        return None
    topics = inner.child("topics")
    return tuple(t.value for t in (topics.children or () if topics is not None else ()))


def _assignment(f: Field | None) -> dict[str, list[int]] | None:
    inner = _decoded(f, "assignment")
    if inner is None:
        return None
    out: dict[str, list[int]] = {}
    tps = inner.child("assigned_partitions")
    for tp in tps.children or () if tps is not None else ():
        topic = tp.get("topic")
        parts = tp.child("partitions")
        if isinstance(topic, str):
            out.setdefault(topic, []).extend(
                p.value for p in (parts.children or () if parts is not None else ())
            )
    return out


__all__ = [
    "GroupMember",
    "GroupMetadataFact",
    "InternalRecord",
    "OffsetCommitFact",
    "annotate",
    "bodies",
    "exchange_internal_records",
    "fetched_commits",
    "fetched_group_metadata",
    "group_metadata",
    "internal_partitions",
    "internal_records",
    "offset_commit",
    "record_time",
]
