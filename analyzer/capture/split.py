"""Splitting big capture files into byte ranges that readers can take on independently.

A *split* is a byte range ``[start, end)`` of one capture file that begins at a record (pcap)
or block (pcapng) boundary, plus the ``header`` a reader puts in front of it so that the range
reads as a capture of its own: the pcap file header, or the pcapng Section Header Block with the
Interface Description Blocks (and TLS Decryption Secrets Blocks) in force at ``start``. The
splits of a file cover it exactly, and their packets, one split after the other, are the file's
packets (the tests hold it).

* pcap has no index: a boundary near each target offset is found by *chained header checks*
  (the approach of hadoop-rapcap): a candidate offset is accepted when :data:`CHAIN` record
  headers in a row are plausible (fraction of a second in range, ``0 < caplen <= origlen``,
  ``caplen`` within the snaplen, seconds within an hour of the previous record and not before
  the file's first packet by more than that) and each starts where the previous one ends (or
  the chain ends exactly at the end of the file). No full read of the file is needed.
* pcapng is walked block by block (8 bytes read per block, the rest skipped): its boundaries
  are exact, and the interface table of each section is known at every split.
* Compressed files (gzip, zstd) cannot be entered in the middle: one split each.

:func:`splits` gives the splits of a file for a target size (:data:`DEFAULT_SPLIT`);
:class:`SplitSource` is the :class:`~analyzer.pipeline.Source` of one split (its packets are
numbered from ``Split.first`` when known, else from 1); :func:`count_packets` counts the packets
of one split from its record headers (for numbering the next ones).

Files are opened through an *opener* (:data:`Opener`): local files by default; Spark's executors
give one that reads any file system's files by seeks and ranged reads
(:func:`analyzer.spark.source.open_ranged`), so that no file is ever read whole to be split.
"""

from __future__ import annotations

import io
import os
import struct
from collections.abc import Callable, Iterator
from typing import BinaryIO, NamedTuple

from analyzer.capture.files import (
    GZIP_MAGIC,
    MAX_RECORD,
    PCAP_MAGIC,
    PCAPNG_SHB,
    ZSTD_MAGIC,
    CaptureFile,
)
from analyzer.model import Issue

DEFAULT_SPLIT = 128 << 20  # bytes: between the 64 and 256 MB that keep a core busy for seconds
MIN_SPLIT = 1 << 12  # smaller targets are raised to this (tests use tiny ones)
CHAIN = 8  # record headers in a row that must be plausible to accept a pcap boundary
MAX_SCAN = 64 << 20  # bytes searched for a pcap boundary past a target offset
TS_SLACK = 3600  # seconds: how far a record's time may step back or jump within a chain
_WINDOW = 1 << 20  # bytes read at a time while scanning for a boundary

# a file's name -> (a seekable binary file, its size in bytes); raises OSError
Opener = Callable[[str], tuple[BinaryIO, int]]


def open_local(path: str) -> tuple[BinaryIO, int]:
    """The default :data:`Opener`: a local file."""
    return open(path, "rb"), os.path.getsize(path)  # noqa: SIM115 - the caller closes it


class Split(NamedTuple):
    path: str
    start: int  # byte offset of the split's first record or block
    end: int  # byte offset after its last one (the next split's start, or the file size)
    header: bytes  # bytes a reader puts before the range (b"" for a split starting at 0)
    first: int | None  # the file-wide number of the split's first packet, None when not counted


def _kind(head: bytes) -> str | None:
    if head[:2] == GZIP_MAGIC or head[:4] == ZSTD_MAGIC:
        return "compressed"
    if head[:4] in PCAP_MAGIC:
        return "pcap"
    if head[:4] == PCAPNG_SHB:
        return "pcapng"
    return None


def splits(path: str | os.PathLike, target: int = DEFAULT_SPLIT, opener: Opener = open_local) -> list[Split]:
    """The splits of a capture file, each about ``target`` bytes.

    A file that is compressed, not a capture, or not bigger than the target is one split (its
    reader then reports what is wrong with it); a pcap's last split is at least half a target.
    pcapng splits have their first packet numbers (the block walk counts them); pcap splits
    have them only for the first split.
    """
    path = os.fspath(path)
    target = max(MIN_SPLIT, target)
    raw, size = opener(path)
    with raw:
        f = _Buffered(raw, size)
        head = f.read(24)
        kind = _kind(head)
        if kind is None or kind == "compressed" or size <= target:
            return [Split(path, 0, size, b"", 1)]
        if kind == "pcap":
            return _pcap_splits(f, path, head, size, target)
        return _pcapng_splits(f, path, size, target)


# -- pcap ------------------------------------------------------------------------------------------


class _PcapFormat(NamedTuple):
    rec: struct.Struct  # a record header
    frac_limit: int  # fractions of a second are below this
    snaplen: int  # the largest caplen a record may have
    first_sec: int | None  # seconds of the file's first record


def _pcap_format(f, head: bytes) -> _PcapFormat:
    order, scale = PCAP_MAGIC[head[:4]]
    snaplen = struct.unpack_from(order + "I", head, 16)[0]
    rec = struct.Struct(order + "IIII")
    f.seek(24)
    first = f.read(16)
    first_sec = rec.unpack(first)[0] if len(first) == 16 else None
    limit = snaplen if 0 < snaplen <= MAX_RECORD else MAX_RECORD
    return _PcapFormat(rec, 1_000_000 if scale == 1e-6 else 1_000_000_000, limit, first_sec)


def _plausible_chain(buf: bytes, p: int, eof: bool, fmt: _PcapFormat) -> bool | None:
    """Do :data:`CHAIN` plausible records start at ``buf[p]``? None: not enough bytes to tell
    (more must be read), unless ``eof`` says ``buf`` ends where the file does."""
    unpack = fmt.rec.unpack_from
    prev = None
    end = len(buf)
    for _ in range(CHAIN):
        if p == end and eof:
            return prev is not None  # the chain reaches the end of the file exactly
        if p + 16 > end:
            return False if eof else None
        sec, frac, incl, orig = unpack(buf, p)
        if frac >= fmt.frac_limit or not 0 < incl <= orig or incl > fmt.snaplen or orig > MAX_RECORD:
            return False
        if fmt.first_sec is not None and sec < fmt.first_sec - TS_SLACK:
            return False
        if prev is not None and abs(sec - prev) > TS_SLACK:
            return False
        prev = sec
        p += 16 + incl
    return True


def pcap_boundary(f, offset: int, size: int, fmt: _PcapFormat) -> int | None:
    """The first offset at or after ``offset`` where a pcap record starts (chained header
    checks), or None when none is found within :data:`MAX_SCAN` bytes."""
    pos = offset
    limit = min(size, offset + MAX_SCAN)
    # a chain spans up to CHAIN records of at most snaplen bytes each
    span = CHAIN * (16 + fmt.snaplen)
    while pos < limit:
        f.seek(pos)
        buf = f.read(_WINDOW + min(span, MAX_RECORD))
        eof = pos + len(buf) >= size
        for q in range(min(_WINDOW, len(buf))):
            got = _plausible_chain(buf, q, eof, fmt)
            if got is None:  # the chain runs past what was read: read it whole from here
                f.seek(pos + q)
                more = f.read(span + 16)
                got = _plausible_chain(more, 0, pos + q + len(more) >= size, fmt)
            if got:
                return pos + q
        pos += _WINDOW
    return None


def _pcap_splits(f, path: str, head: bytes, size: int, target: int) -> list[Split]:
    fmt = _pcap_format(f, head)
    header = head[:24]
    starts = [24]
    want = target
    while want < size - target // 2:
        b = pcap_boundary(f, max(want, starts[-1] + 1), size, fmt)
        if b is None or b >= size:
            break
        starts.append(b)
        want = b + target
    out = []
    for i, s in enumerate(starts):
        e = starts[i + 1] if i + 1 < len(starts) else size
        # the first split is the file itself from its start: its header is its own
        out.append(Split(path, 0 if i == 0 else s, e, b"" if i == 0 else header, 1 if i == 0 else None))
    return out


# -- pcapng ----------------------------------------------------------------------------------------

_PACKET_BLOCKS = (2, 3, 6)  # Packet Block (obsolete), Simple and Enhanced Packet Blocks


def _pcapng_splits(f, path: str, size: int, target: int) -> list[Split]:
    """Walk the blocks; cut at the first block boundary past each target, carrying the section
    header and the interface (and secrets) blocks in force there."""
    out: list[Split] = []
    shb = b""
    carried: list[bytes] = []  # IDBs and DSBs of the current section
    order = "<"
    pos = 0
    packets = 0
    start, start_header, start_first = 0, b"", 1
    want = target
    while pos + 12 <= size:
        f.seek(pos)
        h = f.read(12)
        if h[:4] == PCAPNG_SHB:
            order = ">" if h[8:12] == b"\x1a\x2b\x3c\x4d" else "<"
        btype, blen = struct.unpack_from(order + "II", h)
        if blen < 12 or blen % 4 or blen > MAX_RECORD or pos + blen > size:
            break  # damage: the rest goes to the last split, whose reader reports it
        if pos >= want and pos > start:
            out.append(Split(path, start, pos, start_header, start_first))
            start, start_header, start_first = pos, shb + b"".join(carried), packets + 1
            want = pos + target
        if btype == 0x0A0D0D0A:
            f.seek(pos)
            shb = f.read(blen)
            carried = []
        elif btype in (1, 10):  # IDB, DSB: every later packet of the section may need them
            f.seek(pos)
            carried.append(f.read(blen))
        elif btype in _PACKET_BLOCKS:
            packets += 1
        pos += blen
    out.append(Split(path, start, size, start_header, start_first))
    return out


# -- reading a split -------------------------------------------------------------------------------


class _Buffered:
    """A seekable file read :data:`_WINDOW` bytes at a time: the small reads that walk pcapng
    blocks and check pcap record headers cost one read of the file system per window (a remote
    file system answers each read of its own)."""

    def __init__(self, f: BinaryIO, size: int) -> None:
        self.f, self.size = f, size
        self.pos = 0
        self.at = 0
        self.buf = b""

    def seek(self, pos: int, whence: int = 0) -> int:
        self.pos = pos if whence == 0 else self.pos + pos if whence == 1 else self.size + pos
        return self.pos

    def tell(self) -> int:
        return self.pos

    def read(self, n: int = -1) -> bytes:
        if n < 0:
            n = max(0, self.size - self.pos)
        o = self.pos - self.at
        if o < 0 or o + n > len(self.buf):
            if n >= _WINDOW:  # a big read: straight from the file
                self.f.seek(self.pos)
                data = self.f.read(n)
                self.pos += len(data)
                return data
            self.f.seek(self.pos)
            self.buf, self.at, o = self.f.read(_WINDOW), self.pos, 0
        data = self.buf[o : o + n]
        self.pos += len(data)
        return data


class _RangeStream(io.RawIOBase):
    """``header`` then bytes ``[start, end)`` of a file, as one readable stream (the range read
    in the reads its reader asks for: never whole)."""

    def __init__(self, path: str, header: bytes, start: int, end: int, opener: Opener = open_local) -> None:
        self._f = opener(path)[0]
        self._f.seek(start)
        self._head = memoryview(header)
        self._left = end - start
        self.name = path

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = 0
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        want = min(len(b), self._left)
        if want <= 0:
            return 0
        data = self._f.read(want)
        n = len(data)
        b[:n] = data
        self._left -= n
        return n

    def close(self) -> None:
        self._f.close()
        super().close()


class SplitSource:
    """The packets of one split, as a :class:`~analyzer.pipeline.Source`.

    Packets are numbered from ``split.first`` (1 when it is unknown: give ``first`` to number
    on from the packets of the splits before). Issues found while reading name the split; their
    byte offsets are the file's (the carried header's bytes aside), their packet numbers count
    on from ``first`` as the packets do.
    """

    live = False

    def __init__(self, split: Split, first: int | None = None, opener: Opener = open_local) -> None:
        self.split = split
        self.opener = opener
        self.first = first if first is not None else split.first if split.first is not None else 1
        whole = split.start == 0 and not split.header
        self.name = split.path if whole else f"{split.path}[{split.start}:{split.end}]"
        self.issues: list[Issue] = []
        self.secrets: list[bytes] = []
        self.size: int | None = split.end - split.start
        self.bytes_read = 0
        self.format: str | None = None
        self.compression: str | None = None
        self._cap: CaptureFile | None = None

    @property
    def position(self) -> int:
        cap = self._cap
        return 0 if cap is None else max(0, cap.bytes_read - len(self.split.header))

    def __iter__(self) -> Iterator[tuple]:
        s = self.split
        stream = _RangeStream(s.path, s.header, s.start, s.end, self.opener)
        # the stream's byte len(header) is the file's byte start
        origin = s.start - len(s.header)
        cap = self._cap = CaptureFile(stream, origin, self.first - 1)  # type: ignore[arg-type]  # a RawIOBase is a binary stream
        cap.secrets = self.secrets
        try:
            yield from cap
        finally:
            stream.close()
            self.bytes_read = cap.bytes_read
            self.format, self.compression = cap.format, cap.compression
            self.issues = cap.issues


def count_packets(split: Split, opener: Opener = open_local) -> int:
    """The number of packets in a split, from its record (block) headers only."""
    raw, size = opener(split.path)
    with raw:
        f = _Buffered(raw, size)
        head = split.header or f.read(24)
        kind = _kind(head)
        if kind == "compressed" or kind is None:
            return sum(1 for _ in SplitSource(split, opener=opener))
        n = 0
        if kind == "pcap":
            rec = _pcap_format(f, head).rec
            pos = max(split.start, 24)
            while pos + 16 <= split.end:
                f.seek(pos)
                h = f.read(16)
                if len(h) < 16:
                    break
                incl = rec.unpack(h)[2]
                if pos + 16 + incl > split.end:
                    break
                n += 1
                pos += 16 + incl
            return n
        # the byte order of the section the split starts in (its carried header's)
        order = ">" if head[8:12] == b"\x1a\x2b\x3c\x4d" else "<"
        pos = split.start
        while pos + 12 <= split.end:
            f.seek(pos)
            h = f.read(12)
            if h[:4] == PCAPNG_SHB:
                order = ">" if h[8:12] == b"\x1a\x2b\x3c\x4d" else "<"
            btype, blen = struct.unpack_from(order + "II", h)
            if blen < 12 or blen % 4:
                break
            n += btype in _PACKET_BLOCKS
            pos += blen
        return n
