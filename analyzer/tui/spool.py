"""The TUI's temporary files: the spool of frame payloads (:class:`Spool`, the frames' metadata in
front of their payloads, read back by :class:`FrameRef`) and what their failures raise
(:class:`SpoolError`). The capture's bytes are not kept in memory: a row of the index keeps only
where its frames are spooled."""

from __future__ import annotations

import os
import struct
import tempfile
from array import array
from typing import IO

from analyzer.model import Frame, Message


class SpoolError(Exception):
    """The TUI's temporary files (the spool, the spilled rows) could not be made or written
    (a full disk, an unusable temporary directory): what happened, for the user."""


def temp_file(prefix: str, directory: str | None) -> IO[bytes]:
    """An anonymous temporary file, or :class:`SpoolError` saying why not."""
    try:
        return tempfile.TemporaryFile(prefix=prefix, dir=directory)  # noqa: SIM115
    except OSError as e:
        where = f" in {directory}" if directory else " (TMPDIR)"
        raise SpoolError(f"cannot create the TUI's temporary file{where}: {e}") from e


class Spool:
    """An append-only temporary file of frame payloads (and their packet numbers).

    The indexing thread appends (:meth:`put`) and calls :meth:`flush` before it hands rows to
    the UI; the UI thread reads what was flushed (:meth:`get`, ``os.pread``: no shared file
    position). What is put waits in memory until :meth:`flush` (one write per batch of rows,
    not one or two per frame). The file is deleted when closed (and by the OS if the process
    dies).
    """

    def __init__(self, directory: str | None = None) -> None:
        self._f = temp_file("kafka-analyzer-tui-", directory)
        self._fd = self._f.fileno()
        self._buf = bytearray()
        self.size = 0

    def put(self, data: bytes | memoryview, more: bytes | memoryview = b"") -> int:
        """Append ``data`` (and ``more`` after it); where ``data`` starts."""
        off = self.size
        buf = self._buf
        buf += data
        buf += more
        self.size = off + len(data) + len(more)
        return off

    def flush(self) -> None:
        try:
            if self._buf:
                self._f.write(self._buf)
                self._buf = bytearray()
            self._f.flush()
        except OSError as e:
            raise SpoolError(f"cannot write the TUI's temporary file of frames: {e.strerror or e}") from e

    def get(self, offset: int, length: int) -> bytes:
        return os.pread(self._fd, length, offset)

    def close(self) -> None:
        self._f.close()


FRAME_HEAD = struct.Struct("<Bqqqddi")  # direction, stream offset, length, bytes, first/last ts, packets


class FrameRef:
    """Where one frame is: its spooled payload, packet numbers and packet offsets, and its
    metadata (spooled in front of its payload: a row keeps only where it starts).

    ``keep`` holds a message that is not re-decoded (a raw SASL token, decoded with its
    connection's mechanism at capture time; these are small)."""

    __slots__ = (
        "direction",
        "stream_offset",
        "length",
        "nbytes",
        "ts_first",
        "ts_last",
        "spool",
        "packets",
        "keep",
    )

    def __init__(self, frame: Frame, spool: Spool, keep: Message | None) -> None:
        self.direction = frame.direction
        self.stream_offset = frame.offset
        self.length = frame.length
        self.ts_first = frame.ts_first
        self.ts_last = frame.ts_last
        self.nbytes = len(frame.payload)  # the size field's value for whole frames
        self.packets = len(frame.packet_indexes)
        self.spool = spool_frame(frame, spool)
        self.keep = keep

    @classmethod
    def load(cls, spool: Spool, offset: int, keep: Message | None) -> FrameRef:
        """The frame spooled at ``offset`` (by :func:`spool_frame`)."""
        ref = cls.__new__(cls)
        (
            ref.direction,
            ref.stream_offset,
            ref.length,
            ref.nbytes,
            ref.ts_first,
            ref.ts_last,
            ref.packets,
        ) = FRAME_HEAD.unpack(spool.get(offset, FRAME_HEAD.size))
        ref.spool = offset
        ref.keep = keep
        return ref

    def frame(self, conn: int, kind: str, spool: Spool) -> Frame:
        n, count = self.nbytes, self.packets
        raw = spool.get(self.spool + FRAME_HEAD.size, n + 8 * (2 * count - 1 if count > 1 else count))
        pk = array("q")
        pk.frombytes(raw[n:])
        return Frame(
            conn,
            self.direction,
            self.stream_offset,
            self.length,
            raw[:n],
            self.ts_first,
            self.ts_last,
            tuple(pk[:count]),
            kind,
            (0, *pk[count:]) if count and min(pk[count:], default=0) >= 0 else (),
        )


def spool_frame(frame: Frame, spool: Spool) -> int:
    """Spool ``frame``: its metadata, payload, packet numbers and where each packet after the
    first starts in the frame (the first starts at 0; nothing more for the frames that fit in
    one packet; -1: not known, a frame not built by the framer). Where it starts."""
    pk = frame.packet_indexes
    spooled = array("q", pk)
    if len(pk) > 1:
        offs = frame.packet_offsets
        spooled.extend(offs[1:] if len(offs) == len(pk) else (-1,) * (len(pk) - 1))
    payload = frame.payload
    head = FRAME_HEAD.pack(
        frame.direction, frame.offset, frame.length, len(payload), frame.ts_first, frame.ts_last, len(pk)
    )
    off = spool.put(head, payload)
    spool.put(spooled.tobytes())
    return off
