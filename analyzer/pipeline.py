"""The only place that chains the stages: packets -> segments -> streams -> frames -> exchanges.

:class:`Pipeline` is sans-IO too (``feed(packet)`` / ``finish()`` return events), so files, live
capture, Spark executors and tests all use it the same way; :func:`analyze_file` drives it over a
capture file. Events, in capture order:

* :class:`~analyzer.model.Exchange`: a request and its response (either may be missing);
* :class:`StreamEvent`: a connection-level issue (gap, resynchronisation, not Kafka, ...);
* :class:`ConnectionEnd`: a connection finished (with its :class:`~analyzer.model.ConnInfo`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from analyzer.dissect.framing import KafkaConnection
from analyzer.dissect.message import DEFAULT_OPTIONS, Options
from analyzer.issues import CAPTURE_NO_TCP
from analyzer.model import ConnInfo, Endpoint, Gap, Issue
from analyzer.reassembly.packet import decode_tcp
from analyzer.reassembly.tcp import ConnClose, ConnOpen, Reassembler
from analyzer.session.knowledge import Knowledge
from analyzer.session.pairing import ConnectionPairer

# Ports brokers usually listen on: only a tie-breaker when content cannot tell who is the client
KAFKA_PORTS = frozenset((9092, 9093, 9094, 9095, 9096, 19092, 29092, 39092))


class StreamEvent(NamedTuple):
    conn: ConnInfo
    direction: int
    issue: Issue
    ts: float


class ConnectionEnd(NamedTuple):
    conn: ConnInfo


class _Conn:
    __slots__ = ("info", "framer", "pairer")

    def __init__(self, info: ConnInfo, framer: KafkaConnection, pairer: ConnectionPairer):
        self.info = info
        self.framer = framer
        self.pairer = pairer


class Pipeline:
    def __init__(
        self,
        opts: Options = DEFAULT_OPTIONS,
        ports: Iterable[int] = (),
        max_buffer: int = 4 << 20,
        idle_timeout: float | None = None,
    ):
        self.opts = opts
        self.ports = frozenset(ports)
        self.reasm = Reassembler(max_buffer=max_buffer, idle_timeout=idle_timeout)
        self.conns: dict[int, _Conn] = {}
        self.knowledge = Knowledge()
        self.packets = 0
        self.skipped = Counter()  # why packets were not TCP segments we could use
        self.last_ts = 0.0
        self.first_ts: float | None = None

    def feed(self, index: int, ts: float, linktype: int, data) -> list:
        self.packets += 1
        if self.first_ts is None:
            self.first_ts = ts
        self.last_ts = ts
        seg = decode_tcp(linktype, data)
        if type(seg) is str:
            self.skipped[seg] += 1
            return []
        events = self.reasm.feed(ts, index, seg)
        return self._events(events) if events else []

    def finish(self) -> list:
        return self._events(self.reasm.flush())

    def expire(self, now: float) -> list:
        return self._events(self.reasm.expire(now))

    def _events(self, events: list) -> list:
        out: list = []
        conns = self.conns
        for ev in events:
            t = type(ev)
            if t is ConnOpen:
                self._open(ev)
                continue
            if t is ConnClose:
                c = conns.pop(ev.conn, None)
                if c is None:
                    continue
                c.info.closed = ev.reason
                c.info.ts_last = ev.ts
                for issue in c.framer.flush():
                    out.append(StreamEvent(c.info, -1, issue, ev.ts))
                out.extend(c.pairer.flush())
                c.info.not_kafka = c.framer.not_kafka
                out.append(ConnectionEnd(c.info))
                continue
            c = conns[ev.conn]
            info = c.info
            info.ts_last = ev.ts
            if t is Gap:
                info.gaps[ev.direction] += 1
            else:
                info.bytes[ev.direction] += len(ev.data)
            frames, issues = c.framer.feed(ev)
            for issue in issues:
                out.append(StreamEvent(info, ev.direction, issue, ev.ts))
            if frames:
                if info.client_direction is None:
                    info.client_direction = c.framer.client
                for f in frames:
                    info.frames[f.direction] += 1
                    out.extend(c.pairer.feed(f))
        return out

    def _open(self, ev: ConnOpen) -> None:
        info = ConnInfo(ev.conn, Endpoint(ev.src, ev.sport), Endpoint(ev.dst, ev.dport), ev.ts, ev.syn)
        client = None
        if ev.dport in self.ports:
            client = 0
        elif ev.sport in self.ports:
            client = 1
        port_client = 0 if ev.dport in KAFKA_PORTS else 1 if ev.sport in KAFKA_PORTS else None
        framer = KafkaConnection(ev.conn, ev.syn, client=client, port_client=port_client)
        self.conns[ev.conn] = _Conn(info, framer, ConnectionPairer(info, self.opts, self.knowledge))


def analyze_file(cap, p: Pipeline | None = None) -> Iterator:
    """Events of a whole capture file (a :class:`~analyzer.capture.files.CaptureFile`).

    Damage in the file ends the packets early; the events of everything before it still come,
    then a :class:`StreamEvent` with the capture issue (direction -1, no connection). Pass your
    own :class:`Pipeline` to choose options and to read its counters afterwards.
    """
    if p is None:
        p = Pipeline()
    feed = p.feed
    for index, ts, linktype, data in cap:
        evs = feed(index, ts, linktype, data)
        if evs:
            yield from evs
    yield from p.finish()
    for issue in cap.issues:
        yield StreamEvent(None, -1, issue, p.last_ts)  # type: ignore[arg-type]
    if p.packets and not p.reasm.connections:
        yield StreamEvent(None, -1, CAPTURE_NO_TCP("no TCP traffic in the capture"), p.last_ts)
