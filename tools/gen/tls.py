"""Kafka over TLS for the capture generator: a TLS front-end for the librdkafka mock cluster.

The mock cluster has no TLS listener, so TLS scenarios put this in front of it, as the SASL
scenarios put their front-end: one listener per mock broker on 127.0.0.1 that terminates TLS
(Python ``ssl``, a self-signed certificate for ``localhost`` made at record time with the
``openssl`` CLI) and relays the plaintext frame by frame to its mock broker; the mock advertises
``localhost:<front-end port>`` for each broker (``rd_kafka_mock_broker_set_host_port``), so the
clients' Metadata and FindCoordinator answers send them back to the front-end, never to the
mock. Clients connect to ``localhost``, so their ClientHello carries SNI ``localhost``.

The server context writes the NSS key log (``keylog_filename``): CLIENT_RANDOM lines for TLS 1.2,
the four traffic secrets for TLS 1.3, for every connection whatever the client library. The TLS
1.2 suite is fixed with ``set_ciphers``; TLS 1.3 suites cannot be set through Python's ``ssl``,
so the mock process runs with an ``OPENSSL_CONF`` whose ``Ciphersuites`` line allows just one.

Profile ``plain`` is the same front-end without TLS: the clear-text twin of a TLS scenario.
Each relayed frame is counted in ``pdus.txt`` (``q KEY VERSION`` / ``r``): the plaintext PDU
counts of the manifest, since the capture's TCP payload is ciphertext.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import struct
import subprocess
import threading
from pathlib import Path

# profile -> (TLS version, OpenSSL cipher name (TLS 1.2) or IANA suite name (TLS 1.3), IANA name)
PROFILES: dict[str, tuple[str, str, str]] = {
    "tls12-aes128gcm": ("TLS 1.2", "ECDHE-RSA-AES128-GCM-SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
    "tls12-chacha20": (
        "TLS 1.2",
        "ECDHE-RSA-CHACHA20-POLY1305",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    ),
    "tls12-aes128cbc": ("TLS 1.2", "ECDHE-RSA-AES128-SHA256", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256"),
    "tls13-aes128gcm": ("TLS 1.3", "TLS_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"),
    "tls13-aes256gcm": ("TLS 1.3", "TLS_AES_256_GCM_SHA384", "TLS_AES_256_GCM_SHA384"),
    "tls13-chacha20": ("TLS 1.3", "TLS_CHACHA20_POLY1305_SHA256", "TLS_CHACHA20_POLY1305_SHA256"),
}
HOST = "localhost"  # what the mock advertises and the clients connect to (SNI)


def make_certificate(tls_dir: Path) -> tuple[Path, Path]:
    """A self-signed RSA certificate for ``localhost`` (cert.pem, key.pem) in ``tls_dir``."""
    cert, key = tls_dir / "cert.pem", tls_dir / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
         "-days", "2", "-subj", f"/CN={HOST}", "-addext", f"subjectAltName=DNS:{HOST}"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


def openssl_conf(tls_dir: Path, profile: str) -> Path | None:
    """An OpenSSL config allowing only the profile's TLS 1.3 suite (None for TLS 1.2 / plain)."""
    if profile not in PROFILES or PROFILES[profile][0] != "TLS 1.3":
        return None
    path = tls_dir / "openssl.cnf"
    path.write_text(
        "openssl_conf = default_conf\n[default_conf]\nssl_conf = ssl_sect\n[ssl_sect]\n"
        "system_default = system_default_sect\n[system_default_sect]\n"
        f"Ciphersuites = {PROFILES[profile][1]}\n"
    )
    return path


def server_context(profile: str, tls_dir: Path, keylog: Path) -> ssl.SSLContext | None:
    if profile == "plain":
        return None
    version, cipher, _iana = PROFILES[profile]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tls_dir / "cert.pem", tls_dir / "key.pem")
    ctx.keylog_filename = str(keylog)
    if version == "TLS 1.2":
        ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        ctx.set_ciphers(cipher)
    else:
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    return ctx


def client_context(cafile: str) -> ssl.SSLContext:
    """What the scenarios' clients use: verify the front-end's certificate and name."""
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.check_hostname = True
    return ctx


async def _read_frame(r: asyncio.StreamReader) -> bytes | None:
    try:
        size = struct.unpack(">i", await r.readexactly(4))[0]
        return await r.readexactly(size)
    except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
        return None


async def _relay(src: asyncio.StreamReader, dst: asyncio.StreamWriter, count, requests: bool) -> None:
    """Copy Kafka frames one write each (one TLS record per frame), counting them."""
    try:
        while (frame := await _read_frame(src)) is not None:
            count(frame, requests)
            dst.write(struct.pack(">i", len(frame)) + frame)
            await dst.drain()
    except (ConnectionError, ssl.SSLError):
        pass
    finally:
        if not dst.is_closing():
            dst.close()


def start_front_end(upstream_ports: list[int], profile: str, tls_dir: Path) -> list[int]:
    """Listen on one new port per mock broker (background event loop); the ports."""
    ctx = server_context(profile, tls_dir, tls_dir / "keylog.txt")
    lock = threading.Lock()
    pdus = (tls_dir / "pdus.txt").open("a", buffering=1)

    def count(frame: bytes, request: bool) -> None:
        with lock:
            if request and len(frame) >= 4:
                key, ver = struct.unpack_from(">hh", frame)
                pdus.write(f"q {key} {ver}\n")
            else:
                pdus.write("r\n")

    loop = asyncio.new_event_loop()

    async def listen() -> list[int]:
        ports = []
        for port in upstream_ports:

            async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter, port: int = port) -> None:
                try:
                    ur, uw = await asyncio.open_connection("127.0.0.1", port)
                except OSError:
                    w.close()
                    return
                await asyncio.gather(_relay(r, uw, count, True), _relay(ur, w, count, False))

            srv = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=ctx)
            ports.append(srv.sockets[0].getsockname()[1])
        return ports

    ports = loop.run_until_complete(listen())
    threading.Thread(target=loop.run_forever, name="tls-front-end", daemon=True).start()
    return ports


def read_pdus(tls_dir: Path) -> dict:
    """The relayed plaintext PDUs, in the manifest's ``kafka_pdus`` shape."""
    requests = responses = 0
    versions: dict[str, set[int]] = {}
    path = tls_dir / "pdus.txt"
    for line in path.read_text().splitlines() if path.exists() else ():
        parts = line.split()
        if parts[0] == "q":
            requests += 1
            versions.setdefault(parts[1], set()).add(int(parts[2]))
        else:
            responses += 1
    return {
        "requests": requests,
        "responses": responses,
        "request_versions": {k: sorted(v) for k, v in sorted(versions.items(), key=lambda kv: int(kv[0]))},
    }


def inject_secrets(pcap: Path, keylog: Path, out: Path) -> bool:
    """``editcap --inject-secrets tls,KEYLOG``: a pcapng with the key log in a Decryption Secrets
    Block. False when editcap is missing."""
    try:
        subprocess.run(
            ["editcap", "--inject-secrets", f"tls,{keylog}", str(pcap), str(out)],
            check=True,
            capture_output=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return False
    return True


def env_for_mock(tls_dir: Path, profile: str) -> dict[str, str]:
    env = dict(os.environ)
    conf = openssl_conf(tls_dir, profile)
    if conf is not None:
        env["OPENSSL_CONF"] = str(conf)
    return env
