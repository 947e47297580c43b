"""What a message is about, found by the schemas' ``entityType``: the one walker over a body.

The Kafka schemas mark the fields that name things with an ``entityType``: ``topicName``,
``groupId``, ``brokerId``, ``producerId``, ``transactionalId``. The protocol table keeps it
(:attr:`~analyzer.dissect.protocol_table.FieldSpec.entity`), and :func:`plan` turns the fields of
one (api key, request/response, version) into a small tree of the decoded field names that lead
to such fields, computed once per version. :func:`walk` follows that tree through a decoded body
and yields

* a :class:`TopicRef` for every struct that names a topic (by name, or by topic id resolved
  through the capture's knowledge when its name is known, as in Fetch v13+), with the
  partitions of its partition structs or partition-index lists, and for every name of a
  ``[]string`` list of topics;
* an :class:`EntityRef` for every other entity value (groups, brokers, producer ids,
  transactional ids), in body order.

Some facts the walker needs carry no ``entityType`` in the schemas; they are the named
exceptions below (topic ids, partition indexes, lists of partition indexes), not a second
heuristic. Records fields are never walked into.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import NamedTuple, cast

from analyzer.dissect import schema
from analyzer.dissect.decoder import snake
from analyzer.model import Field, Message

TOPIC = "topicName"
GROUP = "groupId"
BROKER = "brokerId"
PRODUCER_ID = "producerId"
TRANSACTIONAL_ID = "transactionalId"
ENTITIES = (TOPIC, GROUP, BROKER, PRODUCER_ID, TRANSACTIONAL_ID)

# -- named exceptions: fields without an entityType that the walker needs -----------------------
# Topic ids (KIP-516) name a topic like a topicName does, but no TopicId field has an entityType.
TOPIC_ID_FIELDS = frozenset(("TopicId",))
# In a partition struct under a struct that names a topic: the partition index (no entityType).
PARTITION_INDEX_FIELDS = frozenset(("PartitionIndex", "Partition", "Index", "PartitionId"))
# []int32 lists of partition indexes directly under a struct that names a topic.
PARTITION_LISTS = frozenset(("Partitions", "PartitionIndexes"))

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # Kafka's text form of the all-zero topic id: "no id"

# roles of the plan's leaves besides the entity types
_TOPIC_ID = "topicId"
_PARTITION = "partition"
_PARTITION_LIST = "partitionList"


class Node(NamedTuple):
    """One field of a plan: its role (an entity type, or one of the exceptions' roles), whether
    it is an array, and the plan of its struct (or of its elements' struct)."""

    role: str | None
    array: bool
    sub: dict[str, Node] | None  # decoded field name -> Node, only fields that lead somewhere
    names_topic: bool  # the struct (of each element) names a topic: a TopicRef comes from it
    descend: bool  # something is yielded below (else ``sub`` only holds partition indexes)
    inner: bool = True  # walking the struct yields more than its TopicRef (else the ref is all)


class TopicRef(NamedTuple):
    """A topic a message names."""

    name: str | None  # the topicName value, if the struct has one
    topic_id: str | None  # the TopicId value, if the struct has a non-zero one
    topic: str  # name, else the id's name when the knowledge has it, else the id
    partitions: tuple[tuple[int | None, Field | None], ...]  # (index, partition struct or None)
    element: Field | None  # the struct naming the topic (None for a name in a list of names)
    array: str | None  # decoded name of the array holding the struct or name (None: a plain struct)
    nested: bool  # that array sits inside another array's element (a group's, a marker's topics)

    def partition_indexes(self) -> list[int]:
        return [p for p, _ in self.partitions if p is not None]


class EntityRef(NamedTuple):
    """A group id, broker id, producer id or transactional id a message names."""

    entity: str  # GROUP, BROKER, PRODUCER_ID or TRANSACTIONAL_ID
    value: object
    field: Field


# -- plans ----------------------------------------------------------------------------------------

ALL = frozenset(ENTITIES)
TOPICS = frozenset((TOPIC,))


@lru_cache(maxsize=4096)
def plan(api_key: int, kind: str, version: int, wanted: frozenset[str] = ALL) -> dict[str, Node] | None:
    """The walk plan of one message version for the ``wanted`` entity types (decoded field name
    -> :class:`Node`), or None when the table does not know the version."""
    got = schema.message_fields(api_key, kind, version)
    return None if got is None else _struct_plan(got[0], version, wanted, False)


def _struct_plan(fields: tuple, version: int, wanted: frozenset[str], under_topic: bool) -> dict[str, Node]:
    topics = TOPIC in wanted
    present = [f for f in fields if schema.in_versions(f.versions, version)]
    names_topic = topics and any(_names_topic(f) for f in present)
    out: dict[str, Node] = {}
    for f in present:
        array = f.type.startswith("[]")
        role = f.entity if f.entity in wanted else None
        if role is None and topics:
            if f.type == "uuid" and f.name in TOPIC_ID_FIELDS:
                role = _TOPIC_ID
            elif under_topic and f.type == "int32" and f.name in PARTITION_INDEX_FIELDS:
                role = _PARTITION
            elif names_topic and f.type == "[]int32" and f.name in PARTITION_LISTS:
                role = _PARTITION_LIST
        sub = None
        if f.children is not None:
            # a struct array right under a topic-naming struct holds its partitions
            sub = _struct_plan(f.children, version, wanted, names_topic and array) or None
        if role is not None or sub is not None:
            elem_names_topic = (
                topics
                and f.children is not None
                and any(_names_topic(c) for c in f.children if schema.in_versions(c.versions, version))
            )
            descend = sub is not None and (elem_names_topic or any(_yields(n) for n in sub.values()))
            inner = sub is not None and any(_yields_in_walk(n) for n in sub.values())
            out[snake(f.name)] = Node(role, array, sub, elem_names_topic, descend, inner)
    return out


def _names_topic(f) -> bool:
    return (f.entity == TOPIC and f.type == "string") or (f.type == "uuid" and f.name in TOPIC_ID_FIELDS)


def _yields(n: Node) -> bool:
    return (n.role is not None and n.role not in _NOT_YIELDED) or n.descend


def _yields_in_walk(n: Node) -> bool:
    """Whether :func:`_walk` yields something for a field of plan node ``n`` (a topic name field
    of a struct is read into its TopicRef, not yielded by itself)."""
    role = n.role
    if role is not None and role not in _NOT_YIELDED and (role != TOPIC or n.array):
        return True
    return n.descend


# roles that are read as part of a TopicRef rather than yielded on their own
_NOT_YIELDED = frozenset((_TOPIC_ID, _PARTITION, _PARTITION_LIST))


# -- the walker -----------------------------------------------------------------------------------


def walk(
    msg: Message | None, topic_ids: dict[str, str] | None = None, wanted: frozenset[str] = ALL
) -> Iterator[TopicRef | EntityRef]:
    """Every topic and entity of the ``wanted`` types ``msg``'s body names, in body order (a
    struct's topic before what its fields name)."""
    if msg is None or msg.body is None or msg.api_key is None or msg.api_version is None:
        return
    p = plan(msg.api_key, msg.kind, msg.api_version, wanted)
    if p:
        yield from _walk(msg.body, p, topic_ids or {}, None, False, False, False)


def _walk(struct: Field, p: dict[str, Node], ids: dict[str, str], array, nested, inside, names_topic):
    """Walk ``struct`` (held by ``array``, itself ``nested`` in another array; ``inside``: the
    struct is inside some array element)."""
    if names_topic:
        ref = _topic_ref(struct, p, ids, array, nested)
        if ref is not None:
            yield ref
    for f in struct.children or ():
        node = p.get(f.name)
        if node is None:
            continue
        role = node.role
        if role is not None and role not in _NOT_YIELDED:
            if node.array:
                for e in f.children or ():
                    if role == TOPIC:
                        if e.value:
                            yield TopicRef(e.value, None, e.value, (), None, f.name, inside)
                    else:
                        yield EntityRef(role, e.value, e)
            elif role != TOPIC:
                yield EntityRef(role, f.value, f)
        if node.descend and f.children:
            sub = node.sub
            assert sub is not None  # descend is only set with a sub-plan (_struct_plan)
            if node.array:
                names_topic, inner = node.names_topic, node.inner
                for e in f.children:
                    if e.children:
                        if names_topic:  # the element's TopicRef here: a generator less per element
                            ref = _topic_ref(e, sub, ids, f.name, inside)
                            if ref is not None:
                                yield ref
                            if inner:
                                yield from _walk(e, sub, ids, f.name, inside, True, False)
                        else:
                            yield from _walk(e, sub, ids, f.name, inside, True, False)
            else:
                yield from _walk(f, sub, ids, None, False, inside, node.names_topic)


def _topic_ref(struct: Field, p: dict[str, Node], ids, array, nested) -> TopicRef | None:
    name = tid = None
    partitions: list[tuple[int | None, Field | None]] = []
    for f in struct.children or ():
        node = p.get(f.name)
        if node is None:
            continue
        role = node.role
        if role == TOPIC and not node.array:
            if f.type == "string" and f.value:
                name = f.value
        elif role == _TOPIC_ID:
            tid = f.value
        elif role == _PARTITION_LIST:
            partitions.extend((e.value, None) for e in f.children or ())
        elif node.array and node.sub is not None and f.children:
            sub = node.sub
            for e in f.children:
                idx = None
                for x in e.children or ():
                    n = sub.get(x.name)
                    if n is not None and n.role == _PARTITION and isinstance(x.value, int):
                        idx = x.value
                        break
                partitions.append((idx, e))
    if tid == ZERO_UUID:
        tid = None
    if name:
        topic = name
    elif tid:
        topic = ids.get(tid, tid)
    else:
        return None
    return TopicRef(name or None, tid, topic, tuple(partitions), struct, array, nested)


# -- views ----------------------------------------------------------------------------------------


def topic_refs(msg: Message | None, topic_ids: dict[str, str] | None = None) -> Iterator[TopicRef]:
    """The topics ``msg`` names (the walk for topics only). The knowledge, the statistics and
    the records all ask for them, so the walk is done once per message and kept on it; only the
    names of topics known by id alone are looked up again in ``topic_ids`` (which grows)."""
    if msg is None:
        return iter(())
    cached = msg.topic_refs
    if cached is None:
        cached = msg.topic_refs = _topics_of(msg)
    refs, by_id = cached
    if by_id and topic_ids:
        return (_named(r, topic_ids) if r.name is None and r.topic_id else r for r in refs)
    return iter(refs)


def _topics_of(msg: Message) -> tuple[tuple[TopicRef, ...], bool]:
    """(the TopicRefs of ``msg``, whether some name a topic by id alone: only those are looked
    up again). What ``walk(msg, None, TOPICS)`` yields, collected into one list by
    :func:`_collect_topics` (no generator per struct: every message of a capture is walked)."""
    body, key, version = msg.body, msg.api_key, msg.api_version
    if body is None or key is None or version is None:
        return (), False
    p = plan(key, msg.kind, version, TOPICS)
    if not p:
        return (), False
    out: list[TopicRef] = []
    _collect_topics(body, p, out, None, False, False, False)
    by_id = False
    for r in out:
        if r.name is None and r.topic_id:
            by_id = True
            break
    return tuple(out), by_id


def _collect_topics(struct: Field, p: dict[str, Node], out: list, array, nested, inside, names_topic) -> None:
    """:func:`_walk` for a plan of TOPICS: the same TopicRefs in the same order, appended to
    ``out`` (a TOPICS plan has no other entity to yield)."""
    if names_topic:
        ref = _topic_ref(struct, p, _NO_IDS, array, nested)
        if ref is not None:
            out.append(ref)
    for f in struct.children or ():
        node = p.get(f.name)
        if node is None:
            continue
        if node.role == TOPIC and node.array:  # a list of topic names
            for e in f.children or ():
                if e.value:
                    out.append(TopicRef(e.value, None, e.value, (), None, f.name, inside))
        if node.descend and f.children:
            sub = node.sub
            assert sub is not None  # descend is only set with a sub-plan (_struct_plan)
            if not node.array:
                _collect_topics(f, sub, out, None, False, inside, node.names_topic)
            elif node.names_topic:
                inner = node.inner
                for e in f.children:
                    if e.children:
                        ref = _topic_ref(e, sub, _NO_IDS, f.name, inside)
                        if ref is not None:
                            out.append(ref)
                        if inner:
                            _collect_topics(e, sub, out, f.name, inside, True, False)
            else:
                for e in f.children:
                    if e.children:
                        _collect_topics(e, sub, out, f.name, inside, True, False)


_NO_IDS: dict[str, str] = {}  # the cached refs name a topic by id alone with its id


def _named(r: TopicRef, ids: dict[str, str]) -> TopicRef:
    """``r`` known by id alone, with the id's name when ``ids`` has it (as the walk names it)."""
    assert r.topic_id is not None  # called for refs with an id and no name only
    # (r._replace, without its keyword parsing and _make: Fetch v13+ asks for every topic)
    return TopicRef(
        r.name, r.topic_id, ids.get(r.topic_id, r.topic_id), r.partitions, r.element, r.array, r.nested
    )


def entity_values(msg: Message | None, entity: str) -> list:
    """The values of one entity type (GROUP, BROKER, PRODUCER_ID, TRANSACTIONAL_ID) ``msg``
    names, in body order, repeats included."""
    # no TOPIC wanted: the walk yields EntityRefs only
    refs = cast("Iterator[EntityRef]", walk(msg, None, frozenset((entity,))))
    return [r.value for r in refs]
