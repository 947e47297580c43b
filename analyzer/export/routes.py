"""Packets routed to the part that owns their connection, and where a plain pcap file's packets
are: what ``export -j`` (:mod:`analyzer.export.parallel`) and Spark's split path
(:mod:`analyzer.spark.stitch`) share to send each connection's packets to one process.

A connection belongs to a part by its canonical address pair (:func:`flow_key`): the plan's
part (the first megabytes, :func:`~analyzer.export.parallel.plan_owners`), else a hash
(:class:`Router`). A plain pcap file is walked one byte range at a time and each packet's place
in the file goes to its owner (:func:`route_range`, :func:`walk_routes`), who reads its packets
from the file itself.
"""

from __future__ import annotations

import io
import os
import struct
import zlib
from array import array
from collections.abc import Iterator
from typing import BinaryIO, NamedTuple

from analyzer.capture.files import MAX_RECORD, PCAP_MAGIC
from analyzer.capture.split import Opener, Split, open_local
from analyzer.events import Skip
from analyzer.reassembly.packet import decode_tcp, skip_text


def flow_key(seg) -> tuple:
    """The connection of a TCP segment, the same both ways: ((addr, port), (addr, port)) sorted."""
    a, b = (seg[0], seg[1]), (seg[2], seg[3])
    return (a, b) if a <= b else (b, a)


def _hash_owner(key: tuple, parts: int) -> int:
    (sa, pa), (sb, pb) = key
    return zlib.crc32(bytes(sa) + bytes(sb) + struct.pack(">HH", pa, pb)) % parts


class Router:
    """Which part owns the connection of each TCP segment: the plan's (``owners``: canonical
    address pair -> part), else by a hash of the pair; remembered per direction. What routes
    packets to owners in ``export -j`` and on Spark's executors (:class:`SplitWalk`)."""

    __slots__ = ("owners", "parts", "seen")

    def __init__(self, owners: dict, parts: int) -> None:
        self.owners, self.parts = owners, parts
        self.seen: dict[tuple, int] = {}

    def __call__(self, seg) -> int:
        k4 = seg[:4]
        o = self.seen.get(k4)
        if o is None:
            key = flow_key(seg)
            o = self.owners.get(key)
            o = self.seen[k4] = o if o is not None else _hash_owner(key, self.parts)
        return o


def count_skip(skipped: dict, why: str, number: int) -> None:
    """Count a packet that is no usable TCP segment: reason -> [count, number of its first]."""
    if why in skipped:
        skipped[why][0] += 1
    else:
        skipped[why] = [1, number]


# -- a plain pcap file: each packet read once ------------------------------------------------------
#
# Each process walks one byte range of the file (capture/split.py: record boundaries found by
# chained header checks, each confirmed by the previous range's walk ending exactly there) and
# routes its packets to their owners as (number in the range, ts, data offset, length); then each
# owner takes its packets of every range, in order, straight from the file. Anything unusual
# (a record cut by the snaplen, an impossible length, a range whose walk does not end at the
# next one's start, bytes left over) and the whole-capture way is taken instead: the reader's
# own reports must be what one run reports.


class Route(NamedTuple):
    """One byte range of a pcap walked: its packets, by owner."""

    clean: bool  # every record whole and plain, the walk ended exactly at the range's end
    packets: int
    first_ts: float | None
    last_ts: float
    skipped: dict  # reason -> [count, number in the range of its first packet]
    routes: list[str]  # per owner: a file of (number in the range, ts, data offset, length) doubles


def header_format(head: bytes | memoryview) -> tuple[str, float, int] | None:
    """(byte order, timestamp scale, link type) of a plain pcap file's header (None: not one)."""
    if len(head) < 24 or bytes(head[:4]) not in PCAP_MAGIC:
        return None
    order, scale = PCAP_MAGIC[bytes(head[:4])]
    linktype = struct.unpack_from(order + "I", head, 20)[0] & 0x0FFFFFFF
    return order, scale, linktype


def pcap_format(path: str) -> tuple[str, float, int] | None:
    """(byte order, timestamp scale, link type) of a plain (uncompressed) pcap file."""
    with open(path, "rb") as f:
        return header_format(f.read(24))


def route_range(args: tuple) -> Route:
    """Walk the records of ``[start, end)`` and route each packet to its owner."""
    path, start, end, owners, parts, folder, number = args
    fmt = pcap_format(path)
    assert fmt is not None
    order, scale, linktype = fmt
    unpack = struct.Struct(order + "IIII").unpack_from
    names = [os.path.join(folder, f"range{number}-owner{o}") for o in range(parts)]
    files = [open(n, "wb") for n in names]  # noqa: SIM115 - closed below
    routes = [array("d") for _ in range(parts)]
    window = Window(path)
    try:
        clean, count, first_ts, last_ts, skipped = _walk(
            window, start, end, unpack, scale, linktype, owners, parts, routes, files
        )
        for r, f in zip(routes, files, strict=True):
            r.tofile(f)
    finally:
        window.close()
        for f in files:
            f.close()
    return Route(clean, count, first_ts, last_ts, skipped, names)


WINDOW = 8 << 20  # bytes of a capture file read at a time


class Window:
    """Bytes of a file at increasing offsets, read :data:`WINDOW` bytes at a time (the slices
    keep their window alive, as the capture reader's chunks do)."""

    def __init__(self, path: str, opener: Opener | None = None) -> None:
        self.f = opener(path)[0] if opener is not None else open(path, "rb")  # noqa: SIM115 - closed by close()
        self.start = 0
        self.buf = memoryview(b"")

    def get(self, at: int, n: int) -> memoryview | None:
        """``n`` bytes at offset ``at`` (None: the file ends first)."""
        o = at - self.start
        if o < 0 or o + n > len(self.buf):
            self.f.seek(at)
            self.buf = memoryview(self.f.read(max(WINDOW, n)))
            self.start = at
            o = 0
            if n > len(self.buf):
                return None
        return self.buf[o : o + n]

    def close(self) -> None:
        self.f.close()


def walk_routes(split: Split, owners: dict, parts: int, opener: Opener = open_local) -> tuple | None:
    """A split of a plain pcap file walked as :func:`route_range` walks a range: ``(packets,
    first ts, last ts, skipped, link type, routes)``, ``routes`` per owner the bytes of its
    ``array("d")`` of (number in the split, ts, data offset, length). None when the split is
    not plain pcap or its walk found damage: :class:`SplitWalk` reads it then (Spark's
    executors: the owners read their packets from the file, the shuffle carries only these)."""
    window = Window(split.path, opener)
    try:
        head = split.header or window.get(0, 24)
        fmt = None if head is None else header_format(head)
        if fmt is None:
            return None
        order, scale, linktype = fmt
        unpack = struct.Struct(order + "IIII").unpack_from
        start = split.start if split.start else 24
        routes = [array("d") for _ in range(parts)]
        full = [io.BytesIO() for _ in range(parts)]  # (what a walk flushes as an array fills)
        clean, count, first_ts, last_ts, skipped = _walk(
            window, start, split.end, unpack, scale, linktype, owners, parts, routes, full
        )
    finally:
        window.close()
    if not clean:
        return None
    tails = [f.getvalue() + r.tobytes() for f, r in zip(full, routes, strict=True)]
    return count, first_ts, last_ts, skipped, linktype, tails


FLUSH_ROUTES = 1 << 16  # route entries a walk holds per owner before writing them out


def _walk(window, start, end, unpack, scale, linktype, owners, parts, routes, files) -> tuple:  # noqa: C901 - the per-packet loop, inline
    """(clean, count, first ts, last ts, skipped) of the records in ``[start, end)``; each
    packet's route appended to its owner's array (written to its file as it fills)."""
    skipped: dict[str, list[int]] = {}
    route = Router(owners, parts)
    count = 0
    first_ts = None
    last_ts = 0.0
    pos = start
    while pos < end:
        head = window.get(pos, 16) if pos + 16 <= end else None
        if head is None:
            return False, count, first_ts, last_ts, skipped
        sec, frac, incl, orig = unpack(head)
        data_at = pos + 16
        data = window.get(data_at, incl) if incl == orig and 0 < incl <= MAX_RECORD else None
        if data is None or data_at + incl > end:
            return False, count, first_ts, last_ts, skipped
        count += 1
        ts = sec + frac * scale
        if first_ts is None:
            first_ts = ts
        last_ts = ts
        seg = decode_tcp(linktype, data)
        if type(seg) is Skip:
            count_skip(skipped, skip_text(seg, linktype), count)
        else:
            o = route(seg)
            r = routes[o]
            r.extend((count, ts, data_at, incl))
            if len(r) >= 4 * FLUSH_ROUTES:
                r.tofile(files[o])
                del r[:]
        pos = data_at + incl
    return pos == end, count, first_ts, last_ts, skipped


# an owner reads its packets in spans: packets closer than READ_GAP bytes in one read of at most
# READ_SPAN. A dense owner (a few owners of a file) reads the file nearly whole, in big reads; a
# sparse one (the 80 owners of a 10 GB file on Spark) reads its own packets, not the file 80
# times over
READ_GAP = 16 << 10
READ_SPAN = 4 << 20


def read_routed(f: BinaryIO, path: str, linktype: int, r: array, base: int) -> Iterator[tuple]:
    """The packets that routes ``r`` (an owner's: number, ts, offset, length each) name in the
    file ``f`` (``path``), as ``(index, ts, segment)``; ``base`` the number of the packets
    before their range."""
    n = len(r) // 4
    i = 0
    while i < n:
        start = int(r[4 * i + 2])
        end = start + int(r[4 * i + 3])
        j = i + 1
        while j < n:
            at = int(r[4 * j + 2])
            stop = at + int(r[4 * j + 3])
            if at - end > READ_GAP or stop - start > READ_SPAN:
                break
            end = max(end, stop)
            j += 1
        f.seek(start)
        buf = memoryview(f.read(end - start))
        if len(buf) < end - start:
            raise OSError(f"{path} changed while it was read")
        for k in range(4 * i, 4 * j, 4):
            at = int(r[k + 2]) - start
            yield base + int(r[k]), r[k + 1], decode_tcp(linktype, buf[at : at + int(r[k + 3])])
        i = j
