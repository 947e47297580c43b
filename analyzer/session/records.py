"""The records a message carries, as plain values: what a producer sent, what a consumer got.

:func:`iter_records` walks a decoded Produce request or Fetch/ShareFetch response body (decoded
with record bodies) and yields one :class:`RecordView` per record, with its topic (names for
topic ids when known) and partition, through compressed batches and nested legacy wrappers: the
records of :func:`~analyzer.dissect.records.entry_records`, the shape the export writes too.
Control records (transaction markers) are flagged.

The walk over topics and partitions (:func:`topic_elements`, :func:`partition_records`,
:func:`topic_name`) is shared with the statistics and the per-capture knowledge.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from analyzer.dissect.records import entry_records, iso_timestamp
from analyzer.model import Field

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
    """One record with where it was: the record fields are those of
    :class:`~analyzer.dissect.records.Record` (the export's ``record_list`` objects), for every
    magic; ``magic`` and ``codec`` are its batch's (a compressed wrapper's for v0/v1)."""

    topic: str | None
    partition: int | None
    offset: int | None  # absolute when the batch says it (Fetch); producers' batches start at 0
    timestamp: int | None  # ms; LogAppendTime batches: the batch's time for every record
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]  # () for magic 0/1
    control: bool
    control_type: str | None  # "COMMIT", "ABORT"... for transaction markers
    magic: int | None
    codec: str | None

    @property
    def timestamp_iso(self) -> str | None:
        return None if self.timestamp is None else iso_timestamp(self.timestamp)


def iter_records(body: Field | None, topic_ids: dict[str, str] | None = None) -> Iterator[RecordView]:
    """Every record of a Produce request / Fetch response body decoded with record bodies."""
    for topic, t in topic_elements(body, topic_ids or {}):
        for partition, rec in partition_records(t):
            for entry in rec.children:
                s = entry.value
                magic, codec = s["magic"], s["codec"]
                for r in entry_records(entry):
                    yield RecordView(topic, partition, *r, magic, codec)
