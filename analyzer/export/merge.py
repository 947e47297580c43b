"""One run's output from the parts of a capture analysed apart: what ``export -j``'s merge
(:mod:`analyzer.export.parallel`) and Spark's stitching (:mod:`analyzer.spark.stitch`) both put
right, on named tuples.

Each part analyses some of the capture's connections (all of a connection's packets go to one
part) and records one :class:`Item` per event: the packet that completed it (``batch``; the
end's events :data:`END`), its place among the part's events, its kind, the connection's id in
the part's own numbering and, for an exchange, an :class:`ExchangeItem`. What depends on the
other connections is then put right, as one run has it:

* **connection ids** number the connections in the order they opened over every part
  (:func:`connection_ids`; rewritten in a line by :func:`renumber`);
* the **order** of the events: by the packet that completed them, the end's by connection
  (:func:`order_key`);
* **topic labels** of topics named by id, and the record counts per topic
  (:class:`TopicRefs`, rewritten in a line by :func:`relabel`): the names one run learnt by then,
  maybe on another part's connection;
* the **broker** an issue says answered (:data:`UNNAMED_ANSWER` while the part had not learnt the
  broker's software: :func:`name_broker`, :func:`name_broker_in`);
* a **simple commit** answered UNKNOWN_MEMBER_ID (:class:`SimpleCommit`): its
  ``quirk.simple_commit_rejected`` judged against the group members one run knows by then
  (rewritten in a line by :func:`with_issues`);
* **connections tracked at once** (``--max-connections``): one run closes the longest-idle early
  when too many are open together; which ones depends on every connection, so a part cannot do
  it alone: :func:`evicts` says when one run would have (then one process must do the work).
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import NamedTuple

import orjson

from analyzer.dissect.constants import ApiKey
from analyzer.issues import QUIRK_SIMPLE_COMMIT_REJECTED
from analyzer.model import ConnInfo, Exchange, Issue
from analyzer.session.groups import GroupMembers, simple_commit, simple_commit_rejected
from analyzer.session.knowledge import EXCHANGE_TOPIC_ARRAYS, UNNAMED_BROKER
from analyzer.session.records import FETCH_APIS
from analyzer.session.stats import ExchangeFacts, topic_record_counts

END = 1 << 62  # the batch of the events of the end of the capture, after every packet

# the kinds of events (an Item's ``kind``)
EXCHANGE, CONNECTION, GAP, ISSUE = range(4)
SECTIONS = (None, "connections", "gaps", "issues")  # the export's section of each kind

UNNAMED_ANSWER = UNNAMED_BROKER + " answered "  # how an issue starts that names no broker software
_UNNAMED_JSON = orjson.dumps(UNNAMED_ANSWER)[:-1]  # ... and how it starts in a JSON line
_QUIRK = QUIRK_SIMPLE_COMMIT_REJECTED.code


# -- what a part records of each event --------------------------------------------------------------


class TopicRefs(NamedTuple):
    """The topic references an exchange's labels and record counts come from, unresolved
    (a topic named by id gets its name where it is read: :meth:`topics`, :meth:`record_counts`)."""

    labels: list[tuple[str | None, str | None, list[int]]]  # (name, topic id, partitions)
    counts: list[tuple[str | None, str | None, int, int]]  # (name, topic id, records, bytes)

    def topics(self, name: Callable[[str | None, str | None], str]) -> dict[str, list[int]]:
        """Topic -> partitions, as the export's ``topics`` (``name(name, topic id)``: the topic's
        name as one run has it there)."""
        out: dict[str, list[int]] = {}
        for nm, tid, partitions in self.labels:
            out.setdefault(name(nm, tid), []).extend(partitions)
        return out

    def record_counts(self, name: Callable[[str | None, str | None], str]) -> list[tuple[str, int, int]]:
        """(topic, records, bytes) per topic, as :func:`~analyzer.session.stats.exchange_facts`."""
        counts: dict[str, list[int]] = {}
        for nm, tid, nrec, nbytes in self.counts:
            acc = counts.setdefault(name(nm, tid), [0, 0])
            acc[0] += nrec
            acc[1] += nbytes
        return [(t, n, b) for t, (n, b) in counts.items()]


def topic_refs(ex: Exchange) -> TopicRefs:
    """The :class:`TopicRefs` of an exchange."""
    from analyzer.session.entities import topic_refs as refs_of

    req, resp = ex.request, ex.response
    msg = req if req is not None and req.body is not None else resp
    labels = []
    if msg is not None and msg.body is not None:
        for t in refs_of(msg):
            if t.element is not None and not t.nested and t.array in EXCHANGE_TOPIC_ARRAYS:
                labels.append((t.name, t.topic_id, t.partition_indexes()))
    key = ex.api_key
    src = req if key == ApiKey.PRODUCE else resp if key in FETCH_APIS else None
    counts = [(t.name, t.topic_id, n, b) for t, n, b in topic_record_counts(src)] if src is not None else []
    return TopicRefs(labels, counts)


class SimpleCommit(NamedTuple):
    """A simple commit answered UNKNOWN_MEMBER_ID (:func:`~analyzer.session.groups.simple_commit`),
    ready to be judged again: whether it is ``quirk.simple_commit_rejected`` depends on the group's
    live members, which other connections (other parts') make and end."""

    group: str
    judged: bool  # its part judged it the quirk (from the members it knew)
    own: list[Issue]  # the exchange's own issues but the quirk (pairing adds the quirk last)
    quirk: Issue | None  # the quirk, named for an empty group by an unnamed broker
    after: list[Issue]  # its messages' issues

    @classmethod
    def of(cls, ex: Exchange) -> SimpleCommit | None:
        """None for an exchange that is no such commit."""
        gid = simple_commit(ex)
        if gid is None:
            return None
        quirk = simple_commit_rejected(ex, GroupMembers(), UNNAMED_BROKER)
        judged = any(i.code == _QUIRK for i in ex.issues)
        own = [i for i in ex.issues if i.code != _QUIRK]
        after = [i for m in (ex.request, ex.response) if m is not None for i in m.issues]
        return cls(gid, judged, own, quirk, after)

    def own_issues(self, empty: bool) -> list[Issue]:
        """The exchange's own issues (:attr:`~analyzer.model.Exchange.issues`) as one run has
        them: with the quirk when one run knows no live member of the group (``empty``)."""
        if empty and self.quirk is not None:
            return [*self.own, self.quirk]
        return list(self.own)

    def issues(self, empty: bool) -> list[Issue]:
        """All the exchange's issues (:meth:`~analyzer.model.Exchange.all_issues`) as one run has
        them (see :meth:`own_issues`)."""
        return [*self.own_issues(empty), *self.after]


class ExchangeItem(NamedTuple):
    """What a part records of an exchange besides its line."""

    facts: ExchangeFacts  # what the statistics count
    refs: TopicRefs | None  # when a topic id was looked up: its labels may need names from elsewhere
    learn: Exchange | None  # an exchange the knowledge learns from (Metadata, groups...)
    commit: SimpleCommit | None
    # the insights' part (Insights.apply): the exchange the group timeline reads, the facts
    insight: tuple[Exchange | None, tuple | None] | None = None
    metric: tuple | None = None  # what the metrics count besides the facts (metric_extra)


class IssueItem(NamedTuple):
    """What a part records of a connection's issue (or gap) besides its line."""

    code: str
    message: str


class Item(NamedTuple):
    """One event of a part."""

    batch: int  # the number of the packet that completed it; END: the end of the capture
    seq: int  # its place among the part's events
    kind: int  # EXCHANGE, CONNECTION, GAP or ISSUE
    conn: int  # its connection's id in the part's numbering
    length: int  # the bytes of its line
    extra: ExchangeItem | IssueItem | ConnInfo  # a connection's end: the connection


def order_key(batch: int, seq: int, conn: int) -> tuple[int, int, int]:
    """An event's place in one run's order: by the packet that completed it; at the end, by
    connection (``conn``: the connection's id over the whole capture), then as its part had it."""
    return (batch, conn if batch == END else 0, seq)


def connection_ids(opens: Iterable[tuple[Hashable, Sequence[int]]]) -> dict[tuple, int]:
    """One run's connection ids: ``(part, local id)`` -> id, in the order the connections opened
    over every part, from ``(part, packet number at which each of its connections opened)``."""
    opened = sorted((index, part, local) for part, at in opens for local, index in enumerate(at, 1))
    return {(part, local): n for n, (_index, part, local) in enumerate(opened, 1)}


# -- lines put right --------------------------------------------------------------------------------


def renumber(line: bytes, kind: int, conn: int) -> bytes:
    """An export line with its connection id rewritten (the first place each kind has it)."""
    if kind == EXCHANGE:
        tag = b',"connection":{"id":'
    elif kind == CONNECTION:
        tag = b'{"type":"connection","id":'
    else:
        tag = b',"connection":'
    i = line.index(tag) + len(tag)
    j = line.index(b",", i)
    return line[:i] + str(conn).encode() + line[j:]


def relabel(line: bytes, topics: dict[str, list[int]]) -> bytes:
    """An exchange's line with its ``topics`` rewritten."""
    tag = b',"topics":'
    i = line.index(tag) + len(tag)
    j = line.index(b',"request":', i)
    return line[:i] + orjson.dumps(topics, option=orjson.OPT_NON_STR_KEYS) + line[j:]


def with_issues(line: bytes, issues: list[Issue]) -> bytes:
    """An exchange's line with its ``issues`` rewritten (they end the line)."""
    tag = b',"issues":'
    return line[: line.rindex(tag)] + tag + orjson.dumps([i.to_dict() for i in issues]) + b"}"


def unnamed(message: str) -> bool:
    """The message says the broker answered without naming its software."""
    return message.startswith(UNNAMED_ANSWER)


def name_broker(message: str, software: str) -> str:
    """The message naming the broker's software (one run knew it there) where it said
    :data:`UNNAMED_ANSWER`."""
    if not message.startswith(UNNAMED_ANSWER):
        return message
    return software + " answered " + message[len(UNNAMED_ANSWER) :]


def name_broker_in(line: bytes, software: str) -> bytes:
    """A JSON text with every message that said :data:`UNNAMED_ANSWER` naming the software."""
    return line.replace(_UNNAMED_JSON, orjson.dumps(software + " answered ")[:-1])


def issue_facts(issues: Iterable[Issue]) -> list[tuple[str, object, str]]:
    """The ``issues`` of :class:`~analyzer.session.stats.ExchangeFacts`."""
    return [(i.code, i.severity, i.message) for i in issues]


# -- connections tracked at once ----------------------------------------------------------------------


class TableLog:
    """What a part's TCP connection table held, packet by packet: what :func:`evicts` needs.
    ``feed`` after each packet the part fed its reassembler (``opened``: that packet opened a
    connection; ``alone``: its two directions are one key, a connection to itself)."""

    __slots__ = ("log", "size")

    def __init__(self) -> None:
        # (packet number, entries after it, entries just before the connection it opened or -1)
        self.log = array("q")
        self.size = 0

    def feed(self, index: int, size: int, opened: bool, alone: bool = False) -> None:
        if opened:
            self.log.extend((index, size, size - (1 if alone else 2)))
        elif size != self.size:
            self.log.extend((index, size, -1))
        self.size = size


def evicts(logs: Sequence[array], max_connections: int) -> bool:
    """Whether one run over the whole capture would close connections early (more than
    ``max_connections`` open at once), from the :class:`TableLog` of each part (a part's packets
    are its connections' only, so one run's table is the parts' together until it evicts)."""
    limit = 2 * max_connections  # the table has an entry per direction
    sizes = [0] * len(logs)
    total = 0

    def steps(p: int, log: array):
        for i in range(0, len(log), 3):
            yield log[i], p, log[i + 1], log[i + 2]

    for _index, p, size, before in heapq.merge(*(steps(p, log) for p, log in enumerate(logs))):
        if before >= 0 and total - sizes[p] + before >= limit:
            return True
        total += size - sizes[p]
        sizes[p] = size
    return False
