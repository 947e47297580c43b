"""pcap files written as packets arrive, rotated by size and time like tcpdump's ``-C``/``-G``;
and :func:`copy_packets`, some packets of capture files copied as they are (``read -w``).

Classic pcap (little-endian, microseconds). Records of a block of packets are joined and written
at once into a 1 MiB buffer, flushed every second, so an interrupted capture still leaves
readable files. Names: with ``rotate_seconds`` the path is an ``strftime`` pattern of the
file's first packet time (``cap-%H%M%S.pcap``); with ``rotate_mb`` the second file of a name
gets ``1`` appended, the third ``2``... (``cap.pcap``, ``cap.pcap1``, ``cap.pcap2``), as
tcpdump does.
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Callable, Sequence
from typing import BinaryIO

_HEADER = struct.Struct("<IHHiIII")
_RECORD = struct.Struct("<IIII")
SNAPLEN = 262144


def pcap_header(linktype: int, snaplen: int = SNAPLEN) -> bytes:
    return _HEADER.pack(0xA1B2C3D4, 2, 4, 0, 0, snaplen, linktype)


class RotatingPcapWriter:
    def __init__(
        self,
        path: str,
        linktype: int,
        rotate_mb: float | None = None,
        rotate_seconds: float | None = None,
    ):
        self.pattern = path
        self.linktype = linktype
        self.limit = int(rotate_mb * 1_000_000) if rotate_mb else None
        self.seconds = rotate_seconds or None
        self.f: BinaryIO | None = None
        self.size = 0
        self.count = 0  # files opened under the current name (the -C suffix)
        self.base = path
        self.started: float | None = None  # first packet time of the current -G interval
        self.files: list[str] = []
        self.last_flush = time.monotonic()
        if self.seconds is None:
            self._open(path)

    def _open(self, name: str) -> None:
        if self.f is not None:
            self.f.close()
        self.f = open(name, "wb", buffering=1 << 20)  # noqa: SIM115 - closed by close()/rotation
        self.f.write(pcap_header(self.linktype))
        self.size = _HEADER.size
        self.files.append(name)

    def _rotate_time(self, ts: float) -> None:
        self.started = ts
        self.base = time.strftime(self.pattern, time.localtime(ts))
        self.count = 0
        self._open(self.base)

    def write_block(self, packets) -> None:
        """``packets``: ``(ts, original length, data)`` tuples."""
        parts: list[bytes] = []
        size = self.size
        limit, seconds = self.limit, self.seconds
        pack = _RECORD.pack
        for ts, length, data in packets:
            n = len(data)
            if (seconds is not None and (self.started is None or ts - self.started >= seconds)) or (
                limit is not None and size + 16 + n > limit and size > _HEADER.size
            ):
                if parts:
                    assert self.f is not None  # parts are only gathered once a file is open
                    self.f.write(b"".join(parts))
                    parts = []
                if seconds is not None and (self.started is None or ts - self.started >= seconds):
                    self._rotate_time(ts)
                else:
                    self.count += 1
                    self._open(f"{self.base}{self.count}")
                size = self.size
            sec = int(ts)
            usec = min(int(round((ts - sec) * 1e6)), 999_999)
            parts.append(pack(sec, usec, n, length))
            parts.append(data)
            size += 16 + n
        if parts:
            assert self.f is not None  # the rotation above opened one if there was none
            self.f.write(b"".join(parts))
        self.size = size
        now = time.monotonic()
        if now - self.last_flush >= 1.0 and self.f is not None:
            self.f.flush()
            self.last_flush = now

    def reopen(self) -> None:
        """After ``SIGHUP`` (logrotate: rename, then signal): if the current file's name no
        longer names the file being written (renamed or removed), a new file (with its pcap
        header) is started under that name; else the file is flushed and writing goes on."""
        f = self.f
        if f is None:
            return
        name = self.files[-1]
        try:
            same = os.path.samestat(os.stat(name), os.fstat(f.fileno()))
        except FileNotFoundError:
            same = False
        if same:
            f.flush()
        else:
            self._open(name)

    def close(self) -> None:
        if self.f is None and self.seconds is not None:  # -G and no packet: still one valid file
            self._rotate_time(time.time())
        if self.f is not None:
            self.f.close()
            self.f = None


class CopyError(Exception):
    """The captures cannot be copied into one file (pieces of different formats)."""


def copy_packets(
    paths: Sequence[str | os.PathLike],
    keep: Callable[[int, int, memoryview | bytes], bool],
    out: BinaryIO,
) -> int:
    """Copy the packets ``keep(number, linktype, data)`` wants from the capture files ``paths``
    (the pieces of one recording, packets numbered on from one file to the next as
    :class:`~analyzer.capture.sets.CaptureSet` numbers them) to ``out``, in capture order, as
    they are in the files: a pcap's file header and records, or a pcapng's every non-packet
    block (section headers, interfaces, decryption secrets, name resolution...) and the packet
    blocks kept, so timestamps, lengths, interfaces and comments stay what they were.
    Compressed files are written decompressed. Returns the number of packets written; raises
    :class:`CopyError` when the pieces are not all pcap, or all pcapng, the same way."""
    from analyzer.capture.files import CaptureFile

    written = 0
    number = 0
    fmt: str | None = None
    pcap_header: bytes | None = None
    for path in paths:
        cap = CaptureFile(path)
        base = number
        for index, _linktype, data, record in cap.records():
            if index:
                number = base + index
                if keep(number, _linktype, data):
                    out.write(record)
                    written += 1
                continue
            if fmt is None:
                fmt = cap.format
            elif cap.format != fmt:
                raise CopyError(f"{os.fspath(path)} is {cap.format}, the pieces before it {fmt}")
            if fmt == "pcap":  # one file header: the pieces' own must say the same
                head = bytes(record)
                if pcap_header is None:
                    pcap_header = head
                    out.write(head)
                elif head != pcap_header:
                    raise CopyError(
                        f"{os.fspath(path)}: a pcap header unlike the first file's "
                        "(link type, snaplen or time resolution)"
                    )
            else:
                out.write(record)
    return written
