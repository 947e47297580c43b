"""ClientHello and ServerHello: what the analyzer reports and needs for the keys.

Both parsers take a handshake message body (after the 4-byte handshake header) and return a
dict, or raise :class:`HelloError` (caught by the TLS layer, reported as an issue): every length
is checked against the bytes that remain.
"""

from __future__ import annotations

import hashlib
import struct

HRR_RANDOM = hashlib.sha256(b"HelloRetryRequest").digest()

VERSIONS = {0x0300: "SSL 3.0", 0x0301: "TLS 1.0", 0x0302: "TLS 1.1", 0x0303: "TLS 1.2", 0x0304: "TLS 1.3"}

EXT_SNI = 0
EXT_ALPN = 16
EXT_ENCRYPT_THEN_MAC = 22
EXT_EXTENDED_MASTER_SECRET = 23
EXT_SESSION_TICKET = 35
EXT_PRE_SHARED_KEY = 41
EXT_SUPPORTED_VERSIONS = 43


class HelloError(ValueError):
    pass


def version_name(v: int | None) -> str | None:
    if v is None:
        return None
    return VERSIONS.get(v, f"0x{v:04X}")


class _Reader:
    __slots__ = ("b", "p", "end")

    def __init__(self, b: bytes, p: int = 0, end: int | None = None):
        self.b = b
        self.p = p
        self.end = len(b) if end is None else end

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or self.p + n > self.end:
            raise HelloError(f"{what} runs past the end of the message")
        v = self.b[self.p : self.p + n]
        self.p += n
        return v

    def u8(self, what: str) -> int:
        return self.take(1, what)[0]

    def u16(self, what: str) -> int:
        return struct.unpack(">H", self.take(2, what))[0]

    def vec(self, lenbytes: int, what: str) -> bytes:
        n = int.from_bytes(self.take(lenbytes, what + " length"), "big")
        return self.take(n, what)

    def left(self) -> int:
        return self.end - self.p


def _extensions(r: _Reader) -> dict[int, bytes]:
    out: dict[int, bytes] = {}
    if not r.left():
        return out
    ext = _Reader(r.vec(2, "extensions"))
    while ext.left():
        t = ext.u16("extension type")
        out[t] = ext.vec(2, f"extension {t}")
    return out


def _sni(data: bytes) -> str | None:
    r = _Reader(_Reader(data).vec(2, "server name list"))
    while r.left():
        kind = r.u8("server name type")
        name = r.vec(2, "server name")
        if kind == 0:
            return name.decode("ascii", errors="replace")
    return None


def _alpn(data: bytes) -> list[str]:
    r = _Reader(_Reader(data).vec(2, "ALPN list"))
    out = []
    while r.left():
        out.append(r.vec(1, "ALPN protocol").decode("ascii", errors="replace"))
    return out


def parse_client_hello(body: bytes) -> dict:
    r = _Reader(bytes(body))
    legacy = r.u16("client version")
    random = r.take(32, "client random")
    session_id = r.vec(1, "session id")
    suites_raw = r.vec(2, "cipher suites")
    r.vec(1, "compression methods")
    ext = _extensions(r)
    versions = [legacy]
    if EXT_SUPPORTED_VERSIONS in ext:
        sv = _Reader(ext[EXT_SUPPORTED_VERSIONS]).vec(1, "supported versions")
        versions = [v for (v,) in struct.iter_unpack(">H", sv[: len(sv) & ~1])]
    return {
        "random": random,
        "session_id": session_id,
        "cipher_suites": [c for (c,) in struct.iter_unpack(">H", suites_raw[: len(suites_raw) & ~1])],
        "versions": versions,
        "sni": _sni(ext[EXT_SNI]) if EXT_SNI in ext else None,
        "alpn": _alpn(ext[EXT_ALPN]) if EXT_ALPN in ext else [],
        "ticket": bool(ext.get(EXT_SESSION_TICKET)),  # a non-empty ticket: resumption offered
        "psk": EXT_PRE_SHARED_KEY in ext,
    }


def parse_server_hello(body: bytes) -> dict:
    r = _Reader(bytes(body))
    legacy = r.u16("server version")
    random = r.take(32, "server random")
    session_id = r.vec(1, "session id")
    suite = r.u16("cipher suite")
    r.u8("compression method")
    ext = _extensions(r)
    version = legacy
    if EXT_SUPPORTED_VERSIONS in ext:
        sv = ext[EXT_SUPPORTED_VERSIONS]
        if len(sv) != 2:
            raise HelloError("supported_versions of the ServerHello is not one version")
        version = struct.unpack(">H", sv)[0]
    alpn = _alpn(ext[EXT_ALPN]) if EXT_ALPN in ext else []
    return {
        "random": random,
        "session_id": session_id,
        "cipher_suite": suite,
        "version": version,
        "alpn": alpn[0] if alpn else None,
        "hrr": random == HRR_RANDOM,
        "etm": EXT_ENCRYPT_THEN_MAC in ext,
        "ems": EXT_EXTENDED_MASTER_SECRET in ext,
        "psk": EXT_PRE_SHARED_KEY in ext,
    }
