"""The numbers of the network layers below Kafka, named once: link types, ethertypes, IP protocols.

The capture readers and writers and :mod:`analyzer.reassembly.packet` use these. Per-packet code
compares against plain ``int`` aliases of the members (module-level constants), because an
IntEnum attribute lookup costs more than a global int.
"""

from __future__ import annotations

from enum import IntEnum


class LinkType(IntEnum):
    """pcap/pcapng link-layer header types (tcpdump.org LINKTYPE_* values)."""

    NULL = 0  # BSD loopback: 4-byte address family in the capturing host's byte order
    ETHERNET = 1
    RAW_DLT12 = 12  # raw IP, DLT_RAW as most BSDs number it
    RAW_DLT14 = 14  # raw IP, DLT_RAW as OpenBSD numbers it
    RAW = 101  # raw IP (LINKTYPE_RAW)
    LOOP = 108  # OpenBSD loopback: address family in network byte order
    LINUX_SLL = 113  # Linux cooked capture v1
    IPV4 = 228
    IPV6 = 229
    LINUX_SLL2 = 276  # Linux cooked capture v2


LINKTYPE_NAMES: dict[LinkType, str] = {
    LinkType.NULL: "BSD loopback",
    LinkType.ETHERNET: "Ethernet",
    LinkType.RAW_DLT12: "raw IP",
    LinkType.RAW_DLT14: "raw IP",
    LinkType.RAW: "raw IP",
    LinkType.LOOP: "OpenBSD loopback",
    LinkType.LINUX_SLL: "Linux cooked (SLL)",
    LinkType.IPV4: "IPv4",
    LinkType.IPV6: "IPv6",
    LinkType.LINUX_SLL2: "Linux cooked (SLL2)",
}

# The sets below hold plain ints: per-packet membership tests stay int-to-int.

# link types whose packets start with the IP header (version in the first nibble)
RAW_IP_LINKTYPES = frozenset(
    int(t) for t in (LinkType.RAW, LinkType.RAW_DLT12, LinkType.RAW_DLT14, LinkType.IPV4, LinkType.IPV6)
)
# loopback link types with a 4-byte address family in front of the IP header
LOOPBACK_LINKTYPES = frozenset((int(LinkType.NULL), int(LinkType.LOOP)))


class EtherType(IntEnum):
    IPV4 = 0x0800
    IPV6 = 0x86DD
    VLAN = 0x8100  # 802.1Q
    QINQ = 0x88A8  # 802.1ad service tag
    QINQ_9100 = 0x9100  # pre-standard QinQ tags
    QINQ_9200 = 0x9200


# tags that may sit between the Ethernet header and the ethertype of the payload
VLAN_ETHERTYPES = frozenset(
    int(t) for t in (EtherType.VLAN, EtherType.QINQ, EtherType.QINQ_9100, EtherType.QINQ_9200)
)


class IpProto(IntEnum):
    """IP protocol numbers: TCP and the IPv6 extension headers that may precede it."""

    HOPOPTS = 0  # IPv6 hop-by-hop options
    TCP = 6
    ROUTING = 43
    FRAGMENT = 44
    AH = 51  # authentication header: length in 4-byte units minus 2
    DSTOPTS = 60
    MOBILITY = 135
    HIP = 139
    SHIM6 = 140
    EXPERIMENT1 = 253
    EXPERIMENT2 = 254


# IPv6 extension headers with the generic layout (next header, length in 8-byte units minus 1)
IPV6_EXTENSION_HEADERS = frozenset(
    int(p)
    for p in (
        IpProto.HOPOPTS,
        IpProto.ROUTING,
        IpProto.DSTOPTS,
        IpProto.MOBILITY,
        IpProto.HIP,
        IpProto.SHIM6,
        IpProto.EXPERIMENT1,
        IpProto.EXPERIMENT2,
    )
)

# address families in BSD loopback headers: AF_INET, and AF_INET6 as BSDs, Linux and Windows
# number it
AF_INET = 2
AF_INET6_VALUES = frozenset((24, 28, 30, 10, 23))
