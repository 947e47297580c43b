"""Patching decoded fields of a real capture, in the file's bytes: for tests that need a recording
that breaks one rule (acks=1 instead of all, an error code in a response, +80 ms of latency).

:func:`field_position` finds the file offset of a decoded field: the field's span inside its frame,
the frame's offset in its TCP stream, and the packets' payloads (classic pcap without
retransmissions, as the bundled loopback recordings are)."""

from __future__ import annotations

import struct
from pathlib import Path

from analyzer.dissect.message import Options
from analyzer.model import Exchange, Field
from analyzer.pipeline import Analysis
from analyzer.reassembly.packet import decode_tcp


def records(raw: bytes) -> list[tuple[int, int, int]]:
    """(file offset of the record header, file offset of the packet data, captured length)."""
    order = "<" if raw[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    linktype = struct.unpack_from(order + "I", raw, 20)[0]
    assert linktype == 1, "Ethernet captures only"
    out = []
    pos = 24
    while pos + 16 <= len(raw):
        incl = struct.unpack_from(order + "I", raw, pos + 8)[0]
        out.append((pos, pos + 16, incl))
        pos += 16 + incl
    return out


def stream_map(raw: bytes) -> dict[tuple, list[tuple[int, int, int]]]:
    """(src, sport, dst, dport) -> [(stream offset, file offset, length)] of every payload."""
    out: dict[tuple, list[tuple[int, int, int]]] = {}
    base: dict[tuple, int] = {}
    for _, data_at, incl in records(raw):
        data = memoryview(raw)[data_at : data_at + incl]
        seg = decode_tcp(1, data)
        if type(seg) is not tuple:
            continue
        src, sport, dst, dport, seq, _ack, _flags, payload = seg
        if not len(payload):
            continue
        key = (bytes(src), sport, bytes(dst), dport)
        first = base.setdefault(key, seq)  # stream offset 0: the first payload byte
        # the payload ends the record (loopback: no Ethernet padding): its last occurrence
        start = data_at + bytes(data).rfind(bytes(payload))
        out.setdefault(key, []).append(((seq - first) & 0xFFFFFFFF, start, len(payload)))
    return out


def exchanges(path: Path) -> list[Exchange]:
    return [ev for ev in Analysis(path, Options(records_bodies=True)).events() if type(ev) is Exchange]


def field_position(raw: bytes, ex: Exchange, kind: str, f: Field) -> int:
    """File offset of the first byte of decoded field ``f`` of the request or response."""
    return frame_positions(raw, ex, kind, f.offset, 1)[0]


def frame_positions(raw: bytes, ex: Exchange, kind: str, start: int, n: int) -> list[int]:
    """File offsets of ``n`` bytes of the request's or response's frame from byte ``start`` of its
    payload (after the size prefix: the header's api_version is at 2, its client id from 10); the
    bytes may span several packets."""
    msg = ex.request if kind == "request" else ex.response
    assert msg is not None
    info = ex.conn
    frm = msg.frame
    sender = info.a if frm.direction == 0 else info.b
    receiver = info.b if frm.direction == 0 else info.a
    key = (_ip(sender.ip), sender.port, _ip(receiver.ip), receiver.port)
    payloads = stream_map(raw)[key]
    out = []
    for target in range(frm.offset + 4 + start, frm.offset + 4 + start + n):
        at = next((a + (target - off) for off, a, m in payloads if off <= target < off + m), None)
        if at is None:
            raise AssertionError(f"stream offset {target} not in the capture")
        out.append(at)
    return out


def _ip(text: str) -> bytes:
    import ipaddress

    return ipaddress.ip_address(text).packed


def find(node: Field, name: str) -> Field:
    for f in node.walk():
        if f.name == name:
            return f
    raise AssertionError(f"no field {name}")


def patch_field(path: Path, out: Path, select, kind: str, name: str, value: bytes, count: int = 1) -> int:
    """Write ``out``: ``path`` with field ``name`` of the ``kind`` message of the first ``count``
    exchanges ``select`` accepts set to ``value`` (its encoded bytes). Returns how many were set."""
    raw = bytearray(path.read_bytes())
    done = 0
    for ex in exchanges(path):
        if done >= count or not select(ex):
            continue
        msg = ex.request if kind == "request" else ex.response
        if msg is None or msg.body is None:
            continue
        f = find(msg.body, name)
        assert f.length == len(value), (f.length, value)
        at = field_position(bytes(raw), ex, kind, f)
        raw[at : at + len(value)] = value
        done += 1
    out.write_bytes(bytes(raw))
    return done


def patch_frame(path: Path, out: Path, select, kind: str, start: int, value: bytes, count: int = 1) -> int:
    """Write ``out``: ``path`` with the bytes at ``start`` of the ``kind`` frame's payload (see
    :func:`frame_positions`) of the first ``count`` selected exchanges replaced by ``value``."""
    raw = bytearray(path.read_bytes())
    done = 0
    for ex in exchanges(path):
        if done >= count or not select(ex) or (ex.request if kind == "request" else ex.response) is None:
            continue
        for at, b in zip(frame_positions(bytes(raw), ex, kind, start, len(value)), value, strict=True):
            raw[at] = b
        done += 1
    out.write_bytes(bytes(raw))
    return done


def patch_batch_field(
    path: Path, out: Path, select, name: str, value: bytes, after: str | None = None
) -> int:
    """Write ``out``: ``path`` with field ``name`` (the first after field ``after``, if given) of
    the first selected exchange's request set to ``value``, and the CRC-32C of the record batch
    holding it recomputed, so that the batch is what a client that meant it would have sent.
    Returns the exchange's 1-based number (the order check and read number exchanges in)."""
    from analyzer.dissect.crc import crc32c

    raw = bytearray(path.read_bytes())
    for n, ex in enumerate(exchanges(path), 1):
        if not select(ex) or ex.request is None or ex.request.body is None:
            continue
        fields = list(ex.request.body.walk())
        start = 0 if after is None else next(i for i, f in enumerate(fields) if f.name == after)
        f = next(x for x in fields[start:] if x.name == name)
        batch = [
            b for b in fields if b.name == "record_batch" and b.offset <= f.offset < b.offset + b.length
        ][-1]
        assert f.length == len(value), (f.length, value)
        pos = frame_positions(bytes(raw), ex, "request", batch.offset, batch.length)
        for i, b in enumerate(value):
            raw[pos[f.offset - batch.offset + i]] = b
        crc = crc32c(bytes(raw[p] for p in pos[21:]))  # attributes to the end of the batch
        for p, b in zip(pos[17:21], struct.pack(">I", crc), strict=True):
            raw[p] = b
        out.write_bytes(bytes(raw))
        return n
    raise AssertionError("no exchange selected")


def delay_responses(path: Path, out: Path, select, seconds: float) -> int:
    """Write ``out``: the packets that carry the responses of the selected exchanges arrive
    ``seconds`` later (their record timestamps moved; microsecond pcap)."""
    raw = bytearray(path.read_bytes())
    recs = records(bytes(raw))
    order = "<" if raw[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    moved = set()
    for ex in exchanges(path):
        if select(ex) and ex.response is not None:
            moved.update(ex.response.frame.packet_indexes)
    for n in moved:
        hdr = recs[n - 1][0]
        sec, usec = struct.unpack_from(order + "II", raw, hdr)
        t = sec * 1_000_000 + usec + int(round(seconds * 1e6))
        struct.pack_into(order + "II", raw, hdr, t // 1_000_000, t % 1_000_000)
    out.write_bytes(bytes(raw))
    return len(moved)


def member_stays(path: Path, out: Path) -> Path:
    """Write ``out``: ``path`` with the member id of its one LeaveGroup request changed (its
    last character), so the member that left stays live in the group as the capture shows it."""
    from analyzer.dissect.constants import ApiKey

    leave = lambda ex: ex.api_key == ApiKey.LEAVE_GROUP  # noqa: E731
    [ex] = [e for e in exchanges(path) if leave(e)]
    assert ex.request is not None and ex.request.body is not None
    member = ex.request.body.get("member_id").encode()
    other = member[:-1] + (b"x" if member[-1:] != b"x" else b"y")
    assert patch_field(path, out, leave, "request", "member_id", struct.pack(">h", len(other)) + other) == 1
    return out
