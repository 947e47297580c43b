"""Ground truth for the manifest and the ``--check`` step: Kafka PDUs per capture from a tiny
pcap reader (requests to a broker port, responses from one, request versions per API key, raw
SASL tokens), and tshark's view of the same capture for comparison."""

from __future__ import annotations

import shutil
import struct
import sys
from pathlib import Path
from typing import Any

from analyzer.dissect.constants import ApiKey  # pure Python, no deps

from .core import MANIFEST, load_manifest
from .netns import _run


def tcp_streams(pcap: Path) -> tuple[dict[tuple[int, int], bytearray], int]:
    """Payload bytes per (source port, destination port), in sequence order, and the number
    of sequence gaps. Handles what these captures hold: classic pcap, Ethernet, IPv4, TCP."""
    data = pcap.read_bytes()
    magic = data[:4]
    endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    streams: dict[tuple[int, int], bytearray] = {}
    expect: dict[tuple[int, int], int] = {}
    gaps, pos = 0, 24
    while pos + 16 <= len(data):
        incl = struct.unpack_from(endian + "I", data, pos + 8)[0]
        pkt = data[pos + 16 : pos + 16 + incl]
        pos += 16 + incl
        if len(pkt) < 34 or pkt[12:14] != b"\x08\x00" or pkt[23] != 6:
            continue
        ip = pkt[14:]
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack_from(">H", ip, 2)[0]
        tcp = ip[ihl:total]
        sport, dport, seq = struct.unpack_from(">HHI", tcp, 0)
        flags, off = tcp[13], (tcp[12] >> 4) * 4
        key = (sport, dport)
        if flags & 0x02:  # SYN
            expect[key] = (seq + 1) & 0xFFFFFFFF
            streams.setdefault(key, bytearray())
            continue
        payload = tcp[off:]
        if not payload or key not in expect:
            continue
        skip = (expect[key] - seq) & 0xFFFFFFFF
        if skip >= 1 << 31:  # segment starts after what we expect: bytes are missing
            gaps += 1
            skip = 0
        if skip < len(payload):
            streams[key] += payload[skip:]
            expect[key] = (seq + len(payload)) & 0xFFFFFFFF
    return streams, gaps


def _split_frames(buf: bytearray) -> tuple[list[bytes], int]:
    """Length-prefixed frames of one direction, and 1 if one is cut off by the end."""
    out, pos = [], 0
    while pos + 4 <= len(buf):
        size = struct.unpack_from(">i", buf, pos)[0]
        if size < 0 or pos + 4 + size > len(buf):
            return out, 1
        out.append(bytes(buf[pos + 4 : pos + 4 + size]))
        pos += 4 + size
    return out, 0


def _kafka_request_like(frame: bytes) -> bool:
    if len(frame) < 10:
        return False
    key, ver = struct.unpack_from(">hh", frame)
    return 0 <= key < 100 and 0 <= ver < 30


def kafka_pdus(pcap: Path, ports: list[int]) -> dict[str, Any]:
    """Count length-prefixed Kafka requests (to a broker port) and responses (from one), with
    the request versions seen per API key. After a SaslHandshake v0 request, the frames that
    are not Kafka requests are raw SASL tokens (so are as many answers after the handshake's
    response): counted apart, as ``raw_sasl_tokens``."""
    streams, gaps = tcp_streams(pcap)
    requests = responses = partial = 0
    raw = {"requests": 0, "responses": 0}
    versions: dict[str, set[int]] = {}
    raw_answers: dict[tuple[int, int], tuple[int, int]] = {}  # response stream: (first, count)
    for (sport, dport), buf in streams.items():
        if dport not in ports:
            continue
        frames, part = _split_frames(buf)
        partial += part
        in_raw, answered = False, 0
        for frame in frames:
            if in_raw and not _kafka_request_like(frame):
                raw["requests"] += 1
                first, count = raw_answers[(dport, sport)]
                raw_answers[(dport, sport)] = (first, count + 1)
                continue
            in_raw = False
            requests += 1
            key, ver = struct.unpack_from(">hh", frame)
            versions.setdefault(str(key), set()).add(ver)
            answered += 1
            if key == ApiKey.SASL_HANDSHAKE and ver == 0:  # v0: raw tokens follow
                in_raw = True
                raw_answers[(dport, sport)] = (answered, 0)
    for (sport, dport), buf in streams.items():
        if sport not in ports:
            continue
        frames, part = _split_frames(buf)
        partial += part
        first, count = raw_answers.get((sport, dport), (0, 0))
        responses += len(frames)
        if count and len(frames) > first:
            n = min(count, len(frames) - first)
            raw["responses"] += n
            responses -= n
    out: dict[str, Any] = {
        "requests": requests,
        "responses": responses,
        "request_versions": {k: sorted(v) for k, v in sorted(versions.items(), key=lambda kv: int(kv[0]))},
    }
    if raw["requests"] or raw["responses"]:
        out["raw_sasl_tokens"] = raw
    if gaps or partial:
        out["gaps"], out["partial_pdus"] = gaps, partial
    return out


def tshark_summary(pcap: Path, ports: list[int], keylog: Path | None = None) -> dict[str, Any]:
    """Kafka PDUs (one correlation id each), requests, malformed frames, and the request
    versions per API key, as tshark decodes them with every broker port mapped to Kafka (inside
    TLS, decrypted with ``keylog``, when given)."""
    layer = "tls" if keylog else "tcp"
    decode = [a for p in ports for a in ("-d", f"{layer}.port=={p},kafka")]
    if keylog:
        decode += ["-o", f"tls.keylog_file:{keylog}"]
    out = _run(
        [
            "tshark",
            "-r",
            str(pcap),
            *decode,
            "-Y",
            "kafka",
            "-T",
            "fields",
            "-E",
            "separator=/t",
            "-e",
            "kafka.correlation_id",
            "-e",
            "kafka.request_key",
            "-e",
            "kafka.request.version",
        ],
        check=False,
    ).stdout
    pdus = requests = 0
    versions: dict[int, set[int]] = {}
    for line in out.splitlines():
        corr, keys, vers = [*line.split("\t"), "", "", ""][:3]
        pdus += len([c for c in corr.split(",") if c])
        keys_l, vers_l = [k for k in keys.split(",") if k], [v for v in vers.split(",") if v]
        requests += len(keys_l)
        for k, v in zip(keys_l, vers_l, strict=False):
            versions.setdefault(int(k), set()).add(int(v))
    malformed = _run(
        ["tshark", "-r", str(pcap), *decode, "-Y", "_ws.malformed"], check=False
    ).stdout.splitlines()
    return {
        "pdus": pdus,
        "requests": requests,
        "malformed": len(malformed),
        "request_versions": {k: sorted(v) for k, v in sorted(versions.items())},
    }


def check(out_dir: Path) -> None:
    if not shutil.which("tshark"):
        sys.exit("tshark not found")
    total = 0
    for e in load_manifest(out_dir / MANIFEST):
        pcap = out_dir / e["file"]
        keylog = (e.get("tls") or {}).get("keylog")
        s = tshark_summary(pcap, e["broker_ports"], out_dir / keylog if keylog else None)
        size = pcap.stat().st_size
        total += size
        # TLS: the payload is ciphertext; the manifest has the plaintext PDUs the front-end relayed
        own = e["kafka_pdus"] if e.get("tls") else kafka_pdus(pcap, e["broker_ports"])
        apis = " ".join(f"{k}:v{'/'.join(map(str, v))}" for k, v in own["request_versions"].items())
        raw = own.get("raw_sasl_tokens")
        print(
            f"{e['file']:40} {size / 1024:5.1f} KiB  pdus={own['requests'] + own['responses']:4}"
            f" (req {own['requests']}, resp {own['responses']})  tshark: pdus={s['pdus']:4} "
            f"malformed={s['malformed']:3}  api:versions {apis}"
            + (f"  raw SASL tokens {raw['requests']}/{raw['responses']}" if raw else "")
        )
    print(f"total {total / 1024:.0f} KiB")
