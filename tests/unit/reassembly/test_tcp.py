"""TCP reassembly on crafted conversations: streams must come out byte for byte."""

import random
import struct

from scapy.layers.inet import IP, TCP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrHopByHop
from scapy.layers.l2 import Dot1AD, Dot1Q, Ether

from analyzer.events import Skip
from analyzer.reassembly.packet import decode_tcp
from tests.helpers.packets import (
    Conversation,
    api_versions_request,
    api_versions_response,
    linktype_of,
    reassemble,
)

REQ = b"".join(api_versions_request(i, pad=700) for i in range(1, 6))  # ~3.8 KB: several segments
RESP = b"".join(api_versions_response(i, n_apis=60) for i in range(1, 6))


def conv(**kw):
    c = Conversation(**kw).handshake()
    c.send(0, REQ, mss=500)
    c.send(1, RESP, mss=700)
    return c


def test_in_order_both_directions_and_fin():
    c = conv()
    c.close()
    streams, gaps, opens, closes = reassemble(c.pkts)
    assert streams[(1, 0)] == REQ
    assert streams[(1, 1)] == RESP
    assert not gaps
    assert [o.syn for o in opens] == [True]
    assert [x.reason for x in closes] == ["fin"]


def test_reordered_segments():
    c = conv()
    data = c.pkts[3:]
    rnd = random.Random(7)
    # shuffle within windows of 4 packets: out of order but nothing lost
    shuffled = []
    for i in range(0, len(data), 4):
        w = data[i : i + 4]
        rnd.shuffle(w)
        shuffled.extend(w)
    streams, gaps, _, _ = reassemble(c.pkts[:3] + shuffled)
    assert streams[(1, 0)] == REQ and streams[(1, 1)] == RESP
    assert not gaps


def test_duplicates_and_retransmissions_are_delivered_once():
    c = conv()
    pkts = []
    for p in c.pkts:
        pkts.append(p)
        if p[TCP].payload:
            pkts.append(p.copy())  # exact duplicate
    streams, gaps, _, _ = reassemble(pkts)
    assert streams[(1, 0)] == REQ and streams[(1, 1)] == RESP and not gaps


def test_overlapping_retransmission():
    c = Conversation().handshake()
    base = c.seq[0]
    c.send(0, REQ[:1000], mss=1000)
    # a retransmission that re-sends bytes 500..1500 (half old, half new), then the rest
    c.pkts.append(c.pkt(0, "PA", REQ[500:1500], seq=base + 500))
    c.seq[0] = base + 1500
    c.send(0, REQ[1500:], mss=900)
    streams, gaps, _, _ = reassemble(c.pkts)
    assert streams[(1, 0)] == REQ and not gaps


def test_lost_segment_is_a_gap_never_zero_filled():
    c = Conversation().handshake()
    segs = c.send(0, REQ, mss=500)
    lost = segs[3]
    pkts = [p for p in c.pkts if p is not lost]
    streams, gaps, _, _ = reassemble(pkts)
    n = len(lost[TCP].payload)
    assert gaps[(1, 0)] == [(1500, n)]
    assert streams[(1, 0)] == REQ[:1500] + REQ[1500 + n :]


def test_bytes_acked_but_not_captured_become_a_gap_at_once():
    c = Conversation().handshake()
    segs = c.send(0, REQ[:2000], mss=500)
    c.pkts.remove(segs[-1])  # the last segment is lost: nothing after it to show the hole...
    c.pkts.append(c.pkt(1, "A"))  # ...but the broker acknowledges it
    streams, gaps, _, _ = reassemble(c.pkts)
    assert gaps[(1, 0)] == [(1500, 500)]
    assert streams[(1, 0)] == REQ[:1500]


def test_mid_stream_start():
    c = conv()
    pkts = c.pkts[5:]  # no handshake, first two request segments missing
    streams, gaps, opens, _ = reassemble(pkts)
    assert opens[0].syn is False
    assert streams[(1, 0)] == REQ[1000:]
    assert streams[(1, 1)] == RESP


def test_sequence_number_wraparound():
    c = conv(isn_c=0xFFFFFFFF - 1200, isn_s=0xFFFFFFFF - 10)
    streams, gaps, _, _ = reassemble(c.pkts)
    assert streams[(1, 0)] == REQ and streams[(1, 1)] == RESP and not gaps


def test_keepalive_and_zero_window_probe():
    c = Conversation().handshake()
    c.send(0, REQ[:1000], mss=1000)
    c.pkts.append(c.pkt(0, "A", b"\x00", seq=c.seq[0] - 1))  # keep-alive: one old garbage byte
    c.pkts.append(c.pkt(0, "A", REQ[1000:1001]))  # zero-window probe: next byte alone
    c.send(0, REQ[1000:], mss=1000)  # the real segment re-sends that byte
    streams, gaps, _, _ = reassemble(c.pkts)
    assert streams[(1, 0)] == REQ and not gaps


def test_port_reuse_after_close_is_a_new_connection():
    a = conv().close()
    b = conv(isn_c=777777, isn_s=888888).close()
    streams, gaps, opens, closes = reassemble(a.pkts + b.pkts)
    assert len(opens) == 2 and [x.reason for x in closes] == ["fin", "fin"]
    assert streams[(1, 0)] == REQ and streams[(2, 0)] == REQ


def test_rst_closes():
    c = conv()
    c.pkts.append(c.pkt(1, "R"))
    _, _, _, closes = reassemble(c.pkts)
    assert [x.reason for x in closes] == ["rst"]


def test_out_of_order_buffer_is_bounded():
    c = Conversation().handshake()
    segs = c.send(0, REQ * 4, mss=500)
    pkts = [p for p in c.pkts if p is not segs[0]]  # first segment lost, everything else buffered
    streams, gaps, _, _ = reassemble(pkts, max_buffer=2000)
    assert gaps[(1, 0)][0] == (0, 500)
    assert streams[(1, 0)] == (REQ * 4)[500:]


def test_vlan_and_qinq():
    c = conv(l2=False)
    tagged = [Ether() / Dot1AD(vlan=10) / Dot1Q(vlan=300) / p for p in c.pkts]
    streams, _, _, _ = reassemble(tagged, linktype=1)
    assert streams[(1, 0)] == REQ and streams[(1, 1)] == RESP


def test_linux_cooked_sll2():
    c = conv(l2=False)

    def sll2(p):
        proto = 0x86DD if IPv6 in p else 0x0800
        return struct.pack(">HHIHBB8s", proto, 0, 1, 772, 0, 6, b"\x00" * 8) + bytes(p)

    streams, _, _, _ = reassemble([sll2(p) for p in c.pkts], linktype=276)
    assert streams[(1, 0)] == REQ and streams[(1, 1)] == RESP


def test_ipv6_with_extension_headers():
    c = conv(client=("2001:db8::1", 40000), broker=("2001:db8::2", 9092), v6=True, l2=False)
    pkts = []
    for p in c.pkts:
        ip6 = p[IPv6]
        tcp = ip6[TCP]
        # the broadcast address scapy falls back to after 1.2 s of neighbour discovery a packet
        eth = Ether(dst="ff:ff:ff:ff:ff:ff")
        pkts.append(eth / IPv6(src=ip6.src, dst=ip6.dst) / IPv6ExtHdrHopByHop() / IPv6ExtHdrDestOpt() / tcp)
    streams, _, opens, _ = reassemble(pkts)
    assert streams[(1, 0)] == REQ and streams[(1, 1)] == RESP
    assert opens[0].src == "2001:db8::1"


def test_ethernet_padding_is_not_payload():
    p = Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(flags="PA") / b"abc"
    raw = bytes(p) + b"\x00" * 20  # Ethernet minimum-size padding after the IP packet
    seg = decode_tcp(1, memoryview(raw))
    assert bytes(seg[-1]) == b"abc"


def test_non_tcp_and_truncated_packets_are_skipped_with_a_reason():
    from scapy.layers.inet import UDP

    assert decode_tcp(1, memoryview(bytes(Ether() / IP() / UDP()))) is Skip.NOT_TCP
    assert decode_tcp(1, memoryview(bytes(Ether() / IP() / TCP())[:30])) is Skip.TRUNCATED
    assert decode_tcp(147, memoryview(b"\x00" * 40)) is Skip.UNKNOWN_LINKTYPE


def test_who_closed_first_is_told():
    """ConnClose.by: the direction of the first FIN (or of the RST); the pipeline names it."""
    import tempfile
    from pathlib import Path

    from analyzer.events import ConnectionEnd
    from analyzer.pipeline import Analysis
    from tests.helpers.packets import write_pcap

    c = Conversation().handshake()
    c.send(0, api_versions_request(1))
    c.send(1, api_versions_response(1))
    c.close()  # the client's FIN first
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "c.pcap"
        write_pcap(p, [(1.0 + i * 0.001, bytes(x)) for i, x in enumerate(c.pkts)])
        ends = [ev.conn for ev in Analysis(p).events() if type(ev) is ConnectionEnd]
    assert [(e.closed, e.closed_by) for e in ends] == [("fin", "client")]


def test_connection_flood_evicts_the_longest_idle():
    from analyzer.events import ConnClose, StreamData
    from analyzer.reassembly.tcp import Reassembler

    r = Reassembler(max_connections=10)
    evs = []
    for i in range(40):  # each opens with data and is never closed
        seg = (b"\x0a\x00\x00\x01", 1024 + i, b"\x0a\x00\x00\x02", 9092, 1000, 0, 0x18, b"half")
        evs += r.feed(1.0 + i, i + 1, seg)
        if i == 9:  # the first connection is busy again just before the table fills
            more = (b"\x0a\x00\x00\x01", 1024, b"\x0a\x00\x00\x02", 9092, 1004, 0, 0x18, b"more")
            evs += r.feed(10.5, 99, more)
    closed = [e for e in evs if type(e) is ConnClose]
    assert r.evicted == len(closed) > 0 and all(e.reason == "evicted" for e in closed)
    assert len(r.table) <= 2 * 10
    # (each under both directions' keys: the connections tracked, as live's metrics say them)
    assert r.tracked == len(r.table) // 2 == 40 - len(closed)
    assert closed[0].conn == 2  # the longest idle, not the busy first one
    assert sum(1 for e in evs if type(e) is StreamData) == 41  # nothing delivered twice or lost


def test_bytes_a_packet_acknowledges_come_before_its_own():
    """A request whose segments wait behind bytes never captured (an exchange left out of the
    capture: ``read -w``) is delivered, after its gap, before the response that acknowledges
    it, not after: the response was sent after the request it answers."""
    from analyzer.events import Gap, StreamData
    from analyzer.reassembly.tcp import Reassembler

    c = Conversation().handshake()
    first = c.send(0, REQ[:600], mss=600)  # an exchange left out...
    c.send(1, RESP[:300])
    c.send(0, REQ[600:1400], mss=400)  # ...the request kept, waiting behind the missing bytes
    answer = c.send(1, RESP[300:700])  # its response acknowledges all of it
    dropped = {id(p) for p in first} | {id(c.pkts[4])}
    pkts = [p for p in c.pkts if id(p) not in dropped]
    r = Reassembler()
    order = []
    for i, p in enumerate(pkts, 1):
        for ev in r.feed(float(i), i, decode_tcp(linktype_of(p), memoryview(bytes(p)))):
            if type(ev) in (StreamData, Gap):
                order.append((type(ev).__name__, ev.direction, i))
    last = len(pkts)
    assert pkts[-1] is answer[0]
    # the request's gap and bytes come out with the response's packet, before the response's
    kinds = [(k, d) for k, d, at in order if at == last]
    assert kinds.index(("StreamData", 0)) < kinds.index(("StreamData", 1)), kinds
    assert kinds[0] == ("Gap", 0), kinds


def test_all_buffers_together_stay_within_max_total():
    """Holes that nothing fills (a live capture's drops): past ``max_total`` bytes buffered in
    all connections the oldest hole is given up (a Gap, counted) and its bytes delivered, before
    the capture ends; buffered segments are copies, not views of the reader's buffer."""
    from analyzer.events import Gap, StreamData
    from analyzer.reassembly.tcp import Reassembler

    convs = [Conversation(client=("10.0.0.1", 40000 + i)).handshake() for i in range(3)]
    pkts = []
    for c in convs:
        segs = c.send(0, REQ, mss=500)
        pkts += [p for p in c.pkts if p is not segs[1]]  # the second segment never captured
    r = Reassembler(max_total=5000)
    events = []
    for i, p in enumerate(pkts, 1):
        seg = decode_tcp(linktype_of(p), memoryview(bytes(p)))
        events += r.feed(float(i), i, seg)
        assert r.ooo_total <= 5000
        assert all(
            type(x[0]) is bytes for c in convs for d in r.holes.values() for x in d[0].dirs[d[1]].ooo.values()
        )
    gaps = [e for e in events if type(e) is Gap]
    assert r.memory_gaps == 2 and [(g.conn, g.offset, g.length) for g in gaps] == [
        (1, 500, 500),
        (2, 500, 500),
    ]
    delivered = {e.conn: e.offset + len(e.data) for e in events if type(e) is StreamData}
    assert delivered[1] == delivered[2] == len(REQ) and delivered[3] == 500  # the newest hole waits
