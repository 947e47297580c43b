"""The records a message carries, as plain values: what a producer sent, what a consumer got.

:func:`iter_records` walks a decoded Produce request or Fetch/ShareFetch response (decoded with
record bodies) and yields one :class:`RecordView` per record, with its topic (names for topic
ids when known) and partition, through compressed batches and nested legacy wrappers. Control
records (transaction markers) are flagged.

Topics and partitions come from the entity walker (:mod:`analyzer.session.entities`);
:func:`partition_records` (shared with the statistics) picks the records fields of its
partition structs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from analyzer.dissect.constants import ApiKey
from analyzer.model import Field, Message
from analyzer.session.entities import TopicRef, topic_refs

# the responses that carry fetched records (Produce requests carry the produced ones)
FETCH_APIS = frozenset((ApiKey.FETCH, ApiKey.SHARE_FETCH))


def partition_records(t: TopicRef) -> Iterator[tuple[int | None, Field]]:
    """(partition, records field) of each partition struct of a topic, without walking into
    the records."""
    for partition, p in t.partitions:
        if p is not None:
            for x in p.children or ():
                if x.type == "records" and x.children:
                    yield partition, x


@dataclass(frozen=True, slots=True)
class RecordView:
    topic: str | None
    partition: int | None
    offset: int | None  # absolute offset when the batch says it (Fetch), else None
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int | None
    magic: int
    codec: str | None
    control: bool


def iter_records(msg: Message | None, topic_ids: dict[str, str] | None = None) -> Iterator[RecordView]:
    for t in topic_refs(msg, topic_ids):
        for partition, rec in partition_records(t):
            for entry in rec.children:
                yield from _entry(entry, t.topic, partition)


def _entry(entry: Field, topic, partition, wrapper_codec: str | None = None) -> Iterator[RecordView]:
    summary = entry.value if isinstance(entry.value, dict) else {}
    if entry.name == "record_batch":
        base = entry.get("base_offset")
        base_ts = entry.get("base_timestamp")
        codec = summary.get("codec")
        control = bool(summary.get("control"))
        for rec in _v2_records(entry):
            od = rec.get("offset_delta")
            tsd = rec.get("timestamp_delta")
            hdrs = rec.child("headers")
            headers = (
                tuple((h.get("key"), h.get("value")) for h in (hdrs.children or ()) if hdrs is not None)
                if hdrs is not None
                else ()
            )
            yield RecordView(
                topic,
                partition,
                None if base is None or od is None else base + od,
                rec.get("key"),
                rec.get("value"),
                headers,
                None if base_ts is None or tsd is None else base_ts + tsd,
                2,
                codec,
                control,
            )
    elif entry.name == "message":
        dec = entry.child("decompressed")
        if dec is not None:
            for inner in dec.children or ():
                yield from _entry(inner, topic, partition, summary.get("codec"))
            return
        off = entry.get("absolute_offset", entry.get("offset"))
        yield RecordView(
            topic,
            partition,
            off,
            entry.get("key"),
            entry.get("value"),
            (),
            entry.get("timestamp"),
            entry.get("magic") or 0,
            wrapper_codec or summary.get("codec"),
            False,
        )


def _v2_records(batch: Field) -> Iterator[Field]:
    for c in batch.children or ():
        if c.name == "records" and c.children:
            yield from (r for r in c.children if r.name == "record")
        elif c.name == "decompressed":
            yield from _v2_records(c)
