"""Where the captures are, which of them are clear text or TLS, and the bytes on the wire that
really are malformed."""

from __future__ import annotations

import struct
from pathlib import Path

from analyzer.dissect.constants import ApiKey, ErrorCode

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = ROOT.parent / "shared" / "captures" / "public"
CAPTURES = ROOT / "captures"


def public_captures() -> list[Path]:
    if not PUBLIC.is_dir():
        return []
    return sorted(p for p in PUBLIC.iterdir() if p.suffix in (".pcap", ".pcapng"))


def is_tls_capture(p: Path) -> bool:
    """A TLS capture needs its key log (``NAME.keys``), or carries it (``NAME-dsb.pcapng``)."""
    return p.with_suffix(".keys").exists() or p.name.endswith("-dsb.pcapng")


def project_captures() -> list[Path]:
    """The clear-text captures (the TLS ones are tests/captures/test_tls.py's)."""
    if not CAPTURES.is_dir():
        return []
    return sorted(p for p in CAPTURES.glob("*.pcap*") if not is_tls_capture(p))


def tls_captures() -> list[Path]:
    return sorted(p for p in CAPTURES.glob("*.pcap*") if is_tls_capture(p)) if CAPTURES.is_dir() else []


def known_malformed(api_key, kind: str, body_error_code) -> str | None:
    """Bytes on the wire that really are malformed, by name (issue: 'except bytes that really are
    malformed, which the test names'). Returns why, or None.

    * librdkafka's mock cluster answers an ApiVersions request it does not support with
      UNSUPPORTED_VERSION (35) in a layout that is neither v0 nor the requested version (the
      ApiKeys array count is one short and the response ends 2 bytes early).
    """
    if (
        api_key == ApiKey.API_VERSIONS
        and kind == "response"
        and body_error_code == ErrorCode.UNSUPPORTED_VERSION
    ):
        return "librdkafka mock: malformed ApiVersions UNSUPPORTED_VERSION answer"
    return None


def cut(path: Path, every: int, out_dir: Path) -> list[Path]:
    """Cut a classic pcap into pieces of ``every`` packets, copying the records' bytes as they are
    (what ``editcap -c`` does)."""
    raw = path.read_bytes()
    head = raw[:24]
    order = "<" if raw[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    records = []
    pos = 24
    while pos + 16 <= len(raw):
        incl = struct.unpack_from(order + "I", raw, pos + 8)[0]
        records.append(raw[pos : pos + 16 + incl])
        pos += 16 + incl
    pieces = []
    for i in range(0, len(records), every):
        p = out_dir / f"{path.stem}_{i // every:05d}.pcap"
        p.write_bytes(head + b"".join(records[i : i + every]))
        pieces.append(p)
    return pieces


def cut_splits(path: Path, size: int, out_dir: Path) -> list[str]:
    """Rotate a capture into the files of its byte-range splits of about ``size`` bytes (each
    with the header in force: for pcapng the section header, interfaces and secrets)."""
    from analyzer.capture.split import splits

    raw = path.read_bytes()
    pieces = []
    for i, s in enumerate(splits(path, size)):
        p = out_dir / f"{path.stem}-{i:03d}{path.suffix}"
        p.write_bytes(s.header + raw[s.start : s.end])
        pieces.append(str(p))
    return pieces


def connection_keys(path: Path) -> list[tuple]:
    """The TCP connections of a capture as ``export -j`` keys them
    (:func:`~analyzer.export.routes.flow_key`), in the order they are first seen."""
    from analyzer.capture.files import CaptureFile
    from analyzer.export.routes import flow_key
    from analyzer.reassembly.packet import decode_tcp

    keys: dict[tuple, None] = {}
    for _i, _ts, linktype, data in CaptureFile(path):
        seg = decode_tcp(linktype, data)
        if type(seg) is tuple:
            keys.setdefault(flow_key(seg))
    return list(keys)
