"""Capture files: pcap (both byte orders, micro/nanosecond), pcapng, gzip/zstd-compressed, stdin.

Parsing is plain ``struct`` over memoryviews of large chunks read from the file: no object per
packet but the ``(index, ts, linktype, data)`` tuple, and ``data`` is a zero-copy slice of the
chunk. The parsers (:func:`iter_pcap`, :func:`iter_pcapng`) are pure generators over an
iterator of byte chunks; only :class:`CaptureFile` opens files.

Damage never raises: the reader stops at the first unreadable record, keeps every packet before
it and records an :class:`~analyzer.model.Issue` in ``issues`` (``capture.truncated``,
``capture.corrupt``, ``capture.unknown_format``); a whole pcapng block that says something
impossible is skipped (``capture.bad_block``). Packets cut short by the snaplen are counted and
reported once (``capture.snaplen``).
"""

from __future__ import annotations

import os
import struct
import sys
import zlib
from collections.abc import Iterator
from typing import BinaryIO

from analyzer.issues import (
    CAPTURE_BAD_BLOCK,
    CAPTURE_BAD_OPTION,
    CAPTURE_CONCATENATED,
    CAPTURE_CORRUPT,
    CAPTURE_SNAPLEN,
    CAPTURE_TRUNCATED,
    CAPTURE_UNKNOWN_FORMAT,
)
from analyzer.model import Issue

CHUNK = 8 << 20
# No sane capture record is larger than this (the largest snaplen tools write is 256 KiB;
# jumbo-frame and USB captures stay far below). A length beyond it is corruption, and we refuse
# to allocate for it.
MAX_RECORD = 16 << 20

PCAP_MAGIC = {
    b"\xd4\xc3\xb2\xa1": ("<", 1e-6),
    b"\xa1\xb2\xc3\xd4": (">", 1e-6),
    b"\x4d\x3c\xb2\xa1": ("<", 1e-9),
    b"\xa1\xb2\x3c\x4d": (">", 1e-9),
}
PCAPNG_SHB = b"\x0a\x0d\x0d\x0a"
DSB_TLS_KEY_LOG = 0x544C534B  # pcapng Decryption Secrets Block type "TLSK": an NSS key log
GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class _Chunks:
    """Buffer over an iterator of chunks: ``need(n)`` makes ``n`` bytes available from ``pos``.

    Only the unread remainder is ever copied when a record straddles two chunks.
    """

    __slots__ = ("it", "buf", "pos", "consumed", "eof")

    def __init__(self, chunks: Iterator[bytes], origin: int = 0):
        self.it = chunks
        self.buf = memoryview(b"")
        self.pos = 0
        self.consumed = origin  # bytes of the stream before buf[0], plus the stream's origin
        self.eof = False

    def need(self, n: int) -> bool:
        while len(self.buf) - self.pos < n:
            if self.eof:
                return False
            chunk = next(self.it, None)
            if chunk is None:
                self.eof = True
                return False
            rest = self.buf[self.pos :]
            self.consumed += self.pos
            self.buf = memoryview(bytes(rest) + chunk if len(rest) else chunk)
            self.pos = 0
        return True

    @property
    def offset(self) -> int:
        return self.consumed + self.pos

    def remaining(self) -> int:
        return len(self.buf) - self.pos


def _fspath(source: object) -> str:
    """``os.fspath`` of a path, typed: a stream without a name raises TypeError as fspath does."""
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    raise TypeError(f"expected str, bytes or os.PathLike object, not {type(source).__name__}")


def _truncated(what: str, chunks: _Chunks, count: int) -> Issue:
    return CAPTURE_TRUNCATED(
        f"capture file is truncated: {what} cut short at byte {chunks.offset} "
        f"({chunks.remaining()} bytes left over) after {count} packets",
        offset=chunks.offset,
    )


def _snaplen_issue(cut: int, total: int, snaplens: set[int]) -> Issue:
    snap = ", ".join(str(s) for s in sorted(snaplens)) if snaplens else "unknown"
    return CAPTURE_SNAPLEN(
        f"{cut} of {total} packets were cut short by the capture (snaplen {snap} bytes): "
        "bytes beyond the snaplen were never saved, so TCP payloads and the Kafka frames in them "
        "are incomplete; capture with a larger snaplen (tcpdump -s 0)",
    )


def iter_pcap(
    chunks_it: Iterator[bytes], issues: list[Issue], origin: int = 0, before: int = 0, raw: bool = False
) -> Iterator[tuple]:
    """Packets of a classic pcap stream as ``(index, ts, linktype, data)`` tuples.

    ``origin`` and ``before``: the file offset of the stream's byte 0 and the packets before
    it, for a stream that is a byte range of a file (:mod:`analyzer.capture.split`): indexes
    and the offsets and packet numbers in issues are the file's.

    Packets saved shorter than they were on the wire (``incl_len < orig_len``: the snaplen) are
    counted and reported once (``capture.snaplen``). A second pcap file header where a record
    should start (``cat a.pcap b.pcap``) is reported (``capture.concatenated``) and read on.

    ``raw``: the records as they are in the file instead (:meth:`CaptureFile.records`).
    """
    c = _Chunks(chunks_it, origin)
    if not c.need(24):
        issues.append(CAPTURE_TRUNCATED("pcap file header is incomplete", offset=origin))
        return
    magic = bytes(c.buf[0:4])
    order, scale = PCAP_MAGIC[magic]
    snaplen, linktype = struct.unpack_from(order + "II", c.buf, 16)
    linktype &= 0x0FFFFFFF
    snaplens = {snaplen}
    if raw:
        yield (0, -1, b"", c.buf[0:24])
    c.pos = 24
    rec = struct.Struct(order + "IIII")
    unpack_from = rec.unpack_from
    index = before
    cut = 0
    try:
        while True:
            buf, pos = c.buf, c.pos  # (need() is called only when the chunk runs short)
            if len(buf) - pos < 16:
                if not c.need(16):
                    if c.remaining():
                        issues.append(_truncated("record header", c, index))
                    return
                buf, pos = c.buf, c.pos
            sec, frac, incl, orig = unpack_from(buf, pos)
            if incl != orig or not incl:
                if c.need(24) and bytes(c.buf[c.pos : c.pos + 4]) in PCAP_MAGIC:
                    # another file's header: thiszone and sigfigs (0) read as incl/orig_len
                    magic = bytes(c.buf[c.pos : c.pos + 4])
                    order, scale = PCAP_MAGIC[magic]
                    snaplen, linktype = struct.unpack_from(order + "II", c.buf, c.pos + 16)
                    linktype &= 0x0FFFFFFF
                    snaplens.add(snaplen)
                    unpack_from = struct.Struct(order + "IIII").unpack_from
                    issues.append(
                        CAPTURE_CONCATENATED(
                            f"another pcap file header at byte {c.offset} after {index} packets "
                            "(concatenated captures): reading on with its link type and byte order",
                            offset=c.offset,
                        )
                    )
                    if raw:
                        yield (0, -1, b"", c.buf[c.pos : c.pos + 24])
                    c.pos += 24
                    continue
                buf, pos = c.buf, c.pos  # (need(24) may have moved them)
                if incl < orig:
                    cut += 1
            if incl > MAX_RECORD:
                issues.append(
                    CAPTURE_CORRUPT(
                        f"pcap record {index + 1} at byte {c.offset} claims {incl} bytes "
                        f"(limit {MAX_RECORD}); stopping after {index} packets",
                        offset=c.offset,
                    )
                )
                return
            if len(buf) - pos < 16 + incl:
                if not c.need(16 + incl):
                    issues.append(_truncated(f"packet {index + 1}", c, index))
                    return
                buf, pos = c.buf, c.pos
            start = pos + 16
            index += 1
            if raw:
                yield (index, linktype, buf[start : start + incl], buf[pos : start + incl])
            else:
                yield (index, sec + frac * scale, linktype, buf[start : start + incl])
            c.pos = start + incl
    finally:
        if cut:
            issues.append(_snaplen_issue(cut, index - before, snaplens))


def _tsresol(value: int) -> tuple[float, int]:
    """The scale of an if_tsresol option and the number of its units in a second."""
    if value & 0x80:
        return 2.0 ** -(value & 0x7F), 1 << (value & 0x7F)
    return 10.0**-value, 10**value


# The smallest valid length of each block type we read (header, fixed fields, trailing length)
_MIN_BLOCK = {1: 20, 2: 32, 3: 16, 6: 32, 0x0A0D0D0A: 28}
_MIN_BLOCK_MAX = max(_MIN_BLOCK.values())
_SHB_TYPE = 0x0A0D0D0A  # PCAPNG_SHB read in either byte order
# the per-block layouts, compiled once per byte order (a format string per call costs)
_LAYOUTS = {o: (struct.Struct(o + "II"), struct.Struct(o + "I"), struct.Struct(o + "IIIII")) for o in "<>"}
_BLOCK_NAMES = {
    1: "Interface Description Block",
    2: "Packet Block",
    3: "Simple Packet Block",
    6: "Enhanced Packet Block",
    10: "Decryption Secrets Block",
    0x0A0D0D0A: "Section Header Block",
}


def _block_name(btype: int) -> str:
    name = _BLOCK_NAMES.get(btype)
    return f"{name} (type 0x{btype:x})" if name else f"block of type 0x{btype:x}"


def iter_pcapng(  # noqa: C901 - hot path: one loop over blocks, block types inline (a call per block costs)
    chunks_it: Iterator[bytes],
    issues: list[Issue],
    secrets: list[bytes] | None = None,
    origin: int = 0,
    before: int = 0,
    raw: bool = False,
) -> Iterator[tuple]:
    """Packets of a pcapng stream: several sections, interfaces with their own link types and
    timestamp resolutions; EPB, SPB and the obsolete OPB. Decryption Secrets Blocks holding a
    TLS key log are appended to ``secrets``; every other block is skipped.

    A block whose length cannot be trusted (under 12 or the minimum of its type, not a multiple
    of 4, beyond ``MAX_RECORD``, or different from its trailing copy) ends the reading with
    ``capture.corrupt``. A block that is whole but says something impossible (a packet longer
    than its block, an interface never described, options running past the block) is skipped
    with ``capture.bad_block`` (packets were lost: an error); an interface option running past
    its block ends that block's options (``capture.bad_option``, a warning). Every issue names
    the block and its file offset (``origin`` and ``before``: as for :func:`iter_pcap`).

    ``raw``: the blocks as they are in the file instead (:meth:`CaptureFile.records`).
    """
    c = _Chunks(chunks_it, origin)
    order = "<"
    head, word, epb = _LAYOUTS[order]
    # (linktype, scale, units per second, ts offset s, snaplen)
    interfaces: list[tuple[int, float, int, int, int]] = []
    index = before
    cut = 0
    snaplens: set[int] = set()

    def bad(what: str) -> None:
        issues.append(
            CAPTURE_BAD_BLOCK(
                f"pcapng {_block_name(btype)} at byte {c.offset}: {what}; block skipped",
                offset=c.offset,
            )
        )

    try:
        while True:
            if not c.need(12):
                if c.remaining():
                    issues.append(_truncated("block header", c, index))
                return
            btype, blen = head.unpack_from(c.buf, c.pos)
            if btype == _SHB_TYPE:  # the same in both byte orders
                bom = bytes(c.buf[c.pos + 8 : c.pos + 12])
                if bom == b"\x4d\x3c\x2b\x1a":
                    order = "<"
                elif bom == b"\x1a\x2b\x3c\x4d":
                    order = ">"
                else:
                    issues.append(
                        CAPTURE_CORRUPT(
                            f"pcapng section header at byte {c.offset} has a bad byte-order magic; "
                            f"stopping after {index} packets",
                            offset=c.offset,
                        )
                    )
                    return
                interfaces = []
                head, word, epb = _LAYOUTS[order]
                btype, blen = head.unpack_from(c.buf, c.pos)
            # (no block type needs more than _MIN_BLOCK_MAX: a longer block skips the look-up)
            if (blen < _MIN_BLOCK_MAX and blen < _MIN_BLOCK.get(btype, 12)) or blen % 4 or blen > MAX_RECORD:
                issues.append(
                    CAPTURE_CORRUPT(
                        f"pcapng {_block_name(btype)} at byte {c.offset} has invalid length {blen} "
                        f"(minimum {_MIN_BLOCK.get(btype, 12)}, a multiple of 4); "
                        f"stopping after {index} packets",
                        offset=c.offset,
                    )
                )
                return
            if not c.need(blen):
                issues.append(_truncated(_block_name(btype), c, index))
                return
            b = c.buf
            p = c.pos
            body = p + 8
            end = p + blen - 4
            (trail,) = word.unpack_from(b, end)
            if trail != blen:
                issues.append(
                    CAPTURE_CORRUPT(
                        f"pcapng {_block_name(btype)} at byte {c.offset} has length {blen} but its "
                        f"trailing copy says {trail}; stopping after {index} packets",
                        offset=c.offset,
                    )
                )
                return
            if btype == 6 or btype == 2:  # EPB, or obsolete OPB (16-bit interface id + drops)
                if btype == 6:
                    iface, tsh, tsl, cap, orig = epb.unpack_from(b, body)
                else:
                    iface, _drops, tsh, tsl, cap, orig = struct.unpack_from(order + "HHIIII", b, body)
                data = body + 20
                if iface >= len(interfaces):
                    bad(f"interface {iface} was never described (no Interface Description Block)")
                elif data + cap > end:
                    bad(f"packet of {cap} bytes does not fit in a block of {blen} bytes")
                else:
                    lt, scale, units, tsoff, _snap = interfaces[iface]
                    if cap < orig:
                        cut += 1
                    index += 1
                    # seconds + fraction * scale, as pcap's (sec, usec/nsec): one instant is the
                    # same float in both formats (editcap's pcapng pieces of a pcap match it)
                    sec, frac = divmod((tsh << 32) | tsl, units)
                    if raw:
                        yield (index, lt, b[data : data + cap], b[p : p + blen])
                    else:
                        yield (index, sec + frac * scale + tsoff, lt, b[data : data + cap])
            elif btype == 3:  # SPB: interface 0, no timestamp
                (orig,) = struct.unpack_from(order + "I", b, body)
                if not interfaces:
                    bad("no Interface Description Block before it")
                else:
                    lt, _scale, _units, _tsoff, snap = interfaces[0]
                    cap = min(orig, snap or orig, end - body - 4)
                    if cap < orig:
                        cut += 1
                    index += 1
                    if raw:
                        yield (index, lt, b[body + 4 : body + 4 + cap], b[p : p + blen])
                    else:
                        yield (index, 0.0, lt, b[body + 4 : body + 4 + cap])
            elif btype == 1:  # IDB
                lt, _res, snap = struct.unpack_from(order + "HHI", b, body)
                scale, units, tsoff = 1e-6, 1000000, 0
                o = body + 8
                while o + 4 <= end:
                    code, olen = struct.unpack_from(order + "HH", b, o)
                    if code == 0:
                        break
                    if o + 4 + olen > end:
                        bad_opt = f"option {code} of {olen} bytes runs past the end of the block"
                        issues.append(
                            CAPTURE_BAD_OPTION(
                                f"pcapng {_block_name(btype)} at byte {c.offset}: {bad_opt}; "
                                "options after it ignored",
                                offset=c.offset,
                            )
                        )
                        break
                    if code == 9 and olen >= 1:
                        scale, units = _tsresol(b[o + 4])
                    elif code == 14 and olen >= 8:
                        (tsoff,) = struct.unpack_from(order + "q", b, o + 4)
                    o += 4 + ((olen + 3) & ~3)
                interfaces.append((lt, scale, units, tsoff, snap))
                if snap:
                    snaplens.add(snap)
            elif btype == 10 and secrets is not None:  # DSB
                stype, slen = struct.unpack_from(order + "II", b, body) if end - body >= 8 else (0, 0)
                if stype == DSB_TLS_KEY_LOG and body + 8 + slen <= end:
                    secrets.append(bytes(b[body + 8 : body + 8 + slen]))
                elif stype == DSB_TLS_KEY_LOG or end - body < 8:
                    bad(f"decryption secrets of {slen} bytes do not fit in a block of {blen} bytes")
            if raw and btype != 6 and btype != 2 and btype != 3:  # every other block, as it is
                yield (0, -1, b"", b[p : p + blen])
            c.pos = p + blen
    finally:
        if cut:
            issues.append(_snaplen_issue(cut, index - before, snaplens))


def _file_chunks(f: BinaryIO, first: bytes) -> Iterator[bytes]:
    if first:
        yield first
    read = f.read
    while True:
        chunk = read(CHUNK)
        if not chunk:
            return
        yield chunk


def check_readable(path: str | os.PathLike) -> str | None:
    """Why a capture path cannot be opened (a sentence), or None when it can."""
    if not os.path.exists(path):
        return f"no such file: {path}"
    if os.path.isdir(path):
        return f"is a directory: {path}"
    if not os.access(path, os.R_OK):
        return f"cannot read {path}: permission denied"
    return None


class CaptureFile:
    """A capture file (path, or ``-`` for stdin, or a binary file object), iterated as packets.

    >>> cap = CaptureFile("captures/x.pcap")
    >>> for index, ts, linktype, data in cap: ...
    >>> cap.issues   # damage found, as Issue objects
    """

    live = False  # a recording: seeing no Kafka in it is worth saying

    def __init__(self, source: str | os.PathLike | BinaryIO, origin: int = 0, before: int = 0):
        """``origin`` and ``before``: see :func:`iter_pcap` (a byte range of a file)."""
        self.source = source
        self.origin, self.before = origin, before
        self.name = "-" if source == "-" else getattr(source, "name", None) or _fspath(source)
        self.issues: list[Issue] = []
        self.format: str | None = None
        self.secrets: list[bytes] = []  # TLS key logs of pcapng Decryption Secrets Blocks
        self.compression: str | None = None
        self.bytes_read = 0  # capture bytes parsed (after decompression)
        self.size: int | None = None  # the file's size on disk, when it is a regular file
        self._f: BinaryIO | None = None
        if isinstance(source, str | os.PathLike) and source != "-":
            try:
                self.size = os.path.getsize(source)
            except OSError:
                self.size = None

    @property
    def position(self) -> int:
        """How far into the file (compressed bytes for a compressed file) reading has come."""
        f = self._f
        if f is None or self.size is None:
            return self.bytes_read
        try:
            return f.tell()
        except (OSError, ValueError):
            return self.bytes_read

    def _open(self) -> BinaryIO:
        if self.source == "-":
            return sys.stdin.buffer
        if hasattr(self.source, "read"):
            return self.source  # type: ignore[return-value]  # hasattr(read): a binary stream
        return open(self.source, "rb")  # noqa: SIM115 - closed in __iter__

    def __iter__(self) -> Iterator[tuple]:
        self._f = f = self._open()
        try:
            yield from self._packets(f)
        finally:
            if f is not sys.stdin.buffer and not hasattr(self.source, "read"):
                f.close()

    def records(self) -> Iterator[tuple[int, int, memoryview | bytes, memoryview | bytes]]:
        """The file's records as they are, for copying some of them (``read -w``):
        ``(number, linktype, data, record)`` per packet (numbered as when iterated, ``record``
        its pcap record or pcapng block, header included), ``(0, -1, b"", bytes)`` for
        everything else in the file, in file order (the pcap file header; pcapng section
        headers, interfaces, decryption secrets and every other block). ``record`` is a view
        of the read buffer: valid until the next item. A compressed file gives its
        decompressed records; damage ends them as it ends the packets (same ``issues``)."""
        self._f = f = self._open()
        try:
            yield from self._packets(f, records=True)
        finally:
            if f is not sys.stdin.buffer and not hasattr(self.source, "read"):
                f.close()

    def _packets(self, f: BinaryIO, records: bool = False) -> Iterator[tuple]:
        head = f.read(4)
        raw = _file_chunks(f, head)
        if head[:2] == GZIP_MAGIC:
            self.compression = "gzip"
            raw = self._gunzip(raw)
        elif head == ZSTD_MAGIC:
            self.compression = "zstd"
            raw = self._unzstd(raw)
        chunks = self._counted(raw)
        first = next(chunks, b"")
        magic = first[:4]
        if magic in PCAP_MAGIC:
            self.format = "pcap"
        elif magic == PCAPNG_SHB:
            self.format = "pcapng"
        else:
            if self.issues:  # the decompressor already said what is wrong
                return
            what = "an empty file" if not first else f"magic bytes {bytes(magic).hex()}"
            self.issues.append(CAPTURE_UNKNOWN_FORMAT(f"not a pcap or pcapng capture ({what})", offset=0))
            return
        if self.format == "pcapng":
            yield from iter_pcapng(
                _chain(first, chunks), self.issues, self.secrets, self.origin, self.before, records
            )
        else:
            yield from iter_pcap(_chain(first, chunks), self.issues, self.origin, self.before, records)
        # a decompression problem is the real cause of a truncated record: report it first
        self.issues.sort(key=lambda i: i.code != CAPTURE_CORRUPT.code)

    def _gunzip(self, raw: Iterator[bytes]) -> Iterator[bytes]:
        """gzip members (several may follow each other), decompressed chunk by chunk so that a
        damaged or cut file still yields everything before the damage."""
        d = zlib.decompressobj(wbits=31)
        fed = False  # has the current member received any input?
        try:
            for chunk in raw:
                data = chunk
                while data:
                    fed = True
                    out = d.decompress(data, CHUNK)
                    while out:
                        yield out
                        out = d.decompress(d.unconsumed_tail, CHUNK) if d.unconsumed_tail else b""
                    data = b""
                    if d.eof:
                        rest = d.unused_data
                        d = zlib.decompressobj(wbits=31)
                        fed = False
                        # like gzip readers, bytes after the last member that are not another
                        # member are ignored
                        data = rest if rest[:2] == GZIP_MAGIC else b""
        except zlib.error as exc:
            self.issues.append(
                CAPTURE_CORRUPT(
                    f"gzip data is damaged after {self.bytes_read} decompressed bytes: {exc}",
                )
            )
            return
        if fed and not d.eof:
            self.issues.append(
                CAPTURE_CORRUPT(f"gzip stream is cut short after {self.bytes_read} decompressed bytes")
            )

    def _unzstd(self, raw: Iterator[bytes]) -> Iterator[bytes]:
        import zstandard

        d = zstandard.ZstdDecompressor().decompressobj()
        try:
            for chunk in raw:
                out = d.decompress(chunk)
                if out:
                    yield out
        except zstandard.ZstdError as exc:
            self.issues.append(
                CAPTURE_CORRUPT(
                    f"zstd data is damaged after {self.bytes_read} decompressed bytes: {exc}",
                )
            )
            return
        if not getattr(d, "eof", True):
            self.issues.append(
                CAPTURE_CORRUPT(f"zstd stream is cut short after {self.bytes_read} decompressed bytes")
            )

    def _counted(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        for chunk in chunks:
            self.bytes_read += len(chunk)
            yield chunk


def _chain(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest
