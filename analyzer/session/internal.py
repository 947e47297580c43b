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
from analyzer.dissect.records_view import entry_records
from analyzer.model import Exchange, Field, Message, Severity
from analyzer.session.entities import topic_refs
from analyzer.session.records import FETCH_APIS, partition_records


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
    for t in topic_refs(msg, topic_ids):
        if t.topic not in INTERNAL_TOPICS:
            continue
        for partition, rec in partition_records(t):
            for entry in rec.children or ():
                for r in entry_records(entry):
                    if r.control:
                        continue
                    got = decode_coordinator_record(t.topic, r.key, r.value)
                    if got is not None:
                        yield InternalRecord(t.topic, partition, r.offset, r.timestamp, got)


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
    "exchange_internal_records",
    "group_metadata",
    "internal_records",
    "offset_commit",
]
