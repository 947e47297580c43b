"""Amplification captures: a few bytes on the wire that claim (or inflate to) a great deal.

Each builder returns the bytes of a pcap; :func:`bomb_cases` names them with the issue codes
that must name the damage. They are the cases of issue #19: a zstd control batch of 1 MiB of
zeros claiming 2^31-1 records (one, and eight in one response), a legacy gzip wrapper of ~2
million empty messages, 48 partitions of 64 MiB zstd / gzip in one request, a Metadata response
with 2 million topics, an array of 4 million int32 (in a Metadata response, and as the partition
indexes of an OffsetFetch request), an OffsetFetch response of a million partitions, and 100,000
connections each holding half a frame.
"""

from __future__ import annotations

import gzip
import random
import struct
import zlib
from dataclasses import dataclass

import zstandard

from analyzer.dissect.crc import crc32c
from tests.helpers.packets import Conversation
from tests.hostile.gen import pcap_bytes, raw_tcp, timed

MiB = 1 << 20
BIG_MSS = 60000  # big frames in few packets (the reader does not care about the MTU)


def _i16(v: int) -> bytes:
    return struct.pack(">h", v)


def _i32(v: int) -> bytes:
    return struct.pack(">i", v)


def _str(s: str) -> bytes:
    b = s.encode()
    return _i16(len(b)) + b


def _frame(p: bytes) -> bytes:
    return _i32(len(p)) + p


def v2_batch(payload: bytes, attrs: int, count: int, base_offset: int = 0) -> bytes:
    """A v2 record batch around ``payload`` exactly as given (compressed or not), good CRC."""
    after_crc = struct.pack(">hiqqqhii", attrs, 0, 0, 0, -1, -1, -1, count) + payload
    body = struct.pack(">ib", 0, 2) + struct.pack(">I", crc32c(after_crc)) + after_crc
    return struct.pack(">qi", base_offset, len(body)) + body


def legacy_message(value: bytes | None, codec: int = 0, offset: int = 0) -> bytes:
    """A magic 0 message (null key)."""
    v = _i32(-1) if value is None else _i32(len(value)) + value
    rest = struct.pack(">bb", 0, codec) + _i32(-1) + v
    return struct.pack(">qi", offset, 4 + len(rest)) + struct.pack(">I", zlib.crc32(rest)) + rest


def produce_v3(corr: int, partitions: list[bytes], client: str = "bomb") -> bytes:
    """Produce v3 request: one topic, one partition per records field."""
    body = _i16(-1) + _i16(1) + _i32(30000) + _i32(1) + _str("t") + _i32(len(partitions))
    for i, recs in enumerate(partitions):
        body += _i32(i) + _i32(len(recs)) + recs
    return _frame(struct.pack(">hhi", 0, 3, corr) + _str(client) + body)


def produce_v2(corr: int, records: bytes, client: str = "bomb") -> bytes:
    """Produce v2 request (legacy message sets): one topic, one partition."""
    body = _i16(1) + _i32(30000) + _i32(1) + _str("t") + _i32(1) + _i32(0) + _i32(len(records)) + records
    return _frame(struct.pack(">hhi", 0, 2, corr) + _str(client) + body)


def fetch_v4_request(corr: int, client: str = "bomb") -> bytes:
    body = _i32(-1) + _i32(500) + _i32(1) + _i32(50 * MiB) + b"\x00"
    body += _i32(1) + _str("t") + _i32(1) + _i32(0) + struct.pack(">q", 0) + _i32(MiB)
    return _frame(struct.pack(">hhi", 1, 4, corr) + _str(client) + body)


def fetch_v4_response(corr: int, records: bytes) -> bytes:
    part = _i32(0) + _i16(0) + struct.pack(">qq", 100, 100) + _i32(-1) + _i32(len(records)) + records
    body = _i32(0) + _i32(1) + _str("t") + _i32(1) + part
    return _frame(_i32(corr) + body)


def metadata_v0_request(corr: int, client: str = "bomb") -> bytes:
    return _frame(struct.pack(">hhi", 3, 0, corr) + _str(client) + _i32(0))


def metadata_v0_response(corr: int, topics: int = 1, replicas: int = 1) -> bytes:
    """``topics`` empty-named topics without partitions, or (topics=1) one topic with one
    partition listing ``replicas`` replica ids."""
    brokers = _i32(1) + _i32(1) + _str("b") + _i32(9092)
    if topics == 1:
        part = _i16(0) + _i32(0) + _i32(1) + _i32(replicas) + b"\x00\x00\x00\x01" * replicas + _i32(0)
        tops = _i32(1) + _i16(0) + _str("t") + _i32(1) + part
    else:
        tops = _i32(topics) + (_i16(0) + _i16(0) + _i32(0)) * topics
    return _frame(_i32(corr) + brokers + tops)


def one_exchange(req: bytes, resp: bytes | None) -> bytes:
    c = Conversation().handshake()
    c.send(0, req, mss=BIG_MSS)
    if resp is not None:
        c.send(1, resp, mss=BIG_MSS)
    c.close()
    return pcap_bytes(timed(c.pkts))


def zstd_zeros(n: int = MiB) -> bytes:
    """zstd of ``n`` zero bytes without a content size (as librdkafka writes): 38 bytes or so."""
    zc = zstandard.ZstdCompressor(write_content_size=False)
    return zc.compress(bytes(n))


def control_zeros_fetch(batches: int = 1) -> bytes:
    recs = b"".join(v2_batch(zstd_zeros(), 0x34, 2**31 - 1, i) for i in range(batches))
    return one_exchange(fetch_v4_request(1), fetch_v4_response(1, recs))


def legacy_gzip_wrapper(n: int = 1_970_000) -> bytes:
    inner = legacy_message(b"") * n  # every inner offset 0: compresses ~250:1
    wrapper = legacy_message(gzip.compress(inner, 9, mtime=0), codec=1, offset=n - 1)
    return one_exchange(produce_v2(1, wrapper), None)


def partitions_bomb(codec: int, n: int = 48, size: int = 64 * MiB, sparse: bool = False) -> bytes:
    """One request with ``n`` partitions, each one batch of one record whose value is ``size``
    - 64 zero bytes, compressed (1 gzip, 4 zstd). ``sparse``: a random byte every 128, so that
    each blob stays under the per-blob ratio limit and only the per-message budget stops them."""
    value = size - 64
    payload = bytearray(value)
    if sparse:
        payload[::128] = random.Random(1).randbytes(len(range(0, value, 128)))
    rec_body = b"\x00\x00\x00\x01" + _zz_varint(value)  # attributes, ts delta, offset delta, key null
    rec_tail = b"\x00"  # no headers
    rec_len = len(rec_body) + value + len(rec_tail)
    head = _zz_varint(rec_len) + rec_body
    if codec == 4:
        zc = zstandard.ZstdCompressor(level=3)
        co = zc.compressobj(size=len(head) + value + 1)
        blob = co.compress(head) + co.compress(payload) + co.compress(rec_tail) + co.flush()
    else:
        zo = zlib.compressobj(9, zlib.DEFLATED, 31)
        blob = zo.compress(head) + zo.compress(payload) + zo.compress(rec_tail) + zo.flush()
    batch = v2_batch(blob, codec, 1)
    return one_exchange(produce_v3(1, [batch] * n), None)


def _zz_varint(v: int) -> bytes:
    z = (v << 1) ^ (v >> 63)
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def metadata_topics(n: int = 2_000_000) -> bytes:
    return one_exchange(metadata_v0_request(1), metadata_v0_response(1, topics=n))


def int32_array(n: int = 4_000_000) -> bytes:
    return one_exchange(metadata_v0_request(1), metadata_v0_response(1, replicas=n))


def offset_fetch_v1_request(corr: int, n: int, client: str = "bomb") -> bytes:
    """OffsetFetch v1 request: group "g", one topic listing ``n`` int32 partition indexes."""
    parts = struct.pack(f">{n}i", *range(n)) if n < 1000 else bytes(4 * n)
    body = _str("g") + _i32(1) + _str("t") + _i32(n) + parts
    return _frame(struct.pack(">hhi", 9, 1, corr) + _str(client) + body)


def offset_fetch_v1_response(corr: int, n: int) -> bytes:
    """OffsetFetch v1 response: one topic with ``n`` partitions (index, offset, null metadata,
    no error): a struct array, 16 bytes an element."""
    part = _i32(0) + struct.pack(">q", 42) + _i16(-1) + _i16(0)
    return _frame(_i32(corr) + _i32(1) + _str("t") + _i32(n) + part * n)


def offset_fetch_4m_request(n: int = 4_000_000) -> bytes:
    """16 MB on the wire: one OffsetFetch v1 request whose only topic lists ``n`` partitions
    (answered by a small response)."""
    return one_exchange(offset_fetch_v1_request(1, n), offset_fetch_v1_response(1, 1))


def offset_fetch_4m_response(n: int = 1_000_000) -> bytes:
    """The same in a response: one topic of ``n`` partitions (16 MB on the wire, 16 bytes each)."""
    return one_exchange(offset_fetch_v1_request(1, 1), offset_fetch_v1_response(1, n))


def half_open_flood(n: int = 50_000) -> bytes:
    """``n`` connections, each a SYN then half of a 200-byte ApiVersions frame, never closed:
    2.5 times the connections tracked at once by default (``max_connections``, 20,000), so the
    table fills to its bound (the memory the budget is about) and 30,000 are evicted; each
    connection costs some 140 us of CPU in every command, so twice as many would only repeat
    the evictions for twice the suite's time."""
    frame = struct.pack(">ihhi", 196, 18, 3, 1) + b"\x00" * 188
    half = frame[:100]
    pkts = []
    broker = 0x0A000002
    for i in range(n):
        src = 0x0A010000 + (i >> 14)
        sport = 1024 + (i & 0x3FFF)
        pkts.append(raw_tcp(src, sport, broker, 9092, 1000, 0x02, b""))
        pkts.append(raw_tcp(src, sport, broker, 9092, 1001, 0x18, half))
    return pcap_bytes([(1700000000.0 + i * 1e-5, p) for i, p in enumerate(pkts)])


@dataclass
class Bomb:
    """A capture, the issue codes (any of ``codes``) the export must hold, and what every
    command (read, stats, export --records, check) must say (any of ``named``): read and stats
    inflate no v2 batch, so they name a batch by its header and the size its codec declares."""

    build: object
    codes: tuple[str, ...]
    named: tuple[str, ...] = ()
    shows: str = ""  # the partial result every command must still show (an API name)


_CONTROL = ("records.bad_control_count",)
_LIMIT = ("records.decompression_limit", "records.decompression_budget")
_ELEMENTS = ("decode.element_limit",)

BOMBS: dict[str, Bomb] = {
    "zstd-control-batch-of-zeros": Bomb(lambda: control_zeros_fetch(1), ("records.record_limit",), _CONTROL),
    "eight-zstd-control-batches": Bomb(lambda: control_zeros_fetch(8), ("records.record_limit",), _CONTROL),
    "legacy-gzip-wrapper-of-2m-messages": Bomb(
        legacy_gzip_wrapper, ("records.record_limit",), ("records.record_limit",)
    ),
    # zeros compress beyond the per-blob ratio limit: each blob is refused on its own
    "48-partitions-of-64mib-zstd": Bomb(
        lambda: partitions_bomb(4), ("records.decompression_limit",), ("records.decompression_limit",)
    ),
    # deflate reaches ~1030:1, over the per-blob ratio limit: each blob is refused on its own
    "48-partitions-of-64mib-gzip": Bomb(lambda: partitions_bomb(1), _LIMIT, _LIMIT),
    # blobs within their own limits: the per-message budget stops the third
    "48-partitions-of-8mib-zstd": Bomb(
        lambda: partitions_bomb(4, size=8 * MiB, sparse=True),
        ("records.decompression_budget",),
        ("records.decompression_budget",),
    ),
    "metadata-2m-topics": Bomb(metadata_topics, ("decode.element_limit",), ("decode.element_limit",)),
    # 16 MB on the wire: an array of scalars keeps the element budget's worth of values, says
    # so once, and the exchange is shown (request or response, top level or nested)
    "array-of-4m-int32": Bomb(int32_array, _ELEMENTS, _ELEMENTS, "Metadata"),
    "offset-fetch-request-of-4m-partitions": Bomb(
        offset_fetch_4m_request, _ELEMENTS, _ELEMENTS, "OffsetFetch"
    ),
    "offset-fetch-response-of-1m-partitions": Bomb(
        offset_fetch_4m_response, _ELEMENTS, _ELEMENTS, "OffsetFetch"
    ),
    # read says the evictions in words on stderr; every command names the half frames too
    "50k-half-open-connections": Bomb(
        half_open_flood, ("stream.evicted",), ("stream.evicted", "max_connections", "framing.incomplete")
    ),
}
