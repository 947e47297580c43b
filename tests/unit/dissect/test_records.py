"""Records decoding against bytes built by an independent encoder (kafka-python)."""

from __future__ import annotations

import gzip
import struct
import time
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka import codec as kcodec
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.util import calc_crc32c, encode_varint

from analyzer import model as model_mod
from analyzer.dissect import records as records_mod
from analyzer.dissect import records_context
from analyzer.dissect.codecs import Limits, xxh32
from analyzer.dissect.records import BATCH_KEYS, DEFAULT_LIMITS, decode_records, entry_records, iso_timestamp
from analyzer.model import Field, Severity

TS = 1_700_000_000_000
SUMMARY_KEYS = {*BATCH_KEYS, "record_count"}  # exactly these, for every magic
CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


class XxhashShim:
    """kafka-python needs `xxhash` (not installed) for magic 0 LZ4; see test_codecs."""

    class xxh32:  # noqa: N801
        def __init__(self, data):
            self._h = xxh32(bytes(data))

        def digest(self):
            return struct.pack(">I", self._h)


@pytest.fixture(autouse=True)
def _xxhash(monkeypatch):
    monkeypatch.setattr(kcodec, "xxhash", XxhashShim)


# --- encoders ---------------------------------------------------------------------------------


def sample_records(n: int = 6):
    """(key, value, headers) with nulls, empties, non-UTF-8, multi-byte varint lengths."""
    out = []
    for i in range(n):
        key = [b"key-%d" % i, None, b"", "clé-ü".encode(), b"\xff\xfe", b"k" * 200][i % 6]
        value = [b"value %d " % i * 30, None, b"", b"\x80\x81" * 90, b"v" * 20_000, "żółw".encode()][i % 6]
        headers = [[], [("h1", b"x")], [("trace", None), ("ñ", b"\x00\x01")], [("big", b"h" * 300)]][i % 4]
        out.append((key, value, headers))
    return out


def v2_batch(
    recs,
    codec: int = 0,
    base_offset: int = 0,
    transactional: bool = False,
    producer=(-1, -1, -1),
    ts: int = TS,
) -> bytes:
    pid, epoch, seq = producer
    b = DefaultRecordBatchBuilder(2, codec, transactional, pid, epoch, seq, batch_size=1 << 30)
    for i, (k, v, h) in enumerate(recs):
        assert b.append(i, timestamp=ts + 7 * i, key=k, value=v, headers=h) is not None
    buf = bytearray(b.build())
    struct.pack_into(">q", buf, 0, base_offset)  # not covered by the CRC
    return bytes(buf)


def set_v2_attrs_and_count(batch: bytes, attrs: int | None = None, count: int | None = None) -> bytes:
    buf = bytearray(batch)
    if attrs is not None:
        struct.pack_into(">h", buf, 21, attrs)
    if count is not None:
        struct.pack_into(">i", buf, 57, count)
    struct.pack_into(">I", buf, 17, calc_crc32c(bytes(buf[21:])))
    return bytes(buf)


def control_batch(ctype: int, epoch: int = 3, base_offset: int = 10) -> bytes:
    b = v2_batch(
        [(struct.pack(">hh", 0, ctype), struct.pack(">hi", 0, epoch), [])],
        transactional=True,
        producer=(77, 2, -1),
        base_offset=base_offset,
    )
    return set_v2_attrs_and_count(b, attrs=0x30)


def legacy_set(magic: int, codec: int, msgs, last_offset: int | None = None) -> bytes:
    b = LegacyRecordBatchBuilder(magic, codec, batch_size=1 << 30)
    for i, (k, v) in enumerate(msgs):
        assert b.append(i, timestamp=TS + i, key=k, value=v) is not None
    buf = bytearray(b.build())
    if codec and last_offset is not None:
        struct.pack_into(">q", buf, 0, last_offset)  # wrapper offset, not covered by the CRC
    return bytes(buf)


def legacy_msgs(n: int = 5):
    return [(k, v if v is not None else b"") for k, v, _ in sample_records(n)][:n]


def raw_v2_batch(records_bytes: bytes, count: int, attrs: int = 0, base_offset: int = 0) -> bytes:
    """A v2 batch from hand-made record bytes (for malformed records)."""
    body = struct.pack(">hiqqqhii", attrs, count - 1, TS, TS, -1, -1, -1, count) + records_bytes
    crc = calc_crc32c(body)
    return struct.pack(">qiibI", base_offset, len(body) + 9, 0, 2, crc) + body


def varint(v: int) -> bytes:
    out = bytearray()
    encode_varint(v, out.append)
    return bytes(out)


def raw_record(key=b"k", value=b"v", headers=(), attrs=0, ts_delta=0, offset_delta=0, extra=b"") -> bytes:
    body = bytes([attrs]) + varint(ts_delta) + varint(offset_delta)
    body += varint(-1) if key is None else varint(len(key)) + key
    body += varint(-1) if value is None else varint(len(value)) + value
    body += varint(len(headers))
    for hk, hv in headers:
        body += varint(len(hk)) + hk + (varint(-1) if hv is None else varint(len(hv)) + hv)
    body += extra
    return varint(len(body)) + body


# --- helpers on the decoded tree --------------------------------------------------------------


def records_array(batch: Field) -> Field:
    arr = batch.child("records")
    if arr is None:
        dec = batch.child("decompressed")
        assert dec is not None
        arr = dec.child("records")
    return arr


def decoded_v2(batch: Field):
    out = []
    for r in records_array(batch).children:
        hs = [(h.child("key").value, h.child("value").value) for h in r.child("headers").children]
        out.append((r.child("key").value, r.child("value").value, hs))
    return out


INT_FORMATS = {"int8": ">b", "int16": ">h", "int32": ">i", "int64": ">q", "uint32": ">I"}


def check_tree(field: Field, buf: bytes, lo: int, hi: int) -> None:
    """Spans nest, ints and byte strings read back from their spans (coordinate switch at
    `decompressed` Fields)."""
    assert lo <= field.offset and field.offset + field.length <= hi, (field.name, field.offset, lo, hi)
    fmt = INT_FORMATS.get(field.type)
    if fmt and field.name != "absolute_offset":
        assert struct.unpack_from(fmt, buf, field.offset)[0] == field.value, field
        assert struct.calcsize(fmt) == field.length
    if field.type in ("bytes", "control_key", "control_value") and field.value is not None:
        end = field.offset + field.length
        assert buf[end - len(field.value) : end] == field.value
    if field.type == "decompressed":
        for c in field.children or ():
            check_tree(c, field.value, 0, len(field.value))
        return
    for c in field.children or ():
        check_tree(c, buf, field.offset, field.offset + field.length)


def decode_checked(data: bytes, base: int = 0, **kw):
    frame = b"\xaa" * base + data
    fields, issues = decode_records(memoryview(frame)[base:], base, **kw)
    for f in fields:
        check_tree(f, frame, base, base + len(data))
        assert set(f.value) == SUMMARY_KEYS
    return fields, issues


def codes(issues):
    return [i.code for i in issues]


# --- magic 2 ----------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_v2_every_codec(codec):
    recs = sample_records(12)
    data = v2_batch(recs, codec, base_offset=1000, transactional=True, producer=(42, 3, 17))
    fields, issues = decode_checked(data, base=37)
    assert issues == []
    (batch,) = fields
    assert batch.name == batch.type == "record_batch"
    assert (batch.offset, batch.length) == (37, len(data))
    assert decoded_v2(batch) == [(k, v, [(hk, hv) for hk, hv in h]) for k, v, h in recs]
    s = batch.value
    assert s["codec"] == CODECS[codec]  # kafka-python sends uncompressed when it does not pay
    assert (s["magic"], s["record_count"], s["bytes"], s["base_offset"], s["last_offset"]) == (
        2,
        12,
        len(data),
        1000,
        1011,
    )
    assert s["crc_ok"] is True and s["transactional"] is True and s["control"] is False
    assert (s["producer_id"], s["producer_epoch"], s["base_sequence"]) == (42, 3, 17)
    assert batch.get("max_timestamp") == TS + 7 * 11
    assert "transactional" in batch.child("attributes").display
    assert batch.child("attributes").display.startswith(f"codec={CODECS[codec]}")
    arr = records_array(batch)
    assert [r.value for r in arr.children] == list(range(1000, 1012))
    assert arr.children[3].child("timestamp_delta").display == iso_timestamp(TS + 21)
    assert (batch.child("decompressed") is None) == (codec == 0)


def test_v2_values_text_and_headers():
    (batch,), _ = decode_checked(v2_batch(sample_records(6)))
    rs = records_array(batch).children
    assert rs[0].child("key").display == "key-0"
    assert rs[3].child("key").display == "clé-ü"
    assert rs[4].child("key").display is None  # not UTF-8
    assert rs[1].child("key").value is None
    assert rs[1].child("value").value is None
    assert rs[3].child("value").display is None
    hdr = rs[2].child("headers")
    assert hdr.value == 2
    assert [(h.child("key").value, h.child("value").value) for h in hdr.children] == [
        ("trace", None),
        ("ñ", b"\x00\x01"),
    ]


def test_v2_decoded_like_kafka_python_reader():
    data = v2_batch(sample_records(9), codec=1, base_offset=5)
    theirs = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in DefaultRecordBatch(data)]
    (batch,), _ = decode_checked(data)
    bts = batch.get("base_timestamp")
    ours = [
        (
            r.value,
            bts + r.get("timestamp_delta"),
            r.get("key"),
            r.get("value"),
            [(h.get("key"), h.get("value")) for h in r.child("headers").children],
        )
        for r in records_array(batch).children
    ]
    assert ours == theirs


@pytest.mark.parametrize(("ctype", "name"), [(0, "ABORT"), (1, "COMMIT")])
def test_control_batches(ctype, name):
    data = control_batch(ctype, epoch=9)
    rec = next(iter(DefaultRecordBatch(data)))  # kafka-python agrees it is a control record
    assert rec.type == ctype
    for bodies in (True, False):
        (batch,), issues = decode_checked(data, bodies=bodies)
        assert issues == []
        s = batch.value
        assert s["control"] is True and s["transactional"] is True
        assert s["control_type"] == name
        assert (
            batch.child("attributes").display
            == "codec=none, timestamp_type=create_time, transactional, control"
        )
        (r,) = records_array(batch).children
        key, value = r.child("key"), r.child("value")
        assert key.type == "control_key" and key.display == name
        assert (key.get("version"), key.get("type")) == (0, ctype)
        assert value.type == "control_value"
        assert (value.get("version"), value.get("coordinator_epoch")) == (0, 9)


def test_control_batch_with_short_key():
    data = set_v2_attrs_and_count(v2_batch([(b"\x00", b"", [])]), attrs=0x20)
    (batch,), issues = decode_checked(data)
    assert codes(issues) == ["records.bad_control_record"]
    assert batch.value["control_type"] is None


def test_attribute_bits_display():
    data = set_v2_attrs_and_count(v2_batch([(b"k", b"v", [])]), attrs=0x08 | 0x40)
    (batch,), issues = decode_checked(data)
    assert issues == []
    assert batch.child("attributes").display == "codec=none, timestamp_type=log_append_time, delete_horizon"


# --- magic 0 / 1 ------------------------------------------------------------------------------


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_uncompressed_set(magic):
    msgs = legacy_msgs(5)
    data = legacy_set(magic, 0, msgs)
    fields, issues = decode_checked(data, base=9)
    assert issues == []
    assert [f.name for f in fields] == ["message"] * 5
    assert [(f.get("key"), f.get("value")) for f in fields] == msgs
    assert [f.get("offset") for f in fields] == list(range(5))
    assert [f.value["base_offset"] for f in fields] == list(range(5))
    assert all(
        f.value["crc_ok"] and f.value["record_count"] == 1 and f.value["magic"] == magic for f in fields
    )
    if magic == 1:
        assert [f.get("timestamp") for f in fields] == [TS + i for i in range(5)]
        assert fields[0].child("timestamp").display == iso_timestamp(TS)
    else:
        assert fields[0].child("timestamp") is None


@pytest.mark.parametrize("codec", [1, 2, 3])
@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_compressed_wrappers(magic, codec):
    msgs = legacy_msgs(5)
    # a broker-written magic 1 wrapper carries the absolute offset of the last inner message
    data = legacy_set(magic, codec, msgs, last_offset=104 if magic == 1 else None)
    (wrapper,), issues = decode_checked(data)
    assert issues == []
    assert wrapper.value["codec"] == CODECS[codec]
    assert wrapper.value["record_count"] == 5
    dec = wrapper.child("decompressed")
    assert dec.type == "decompressed"
    value = wrapper.child("value")
    assert (dec.offset, dec.length) == (value.offset + 4, value.length - 4)
    inner = dec.children
    assert [(m.get("key"), m.get("value")) for m in inner] == msgs
    assert [m.get("offset") for m in inner] == list(range(5))  # raw, as written
    if magic == 1:
        assert [m.get("absolute_offset") for m in inner] == list(range(100, 105))
        assert [m.value["base_offset"] for m in inner] == list(range(100, 105))
        assert (wrapper.value["base_offset"], wrapper.value["last_offset"]) == (100, 104)
    else:
        assert [m.get("absolute_offset") for m in inner] == list(range(5))


def test_kafka_python_magic1_wrapper_offset_is_zero():
    """kafka-python writes 0 as a magic 1 wrapper's offset (Java writes the last inner
    relative offset): Kafka's deep iterator then takes base offset 0, so do we."""
    data = legacy_set(1, 1, legacy_msgs(3))
    (wrapper,), issues = decode_checked(data)
    assert issues == []
    assert [m.get("absolute_offset") for m in wrapper.child("decompressed").children] == [0, 1, 2]
    assert [r.offset for r in entry_records(wrapper)] == [0, 1, 2]
    assert (wrapper.value["base_offset"], wrapper.value["last_offset"]) == (0, 2)


def test_magic1_wrapper_offset_below_its_last_inner_keeps_the_offsets_as_written():
    inner = legacy_set(1, 0, legacy_msgs(3))  # relative offsets 0, 1, 2
    (wrapper,), issues = decode_checked(wrap_legacy(gzip.compress(inner), codec=1, offset=1))
    assert issues == []
    assert [r.offset for r in entry_records(wrapper)] == [0, 1, 2]


def test_magic0_lz4_uses_the_broken_header_checksum():
    data = legacy_set(0, 3, legacy_msgs(4))
    value = decode_records(data, 0)[0][0].child("value").value
    assert value[6] != (xxh32(value[4:6]) >> 8) & 0xFF
    (wrapper,), issues = decode_checked(data)
    assert issues == []  # expected for magic 0: no issue
    assert wrapper.value["record_count"] == 4


def test_lz4_broken_checksum_in_magic1_is_a_warning():
    msgs = legacy_msgs(3)
    inner = legacy_set(1, 0, msgs)
    value = kcodec.lz4_encode_old_kafka(inner)
    data = wrap_legacy(value, codec=3, magic=1, offset=2)
    (wrapper,), issues = decode_checked(data)
    assert [(i.code, i.severity) for i in issues] == [("records.lz4_legacy_checksum", Severity.WARNING)]
    assert wrapper.value["record_count"] == 3


def test_mixed_magic_set():
    data = (
        legacy_set(0, 0, legacy_msgs(2)) + v2_batch(sample_records(3), 4) + legacy_set(1, 1, legacy_msgs(2))
    )
    fields, issues = decode_checked(data)
    assert issues == []
    assert [(f.name, f.value["magic"], f.value["record_count"]) for f in fields] == [
        ("message", 0, 1),
        ("message", 0, 1),
        ("record_batch", 2, 3),
        ("message", 1, 2),
    ]


def wrap_legacy(value: bytes, codec: int, magic: int = 1, offset: int = 0, ts: int = TS) -> bytes:
    """A magic 0/1 message built by hand (CRC with zlib), for nesting and odd cases."""
    body = struct.pack(">bb", magic, codec) + (struct.pack(">q", ts) if magic == 1 else b"")
    body += struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    crc = zlib.crc32(body)
    return struct.pack(">qiI", offset, len(body) + 4, crc) + body


def nested(depth: int) -> bytes:
    data = legacy_set(1, 0, legacy_msgs(2))
    for _ in range(depth):
        data = wrap_legacy(gzip.compress(data), codec=1)
    return data


def test_nesting_depth_is_bounded():
    fields, issues = decode_checked(nested(4))
    assert issues == []
    assert fields[0].value["record_count"] == 2
    fields, issues = decode_checked(nested(5))
    assert codes(issues) == ["records.decompression_limit"]
    assert "nested deeper than 4" in issues[0].message
    assert fields[0].value["record_count"] == 0  # not decompressed: none known
    fields, issues = decode_checked(nested(2), limits=Limits(max_depth=1))
    assert codes(issues) == ["records.decompression_limit"]


def test_truncated_inner_set_is_an_error():
    inner = legacy_set(1, 0, legacy_msgs(3))
    data = wrap_legacy(gzip.compress(inner[:-5]), codec=1, offset=2)
    (wrapper,), issues = decode_checked(data)
    assert codes(issues) == ["records.truncated"]
    assert issues[0].severity is Severity.ERROR
    assert issues[0].offset == 34  # frame offset of the compressed bytes
    assert "in message at offset 0 (offset 2)" in issues[0].where


def test_null_wrapper_value():
    body = struct.pack(">bbqii", 1, 1, TS, -1, -1)
    data = struct.pack(">qiI", 0, len(body) + 4, zlib.crc32(body)) + body
    (m,), issues = decode_checked(data)
    assert codes(issues) == ["records.bad_record"]
    assert m.value["record_count"] == 0


# --- CRCs -------------------------------------------------------------------------------------


def crc_region(f: Field) -> range:
    """Frame positions whose corruption must give exactly one CRC mismatch for entry f."""
    if f.name == "record_batch":
        return range(f.offset + 17, f.offset + f.length)  # crc + attributes..end
    return range(f.offset + 12, f.offset + f.length)  # crc + magic..end (magic itself excluded below)


def crc_neutral(f: Field) -> range | list[int]:
    """Positions outside the CRC that do not change the framing either: offset, leader epoch.
    (Flipping a length field reframes the entry, which then fails its CRC: that is fine.)"""
    if f.name == "record_batch":
        return [*range(f.offset, f.offset + 8), *range(f.offset + 12, f.offset + 16)]
    return range(f.offset, f.offset + 8)


def expected_where(f: Field) -> str:
    if f.name == "record_batch":
        return f"batch at offset {f.offset} (base offset {f.get('base_offset')})"
    return f"message at offset {f.offset} (offset {f.get('offset')})"


V2_SET = (
    v2_batch(sample_records(4), 0, base_offset=0)
    + v2_batch(sample_records(3), 1, base_offset=4)
    + v2_batch(sample_records(5)[:3], 4, base_offset=7)
)
LEGACY_SET = (
    legacy_set(1, 0, legacy_msgs(2))
    + legacy_set(1, 1, legacy_msgs(3), last_offset=4)
    + legacy_set(0, 2, legacy_msgs(2))
    + legacy_set(1, 3, legacy_msgs(2), last_offset=9)
)


@pytest.mark.parametrize("data", [V2_SET, LEGACY_SET], ids=["v2", "legacy"])
@pytest.mark.parametrize("bodies", [True, False])
def test_every_single_byte_flip(data, bodies):
    base = 100
    clean, issues = decode_records(data, base, bodies=bodies)
    assert issues == []
    for mask in (0xFF, 0x01):
        for i in range(len(data)):
            bad = bytearray(data)
            bad[i] ^= mask
            fields, issues = decode_records(bytes(bad), base, bodies=bodies)  # never raises
            pos = base + i
            entry = next(f for f in clean if f.offset <= pos < f.offset + f.length)
            if entry.name == "message" and pos == entry.offset + 16:
                continue  # the magic byte of v0/v1: changes the format, not only the CRC
            crc_issues = [x for x in issues if x.code == "records.crc_mismatch"]
            if pos in crc_region(entry):
                assert len(crc_issues) == 1, (i, issues)
                (x,) = crc_issues
                assert x.severity is Severity.ERROR
                assert x.where == expected_where(entry)
                assert x.offset == entry.offset
                assert "stored 0x" in x.message and "computed 0x" in x.message
            elif pos in crc_neutral(entry):
                assert crc_issues == [], (i, issues)


def test_crc_mismatch_message_values():
    data = bytearray(v2_batch(sample_records(2), base_offset=1234))
    stored = struct.unpack_from(">I", data, 17)[0]
    data[-1] ^= 0x10
    actual = calc_crc32c(bytes(data[21:]))
    (batch,), issues = decode_records(bytes(data), 50)
    (x,) = issues
    assert x.message == f"batch CRC-32C mismatch: stored 0x{stored:08x}, computed 0x{actual:08x}"
    assert x.where == "batch at offset 50 (base offset 1234)"
    assert batch.value["crc_ok"] is False
    assert "mismatch" in batch.child("crc").display


def test_inner_message_crc_mismatch_when_wrapper_is_fine():
    inner = bytearray(legacy_set(1, 0, legacy_msgs(3)))
    second = 34 + len(legacy_msgs(3)[0][0]) + len(legacy_msgs(3)[0][1])  # 12 + 22 bytes overhead
    inner[second + 25] ^= 1  # a byte of the 2nd inner message's timestamp
    data = wrap_legacy(gzip.compress(bytes(inner)), codec=1, offset=2)
    (wrapper,), issues = decode_records(data, 0)
    (x,) = issues
    assert x.code == "records.crc_mismatch"
    assert x.where == f"message at decompressed offset {second} (offset 1) in message at offset 0 (offset 2)"
    assert [m.value["crc_ok"] for m in wrapper.child("decompressed").children] == [True, False, True]


# --- truncation, partial entries ----------------------------------------------------------------


@pytest.mark.parametrize("data", [V2_SET, LEGACY_SET], ids=["v2", "legacy"])
def test_truncated_at_every_length(data):
    clean, _ = decode_records(data, 0)
    ends = {f.offset + f.length for f in clean}
    for n in range(len(data)):
        fields, issues = decode_records(data[:n], 0)
        complete = [f for f in fields if f.type != "partial"]
        assert [f.value for f in complete] == [f.value for f in clean[: len(complete)]]
        if n == 0 or n in ends:
            assert issues == [] and len(fields) == len(complete)
        else:
            (x,) = issues
            assert x.severity is Severity.NOTE
            assert x.code in ("records.partial_message", "records.partial_batch")
            last = fields[-1]
            assert last.type == "partial" and last.value["partial"] is True
            assert last.offset + last.length == n
            assert x.offset == last.offset


def test_partial_batch_fields():
    data = v2_batch(sample_records(3))
    fields, issues = decode_records(data[:40], 1000)
    (p,) = fields
    assert (p.name, p.type, p.offset, p.length) == ("record_batch", "partial", 1000, 40)
    assert [c.name for c in p.children] == ["base_offset", "batch_length", "magic"]
    assert p.get("batch_length") == len(data) - 12
    assert codes(issues) == ["records.partial_batch"]
    assert "cut after 40 of" in issues[0].message


def test_empty():
    assert decode_records(b"", 0) == ([], [])


# --- malformed records, hostile counts --------------------------------------------------------


def test_hostile_record_count():
    data = set_v2_attrs_and_count(v2_batch(sample_records(3)), count=0x7FFFFFFF)
    t = time.perf_counter()
    (batch,), issues = decode_checked(data)
    assert time.perf_counter() - t < 0.1
    assert codes(issues) == ["records.record_count_mismatch"]
    assert "declares 2147483647 records, its data holds 3" in issues[0].message
    assert records_array(batch).value == 3


def test_hostile_counts_and_lengths():
    rec_hdr_count = raw_record()[:-1]  # replace the header count (last byte, 0)
    body = rec_hdr_count[1:] + varint(0x7FFFFFF0)
    bad_headers = varint(len(body)) + body
    for records_bytes, code in [
        (bad_headers, "records.bad_record"),
        (raw_record(extra=b"zz"), "records.bad_record"),  # unused bytes in the record
        (raw_record() + b"\x00\x00", "records.trailing_bytes"),
        (varint(10_000) + b"\x00" * 5, "records.bad_record"),  # record length too big
        (b"\xff\xff\xff\xff\xff\x01", "records.bad_varint"),  # 6-byte varint
        (b"\xff\xff", "records.bad_varint"),  # varint cut
    ]:
        data = raw_v2_batch(records_bytes, 1)
        t = time.perf_counter()
        _, issues = decode_checked(data)
        assert time.perf_counter() - t < 0.1
        assert codes(issues) == [code], (records_bytes, issues)
        assert issues[0].where.endswith("batch at offset 0 (base offset 0)")


def test_too_long_varint_inside_a_record():
    body = b"\x00" + b"\x80" * 10 + b"\x00"  # 11-byte varlong timestamp delta
    data = raw_v2_batch(varint(len(body)) + body, 1)
    _, issues = decode_checked(data)
    assert codes(issues) == ["records.bad_varint"]
    assert "longer than 10 bytes" in issues[0].message
    assert issues[0].where == "record 0 of batch at offset 0 (base offset 0)"


def test_negative_lengths_and_bad_header_key():
    neg_key = b"\x00\x00\x00" + varint(-2) + varint(1) + b"v" + varint(0)
    neg_hkey = b"\x00\x00\x00" + varint(-1) + varint(-1) + varint(1) + varint(-1) + varint(-1)
    for rec, code in [
        (varint(len(neg_key)) + neg_key, "records.bad_record"),
        (varint(len(neg_hkey)) + neg_hkey, "records.bad_record"),
        (raw_record(headers=[(b"\xff", b"x")]), "records.bad_header_key"),
    ]:
        _, issues = decode_checked(raw_v2_batch(rec, 1))
        assert codes(issues) == [code]


def test_record_count_below_actual_gives_trailing_bytes():
    data = raw_v2_batch(raw_record() + raw_record(), 1)
    _, issues = decode_checked(data)
    assert codes(issues) == ["records.trailing_bytes"]


def test_bad_lengths_and_magic():
    data = v2_batch(sample_records(2))
    bad = bytearray(data)
    bad[16] = 7
    fields, issues = decode_records(bytes(bad), 0)
    assert fields == [] and codes(issues) == ["records.unknown_magic"]
    bad = bytearray(data)
    struct.pack_into(">i", bad, 8, 20)
    fields, issues = decode_records(bytes(bad), 0)
    assert fields == [] and codes(issues) == ["records.bad_length"]


# --- limits through decode_records ------------------------------------------------------------


def test_decompression_limit_reported_with_location():
    data = v2_batch([(None, bytes(2_000_000), [])], codec=1, base_offset=3)
    (batch,), issues = decode_checked(data, base=10, limits=Limits(max_output=1_000_000))
    (x,) = issues
    assert x.code == "records.decompression_limit"
    assert x.where == "batch at offset 10 (base offset 3)"
    assert x.offset == 10 + 61
    assert batch.value["record_count"] == 1 and batch.child("decompressed") is None


def test_total_output_budget():
    one = v2_batch([(None, bytes(100_000), [])], codec=1)
    fields, issues = decode_checked(one * 4, limits=Limits(max_total_output=250_000))
    assert [f.child("decompressed") is not None for f in fields] == [True, True, False, False]
    # the budget is said once, naming the setting that raises it
    assert codes(issues) == ["records.decompression_budget"]
    assert "--max-decompressed" in issues[0].message


def test_budget_spans_the_records_fields_of_a_message():
    from analyzer.dissect.records import decode_records_budget

    one = v2_batch([(None, bytes(100_000), [])], codec=1)
    left = 250_000
    got = []
    for _ in range(4):  # four partitions of one request
        fields, issues, left = decode_records_budget(
            one, 0, limits=Limits(max_total_output=250_000), budget=left
        )
        got.append(fields[0].child("decompressed") is not None)
    assert got == [True, True, False, False]


def raw_v2(payload: bytes, attrs: int, count: int, base_offset: int = 0) -> bytes:
    """A v2 batch around ``payload`` (compressed or not) exactly as given, with a good CRC."""
    after_crc = struct.pack(">hiqqqhii", attrs, 0, 0, 0, -1, -1, -1, count) + payload
    body = struct.pack(">ib", 0, 2) + struct.pack(">I", calc_crc32c(after_crc)) + after_crc
    return struct.pack(">qi", base_offset, len(body)) + body


def test_malformed_records_are_reported_once_with_a_count():
    import zstandard

    # a control batch whose zstd data inflates to 1 MiB of zeros, record count 2^31-1
    zeros = zstandard.ZstdCompressor().compress(bytes(1 << 20))
    batch = raw_v2(zeros, 0x34, 2**31 - 1)
    fields, issues = decode_checked(batch)
    cs = codes(issues)
    assert cs.count("records.bad_record") == 5 and cs.count("records.issues_suppressed") <= 1
    assert "records.record_limit" in cs and len(issues) < 12
    (limit,) = [i for i in issues if i.code == "records.record_limit"]
    assert "only counted" in limit.message
    assert "records.bad_control_count" in cs  # a control batch holds one record
    # without bodies a compressed control batch is not even inflated: its header says the damage
    fields, issues = decode_checked(batch, bodies=False)
    assert codes(issues) == ["records.bad_control_count"] and fields[0].value["record_count"] == 2**31 - 1


def test_records_past_max_records_are_counted():
    data = v2_batch([(None, b"v%d" % i, []) for i in range(50)])
    fields, issues = decode_checked(data, limits=Limits(max_records=10))
    assert codes(issues) == ["records.record_limit"]
    assert "max_records=10" in issues[0].message and "--max-records" in issues[0].message
    assert len(list(entry_records(fields[0]))) == 10 and fields[0].value["record_count"] == 50


def test_empty_records_past_max_records_are_counted_by_runs():
    """Past max_records, a run of zero bytes is that many empty records (counted at once), up
    to the count the batch declares; records between the runs are framed by their lengths."""
    recs = raw_record() * 2 + b"\x00" * 5 + raw_record() + b"\x00" * 3
    _, issues = decode_checked(raw_v2_batch(recs, 11), limits=Limits(max_records=2))
    (limit,) = [i for i in issues if i.code == "records.record_limit"]
    assert "the first 2 records are decoded, 9 more only counted" in limit.message
    assert "records.trailing_bytes" not in codes(issues)
    # a count that ends inside a run: the rest of the run is bytes after the last record
    _, issues = decode_checked(raw_v2_batch(recs, 5), limits=Limits(max_records=2))
    (limit,) = [i for i in issues if i.code == "records.record_limit"]
    assert "the first 2 records are decoded, 3 more only counted" in limit.message
    (trailing,) = [i for i in issues if i.code == "records.trailing_bytes"]
    assert trailing.message.startswith(f"{2 + len(raw_record()) + 3} bytes after the last of 5 records")


def test_decompression_failure_reported():
    data = bytearray(v2_batch([(None, bytes(1000), [])], codec=4))
    data[70] ^= 0xFF
    struct.pack_into(">I", data, 17, calc_crc32c(bytes(data[21:])))
    _, issues = decode_checked(bytes(data))
    assert codes(issues) == ["records.decompression_failed"]
    assert "zstd" in issues[0].message


# --- bodies=False -----------------------------------------------------------------------------


def test_bodies_false_summaries_match(monkeypatch):
    data = V2_SET + LEGACY_SET + control_batch(1)
    full, _ = decode_records(data, 0)
    calls = []
    real = records_context.decompress_capped
    monkeypatch.setattr(records_context, "decompress_capped", lambda *a: calls.append(a[0]) or real(*a))
    light, issues = decode_records(data, 0, bodies=False)
    assert issues == []
    assert [f.value for f in light] == [f.value for f in full]
    assert calls == [1, 2, 3]  # only the v0/v1 wrappers (to count inner messages)
    for f in light:
        names = {c.name for c in f.children}
        if f.value["control"]:
            assert "records" in names
        else:
            assert not names & {"records", "decompressed", "key", "value"}


def test_bodies_false_still_checks_crcs():
    bad = bytearray(V2_SET)
    bad[-1] ^= 1
    _, issues = decode_records(bytes(bad), 0, bodies=False)
    assert codes(issues) == ["records.crc_mismatch"]


# --- timestamps -------------------------------------------------------------------------------


def test_iso_timestamp():
    assert iso_timestamp(TS) == "2023-11-14T22:13:20.000Z"
    assert iso_timestamp(0) == "1970-01-01T00:00:00.000Z"
    assert iso_timestamp(-1) is None
    assert iso_timestamp(2**63 - 1) is None
    assert iso_timestamp(-(2**63)) is None
    assert iso_timestamp(-1000) == "1969-12-31T23:59:59.000Z"


def test_record_timestamps_honour_log_append_time():
    recs = sample_records(4)
    create = v2_batch(recs, base_offset=20)
    (batch,), _ = decode_records(create, 0)
    got = list(entry_records(batch))
    assert [(r.offset, r.timestamp) for r in got] == [(20 + i, TS + 7 * i) for i in range(4)]
    (batch,), issues = decode_records(set_v2_attrs_and_count(create, attrs=0x08), 0)
    assert issues == [] and batch.value["timestamp_type"] == "log_append_time"
    assert [r.timestamp for r in entry_records(batch)] == [TS + 7 * 3] * 4  # max_timestamp
    # magic 1: a LogAppendTime wrapper's timestamp is every inner message's
    inner = legacy_set(1, 0, legacy_msgs(3))
    (w,), issues = decode_records(wrap_legacy(gzip.compress(inner), codec=1 | 0x08, offset=9, ts=TS + 555), 0)
    assert issues == []
    assert [(r.offset, r.timestamp) for r in entry_records(w)] == [
        (7, TS + 555),
        (8, TS + 555),
        (9, TS + 555),
    ]
    (w,), _ = decode_records(wrap_legacy(gzip.compress(inner), codec=1, offset=9, ts=TS + 555), 0)
    assert [r.timestamp for r in entry_records(w)] == [TS, TS + 1, TS + 2]  # create time: their own
    # magic 0: no timestamps; headers are () for every legacy record
    (w,), _ = decode_records(legacy_set(0, 1, legacy_msgs(2)), 0)
    assert [(r.offset, r.timestamp, r.headers) for r in entry_records(w)] == [(0, None, ()), (1, None, ())]
    assert w.value["max_timestamp"] is None and w.value["timestamp_type"] is None


def test_control_records_carry_their_type():
    for ctype, name in ((0, "ABORT"), (1, "COMMIT")):
        (batch,), _ = decode_records(control_batch(ctype), 0, bodies=False)
        assert batch.value["control_type"] == name
        (r,) = entry_records(batch)
        assert (r.control, r.control_type, r.offset) == (True, name, 10)


# --- never raise ------------------------------------------------------------------------------

FUZZ_LIMITS = Limits(max_output=1 << 20, max_total_output=4 << 20)


@settings(max_examples=600, deadline=1000, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2000), st.integers(0, 1 << 20), st.booleans())
def test_random_bytes_never_raise(data, base, bodies):
    t = time.perf_counter()
    fields, issues = decode_records(data, base, limits=FUZZ_LIMITS, bodies=bodies)
    assert time.perf_counter() - t < 0.5
    for f in fields:
        check_tree(f, b"\x00" * base + data, base, base + len(data))


SEEDS = [V2_SET, LEGACY_SET, control_batch(0), nested(2), raw_v2_batch(raw_record(headers=[(b"a", b"b")]), 1)]


@settings(max_examples=600, deadline=1000, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(SEEDS),
    st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=8),
    st.integers(0, 1 << 16),
    st.binary(max_size=30),
    st.booleans(),
)
def test_mutated_batches_never_raise(seed, edits, cut, insert, bodies):
    buf = bytearray(seed)
    for pos, val in edits:
        buf[pos % len(buf)] = val
    p = cut % (len(buf) + 1)
    buf[p:p] = insert
    data = bytes(buf)
    t = time.perf_counter()
    fields, _ = decode_records(data, 0, limits=FUZZ_LIMITS, bodies=bodies)
    assert time.perf_counter() - t < 0.5
    for f in fields:  # spans stay consistent whatever the damage
        check_tree(f, data, 0, len(data))


@settings(max_examples=300, deadline=1000, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(SEEDS),
    st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), min_size=1, max_size=4),
)
def test_mutated_batches_with_fixed_crcs_never_raise(seed, edits):
    """Corruption behind a valid CRC reaches the record parser instead of stopping at the CRC."""
    buf = bytearray(seed)
    for pos, val in edits:
        buf[pos % len(buf)] = val
    fields, _ = decode_records(bytes(buf), 0, limits=FUZZ_LIMITS)
    for f in fields:
        if f.name == "record_batch" and f.type == "record_batch" and f.offset + f.length <= len(buf):
            s = f.offset
            struct.pack_into(">I", buf, s + 17, calc_crc32c(bytes(buf[s + 21 : s + f.length])))
    fields, issues = decode_records(bytes(buf), 0, limits=FUZZ_LIMITS)  # same framing as before
    assert all(f.value["crc_ok"] for f in fields if f.type == "record_batch")


def test_default_limits_exported():
    assert Limits() == DEFAULT_LIMITS


# --- one parser, two views: record rows -> Field tree (lazily) and -> export JSON ---------------


def _records_fields(fields):
    for f in fields:
        for x in f.walk():
            if isinstance(x, records_mod.RecordsField):
                yield x


def _json_views_agree(data: bytes) -> int:
    """The export's JSON of a batch's rows equals the JSON of its Records, and the record Fields
    (built from the same rows) agree with them."""
    from analyzer.export.jsonout import record_json, rows_json

    fields, _ = decode_records(data, 0)
    n = 0
    for rf in _records_fields(fields):
        fast = rows_json(rf)  # read from the rows, before any Field exists
        recs = list(records_mod.v2_records(rf))
        assert fast == [record_json(r) for r in recs]
        good = [f for f, row in zip(rf.children, rf.rows, strict=True) if row[-1]]
        assert [f.value for f in good] == [r.offset for r in recs]
        assert [(f.get("key"), f.get("value")) for f in good] == [(r.key, r.value) for r in recs]
        assert [rf.row(i).ok for i in range(len(rf.rows))] == [row[-1] for row in rf.rows]
        n += len(fast)
    return n


def test_record_fields_are_built_on_first_use():
    (batch,), issues = decode_records(v2_batch(sample_records(6)), 0)
    assert not issues
    rf = records_array(batch)
    assert isinstance(rf, records_mod.RecordsField) and rf.value == 6
    assert model_mod._CHILDREN.__get__(rf) is None  # nothing built by the parse
    from analyzer.export.jsonout import rows_json

    rows_json(rf)
    list(records_mod.entry_records(batch))
    assert model_mod._CHILDREN.__get__(rf) is None  # nor by the export or the records view
    assert len(rf.children) == 6 and rf.children is rf.children  # built once, then kept


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_export_json_of_rows_equals_json_of_fields(codec):
    recs = sample_records(24) + [
        (b"tab\there\nnew line\r", b"\x01control", [("k", b"\x7f"), ("n", None)]),
        (
            "ascii and ünïcödé".encode(),
            "\u200b zero width".encode(),
            [("ключ", b"v")],
        ),
        (None, None, []),
    ]
    assert _json_views_agree(v2_batch(recs, codec=codec)) == len(recs)


def test_export_json_of_rows_for_odd_batches():
    ok = raw_record(b"k", b"v", [(b"h", b"x")])
    cases = [
        control_batch(0),
        control_batch(1),
        set_v2_attrs_and_count(v2_batch(sample_records(4)), attrs=0x08),  # log append time
        raw_v2_batch(ok + raw_record(b"k", b"v", extra=b"\x00\x00") + ok, 3),  # unused bytes
        raw_v2_batch(ok + raw_record(b"k", b"v", headers=[(b"h", b"x")])[:-2] + b"\x02\x09", 2),
        raw_v2_batch(raw_record(b"k" * 3, b"v")[:-1], 1),  # value cut
        raw_v2_batch(ok + b"\x7f", 2),  # record length past the end
        raw_v2_batch(raw_record(b"k", b"v", [(b"\xff\xfe", b"x"), (b"h", b"\xc3")]), 1),  # not UTF-8
    ]
    for data in cases:
        _json_views_agree(data)


def test_export_json_of_rows_for_every_project_capture_batch():
    from analyzer.dissect.message import Options
    from analyzer.pipeline import Analysis
    from tests.helpers.captures import project_captures

    seen = []
    real = records_mod.decode_records_budget  # what the message decoder calls

    def spy(data, base, **kw):
        seen.append(bytes(data))
        return real(data, base, **kw)

    total = 0
    paths = project_captures()
    assert paths
    for path in paths:
        seen.clear()
        records_mod.decode_records_budget = spy
        try:
            for _ in Analysis(path, Options(records_bodies=True)).events():
                pass
        finally:
            records_mod.decode_records_budget = real
        total += sum(_json_views_agree(d) for d in seen)
    assert total > 0


@pytest.mark.parametrize("codec", [1, 2, 4])
def test_without_bodies_the_declared_size_names_the_limit(codec):
    """read and stats inflate no v2 batch: the size the codec declares is held against the
    limit that inflating it would hit, so they name the same damage as export --records."""
    data = v2_batch([(None, bytes(2_000_000), [])], codec=codec, base_offset=3)
    limits = Limits(max_output=1_000_000)
    _, inflated = decode_records(data, 10, limits=limits, bodies=True)
    (batch,), issues = decode_records(data, 10, limits=limits, bodies=False)
    assert codes(issues) == codes(inflated) == ["records.decompression_limit"]
    (x,) = issues
    assert x.where == "batch at offset 10 (base offset 3)" and x.offset == 10 + 61
    assert "declares" in x.message and "not inflated" in x.message
    assert batch.child("decompressed") is None


def test_without_bodies_the_declared_sizes_spend_the_budget():
    one = v2_batch([(None, bytes(100_000), [])], codec=1)
    limits = Limits(max_total_output=250_000)
    _, issues = decode_records(one * 4, 0, limits=limits, bodies=False)
    assert codes(issues) == ["records.decompression_budget"]
    assert "--max-decompressed" in issues[0].message
    # within the budget, nothing is said
    assert decode_records(one * 2, 0, limits=limits, bodies=False)[1] == []


@pytest.mark.parametrize("codec", sorted(c for c in CODECS if c))
@pytest.mark.parametrize("bodies", [False, True])
def test_v2_uncompressed_size(codec, bodies):
    """A compressed batch's records decompressed are as long as the same records built
    uncompressed by kafka-python: read from the codec's own framing, inflated while decoding
    (bodies), or inflated when asked (no bodies, a codec that declares no size)."""
    recs = sample_records(12)
    plain = v2_batch(recs, 0)
    (batch,) = decode_records(v2_batch(recs, codec), 0, bodies=bodies)[0]
    if batch.value["codec"] == "none":
        pytest.skip("kafka-python sent it uncompressed")
    assert batch.uncompressed_size() == len(plain) - 61
    (none,) = decode_records(plain, 0, bodies=bodies)[0]
    assert none.uncompressed_size() is None


@pytest.mark.parametrize("codec", [3, 4])
def test_v2_uncompressed_size_of_damaged_blob(codec):
    """Compressed bytes that do not inflate have no size (the decode said why when it inflated)."""
    data = bytearray(v2_batch(sample_records(12), codec))
    data[61:65] = b"\x00" * 4  # not the codec's frame magic
    (batch,) = decode_records(bytes(data), 0, bodies=False)[0]
    assert batch.uncompressed_size() is None
