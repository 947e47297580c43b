"""A records field as a message set: the entry loop (each entry framed by its offset and size,
its format told by its magic byte, an entry cut short kept as a ``partial`` Field, the entries
past ``max_records`` of decompressed data only counted) and the magic 0/1 messages, whose
compressed wrappers nest a message set (decoded by the same loop). Magic 2 batches are
:mod:`analyzer.dissect.records_batch`'s. See :mod:`analyzer.dissect.records`.
"""

from __future__ import annotations

import struct
import zlib

from analyzer.dissect.codecs import codec_name
from analyzer.dissect.records_batch import decode_batch
from analyzer.dissect.records_common import (
    Malformed,
    RecordScope,
    crc_display,
    entry_summary,
    iso_timestamp,
    utf8_text,
)
from analyzer.dissect.records_context import DecodeContext
from analyzer.issues import (
    RECORDS_BAD_LENGTH,
    RECORDS_BAD_RECORD,
    RECORDS_CRC_MISMATCH,
    RECORDS_DECOMPRESSION_LIMIT,
    RECORDS_INNER_MAGIC_MISMATCH,
    RECORDS_LZ4_LEGACY_CHECKSUM,
    RECORDS_PARTIAL_BATCH,
    RECORDS_PARTIAL_MESSAGE,
    RECORDS_RECORD_LIMIT,
    RECORDS_TRUNCATED,
    RECORDS_UNKNOWN_MAGIC,
)
from analyzer.model import Field, Severity

_LEGACY = struct.Struct(">qiIbb")  # offset, message_size, crc, magic, attributes
_OFF_SIZE = struct.Struct(">qi")
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_I32U = struct.Struct(">I")

_LEGACY_MIN = (14, 22)  # smallest message_size: crc, magic, attributes, [timestamp], key len, value len
_V2_MIN = 49  # smallest batch_length: the header after the length field
_CODEC_NAMES = {c: codec_name(c) for c in range(8)}

_ATTR_DISPLAY: dict[tuple[int, int], str] = {}


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


def decode_set(ctx: DecodeContext, buf: bytes, scope: RecordScope) -> list[Field]:
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
            out.append(decode_batch(ctx, buf, mv, pos, end, scope))
        else:
            out.append(_decode_message(ctx, buf, mv, pos, end, scope))
        pos = end
    ctx.light = (0, None)
    return out


def _count_set(ctx: DecodeContext, buf: bytes, mv: memoryview, pos: int, scope: RecordScope, done: int):
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
    ctx: DecodeContext,
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
    summary = entry_summary(magic, None, 0, rem, off)
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
        raise Malformed(RECORDS_BAD_RECORD, f"{name} length cut by the end of the message")
    (ln,) = _I32.unpack_from(buf, p)
    p += 4
    if ln == -1:
        return None, p, p
    if ln < 0:
        raise Malformed(RECORDS_BAD_RECORD, f"{name} has negative length {ln}")
    if ln > end - p:
        raise Malformed(
            RECORDS_BAD_RECORD, f"{name} length {ln} exceeds the {end - p} bytes left in the message"
        )
    return buf[p : p + ln], p, p + ln


def _message_where(scope: RecordScope, pos: int, off: int) -> str:
    if scope.where is None:
        return f"message at offset {scope.base + pos} (offset {off})"
    return f"message at decompressed offset {pos} (offset {off}) in {scope.where}"


def _decode_message(
    ctx: DecodeContext, buf: bytes, mv: memoryview, pos: int, end: int, scope: RecordScope
) -> Field:
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
        Field("crc", "uint32", crc, at + 12, 4, None, crc_display(crc, computed)),
        Field("magic", "int8", magic, at + 16, 1),
        Field("attributes", "int8", attrs, at + 17, 1, None, _legacy_attr_display(attrs, magic)),
    ]
    p = pos + 18
    ts = None
    if magic == 1:
        (ts,) = _I64.unpack_from(buf, p)
        children.append(Field("timestamp", "int64", ts, base + p, 8, None, iso_timestamp(ts)))
        p += 8
    # the keys and order of entry_summary, as one literal: this runs once per legacy message
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
                    "key",
                    "bytes",
                    key,
                    base + kstart,
                    p - kstart,
                    None,
                    None if key is None else utf8_text(key),
                )
            )
        vstart = p
        value, vdata, p = _legacy_bytes(buf, p, end, "value")
        if ctx.bodies:
            text = None if value is None or codec else utf8_text(value)
            children.append(Field("value", "bytes", value, base + vstart, p - vstart, None, text))
        if p != end:
            raise Malformed(RECORDS_BAD_RECORD, f"{end - p} unused bytes after the value")
    except Malformed as e:
        ctx.issues.append(e.kind(e.message, ioff, where))
        if codec:
            summary["record_count"] = 0
        return field
    if codec:
        _unwrap(ctx, field, value, vdata, p, scope, scope.trusted and crc_ok)
    return field


def _unwrap(
    ctx: DecodeContext,
    field: Field,
    value: bytes | None,
    vdata: int,
    vend: int,
    scope: RecordScope,
    trusted: bool,
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
    inner = decode_set(ctx, raw, RecordScope(0, scope.depth + 1, ioff, where, trusted, magic))
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
