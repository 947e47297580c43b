"""The small pieces the records decoder's modules share: the shapes (:class:`RecordScope`,
:class:`BatchInfo`, :class:`RecordRow`, :class:`Record`), an entry's summary dict
(:func:`entry_summary`, :data:`BATCH_KEYS`), the varint reader and its :class:`Malformed`,
control record types and timestamps and CRCs as text. See :mod:`analyzer.dissect.records`.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from analyzer.issues import RECORDS_BAD_VARINT, IssueKind

_I16 = struct.Struct(">h")

CONTROL_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}

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
        from datetime import UTC, datetime, timedelta  # (a second not seen yet: datetime loads then)

        epoch = datetime(1970, 1, 1, tzinfo=UTC)
        head = _SECONDS[sec] = (epoch + timedelta(seconds=sec)).isoformat()[:-6]
    return f"{head}.{milli:03d}Z"


class Malformed(Exception):  # noqa: N818 - control flow of the records decoders, never escapes them
    """A record or message body does not parse; caught right where the record is framed."""

    def __init__(self, kind: IssueKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind  # the issue it becomes
        self.message = message


def varint(buf: bytes, p: int, end: int, size: int = 5) -> tuple[int, int]:
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
            raise Malformed(RECORDS_BAD_VARINT, f"{kind} longer than {size} bytes")
        b = buf[p]
        p += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            result &= (1 << (32 if size == 5 else 64)) - 1
            return (result >> 1) ^ -(result & 1), p
        shift += 7
    raise Malformed(RECORDS_BAD_VARINT, f"{kind} cut by the end of the data")


def utf8_text(b: bytes) -> str | None:
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return None


def crc_display(stored: int, computed: int) -> str:
    if stored == computed:
        return f"0x{stored:08x} (ok)"
    return f"0x{stored:08x} (mismatch: computed 0x{computed:08x})"


def entry_summary(
    magic: int | None, codec: str | None, records: int, size: int, base_offset: int | None
) -> dict:
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


BATCH_KEYS = tuple(k for k in entry_summary(None, None, 0, 0, None) if k != "record_count")


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


def control_type(key: bytes | None) -> str | None:
    """The type of a control record from its key (version int16, type int16); None when short."""
    if key is None or len(key) < 4:
        return None
    (ctype,) = _I16.unpack_from(key, 2)
    return CONTROL_TYPES.get(ctype, f"unknown({ctype})")
