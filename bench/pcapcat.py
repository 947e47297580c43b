"""Concatenate copies of a classic pcap file into a bigger one, as if recorded back to back.

    python bench/pcapcat.py SRC -n 4 -o DST [--gap 1.0] [--same-addresses]

Copy ``k`` (0-based) has its timestamps shifted by ``k * (duration + gap)`` seconds, so time
only moves forward. From the second copy on, IPv4 addresses ``a.b.c.d`` become
``a.(b+k).c.d`` (with the IP and TCP checksums updated), so every copy's TCP connections have
their own 4-tuples: a reassembler sees four captures' worth of distinct connections rather
than one connection reopened with a SYN it already saw. Only Ethernet/IPv4 packets are
rewritten; anything else is copied as is. With ``--same-addresses`` the copies keep their
addresses: the very packets ``tcpreplay --loop N`` sends (the offline reference of bench/live.py
--done-when). pcapng is not supported.
"""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path

from analyzer.netconst import EtherType, IpProto, LinkType

MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1_000_000),
    b"\xa1\xb2\xc3\xd4": (">", 1_000_000),
    b"\x4d\x3c\xb2\xa1": ("<", 1_000_000_000),
    b"\xa1\xb2\x3c\x4d": (">", 1_000_000_000),
}


def _csum_add(csum: int, old: int, new: int) -> int:
    """RFC 1624 incremental update of a ones'-complement checksum when a 16-bit word changes."""
    s = (~csum & 0xFFFF) + (~old & 0xFFFF) + new
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _rewrite(pkt: bytearray, k: int) -> None:
    """Shift the second byte of both IPv4 addresses by ``k`` in an Ethernet frame, in place."""
    if len(pkt) < 34 or pkt[12:14] != EtherType.IPV4.to_bytes(2, "big") or pkt[14] >> 4 != 4:
        return
    ip = 14
    ihl = (pkt[ip] & 0x0F) * 4
    words = []
    for a in (ip + 12, ip + 16):  # the 16-bit word holding bytes a, a+1 of each address
        old = (pkt[a] << 8) | pkt[a + 1]
        pkt[a + 1] = (pkt[a + 1] + k) & 0xFF
        words.append((old, (pkt[a] << 8) | pkt[a + 1]))
    c = (pkt[ip + 10] << 8) | pkt[ip + 11]
    for old, new in words:
        c = _csum_add(c, old, new)
    pkt[ip + 10], pkt[ip + 11] = c >> 8, c & 0xFF
    frag = (pkt[ip + 6] << 8) | pkt[ip + 7]
    t = ip + ihl
    # TCP's checksum covers the pseudo-header addresses; only the first fragment has the header
    if pkt[ip + 9] == IpProto.TCP and not frag & 0x1FFF and len(pkt) >= t + 18:
        c = (pkt[t + 16] << 8) | pkt[t + 17]
        for old, new in words:
            c = _csum_add(c, old, new)
        pkt[t + 16], pkt[t + 17] = c >> 8, c & 0xFF


def _records(data: bytes, e: str):
    """(offset of the record header, sec, frac, incl_len) of every record."""
    hdr = struct.Struct(e + "IIII")
    pos, n = 24, len(data)
    while pos + 16 <= n:
        sec, frac, incl, _orig = hdr.unpack_from(data, pos)
        if pos + 16 + incl > n:
            break  # cut-off last record: drop it
        yield pos, sec, frac, incl
        pos += 16 + incl


def concat(src: Path, dst: Path, copies: int, gap: float = 1.0, rewrite: bool = True) -> tuple[int, int]:
    """Write ``copies`` copies of ``src`` into ``dst`` (their addresses moved apart unless not
    ``rewrite``); returns (packets, bytes written)."""
    data = src.read_bytes()
    if data[:4] not in MAGICS:
        raise ValueError(f"{src}: not a classic pcap file (pcapng is not supported)")
    e, scale = MAGICS[data[:4]]
    linktype = struct.unpack_from(e + "I", data, 20)[0]
    first = last = None
    for _pos, sec, frac, _incl in _records(data, e):
        t = sec * scale + frac
        if first is None:
            first = t
        last = t
    if first is None:
        raise ValueError(f"{src}: no packets")
    step = (last - first) + int(gap * scale)
    hdr = struct.Struct(e + "IIII")
    packets = 0
    tmp = dst.with_name(dst.name + ".part")
    with tmp.open("wb") as out:
        out.write(data[:24])
        written = 24
        for k in range(copies):
            shift = k * step
            buf = bytearray()
            for pos, sec, frac, incl in _records(data, e):
                t = sec * scale + frac + shift
                body = data[pos + 16 : pos + 16 + incl]
                if k and rewrite and linktype == LinkType.ETHERNET:
                    body = bytearray(body)
                    _rewrite(body, k)
                orig = struct.unpack_from(e + "I", data, pos + 12)[0]
                buf += hdr.pack(t // scale, t % scale, incl, orig)
                buf += body
                packets += 1
                if len(buf) >= 8 << 20:
                    out.write(buf)
                    written += len(buf)
                    buf = bytearray()
            out.write(buf)
            written += len(buf)
    tmp.replace(dst)
    return packets, written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src", type=Path)
    ap.add_argument("-n", "--copies", type=int, default=4)
    ap.add_argument("-o", "--output", type=Path, required=True)
    ap.add_argument("--gap", type=float, default=1.0, help="seconds between copies")
    ap.add_argument(
        "--same-addresses", action="store_true", help="keep every copy's addresses (as tcpreplay --loop)"
    )
    args = ap.parse_args(argv)
    try:
        packets, size = concat(args.src, args.output, args.copies, args.gap, not args.same_addresses)
    except (OSError, ValueError) as exc:
        print(f"pcapcat: {exc}", file=sys.stderr)
        return 2
    print(f"{args.output}: {packets} packets, {size / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
