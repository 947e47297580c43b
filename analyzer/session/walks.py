"""One walk of a Produce or Fetch exchange for every insight that reads it.

The lag, the producers, the transactions, the end-to-end latency and the consumption each read a
Produce exchange's batches and answers, or a Fetch exchange's partitions; :func:`produced` and
:func:`fetched` walk the exchange once and keep the result for the exchange being handled (the
consumers of a run see each exchange one after another), so the walk is paid once per exchange.
"""

from __future__ import annotations

from typing import NamedTuple

from analyzer.model import Exchange, Field
from analyzer.session.entities import topic_refs

Ref = tuple[str | None, str | None, int]  # (topic name, topic id, partition)


def topic_of(ref: Ref, topic_ids: dict[str, str] | None) -> tuple[str, int]:
    """(topic, partition) of a partition reference: its name, else its id's name in
    ``topic_ids`` as known when the fact is applied, else the id."""
    name, tid, p = ref
    if name:
        return name, p
    return (topic_ids or {}).get(tid, tid) if tid is not None else "", p


class ProducedPartition(NamedTuple):
    """A partition of a Produce request, with its answer."""

    ref: Ref
    batches: tuple[dict, ...]  # the batch summaries the request sent there (record_batch values)
    error: int | None  # the answer's error code; None: no answer for it
    base_offset: int | None
    log_append_time: int | None
    entries: tuple = ()  # the batches' Fields, in the order of ``batches``


class FetchedPartition(NamedTuple):
    """A partition of a Fetch answer, with what the request asked of it."""

    ref: Ref
    fetch_offset: int | None  # None: the request did not name it (a fetch session's)
    error: int | None
    high_watermark: int | None
    last_stable_offset: int | None
    batches: tuple[dict, ...]


class FetchWalk(NamedTuple):
    named: dict[Ref, int | None]  # the partitions the request names, with their fetch offsets
    forgotten: tuple[Ref, ...]  # forgotten_topics_data (KIP-227)
    answered: tuple[FetchedPartition, ...]


# (exchange, its produced walk, its fetched walk) of the last exchange walked: one tuple, replaced
# whole, so a thread reading it sees one exchange's walks or another's, never a mix
_memo: list[tuple] = [(None, None, None)]


class Layout:
    """Where three named children sit in the structs of one kind (a Produce answer's
    partitions, a Fetch answer's): learned from the first struct with a given number of
    children, checked by name on every read; a struct laid out otherwise, or without one of the
    names, is read by name. :meth:`read` gives what three :meth:`Field.get` give, without a scan
    of the children per name."""

    __slots__ = ("names", "places")

    def __init__(self, first: str, second: str, third: str) -> None:
        self.names = (first, second, third)
        self.places: dict[int, tuple[int, int, int] | None] = {}  # number of children -> places

    def read(self, struct: Field) -> tuple:
        ch = struct.children or ()
        n = len(ch)
        if n in self.places:
            places = self.places[n]
        else:
            at: dict[str, int] = {}
            for i, c in enumerate(ch):
                at.setdefault(c.name, i)
            found = tuple(at.get(name, -1) for name in self.names)
            places = self.places[n] = None if -1 in found else (found[0], found[1], found[2])
        first, second, third = self.names
        if places is not None:
            i, j, k = places
            a, b, c = ch[i], ch[j], ch[k]
            if a.name == first and b.name == second and c.name == third:
                return a.value, b.value, c.value
        return struct.get(first), struct.get(second), struct.get(third)


_PRODUCE_ANSWER = Layout("error_code", "base_offset", "log_append_time_ms")
_FETCH_ANSWER = Layout("error_code", "high_watermark", "last_stable_offset")


def _entries(partition) -> list:
    """The batch Fields of a partition's records (their values: the batch summaries)."""
    out: list = []
    for x in partition.children or ():
        if x.type == "records":
            kids = x.children
            if kids:
                out += [e for e in kids if isinstance(e.value, dict)]
    return out


def produced(ev: Exchange) -> tuple[ProducedPartition, ...]:
    """The partitions of a Produce exchange's request with their batches and answers."""
    last = _memo[0]
    if last[0] is ev and last[1] is not None:
        return last[1]
    answers: dict[Ref, tuple] = {}
    if ev.response is not None and ev.response.body is not None:
        read = _PRODUCE_ANSWER.read
        for r in topic_refs(ev.response):
            name, tid = r.name, r.topic_id
            for p, f in r.partitions:
                if p is not None and f is not None:
                    answers[(name, tid, p)] = read(f)
    out = []
    none = (None, None, None)
    for r in topic_refs(ev.request):
        name, tid = r.name, r.topic_id
        for p, f in r.partitions:
            if p is None or f is None:
                continue
            ref = (name, tid, p)
            err, base, lat = answers.get(ref, none)
            entries = _entries(f)
            out.append(
                ProducedPartition(
                    ref,
                    tuple([e.value for e in entries]),
                    err if isinstance(err, int) else None,
                    base if isinstance(base, int) else None,
                    lat if isinstance(lat, int) else None,
                    tuple(entries),
                )
            )
    result = tuple(out)
    _memo[0] = (ev, result, last[2] if last[0] is ev else None)
    return result


def fetched(ev: Exchange) -> FetchWalk:
    """A Fetch exchange's request partitions (named, forgotten) and answered partitions."""
    last = _memo[0]
    if last[0] is ev and last[2] is not None:
        return last[2]
    named: dict[Ref, int | None] = {}
    forgotten: list[Ref] = []
    for r in topic_refs(ev.request):
        forget = r.array == "forgotten_topics_data"
        name, tid = r.name, r.topic_id
        for p, f in r.partitions:
            if p is None:
                continue
            ref = (name, tid, p)
            if forget:
                forgotten.append(ref)
            else:
                off = f.get("fetch_offset") if f is not None else None
                named[ref] = off if isinstance(off, int) else None
    answered = []
    if ev.response is not None and ev.response.body is not None:
        read = _FETCH_ANSWER.read
        for r in topic_refs(ev.response):
            name, tid = r.name, r.topic_id
            for p, f in r.partitions:
                if p is None or f is None:
                    continue
                ref = (name, tid, p)
                err, hw, lso = read(f)
                answered.append(
                    FetchedPartition(
                        ref,
                        named.get(ref),
                        err,
                        hw if isinstance(hw, int) else None,
                        lso if isinstance(lso, int) else None,
                        tuple([e.value for e in _entries(f)]),
                    )
                )
    result = FetchWalk(named, tuple(forgotten), tuple(answered))
    _memo[0] = (ev, last[1] if last[0] is ev else None, result)
    return result
