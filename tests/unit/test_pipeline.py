"""The driver's own bookkeeping (the capture-to-exchange behaviour is tested through its stages
and on the captures)."""

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrFragment
from scapy.layers.l2 import Ether

from analyzer.events import Skip
from analyzer.pipeline import Pipeline


def test_packets_that_are_not_tcp_segments_are_counted_by_reason():
    """decode_tcp's Skip results, counted under their text; an unknown link type with its number."""
    p = Pipeline()
    frag = bytes(Ether() / IPv6() / IPv6ExtHdrFragment(offset=8) / TCP())
    for linktype, raw in [
        (1, bytes(Ether() / IP() / UDP())),
        (1, bytes(Ether() / IP() / UDP())),
        (1, bytes(Ether() / IP() / TCP())[:30]),
        (1, frag),
        (147, b"\x00" * 40),
        (1, bytes(Ether(type=0x0806) / (b"\x00" * 28))),
        (1, bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(flags="S"))),
    ]:
        assert p.feed(1, 0.0, linktype, memoryview(raw)) == []
    assert dict(p.skipped) == {
        "not tcp": 2,
        "truncated": 1,
        "fragment": 1,
        "unknown linktype 147": 1,
        "not ip": 1,
    }
    assert all(type(k) is str for k in p.skipped)  # plain text: JSON, pickling to fanout workers
    assert {str(s) for s in Skip} == {"not ip", "not tcp", "fragment", "truncated", "unknown linktype"}


def test_inconclusive_says_why_nothing_can_be_concluded(tmp_path):
    """``Analysis.inconclusive``: check's reason for a capture it can conclude nothing from (an
    unusable file, no Kafka exchange); None for a capture with Kafka traffic."""
    from analyzer.dissect.message import Options
    from analyzer.pipeline import Analysis
    from tests.helpers.captures import CAPTURES

    def run(path):
        a = Analysis(str(path), Options())
        for _ev in a.events():
            pass
        return a.outcome().inconclusive()

    assert run(CAPTURES / "librdkafka-acks0.pcap") is None
    notes = tmp_path / "notes.pcap"
    notes.write_text("this is not a capture\n")
    assert run(notes).startswith("capture.unknown_format: not a pcap or pcapng capture")
    empty = tmp_path / "empty.pcap"
    empty.write_bytes((CAPTURES / "librdkafka-acks0.pcap").read_bytes()[:24])  # the header only
    assert run(empty).startswith("no Kafka")
