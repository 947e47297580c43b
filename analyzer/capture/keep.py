"""Which packets carry some exchanges (``read -w``): a consumer of the exchanges a run keeps
(after the display filter), then a ``keep(number, linktype, data)`` for
:func:`~analyzer.capture.pcapwriter.copy_packets`, the second pass over the capture.

Kept: every packet whose bytes make up a request or response frame of a kept exchange
(:attr:`~analyzer.model.Frame.packet_indexes`) and, of the exchanges' connections, the packets
that carry no data: the handshake (SYN, SYN-ACK and the ACK after it), every FIN and RST, and
the bare acknowledgements (with them, Wireshark and the reassembler tell at once the bytes left
out from the bytes still to come: a frame after them is not held back). A TLS connection is
kept whole (its records are numbered and chained: Wireshark decrypts none without the ones
before), encrypted as it was on the wire.

Memory: a bit per packet number up to the last kept one, and a few numbers per connection of a
kept exchange; no packet is held.
"""

from __future__ import annotations

import socket

from analyzer.events import Event
from analyzer.model import ConnInfo, Exchange
from analyzer.reassembly.packet import ACK, FIN, RST, SYN, decode_tcp


def _raw(ip: str) -> bytes:
    return socket.inet_pton(socket.AF_INET6 if ":" in ip else socket.AF_INET, ip)


class _Track:
    """One kept connection in the second pass: from its opening packet until a new SYN on the
    same addresses and ports starts another connection."""

    __slots__ = ("first", "a_key", "tls", "isn", "ended")

    def __init__(self, info: ConnInfo) -> None:
        self.first = info.first_packet
        self.a_key = (_raw(info.a.ip), info.a.port, _raw(info.b.ip), info.b.port)
        self.tls = info.tls is not None
        self.isn: int | None = None  # the sequence number of its SYN
        self.ended = False


class ExchangePackets:
    """``event(ev)`` for :meth:`~analyzer.pipeline.Analysis.run` (pass 1), then :meth:`keep`
    (pass 2, in capture order)."""

    def __init__(self) -> None:
        self.bits = bytearray()  # bit n: packet n carries a kept frame
        self.exchanges = 0
        self.conns: dict[int, ConnInfo] = {}  # id -> the connections of the kept exchanges
        self._tracks: dict[tuple, list[_Track]] | None = None  # by (src, sport, dst, dport)

    def event(self, ev: Event) -> None:
        if type(ev) is not Exchange:
            return
        self.exchanges += 1
        self.conns.setdefault(ev.conn.id, ev.conn)
        bits = self.bits
        for m in (ev.request, ev.response):
            if m is None:
                continue
            for n in m.frame.packet_indexes:
                i = n >> 3
                if i >= len(bits):
                    bits.extend(bytes(max(i + 1 - len(bits), len(bits))))
                bits[i] |= 1 << (n & 7)

    def _index(self) -> dict[tuple, list[_Track]]:
        tracks: dict[tuple, list[_Track]] = {}
        for info in self.conns.values():
            t = _Track(info)
            src, sport, dst, dport = t.a_key
            for key in (t.a_key, (dst, dport, src, sport)):
                tracks.setdefault(key, []).append(t)
        for ts in tracks.values():
            ts.sort(key=lambda t: t.first)
        return tracks

    def keep(self, n: int, linktype: int, data) -> bool:
        """Whether packet number ``n`` goes into the output (called for every packet, in order)."""
        i = n >> 3
        if i < len(self.bits) and self.bits[i] >> (n & 7) & 1:
            return True
        if self._tracks is None:
            self._tracks = self._index()
        if not self._tracks:
            return False
        seg = decode_tcp(linktype, data)
        if type(seg) is not tuple:
            return False
        src, sport, dst, dport, seq, _ack, flags, payload = seg
        key = (src, sport, dst, dport)
        candidates = self._tracks.get(key)
        if candidates is None:
            return False
        t = None
        for c in candidates:  # the connection opened last at or before this packet
            if c.first > n:
                break
            t = c
        if t is None or t.ended:
            return False
        if flags & SYN and not flags & ACK:
            if n == t.first:
                t.isn = seq
                return True
            if seq == t.isn and key == t.a_key:
                return True  # a retransmitted SYN
            t.ended = True  # a new connection on the same addresses and ports
            return False
        if t.tls:
            return True
        if flags & SYN:  # the SYN-ACK
            return True
        return bool(flags & (FIN | RST)) or not payload
