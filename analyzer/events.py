"""Every event the stages emit, in pipeline order, and the unions consumers dispatch on.

::

    Packet            capture         files, stdin, live: (number, ts, linktype, data)
    Segment | Skip    reassembly      decode_tcp: a TCP segment, or why the packet is not one
    ConnOpen | StreamData | Gap | ConnClose
                      reassembly      Reassembler.feed / flush / expire
    Exchange | ConnIssue | ConnectionEnd | CaptureIssue
                      pipeline        Pipeline.feed / finish / expire, Analysis.events

Frames, messages and exchanges (the decoded data) are in :mod:`analyzer.model`; this module
names the events that carry them. Consumers dispatch on ``type(ev)`` (``is`` comparisons: the
hot path), never on attributes. Hot-path events are NamedTuples: the cheapest objects Python
builds, with names for readability.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

from analyzer.model import ConnInfo, Exchange, Issue


class Packet(NamedTuple):
    """One captured packet: what every capture source yields."""

    number: int  # 1-based, as tshark numbers frames
    ts: float  # seconds since the epoch
    linktype: int
    data: memoryview | bytes


class Segment(NamedTuple):
    """A TCP segment: addresses are the raw bytes (4 or 16), ``payload`` a slice of the packet."""

    src: bytes
    sport: int
    dst: bytes
    dport: int
    seq: int
    ack: int
    flags: int
    payload: memoryview | bytes


class Skip(StrEnum):
    """Why a packet is not a usable TCP segment (counted per reason, shown by ``stats``)."""

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
    """A connection ended."""

    conn: int
    ts: float
    reason: str  # "fin", "rst", "reused", "end of capture", "idle"


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


StreamEvent = ConnOpen | StreamData | Gap | ConnClose
"""What :class:`~analyzer.reassembly.tcp.Reassembler` returns."""

Event = Exchange | ConnIssue | ConnectionEnd | CaptureIssue
"""What :class:`~analyzer.pipeline.Pipeline` and :class:`~analyzer.pipeline.Analysis` emit."""
