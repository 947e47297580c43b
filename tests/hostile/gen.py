"""Hostile captures: what a hostile sender or a damaged file can put in front of the analyzer.

Every builder returns the bytes of a whole capture file; :data:`CASES` names each case with what
the command line must say about it (see ``test_cli.py``). The traffic is real Kafka (ApiVersions
and Metadata requests and responses built by ``packets``), so "partial results" are counted in
exchanges: a clean conversation has :data:`EXCHANGES` of them.
"""

from __future__ import annotations

import gzip
import random
import struct
from dataclasses import dataclass, field

from tests.helpers.packets import Conversation, api_versions_request, api_versions_response

EXCHANGES = 8
# an impossible frame size: named, then the bytes skipped to the next frame
BAD_SIZE = ("framing.bad_size", "framing.resync")
# what the "no Kafka traffic" message must say about a capture cut by its snaplen
SNAPLEN_SAYS = ("snaplen 64", "cut short", "Kafka frames in them are incomplete", "tcpdump -s 0")
T0 = 1700000000.0


# -- traffic ---------------------------------------------------------------------------------------


def exchange_bytes(corr: int) -> tuple[bytes, bytes]:
    """An ApiVersions v3 request and its response, size-prefixed."""
    return api_versions_request(corr), api_versions_response(corr)


def conversation(n: int = EXCHANGES, mss: int = 1448, prefix: bytes = b"", client=("10.0.0.1", 40000)):
    """A whole TCP connection (handshake, ``n`` exchanges, close); ``prefix`` goes on the wire
    in the client direction before the first request (e.g. a bogus size field)."""
    c = Conversation(client=client).handshake()
    if prefix:
        c.send(0, prefix, mss=mss)
    for corr in range(1, n + 1):
        req, resp = exchange_bytes(corr)
        c.send(0, req, mss=mss)
        c.send(1, resp, mss=mss)
    c.close()
    return c


def timed(pkts) -> list[tuple[float, bytes]]:
    return [(T0 + i * 0.001, bytes(p)) for i, p in enumerate(pkts)]


# -- file writers ----------------------------------------------------------------------------------


def pcap_bytes(
    packets: list[tuple[float, bytes]], snaplen: int = 262144, linktype: int = 1, big_endian: bool = False
) -> bytes:
    """A microsecond pcap; packets longer than ``snaplen`` are cut to it (with their original
    length kept in ``orig_len``, as tcpdump -s does)."""
    e = ">" if big_endian else "<"
    out = [struct.pack(e + "IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, snaplen, linktype)]
    for ts, data in packets:
        sec = int(ts)
        usec = int(round((ts - sec) * 1e6))
        cap = data[:snaplen]
        out.append(struct.pack(e + "IIII", sec, usec, len(cap), len(data)) + cap)
    return b"".join(out)


def block(btype: int, body: bytes, length: int | None = None, trail: int | None = None) -> bytes:
    """A little-endian pcapng block; ``length``/``trail`` override the two length fields."""
    body += b"\x00" * (-len(body) % 4)
    n = len(body) + 12
    return (
        struct.pack("<II", btype, n if length is None else length)
        + body
        + struct.pack("<I", n if trail is None else trail)
    )


SHB = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))


def idb(linktype: int = 1, snaplen: int = 262144, options: bytes = b"") -> bytes:
    return block(1, struct.pack("<HHI", linktype, 0, snaplen) + options)


def epb(data: bytes, ts: float = T0, iface: int = 0, orig: int | None = None) -> bytes:
    t = int(round(ts * 1e6))
    head = struct.pack(
        "<IIIII", iface, t >> 32, t & 0xFFFFFFFF, len(data), len(data) if orig is None else orig
    )
    return block(6, head + data)


def epb_at(data: bytes, t: int) -> bytes:
    """An EPB with a raw 64-bit timestamp."""
    return block(6, struct.pack("<IIIII", 0, t >> 32, t & 0xFFFFFFFF, len(data), len(data)) + data)


def pcapng_bytes(packets: list[tuple[float, bytes]], snaplen: int = 262144) -> bytes:
    return SHB + idb(snaplen=snaplen) + b"".join(epb(d[:snaplen], ts, orig=len(d)) for ts, d in packets)


# -- the cases -------------------------------------------------------------------------------------


@dataclass
class Case:
    """A hostile capture and what the command line must make of it.

    ``codes``: issue codes that must be reported (capture-level or connection-level);
    ``exchanges``: complete request/response pairs expected (None: do not count);
    ``rc``: the exit code of read, stats and export; ``check_rc`` that of ``check``;
    ``says``: words the stderr of ``read`` must contain.
    """

    data: bytes
    codes: tuple[str, ...] = ()
    exchanges: int | None = EXCHANGES
    rc: int = 0
    check_rc: int = 1
    says: tuple[str, ...] = field(default_factory=tuple)
    read_args: tuple[str, ...] = ()


def _clean() -> list[tuple[float, bytes]]:
    return timed(conversation().pkts)


def _pkts_before_last_exchange() -> tuple[list, int]:
    """The clean packets and how many of them carry the first EXCHANGES - 1 exchanges
    (handshake + 2 data packets per exchange)."""
    pk = _clean()
    return pk, 3 + 2 * (EXCHANGES - 1)


def bad_size_first(size: int) -> bytes:
    """The client's first four bytes claim an impossible frame size; valid frames follow."""
    return pcap_bytes(timed(conversation(prefix=struct.pack(">i", size)).pkts))


def bad_size_mid(size: int) -> bytes:
    """Four bytes with an impossible size between the client's 4th and 5th request."""
    c = Conversation().handshake()
    for corr in range(1, EXCHANGES + 1):
        if corr == 5:
            c.send(0, struct.pack(">i", size) + b"\xff" * 7)
        req, resp = exchange_bytes(corr)
        c.send(0, req)
        c.send(1, resp)
    c.close()
    return pcap_bytes(timed(c.pkts))


def shuffled(n_segments: int = 400, seed: int | None = 7) -> bytes:
    """One conversation whose client segments (536 bytes each) arrive in random order (in order
    with ``seed=None``)."""
    c = Conversation().handshake()
    reqs = b"".join(exchange_bytes(corr)[0] for corr in range(1, EXCHANGES + 1))
    pad = api_versions_request(EXCHANGES + 1, pad=536 * n_segments)
    segs = c.send(0, reqs + pad, mss=536)
    for corr in range(1, EXCHANGES + 2):
        c.send(1, exchange_bytes(corr)[1] if corr <= EXCHANGES else api_versions_response(corr))
    c.close()
    pk = list(c.pkts)
    first = pk.index(segs[0])
    body = pk[first : first + len(segs)]
    if seed is not None:
        random.Random(seed).shuffle(body)
    pk[first : first + len(segs)] = body
    return pcap_bytes(timed(pk))


def raw_tcp(
    src: int, sport: int, dst: int, dport: int, seq: int, flags: int, payload: bytes, ack: int = 0
) -> bytes:
    """Ethernet + IPv4 + TCP by hand (no checksums: the analyzer does not verify them); quicker
    than scapy for captures of thousands of packets."""
    tcp = struct.pack(">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack, 5 << 4, flags, 65535, 0, 0) + payload
    ip = struct.pack(">BBHHHBBHII", 0x45, 0, 20 + len(tcp), 0, 0, 64, 6, 0, src, dst) + tcp
    return b"\x00" * 12 + b"\x08\x00" + ip


def reordered(mib: float, window: int | None, seed: int = 1, mss: int = 1448, request: int = 16000) -> bytes:
    """One connection: ``mib`` MiB of ApiVersions requests (``request`` bytes each, padded)
    from the client, then their responses; the client's segments arrive permuted within each
    run of ``window`` segments, as a reordering network delivers them (``window=0``: the whole
    stream shuffled at once; None: in order). The handshake comes first, the close last."""
    c, s = 0x0A000001, 0x0A000002
    n = max(1, int(mib * (1 << 20)) // request)
    reqs = b"".join(api_versions_request(corr, pad=request - 60) for corr in range(1, n + 1))
    resps = b"".join(api_versions_response(corr) for corr in range(1, n + 1))
    isn_c, isn_s = 1000, 5000
    segs = [
        raw_tcp(c, 40000, s, 9092, isn_c + 1 + i, 0x18, reqs[i : i + mss], isn_s + 1)
        for i in range(0, len(reqs), mss)
    ]
    rnd = random.Random(seed)
    if window == 0:
        rnd.shuffle(segs)
    elif window is not None:
        for i in range(0, len(segs), window):
            part = segs[i : i + window]
            rnd.shuffle(part)
            segs[i : i + window] = part
    end_c = isn_c + 1 + len(reqs)
    end_s = isn_s + 1 + len(resps)
    pkts = [
        raw_tcp(c, 40000, s, 9092, isn_c, 0x02, b""),
        raw_tcp(s, 9092, c, 40000, isn_s, 0x12, b"", isn_c + 1),
        raw_tcp(c, 40000, s, 9092, isn_c + 1, 0x10, b"", isn_s + 1),
        *segs,
        *(
            raw_tcp(s, 9092, c, 40000, isn_s + 1 + i, 0x18, resps[i : i + mss], end_c)
            for i in range(0, len(resps), mss)
        ),
        raw_tcp(c, 40000, s, 9092, end_c, 0x11, b"", end_s),
        raw_tcp(s, 9092, c, 40000, end_s, 0x11, b"", end_c + 1),
    ]
    return pcap_bytes(timed(pkts))


def cases() -> dict[str, Case]:
    clean = _clean()
    pcap = pcap_bytes(clean)
    ng = pcapng_bytes(clean)
    head, keep = _pkts_before_last_exchange()
    partial_ng = pcapng_bytes(head[:keep])  # every exchange but the last, then damage
    partial_pcap = pcap_bytes(head[:keep])
    out: dict[str, Case] = {
        "clean-pcap": Case(pcap, check_rc=0),
        "clean-pcapng": Case(ng, check_rc=0),
        # -- pcapng blocks with bogus lengths
        "pcapng-last-epb-length-12": Case(
            partial_ng + struct.pack("<III", 6, 12, 12), ("capture.corrupt",), EXCHANGES - 1, 1
        ),
        "pcapng-only-idb-length-12": Case(SHB + struct.pack("<III", 1, 12, 12), ("capture.corrupt",), 0, 1),
        "pcapng-epb-length-12-mid": Case(
            partial_ng + struct.pack("<III", 6, 12, 12) + b"".join(epb(d, ts) for ts, d in head[keep:]),
            ("capture.corrupt",),
            EXCHANGES - 1,
            1,
        ),
        "pcapng-block-length-not-multiple-of-4": Case(
            partial_ng + block(6, struct.pack("<IIIII", 0, 0, 0, 4, 4) + b"abcd", length=37),
            ("capture.corrupt",),
            EXCHANGES - 1,
            1,
        ),
        "pcapng-block-length-below-12": Case(
            partial_ng + struct.pack("<III", 6, 8, 8), ("capture.corrupt",), EXCHANGES - 1, 1
        ),
        "pcapng-trailing-length-differs": Case(
            partial_ng + block(6, struct.pack("<IIIII", 0, 0, 0, 4, 4) + b"abcd", trail=64),
            ("capture.corrupt",),
            EXCHANGES - 1,
            1,
        ),
        "pcapng-caplen-beyond-block": Case(
            partial_ng
            + block(6, struct.pack("<IIIII", 0, 0, 0, 5000, 5000) + b"x" * 40)
            + b"".join(epb(d, ts) for ts, d in head[keep:]),
            ("capture.bad_block",),
            EXCHANGES,
            1,
        ),
        "pcapng-epb-unknown-interface": Case(
            partial_ng
            + epb(head[keep][1], head[keep][0], iface=3)
            + b"".join(epb(d, ts) for ts, d in head[keep + 1 :]),
            ("capture.bad_block",),
            None,
            1,
        ),
        "pcapng-epb-without-idb": Case(
            SHB + b"".join(epb(d, ts) for ts, d in clean), ("capture.bad_block",), 0, 1
        ),
        "pcapng-spb-without-idb": Case(
            SHB + block(3, struct.pack("<I", len(clean[3][1])) + clean[3][1]), ("capture.bad_block",), 0, 1
        ),
        "pcapng-idb-option-past-block": Case(
            SHB + idb(options=struct.pack("<HH", 2, 400) + b"eth0") + b"".join(epb(d, ts) for ts, d in clean),
            ("capture.bad_option",),
            EXCHANGES,
            0,
            0,
        ),
        "pcapng-zero-length-packets": Case(
            SHB + idb() + b"".join(epb(b"", ts) + epb(d, ts) for ts, d in clean), (), EXCHANGES, 0, 0
        ),
        "pcapng-truncated-block": Case(ng[: len(ng) - 30], ("capture.truncated",), EXCHANGES, 1),
        "pcapng-bad-byte-order": Case(
            partial_ng + SHB[:8] + b"\x01\x02\x03\x04" + SHB[12:], ("capture.corrupt",), EXCHANGES - 1, 1
        ),
        # -- classic pcap damage
        "pcap-truncated-file-header": Case(pcap[:20], ("capture.truncated",), 0, 1),
        "pcap-truncated-record-header": Case(
            partial_pcap + pcap_bytes(head[keep:])[24:30], ("capture.truncated",), EXCHANGES - 1, 1
        ),
        "pcap-truncated-record": Case(pcap[: len(pcap) - 20], ("capture.truncated",), EXCHANGES, 1),
        "pcap-huge-record-length": Case(
            partial_pcap + struct.pack("<IIII", 1, 0, 0x7FFFFFFF, 0x7FFFFFFF) + b"x" * 64,
            ("capture.corrupt",),
            EXCHANGES - 1,
            1,
        ),
        # check: nothing can be concluded from a file that is not a capture (exit 3)
        "wrong-magic": Case(b"\x00\x01\x02\x03" + pcap[4:], ("capture.unknown_format",), 0, 2, 3),
        "empty-file": Case(b"", ("capture.unknown_format",), 0, 2, 3),
        "pcap-zero-length-packets": Case(
            pcap_bytes([x for ts, d in clean for x in ((ts, b""), (ts, d))]), (), EXCHANGES, 0, 0
        ),
        "concatenated-pcaps": Case(
            pcap + pcap_bytes(timed(conversation(client=("10.0.0.3", 40001)).pkts)),
            ("capture.concatenated",),
            2 * EXCHANGES,
            0,
            0,
        ),
        "concatenated-pcaps-other-byte-order": Case(
            pcap + pcap_bytes(timed(conversation(client=("10.0.0.3", 40001)).pkts), big_endian=True),
            ("capture.concatenated",),
            2 * EXCHANGES,
            0,
            0,
        ),
        "concatenated-pcapngs": Case(
            ng + pcapng_bytes(timed(conversation(client=("10.0.0.3", 40001)).pkts)), (), 2 * EXCHANGES, 0, 0
        ),
        "gzip-cut-short": Case(gzip.compress(pcap, mtime=0)[:-300], ("capture.corrupt",), None, 1),
        "unknown-linktype": Case(pcap_bytes(clean, linktype=147), (), 0, 1, 1, ("unknown linktype 147",)),
        "pcapng-timestamps-beyond-any-date": Case(
            SHB + idb() + b"".join(epb_at(d, 0xFFFFFFFFFFFFFFFF - i) for i, (_ts, d) in enumerate(clean)),
            (),
            EXCHANGES,
            0,
            0,
            read_args=("--absolute",),
        ),
        "pcapng-timestamp-offset-minus-2-63": Case(
            SHB + idb(options=struct.pack("<HHq", 14, 8, -(2**63))) + b"".join(epb(d, ts) for ts, d in clean),
            (),
            EXCHANGES,
            0,
            0,
            read_args=("--absolute",),
        ),
        # check: no Kafka could be seen, so nothing is concluded (exit 3), and it says why
        "pcap-snaplen-64": Case(pcap_bytes(clean, snaplen=64), ("capture.snaplen",), 0, 1, 3, SNAPLEN_SAYS),
        "pcapng-snaplen-64": Case(
            pcapng_bytes(clean, snaplen=64), ("capture.snaplen",), 0, 1, 3, SNAPLEN_SAYS
        ),
    }
    # -- impossible frame sizes: the valid frames after them must all be found
    for name, size in (("minus-1", -1), ("minus-2-31", -(2**31)), ("max-int", 0x7FFFFFFF), ("zero", 0)):
        out[f"first-frame-size-{name}"] = Case(bad_size_first(size), BAD_SIZE, EXCHANGES, 0, 0)
        # mid-stream, a size of 0 is a (0-byte) frame: a request too short for its header
        mid = BAD_SIZE + ("decode.truncated",) if size == 0 else BAD_SIZE
        out[f"mid-frame-size-{name}"] = Case(bad_size_mid(size), mid, EXCHANGES, 0, 0)
    out["shuffled-segments"] = Case(shuffled(), (), EXCHANGES + 1, 0, 0)
    return out
