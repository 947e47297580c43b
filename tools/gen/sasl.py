"""The SASL front-end: librdkafka's mock cluster has no SASL (no SaslHandshake or
SaslAuthenticate handler; it closes the connection on either), so the SASL scenarios
(``*-sasl-*``) put this in front of each mock broker (in the mock's process). It answers
ApiVersions (the mock's answer plus the two SASL APIs), SaslHandshake v0/v1, SaslAuthenticate
v0-v2 and raw SASL tokens (after SaslHandshake v0) for PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512
(user ``alice``, password ``alice-secret``), then relays the connection to the mock broker,
which advertises the front-end's ports. tcpdump records only the front-end's ports.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import os
import struct
import threading

from analyzer.dissect.constants import ApiKey, ErrorCode  # pure Python, no deps
from analyzer.dissect.decoder import read_uvarint

SASL_USER = "alice"
SASL_PASSWORD = "alice-secret"  # recognisable: tests check it never appears in masked output
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SASL_APIS = ((17, 0, 1), (36, 0, 2))  # SaslHandshake v0-v1, SaslAuthenticate v0-v2, as Kafka 2.5+
SCRAM_ITERATIONS = 4096  # Kafka's minimum for SCRAM credentials


class SaslFailed(Exception):
    pass


class PlainServer:
    """RFC 4616: one token ``authzid NUL user NUL password``, answered with an empty token."""

    def __init__(self, mechanism: str, users: dict[str, str]) -> None:
        self.users = users
        self.done = False

    def step(self, token: bytes) -> bytes:
        parts = token.split(b"\x00")
        if len(parts) != 3 or self.users.get(parts[1].decode(errors="replace")) != parts[2].decode(
            errors="replace"
        ):
            raise SaslFailed("Authentication failed: Invalid username or password")
        self.done = True
        return b""


class ScramServer:
    """RFC 5802 server side: client-first -> server-first, client-final -> server-final.

    The salt is derived from the user name (stable across runs); the server nonce is random,
    like the client's."""

    def __init__(self, mechanism: str, users: dict[str, str]) -> None:
        self.hash_name = "sha256" if mechanism == "SCRAM-SHA-256" else "sha512"
        self.hash = getattr(hashlib, self.hash_name)
        self.users = users
        self.done = False
        self.first: tuple[str, str, str, bytes] | None = None  # bare, server-first, nonce, salted

    def _hmac(self, key: bytes, msg: bytes) -> bytes:
        return hmac.new(key, msg, self.hash).digest()

    def step(self, token: bytes) -> bytes:
        msg = token.decode(errors="replace")
        if self.first is None:
            gs2 = msg.split(",", 2)
            if len(gs2) != 3 or gs2[0] not in ("n", "y"):
                raise SaslFailed("Invalid SCRAM client-first-message")
            bare = gs2[2]
            attrs = dict(kv.split("=", 1) for kv in bare.split(",") if "=" in kv)
            user, password = attrs.get("n", ""), self.users.get(attrs.get("n", ""))
            if password is None or "r" not in attrs:
                raise SaslFailed(f"Authentication failed: unknown user {user!r}")
            salt = hashlib.sha256(f"kafka-analyzer-salt-{user}".encode()).digest()[:16]
            nonce = attrs["r"] + os.urandom(18).hex()
            server_first = f"r={nonce},s={base64.b64encode(salt).decode()},i={SCRAM_ITERATIONS}"
            salted = hashlib.pbkdf2_hmac(self.hash_name, password.encode(), salt, SCRAM_ITERATIONS)
            self.first = (bare, server_first, nonce, salted)
            return server_first.encode()
        bare, server_first, nonce, salted = self.first
        without_proof, sep, proof_b64 = msg.rpartition(",p=")
        attrs = dict(kv.split("=", 1) for kv in without_proof.split(",") if "=" in kv)
        if not sep or attrs.get("r") != nonce:
            raise SaslFailed("Invalid SCRAM client-final-message")
        auth_message = f"{bare},{server_first},{without_proof}".encode()
        client_key = self._hmac(salted, b"Client Key")
        signature = self._hmac(self.hash(client_key).digest(), auth_message)
        proof = base64.b64decode(proof_b64)
        if len(proof) != len(signature) or bytes(a ^ b for a, b in zip(proof, signature, strict=True)) != (
            client_key
        ):
            raise SaslFailed("Authentication failed: Invalid user credentials")
        self.done = True
        server_signature = self._hmac(self._hmac(salted, b"Server Key"), auth_message)
        return b"v=" + base64.b64encode(server_signature)


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _request_body(frame: bytes, flexible: bool) -> int:
    """Offset of the body: past api key, version, correlation id, client id (and tags)."""
    clen = struct.unpack_from(">h", frame, 8)[0]
    pos = 10 + max(clen, 0)
    if flexible:
        end = len(frame)
        ntags, pos = read_uvarint(frame, pos, end)
        for _ in range(ntags):
            _, pos = read_uvarint(frame, pos, end)
            size, pos = read_uvarint(frame, pos, end)
            pos += size
    return pos


def sasl_handshake_response(corr: int, error: int, mechanisms: tuple[str, ...]) -> bytes:
    out = struct.pack(">ihi", corr, error, len(mechanisms))
    for m in mechanisms:
        out += struct.pack(">h", len(m)) + m.encode()
    return out


def sasl_authenticate_response(
    corr: int, version: int, error: int, message: str | None, token: bytes
) -> bytes:
    text = None if message is None else message.encode()
    if version >= 2:  # flexible: response header tags, compact strings and bytes, body tags
        out = struct.pack(">i", corr) + b"\x00" + struct.pack(">h", error)
        out += b"\x00" if text is None else _uvarint(len(text) + 1) + text
        out += _uvarint(len(token) + 1) + token
        return out + struct.pack(">q", 0) + b"\x00"
    out = struct.pack(">ih", corr, error)
    out += struct.pack(">h", -1) if text is None else struct.pack(">h", len(text)) + text
    out += struct.pack(">i", len(token)) + token
    return out + (struct.pack(">q", 0) if version >= 1 else b"")  # session_lifetime_ms 0: no re-auth


def add_sasl_apis(resp: bytes, version: int) -> bytes:
    """A successful v0-v2 ApiVersions response with SaslHandshake and SaslAuthenticate added
    (the mock's own list lacks them); anything else unchanged."""
    if version > 2 or len(resp) < 10 or struct.unpack_from(">h", resp, 4)[0] != 0:
        return resp
    count = struct.unpack_from(">i", resp, 6)[0]
    end = 10 + 6 * count
    apis = {k: (lo, hi) for k, lo, hi in struct.iter_unpack(">hhh", resp[10:end])}
    apis.update({k: (lo, hi) for k, lo, hi in SASL_APIS})
    body = b"".join(struct.pack(">hhh", k, lo, hi) for k, (lo, hi) in sorted(apis.items()))
    return resp[:6] + struct.pack(">i", len(apis)) + body + resp[end:]


async def _read_frame(reader: asyncio.StreamReader) -> bytes | None:
    try:
        head = await reader.readexactly(4)
        return await reader.readexactly(struct.unpack(">i", head)[0])
    except (asyncio.IncompleteReadError, ConnectionError):
        return None


async def _relay(src: asyncio.StreamReader, dst: asyncio.StreamWriter, half_close: bool) -> None:
    """Copy Kafka frames one write each, so the client sees the mock's responses in separate
    segments as it sends them (copying whatever one read returns would merge them)."""
    try:
        while (frame := await _read_frame(src)) is not None:
            dst.write(struct.pack(">i", len(frame)) + frame)
            await dst.drain()
    except ConnectionError:
        pass
    finally:
        if half_close and dst.can_write_eof() and not dst.is_closing():
            with contextlib.suppress(OSError):
                dst.write_eof()
        else:
            dst.close()


async def sasl_connection(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, upstream: int, mechanisms: tuple[str, ...]
) -> None:
    """One client connection: what a broker's SASL_PLAINTEXT listener does before
    authentication (ApiVersions, SaslHandshake v0/v1, SaslAuthenticate v0-v2 or, after
    SaslHandshake v0, raw size-prefixed tokens), then a byte relay to the mock broker.

    ApiVersions goes to the mock, with SaslHandshake and SaslAuthenticate added to its answer.
    Any other request before authentication closes the connection (as a broker does)."""
    users = {SASL_USER: SASL_PASSWORD}
    servers = {"PLAIN": PlainServer, "SCRAM-SHA-256": ScramServer, "SCRAM-SHA-512": ScramServer}
    up: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    server: PlainServer | ScramServer | None = None
    raw = False
    try:
        while server is None or not server.done:
            frame = await _read_frame(reader)
            if frame is None or len(frame) < (0 if raw else 10):
                return
            if raw:  # after SaslHandshake v0: the frame is the token, the answer too
                assert server is not None
                try:
                    token = server.step(frame)
                except SaslFailed:
                    return  # a broker closes the connection on failure in this mode
                writer.write(struct.pack(">i", len(token)) + token)
                await writer.drain()
                continue
            key, version, corr = struct.unpack_from(">hhi", frame)
            if key == ApiKey.API_VERSIONS:
                if up is None:
                    up = await asyncio.open_connection("127.0.0.1", upstream)
                up[1].write(struct.pack(">i", len(frame)) + frame)
                await up[1].drain()
                resp = await _read_frame(up[0])
                if resp is None:
                    return
                resp = add_sasl_apis(resp, version)
            elif key == ApiKey.SASL_HANDSHAKE and server is None:
                pos = _request_body(frame, False)
                size = struct.unpack_from(">h", frame, pos)[0]
                mechanism = frame[pos + 2 : pos + 2 + size].decode(errors="replace")
                ok = mechanism in mechanisms
                resp = sasl_handshake_response(
                    corr, ErrorCode.NONE if ok else ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms
                )
                if ok:
                    server = servers[mechanism](mechanism, users)
                    raw = version == 0
            elif key == ApiKey.SASL_AUTHENTICATE and server is not None and not raw:
                pos = _request_body(frame, version >= 2)
                if version >= 2:
                    size, pos = read_uvarint(frame, pos, len(frame))
                    token = frame[pos : pos + size - 1]
                else:
                    size = struct.unpack_from(">i", frame, pos)[0]
                    token = frame[pos + 4 : pos + 4 + size]
                try:
                    resp = sasl_authenticate_response(corr, version, 0, None, server.step(token))
                except SaslFailed as exc:  # answer, then close (as a broker does)
                    resp = sasl_authenticate_response(
                        corr, version, ErrorCode.SASL_AUTHENTICATION_FAILED, str(exc), b""
                    )
                    writer.write(struct.pack(">i", len(resp)) + resp)
                    await writer.drain()
                    return
            else:
                return  # not allowed before authentication: close
            writer.write(struct.pack(">i", len(resp)) + resp)
            await writer.drain()
        # authenticated: relay the rest of the connection to the mock broker
        if up is None:
            up = await asyncio.open_connection("127.0.0.1", upstream)
        await asyncio.gather(_relay(reader, up[1], half_close=True), _relay(up[0], writer, half_close=False))
    finally:
        writer.close()
        if up is not None:
            up[1].close()


def start_sasl_front_end(upstream_ports: list[int], mechanisms: tuple[str, ...]) -> list[int]:
    """Listen on one new port per mock broker (in a background event loop); the ports."""
    loop = asyncio.new_event_loop()

    async def listen() -> list[int]:
        ports = []
        for port in upstream_ports:

            async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter, port: int = port) -> None:
                await sasl_connection(r, w, port, mechanisms)

            srv = await asyncio.start_server(handle, "127.0.0.1", 0)
            ports.append(srv.sockets[0].getsockname()[1])
        return ports

    ports = loop.run_until_complete(listen())
    threading.Thread(target=loop.run_forever, name="sasl-front-end", daemon=True).start()
    return ports


# what the manifest says of every SASL scenario (librdkafka's and kafka-python's)
SASL_NOTE = (
    "librdkafka's mock cluster has no SASL: it advertises neither SaslHandshake nor "
    "SaslAuthenticate in ApiVersions (rd_kafka_mock_set_apiversion cannot add them: they have "
    "no handler) and closes the connection on either request. The generator's SASL front-end "
    "(tools/gen_captures.py, SASL_PLAINTEXT with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 like "
    "a Kafka broker's listener) therefore answers ApiVersions (the mock's list plus "
    "SaslHandshake v0-v1 and SaslAuthenticate v0-v2), the SASL requests and tokens; after "
    "authentication it relays the connection byte for byte to the mock broker, which "
    "advertises the front-end's ports. The client's bytes are the client's own; the SASL "
    "answers are the front-end's. The front-end's own connections to the mock are not "
    "captured.",
)
