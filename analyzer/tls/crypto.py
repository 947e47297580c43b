"""TLS cipher suites, key schedules and record decryption (through ``cryptography``).

* TLS 1.3 (RFC 8446): HKDF-Expand-Label, traffic keys from the key log's traffic secrets,
  per-record nonce = iv XOR sequence number, KeyUpdate (``traffic upd``).
* TLS 1.2 (RFC 5246): the PRF (P_SHA256 / P_SHA384) expands the master secret into the key
  block; AEAD suites (AES-GCM with a 4-byte implicit salt and an 8-byte explicit nonce,
  ChaCha20-Poly1305 per RFC 7905) and AES-CBC + HMAC (explicit IV, MAC-then-encrypt or
  encrypt-then-MAC per RFC 7366).

No cipher is implemented here: AES-GCM, AES-CCM, ChaCha20-Poly1305, AES-CBC and HMAC all come
from ``cryptography``. :meth:`RecordCipher.decrypt` returns None when a record does not
authenticate; it never raises.
"""

from __future__ import annotations

import hmac as _hmac
import struct
from collections.abc import Callable
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import hmac as c_hmac
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESCCM, AESGCM, ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

_HASHES: dict[str, Callable[[], hashes.HashAlgorithm]] = {
    "sha1": hashes.SHA1,
    "sha256": hashes.SHA256,
    "sha384": hashes.SHA384,
}
_HASH_LEN = {"sha1": 20, "sha256": 32, "sha384": 48}


@dataclass(frozen=True, slots=True)
class Suite:
    code: int
    name: str
    tls13: bool
    cipher: str  # "gcm" | "chacha" | "ccm" | "cbc"
    key_len: int
    hash: str  # TLS 1.3: the HKDF hash; TLS 1.2: the PRF hash
    mac: str | None = None  # CBC suites: the HMAC hash

    @property
    def fixed_iv_len(self) -> int:
        if self.tls13 or self.cipher == "chacha":
            return 12
        if self.cipher in ("gcm", "ccm"):
            return 4
        return 0  # CBC in TLS 1.1+: explicit IV in each record


def _suites() -> dict[int, Suite]:
    t13 = [
        (0x1301, "TLS_AES_128_GCM_SHA256", "gcm", 16, "sha256"),
        (0x1302, "TLS_AES_256_GCM_SHA384", "gcm", 32, "sha384"),
        (0x1303, "TLS_CHACHA20_POLY1305_SHA256", "chacha", 32, "sha256"),
        (0x1304, "TLS_AES_128_CCM_SHA256", "ccm", 16, "sha256"),
    ]
    out = {c: Suite(c, n, True, ci, k, h) for c, n, ci, k, h in t13}
    t12 = [
        (0xC02F, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "gcm", 16, "sha256", None),
        (0xC030, "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "gcm", 32, "sha384", None),
        (0xC02B, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "gcm", 16, "sha256", None),
        (0xC02C, "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "gcm", 32, "sha384", None),
        (0x009E, "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", "gcm", 16, "sha256", None),
        (0x009F, "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384", "gcm", 32, "sha384", None),
        (0x009C, "TLS_RSA_WITH_AES_128_GCM_SHA256", "gcm", 16, "sha256", None),
        (0x009D, "TLS_RSA_WITH_AES_256_GCM_SHA384", "gcm", 32, "sha384", None),
        (0xCCA8, "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "chacha", 32, "sha256", None),
        (0xCCA9, "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "chacha", 32, "sha256", None),
        (0xCCAA, "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "chacha", 32, "sha256", None),
        (0xC013, "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "cbc", 16, "sha256", "sha1"),
        (0xC014, "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "cbc", 32, "sha256", "sha1"),
        (0xC009, "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "cbc", 16, "sha256", "sha1"),
        (0xC00A, "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "cbc", 32, "sha256", "sha1"),
        (0xC027, "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "cbc", 16, "sha256", "sha256"),
        (0xC028, "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384", "cbc", 32, "sha384", "sha384"),
        (0xC023, "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "cbc", 16, "sha256", "sha256"),
        (0xC024, "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384", "cbc", 32, "sha384", "sha384"),
        (0x002F, "TLS_RSA_WITH_AES_128_CBC_SHA", "cbc", 16, "sha256", "sha1"),
        (0x0035, "TLS_RSA_WITH_AES_256_CBC_SHA", "cbc", 32, "sha256", "sha1"),
        (0x003C, "TLS_RSA_WITH_AES_128_CBC_SHA256", "cbc", 16, "sha256", "sha256"),
        (0x003D, "TLS_RSA_WITH_AES_256_CBC_SHA256", "cbc", 32, "sha256", "sha256"),
    ]
    for c, n, ci, k, h, m in t12:
        out[c] = Suite(c, n, False, ci, k, h, m)
    return out


SUITES = _suites()


def suite_name(code: int | None) -> str | None:
    if code is None:
        return None
    s = SUITES.get(code)
    return s.name if s else f"0x{code:04X}"


# -- key schedules ---------------------------------------------------------------------------------


def hkdf_expand_label(hash_name: str, secret: bytes, label: bytes, context: bytes, length: int) -> bytes:
    """RFC 8446 7.1 HKDF-Expand-Label."""
    full = b"tls13 " + label
    info = struct.pack(">HB", length, len(full)) + full + bytes([len(context)]) + context
    return HKDFExpand(_HASHES[hash_name](), length, info).derive(secret)


def tls13_traffic_keys(suite: Suite, secret: bytes) -> tuple[bytes, bytes]:
    """(key, iv) of a TLS 1.3 traffic secret."""
    return (
        hkdf_expand_label(suite.hash, secret, b"key", b"", suite.key_len),
        hkdf_expand_label(suite.hash, secret, b"iv", b"", 12),
    )


def tls13_next_secret(suite: Suite, secret: bytes) -> bytes:
    """The traffic secret after a KeyUpdate (RFC 8446 7.2)."""
    return hkdf_expand_label(suite.hash, secret, b"traffic upd", b"", _HASH_LEN[suite.hash])


def _hmac_digest(hash_name: str, key: bytes, data: bytes) -> bytes:
    h = c_hmac.HMAC(key, _HASHES[hash_name]())
    h.update(data)
    return h.finalize()


def prf12(hash_name: str, secret: bytes, label: bytes, seed: bytes, length: int) -> bytes:
    """RFC 5246 5: PRF(secret, label, seed) = P_<hash>(secret, label + seed)."""
    seed = label + seed
    out = bytearray()
    a = seed
    while len(out) < length:
        a = _hmac_digest(hash_name, secret, a)
        out += _hmac_digest(hash_name, secret, a + seed)
    return bytes(out[:length])


def tls12_key_block(
    suite: Suite, master: bytes, client_random: bytes, server_random: bytes
) -> tuple[tuple[bytes, bytes, bytes], tuple[bytes, bytes, bytes]]:
    """((client mac key, key, fixed iv), (server mac key, key, fixed iv)) from the master secret."""
    mac_len = _HASH_LEN[suite.mac] if suite.mac else 0
    iv_len = suite.fixed_iv_len
    n = 2 * (mac_len + suite.key_len + iv_len)
    kb = prf12(suite.hash, master, b"key expansion", server_random + client_random, n)
    p = 0

    def take(k: int) -> bytes:
        nonlocal p
        v = kb[p : p + k]
        p += k
        return v

    cmac, smac = take(mac_len), take(mac_len)
    ckey, skey = take(suite.key_len), take(suite.key_len)
    civ, siv = take(iv_len), take(iv_len)
    return (cmac, ckey, civ), (smac, skey, siv)


# -- record decryption -----------------------------------------------------------------------------


def _aead(cipher: str, key: bytes):
    if cipher == "gcm":
        return AESGCM(key)
    if cipher == "chacha":
        return ChaCha20Poly1305(key)
    return AESCCM(key)


class RecordCipher:
    """Decrypts the records of one direction under one set of keys, counting sequence numbers.

    ``decrypt(ctype, version, fragment)`` returns ``(content type, plaintext)`` or None when the
    record does not authenticate (or is malformed); the sequence number advances either way.
    """

    __slots__ = ("suite", "tls13", "key", "iv", "mac_key", "etm", "seq", "_aead", "secret")

    def __init__(
        self,
        suite: Suite,
        key: bytes,
        iv: bytes,
        mac_key: bytes = b"",
        etm: bool = False,
        secret: bytes | None = None,
    ):
        self.suite = suite
        self.tls13 = suite.tls13
        self.key = key
        self.iv = iv
        self.mac_key = mac_key
        self.etm = etm
        self.seq = 0
        self.secret = secret  # TLS 1.3: the traffic secret (for KeyUpdate)
        self._aead = None if suite.cipher == "cbc" else _aead(suite.cipher, key)

    @classmethod
    def tls13_from_secret(cls, suite: Suite, secret: bytes) -> RecordCipher:
        key, iv = tls13_traffic_keys(suite, secret)
        return cls(suite, key, iv, secret=secret)

    def updated(self) -> RecordCipher:
        """TLS 1.3 KeyUpdate: the next generation of this direction's keys (sequence 0)."""
        assert self.secret is not None
        return RecordCipher.tls13_from_secret(self.suite, tls13_next_secret(self.suite, self.secret))

    def _nonce(self, seq: int) -> bytes:
        iv = self.iv
        return (int.from_bytes(iv, "big") ^ seq).to_bytes(len(iv), "big")

    def decrypt(self, ctype: int, version: int, fragment: bytes) -> tuple[int, bytes] | None:
        seq = self.seq
        self.seq += 1
        try:
            if self.tls13:
                return self._open13(ctype, version, fragment, seq)
            if self._aead is not None:
                return self._open12_aead(ctype, version, fragment, seq)
            return self._open12_cbc(ctype, version, fragment, seq)
        except (InvalidTag, ValueError):
            return None

    def _open13(self, ctype: int, version: int, fragment: bytes, seq: int) -> tuple[int, bytes] | None:
        if len(fragment) < 17:
            return None
        aad = struct.pack(">BHH", ctype, version, len(fragment))
        inner = self._aead.decrypt(self._nonce(seq), fragment, aad)  # type: ignore[union-attr]  # TLS 1.3 suites are all AEAD
        # TLSInnerPlaintext: content, the real content type, zero padding
        end = len(inner)
        while end and inner[end - 1] == 0:
            end -= 1
        if not end:
            return None
        return inner[end - 1], inner[: end - 1]

    def _open12_aead(self, ctype: int, version: int, fragment: bytes, seq: int) -> tuple[int, bytes] | None:
        if self.suite.cipher == "chacha":
            nonce = self._nonce(seq)
            body = fragment
        else:
            if len(fragment) < 8:
                return None
            nonce = self.iv + fragment[:8]
            body = fragment[8:]
        if len(body) < 16:
            return None
        aad = struct.pack(">QBHH", seq, ctype, version, len(body) - 16)
        return ctype, self._aead.decrypt(nonce, body, aad)  # type: ignore[union-attr]  # decrypt() calls this when _aead is set

    def _open12_cbc(self, ctype: int, version: int, fragment: bytes, seq: int) -> tuple[int, bytes] | None:
        mac_name = self.suite.mac
        assert mac_name is not None
        mac_len = _HASH_LEN[mac_name]
        if self.etm:
            if len(fragment) < 16 + 16 + mac_len:
                return None
            ct, tag = fragment[:-mac_len], fragment[-mac_len:]
            want = _hmac_digest(
                mac_name, self.mac_key, struct.pack(">QBHH", seq, ctype, version, len(ct)) + ct
            )
            if not _hmac.compare_digest(want, tag):
                return None
            plain = self._cbc(ct)
            if plain is None:
                return None
            return ctype, plain
        if len(fragment) < 32 or len(fragment) % 16:
            return None
        padded = self._cbc(fragment)
        if padded is None or len(padded) < mac_len:
            return None
        content, tag = padded[:-mac_len], padded[-mac_len:]
        want = _hmac_digest(
            mac_name, self.mac_key, struct.pack(">QBHH", seq, ctype, version, len(content)) + content
        )
        if not _hmac.compare_digest(want, tag):
            return None
        return ctype, content

    def _cbc(self, data: bytes) -> bytes | None:
        """AES-CBC with the record's explicit IV; strips and checks the TLS padding."""
        if len(data) < 32 or len(data) % 16:
            return None
        dec = Cipher(algorithms.AES(self.key), modes.CBC(data[:16])).decryptor()
        out = dec.update(data[16:]) + dec.finalize()
        pad = out[-1]
        if pad + 1 > len(out) or any(b != pad for b in out[-pad - 1 :]):
            return None
        return out[: -pad - 1]
