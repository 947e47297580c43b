"""Link, network and transport headers of one captured packet, with struct over a memoryview.

:func:`decode_tcp` turns ``(linktype, data)`` into a tuple
``(src, sport, dst, dport, seq, ack, flags, payload)`` where ``src``/``dst`` are the raw address
bytes (4 or 16), or returns a short string saying why the packet is not a usable TCP segment
("not ip", "not tcp", "fragment", "truncated", "unknown linktype 123").

Link types: Ethernet with 802.1Q/802.1ad/QinQ tags, Linux cooked SLL and SLL2, BSD NULL and
LOOP, raw IP (101, 12, 14), IPv4 (228), IPv6 (229). IPv6 extension headers are walked;
Ethernet padding is cut by the IP total length.
"""

from __future__ import annotations

import ipaddress
import struct

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10

_ETH_IPV4, _ETH_IPV6 = 0x0800, 0x86DD
_VLAN_TYPES = frozenset((0x8100, 0x88A8, 0x9100, 0x9200))
_IPV6_EXT = frozenset((0, 43, 60, 135, 139, 140, 253, 254))
_NULL_IPV6 = frozenset((24, 28, 30, 10, 23))

_u16 = struct.Struct("!H").unpack_from
_u32 = struct.Struct("!I").unpack_from
_tcp = struct.Struct("!HHIIBB").unpack_from

LINKTYPE_NAMES = {
    0: "BSD loopback",
    1: "Ethernet",
    12: "raw IP",
    14: "raw IP",
    101: "raw IP",
    108: "OpenBSD loopback",
    113: "Linux cooked (SLL)",
    228: "IPv4",
    229: "IPv6",
    276: "Linux cooked (SLL2)",
}


def _ethertype_payload(linktype: int, data) -> tuple[int, int] | str:
    """(ethertype, offset of the network header), or why not."""
    n = len(data)
    if linktype == 1:
        if n < 14:
            return "truncated"
        et = _u16(data, 12)[0]
        off = 14
        while et in _VLAN_TYPES:
            if n < off + 4:
                return "truncated"
            et = _u16(data, off + 2)[0]
            off += 4
        return et, off
    if linktype == 113:
        if n < 16:
            return "truncated"
        return _u16(data, 14)[0], 16
    if linktype == 276:
        if n < 20:
            return "truncated"
        return _u16(data, 0)[0], 20
    if linktype in (0, 108):
        if n < 4:
            return "truncated"
        fam = struct.unpack_from("<I" if linktype == 0 and data[0] else "!I", data, 0)[0]
        if fam == 2:
            return _ETH_IPV4, 4
        if fam in _NULL_IPV6:
            return _ETH_IPV6, 4
        return "not ip"
    if linktype in (101, 12, 14, 228, 229):
        if n < 1:
            return "truncated"
        v = data[0] >> 4
        return (_ETH_IPV4 if v == 4 else _ETH_IPV6 if v == 6 else -1), 0
    return f"unknown linktype {linktype}"


# Ethernet + IPv4 without options + TCP, the overwhelmingly common case, in one unpack:
# total length, fragment word, protocol, src, dst | sport, dport, seq, ack, data offset, flags
_fast = struct.Struct("!2xH2xHxB2x4s4sHHIIBB").unpack_from


def decode_tcp(linktype: int, data) -> tuple | str:
    n = len(data)
    if linktype == 1 and n >= 54 and data[12] == 8 and data[13] == 0 and data[14] == 0x45:
        total, frag, proto, src, dst, sport, dport, seq, ack, doff, flags = _fast(data, 14)
        if proto == 6 and not frag & 0x3FFF:
            end = 14 + total if total else n
            if end > n:
                end = n
            start = 34 + (doff >> 4) * 4
            if start <= end and doff >= 0x50:
                return (src, sport, dst, dport, seq, ack, flags, data[start:end])
    return _decode_tcp(linktype, data)


def _decode_tcp(linktype: int, data) -> tuple | str:
    r = _ethertype_payload(linktype, data)
    if type(r) is str:
        return r
    et, off = r
    n = len(data)
    if et == _ETH_IPV4:
        if n < off + 20:
            return "truncated"
        vihl = data[off]
        ihl = (vihl & 0x0F) * 4
        if vihl >> 4 != 4 or ihl < 20:
            return "not ip"
        total = _u16(data, off + 2)[0]
        frag = _u16(data, off + 6)[0]
        if frag & 0x3FFF:
            return "fragment"
        if data[off + 9] != 6:
            return "not tcp"
        src = data[off + 12 : off + 16]
        dst = data[off + 16 : off + 20]
        # total length 0 happens with TSO on the capturing host: take what was captured
        end = off + total if total else n
        if end > n:
            end = n
        t = off + ihl
    elif et == _ETH_IPV6:
        if n < off + 40:
            return "truncated"
        if data[off] >> 4 != 6:
            return "not ip"
        plen = _u16(data, off + 4)[0]
        nh = data[off + 6]
        src = data[off + 8 : off + 24]
        dst = data[off + 24 : off + 40]
        end = off + 40 + plen if plen else n
        if end > n:
            end = n
        t = off + 40
        while nh != 6:
            if nh == 44:  # fragment header
                if t + 8 > end:
                    return "truncated"
                if _u16(data, t + 2)[0] & 0xFFF9:
                    return "fragment"
                nh = data[t]
                t += 8
            elif nh in _IPV6_EXT:
                if t + 8 > end:
                    return "truncated"
                nh, hlen = data[t], (data[t + 1] + 1) * 8
                t += hlen
            elif nh == 51:  # AH: length in 4-byte units, minus 2
                if t + 8 > end:
                    return "truncated"
                nh, hlen = data[t], (data[t + 1] + 2) * 4
                t += hlen
            else:
                return "not tcp"
    else:
        return "not ip"
    if t + 20 > end:
        return "truncated"
    sport, dport, seq, ack, doff, flags = _tcp(data, t)
    hl = (doff >> 4) * 4
    if hl < 20 or t + hl > end:
        return "truncated"
    return (bytes(src), sport, bytes(dst), dport, seq, ack, flags, data[t + hl : end])


def ip_text(raw: bytes) -> str:
    return str(ipaddress.ip_address(raw))
