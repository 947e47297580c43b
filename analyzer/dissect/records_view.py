"""The views of decoded records: the lazy Fields of a v2 batch (:class:`BatchField`: its header
Fields; :class:`RecordsField`: its rows as ``record`` Fields) built on first use, and
:class:`~analyzer.dissect.records_common.Record`, the one record shape of every front end
(:func:`entry_records`, :func:`v2_records`). See :mod:`analyzer.dissect.records`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from analyzer.dissect.codecs import codec_name, inflated_size
from analyzer.dissect.records_common import (
    CONTROL_TYPES,
    BatchInfo,
    Record,
    RecordRow,
    control_type,
    crc_display,
    iso_timestamp,
    utf8_text,
)
from analyzer.model import Field, LazyField

# a compressed batch whose codec declares no size (librdkafka's lz4 and zstd) is inflated for
# the producers' compression ratio when its CRC is a multiple of this (one in four: the same
# batches however the work is split); a declared size is always read
INFLATE_ONE_IN = 4

_CTRL_KEY = struct.Struct(">hh")
_CTRL_VALUE = struct.Struct(">hi")

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


class BatchField(LazyField):
    """A v2 ``record_batch`` entry: its header Fields (13, with their displays: CRC, attributes,
    ISO timestamps) are built on first use of ``children``, from the unpacked ``header`` (the
    61-byte header's values in order) and the ``computed`` CRC-32C; the statistics, the topic
    labels and the checks read the summary (``value``) and never ask. ``tail`` holds what follows
    the header (the ``records`` RecordsField or the ``decompressed`` Field), as ``children``
    shows it after the header Fields.

    A compressed batch's records' size once decompressed (:meth:`uncompressed_size`) is known
    when they were inflated or their codec declares it (``inflated``); otherwise ``blob`` keeps
    where the compressed bytes are, to inflate them the first time someone asks.
    ``declares_size``: the codec's framing declares the size (no inflating needed to know it)."""

    __slots__ = ("header", "computed", "tail", "inflated", "blob", "declares_size")

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
        self.inflated: int | None = None  # -1: could not be inflated
        self.blob: tuple | None = None  # (codec, buffer, start, end, limits)
        self.declares_size = False

    def uncompressed_size(self) -> int | None:
        """The size of the batch's records once decompressed (compressed batches; None for an
        uncompressed one, or when the compressed bytes cannot be inflated within the limits:
        the decode said why)."""
        if self.inflated is None and self.blob is not None:
            codec, buf, start, end, limits = self.blob
            n = inflated_size(codec, memoryview(buf)[start:end], limits)
            self.inflated = -1 if n is None else n
        n = self.inflated
        return n if n is not None and n >= 0 else None

    def sized_for_ratio(self) -> int | None:
        """:meth:`uncompressed_size` of the compressed batches the compression ratio reads:
        every one whose codec declares its size, one in :data:`INFLATE_ONE_IN` of the others
        (by CRC); None for the rest."""
        s = self.value
        if s["codec"] == "none" or not (self.declares_size or (s["crc"] or 0) % INFLATE_ONE_IN == 0):
            return None
        return self.uncompressed_size()

    def build_children(self) -> list[Field]:
        return _batch_header_fields(self.offset, self.header, self.computed) + self.tail


def _batch_header_fields(at: int, header: tuple, computed: int) -> list[Field]:
    (bo, blen, ple, magic, crc, attrs, lod, bts, mts, pid, pep, bseq, count) = header
    return [
        Field("base_offset", "int64", bo, at, 8),
        Field("batch_length", "int32", blen, at + 8, 4),
        Field("partition_leader_epoch", "int32", ple, at + 12, 4),
        Field("magic", "int8", magic, at + 16, 1),
        Field("crc", "uint32", crc, at + 17, 4, None, crc_display(crc, computed)),
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

    The scan of :mod:`~analyzer.dissect.records_batch` is the one parser: it checks every length
    and varint, reports every issue and keeps each record as a row of values and positions in
    ``buf``, a plain tuple laid out as :class:`RecordRow` (:meth:`row` gives it typed).
    ``children`` turns the rows into ``record`` Fields with byte spans the first time someone asks
    (the field tree, the TUI); :func:`entry_records` and the export read the rows directly.
    ``batch`` is the :class:`BatchInfo` of the batch.
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
    return Field(name, "bytes", v, base + s, e - s, None, utf8_text(v))


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
      of a compressed wrapper the absolute offset resolved as Kafka does, see ``_unwrap`` in
      :mod:`~analyzer.dissect.records_messageset`), ``timestamp`` its timestamp (magic 1; the
      wrapper's when the wrapper uses LogAppendTime; None for magic 0), ``headers`` ().
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
