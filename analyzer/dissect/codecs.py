"""Bounded decompression of Kafka record payloads.

``decompress(codec, data, limits)`` never raises on bad input and never allocates more than
the limit allows: every codec is driven in a streaming way with an output cap, and sizes that
a payload *claims* (snappy's uncompressed-length varint, the LZ4 frame content size, the zstd
frame content size, the gzip trailer's ISIZE) are checked before anything is allocated for them.

Codecs (attribute bits 0-2 of a message / batch):

* 1 gzip: RFC 1952, possibly several concatenated members (as ``GZIPInputStream`` reads);
  bytes after the last member that are not another gzip member are ignored, like Java does.
* 2 snappy: the xerial block framing Java clients write (``\\x82SNAPPY\\x00``, int32 version,
  int32 compatible version, then repeated ``[int32 length][raw snappy block]``), or a single raw
  snappy block (librdkafka and others).
* 3 lz4: one LZ4 frame. Kafka 0.8-0.9 (and magic 0 producers to this day, e.g. kafka-python)
  compute the frame header checksum over the 4 magic bytes too (KAFKA-3160); such a frame is
  accepted after recomputing the right checksum (pure-Python xxh32 over <= 18 bytes), and a
  NOTE ``records.lz4_legacy_checksum`` is returned along with the data.
* 4 zstd: one or more zstd frames, with or without content size.

Result: ``(data, None)`` on success, ``(data, note)`` for an accepted oddity, ``(None, error)``
with code ``records.decompression_limit`` (the output would exceed the limits) or
``records.decompression_failed`` (corrupt, truncated, unknown codec, codec library missing).

The output cap for one blob is ``min(max_output, max(ratio_grace, max_ratio * len(data)))``:
the ratio limit only applies to outputs bigger than ``ratio_grace`` since a small record batch
of identical values legitimately compresses far beyond 1000:1 with zstd.
"""

from __future__ import annotations

import struct
import threading
import zlib
from functools import cache
from typing import Any

from analyzer.issues import (
    RECORDS_DECOMPRESSION_FAILED,
    RECORDS_DECOMPRESSION_LIMIT,
    RECORDS_LZ4_LEGACY_CHECKSUM,
)
from analyzer.model import Issue
from analyzer.plain import record

# The codec libraries are imported on first use (a capture without snappy, LZ4 or zstd batches,
# and every command that decodes no records, never loads them); None when one is not installed.


@cache
def _cramjam() -> Any:
    try:
        import cramjam
    except ImportError:  # pragma: no cover - the project depends on it
        return None
    return cramjam


@cache
def _lz4f() -> Any:
    try:
        import lz4.frame
    except ImportError:  # pragma: no cover
        return None
    return lz4.frame


@cache
def _zstd() -> Any:
    try:
        import zstandard
    except ImportError:  # pragma: no cover
        return None
    return zstandard


__all__ = [
    "CODEC_NAMES",
    "Limits",
    "DEFAULT_LIMITS",
    "decompress",
    "declared_size",
    "blob_cap",
    "codec_name",
    "xxh32",
]

CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

MiB = 1 << 20


@record(frozen=True)
class Limits:
    """Resource limits for decompression.

    max_output: bytes one compressed blob may expand to. Kafka's default max.message.bytes is
        1 MiB and the largest settings seen in practice are tens of MiB; 64 MiB lets any real
        batch through and still bounds memory.
    max_ratio: refuse outputs larger than ``max_ratio`` times the compressed size (once the
        output is above ``ratio_grace``). Deflate cannot exceed ~1032:1, so 1000 only trips on
        a near-perfect gzip bomb; lz4 tops out near 255:1; zstd bombs reach 30000:1.
    ratio_grace: outputs up to this size are never refused for their ratio.
    max_depth: nesting of compressed message sets inside compressed wrappers (magic 0/1). One
        level is what producers write; 4 leaves room for odd tools and bounds recursion.
    max_total_output: decompressed bytes one request or response may produce over all its
        records fields and blobs, nested wrappers included (decompressed buffers are kept in
        the Field tree): a frame packed with many small bombs, each under ``max_output``, or
        many partitions each under it, is still bounded (``--max-decompressed``).
    max_records: records decoded one by one per v2 batch or per compressed legacy wrapper
        (``--max-records``); the rest are counted (v2: framed by their lengths) and reported
        once. A real batch holds at most a few thousand records (max.message.bytes).
    max_issues: issues of one code listed per records field; the rest are counted in one
        ``records.issues_suppressed`` (a batch of a million malformed records says so once).
    max_connections: TCP connections tracked at once (``--max-connections``); past it the
        longest-idle are closed early (``stream.evicted``, counted once). ~4 KB each at rest.
    max_elements: array elements one message body may decode (``--max-elements``): past it
        decoding stops with ``decode.element_limit``. Arrays of fixed-size scalars are kept
        compact (element Fields built on demand) and spend the budget as any element does: past it
        their values are cut and the fields after them still decoded.
    """

    max_output: int = 64 * MiB
    max_ratio: int = 1000
    ratio_grace: int = 1 * MiB
    max_depth: int = 4
    max_total_output: int = 64 * MiB
    max_records: int = 100_000
    max_issues: int = 5
    max_elements: int = 100_000
    max_connections: int = 20_000

    @classmethod
    def from_settings(cls, settings: object) -> Limits:
        """The defaults overridden by ``max_records``, ``max_decompressed`` (MiB),
        ``max_elements`` and ``max_connections`` attributes of ``settings`` (a command line's
        namespace) when set."""
        kw: dict[str, int] = {}
        for attr, key, scale in (
            ("max_records", "max_records", 1),
            ("max_decompressed", "max_total_output", MiB),
            ("max_elements", "max_elements", 1),
            ("max_connections", "max_connections", 1),
        ):
            v = getattr(settings, attr, None)
            if v is not None:
                kw[key] = int(v) * scale
        return cls(**kw) if kw else DEFAULT_LIMITS


DEFAULT_LIMITS = Limits()


def codec_name(codec: int) -> str:
    name = CODEC_NAMES.get(codec)
    return name if name is not None else f"unknown({codec})"


def blob_cap(limits: Limits, clen: int) -> int:
    """What one compressed blob of ``clen`` bytes may expand to: ``max_output``, and the ratio
    limit above ``ratio_grace``."""
    own = limits.max_output
    if limits.max_ratio > 0:
        own = min(own, max(limits.ratio_grace, limits.max_ratio * clen))
    return own


# deflate's best ratio is about 1032:1: a gzip trailer claiming more is not a trailer
_DEFLATE_MAX_RATIO = 1032
_U32LE = struct.Struct("<I")  # gzip's ISIZE
_U64LE = struct.Struct("<Q")  # the LZ4 frame content size
_I32BE = struct.Struct(">i")  # a xerial block length


def declared_size(codec: int, data: bytes | bytearray | memoryview) -> int | None:
    """The decompressed size a blob declares in its codec's own framing, read without inflating
    anything: the zstd frame content size (of the first frame), the gzip trailer's ISIZE (of
    the last member: at least what the blob holds; only when deflate could reach it), snappy's
    uncompressed-length varints (every xerial block summed), the LZ4 frame content size. None
    when the framing declares none (zstd from librdkafka, most LZ4 frames) or is damaged: only
    inflating tells then."""
    n = len(data)
    # (slices compared as they are: a memoryview slice equals the bytes it holds, no copy)
    try:
        if codec == 4 and data[:4] == _ZSTD_MAGIC and (zstd := _zstd()) is not None:
            size = zstd.frame_content_size(bytes(data[:18]))
            return size if size >= 0 else None
        if codec == 1 and n >= 18 and data[0] == 0x1F and data[1] == 0x8B:
            (isize,) = _U32LE.unpack_from(data, n - 4)
            return isize if isize <= _DEFLATE_MAX_RATIO * n + 64 else None
        if codec == 3 and n >= 14 and data[:4] == _LZ4_MAGIC and data[4] & 0x08:
            return int(_U64LE.unpack_from(data, 6)[0])
        if codec == 2:
            if n >= 16 and data[:8] == _XERIAL_MAGIC:
                total, p = 0, 16
                while p + 4 <= n:
                    (blen,) = _I32BE.unpack_from(data, p)
                    p += 4
                    if blen < 0 or p + blen > n:
                        return None
                    ulen = _snappy_len(data, p, p + blen)
                    if ulen is None:
                        return None
                    total += ulen
                    p += blen
                return total
            return _snappy_len(data, 0, n)
    except (ValueError, struct.error):
        return None
    except Exception as exc:  # zstd: not a frame header after all (ZstdError)
        zstd = _zstd()
        if zstd is not None and isinstance(exc, zstd.ZstdError):
            return None
        raise
    return None


def decompress(
    codec: int, data: bytes | bytearray | memoryview, limits: Limits
) -> tuple[bytes | None, Issue | None]:
    """Decompress one blob; never raises on bad input. See the module docstring."""
    return decompress_capped(codec, data, limits, limits.max_output)


def inflated_size(codec: int, data: bytes | bytearray | memoryview, limits: Limits) -> int | None:
    """The size ``data`` decompresses to, within ``limits`` (None: it does not decompress, or
    not within them). zstd is counted as it streams (one pass, nothing kept); the other codecs
    are inflated by :func:`decompress`."""
    if codec == 4 and len(data) >= 4 and data[:4] == _ZSTD_MAGIC and (zstd := _zstd()) is not None:
        allowed = limits.max_output
        if limits.max_ratio > 0:
            allowed = min(allowed, max(limits.ratio_grace, limits.max_ratio * len(data)))
        try:
            r = _zstd_dctx().stream_reader(bytes(data), read_across_frames=True)
            size = 0
            while chunk := r.read(1 << 16):
                size += len(chunk)
                if size > allowed:
                    return None
        except zstd.ZstdError:
            return None
        return size
    raw, _ = decompress(codec, data, limits)
    return None if raw is None else len(raw)


def decompress_capped(
    codec: int, data: bytes | bytearray | memoryview, limits: Limits, cap: int
) -> tuple[bytes | None, Issue | None]:
    """``decompress`` with the absolute output cap lowered to ``cap`` (a remaining budget)."""
    if type(data) is not bytes:
        data = bytes(data)
    allowed = min(limits.max_output, cap)
    if limits.max_ratio > 0:
        allowed = min(allowed, max(limits.ratio_grace, limits.max_ratio * len(data)))
    allowed = max(allowed, 0)
    if codec == 0:
        if len(data) > allowed:
            return None, _limit("none", len(data), allowed, limits, len(data))
        return data, None
    if codec == 1:
        return _gzip(data, allowed, limits)
    if codec == 2:
        return _snappy(data, allowed, limits)
    if codec == 3:
        return _lz4(data, allowed, limits)
    if codec == 4:
        return _zstd_decompress(data, allowed, limits)
    return None, _failed(codec_name(codec), "unknown compression codec")


def _failed(name: str, why: str) -> Issue:
    return RECORDS_DECOMPRESSION_FAILED(f"{name} decompression failed: {why}")


def _limit(
    name: str, size: int | None, allowed: int, limits: Limits, clen: int, claimed: bool = False
) -> Issue:
    if claimed:
        what = f"claims {size} decompressed bytes"
    elif size is None:
        what = f"expands beyond {allowed} bytes"
    else:
        what = f"expands to {size} bytes"
    return RECORDS_DECOMPRESSION_LIMIT(
        f"{name} payload of {clen} bytes {what}: refused (limit {allowed} bytes;"
        f" max_output={limits.max_output}, max_ratio={limits.max_ratio})",
    )


# --- gzip ------------------------------------------------------------------------------------


_GZIP_STEP = 4 * MiB


def _gzip(data: bytes, allowed: int, limits: Limits) -> tuple[bytes | None, Issue | None]:
    # the trailer's ISIZE (one that deflate could reach): a blob that says it holds more than it
    # may expand to is refused before it is inflated, as zstd's, LZ4's and snappy's declared
    # sizes are (inflating 48 such blobs of 64 MiB took 25 s); read and stats judge it so too.
    # Bytes after the last member (ignored below, as Java does) would be read as the ISIZE:
    # no producer writes them, a damaged or hostile blob may be refused on them.
    size = declared_size(1, data)
    if size is not None and size > allowed:
        return None, _limit("gzip", size, allowed, limits, len(data), claimed=True)
    out: list[bytes] = []
    total = 0
    buf = data
    d = zlib.decompressobj(31)  # gzip wrapper only, like Java's GZIPInputStream
    try:
        while True:
            # bounded calls: on refusal the peak stays near the cap instead of twice it
            chunk = d.decompress(buf, min(allowed + 1 - total, _GZIP_STEP))
            total += len(chunk)
            out.append(chunk)
            if total > allowed:
                return None, _limit("gzip", None, allowed, limits, len(data))
            if d.eof:
                rest = d.unused_data
                if rest[:2] != b"\x1f\x8b":  # trailing garbage is ignored, as Java does
                    break
                d = zlib.decompressobj(31)
                buf = rest
            elif d.unconsumed_tail or len(chunk) == _GZIP_STEP:
                buf = d.unconsumed_tail
            else:  # all input consumed, all output produced, no end of stream
                return None, _failed("gzip", "truncated gzip stream")
    except zlib.error as e:
        return None, _failed("gzip", str(e))
    return b"".join(out), None


# --- snappy ----------------------------------------------------------------------------------

_XERIAL_MAGIC = b"\x82SNAPPY\x00"


def _snappy_len(data: bytes | bytearray | memoryview, start: int, end: int) -> int | None:
    """The uncompressed-length varint (uint32, at most 5 bytes) of a raw snappy block."""
    result = 0
    shift = 0
    p = start
    while p < end and p < start + 5:
        b = data[p]
        p += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result if result <= 0xFFFFFFFF else None
        shift += 7
    return None


def _snappy(data: bytes, allowed: int, limits: Limits) -> tuple[bytes | None, Issue | None]:
    cramjam = _cramjam()
    if cramjam is None:  # pragma: no cover
        return None, _failed("snappy", "no snappy library installed (cramjam)")
    n = len(data)
    blocks: list[tuple[int, int, int]] = []  # (start, end, uncompressed length)
    if data[:8] == _XERIAL_MAGIC and n >= 16:
        p = 16
        while p < n:
            if p + 4 > n:
                return None, _failed("snappy", f"truncated xerial block length at {p}")
            (blen,) = struct.unpack_from(">i", data, p)
            p += 4
            if blen < 0 or p + blen > n:
                return None, _failed("snappy", f"xerial block of {blen} bytes at {p - 4} exceeds the data")
            blocks.append((p, p + blen, 0))
            p += blen
    else:
        blocks.append((0, n, 0))
    total = 0
    for i, (s, e, _) in enumerate(blocks):
        ulen = _snappy_len(data, s, e)
        if ulen is None:
            return None, _failed("snappy", f"bad uncompressed length varint at {s}")
        total += ulen
        if total > allowed:
            return None, _limit("snappy", total, allowed, limits, n, claimed=True)
        blocks[i] = (s, e, ulen)
    out = bytearray(total)
    mv = memoryview(data)
    omv = memoryview(out)
    pos = 0
    try:
        for s, e, ulen in blocks:
            got = cramjam.snappy.decompress_raw_into(mv[s:e], omv[pos : pos + ulen])
            if got != ulen:
                return None, _failed(
                    "snappy", f"block at {s} decompressed to {got} bytes, header says {ulen}"
                )
            pos += ulen
    except cramjam.DecompressionError as e:
        return None, _failed("snappy", str(e))
    del omv  # views are dropped, not release()d: release() can raise BufferError
    return bytes(out), None


# --- lz4 -------------------------------------------------------------------------------------

_P1, _P2, _P3, _P4, _P5 = 0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F, 0x165667B1
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 in pure Python (only used on LZ4 frame headers: a few bytes)."""
    n = len(data)
    p = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        while p + 16 <= n:
            a, b, c, d = struct.unpack_from("<4I", data, p)
            v1 = (_rotl((v1 + a * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + b * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + c * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + d * _P2) & _M32, 13) * _P1) & _M32
            p += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while p + 4 <= n:
        (k,) = struct.unpack_from("<I", data, p)
        h = (_rotl((h + k * _P3) & _M32, 17) * _P4) & _M32
        p += 4
    while p < n:
        h = (_rotl((h + data[p] * _P5) & _M32, 11) * _P1) & _M32
        p += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


_LZ4_MAGIC = b"\x04\x22\x4d\x18"


def _lz4(data: bytes, allowed: int, limits: Limits) -> tuple[bytes | None, Issue | None]:
    lz4f = _lz4f()
    if lz4f is None:  # pragma: no cover
        return None, _failed("lz4", "no lz4 library installed")
    n = len(data)
    if n < 7 or data[:4] != _LZ4_MAGIC:
        return None, _failed("lz4", "not an LZ4 frame (bad magic)")
    flg = data[4]
    if flg >> 6 != 1:
        return None, _failed("lz4", f"unsupported LZ4 frame version {flg >> 6}")
    hc_pos = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if hc_pos >= n:
        return None, _failed("lz4", "truncated LZ4 frame header")
    content_size = None
    if flg & 0x08:
        (content_size,) = struct.unpack_from("<Q", data, 6)
        if content_size > allowed:
            return None, _limit("lz4", content_size, allowed, limits, n, claimed=True)
    issue = None
    good_hc = (xxh32(data[4:hc_pos]) >> 8) & 0xFF
    if data[hc_pos] != good_hc:
        if data[hc_pos] == (xxh32(data[:hc_pos]) >> 8) & 0xFF:
            data = data[:hc_pos] + bytes((good_hc,)) + data[hc_pos + 1 :]
            issue = RECORDS_LZ4_LEGACY_CHECKSUM(
                "LZ4 frame header checksum computed over the magic bytes (Kafka 0.8/0.9 framing, KAFKA-3160)",
            )
        else:
            return None, _failed("lz4", "LZ4 frame header checksum mismatch")
    d = lz4f.LZ4FrameDecompressor()
    out: list[bytes] = []
    total = 0
    # LZ4FrameDecompressor allocates max_length up front: grow the request geometrically.
    step = content_size + 1 if content_size is not None else max(64 * 1024, 4 * n)
    buf = data
    try:
        while True:
            want = min(allowed + 1 - total, step)
            chunk = d.decompress(buf, max_length=want)
            buf = b""
            total += len(chunk)
            out.append(chunk)
            if total > allowed:
                return None, _limit("lz4", None, allowed, limits, n)
            if d.eof:
                break
            if d.needs_input:
                return None, _failed("lz4", "truncated LZ4 frame")
            step = min(step * 2, 16 * MiB)
    except RuntimeError as e:
        return None, _failed("lz4", str(e))
    return b"".join(out), issue


# --- zstd ------------------------------------------------------------------------------------

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


_ZSTD_LOCAL = threading.local()


def _zstd_dctx():
    """This thread's decompression context (making one per batch costs more than decoding it)."""
    d = getattr(_ZSTD_LOCAL, "dctx", None)
    if d is None:
        d = _ZSTD_LOCAL.dctx = _zstd().ZstdDecompressor()
    return d


def _zstd_decompress(data: bytes, allowed: int, limits: Limits) -> tuple[bytes | None, Issue | None]:
    zstd = _zstd()
    if zstd is None:  # pragma: no cover
        return None, _failed("zstd", "no zstandard library installed")
    n = len(data)
    if n == 0:
        return None, _failed("zstd", "empty input")
    whole = False  # whether each frame may be fed in one call
    if data[:4] == _ZSTD_MAGIC:
        try:
            size = zstd.frame_content_size(data[:18])
            if size > allowed:
                return None, _limit("zstd", size, allowed, limits, n, claimed=True)
            if size >= 0:
                # one frame that declares its size (the Java client): one call into a buffer of
                # exactly that size, which libzstd refuses to overrun
                return _zstd_dctx().decompress(data, allow_extra_data=False), None
        except zstd.ZstdError:
            pass  # several frames, or damage: the loop below says which
        try:
            # no declared size (librdkafka): a read bounded by the budget tells the real size;
            # within budget, the loop below feeds each frame in one call instead of in steps
            r = _zstd_dctx().stream_reader(data, read_across_frames=True)
            size = 0
            while chunk := r.read(1 << 18):
                size += len(chunk)
                if size > allowed:
                    return None, _limit("zstd", None, allowed, limits, n)
            whole = True
        except zstd.ZstdError:
            pass  # damage: the loop below says where
    mv = memoryview(data)
    out: list[bytes] = []
    total = 0
    pos = 0
    try:
        while pos < n:
            if data[pos : pos + 4] == _ZSTD_MAGIC:
                size = zstd.frame_content_size(data[pos : pos + 18])
                if size > allowed - total:
                    return None, _limit("zstd", total + size, allowed, limits, n, claimed=True)
            d = _zstd_dctx().decompressobj()
            # A zstd block of 4 input bytes can expand to 128 KiB (RLE), so the input is fed in
            # slices sized so that one call cannot overshoot the remaining budget by much.
            p = pos
            while not d.eof:
                if p >= n:
                    return None, _failed("zstd", "truncated zstd frame")
                step = n if whole else min(64 * 1024, max(64, (allowed - total) >> 17))
                chunk = d.decompress(mv[p : p + step])
                p += step
                total += len(chunk)
                out.append(chunk)
                if total > allowed:
                    return None, _limit("zstd", None, allowed, limits, n)
            pos = min(p, n) - len(d.unused_data)
    except zstd.ZstdError as e:
        return None, _failed("zstd", str(e))
    return b"".join(out), None
