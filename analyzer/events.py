"""Every event the stages emit, in pipeline order, and the unions consumers dispatch on.

::

    Packet            capture         files, stdin, live: (number, ts, linktype, data)
    Segment | Skip    reassembly      decode_tcp: a TCP segment, or why the packet is not one
    ConnOpen | StreamData | Gap | ConnClose
                      reassembly      Reassembler.feed / flush / expire
    Exchange | ConnIssue | ConnectionEnd | CaptureIssue | CaptureStats
                      pipeline        Pipeline.feed / finish / expire, Analysis.events

Frames, messages and exchanges (the decoded data) are in :mod:`analyzer.model`; this module
names the events that carry them. Consumers dispatch on ``type(ev)`` (``is`` comparisons: the
hot path), never on attributes. Packets and segments are plain tuples (aliases below); the
other hot-path events are NamedTuples.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

from analyzer.model import ConnInfo, Exchange, Issue

# The two hot-path shapes are plain tuples: a NamedTuple built per packet costs about 0.3 us,
# 5-10% of the reading and reassembly time. These aliases name their positions for annotations.
Packet = tuple[int, float, int, memoryview | bytes]
"""(number, ts, linktype, data): what every capture source yields; number is 1-based, as tshark
numbers frames."""

Segment = tuple[bytes, int, bytes, int, int, int, int, memoryview | bytes]
"""(src, sport, dst, dport, seq, ack, flags, payload): a TCP segment from ``decode_tcp``, raw
address bytes (4 or 16) and the payload a slice of the packet; a packet that is not one gives
a :class:`Skip`."""


class Skip(StrEnum):
    """Why ``decode_tcp`` gives no TCP segment for a packet: its result instead of a
    :data:`Segment` (tell them apart with ``type(r) is Skip``). The members are constants, so
    returning one costs what returning a string did; the value is the text ``stats`` counts the
    packet under (the pipeline adds the number to ``unknown linktype``)."""

    NOT_IP = "not ip"
    NOT_TCP = "not tcp"
    FRAGMENT = "fragment"
    TRUNCATED = "truncated"
    UNKNOWN_LINKTYPE = "unknown linktype"


class ConnOpen(NamedTuple):
    """A connection is first seen (``syn``: its handshake was captured)."""

    conn: int
    src: str  # the direction-0 sender (SYN sender if the handshake was captured)
    sport: int
    dst: str
    dport: int
    ts: float
    syn: bool
    packet_index: int


class StreamData(NamedTuple):
    """Contiguous bytes of one direction of a connection, at stream ``offset``."""

    conn: int  # connection id
    direction: int  # 0: from the connection's first sender (SYN side if seen), 1: the other
    offset: int
    data: memoryview | bytes
    ts: float
    packet_index: int


class Gap(NamedTuple):
    """Bytes of one direction that were never captured (never zero-filled)."""

    conn: int
    direction: int
    offset: int
    length: int
    ts: float
    packet_index: int


class ConnClose(NamedTuple):
    """A connection ended; ``by``: the direction that sent the first FIN or the RST (None when
    neither was captured)."""

    conn: int
    ts: float
    reason: str  # "fin", "rst", "reused", "end of capture", "idle"
    by: int | None = None


class ConnIssue(NamedTuple):
    """A connection-level issue (a gap, a resynchronisation, not Kafka...); ``direction`` is
    -1 when it concerns the whole connection."""

    conn: ConnInfo
    direction: int
    issue: Issue
    ts: float


class ConnectionEnd(NamedTuple):
    """A connection finished, with everything known of it."""

    conn: ConnInfo


class CaptureIssue(NamedTuple):
    """Damage or a fact about the capture source itself (truncated file, not a capture, no TCP)."""

    issue: Issue
    ts: float | None


class CaptureStats(NamedTuple):
    """A live source's kernel counters, emitted when its drop count grows (and at the end of a
    run that dropped packets): ``received`` counts the dropped packets too."""

    ts: float | None
    received: int
    dropped: int


StreamEvent = ConnOpen | StreamData | Gap | ConnClose
"""What :class:`~analyzer.reassembly.tcp.Reassembler` returns."""

Event = Exchange | ConnIssue | ConnectionEnd | CaptureIssue | CaptureStats
"""What :class:`~analyzer.pipeline.Pipeline` and :class:`~analyzer.pipeline.Analysis` emit."""
