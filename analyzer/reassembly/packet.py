"""Link, network and transport headers of one captured packet, with struct over a memoryview.

:func:`decode_tcp` turns ``(linktype, data)`` into a tuple
``(src, sport, dst, dport, seq, ack, flags, payload)`` where ``src``/``dst`` are the raw address
bytes (4 or 16) (:data:`~analyzer.events.Segment`), or a :class:`~analyzer.events.Skip` saying
why the packet is not a usable TCP segment (not IP, not TCP, a fragment, truncated, an unknown
link type).

Link types (:class:`~analyzer.netconst.LinkType`): Ethernet with 802.1Q/802.1ad/QinQ tags,
Linux cooked SLL and SLL2, BSD NULL and LOOP, raw IP (101, 12, 14), IPv4 (228), IPv6 (229).
IPv6 extension headers are walked; Ethernet padding is cut by the IP total length.
"""

from __future__ import annotations

import ipaddress
import socket
import struct

from analyzer.events import Segment, Skip
from analyzer.netconst import (
    AF_INET,
    AF_INET6_VALUES,
    IPV6_EXTENSION_HEADERS,
    LOOPBACK_LINKTYPES,
    RAW_IP_LINKTYPES,
    VLAN_ETHERTYPES,
    EtherType,
    IpProto,
    LinkType,
)

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10

# plain-int aliases for the per-packet comparisons (an IntEnum attribute lookup costs more)
_ETHERNET = int(LinkType.ETHERNET)
_SLL = int(LinkType.LINUX_SLL)
_SLL2 = int(LinkType.LINUX_SLL2)
_NULL = int(LinkType.NULL)
_ETH_IPV4, _ETH_IPV6 = int(EtherType.IPV4), int(EtherType.IPV6)
_ETH_IPV4_HI, _ETH_IPV4_LO = _ETH_IPV4 >> 8, _ETH_IPV4 & 0xFF  # the fast path reads it bytewise
_TCP = int(IpProto.TCP)
_FRAGMENT = int(IpProto.FRAGMENT)
_AH = int(IpProto.AH)
# the skip results as module globals (one dict lookup, not an enum attribute, per skipped packet)
_NOT_IP, _NOT_TCP, _FRAGMENT_SKIP = Skip.NOT_IP, Skip.NOT_TCP, Skip.FRAGMENT
_TRUNCATED, _UNKNOWN_LINKTYPE = Skip.TRUNCATED, Skip.UNKNOWN_LINKTYPE

_u16 = struct.Struct("!H").unpack_from
_u32 = struct.Struct("!I").unpack_from
_tcp = struct.Struct("!HHIIBB").unpack_from


def skip_text(why: Skip, linktype: int) -> str:
    """The text a skipped packet is counted under in the statistics ("unknown linktype 147")."""
    return f"{why} {linktype}" if why is Skip.UNKNOWN_LINKTYPE else str(why)


def _ethertype_payload(linktype: int, data) -> tuple[int, int] | Skip:
    """(ethertype, offset of the network header), or why not."""
    n = len(data)
    if linktype == _ETHERNET:
        if n < 14:
            return _TRUNCATED
        et = _u16(data, 12)[0]
        off = 14
        while et in VLAN_ETHERTYPES:
            if n < off + 4:
                return _TRUNCATED
            et = _u16(data, off + 2)[0]
            off += 4
        return et, off
    if linktype == _SLL:
        if n < 16:
            return _TRUNCATED
        return _u16(data, 14)[0], 16
    if linktype == _SLL2:
        if n < 20:
            return _TRUNCATED
        return _u16(data, 0)[0], 20
    if linktype in LOOPBACK_LINKTYPES:
        if n < 4:
            return _TRUNCATED
        fam = struct.unpack_from("<I" if linktype == _NULL and data[0] else "!I", data, 0)[0]
        if fam == AF_INET:
            return _ETH_IPV4, 4
        if fam in AF_INET6_VALUES:
            return _ETH_IPV6, 4
        return _NOT_IP
    if linktype in RAW_IP_LINKTYPES:
        if n < 1:
            return _TRUNCATED
        v = data[0] >> 4
        return (_ETH_IPV4 if v == 4 else _ETH_IPV6 if v == 6 else -1), 0
    return _UNKNOWN_LINKTYPE


# Ethernet + IPv4 without options + TCP, the overwhelmingly common case, in one unpack:
# total length, fragment word, protocol, src, dst | sport, dport, seq, ack, data offset, flags
_fast = struct.Struct("!2xH2xHxB2x4s4sHHIIBB").unpack_from


def decode_tcp(linktype: int, data) -> Segment | Skip:
    n = len(data)
    if (
        linktype == _ETHERNET
        and n >= 54
        and data[12] == _ETH_IPV4_HI
        and data[13] == _ETH_IPV4_LO
        and data[14] == 0x45  # IPv4, 20-byte header
    ):
        total, frag, proto, src, dst, sport, dport, seq, ack, doff, flags = _fast(data, 14)
        if proto == _TCP and not frag & 0x3FFF:
            end = 14 + total if total else n
            if end > n:
                end = n
            start = 34 + (doff >> 4) * 4
            if start <= end and doff >= 0x50:
                return (src, sport, dst, dport, seq, ack, flags, data[start:end])
    return _decode_tcp(linktype, data)


def _decode_tcp(linktype: int, data) -> Segment | Skip:  # noqa: C901 - per packet past the fast path: IPv4/6 headers inline
    r = _ethertype_payload(linktype, data)
    if isinstance(r, Skip):  # (isinstance: mypy narrows the union; off the fast path)
        return r
    et, off = r
    n = len(data)
    if et == _ETH_IPV4:
        if n < off + 20:
            return _TRUNCATED
        vihl = data[off]
        ihl = (vihl & 0x0F) * 4
        if vihl >> 4 != 4 or ihl < 20:
            return _NOT_IP
        total = _u16(data, off + 2)[0]
        frag = _u16(data, off + 6)[0]
        if frag & 0x3FFF:
            return _FRAGMENT_SKIP
        if data[off + 9] != _TCP:
            return _NOT_TCP
        src = data[off + 12 : off + 16]
        dst = data[off + 16 : off + 20]
        # total length 0 happens with TSO on the capturing host: take what was captured
        end = off + total if total else n
        if end > n:
            end = n
        t = off + ihl
    elif et == _ETH_IPV6:
        if n < off + 40:
            return _TRUNCATED
        if data[off] >> 4 != 6:
            return _NOT_IP
        plen = _u16(data, off + 4)[0]
        nh = data[off + 6]
        src = data[off + 8 : off + 24]
        dst = data[off + 24 : off + 40]
        end = off + 40 + plen if plen else n
        if end > n:
            end = n
        t = off + 40
        while nh != _TCP:
            if nh == _FRAGMENT:
                if t + 8 > end:
                    return _TRUNCATED
                if _u16(data, t + 2)[0] & 0xFFF9:
                    return _FRAGMENT_SKIP
                nh = data[t]
                t += 8
            elif nh in IPV6_EXTENSION_HEADERS:
                if t + 8 > end:
                    return _TRUNCATED
                nh, hlen = data[t], (data[t + 1] + 1) * 8
                t += hlen
            elif nh == _AH:  # length in 4-byte units, minus 2
                if t + 8 > end:
                    return _TRUNCATED
                nh, hlen = data[t], (data[t + 1] + 2) * 4
                t += hlen
            else:
                return _NOT_TCP
    else:
        return _NOT_IP
    if t + 20 > end:
        return _TRUNCATED
    sport, dport, seq, ack, doff, flags = _tcp(data, t)
    hl = (doff >> 4) * 4
    if hl < 20 or t + hl > end:
        return _TRUNCATED
    return (bytes(src), sport, bytes(dst), dport, seq, ack, flags, data[t + hl : end])


def ip_text(raw: bytes) -> str:
    """An address as text: IPv4 by inet_ntoa (the same dotted quad as ipaddress's, 10x quicker:
    two a connection, 1.5 s of 100,000 half-open connections); IPv6 as ipaddress writes it."""
    if len(raw) == 4:
        return socket.inet_ntoa(raw)
    return str(ipaddress.ip_address(raw))
