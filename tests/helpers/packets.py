"""Test helpers: real Kafka bytes and TCP conversations crafted with scapy."""

from __future__ import annotations

import struct

from scapy.layers.inet import IP, TCP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from analyzer.capture.files import CaptureFile
from analyzer.events import ConnClose, ConnOpen, Gap, Skip, StreamData
from analyzer.reassembly.packet import decode_tcp
from analyzer.reassembly.tcp import Reassembler


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def cstr(s: str) -> bytes:
    b = s.encode()
    return uvarint(len(b) + 1) + b


def api_versions_request(corr: int, client_id: str = "test-client", pad: int = 0) -> bytes:
    """A size-prefixed ApiVersions v3 request (header v2)."""
    cid = client_id.encode()
    body = cstr("kafka-analyzer-test") + cstr("1.0" + "x" * pad) + b"\x00"
    p = struct.pack(">hhih", 18, 3, corr, len(cid)) + cid + b"\x00" + body
    return struct.pack(">i", len(p)) + p


def api_versions_response(corr: int, n_apis: int = 3) -> bytes:
    """A size-prefixed ApiVersions v3 response (header v0, flexible body)."""
    body = struct.pack(">h", 0) + uvarint(n_apis + 1)
    for k in range(n_apis):
        body += struct.pack(">hhh", k, 0, 9) + b"\x00"
    body += struct.pack(">i", 0) + b"\x00"
    p = struct.pack(">i", corr) + body
    return struct.pack(">i", len(p)) + p


def metadata_request(corr: int, topics: list[str], client_id: str = "test-client") -> bytes:
    """Metadata v1 request (non-flexible)."""
    cid = client_id.encode()
    body = struct.pack(">i", len(topics)) + b"".join(struct.pack(">h", len(t)) + t.encode() for t in topics)
    p = struct.pack(">hhih", 3, 1, corr, len(cid)) + cid + body
    return struct.pack(">i", len(p)) + p


def segments(data: bytes, mss: int) -> list[bytes]:
    return [data[i : i + mss] for i in range(0, len(data), mss)] or [b""]


class Conversation:
    """Builds the packets of one TCP connection between a client and a broker."""

    def __init__(
        self, client=("10.0.0.1", 40000), broker=("10.0.0.2", 9092), isn_c=1000, isn_s=5000, v6=False, l2=True
    ):
        self.c, self.s = client, broker
        self.seq = {0: isn_c, 1: isn_s}
        self.v6 = v6
        self.l2 = l2
        self.pkts: list = []
        self.sent = {0: b"", 1: b""}

    def _ip(self, d):
        src, dst = (self.c, self.s) if d == 0 else (self.s, self.c)
        ip = IPv6(src=src[0], dst=dst[0]) if self.v6 else IP(src=src[0], dst=dst[0])
        return ip, src[1], dst[1]

    def pkt(self, d, flags="PA", payload=b"", seq=None, ack=None):
        ip, sp, dp = self._ip(d)
        seq = self.seq[d] if seq is None else seq
        ack = self.seq[1 - d] if ack is None else ack
        p = ip / TCP(
            sport=sp, dport=dp, flags=flags, seq=seq & 0xFFFFFFFF, ack=ack & 0xFFFFFFFF, window=65535
        )
        if payload:
            p = p / payload
        return Ether() / p if self.l2 else p

    def handshake(self):
        self.pkts.append(self.pkt(0, "S", ack=0))
        self.seq[0] += 1
        self.pkts.append(self.pkt(1, "SA"))
        self.seq[1] += 1
        self.pkts.append(self.pkt(0, "A"))
        return self

    def send(self, d, data: bytes, mss: int = 1448):
        """Send data as segments; returns the packets (also appended)."""
        out = []
        for chunk in segments(data, mss):
            p = self.pkt(d, "PA", chunk)
            self.seq[d] += len(chunk)
            out.append(p)
        self.sent[d] += data
        self.pkts.extend(out)
        return out

    def close(self):
        self.pkts.append(self.pkt(0, "FA"))
        self.seq[0] += 1
        self.pkts.append(self.pkt(1, "FA"))
        self.seq[1] += 1
        self.pkts.append(self.pkt(0, "A"))
        return self


def linktype_of(pkt) -> int:
    return 1 if isinstance(pkt, Ether) else 101


def reassemble(packets, linktype=None, **kw):
    """Feed scapy packets through decode + Reassembler: per (conn, dir) the delivered bytes and
    a list of gaps (offset, length), plus the connection open/close events."""
    r = Reassembler(**kw)
    streams: dict = {}
    gaps: dict = {}
    opens, closes = [], []

    def take(evs):
        for ev in evs:
            if type(ev) is StreamData:
                key = (ev.conn, ev.direction)
                b = streams.setdefault(key, bytearray())
                assert ev.offset == len(b) + sum(g[1] for g in gaps.get(key, [])), (
                    "offsets must be contiguous"
                )
                b += bytes(ev.data)
            elif type(ev) is Gap:
                gaps.setdefault((ev.conn, ev.direction), []).append((ev.offset, ev.length))
            elif type(ev) is ConnOpen:
                opens.append(ev)
            elif type(ev) is ConnClose:
                closes.append(ev)

    for i, p in enumerate(packets, 1):
        raw = bytes(p)
        seg = decode_tcp(linktype if linktype is not None else linktype_of(p), memoryview(raw))
        assert type(seg) is not Skip, seg
        take(r.feed(float(i), i, seg))
    take(r.flush())
    return {k: bytes(v) for k, v in streams.items()}, gaps, opens, closes


def frames_of(path) -> list[tuple]:
    """(conn, kind, offset, payload) of every frame of a capture, via the real pipeline."""
    from analyzer.dissect.framing import KafkaConnection
    from analyzer.events import ConnOpen

    r = Reassembler()
    framers = {}
    out = []
    cap = CaptureFile(path)
    for index, ts, lt, data in cap:
        seg = decode_tcp(lt, data)
        if type(seg) is Skip:
            continue
        for ev in r.feed(ts, index, seg):
            if type(ev) is ConnOpen:
                framers[ev.conn] = KafkaConnection(ev.conn, ev.syn)
            elif type(ev) in (StreamData, Gap):
                frames, _ = framers[ev.conn].feed(ev)
                out.extend((f.conn, f.kind, f.offset, bytes(f.payload)) for f in frames)
    r.flush()
    return out, cap


def write_pcap(path, packets, linktype=1, big_endian=False, nanos=False):
    """packets: iterable of (ts, bytes)."""
    e = ">" if big_endian else "<"
    magic = 0xA1B23C4D if nanos else 0xA1B2C3D4
    with open(path, "wb") as f:
        f.write(struct.pack(e + "IHHiIII", magic, 2, 4, 0, 0, 262144, linktype))
        for ts, data in packets:
            sec = int(ts)
            frac = int(round((ts - sec) * (1e9 if nanos else 1e6)))
            f.write(struct.pack(e + "IIII", sec, frac, len(data), len(data)) + data)


def _block(btype: int, body: bytes, e: str = "<") -> bytes:
    body += b"\x00" * (-len(body) % 4)
    n = len(body) + 12
    return struct.pack(e + "II", btype, n) + body + struct.pack(e + "I", n)


def write_pcapng(path, interfaces, packets, big_endian=False, tsresol=6, extra_blocks=True):
    """interfaces: list of link types; packets: iterable of (iface, ts, bytes).

    Writes options on the SHB and IDBs, a name-resolution block and custom blocks between
    packets (to be skipped), and uses EPBs (SPB for interface 0 packets with ts None)."""
    e = ">" if big_endian else "<"
    opt = lambda code, val: struct.pack(e + "HH", code, len(val)) + val + b"\x00" * (-len(val) % 4)  # noqa: E731
    shb = struct.pack(e + "IHHq", 0x1A2B3C4D, 1, 0, -1) + opt(4, b"kafka-analyzer tests") + opt(0, b"")
    out = [_block(0x0A0D0D0A, shb, e)]
    for lt in interfaces:
        out.append(
            _block(
                1,
                struct.pack(e + "HHI", lt, 0, 262144)
                + opt(2, b"eth0")
                + opt(9, bytes([tsresol]))
                + opt(0, b""),
                e,
            )
        )
    if extra_blocks:
        out.append(
            _block(
                4,
                struct.pack(e + "HH", 1, 8)
                + bytes([10, 0, 0, 1])
                + b"host\x00\x00\x00\x00"
                + struct.pack(e + "HH", 0, 0),
                e,
            )
        )
    scale = 10**tsresol
    for i, (iface, ts, data) in enumerate(packets):
        if ts is None:
            out.append(_block(3, struct.pack(e + "I", len(data)) + data, e))
            continue
        t = int(round(ts * scale))
        out.append(
            _block(
                6,
                struct.pack(e + "IIIII", iface, t >> 32, t & 0xFFFFFFFF, len(data), len(data))
                + data
                + opt(1, b"comment")
                + opt(0, b""),
                e,
            )
        )
        if extra_blocks and i == 0:
            out.append(_block(0x00000BAD, b"custom block payload", e))
    with open(path, "wb") as f:
        f.write(b"".join(out))
