"""TlsConnection on synthetic streams: decryption, KeyUpdate, corrupt records, wrong keys,
truncated handshakes, gaps, oversized records, HelloRetryRequest, resumption; never raises."""

import struct

from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.events import Gap, StreamData
from analyzer.model import Severity
from analyzer.tls.crypto import SUITES, tls12_key_block, tls13_traffic_keys
from analyzer.tls.keylog import KeyLog
from analyzer.tls.layer import TlsConnection
from tests.helpers.rfc8448 import (
    CLIENT_AP_SECRET,
    CLIENT_HELLO,
    CLIENT_HS_IV,
    CLIENT_HS_KEY,
    CLIENT_HS_SECRET,
    CLIENT_RANDOM,
    SERVER_AP_IV,
    SERVER_AP_KEY,
    SERVER_AP_SECRET,
    SERVER_FLIGHT_RECORD,
    SERVER_HELLO,
    SERVER_HS_SECRET,
)

AES128 = SUITES[0x1301]


# -- TlsConnection on synthetic streams ------------------------------------------------------------


def record(ctype: int, body: bytes, version: int = 0x0303) -> bytes:
    return struct.pack(">BHH", ctype, version, len(body)) + body


def seal13(key: bytes, iv: bytes, seq: int, inner_type: int, plain: bytes) -> bytes:
    nonce = (int.from_bytes(iv, "big") ^ seq).to_bytes(12, "big")
    n = len(plain) + 1 + 16
    aad = struct.pack(">BHH", 23, 0x0303, n)
    return record(23, AESGCM(key).encrypt(nonce, plain + bytes([inner_type]), aad))


def keylog13(ap_only: bool = False) -> KeyLog:
    kl = KeyLog()
    lines = [
        f"CLIENT_TRAFFIC_SECRET_0 {CLIENT_RANDOM.hex()} {CLIENT_AP_SECRET.hex()}",
        f"SERVER_TRAFFIC_SECRET_0 {CLIENT_RANDOM.hex()} {SERVER_AP_SECRET.hex()}",
    ]
    if not ap_only:
        lines += [
            f"CLIENT_HANDSHAKE_TRAFFIC_SECRET {CLIENT_RANDOM.hex()} {CLIENT_HS_SECRET.hex()}",
            f"SERVER_HANDSHAKE_TRAFFIC_SECRET {CLIENT_RANDOM.hex()} {SERVER_HS_SECRET.hex()}",
        ]
    kl.add_text("\n".join(lines), "test")
    return kl


def finished() -> bytes:
    return b"\x14\x00\x00\x20" + b"\x01" * 32


def tls13_streams(app_client: list[bytes], app_server: list[bytes]) -> tuple[bytes, bytes]:
    """A TLS 1.3 connection with the RFC 8448 hellos and keys: (client bytes, server bytes)."""
    cli = record(22, CLIENT_HELLO, 0x0301) + record(20, b"\x01")
    cli += seal13(CLIENT_HS_KEY, CLIENT_HS_IV, 0, 22, finished())
    ck, civ = tls13_traffic_keys(AES128, CLIENT_AP_SECRET)
    for i, p in enumerate(app_client):
        cli += seal13(ck, civ, i, 23, p)
    srv = record(22, SERVER_HELLO) + record(20, b"\x01") + SERVER_FLIGHT_RECORD
    for i, p in enumerate(app_server):
        srv += seal13(SERVER_AP_KEY, SERVER_AP_IV, i, 23, p)
    return cli, srv


def run(tls: TlsConnection, cli: bytes, srv: bytes, chunk: int = 7):
    """Feed both directions in small chunks (records span chunks); plaintext per direction."""
    plain = [b"", b""]
    issues = []
    gaps = []
    offs = [0, 0]
    hello = 5 + (cli[3] << 8 | cli[4]) if len(cli) >= 5 else len(cli)
    # the ClientHello, then the server's side, then the rest of the client's: as on the wire
    for d, data in ((0, cli[:hello]), (1, srv), (0, cli[hello:])):
        for p in range(0, len(data), chunk):
            out, iss = tls.feed(StreamData(1, d, offs[d], data[p : p + chunk], 0.0, 1))
            offs[d] += len(data[p : p + chunk])
            issues += iss
            for ev in out:
                if type(ev) is StreamData:
                    assert ev.offset == len(plain[d]) + sum(g.length for g in gaps if g.direction == d)
                    plain[d] += bytes(ev.data)
                else:
                    gaps.append(ev)
    issues += tls.flush()
    return plain, [i for _d, i in issues], gaps


def test_tls13_decrypts_across_chunks():
    tls = TlsConnection(1, keylog13())
    cli, srv = tls13_streams([b"request-1", b"request-2"], [b"response-1"])
    plain, issues, gaps = run(tls, cli, srv)
    assert plain == [b"request-1request-2", b"response-1"]
    assert not gaps and not [i for i in issues if i.severity >= Severity.WARNING]
    info = tls.info
    assert info["version"] == "TLS 1.3" and info["cipher"] == "TLS_AES_128_GCM_SHA256"
    assert info["sni"] == "server" and info["decrypted"]
    assert tls.client == 0


def test_tls13_application_secrets_only():
    tls = TlsConnection(1, keylog13(ap_only=True))
    cli, srv = tls13_streams([b"abc"], [b"def"])
    plain, issues, _ = run(tls, cli, srv, chunk=1000)
    assert plain == [b"abc", b"def"]
    assert {i.code for i in issues} <= {"tls.partial_keys"}


def test_tls13_key_update():
    ck, civ = tls13_traffic_keys(AES128, CLIENT_AP_SECRET)
    cli, srv = tls13_streams([], [])
    cli += seal13(ck, civ, 0, 23, b"before")
    cli += seal13(ck, civ, 1, 22, b"\x18\x00\x00\x01\x00")  # KeyUpdate(update_not_requested)
    from analyzer.tls.crypto import tls13_next_secret

    k2, iv2 = tls13_traffic_keys(AES128, tls13_next_secret(AES128, CLIENT_AP_SECRET))
    cli += seal13(k2, iv2, 0, 23, b"after")
    plain, issues, _ = run(TlsConnection(1, keylog13()), cli, srv)
    assert plain[0] == b"beforeafter"
    assert not issues


def test_without_keys_says_not_decrypted():
    tls = TlsConnection(1, KeyLog())
    cli, srv = tls13_streams([b"x" * 100], [b"y"])
    plain, issues, _ = run(tls, cli, srv)
    assert plain == [b"", b""]
    assert [i.code for i in issues] == ["tls.not_decrypted"]
    assert "no key log given (--tls-keylog FILE)" in issues[0].message
    assert not tls.info["decrypted"] and tls.info["undecrypted_records"] == 4


def test_wrong_key_is_one_error_per_direction():
    kl = KeyLog()
    for label in ("CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET",
                  "CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0"):  # fmt: skip
        kl.add_text(f"{label} {CLIENT_RANDOM.hex()} {'11' * 32}", "t")
    cli, srv = tls13_streams([b"a", b"b", b"c"], [b"d"])
    plain, issues, _ = run(TlsConnection(1, kl), cli, srv)
    assert plain == [b"", b""]
    assert [i.code for i in issues] == ["tls.wrong_key", "tls.wrong_key"]
    assert all(i.severity == Severity.ERROR for i in issues)


def test_missing_client_random_in_keylog():
    kl = KeyLog()
    kl.add_text(f"CLIENT_TRAFFIC_SECRET_0 {'00' * 32} {'11' * 32}", "t")
    cli, srv = tls13_streams([b"a"], [b"d"])
    plain, issues, _ = run(TlsConnection(1, kl), cli, srv)
    assert [i.code for i in issues] == ["tls.not_decrypted"]
    assert issues[0].severity == Severity.WARNING


def test_corrupt_record_is_an_error_and_a_gap():
    cli, srv = tls13_streams([b"one", b"two", b"three"], [b"r"])
    rec_len = 5 + 4 + 16  # "two" record
    pos = len(cli) - (5 + 6 + 16) - rec_len + 7
    bad = cli[:pos] + bytes([cli[pos] ^ 0xFF]) + cli[pos + 1 :]
    plain, issues, gaps = run(TlsConnection(1, keylog13()), bad, srv)
    assert plain[0] == b"onethree"
    assert [i.code for i in issues] == ["tls.bad_record"]
    assert issues[0].offset == pos - 7 and issues[0].severity == Severity.ERROR
    assert len(gaps) == 1 and gaps[0].direction == 0


def test_truncated_handshake():
    cli, srv = tls13_streams([], [])
    plain, issues, _ = run(TlsConnection(1, keylog13()), cli[:60], srv[:30])
    assert plain == [b"", b""]
    assert {i.code for i in issues} == {"tls.incomplete_record", "tls.no_handshake"}


def test_oversized_record_stops_the_direction():
    tls = TlsConnection(1, keylog13())
    out, issues = tls.feed(StreamData(1, 0, 0, b"\x17\x03\x03\xff\xff" + b"\x00" * 100, 0.0, 1))
    assert [i.code for _d, i in issues] == ["tls.bad_record_header"]
    out, issues = tls.feed(StreamData(1, 0, 105, b"\x00" * 100000, 0.0, 2))
    assert not out and not issues and not tls.dirs[0].buf


def test_gap_resynchronises_on_the_next_record():
    words = [b"one", b"two", b"three", b"four", b"five"]
    cli, srv = tls13_streams(words, [b"r"])
    tls = TlsConnection(1, keylog13())
    hello = 5 + (cli[3] << 8 | cli[4])
    tls.feed(StreamData(1, 0, 0, cli[:hello], 0.0, 1))
    tls.feed(StreamData(1, 1, 0, srv, 0.0, 2))
    sizes = [5 + len(w) + 1 + 16 for w in words]
    first = len(cli) - sum(sizes)  # offset of the "one" record
    cut_from = first + sizes[0] + 7  # inside "two"
    cut_to = first + sizes[0] + sizes[1] + 9  # inside "three"
    out, issues = tls.feed(StreamData(1, 0, hello, cli[hello:cut_from], 0.0, 3))
    assert [bytes(e.data) for e in out] == [b"one"]
    out, issues = tls.feed(Gap(1, 0, cut_from, cut_to - cut_from, 0.0, 4))
    assert [i.code for _d, i in issues] == ["tls.gap"] and type(out[0]) is Gap
    plain = []
    for p in range(cut_to, len(cli), 5):  # in small chunks
        out, more = tls.feed(StreamData(1, 0, p, cli[p : p + 5], 0.0, 5))
        issues += more
        plain += [bytes(e.data) for e in out if type(e) is StreamData]
    assert plain == [b"four", b"five"]
    resync = [i for _d, i in issues if i.code == "tls.resync"]
    assert len(resync) == 1 and "(2 records lost)" in resync[0].message
    assert resync[0].offset == first + sizes[0] + sizes[1] + sizes[2]


def test_gap_without_keys_gives_the_direction_up():
    cli, srv = tls13_streams([b"one", b"two"], [b"r"])
    tls = TlsConnection(1, KeyLog())
    hello = 5 + (cli[3] << 8 | cli[4])
    tls.feed(StreamData(1, 0, 0, cli[:hello], 0.0, 1))
    tls.feed(StreamData(1, 1, 0, srv, 0.0, 2))
    out, issues = tls.feed(Gap(1, 0, hello, 30, 0.0, 3))
    assert [i.code for _d, i in issues] == ["tls.gap"] and not out
    out, issues = tls.feed(StreamData(1, 0, hello + 30, cli[hello + 30 :], 0.0, 4))
    assert not out and not issues


# -- TLS 1.2 ---------------------------------------------------------------------------------------


def hello12(suite: int, etm: bool = False) -> tuple[bytes, bytes, bytes, bytes]:
    cr, sr = bytes(range(32)), bytes(range(32, 64))
    ext = b"\x00\x00\x00\x0e\x00\x0c\x00\x00\x09localhost"
    ch_body = b"\x03\x03" + cr + b"\x00" + b"\x00\x02" + struct.pack(">H", suite) + b"\x01\x00"
    ch_body += struct.pack(">H", len(ext)) + ext
    ch = b"\x01" + len(ch_body).to_bytes(3, "big") + ch_body
    sext = b"\x00\x16\x00\x00" if etm else b""
    sh_body = (
        b"\x03\x03" + sr + b"\x00" + struct.pack(">H", suite) + b"\x00" + struct.pack(">H", len(sext)) + sext
    )
    sh = b"\x02" + len(sh_body).to_bytes(3, "big") + sh_body
    return cr, sr, ch, sh


def seal12(suite, keys, seq: int, ctype: int, plain: bytes, etm: bool = False) -> bytes:
    mac_key, key, iv = keys
    if suite.cipher == "gcm":
        explicit = seq.to_bytes(8, "big")
        aad = struct.pack(">QBHH", seq, ctype, 0x0303, len(plain))
        return record(ctype, explicit + AESGCM(key).encrypt(iv + explicit, plain, aad))
    if suite.cipher == "chacha":
        nonce = (int.from_bytes(iv, "big") ^ seq).to_bytes(12, "big")
        aad = struct.pack(">QBHH", seq, ctype, 0x0303, len(plain))
        return record(ctype, ChaCha20Poly1305(key).encrypt(nonce, plain, aad))
    import hashlib
    import hmac

    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    def cbc(data: bytes) -> bytes:
        pad = 15 - len(data) % 16
        data += bytes([pad]) * (pad + 1)
        civ = bytes(16)
        enc = Cipher(algorithms.AES(key), modes.CBC(civ)).encryptor()
        return civ + enc.update(data) + enc.finalize()

    hname = suite.mac
    if etm:
        ct = cbc(plain)
        tag = hmac.new(mac_key, struct.pack(">QBHH", seq, ctype, 0x0303, len(ct)) + ct, hname).digest()
        return record(ctype, ct + tag)
    tag = hmac.new(
        mac_key, struct.pack(">QBHH", seq, ctype, 0x0303, len(plain)) + plain, hashlib.new(hname).name
    ).digest()
    return record(ctype, cbc(plain + tag))


def tls12_streams(suite_code: int, etm: bool = False):
    suite = SUITES[suite_code]
    cr, sr, ch, sh = hello12(suite_code, etm)
    master = bytes(range(100, 148))
    ck, sk = tls12_key_block(suite, master, cr, sr)
    fin = b"\x14\x00\x00\x0c" + b"\x02" * 12
    cli = record(22, ch, 0x0301) + record(22, b"\x10\x00\x00\x02\x00\x00") + record(20, b"\x01")
    cli += seal12(suite, ck, 0, 22, fin, etm) + seal12(suite, ck, 1, 23, b"hello ", etm)
    cli += seal12(suite, ck, 2, 23, b"kafka", etm)
    srv = record(22, sh) + record(22, b"\x0e\x00\x00\x00") + record(20, b"\x01")
    srv += seal12(suite, sk, 0, 22, fin, etm) + seal12(suite, sk, 1, 23, b"answer", etm)
    kl = KeyLog()
    kl.add_text(f"CLIENT_RANDOM {cr.hex()} {master.hex()}", "t")
    return cli, srv, kl


def test_tls12_suites():
    for code, etm in ((0xC02F, False), (0xC030, False), (0xCCA8, False), (0xC013, False), (0xC027, True),
                      (0xC028, False)):  # fmt: skip
        cli, srv, kl = tls12_streams(code, etm)
        tls = TlsConnection(1, kl)
        plain, issues, gaps = run(tls, cli, srv)
        assert plain == [b"hello kafka", b"answer"], SUITES[code].name
        assert not issues and not gaps
        assert tls.info["version"] == "TLS 1.2" and tls.info["sni"] == "localhost"


_CLI, _SRV = tls13_streams([b"request-1", b"request-2"], [b"response-1"])


@settings(max_examples=200, deadline=None)
@given(
    flips=st.lists(st.tuples(st.integers(0, len(_CLI) + len(_SRV) - 1), st.integers(1, 255)), max_size=4),
    cut=st.integers(0, len(_CLI) + len(_SRV)),
    chunk=st.integers(1, 300),
    junk=st.binary(max_size=64),
)
def test_never_raises_on_damaged_streams(flips, cut, chunk, junk):
    """Flipped bytes, truncations and junk: issues and gaps, never an exception."""
    data = bytearray(_CLI + _SRV)
    for pos, x in flips:
        data[pos] ^= x
    data = bytes(data[:cut]) + junk
    cli, srv = data[: len(_CLI)], data[len(_CLI) :]
    run(TlsConnection(1, keylog13()), cli, srv, chunk=chunk)
    run(TlsConnection(1, KeyLog()), srv, cli, chunk=chunk)


def test_hello_retry_request_keeps_the_first_client_random():
    from analyzer.tls.hello import HRR_RANDOM

    hrr = SERVER_HELLO[:6] + HRR_RANDOM + SERVER_HELLO[38:]
    second_ch = CLIENT_HELLO[:6] + bytes(32) + CLIENT_HELLO[38:]  # another random: must be ignored
    cli, srv = tls13_streams([b"after-hrr"], [b"ok"])
    hello = 5 + (cli[3] << 8 | cli[4])
    cli = cli[:hello] + record(20, b"\x01") + record(22, second_ch) + cli[hello:]
    srv = record(22, hrr) + srv
    tls = TlsConnection(1, keylog13())
    plain = [b"", b""]
    order = [(0, cli[:hello]), (1, record(22, hrr)), (0, cli[hello : hello + 6 + 5 + len(second_ch)])]
    order += [(1, srv[5 + len(hrr) :]), (0, cli[hello + 6 + 5 + len(second_ch) :])]
    offs = [0, 0]
    for d, data in order:
        out, issues = tls.feed(StreamData(1, d, offs[d], data, 0.0, 1))
        offs[d] += len(data)
        assert not issues
        plain[d] += b"".join(bytes(e.data) for e in out)
    assert plain == [b"after-hrr", b"ok"]
    assert tls.client_random == CLIENT_RANDOM


def test_tls12_abbreviated_handshake_is_resumed():
    """Session resumption: the ServerHello echoes the ClientHello's session id, the server sends
    its ChangeCipherSpec and Finished first; the key log has the connection's master secret."""
    suite = SUITES[0xC02F]
    cr, sr = bytes(range(1, 33)), bytes(range(33, 65))
    sid = b"\x07" * 32
    ch_body = b"\x03\x03" + cr + b"\x20" + sid + b"\x00\x02\xc0\x2f\x01\x00\x00\x00"
    sh_body = b"\x03\x03" + sr + b"\x20" + sid + b"\xc0\x2f\x00\x00\x00"
    ch = b"\x01" + len(ch_body).to_bytes(3, "big") + ch_body
    sh = b"\x02" + len(sh_body).to_bytes(3, "big") + sh_body
    master = bytes(range(150, 198))
    ck, sk = tls12_key_block(suite, master, cr, sr)
    fin = b"\x14\x00\x00\x0c" + b"\x03" * 12
    srv = (
        record(22, sh)
        + record(20, b"\x01")
        + seal12(suite, sk, 0, 22, fin)
        + seal12(suite, sk, 1, 23, b"pong")
    )
    cli = record(22, ch, 0x0301) + record(20, b"\x01") + seal12(suite, ck, 0, 22, fin)
    cli += seal12(suite, ck, 1, 23, b"ping")
    kl = KeyLog()
    kl.add_text(f"CLIENT_RANDOM {cr.hex()} {master.hex()}", "t")
    tls = TlsConnection(1, kl)
    plain, issues, gaps = run(tls, cli, srv)
    assert plain == [b"ping", b"pong"] and not issues and not gaps
    assert tls.info["resumed"] and tls.info["cipher"] == "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
