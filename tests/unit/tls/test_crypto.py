"""TLS key schedules and record ciphers: RFC 8448's TLS 1.3 trace, the TLS 1.2 PRF vector, and
records sealed by an independent AEAD for every TLS 1.3 suite."""

import struct

from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

from analyzer.tls.crypto import SUITES, RecordCipher, prf12, tls13_traffic_keys
from tests.helpers.rfc8448 import (
    CLIENT_HS_IV,
    CLIENT_HS_KEY,
    CLIENT_HS_SECRET,
    SERVER_AP_IV,
    SERVER_AP_KEY,
    SERVER_AP_SECRET,
    SERVER_FLIGHT,
    SERVER_FLIGHT_RECORD,
    SERVER_HS_IV,
    SERVER_HS_KEY,
    SERVER_HS_SECRET,
    h,
)

AES128 = SUITES[0x1301]


def test_tls13_traffic_keys_rfc8448():
    assert tls13_traffic_keys(AES128, SERVER_HS_SECRET) == (SERVER_HS_KEY, SERVER_HS_IV)
    assert tls13_traffic_keys(AES128, CLIENT_HS_SECRET) == (CLIENT_HS_KEY, CLIENT_HS_IV)
    assert tls13_traffic_keys(AES128, SERVER_AP_SECRET) == (SERVER_AP_KEY, SERVER_AP_IV)


def test_tls13_record_rfc8448():
    c = RecordCipher.tls13_from_secret(AES128, SERVER_HS_SECRET)
    rec = SERVER_FLIGHT_RECORD
    assert c.decrypt(rec[0], 0x0303, rec[5:]) == (22, SERVER_FLIGHT)
    assert c.seq == 1
    assert c.decrypt(rec[0], 0x0303, rec[5:]) is None  # sequence 1: does not authenticate


def test_tls12_prf_vector():
    out = prf12("sha256", h("9b be 43 6b a9 40 f0 17 b1 76 52 84 9a 71 db 35"), b"test label",
                h("a0 ba 9f 93 6c da 31 18 27 a6 f7 96 ff d5 19 8c"), 100)  # fmt: skip
    assert out == h(
        "e3 f2 29 ba 72 7b e1 7b 8d 12 26 20 55 7c d4 53 c2 aa b2 1d 07 c3 d4 95 32 9b 52 d4 e6 1e db 5a"
        "6b 30 17 91 e9 0d 35 c9 c9 a4 6b 4e 14 ba f9 af 0f a0 22 f7 07 7d ef 17 ab fd 37 97 c0 56 4b ab"
        "4f bc 91 66 6e 9d ef 9b 97 fc e3 4f 79 67 89 ba a4 80 82 d1 22 ee 42 c5 a7 2e 5a 51 10 ff f7 01"
        "87 34 7b 66"
    )


def test_tls13_record_ciphers_roundtrip():
    from cryptography.hazmat.primitives.ciphers.aead import AESCCM

    aeads = {"gcm": AESGCM, "chacha": ChaCha20Poly1305, "ccm": AESCCM}
    for code in (0x1301, 0x1302, 0x1303, 0x1304):
        suite = SUITES[code]
        c = RecordCipher.tls13_from_secret(suite, SERVER_AP_SECRET + SERVER_AP_SECRET[:16])
        for seq in range(3):
            nonce = (int.from_bytes(c.iv, "big") ^ seq).to_bytes(12, "big")
            inner = b"kafka%d\x17\x00\x00" % seq  # content, type, padding
            aad = struct.pack(">BHH", 23, 0x0303, len(inner) + 16)
            sealed = aeads[suite.cipher](c.key).encrypt(nonce, inner, aad)
            assert c.decrypt(23, 0x0303, sealed) == (23, b"kafka%d" % seq), suite.name
