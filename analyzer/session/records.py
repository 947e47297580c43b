"""The records a message carries, as plain values: what a producer sent, what a consumer got.

:func:`iter_records` walks a decoded Produce request or Fetch/ShareFetch response body (decoded
with record bodies) and yields one :class:`RecordView` per record, with its topic (names for
topic ids when known) and partition, through compressed batches and nested legacy wrappers.
Control records (transaction markers) are flagged.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from analyzer.model import Field

_TOPIC_NAME = ("name", "topic", "topic_name")
_PARTITION = ("partition_index", "partition", "index", "partition_id")


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
    if body is None:
        return
    ids = topic_ids or {}
    for arr in body.children or ():
        if not arr.children or not (arr.type.startswith("[]")):
            continue
        for t in arr.children:
            topic = _topic(t, ids)
            for parts in t.children or ():
                if not parts.children or not parts.type.startswith("[]"):
                    continue
                for p in parts.children:
                    partition = next((x.value for x in p.children or () if x.name in _PARTITION), None)
                    for rec in p.children or ():
                        if rec.type == "records" and rec.children:
                            for entry in rec.children:
                                yield from _entry(entry, topic, partition)


def _topic(t: Field, ids: dict[str, str]) -> str | None:
    for x in t.children or ():
        if x.name in _TOPIC_NAME and x.type == "string":
            return x.value
        if x.name == "topic_id" and x.type == "uuid":
            return ids.get(x.value, x.value)
    return None


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
