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
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from analyzer.dissect.codecs import (
    DEFAULT_LIMITS,
    Limits,
    blob_cap,
    codec_name,
    declared_size,
    decompress_capped,
)
from analyzer.dissect.crc import crc32c
from analyzer.issues import (
    QUIRK_MOCK_ZERO_CRC,
    RECORDS_BAD_CONTROL_COUNT,
    RECORDS_BAD_CONTROL_RECORD,
    RECORDS_BAD_HEADER_KEY,
    RECORDS_BAD_LENGTH,
    RECORDS_BAD_RECORD,
    RECORDS_BAD_VARINT,
    RECORDS_CRC_MISMATCH,
    RECORDS_DECOMPRESSION_BUDGET,
    RECORDS_DECOMPRESSION_LIMIT,
    RECORDS_INNER_MAGIC_MISMATCH,
    RECORDS_ISSUES_SUPPRESSED,
    RECORDS_LZ4_LEGACY_CHECKSUM,
    RECORDS_PARTIAL_BATCH,
    RECORDS_PARTIAL_MESSAGE,
    RECORDS_RECORD_COUNT_MISMATCH,
    RECORDS_RECORD_LIMIT,
    RECORDS_TRAILING_BYTES,
    RECORDS_TRUNCATED,
    RECORDS_UNKNOWN_MAGIC,
    IssueKind,
)
from analyzer.model import Field, Issue, LazyField, Severity

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

_LEGACY = struct.Struct(">qiIbb")  # offset, message_size, crc, magic, attributes
_OFF_SIZE = struct.Struct(">qi")
_V2 = struct.Struct(">qiibIhiqqqhii")
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_I32U = struct.Struct(">I")
_CTRL_KEY = struct.Struct(">hh")
_CTRL_VALUE = struct.Struct(">hi")

_LEGACY_MIN = (14, 22)  # smallest message_size: crc, magic, attributes, [timestamp], key len, value len
_V2_MIN = 49  # smallest batch_length: the header after the length field
_V2_HEADER = 61
_MAX_DEPTH_CAP = 16  # whatever Limits says, recursion stays shallow

CONTROL_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MIN_MS = -62135596800000  # 0001-01-01T00:00:00Z
_MAX_MS = 253402300799999  # 9999-12-31T23:59:59.999Z


_SECONDS: dict[int, str] = {}  # epoch second -> "YYYY-MM-DDTHH:MM:SS" (records of a batch share seconds)


def iso_timestamp(ms: int) -> str | None:
    """ISO 8601 UTC for epoch milliseconds; None for -1 (no timestamp) or out of range."""
    if ms == -1 or ms < _MIN_MS or ms > _MAX_MS:
        return None
    sec, milli = divmod(ms, 1000)
    head = _SECONDS.get(sec)
    if head is None:
        if len(_SECONDS) >= 4096:
            _SECONDS.clear()
        head = _SECONDS[sec] = (_EPOCH + timedelta(seconds=sec)).isoformat()[:-6]
    return f"{head}.{milli:03d}Z"


class _Malformed(Exception):  # noqa: N818 - internal control flow, never escapes this module
    """A record or message body does not parse; caught right where the record is framed."""

    def __init__(self, kind: IssueKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind  # the issue it becomes
        self.message = message


def _varint(buf: bytes, p: int, end: int, size: int = 5) -> tuple[int, int]:
    """Zigzag varint as Kafka's ByteUtils: ``size`` 5 reads a varint (at most 5 bytes, the value
    wraps to 32 bits), ``size`` 10 a varlong (at most 10 bytes, wraps to 64 bits)."""
    if p < end:
        b = buf[p]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), p + 1
    kind = "varint" if size == 5 else "varlong"
    result = 0
    shift = 0
    limit = p + size
    while p < end:
        if p == limit:
            raise _Malformed(RECORDS_BAD_VARINT, f"{kind} longer than {size} bytes")
        b = buf[p]
        p += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            result &= (1 << (32 if size == 5 else 64)) - 1
            return (result >> 1) ^ -(result & 1), p
        shift += 7
    raise _Malformed(RECORDS_BAD_VARINT, f"{kind} cut by the end of the data")


def _text(b: bytes) -> str | None:
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _crc_display(stored: int, computed: int) -> str:
    if stored == computed:
        return f"0x{stored:08x} (ok)"
    return f"0x{stored:08x} (mismatch: computed 0x{computed:08x})"


_ATTR_DISPLAY: dict[tuple[int, int], str] = {}


def _v2_attr_display(attrs: int) -> str:
    d = _ATTR_DISPLAY.get((2, attrs))
    if d is None:
        d = _ATTR_DISPLAY[(2, attrs)] = _v2_attr_text(attrs)
    return d


def _v2_attr_text(attrs: int) -> str:
    parts = [
        f"codec={codec_name(attrs & 7)}",
        "timestamp_type=log_append_time" if attrs & 0x08 else "timestamp_type=create_time",
    ]
    if attrs & 0x10:
        parts.append("transactional")
    if attrs & 0x20:
        parts.append("control")
    if attrs & 0x40:
        parts.append("delete_horizon")
    return ", ".join(parts)


def _legacy_attr_display(attrs: int, magic: int) -> str:
    d = _ATTR_DISPLAY.get((magic, attrs))
    if d is None:
        d = _ATTR_DISPLAY[(magic, attrs)] = _legacy_attr_text(attrs, magic)
    return d


def _legacy_attr_text(attrs: int, magic: int) -> str:
    s = f"codec={codec_name(attrs & 7)}"
    if magic >= 1:
        s += ", timestamp_type=log_append_time" if attrs & 0x08 else ", timestamp_type=create_time"
    return s


def _summary(magic: int | None, codec: str | None, records: int, size: int, base_offset: int | None) -> dict:
    """An entry Field's value: the keys of :data:`BATCH_KEYS` (the export's ``batch`` object)
    plus ``record_count``; the same keys for every magic, None where the magic has no such field."""
    return {
        "magic": magic,
        "codec": codec,
        "attributes": None,
        "timestamp_type": None,
        "base_offset": base_offset,
        "last_offset": base_offset,
        "base_timestamp": None,
        "max_timestamp": None,
        "producer_id": None,
        "producer_epoch": None,
        "base_sequence": None,
        "partition_leader_epoch": None,
        "transactional": False,
        "control": False,
        "control_type": None,
        "crc": None,
        "crc_ok": None,
        "bytes": size,
        "partial": False,
        "record_count": records,
    }


BATCH_KEYS = tuple(k for k in _summary(None, None, 0, 0, None) if k != "record_count")
_CODEC_NAMES = {c: codec_name(c) for c in range(8)}


class RecordScope(NamedTuple):
    """Where a message set / batch sequence being decoded sits: ``base`` maps positions in its
    buffer to Field offsets (frame offsets at the top level, 0 inside decompressed data);
    ``anchor`` is None at the top level, inside decompressed data the frame offset issues use;
    ``where`` names the enclosing entry (None at the top level); ``trusted`` is False inside a
    wrapper whose CRC failed; ``wrapper_magic`` is the magic of the enclosing wrapper.
    (A NamedTuple: one is made per records field, and a frozen dataclass's __init__ costs
    several times a tuple's.)"""

    base: int = 0
    depth: int = 0
    anchor: int | None = None
    where: str | None = None
    trusted: bool = True
    wrapper_magic: int | None = None


TOP = RecordScope()


class BatchInfo(NamedTuple):
    """What a v2 batch's records need from its header (``RecordsField.batch``)."""

    base_offset: int
    base_timestamp: int
    max_timestamp: int
    attributes: int
    record_count: int  # (not ``count``: that would shadow tuple.count)
    where: str  # the batch, for issues
    ioff: int  # frame offset for issues


class RecordRow(NamedTuple):
    """One v2 record as the records parser leaves it: values and positions in ``RecordsField.buf``.

    ``body`` is the first byte after the length varint; the key's length varint starts at
    ``od_end``, the value's at ``key_end``, the header count's at ``value_end``. ``*_data`` is -1
    for a null key/value (``*_end`` is then the end of its varint). ``headers``: one
    ``(start, key_data, key_end, value_data, value_end)`` per header, ``key_data`` None when its
    key did not parse, ``value_data`` None when its value did not (-1 for a null value). Parts
    a malformed record never reached are None; ``ok`` is False for those records.
    """

    rstart: int
    body: int
    rend: int
    attributes: int | None
    ts_delta: int | None
    ts_end: int | None
    offset_delta: int | None
    od_end: int | None
    key_data: int | None
    key_end: int | None
    value_data: int | None
    value_end: int | None
    header_count: int | None
    hc_end: int | None
    headers: list | None
    ok: bool


class Record(NamedTuple):
    """One record in the shape every front end shows, for magic 0, 1 and 2 alike."""

    offset: int | None  # absolute when the batch / message says it (see entry_records)
    timestamp: int | None  # ms since the epoch; LogAppendTime batches: the batch's for every record
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]  # () for magic 0/1
    control: bool
    control_type: str | None  # "COMMIT", "ABORT"... for control records


class _Issues(list):
    """The issues of one records field: at most ``cap`` of each code are kept, the rest counted
    and summarised by :meth:`close` in one ``records.issues_suppressed`` per code (a batch of a
    million malformed records must not cost a million Issue objects)."""

    __slots__ = ("cap", "counts", "dropped")

    def __init__(self, cap: int) -> None:  # list's own __init__ is not needed: an empty list
        self.cap = cap if cap > 1 else 1
        self.counts: dict[str, int] = {}
        self.dropped: dict[str, Issue] | None = None  # code -> the first issue not listed

    def append(self, issue: Issue) -> None:
        code = issue.code
        n = self.counts[code] = self.counts.get(code, 0) + 1
        if n <= self.cap:
            list.append(self, issue)
        elif self.dropped is None:
            self.dropped = {code: issue}
        elif code not in self.dropped:
            self.dropped[code] = issue

    def close(self) -> list[Issue]:
        for code, first in (self.dropped or {}).items():
            more = self.counts[code] - self.cap
            list.append(
                self,
                RECORDS_ISSUES_SUPPRESSED(
                    f"{more} more {code} issues in this records field are not listed (the first "
                    f"{self.cap} are; the next was: {first.message})",
                    first.offset,
                    first.where,
                ),
            )
        return self


class _Ctx:
    __slots__ = ("limits", "bodies", "issues", "budget", "max_depth", "light", "budget_said")

    def __init__(self, limits: Limits, bodies: bool, budget: int | None = None) -> None:
        self.limits = limits
        self.bodies = bodies
        self.issues: list[Issue] = _Issues(limits.max_issues)
        # a negative budget: spent, and said (records.decompression_budget is said once a message)
        self.budget = limits.max_total_output if budget is None else max(budget, 0)
        self.max_depth = min(limits.max_depth, _MAX_DEPTH_CAP)
        # what the last _decode_set only counted past max_records: (entries, last offset)
        self.light: tuple[int, int | None] = (0, None)
        self.budget_said = budget is not None and budget < 0

    def inflate(self, codec: int, data, ioff: int, where: str) -> tuple[bytes | None, Issue | None]:
        """Decompress one blob within the request's remaining budget; a refusal caused by the
        budget (not by the blob's own limits) is ``records.decompression_budget``, said once."""
        limits = self.limits
        raw, issue = decompress_capped(codec, data, limits, self.budget)
        # the blob's own cap (size and ratio): a refusal under a smaller budget is the budget's
        own = blob_cap(limits, len(data))
        if (
            raw is None
            and issue is not None
            and issue.code == RECORDS_DECOMPRESSION_LIMIT.code
            and self.budget < own
        ):
            issue = None
            if not self.budget_said:
                self.budget_said = True
                self.issues.append(
                    RECORDS_DECOMPRESSION_BUDGET(
                        f"the records of this message would decompress to more than"
                        f" {self.limits.max_total_output} bytes (max_total_output; raise it with"
                        f" --max-decompressed): this and later compressed batches are not decompressed",
                        ioff,
                        where,
                    )
                )
        if raw is not None:
            self.budget -= len(raw)
        return raw, issue

    def judge(self, codec: int, data, ioff: int, where: str) -> None:
        """A compressed blob that is not inflated (no bodies): the size its codec's framing
        declares (:func:`~analyzer.dissect.codecs.declared_size`) is held against the limits
        inflating it would apply, so the damage is named without the work:
        ``records.decompression_limit`` for a blob over its own cap, the message's
        ``records.decompression_budget`` once the declared sizes exceed it. A blob that
        declares nothing costs nothing here."""
        size = declared_size(codec, data)
        if size is None:
            return
        limits = self.limits
        # a blob's cap is at least min(max_output, ratio_grace): a size within both is under it
        if size > limits.ratio_grace or size > limits.max_output:
            own = blob_cap(limits, len(data))
            if size > own:
                self._over_cap(codec, data, size, own, ioff, where)
                return
        if size > self.budget and not self.budget_said:
            self.budget_said = True
            self.issues.append(
                RECORDS_DECOMPRESSION_BUDGET(
                    f"the records of this message declare more than {limits.max_total_output}"
                    " decompressed bytes in their codec headers (max_total_output; raise it with"
                    " --max-decompressed): export --records and check do not decompress this"
                    " and later compressed batches",
                    ioff,
                    where,
                )
            )
        left = self.budget - size
        self.budget = left if left > 0 else 0

    def _over_cap(self, codec: int, data, size: int, own: int, ioff: int, where: str) -> None:
        """``records.decompression_limit`` for a blob that declares more than its cap."""
        limits = self.limits
        self.issues.append(
            RECORDS_DECOMPRESSION_LIMIT(
                f"{codec_name(codec)} payload of {len(data)} bytes declares {size} decompressed bytes:"
                f" over its limit of {own} bytes (max_output={limits.max_output},"
                f" max_ratio={limits.max_ratio}); not inflated here (export --records and"
                " check decompress)",
                ioff,
                where,
            )
        )

    def add(self, issue: Issue, offset: int, where: str) -> None:
        """A codec's issue (built without a location), placed at ``offset`` and ``where``."""
        self.issues.append(Issue(issue.severity, issue.code, issue.message, offset, where))


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
    ctx = _Ctx(limits, bodies, budget)
    fields = _decode_set(ctx, buf, TOP if base == 0 else RecordScope(base))
    left = -1 if ctx.budget_said else ctx.budget
    issues = ctx.issues
    if issues.dropped is not None:  # type: ignore[attr-defined]  # an _Issues
        issues.close()  # type: ignore[attr-defined]  # an _Issues
    return fields, issues, left


def _decode_set(ctx: _Ctx, buf: bytes, scope: RecordScope) -> list[Field]:
    """Decode the entries of a message set / batch sequence (see :class:`RecordScope`)."""
    base, anchor, parent_where, wrapper_magic = scope.base, scope.anchor, scope.where, scope.wrapper_magic
    out: list[Field] = []
    n = len(buf)
    mv = memoryview(buf)
    pos = 0
    limit = ctx.limits.max_records if anchor is not None else n + 1
    while pos < n:
        if len(out) >= limit:
            ctx.light = _count_set(ctx, buf, mv, pos, scope, len(out))
            return out
        rem = n - pos
        at = base + pos
        ioff = at if anchor is None else anchor
        if rem < 12:
            out.append(
                _partial(
                    ctx,
                    buf,
                    pos,
                    rem,
                    None,
                    None,
                    base,
                    ioff,
                    _entry_where(parent_where, at, pos),
                    anchor is not None,
                )
            )
            break
        off, size = _OFF_SIZE.unpack_from(buf, pos)
        magic = buf[pos + 16] if rem >= 17 else None
        if magic is None:
            minimum = _LEGACY_MIN[0]
        elif magic == 2:
            minimum = _V2_MIN
        elif magic < 2:
            minimum = _LEGACY_MIN[magic]
        else:
            signed = magic - 256 if magic > 127 else magic
            ctx.issues.append(
                RECORDS_UNKNOWN_MAGIC(
                    f"unknown magic {signed} (offset {off}, size {size})",
                    ioff,
                    _entry_where(parent_where, at, pos),
                )
            )
            break
        if size < minimum:
            ctx.issues.append(
                RECORDS_BAD_LENGTH(
                    f"size {size} is below the minimum {minimum} for magic {magic}; cannot continue",
                    ioff,
                    _entry_where(parent_where, at, pos),
                )
            )
            break
        if 12 + size > rem:
            out.append(
                _partial(
                    ctx,
                    buf,
                    pos,
                    rem,
                    off,
                    size,
                    base,
                    ioff,
                    _entry_where(parent_where, at, pos),
                    anchor is not None,
                )
            )
            break
        end = pos + 12 + size
        if wrapper_magic is not None and magic != wrapper_magic:
            ctx.issues.append(
                RECORDS_INNER_MAGIC_MISMATCH(
                    f"inner entry has magic {magic}, its wrapper magic {wrapper_magic}",
                    ioff,
                    _entry_where(parent_where, at, pos),
                )
            )
        if magic == 2:
            out.append(_decode_batch(ctx, buf, mv, pos, end, scope))
        else:
            out.append(_decode_message(ctx, buf, mv, pos, end, scope))
        pos = end
    ctx.light = (0, None)
    return out


def _count_set(ctx: _Ctx, buf: bytes, mv: memoryview, pos: int, scope: RecordScope, done: int):
    """Past ``max_records`` entries of a decompressed set: frame the rest by their sizes, check
    legacy CRCs, count them; one issue says so. Returns (entries counted, last offset)."""
    n = len(buf)
    count = bad_crc = 0
    last = None
    while n - pos >= 17:
        off, size = _OFF_SIZE.unpack_from(buf, pos)
        magic = buf[pos + 16]
        if size < _LEGACY_MIN[0] or 12 + size > n - pos:
            break
        if magic < 2:
            (crc,) = _I32U.unpack_from(buf, pos + 12)
            if zlib.crc32(mv[pos + 16 : pos + 12 + size]) != crc:
                bad_crc += 1
        count += 1
        last = off
        pos += 12 + size
    crcs = f", {bad_crc} of them with a bad CRC" if bad_crc and scope.trusted else ""
    rest = f"; {n - pos} bytes after them do not frame" if pos < n else ""
    ctx.issues.append(
        RECORDS_RECORD_LIMIT(
            f"{done + count} inner messages: the first {done} are decoded, {count} more only counted"
            f"{crcs} (max_records={ctx.limits.max_records}; raise it with --max-records){rest}",
            scope.anchor,
            scope.where,
        )
    )
    if bad_crc and scope.trusted:
        ctx.issues.append(
            RECORDS_CRC_MISMATCH(
                f"{bad_crc} inner messages past the first {done} fail their CRC-32", scope.anchor, scope.where
            )
        )
    return count, last


def _entry_where(parent_where: str | None, at: int, pos: int) -> str:
    if parent_where is None:
        return f"entry at offset {at}"
    return f"entry at decompressed offset {pos} in {parent_where}"


def _partial(
    ctx: _Ctx,
    buf: bytes,
    pos: int,
    rem: int,
    off: int | None,
    size: int | None,
    base: int,
    ioff: int,
    where: str,
    inner: bool,
) -> Field:
    at = base + pos
    if off is None and rem >= 8:
        (off,) = _I64.unpack_from(buf, pos)
    magic = buf[pos + 16] if rem >= 17 else None
    kind = "batch" if magic == 2 else "message"
    children = []
    if rem >= 8:
        children.append(Field("offset" if kind == "message" else "base_offset", "int64", off, at, 8))
    if rem >= 12:
        children.append(
            Field("message_size" if kind == "message" else "batch_length", "int32", size, at + 8, 4)
        )
    if magic is not None:
        children.append(Field("magic", "int8", magic, at + 16, 1))
    total = "?" if size is None else str(12 + size)
    if inner:
        ctx.issues.append(
            RECORDS_TRUNCATED(
                f"{kind} cut after {rem} of {total} bytes inside decompressed data",
                ioff,
                where,
            )
        )
    else:
        ctx.issues.append(
            (RECORDS_PARTIAL_BATCH if kind == "batch" else RECORDS_PARTIAL_MESSAGE)(
                f"{kind} cut after {rem} of {total} bytes (normal at the end of a fetch response)",
                ioff,
                where,
            )
        )
    summary = _summary(magic, None, 0, rem, off)
    summary["partial"] = True
    if magic is not None and magic < 2 and rem >= 16:
        (summary["crc"],) = _I32U.unpack_from(buf, pos + 12)
    elif magic == 2 and rem >= 21:
        (summary["crc"],) = _I32U.unpack_from(buf, pos + 17)
    return Field("record_batch" if magic == 2 else "message", "partial", summary, at, rem, children)


# --- magic 0 / 1 -------------------------------------------------------------------------------


def _legacy_bytes(buf: bytes, p: int, end: int, name: str) -> tuple[bytes | None, int, int]:
    """(value, start of data, position after) of an int32-length-prefixed byte string."""
    if p + 4 > end:
        raise _Malformed(RECORDS_BAD_RECORD, f"{name} length cut by the end of the message")
    (ln,) = _I32.unpack_from(buf, p)
    p += 4
    if ln == -1:
        return None, p, p
    if ln < 0:
        raise _Malformed(RECORDS_BAD_RECORD, f"{name} has negative length {ln}")
    if ln > end - p:
        raise _Malformed(
            RECORDS_BAD_RECORD, f"{name} length {ln} exceeds the {end - p} bytes left in the message"
        )
    return buf[p : p + ln], p, p + ln


def _message_where(scope: RecordScope, pos: int, off: int) -> str:
    if scope.where is None:
        return f"message at offset {scope.base + pos} (offset {off})"
    return f"message at decompressed offset {pos} (offset {off}) in {scope.where}"


def _decode_message(ctx: _Ctx, buf: bytes, mv: memoryview, pos: int, end: int, scope: RecordScope) -> Field:
    base, anchor = scope.base, scope.anchor
    off, size, crc, magic, attrs = _LEGACY.unpack_from(buf, pos)
    at = base + pos
    ioff = at if anchor is None else anchor
    where = _message_where(scope, pos, off)
    computed = zlib.crc32(mv[pos + 16 : end])
    crc_ok = computed == crc
    if not crc_ok and scope.trusted:
        ctx.issues.append(
            RECORDS_CRC_MISMATCH(
                f"message CRC-32 mismatch: stored 0x{crc:08x}, computed 0x{computed:08x}",
                ioff,
                where,
            )
        )
    codec = attrs & 7
    children = [
        Field("offset", "int64", off, at, 8),
        Field("message_size", "int32", size, at + 8, 4),
        Field("crc", "uint32", crc, at + 12, 4, None, _crc_display(crc, computed)),
        Field("magic", "int8", magic, at + 16, 1),
        Field("attributes", "int8", attrs, at + 17, 1, None, _legacy_attr_display(attrs, magic)),
    ]
    p = pos + 18
    ts = None
    if magic == 1:
        (ts,) = _I64.unpack_from(buf, p)
        children.append(Field("timestamp", "int64", ts, base + p, 8, None, iso_timestamp(ts)))
        p += 8
    # the keys and order of _summary, as one literal: this runs once per legacy message
    summary = {
        "magic": magic,
        "codec": _CODEC_NAMES.get(codec) or codec_name(codec),
        "attributes": attrs,
        "timestamp_type": None if magic == 0 else "log_append_time" if attrs & 0x08 else "create_time",
        "base_offset": off,
        "last_offset": off,
        "base_timestamp": None,
        "max_timestamp": ts,
        "producer_id": None,
        "producer_epoch": None,
        "base_sequence": None,
        "partition_leader_epoch": None,
        "transactional": False,
        "control": False,
        "control_type": None,
        "crc": crc,
        "crc_ok": crc_ok,
        "bytes": 12 + size,
        "partial": False,
        "record_count": 1,
    }
    field = Field("message", "message", summary, at, 12 + size, children)
    if codec == 0 and not ctx.bodies:
        return field
    try:
        kstart = p
        key, kdata, p = _legacy_bytes(buf, p, end, "key")
        if ctx.bodies:
            children.append(
                Field(
                    "key", "bytes", key, base + kstart, p - kstart, None, None if key is None else _text(key)
                )
            )
        vstart = p
        value, vdata, p = _legacy_bytes(buf, p, end, "value")
        if ctx.bodies:
            text = None if value is None or codec else _text(value)
            children.append(Field("value", "bytes", value, base + vstart, p - vstart, None, text))
        if p != end:
            raise _Malformed(RECORDS_BAD_RECORD, f"{end - p} unused bytes after the value")
    except _Malformed as e:
        ctx.issues.append(e.kind(e.message, ioff, where))
        if codec:
            summary["record_count"] = 0
        return field
    if codec:
        _unwrap(ctx, field, value, vdata, p, scope, scope.trusted and crc_ok)
    return field


def _unwrap(
    ctx: _Ctx, field: Field, value: bytes | None, vdata: int, vend: int, scope: RecordScope, trusted: bool
) -> None:
    """Decompress a magic 0/1 wrapper's value (at ``vdata``..``vend`` in the wrapper's ``scope``)
    and decode the inner message set into ``field``.

    Inner offsets resolve as Kafka's deep iterator does: a magic 1 wrapper's offset is the
    absolute offset of its last inner message, whose relative offsets then give the others
    (a wrapper offset of 0, which producers write, means base 0); magic 0 inner offsets are
    absolute already, and a wrapper offset below its last inner offset keeps them as written.
    """
    summary = field.value
    magic = summary["magic"]
    attrs = summary["attributes"]
    children = field.children
    assert children is not None  # a message Field always has its header children
    where = _message_where(scope, field.offset - scope.base, children[0].value)
    ioff = scope.base + vdata if scope.anchor is None else scope.anchor
    summary["record_count"] = 0
    if value is None:
        ctx.issues.append(RECORDS_BAD_RECORD("compressed wrapper message has a null value", ioff, where))
        return
    if scope.depth + 1 > ctx.max_depth:
        ctx.issues.append(
            RECORDS_DECOMPRESSION_LIMIT(
                f"compressed message sets nested deeper than {ctx.max_depth}: not decompressed",
                ioff,
                where,
            )
        )
        return
    raw, issue = ctx.inflate(attrs & 7, value, ioff, where)
    if issue is not None:
        if issue.code == RECORDS_LZ4_LEGACY_CHECKSUM.code:
            if magic != 0:  # expected for magic 0, a producer bug for magic 1
                ctx.issues.append(
                    RECORDS_LZ4_LEGACY_CHECKSUM(
                        issue.message + " in a magic 1 message", ioff, where, severity=Severity.WARNING
                    )
                )
        else:
            ctx.add(issue, ioff, where)
    if raw is None:
        return
    inner = _decode_set(ctx, raw, RecordScope(0, scope.depth + 1, ioff, where, trusted, magic))
    counted, counted_last = ctx.light
    ctx.light = (0, None)
    msgs = [f for f in inner if f.type == "message"]
    wrapper_offset = children[0].value
    shift = 0
    if magic >= 1 and msgs:
        last = msgs[-1].children
        assert last is not None  # a message Field always has its header children
        last_off = counted_last if counted_last is not None else last[0].value
        shift = 0 if wrapper_offset == 0 else wrapper_offset - last_off
        if shift < 0:
            shift = 0  # below its last inner offset (Kafka rejects it): the offsets as written
    log_append = magic == 1 and attrs & 0x08
    count = 0
    for f in inner:
        s = f.value
        if f.type == "message":
            fc = f.children
            assert fc is not None  # a message Field always has its header children
            raw_off = fc[0].value
            absolute = raw_off + shift
            s["base_offset"] += shift
            s["last_offset"] += shift
            if log_append:
                s["max_timestamp"] = summary["max_timestamp"]
                s["timestamp_type"] = "log_append_time"
            if ctx.bodies:
                o = fc[0]
                fc.insert(1, Field("absolute_offset", "int64", absolute, o.offset, o.length))
        count += s["record_count"]
    summary["record_count"] = count + counted
    if inner and inner[0].value["base_offset"] is not None:
        summary["base_offset"] = inner[0].value["base_offset"]
        summary["last_offset"] = inner[-1].value["last_offset"]
        if counted_last is not None:
            summary["last_offset"] = counted_last + shift
    if ctx.bodies:
        children.append(Field("decompressed", "decompressed", raw, scope.base + vdata, vend - vdata, inner))


# --- magic 2 -----------------------------------------------------------------------------------


def _decode_batch(ctx: _Ctx, buf: bytes, mv: memoryview, pos: int, end: int, scope: RecordScope) -> Field:
    header = _V2.unpack_from(buf, pos)
    (bo, blen, ple, magic, crc, attrs, lod, bts, mts, pid, pep, bseq, count) = header
    base, anchor = scope.base, scope.anchor
    at = base + pos
    ioff = at if anchor is None else anchor
    if scope.where is None:
        where = f"batch at offset {at} (base offset {bo})"
    else:
        where = f"batch at decompressed offset {pos} (base offset {bo}) in {scope.where}"
    computed = crc32c(mv[pos + 21 : end])
    crc_ok = computed == crc
    if not crc_ok and scope.trusted and crc == 0 and attrs & 0x20:
        # librdkafka's mock cluster writes its transaction markers without computing the CRC
        ctx.issues.append(
            QUIRK_MOCK_ZERO_CRC(
                f"control batch with CRC 0 (computed 0x{computed:08x}): the librdkafka mock cluster "
                "writes transaction markers without a CRC (rdkafka_mock.c)",
                ioff,
                where,
            )
        )
    elif not crc_ok and scope.trusted:
        ctx.issues.append(
            RECORDS_CRC_MISMATCH(
                f"batch CRC-32C mismatch: stored 0x{crc:08x}, computed 0x{computed:08x}",
                ioff,
                where,
            )
        )
    codec = attrs & 7
    control = bool(attrs & 0x20)
    # _summary's keys in its order, filled at once (one literal, not 12 stores into its dict)
    summary = {
        "magic": 2,
        "codec": codec_name(codec),
        "attributes": attrs,
        "timestamp_type": "log_append_time" if attrs & 0x08 else "create_time",
        "base_offset": bo,
        "last_offset": bo + lod,
        "base_timestamp": bts,
        "max_timestamp": mts,
        "producer_id": pid,
        "producer_epoch": pep,
        "base_sequence": bseq,
        "partition_leader_epoch": ple,
        "transactional": bool(attrs & 0x10),
        "control": control,
        "control_type": None,
        "crc": crc,
        "crc_ok": crc_ok,
        "bytes": 12 + blen,
        "partial": False,
        "record_count": count if count > 0 else 0,
    }
    field = BatchField(summary, at, 12 + blen, header, computed)
    children = field.tail
    if control and count != 1:
        # said from the header, so also when the batch is not inflated (no --records)
        ctx.issues.append(
            RECORDS_BAD_CONTROL_COUNT(
                f"control batch declares {count} records ({codec_name(codec)}): a control batch "
                "holds exactly one control record",
                ioff,
                where,
            )
        )
    if not ctx.bodies and (not control or codec):
        # without bodies only an uncompressed control batch's first record is read (its type);
        # brokers never compress control batches, a compressed one is not inflated for a count.
        # A compressed batch is judged by the size its codec declares (not inflated)
        if codec:
            rstart = pos + _V2_HEADER
            ctx.judge(codec, mv[rstart:end], base + rstart if anchor is None else anchor, where)
        return field
    rstart = pos + _V2_HEADER
    batch = BatchInfo(bo, bts, mts, attrs, count, where, ioff)
    if count < 0:
        ctx.issues.append(RECORDS_RECORD_COUNT_MISMATCH(f"negative record count {count}", ioff, where))
    if codec == 0:
        records = _decode_v2_records(ctx, buf, rstart, end, base, batch)
        children.append(records)
    else:
        cioff = base + rstart if anchor is None else anchor
        raw, issue = ctx.inflate(codec, mv[rstart:end], cioff, where)
        if issue is not None:
            if issue.code == RECORDS_LZ4_LEGACY_CHECKSUM.code:
                ctx.issues.append(
                    RECORDS_LZ4_LEGACY_CHECKSUM(
                        issue.message + " in a magic 2 batch", cioff, where, severity=Severity.WARNING
                    )
                )
            else:
                ctx.add(issue, cioff, where)
        if raw is None:
            return field
        batch = BatchInfo(bo, bts, mts, attrs, count, where, cioff)
        records = _decode_v2_records(ctx, raw, 0, len(raw), 0, batch)
        children.append(Field("decompressed", "decompressed", raw, base + rstart, end - rstart, [records]))
    if control and records.rows:
        kd, ke = records.rows[0][8:10]
        summary["control_type"] = None if kd is None or kd < 0 else control_type(records.buf[kd:ke])
    return field


class BatchField(LazyField):
    """A v2 ``record_batch`` entry: its header Fields (13, with their displays: CRC, attributes,
    ISO timestamps) are built on first use of ``children``, from the unpacked ``header`` (the
    61-byte header's values in order) and the ``computed`` CRC-32C; the statistics, the topic
    labels and the checks read the summary (``value``) and never ask. ``tail`` holds what follows
    the header (the ``records`` RecordsField or the ``decompressed`` Field), as ``children``
    shows it after the header Fields."""

    __slots__ = ("header", "computed", "tail")

    def __init__(self, summary: dict, offset: int, length: int, header: tuple, computed: int) -> None:
        self.name = "record_batch"
        self.type = "record_batch"
        self.value = summary
        self.offset = offset
        self.length = length
        self.display = None
        self.children = None
        self.header = header
        self.computed = computed
        self.tail: list[Field] = []

    def build_children(self) -> list[Field]:
        return _batch_header_fields(self.offset, self.header, self.computed) + self.tail


def _batch_header_fields(at: int, header: tuple, computed: int) -> list[Field]:
    (bo, blen, ple, magic, crc, attrs, lod, bts, mts, pid, pep, bseq, count) = header
    return [
        Field("base_offset", "int64", bo, at, 8),
        Field("batch_length", "int32", blen, at + 8, 4),
        Field("partition_leader_epoch", "int32", ple, at + 12, 4),
        Field("magic", "int8", magic, at + 16, 1),
        Field("crc", "uint32", crc, at + 17, 4, None, _crc_display(crc, computed)),
        Field("attributes", "int16", attrs, at + 21, 2, None, _v2_attr_display(attrs)),
        Field("last_offset_delta", "int32", lod, at + 23, 4, None, f"last offset {bo + lod}"),
        Field("base_timestamp", "int64", bts, at + 27, 8, None, iso_timestamp(bts)),
        Field("max_timestamp", "int64", mts, at + 35, 8, None, iso_timestamp(mts)),
        Field("producer_id", "int64", pid, at + 43, 8),
        Field("producer_epoch", "int16", pep, at + 51, 2),
        Field("base_sequence", "int32", bseq, at + 53, 4),
        Field("record_count", "int32", count, at + 57, 4),
    ]


class RecordsField(LazyField):
    """The ``records`` array of a v2 batch: parsed once into rows, Field children built on first use.

    The scan in :func:`_decode_v2_records` is the one parser: it checks every length and varint,
    reports every issue and keeps each record as a row of values and positions in ``buf``, a plain
    tuple laid out as :class:`RecordRow` (:meth:`row` gives it typed). ``children`` turns the rows
    into ``record`` Fields with byte spans the first time someone asks (the field tree, the TUI);
    :func:`entry_records` and the export read the rows directly. ``batch`` is the
    :class:`BatchInfo` of the batch.
    """

    __slots__ = ("rows", "buf", "rbase", "batch")

    def __init__(self, offset: int, length: int, rows: list, buf: bytes, base: int, batch: BatchInfo) -> None:
        self.name = "records"
        self.type = "array"
        self.value = len(rows)
        self.offset = offset
        self.length = length
        self.display = None
        self.children = None
        self.rows = rows
        self.buf = buf
        self.rbase = base
        self.batch = batch

    def row(self, i: int) -> RecordRow:
        """Row ``i`` as a :class:`RecordRow` (the same tuple values, with names)."""
        return tuple.__new__(RecordRow, self.rows[i])

    def build_children(self) -> list[Field]:
        return [_record_field(self, row) for row in self.rows]


def _record_ts(batch: BatchInfo, tsd: int) -> int | None:
    """A v2 record's timestamp, as :func:`v2_records` gives it."""
    if batch.attributes & 0x08:
        return None if batch.max_timestamp == -1 else batch.max_timestamp
    return None if batch.base_timestamp == -1 else batch.base_timestamp + tsd


def record_timestamp_text(batch: BatchInfo, tsd: int) -> str | None:
    """What a record's timestamp delta means: its ISO time (create time) or the batch's."""
    bo, bts, mts, attrs = batch[:4]
    if attrs & 0x08:
        t = iso_timestamp(mts)
        return None if t is None else t + " (log append time)"
    return None if bts == -1 else iso_timestamp(bts + tsd)


def _decode_v2_records(  # noqa: C901 - hot path: the one record scan, varints inlined per field
    ctx: _Ctx, buf: bytes, start: int, end: int, base: int, batch: BatchInfo
) -> RecordsField:
    bo, bts, mts, attrs, count, where, ioff = batch
    control = attrs & 0x20
    # rows are plain tuples laid out as RecordRow: building RecordRow(...) (or tuple.__new__ of
    # it) per record measured 5% slower on this loop; RecordsField.row(i) gives the typed view
    rows: list = []
    append = rows.append
    varint = _varint
    p = start
    framed = True
    # without bodies only a control batch gets here, for its first record's type
    first_only = not ctx.bodies
    want = min(count, 1) if first_only else count
    limit = ctx.limits.max_records
    bad_cap = ctx.limits.max_issues
    bad = 0
    stop_at = min(want, limit)
    while len(rows) < stop_at and p < end and bad <= bad_cap:
        rstart = p
        b = buf[p]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            p += 1
        else:
            try:
                length, p = varint(buf, p, end)
            except _Malformed as e:
                ctx.issues.append(
                    e.kind(f"record length: {e.message}", ioff, f"record {len(rows)} of {where}")
                )
                framed = False
                break
        if length < 0 or length > end - p:
            ctx.issues.append(
                RECORDS_BAD_RECORD(
                    f"record length {length} does not fit the {end - p} bytes left",
                    ioff,
                    f"record {len(rows)} of {where}",
                )
            )
            framed = False
            break
        body = p
        rend = p + length
        a = tsd = tse = od = ode = kd = ke = vd = ve = hc = hce = None
        hdrs: list | None = None
        try:
            if p >= rend:
                raise _Malformed(RECORDS_BAD_RECORD, "record attributes cut by the end of the record")
            a = buf[p]
            if a > 127:
                a -= 256
            p += 1
            if p < rend and (b := buf[p]) < 0x80:
                tsd = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                tsd, p = varint(buf, p, rend, 10)
            tse = p
            if p < rend and (b := buf[p]) < 0x80:
                od = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                od, p = varint(buf, p, rend)
            ode = p
            kd, ke = _bytes_span(buf, p, rend, "key")
            vd, ve = _bytes_span(buf, ke, rend, "value")
            p = ve
            if control:
                _check_control(ctx, buf, kd, ke, vd, ve, where, ioff, len(rows))
            # headers
            if p < rend and (b := buf[p]) < 0x80:
                hc = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                hc, p = varint(buf, p, rend)
            if hc < 0:
                raise _Malformed(RECORDS_BAD_RECORD, f"negative header count {hc}")
            if hc > (rend - p) // 2:
                raise _Malformed(
                    RECORDS_BAD_RECORD, f"header count {hc} does not fit the {rend - p} bytes left"
                )
            hce = p
            hdrs = []
            for _ in range(hc):
                hs = p
                hdrs.append((hs, None, None, None, None))
                if p < rend and (b := buf[p]) < 0x80:
                    klen = (b >> 1) ^ -(b & 1)
                    p2 = p + 1
                else:
                    klen, p2 = varint(buf, p, rend)
                if klen < 0 or klen > rend - p2:
                    raise _Malformed(RECORDS_BAD_RECORD, f"header key length {klen} is negative or too long")
                hkd, hke = p2, p2 + klen
                try:
                    buf[hkd:hke].decode("utf-8")
                except UnicodeDecodeError:
                    ctx.issues.append(
                        RECORDS_BAD_HEADER_KEY(
                            "header key is not valid UTF-8",
                            ioff,
                            f"record {len(rows)} of {where}",
                        )
                    )
                hdrs[-1] = (hs, hkd, hke, None, None)
                hvd, p = _bytes_span(buf, hke, rend, "value")
                hdrs[-1] = (hs, hkd, hke, hvd, p)
            if p != rend:
                raise _Malformed(RECORDS_BAD_RECORD, f"{rend - p} unused bytes at the end of the record")
            append((rstart, body, rend, a, tsd, tse, od, ode, kd, ke, vd, ve, hc, hce, hdrs, True))
        except _Malformed as e:
            ctx.issues.append(e.kind(e.message, ioff, f"record {len(rows)} of {where}"))
            append((rstart, body, rend, a, tsd, tse, od, ode, kd, ke, vd, ve, hc, hce, hdrs, False))
            bad += 1
        p = rend
    if first_only:
        return RecordsField(base + start, p - start, rows, buf, base, batch)
    counted = 0
    if framed and len(rows) < count and p < end:  # stopped by max_records or malformed records
        decoded = len(rows)
        while decoded + counted < count and p < end:
            try:
                length, q = varint(buf, p, end)
            except _Malformed:
                break
            if length < 0 or length > end - q:
                break
            p = q + length
            counted += 1
        why = (
            f"after {bad} malformed records the rest are only framed by their lengths"
            if bad > bad_cap
            else f"max_records={limit}; raise it with --max-records"
        )
        ctx.issues.append(
            RECORDS_RECORD_LIMIT(
                f"the first {decoded} records are decoded, {counted} more only counted ({why})",
                ioff,
                where,
            )
        )
    if framed and count >= 0 and len(rows) + counted < count:
        ctx.issues.append(
            RECORDS_RECORD_COUNT_MISMATCH(
                f"batch declares {count} records, its data holds {len(rows) + counted}",
                ioff,
                where,
            )
        )
    elif framed and p < end:
        ctx.issues.append(
            RECORDS_TRAILING_BYTES(f"{end - p} bytes after the last of {count} records", ioff, where)
        )
    return RecordsField(base + start, p - start, rows, buf, base, batch)


def _bytes_span(buf: bytes, p: int, end: int, name: str) -> tuple[int, int]:
    """(data start or -1 for null, end) of a varint-length-prefixed byte string at ``p``."""
    if p < end and (b := buf[p]) < 0x80:
        ln = (b >> 1) ^ -(b & 1)
        p += 1
    elif p + 1 < end and (c := buf[p + 1]) < 0x80:  # two bytes: lengths up to 8191
        ln = (b & 0x7F) | c << 7
        ln = (ln >> 1) ^ -(ln & 1)
        p += 2
    else:
        ln, p = _varint(buf, p, end)
    if ln == -1:
        return -1, p
    if ln < 0:
        raise _Malformed(RECORDS_BAD_RECORD, f"{name} has negative length {ln}")
    if ln > end - p:
        raise _Malformed(
            RECORDS_BAD_RECORD, f"{name} length {ln} exceeds the {end - p} bytes left in the record"
        )
    return p, p + ln


def _check_control(ctx: _Ctx, buf: bytes, kd, ke, vd, ve, where: str, ioff: int, index: int) -> None:
    """The issues of a control record's key and value (their Fields come with the records view)."""
    if kd < 0 or ke - kd < 4:
        ctx.issues.append(
            RECORDS_BAD_CONTROL_RECORD(
                "control record key shorter than 4 bytes",
                ioff,
                f"record {index} of {where}",
            )
        )
        return
    (ctype,) = _I16.unpack_from(buf, kd + 2)
    if ctype in (0, 1) and (vd < 0 or ve - vd < 6):
        name = CONTROL_TYPES[ctype]
        ctx.issues.append(
            RECORDS_BAD_CONTROL_RECORD(
                f"{name} marker value shorter than 6 bytes",
                ioff,
                f"record {index} of {where}",
            )
        )


# --- the Field view of a row ---------------------------------------------------------------------


def _record_field(rf: RecordsField, row: RecordRow) -> Field:
    buf, base = rf.buf, rf.rbase
    bo = rf.batch[0]
    control = rf.batch[3] & 0x20
    rstart, body, rend, a, tsd, tse, od, ode, kd, ke, vd, ve, hc, hce, hdrs, _ = row
    children = [Field("length", "varint", rend - body, base + rstart, body - rstart)]
    field = Field("record", "record", None, base + rstart, rend - rstart, children)
    if a is None:
        return field
    children.append(Field("attributes", "int8", a, base + body, 1))
    if tse is None:
        return field
    assert tsd is not None  # the parser sets a part's value with its end (RecordRow)
    children.append(
        Field(
            "timestamp_delta",
            "varlong",
            tsd,
            base + body + 1,
            tse - body - 1,
            None,
            record_timestamp_text(rf.batch, tsd),
        )
    )
    if ode is None:
        return field
    assert od is not None  # the parser sets a part's value with its end (RecordRow)
    field.value = bo + od
    odisp = f"offset {bo + od}"
    ts = _record_ts(rf.batch, tsd)
    iso = None if ts is None else iso_timestamp(ts)
    field.display = odisp if iso is None else f"{odisp}, {iso}"
    children.append(Field("offset_delta", "varint", od, base + tse, ode - tse, None, odisp))
    if ke is None:
        return field
    assert kd is not None  # the parser sets a part's value with its end (RecordRow)
    key = _bytes_view(buf, base, "key", ode, kd, ke)
    children.append(key)
    if ve is None:
        return field
    assert vd is not None  # the parser sets a part's value with its end (RecordRow)
    value = _bytes_view(buf, base, "value", ke, vd, ve)
    children.append(value)
    if control:
        _control_view(key, value)
        if key.type == "control_key":
            field.display += f", {key.display}"
    if hce is None:
        return field
    headers: list[Field] = []
    hend = rend  # the span covers the rest of the record unless every header parsed
    if hdrs is not None and len(hdrs) == hc and (not hdrs or hdrs[-1][3] is not None):
        hend = hdrs[-1][4] if hdrs else hce
    children.append(Field("headers", "array", hc, base + ve, hend - ve, headers))
    for hs, hkd, hke, hvd, hve in hdrs or ():
        hkids: list[Field] = []
        h = Field("header", "struct", None, base + hs, rend - hs, hkids)
        headers.append(h)
        if hkd is None:
            continue
        kb = buf[hkd:hke]
        ktext = kb.decode("utf-8", "replace")
        hkids.append(Field("key", "string", ktext, base + hs, hke - hs))
        if hvd is None:
            continue
        hkids.append(_bytes_view(buf, base, "value", hke, hvd, hve))
        h.length = hve - hs
        h.display = ktext
    return field


def _bytes_view(buf: bytes, base: int, name: str, s: int, d: int, e: int) -> Field:
    if d < 0:
        return Field(name, "bytes", None, base + s, e - s)
    v = buf[d:e]
    return Field(name, "bytes", v, base + s, e - s, None, _text(v))


def _control_view(key: Field, value: Field) -> None:
    """Control record key (version, type) and ABORT/COMMIT value (version, coordinator epoch)."""
    kb: Any = key.value
    if kb is None or len(kb) < 4:
        return
    version, ctype = _CTRL_KEY.unpack_from(kb)
    kd = key.offset + key.length - len(kb)
    name = CONTROL_TYPES.get(ctype, f"unknown({ctype})")
    key.type = "control_key"
    key.display = name
    key.children = [
        Field("version", "int16", version, kd, 2),
        Field("type", "int16", ctype, kd + 2, 2, None, name),
    ]
    vb: Any = value.value
    if ctype in (0, 1):
        if vb is None or len(vb) < 6:
            return
        vversion, epoch = _CTRL_VALUE.unpack_from(vb)
        vd = value.offset + value.length - len(vb)
        value.type = "control_value"
        value.display = f"{name} marker, coordinator epoch {epoch}"
        value.children = [
            Field("version", "int16", vversion, vd, 2),
            Field("coordinator_epoch", "int32", epoch, vd + 2, 4),
        ]


# --- the one record shape ------------------------------------------------------------------------


def _ms(t: int | None) -> int | None:
    return None if t is None or t == -1 else t


def control_type(key: bytes | None) -> str | None:
    """The type of a control record from its key (version int16, type int16); None when short."""
    if key is None or len(key) < 4:
        return None
    (ctype,) = _I16.unpack_from(key, 2)
    return CONTROL_TYPES.get(ctype, f"unknown({ctype})")


def v2_records(rf: RecordsField) -> Iterator[Record]:
    """The records of a v2 batch's rows: absolute offsets (base offset + delta), timestamps
    (the batch's max timestamp for every record when it uses LogAppendTime, else base
    timestamp + delta; None for -1). Malformed records (their issue names them) are left out."""
    bo, bts, mts, attrs = rf.batch[:4]
    control = bool(attrs & 0x20)
    fixed_ts = _ms(mts) if attrs & 0x08 else None
    buf = rf.buf
    for _rs, _b, _re, _a, tsd, _te, od, _oe, kd, ke, vd, ve, _hc, _he, hdrs, ok in rf.rows:
        if not ok:
            continue
        key = None if kd < 0 else buf[kd:ke]
        yield Record(
            bo + od,
            fixed_ts if attrs & 0x08 else (None if bts == -1 else bts + tsd),
            key,
            None if vd < 0 else buf[vd:ve],
            tuple(
                (buf[hkd:hke].decode("utf-8", "replace"), None if hvd < 0 else buf[hvd:hve])
                for _hs, hkd, hke, hvd, hve in hdrs
            ),
            control,
            control_type(key) if control else None,
        )


def batch_records_field(entry: Field) -> RecordsField | None:
    """The rows of a v2 batch Field (directly, or under its ``decompressed`` child)."""
    for c in entry.tail if type(entry) is BatchField else entry.children or ():
        if type(c) is RecordsField:
            return c
        if c.type == "decompressed":
            for x in c.children or ():
                if type(x) is RecordsField:
                    return x
    return None


def entry_records(entry: Field) -> Iterator[Record]:
    """The records of one entry of a decoded records field, in the one shape for every magic.

    * magic 2 batch: :func:`v2_records`.
    * magic 0/1 message: one record; ``offset`` is the message's offset (for the inner messages
      of a compressed wrapper the absolute offset resolved as Kafka does, see ``_unwrap``),
      ``timestamp`` its timestamp (magic 1; the wrapper's when the wrapper uses LogAppendTime;
      None for magic 0), ``headers`` ().
    * compressed wrapper: the records of its inner messages, nested wrappers flattened.

    Partial entries, wrappers that could not be decompressed and malformed records (each has its
    issue) yield nothing; so does everything decoded without record bodies except control batches.
    """
    t = entry.type
    if t == "record_batch":
        rf = batch_records_field(entry)
        if rf is not None:
            yield from v2_records(rf)
        return
    if t != "message":
        return
    key = value = None
    has_key = has_value = False
    for c in entry.children or ():
        n = c.name
        if n == "decompressed":
            for inner in c.children or ():
                yield from entry_records(inner)
            return
        if n == "key":
            key, has_key = c.value, True
        elif n == "value":
            value, has_value = c.value, True
    s = entry.value
    if has_key and has_value and not s["attributes"] & 7:
        yield Record(s["base_offset"], _ms(s["max_timestamp"]), key, value, (), False, None)
