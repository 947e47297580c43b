"""The named link types, ethertypes and IP protocol numbers, and decode_tcp's use of them."""

from __future__ import annotations

import struct

from analyzer import netconst
from analyzer.events import Skip
from analyzer.netconst import EtherType, IpProto, LinkType
from analyzer.reassembly.packet import decode_tcp


def test_values_are_the_registered_numbers():
    assert (LinkType.NULL, LinkType.ETHERNET, LinkType.RAW, LinkType.LOOP) == (0, 1, 101, 108)
    assert (LinkType.LINUX_SLL, LinkType.LINUX_SLL2, LinkType.IPV4, LinkType.IPV6) == (113, 276, 228, 229)
    assert (EtherType.IPV4, EtherType.IPV6) == (0x0800, 0x86DD)
    assert (EtherType.VLAN, EtherType.QINQ) == (0x8100, 0x88A8)
    assert (IpProto.TCP, IpProto.FRAGMENT, IpProto.AH) == (6, 44, 51)
    assert set(netconst.LINKTYPE_NAMES) == set(LinkType)


def test_sets_hold_plain_ints():
    for s in (
        netconst.RAW_IP_LINKTYPES,
        netconst.LOOPBACK_LINKTYPES,
        netconst.VLAN_ETHERTYPES,
        netconst.IPV6_EXTENSION_HEADERS,
    ):
        assert all(type(x) is int for x in s)
    assert IpProto.TCP not in netconst.IPV6_EXTENSION_HEADERS
    assert IpProto.FRAGMENT not in netconst.IPV6_EXTENSION_HEADERS  # walked by its own rule


def _tcp(sport=1234, dport=9092) -> bytes:
    return struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 0x50, 0x18, 1024, 0, 0) + b"kafka"


def _ipv4(payload: bytes) -> bytes:
    return struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 0, 0, 64, IpProto.TCP, 0,
                       bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])) + payload  # fmt: skip


def test_every_ip_link_type_decodes_the_same_segment():
    ip = _ipv4(_tcp())
    eth = b"\x00" * 12 + struct.pack("!H", EtherType.IPV4) + ip
    vlan = b"\x00" * 12 + struct.pack("!HHH", EtherType.QINQ, 5, EtherType.VLAN) + b"\x00\x07"
    vlan += struct.pack("!H", EtherType.IPV4) + ip
    sll = b"\x00" * 14 + struct.pack("!H", EtherType.IPV4) + ip
    sll2 = struct.pack("!H", EtherType.IPV4) + b"\x00" * 18 + ip
    null = struct.pack("<I", netconst.AF_INET) + ip
    want = decode_tcp(LinkType.RAW, ip)
    assert want[-1] == b"kafka"
    for lt, data in (
        (LinkType.ETHERNET, eth),
        (LinkType.ETHERNET, vlan),
        (LinkType.LINUX_SLL, sll),
        (LinkType.LINUX_SLL2, sll2),
        (LinkType.NULL, null),
        (LinkType.IPV4, ip),
        (LinkType.RAW_DLT12, ip),
    ):
        assert decode_tcp(int(lt), data) == want, lt
    assert decode_tcp(999, ip) is Skip.UNKNOWN_LINKTYPE
