"""Decode the ``records`` field of Produce requests and Fetch / ShareFetch responses.

``decode_records(data, base)`` takes the bytes after the field's length prefix and returns
``(fields, issues)``. It never raises on any byte string: every length and count is checked
against the bytes that remain before it is used, varints are bounded (5 bytes for int32, 10 for
int64), decompression goes through ``codecs.decompress`` (bounded by ``Limits``) and timestamps
are range-checked before formatting.

Entries. The set is a sequence of entries ``offset int64, size int32, ...``; byte 16 of each
entry is its magic (v0/v1: after the 4-byte CRC; v2: after the partition leader epoch), so the
format is detected per entry:

* magic 0/1: a ``message`` Field (children offset, message_size, crc, magic, attributes,
  [timestamp], key, value). A compressed wrapper also gets a ``decompressed`` child holding the
  inner messages. Inner offsets of magic 1 wrappers are relative (KIP-31): inner message ``i``
  is at ``wrapper.offset - last_inner.offset + inner_i.offset``. Every inner message keeps its
  raw ``offset`` child and gets an ``absolute_offset`` child (same span) with the resolved one.
* magic 2: a ``record_batch`` Field (children base_offset ... record_count), then ``records``
  (an array of ``record`` Fields) when uncompressed, or ``decompressed`` (children: that
  ``records`` array) when compressed. Records of control batches get their key / value decoded
  as control records (key: version, type: 0 ABORT, 1 COMMIT, KRaft types 2-6; value of
  ABORT/COMMIT: version, coordinator_epoch) with Field types ``control_key`` /
  ``control_value``.
* an entry cut short at the end of the set (a broker stops a fetch at its byte limit) is a
  Field of type ``partial`` (name ``record_batch`` when its magic byte says 2, else
  ``message``) with the header fields that are complete, and a NOTE ``records.partial_batch``
  / ``records.partial_message``. A Produce request should never contain one: callers that know
  the direction may escalate it. Inside decompressed data, a cut entry is an ERROR
  ``records.truncated``.

Coordinates. Top-level Fields span frame coordinates: ``base`` + position in ``data``, so a hex
view can highlight them. A Field of type ``decompressed`` spans the *compressed* bytes in its
parent's coordinates and its ``value`` is the decompressed ``bytes``; all its descendants'
``offset``/``length`` are positions inside that ``value`` (starting at 0). Nested compression
nests the rule. Issue ``offset`` is always a frame offset: for problems inside decompressed
data it is the start of the outermost compressed span, and ``where`` spells out the exact place
("record 3 of batch at decompressed offset 0 (base offset 5) in message at offset 40 (offset
7)"). Key, value and header Fields span their length prefix plus their bytes.

Summary values. Each entry Field's ``value`` is a dict, so statistics need no record bodies:
the keys of :data:`BATCH_KEYS` (the export's ``batch`` object) plus ``record_count``, the same
keys for every magic, None where the magic has no such field::

    magic, codec (name), attributes, timestamp_type, base_offset, last_offset, base_timestamp,
    max_timestamp, producer_id, producer_epoch, base_sequence, partition_leader_epoch,
    transactional, control, control_type (v2 control batches: "COMMIT"/"ABORT"/...), crc,
    crc_ok, bytes (size on the wire), partial, record_count

``record_count`` is the declared count for v2 (clamped at 0); for v0/v1 it is 1 for a plain
message and the number of inner messages for a wrapper, 0 when the wrapper could not be
decompressed. For inner messages ``base_offset`` is the absolute offset (the raw one is their
``offset`` child). The v0/v1 header maps as Kafka's RecordBatch view of legacy batches does:
``max_timestamp`` is the message (wrapper) timestamp.

Records. :func:`entry_records` gives the records of an entry as :class:`Record` tuples, the
one shape every front end shows (export ``record_list``, the records view of the session, the
Spark records table): absolute offset, timestamp (LogAppendTime honoured), key, value, headers,
control flag and type, for magic 0, 1 and 2 alike.

``bodies=False``: entries keep their header Fields (offset ... record_count) but get no key /
value / records / decompressed children, and v2 batches are not decompressed (their count is
in the header). All CRCs are still checked, control batches (one tiny record) are still
decoded for ``control_type``, and v0/v1 wrappers are still decompressed to count (and
CRC-check) their inner messages. Key/value length errors of plain v0/v1 messages are only
found with bodies.

Issue codes: records.crc_mismatch, records.partial_message, records.partial_batch,
records.truncated, records.bad_length, records.unknown_magic, records.bad_record,
records.bad_varint, records.record_count_mismatch, records.trailing_bytes,
records.bad_control_record, records.inner_magic_mismatch, records.decompression_failed,
records.decompression_limit, records.lz4_legacy_checksum, records.bad_header_key.
A CRC mismatch inside a wrapper whose own CRC already failed is not reported again (the inner
message's ``crc_ok`` is still False): one corrupted byte gives one ``records.crc_mismatch``.
An LZ4 frame with the Kafka 0.8/0.9 header checksum is normal in a magic 0 message (no issue)
and a WARNING ``records.lz4_legacy_checksum`` in magic 1/2 (brokers reject it there).

Modules. This one is the entry point: :func:`decode_records`, :func:`decode_records_budget`,
and the other names of ``__all__`` re-exported from the modules that define them:
:mod:`~analyzer.dissect.records_messageset` (the entry loop, partial entries, magic 0/1 messages
and wrappers), :mod:`~analyzer.dissect.records_batch` (magic 2 batches and the record scan),
:mod:`~analyzer.dissect.records_view` (the lazy batch and records Fields, the :class:`Record`
views), :mod:`~analyzer.dissect.records_context` (limits, budget, issues) and
:mod:`~analyzer.dissect.records_common` (the shapes and small helpers they share).
"""

from __future__ import annotations

from analyzer.dissect.codecs import DEFAULT_LIMITS, Limits
from analyzer.dissect.records_common import (
    BATCH_KEYS,
    CONTROL_TYPES,
    TOP,
    BatchInfo,
    Record,
    RecordRow,
    RecordScope,
    control_type,
    iso_timestamp,
)
from analyzer.dissect.records_context import DecodeContext
from analyzer.dissect.records_messageset import decode_set
from analyzer.dissect.records_view import (
    BatchField,
    RecordsField,
    batch_records_field,
    entry_records,
    record_timestamp_text,
    v2_records,
)
from analyzer.model import Field, Issue

__all__ = [
    "decode_records",
    "decode_records_budget",
    "Limits",
    "DEFAULT_LIMITS",
    "CONTROL_TYPES",
    "BATCH_KEYS",
    "BatchInfo",
    "Record",
    "RecordRow",
    "BatchField",
    "RecordScope",
    "RecordsField",
    "batch_records_field",
    "control_type",
    "entry_records",
    "iso_timestamp",
    "record_timestamp_text",
    "v2_records",
]


def decode_records(
    data: bytes | bytearray | memoryview,
    base: int,
    *,
    limits: Limits = DEFAULT_LIMITS,
    bodies: bool = True,
) -> tuple[list[Field], list[Issue]]:
    """Decode a records field; see the module docstring. Never raises on bad bytes."""
    fields, issues, _ = decode_records_budget(data, base, limits=limits, bodies=bodies)
    return fields, issues


def decode_records_budget(
    data: bytes | bytearray | memoryview,
    base: int,
    *,
    limits: Limits = DEFAULT_LIMITS,
    bodies: bool = True,
    budget: int | None = None,
) -> tuple[list[Field], list[Issue], int]:
    """:func:`decode_records` within ``budget`` decompressed bytes (default: the whole
    ``limits.max_total_output``); also returns the budget left, for the next records field of
    the same message; -1 once ``records.decompression_budget`` was said, so it is said once)."""
    buf = data if type(data) is bytes else bytes(data)
    ctx = DecodeContext(limits, bodies, budget)
    fields = decode_set(ctx, buf, TOP if base == 0 else RecordScope(base))
    left = -1 if ctx.budget_said else ctx.budget
    issues = ctx.issues
    if issues.dropped is not None:  # type: ignore[attr-defined]  # a CappedIssues
        issues.close()  # type: ignore[attr-defined]  # a CappedIssues
    return fields, issues, left
