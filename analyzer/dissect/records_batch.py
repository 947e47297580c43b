"""Magic 2 record batches: the header (CRC-32C, summary), decompression, and the one scan of
the records (every length and varint checked, every issue reported, each record kept as a row
of positions: :class:`~analyzer.dissect.records_common.RecordRow`) into a
:class:`~analyzer.dissect.records_view.RecordsField`. See :mod:`analyzer.dissect.records`.
"""

from __future__ import annotations

import re
import struct

from analyzer.dissect.codecs import codec_name, declared_size
from analyzer.dissect.crc import crc32c
from analyzer.dissect.records_common import (
    CONTROL_TYPES,
    BatchInfo,
    Malformed,
    RecordScope,
    control_type,
    varint,
)
from analyzer.dissect.records_context import DecodeContext
from analyzer.dissect.records_view import BatchField, RecordsField
from analyzer.issues import (
    QUIRK_MOCK_ZERO_CRC,
    RECORDS_BAD_CONTROL_COUNT,
    RECORDS_BAD_CONTROL_RECORD,
    RECORDS_BAD_HEADER_KEY,
    RECORDS_BAD_RECORD,
    RECORDS_CRC_MISMATCH,
    RECORDS_LZ4_LEGACY_CHECKSUM,
    RECORDS_RECORD_COUNT_MISMATCH,
    RECORDS_RECORD_LIMIT,
    RECORDS_TRAILING_BYTES,
)
from analyzer.model import Field, Severity

_V2 = struct.Struct(">qiibIhiqqqhii")
_I16 = struct.Struct(">h")
_V2_HEADER = 61


def decode_batch(
    ctx: DecodeContext, buf: bytes, mv: memoryview, pos: int, end: int, scope: RecordScope
) -> Field:
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
    # entry_summary's keys in its order, filled at once (one literal, not 12 stores into its dict)
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
            size = ctx.judge(codec, mv[rstart:end], base + rstart if anchor is None else anchor, where)
            if size is not None:
                field.inflated = size
                field.declares_size = True
            else:  # inflated only if someone asks (the producers' compression ratio)
                field.blob = (codec, buf, rstart, end, ctx.limits)
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
        field.inflated = len(raw)
        field.declares_size = declared_size(codec, mv[rstart:end]) is not None
        batch = BatchInfo(bo, bts, mts, attrs, count, where, cioff)
        records = _decode_v2_records(ctx, raw, 0, len(raw), 0, batch)
        children.append(Field("decompressed", "decompressed", raw, base + rstart, end - rstart, [records]))
    if control and records.rows:
        kd, ke = records.rows[0][8:10]
        summary["control_type"] = None if kd is None or kd < 0 else control_type(records.buf[kd:ke])
    return field


def _decode_v2_records(  # noqa: C901 - hot path: the one record scan, varints inlined per field
    ctx: DecodeContext, buf: bytes, start: int, end: int, base: int, batch: BatchInfo
) -> RecordsField:
    bo, bts, mts, attrs, count, where, ioff = batch
    control = attrs & 0x20
    # rows are plain tuples laid out as RecordRow: building RecordRow(...) (or tuple.__new__ of
    # it) per record measured 5% slower on this loop; RecordsField.row(i) gives the typed view
    rows: list = []
    append = rows.append
    read_varint = varint  # a local: called per record
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
                length, p = read_varint(buf, p, end)
            except Malformed as e:
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
                raise Malformed(RECORDS_BAD_RECORD, "record attributes cut by the end of the record")
            a = buf[p]
            if a > 127:
                a -= 256
            p += 1
            if p < rend and (b := buf[p]) < 0x80:
                tsd = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                tsd, p = read_varint(buf, p, rend, 10)
            tse = p
            if p < rend and (b := buf[p]) < 0x80:
                od = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                od, p = read_varint(buf, p, rend)
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
                hc, p = read_varint(buf, p, rend)
            if hc < 0:
                raise Malformed(RECORDS_BAD_RECORD, f"negative header count {hc}")
            if hc > (rend - p) // 2:
                raise Malformed(
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
                    klen, p2 = read_varint(buf, p, rend)
                if klen < 0 or klen > rend - p2:
                    raise Malformed(RECORDS_BAD_RECORD, f"header key length {klen} is negative or too long")
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
                raise Malformed(RECORDS_BAD_RECORD, f"{rend - p} unused bytes at the end of the record")
            append((rstart, body, rend, a, tsd, tse, od, ode, kd, ke, vd, ve, hc, hce, hdrs, True))
        except Malformed as e:
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
            b = buf[p]
            if b == 0:  # empty records (a bomb of zeros): the whole run of them at once
                run = _ZEROS.match(buf, p, end)
                k = min(run.end() - p, count - decoded - counted)  # type: ignore[union-attr]  # b == 0: a run of at least one
                p += k
                counted += k
                continue
            if b < 0x80:
                length, q = (b >> 1) ^ -(b & 1), p + 1
            else:
                try:
                    length, q = read_varint(buf, p, end)
                except Malformed:
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


# a run of zero bytes past max_records: each one an empty record (length 0), counted at once
# (1 MiB of zeros was a million varint reads: 2 s a batch)
_ZEROS = re.compile(b"\x00+")


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
        ln, p = varint(buf, p, end)
    if ln == -1:
        return -1, p
    if ln < 0:
        raise Malformed(RECORDS_BAD_RECORD, f"{name} has negative length {ln}")
    if ln > end - p:
        raise Malformed(
            RECORDS_BAD_RECORD, f"{name} length {ln} exceeds the {end - p} bytes left in the record"
        )
    return p, p + ln


def _check_control(ctx: DecodeContext, buf: bytes, kd, ke, vd, ve, where: str, ioff: int, index: int) -> None:
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
