"""Capture sets: several files analysed as the one recording they were cut from.

People capture with rotation (``tcpdump -C 1000 -W 50``, ``-G 3600``, ``editcap -c``): every
connection crossing a file edge is cut in two when the pieces are analysed one by one (a request
in one file, its response in the next; a frame split across the edge). :func:`plan` orders the
files by time and groups them into *chains*: files whose time ranges follow each other without
overlap are pieces of one recording; files that overlap in time (two hosts capturing at once)
go to different chains. :class:`CaptureSet` is the :class:`~analyzer.pipeline.Source` of one
chain: its packets, file after file, numbered on from one file to the next, through one pipeline,
so every flow is stitched across the edges exactly as if the files had been concatenated.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import BinaryIO

from analyzer.capture.files import CaptureFile
from analyzer.issues import CAPTURE_UNREADABLE
from analyzer.model import Issue
from analyzer.plain import replace
from analyzer.reassembly.packet import decode_tcp

# Files whose ranges overlap by less than this are still one recording: rotated pieces can share
# a timestamp at the edge, and clocks of one host do not step back further.
OVERLAP_TOLERANCE = 0.001


# Pieces of one recording follow each other closely: a file starting within this many seconds
# of the previous one's end continues it even when no connection crosses the edge.
MAX_EDGE_GAP = 1.0


class Span:
    """What :func:`plan` learns of one file: its time range from a read of the packets, and its
    TCP flows only when an edge needs them (a second read: most edges are decided by time)."""

    __slots__ = ("path", "first_ts", "last_ts", "packets", "_flows")

    def __init__(
        self,
        path: str,
        first_ts: float | None,
        last_ts: float | None,
        packets: int,
        flows: frozenset | None = None,
    ) -> None:
        self.path = path
        self.first_ts = first_ts  # None: no packet (empty, damaged or not a capture)
        self.last_ts = last_ts
        self.packets = packets
        self._flows = flows

    def __getstate__(self) -> tuple:  # Spark ships spans read on executors to the driver
        return (self.path, self.first_ts, self.last_ts, self.packets, self._flows)

    def __setstate__(self, state: tuple) -> None:
        self.path, self.first_ts, self.last_ts, self.packets, self._flows = state

    @property
    def flows(self) -> frozenset:
        """The TCP connections (address pairs, either direction) in the file."""
        if self._flows is None:
            self._flows = _flows(CaptureFile(self.path))
        return self._flows


def _flows(cap: CaptureFile) -> frozenset:
    flows = set()
    for _, _ts, linktype, data in cap:
        seg = decode_tcp(linktype, data)
        if type(seg) is tuple:
            a, b = (seg[0], seg[1]), (seg[2], seg[3])
            flows.add((a, b) if a <= b else (b, a))
    return frozenset(flows)


def span(path: str, source: BinaryIO | None = None) -> Span:
    """The time range of one capture file (a read of the packet headers). ``source``: the file
    already open (a stream of a remote file, ``path`` then names it); its flows are read in the
    same pass, as the stream cannot be read again."""
    first = last = None
    n = 0
    flows: set | None = None if source is None else set()
    for _, ts, linktype, data in CaptureFile(path if source is None else source):
        if first is None:
            first = ts
        last = ts
        n += 1
        if flows is not None:
            seg = decode_tcp(linktype, data)
            if type(seg) is tuple:
                a, b = (seg[0], seg[1]), (seg[2], seg[3])
                flows.add((a, b) if a <= b else (b, a))
    return Span(os.fspath(path), first, last, n, None if flows is None else frozenset(flows))


def _continues(chain: Sequence[Span], nxt: Span) -> bool:
    """Can ``nxt`` be the piece recorded right after the ``chain``'s last one?

    After a silence longer than :data:`MAX_EDGE_GAP`, a connection that goes on in ``nxt`` says
    so; it may have been quiet in the last piece and seen only in an earlier one (a consumer
    waiting out a group's 3-second rebalance delay while a piece of a few packets closes), so
    the chain's pieces are asked newest first (each file's flows are read at most once)."""
    prev = chain[-1]
    assert prev.last_ts is not None and nxt.first_ts is not None
    if nxt.first_ts < prev.last_ts - OVERLAP_TOLERANCE:
        return False  # overlapping time: another capture
    if nxt.first_ts - prev.last_ts <= MAX_EDGE_GAP:
        return True
    return any(not s.flows.isdisjoint(nxt.flows) for s in reversed(chain))


def plan(paths: Sequence[str]) -> list[list[str]]:
    """Group capture files into chains, each the pieces of one recording in time order.

    Files are taken by their first packet's time; each joins the chain it continues: no overlap
    in time, and either a start within :data:`MAX_EDGE_GAP` of the chain's end or a connection
    it shares with the chain (the closest such chain), else it starts a chain of its own. Files
    without packets stay on their own (their damage is reported when they are analysed). The
    chains are returned in the order of their first file.
    """
    return chain_spans([span(p) for p in paths])


def chain_spans(spans: Sequence[Span]) -> list[list[str]]:
    """:func:`plan` over spans already read (Spark reads them on its executors)."""
    timed = sorted((s for s in spans if s.first_ts is not None), key=lambda s: (s.first_ts, s.path))
    chains: list[list[Span]] = []
    for s in timed:
        best = None
        for chain in chains:
            if _continues(chain, s) and (best is None or chain[-1].last_ts > best[-1].last_ts):  # type: ignore[operator]  # timed spans: last_ts is set with first_ts
                best = chain
        if best is None:
            chains.append([s])
        else:
            best.append(s)
    out = [[s.path for s in chain] for chain in chains]
    out.extend([s.path] for s in spans if s.first_ts is None)
    return out


def chain_name(paths: Sequence[str]) -> str:
    """The name of files read as one recording: the first's, ``(+N more)`` after it for a
    chain of several (the export's ``file``, the Spark tables' ``capture``)."""
    more = len(paths) - 1
    return paths[0] if not more else f"{paths[0]} (+{more} more)"


class CaptureSet:
    """The packets of several capture files, one after the other, as one source.

    Packet numbers go on from file to file (``files`` maps them back: the number of the first
    packet of each file). Damage in one file is reported with the file's name and does not stop
    the next file: everything readable is analysed.
    """

    live = False

    def __init__(
        self,
        paths: Sequence[str | os.PathLike],
        opener: Callable[[str], BinaryIO] | None = None,
        sizes: Sequence[int] | None = None,
    ) -> None:
        """``opener``: opens a path as a binary stream (files on a remote file system, whose
        ``sizes`` the caller knows); by default the paths are local files."""
        self.paths = [os.fspath(p) for p in paths]
        self._opener = opener
        self.name = chain_name(self.paths)
        self.issues: list[Issue] = []
        self.secrets: list[bytes] = []  # TLS key logs of the files' pcapng Decryption Secrets Blocks
        self.files: list[tuple[str, int]] = []  # (path, number of its first packet)
        self.bytes_read = 0
        self.size: int | None = 0
        if sizes is not None:
            self.size = sum(sizes)
        for p in self.paths if sizes is None else ():
            try:
                self.size += os.path.getsize(p)
            except OSError:
                self.size = None
                break
        self._done = 0  # bytes of the files already read (on disk)
        self._current: CaptureFile | None = None
        self.format: str | None = None
        self.compression: str | None = None

    @property
    def position(self) -> int:
        cur = self._current
        return self._done + (cur.position if cur is not None else 0)

    def __iter__(self) -> Iterator[tuple]:
        number = 0
        for path in self.paths:
            try:
                f = self._opener(path) if self._opener is not None else None
            except OSError as exc:  # the file went away, or its file system refused it
                name = os.path.basename(path)
                self.issues.append(CAPTURE_UNREADABLE(f"{name}: cannot open {path}: {exc}", where=name))
                continue
            cap = self._current = CaptureFile(path if f is None else f)
            cap.secrets = self.secrets  # in force from where each file holds them, as in one file
            self.files.append((path, number + 1))
            base = number
            try:
                for index, ts, linktype, data in cap:
                    number = base + index
                    yield (number, ts, linktype, data)
            finally:
                if f is not None:
                    f.close()
            self.bytes_read += cap.bytes_read
            if self.format is None:
                self.format, self.compression = cap.format, cap.compression
            name = os.path.basename(path)
            self.issues.extend(
                replace(i, message=f"{name}: {i.message}", where=i.where or name) for i in cap.issues
            )
            self._done += cap.size or 0
            self._current = None

    def file_of(self, number: int) -> tuple[str, int]:
        """The file a packet number comes from, and its number inside that file."""
        found = self.files[0] if self.files else (self.paths[0], 1)
        for path, first in self.files:
            if first > number:
                break
            found = (path, first)
        return found[0], number - found[1] + 1
