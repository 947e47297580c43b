"""The records a message carries, as plain values: what a producer sent, what a consumer got.

:func:`iter_records` walks a decoded Produce request or Fetch/ShareFetch response body (decoded
with record bodies) and yields one :class:`RecordView` per record, with its topic (names for
topic ids when known) and partition, through compressed batches and nested legacy wrappers.
Control records (transaction markers) are flagged.

The walk over topics and partitions (:func:`topic_elements`, :func:`partition_records`,
:func:`topic_name`) is shared with the statistics and the per-capture knowledge.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from analyzer.dissect.constants import ApiKey
from analyzer.model import Field

# the responses that carry fetched records (Produce requests carry the produced ones)
FETCH_APIS = frozenset((ApiKey.FETCH, ApiKey.SHARE_FETCH))
TOPIC_NAME_FIELDS = ("name", "topic", "topic_name")
PARTITION_FIELDS = ("partition_index", "partition", "index", "partition_id")
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # Kafka's text form of the all-zero topic id: "no id"


def topic_name(t: Field, ids: dict[str, str]) -> str | None:
    """The topic a topic element names: its name, else its topic id (as the name it maps to in
    ``ids`` when known); None when it names neither."""
    name = tid = None
    for x in t.children or ():
        if x.name in TOPIC_NAME_FIELDS and x.type == "string" and x.value:
            name = x.value
        elif x.name == "topic_id" and x.type == "uuid":
            tid = x.value
    if name:
        return name
    if tid and tid != ZERO_UUID:
        return ids.get(tid, tid)
    return None


def topic_elements(body: Field | None, ids: dict[str, str]) -> Iterator[tuple[str, Field]]:
    """(topic, element) for each element of the body's top-level arrays that names a topic."""
    for arr in body.children or () if body is not None else ():
        if arr.children and arr.type.startswith("[]"):
            for t in arr.children:
                name = topic_name(t, ids)
                if name is not None:
                    yield name, t


def partition_records(t: Field) -> Iterator[tuple[int | None, Field]]:
    """(partition, records field) of a topic element: topic -> partitions -> records, without
    walking into the records."""
    for parts in t.children or ():
        if not parts.children or not parts.type.startswith("[]"):
            continue
        for p in parts.children:
            partition = None
            for x in p.children or ():
                if x.name in PARTITION_FIELDS and partition is None:
                    partition = x.value
                elif x.type == "records" and x.children:
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


def iter_records(body: Field | None, topic_ids: dict[str, str] | None = None) -> Iterator[RecordView]:
    for topic, t in topic_elements(body, topic_ids or {}):
        for partition, rec in partition_records(t):
            for entry in rec.children:
                yield from _entry(entry, topic, partition)


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
