"""Bounded decompression: round trips through kafka-python's encoders, bombs, lies, corruption."""

from __future__ import annotations

import gzip
import os
import struct
import time
import tracemalloc
import zlib

import lz4.frame
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka import codec as kcodec

from analyzer.dissect.codecs import CODEC_NAMES, DEFAULT_LIMITS, Limits, decompress, xxh32
from analyzer.model import Severity

MiB = 1 << 20


def payload(n: int = 300_000) -> bytes:
    """Compressible but not trivial data (random chunks repeated, plus text)."""
    chunk = os.urandom(97) * 7 + b"kafka record value " * 11
    return (chunk * (n // len(chunk) + 1))[:n]


class XxhashShim:
    """Stands in for the `xxhash` package (not installed) so kafka-python can run its own
    Kafka 0.8/0.9 LZ4 framing code (lz4_encode_old_kafka); xxh32 is checked below."""

    class xxh32:  # noqa: N801 - mimics xxhash.xxh32
        def __init__(self, data: bytes) -> None:
            self._h = xxh32(bytes(data))

        def digest(self) -> bytes:
            return struct.pack(">I", self._h)


@pytest.fixture
def old_kafka_lz4(monkeypatch):
    monkeypatch.setattr(kcodec, "xxhash", XxhashShim)
    return kcodec.lz4_encode_old_kafka


def test_codec_names():
    assert CODEC_NAMES == {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


ENCODERS = {
    "gzip": (1, kcodec.gzip_encode),
    "snappy-xerial": (2, kcodec.snappy_encode),
    "snappy-raw": (2, lambda d: kcodec.snappy_encode(d, xerial_compatible=False)),
    "snappy-xerial-small-blocks": (2, lambda d: kcodec.snappy_encode(d, xerial_blocksize=1000)),
    "lz4": (3, kcodec.lz4_encode),
    "lz4-no-size": (3, lambda d: lz4.frame.compress(d, store_size=False, block_linked=False)),
    "lz4-linked-checksums": (
        3,
        lambda d: lz4.frame.compress(d, block_linked=True, content_checksum=True, block_checksum=True),
    ),
    "zstd": (4, kcodec.zstd_encode),
    "zstd-no-size": (4, lambda d: zstandard.ZstdCompressor(write_content_size=False).compress(d)),
    "zstd-two-frames": (4, lambda d: kcodec.zstd_encode(d[:1000]) + kcodec.zstd_encode(d[1000:])),
    "gzip-two-members": (1, lambda d: kcodec.gzip_encode(d[:10]) + kcodec.gzip_encode(d[10:])),
}


@pytest.mark.parametrize("name", sorted(ENCODERS))
@pytest.mark.parametrize("size", [0, 1, 1000, 300_000])
def test_round_trip(name, size):
    codec, enc = ENCODERS[name]
    data = payload(size)
    out, issue = decompress(codec, enc(data), DEFAULT_LIMITS)
    assert issue is None
    assert out == data


@pytest.mark.parametrize("name", sorted(ENCODERS))
def test_accepts_memoryview_and_bytearray(name):
    codec, enc = ENCODERS[name]
    data = payload(5000)
    blob = b"xx" + enc(data) + b"yy"
    assert decompress(codec, memoryview(blob)[2:-2], DEFAULT_LIMITS) == (data, None)
    assert decompress(codec, bytearray(blob[2:-2]), DEFAULT_LIMITS) == (data, None)


def test_codec_none_passthrough():
    assert decompress(0, b"abc", DEFAULT_LIMITS) == (b"abc", None)


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codec(codec):
    out, issue = decompress(codec, b"whatever", DEFAULT_LIMITS)
    assert out is None
    assert issue.code == "records.decompression_failed"
    assert f"unknown({codec})" in issue.message


# --- xxh32 and the Kafka 0.8/0.9 LZ4 header checksum -------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", 0x02CC5D05),
        (b"a", 0x550D7456),
        (b"abc", 0x32D153FF),
        (b"Nobody inspects the spammish repetition", 0xE2293B2F),  # python-xxhash's README
    ],
)
def test_xxh32_reference_values(data, expected):
    assert xxh32(data) == expected


@pytest.mark.parametrize("store_size", [False, True])
@pytest.mark.parametrize("block_size", [lz4.frame.BLOCKSIZE_MAX64KB, lz4.frame.BLOCKSIZE_MAX4MB])
@pytest.mark.parametrize("checksums", [False, True])
def test_xxh32_agrees_with_liblz4_header_checksum(store_size, block_size, checksums):
    frame = lz4.frame.compress(
        b"x" * 100, store_size=store_size, block_size=block_size, content_checksum=checksums
    )
    hc_pos = 6 + (8 if store_size else 0)
    assert frame[hc_pos] == (xxh32(frame[4:hc_pos]) >> 8) & 0xFF


@pytest.mark.parametrize("size", [0, 10, 100_000])
def test_lz4_old_kafka_broken_header_checksum(old_kafka_lz4, size):
    data = payload(size)
    blob = old_kafka_lz4(data)
    assert blob[6] != (xxh32(blob[4:6]) >> 8) & 0xFF  # really the broken checksum
    with pytest.raises(RuntimeError):  # liblz4 refuses it as is
        lz4.frame.decompress(blob)
    out, issue = decompress(3, blob, DEFAULT_LIMITS)
    assert out == data
    assert issue.severity is Severity.NOTE
    assert issue.code == "records.lz4_legacy_checksum"
    assert kcodec.lz4_decode_old_kafka(blob) == data  # kafka-python's own reading agrees


def test_lz4_old_kafka_checksum_with_content_size():
    frame = bytearray(lz4.frame.compress(b"hello" * 50, store_size=True, block_linked=False))
    frame[14] = (xxh32(bytes(frame[:14])) >> 8) & 0xFF  # over magic + descriptor, as Kafka 0.8 did
    out, issue = decompress(3, bytes(frame), DEFAULT_LIMITS)
    assert out == b"hello" * 50
    assert issue.code == "records.lz4_legacy_checksum"


def test_lz4_wrong_header_checksum_is_refused():
    frame = bytearray(lz4.frame.compress(b"hello" * 50))
    hc_pos = 14
    good = frame[hc_pos]
    broken = (xxh32(bytes(frame[:hc_pos])) >> 8) & 0xFF
    frame[hc_pos] = next(v for v in range(256) if v not in (good, broken))
    out, issue = decompress(3, bytes(frame), DEFAULT_LIMITS)
    assert out is None
    assert issue.code == "records.decompression_failed"
    assert "lz4" in issue.message


# --- limits -----------------------------------------------------------------------------------


def _gzip_zeros(total: int, member: int = 128 * MiB) -> bytes:
    """gzip of `total` zero bytes, produced in a streaming way (never holding it in memory)."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    zero = bytes(MiB)
    parts = [c.compress(zero) for _ in range(member // MiB)]
    parts.append(c.flush())
    one = b"".join(parts)
    return one * (total // member)  # concatenated gzip members, a valid gzip stream


def _assert_refused(codec: int, blob: bytes, limits: Limits, max_peak: int, max_seconds: float = 5.0):
    tracemalloc.start()
    t = time.perf_counter()
    try:
        out, issue = decompress(codec, blob, limits)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - t < max_seconds
    assert out is None
    assert issue.severity is Severity.ERROR
    assert issue.code == "records.decompression_limit", issue
    assert peak < max_peak, peak
    return issue


def test_gzip_bomb_1gib_refused_with_bounded_memory():
    blob = _gzip_zeros(1 << 30)
    assert len(blob) < 2 * MiB
    # cap = 64 MiB; one 4 MiB step past it at most
    _assert_refused(1, blob, DEFAULT_LIMITS, max_peak=64 * MiB + 12 * MiB)


def test_gzip_trailer_claiming_more_than_the_cap_is_refused_uninflated():
    """A gzip blob whose last member's ISIZE (one deflate can reach) is over the cap is refused
    on that claim, nothing inflated; a trailer that lies low is still stopped by the streaming
    cap."""
    blob = _gzip_zeros(128 * MiB)  # one member
    t = time.process_time()
    out, issue = decompress(1, blob, DEFAULT_LIMITS)
    assert time.process_time() - t < 0.05  # inflating 64 MiB takes ~0.3 s
    assert out is None and issue.code == "records.decompression_limit"
    assert f"claims {128 * MiB} decompressed bytes" in issue.message, issue.message
    lie = blob[:-4] + struct.pack("<I", 1000)
    issue = _assert_refused(1, lie, DEFAULT_LIMITS, max_peak=64 * MiB + 12 * MiB)
    assert "expands beyond" in issue.message, issue.message


def test_small_gzip_bomb_against_small_limit():
    blob = gzip.compress(bytes(10 * MiB))
    issue = _assert_refused(1, blob, Limits(max_output=MiB), max_peak=3 * MiB)
    assert "gzip" in issue.message


def test_ratio_limit():
    blob = gzip.compress(bytes(MiB), 9)  # ~1000:1
    assert decompress(1, blob, DEFAULT_LIMITS)[0] == bytes(MiB)  # under ratio_grace
    limits = Limits(max_ratio=100, ratio_grace=0)
    assert decompress(1, blob, limits)[1].code == "records.decompression_limit"
    limits = Limits(max_ratio=0)  # 0 disables the ratio limit
    assert decompress(1, blob, limits)[0] == bytes(MiB)


def test_zstd_bomb_without_content_size():
    c = zstandard.ZstdCompressor(level=3, write_content_size=False).compressobj()
    zero = bytes(MiB)
    blob = b"".join([c.compress(zero) for _ in range(1024)] + [c.flush()])
    assert zstandard.frame_content_size(blob) == -1
    _assert_refused(4, blob, DEFAULT_LIMITS, max_peak=64 * MiB + 12 * MiB)
    _assert_refused(4, blob, Limits(max_output=MiB), max_peak=6 * MiB)


def test_zstd_frame_claiming_huge_size_is_refused_before_decompressing():
    # magic, frame header descriptor: FCS field 8 bytes + single segment, content size 2^40,
    # then one last raw block of 3 bytes ("abc")
    blob = b"\x28\xb5\x2f\xfd" + bytes([0xE0]) + struct.pack("<Q", 1 << 40) + b"\x19\x00\x00abc"
    assert zstandard.frame_content_size(blob) == 1 << 40
    issue = _assert_refused(4, blob, DEFAULT_LIMITS, max_peak=MiB, max_seconds=0.5)
    assert str(1 << 40) in issue.message


def test_lz4_bomb_and_lz4_frame_claiming_huge_size():
    c = lz4.frame.LZ4FrameCompressor(block_linked=False)
    zero = bytes(MiB)
    blob = b"".join([c.begin()] + [c.compress(zero) for _ in range(256)] + [c.flush()])
    _assert_refused(3, blob, DEFAULT_LIMITS, max_peak=64 * MiB + 40 * MiB)
    _assert_refused(3, blob, Limits(max_output=MiB), max_peak=12 * MiB)
    # a frame whose header claims 2^40 bytes (checksum recomputed so only the size is a lie)
    frame = bytearray(lz4.frame.compress(b"x" * 100, store_size=True))
    frame[6:14] = struct.pack("<Q", 1 << 40)
    frame[14] = (xxh32(bytes(frame[4:14])) >> 8) & 0xFF
    issue = _assert_refused(3, bytes(frame), DEFAULT_LIMITS, max_peak=MiB, max_seconds=0.5)
    assert str(1 << 40) in issue.message


def test_snappy_claiming_huge_sizes_is_refused_before_allocating():
    raw = b"\xff\xff\xff\xff\x0f" + b"\x00" * 20  # uncompressed length 2^32 - 1
    issue = _assert_refused(2, raw, DEFAULT_LIMITS, max_peak=MiB, max_seconds=0.5)
    assert str(0xFFFFFFFF) in issue.message
    block = b"\xfe\xff\xff\x1f" + b"\x00" * 10  # ~64 MiB claimed per block, 40 blocks
    xerial = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + (struct.pack(">i", len(block)) + block) * 40
    _assert_refused(2, xerial, DEFAULT_LIMITS, max_peak=MiB, max_seconds=0.5)


def test_snappy_bomb_within_claimed_limit_still_checked_by_ratio():
    data = bytes(8 * MiB)
    blob = kcodec.snappy_encode(data, xerial_compatible=False)
    assert decompress(2, blob, DEFAULT_LIMITS)[0] == data
    assert decompress(2, blob, Limits(max_output=MiB))[1].code == "records.decompression_limit"


# --- corruption never raises ------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ENCODERS))
def test_truncated_blobs_fail_cleanly(name):
    codec, enc = ENCODERS[name]
    data = payload(20_000)
    blob = enc(data)
    for cut in list(range(0, min(len(blob), 64))) + list(range(64, len(blob), 97)):
        out, issue = decompress(codec, blob[:cut], DEFAULT_LIMITS)
        if out is None:
            assert issue.code == "records.decompression_failed"
            assert CODEC_NAMES[codec] in issue.message
        else:
            # a cut at a block boundary of a raw-block format can decode to a prefix
            assert data.startswith(out)


@pytest.mark.parametrize("name", sorted(ENCODERS))
def test_flipped_bytes_never_raise(name):
    codec, enc = ENCODERS[name]
    blob = enc(payload(5000))
    for i in range(len(blob)):
        bad = bytearray(blob)
        bad[i] ^= 0xFF
        out, issue = decompress(codec, bytes(bad), DEFAULT_LIMITS)
        assert out is not None or issue.code in (
            "records.decompression_failed",
            "records.decompression_limit",
        )


PREFIXES = {
    1: [b"", b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"],
    2: [b"", b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01"],
    3: [b"", b"\x04\x22\x4d\x18\x60\x40\x82", b"\x04\x22\x4d\x18\x68\x40"],
    4: [b"", b"\x28\xb5\x2f\xfd", b"\x28\xb5\x2f\xfd\x20"],
}


@settings(max_examples=400, deadline=1000, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([(c, p) for c, ps in PREFIXES.items() for p in ps]), st.binary(max_size=300))
def test_random_bytes_never_raise(codec_prefix, tail):
    codec, prefix = codec_prefix
    out, issue = decompress(codec, prefix + tail, Limits(max_output=4 * MiB))
    assert out is not None or issue.code in ("records.decompression_failed", "records.decompression_limit")


def test_declared_size_is_read_from_each_codec_framing():
    """What read and stats judge a batch by (they inflate nothing): the size the codec's own
    framing declares; None when it declares none or the framing is not the codec's."""
    from analyzer.dissect.codecs import declared_size

    p = payload(200_000)
    assert declared_size(1, gzip.compress(p, mtime=0)) == len(p)
    # several members: the last one's trailer, a lower bound of the whole
    assert declared_size(1, gzip.compress(p, mtime=0) + gzip.compress(p[:500], mtime=0)) == 500
    assert declared_size(2, kcodec.snappy_encode(p, xerial_compatible=True, xerial_blocksize=32768)) == len(p)
    assert declared_size(2, kcodec.snappy_encode(p, xerial_compatible=False)) == len(p)
    assert declared_size(3, lz4.frame.compress(p, store_size=True)) == len(p)
    assert declared_size(3, lz4.frame.compress(p, store_size=False)) is None
    assert declared_size(4, zstandard.ZstdCompressor().compress(p)) == len(p)
    assert declared_size(4, zstandard.ZstdCompressor(write_content_size=False).compress(p)) is None
    # a trailer no deflate stream could reach (trailing bytes, damage) declares nothing
    bogus = gzip.compress(b"x" * 100, mtime=0)[:-4] + struct.pack("<I", 0xFFFFFFF0)
    assert declared_size(1, bogus) is None
    for codec in (1, 2, 3, 4, 7):
        assert declared_size(codec, b"") is None
        assert declared_size(codec, b"\x28\xb5\x2f\xfd\xff") is None or codec == 2
