"""The records a message carries, as plain values: what a producer sent, what a consumer got.

:func:`iter_records` walks a decoded Produce request or Fetch/ShareFetch response body (decoded
with record bodies) and yields one :class:`RecordView` per record, with its topic (names for
topic ids when known) and partition, through compressed batches and nested legacy wrappers: the
records of :func:`~analyzer.dissect.records_view.entry_records`, the shape the export writes too.
Control records (transaction markers) are flagged.

Topics and partitions come from the entity walker (:mod:`analyzer.session.entities`);
:func:`partition_records` picks the records fields of its
partition structs.
"""

from __future__ import annotations

from collections.abc import Iterator

from analyzer.dissect.constants import ApiKey
from analyzer.dissect.records_common import iso_timestamp
from analyzer.dissect.records_view import entry_records
from analyzer.model import Field, Message
from analyzer.plain import record
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


@record(frozen=True)
class RecordView:
    """One record with where it was: the record fields are those of
    :class:`~analyzer.dissect.records_common.Record` (the export's ``record_list`` objects), for every
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

    def __init__(  # one a record (Spark's records table, the TUI's records view): written out
        self,
        topic: str | None,
        partition: int | None,
        offset: int | None,
        timestamp: int | None,
        key: bytes | None,
        value: bytes | None,
        headers: tuple[tuple[str, bytes | None], ...],
        control: bool,
        control_type: str | None,
        magic: int | None,
        codec: str | None,
    ) -> None:
        setter = object.__setattr__
        setter(self, "topic", topic)
        setter(self, "partition", partition)
        setter(self, "offset", offset)
        setter(self, "timestamp", timestamp)
        setter(self, "key", key)
        setter(self, "value", value)
        setter(self, "headers", headers)
        setter(self, "control", control)
        setter(self, "control_type", control_type)
        setter(self, "magic", magic)
        setter(self, "codec", codec)

    @property
    def timestamp_iso(self) -> str | None:
        return None if self.timestamp is None else iso_timestamp(self.timestamp)


def iter_records(msg: Message | None, topic_ids: dict[str, str] | None = None) -> Iterator[RecordView]:
    """Every record of a Produce request / Fetch response decoded with record bodies."""
    for t in topic_refs(msg, topic_ids):
        for partition, rec in partition_records(t):
            for entry in rec.children or ():  # partition_records yields records fields with children
                s = entry.value
                magic, codec = s["magic"], s["codec"]
                for r in entry_records(entry):
                    yield RecordView(t.topic, partition, *r, magic, codec)
