"""Sans-IO TLS layer of one TCP connection: ciphertext stream events in, plaintext ones out.

:class:`TlsConnection` takes the reassembler's :class:`~analyzer.events.StreamData` and
:class:`~analyzer.events.Gap` events of both directions and returns plaintext ``StreamData``
(offsets in each direction's own plaintext stream) and ``Gap`` events, which the pipeline feeds
to the Kafka framer as if the connection were clear text, plus ``(direction, Issue)`` pairs.

* Records are parsed per direction; a record may span any number of chunks. A record header
  that is not TLS, or a length above 2^14 + 2048, is an error and the direction stops (nothing
  claiming more is ever buffered).
* ClientHello and ServerHello (and HelloRetryRequest) are parsed: version (supported_versions),
  SNI, ALPN, cipher suite, session resumption; :attr:`TlsConnection.info` carries them.
* With secrets for the connection's client random (:class:`~analyzer.tls.keylog.KeyLog`):
  TLS 1.3 handshake and application traffic keys (switching on each side's Finished, and by
  trial when a Finished was not seen or the handshake secrets are missing), KeyUpdate; TLS 1.2
  key block from the master secret, each direction encrypted from its ChangeCipherSpec on.
* A record that does not authenticate is an error with its stream offset; its plaintext is a
  ``Gap`` for the framer. A direction whose first encrypted records never authenticate has the
  wrong keys (one error) and stops. A TCP gap loses the record sequence: that direction stops.
"""

from __future__ import annotations

from analyzer.events import Gap, StreamData
from analyzer.issues import (
    TLS_ALERT,
    TLS_BAD_HELLO,
    TLS_BAD_RECORD,
    TLS_BAD_RECORD_HEADER,
    TLS_DECRYPT_FAILED,
    TLS_GAP,
    TLS_INCOMPLETE_RECORD,
    TLS_NO_HANDSHAKE,
    TLS_NOT_DECRYPTED,
    TLS_PARTIAL_KEYS,
    TLS_RESYNC,
    TLS_RESYNC_FAILED,
    TLS_UNSUPPORTED_SUITE,
    TLS_WRONG_KEY,
)
from analyzer.model import Issue, Severity
from analyzer.tls import keylog as kl
from analyzer.tls.crypto import SUITES, RecordCipher, Suite, suite_name, tls12_key_block
from analyzer.tls.detect import ALERT, APPLICATION_DATA, CCS, HANDSHAKE, HEARTBEAT, MAX_RECORD
from analyzer.tls.hello import HelloError, parse_client_hello, parse_server_hello, version_name

MAX_HANDSHAKE = 1 << 16  # handshake messages buffered to be parsed (hellos, Finished, KeyUpdate)
MAX_FAILS = 8  # consecutive records that fail authentication before a direction stops
MAX_TRIALS = 256  # sequence numbers tried per candidate record after a gap
RESYNC_LIMIT = 1 << 20  # ciphertext bytes after a gap without a record that decrypts: give up

HS_CLIENT_HELLO, HS_SERVER_HELLO, HS_FINISHED, HS_KEY_UPDATE = 1, 2, 20, 24
_WANTED = frozenset((HS_CLIENT_HELLO, HS_SERVER_HELLO, HS_FINISHED, HS_KEY_UPDATE))

ALERTS = {
    0: "close_notify",
    10: "unexpected_message",
    20: "bad_record_mac",
    22: "record_overflow",
    40: "handshake_failure",
    42: "bad_certificate",
    43: "unsupported_certificate",
    44: "certificate_revoked",
    45: "certificate_expired",
    46: "certificate_unknown",
    47: "illegal_parameter",
    48: "unknown_ca",
    49: "access_denied",
    50: "decode_error",
    51: "decrypt_error",
    70: "protocol_version",
    71: "insufficient_security",
    80: "internal_error",
    86: "inappropriate_fallback",
    90: "user_canceled",
    109: "missing_extension",
    110: "unsupported_extension",
    112: "unrecognized_name",
    116: "certificate_required",
    120: "no_application_protocol",
}


class _Dir:
    __slots__ = (
        "buf",
        "start",
        "out",
        "encrypted",
        "epochs",
        "epoch",
        "keys_looked_up",
        "hbuf",
        "hskip",
        "lost",
        "ok",
        "fails",
        "records",
        "undecrypted",
        "resync",
        "seq_at_gap",
        "lost_bytes",
        "wire",
    )

    def __init__(self) -> None:
        self.buf = bytearray()
        self.start = 0  # ciphertext stream offset of buf[0]
        self.out = 0  # plaintext stream offset of the next plaintext byte
        self.encrypted = False  # records of this direction are protected from now on
        self.epochs: list[tuple[str, RecordCipher | None]] = []  # (key log label, cipher)
        self.epoch = 0
        self.keys_looked_up = False
        self.hbuf = bytearray()  # handshake messages in progress
        self.hskip = 0  # bytes of an uninteresting handshake message still to skip
        self.lost: str | None = None  # why this direction is no longer followed
        self.ok = 0  # records decrypted
        self.fails = 0  # consecutive records that failed authentication
        self.records = 0
        self.undecrypted = 0  # protected records not decrypted (no keys)
        self.resync = False  # after a gap: looking for the next record and its sequence number
        self.seq_at_gap = 0  # the sequence number expected when the gap began
        self.lost_bytes = 0  # ciphertext bytes lost or skipped since then
        self.wire = 0  # bytes of the protected records decrypted (for the average record size)


class TlsConnection:
    """The TLS layer of one connection; ``client`` is the ClientHello sender's direction."""

    def __init__(self, conn: int, keylog: kl.KeyLog | None, client: int | None = None) -> None:
        self.conn = conn
        self.keylog = keylog
        self.client = client
        self.dirs = (_Dir(), _Dir())
        self.client_random: bytes | None = None
        self.server_random: bytes | None = None
        self.suite: Suite | None = None
        self.suite_code: int | None = None
        self.version: int | None = None
        self.tls13 = False
        self.etm = False
        self.offered_session: bytes = b""
        self.offered_resumption = False
        self.sni: str | None = None
        self.alpn_offered: list[str] = []
        self.alpn: str | None = None
        self.resumed = False
        self.hello_seen = False
        self.said_not_decrypted = False
        self.decrypted = False
        self.handshake_complete = False

    # -- what the front ends show --------------------------------------------------------------
    @property
    def info(self) -> dict:
        """The connection's TLS facts (``ConnInfo.tls``)."""
        return {
            "version": version_name(self.version),
            "cipher": suite_name(self.suite_code),
            "sni": self.sni,
            "alpn": self.alpn,
            "resumed": self.resumed,
            "decrypted": self.decrypted,
            "client_random": self.client_random.hex() if self.client_random else None,
            "records": self.dirs[0].records + self.dirs[1].records,
            "undecrypted_records": self.dirs[0].undecrypted + self.dirs[1].undecrypted,
        }

    def summary(self) -> str:
        """``TLS 1.3 TLS_AES_128_GCM_SHA256 SNI=broker1``: the short form ``read`` prints."""
        parts = [version_name(self.version) or "TLS"]
        if self.suite_code is not None:
            parts.append(suite_name(self.suite_code) or "")
        if self.sni:
            parts.append(f"SNI={self.sni}")
        return " ".join(parts)

    # -- input ---------------------------------------------------------------------------------
    def feed(self, ev) -> tuple[list, list[tuple[int, Issue]]]:
        out: list = []
        issues: list[tuple[int, Issue]] = []
        d = ev.direction
        st = self.dirs[d]
        if type(ev) is Gap:
            self._gap(d, st, ev, out, issues)
            return out, issues
        if st.lost:
            return out, issues
        data = ev.data
        if not st.buf:
            st.start = ev.offset
        st.buf += data
        if st.resync and not self._resync(d, st, issues):
            return out, issues
        buf = st.buf
        n = len(buf)
        p = 0
        while n - p >= 5:
            ctype = buf[p]
            ln = buf[p + 3] << 8 | buf[p + 4]
            if not CCS <= ctype <= HEARTBEAT or buf[p + 1] != 3 or buf[p + 2] > 4 or ln > MAX_RECORD:
                issues.append(
                    (
                        d,
                        TLS_BAD_RECORD_HEADER(
                            f"bytes at offset {st.start + p} of the {self._name(d)} stream are not a TLS "
                            f"record header ({bytes(buf[p : p + 5]).hex()}); this direction is no "
                            "longer followed",
                            offset=st.start + p,
                            where=self._name(d),
                        ),
                    )
                )
                self._lose(d, st, "bad record header", ev, out)
                return out, issues
            e = p + 5 + ln
            if e > n:
                break
            version = buf[p + 1] << 8 | buf[p + 2]
            st.records += 1
            self._record(d, st, ctype, version, bytes(buf[p + 5 : e]), st.start + p, ev, out, issues)
            p = e
            if st.lost:
                return out, issues
        if p:
            del buf[:p]
            st.start += p
        return out, issues

    def flush(self) -> list[tuple[int, Issue]]:
        """End of the connection: a partial record left in a direction; connections that never
        got keys say so (once)."""
        issues: list[tuple[int, Issue]] = []
        for d, st in enumerate(self.dirs):
            if st.buf and not st.lost:
                issues.append(
                    (
                        d,
                        TLS_INCOMPLETE_RECORD(
                            f"{len(st.buf)} bytes at the end of the {self._name(d)} stream are not a "
                            "complete TLS record",
                            offset=st.start,
                            where=self._name(d),
                        ),
                    )
                )
                st.buf = bytearray()
        if not self.hello_seen and not self.said_not_decrypted:
            self.said_not_decrypted = True
            issues.append((-1, self._no_handshake()))
        return issues

    # -- internals -----------------------------------------------------------------------------
    def _name(self, d: int) -> str:
        if self.client is None:
            return f"direction {d}"
        return "client" if d == self.client else "server"

    def _lose(self, d: int, st: _Dir, why: str, ev, out: list) -> None:
        st.lost = why
        st.buf = bytearray()
        st.hbuf = bytearray()
        if st.ok:  # the framer must not join what came before with anything after
            out.append(Gap(self.conn, d, st.out, 1, ev.ts, ev.packet_index))
            st.out += 1

    def _gap(self, d: int, st: _Dir, ev: Gap, out: list, issues: list) -> None:
        if st.lost:
            return
        cipher = st.epochs[st.epoch][1] if st.epoch < len(st.epochs) else None
        # with keys and records already decrypted, the next record and its sequence number can
        # be found again (trial decryption); otherwise the direction is given up
        can_resync = st.ok > 0 and cipher is not None
        if can_resync:
            how = "resynchronising on the next record that decrypts"
        elif st.encrypted:
            how = "the record sequence is lost, so this direction is no longer decrypted"
        else:
            how = "the record boundaries are lost, so this direction is no longer followed"
        issues.append(
            (
                d,
                TLS_GAP(
                    f"{ev.length} bytes of the {self._name(d)} TLS stream were not captured; {how}",
                    offset=ev.offset,
                    where=self._name(d),
                ),
            )
        )
        if can_resync:
            assert cipher is not None
            if not st.resync:
                st.resync = True
                st.seq_at_gap = cipher.seq
                st.lost_bytes = 0
            st.lost_bytes += len(st.buf) + ev.length
            st.buf = bytearray()
            st.start = ev.offset + ev.length
        else:
            st.lost = "gap"
            st.buf = bytearray()
        if st.ok:
            out.append(Gap(self.conn, d, st.out, ev.length, ev.ts, ev.packet_index))
            st.out += ev.length

    def _resync(self, d: int, st: _Dir, issues: list) -> bool:
        """After a gap: find the next record that decrypts, trying the sequence numbers the lost
        bytes can have held (nearest the estimate first, at most MAX_TRIALS per candidate). True
        once found (``st.buf`` then starts with it, its cipher at its sequence number)."""
        label, cipher = st.epochs[st.epoch]
        assert cipher is not None
        buf = st.buf
        n = len(buf)
        p = 0
        found = None
        while n - p >= 5:
            t = buf[p]
            ln = buf[p + 3] << 8 | buf[p + 4]
            if (
                buf[p + 1] == 3
                and buf[p + 2] == 3
                and (t == APPLICATION_DATA or (not self.tls13 and t in (ALERT, HANDSHAKE)))
                and 16 < ln <= MAX_RECORD
            ):
                if p + 5 + ln > n:
                    break  # wait for the whole candidate record
                seq = self._find_seq(st, cipher, t, bytes(buf[p + 5 : p + 5 + ln]), st.lost_bytes + p)
                if seq is not None:
                    found = seq
                    break
            p += 1
        if p:
            del buf[:p]
            st.start += p
            st.lost_bytes += p
        if found is None:
            if st.lost_bytes > RESYNC_LIMIT:
                st.resync = False
                st.lost = "gap"
                st.buf = bytearray()
                issues.append(
                    (
                        d,
                        TLS_RESYNC_FAILED(
                            f"no record of the {self._name(d)} TLS stream decrypts in the "
                            f"{st.lost_bytes} bytes after a gap; this direction is no longer decrypted",
                            offset=st.start,
                            where=self._name(d),
                        ),
                    )
                )
            return False
        cipher.seq = found
        st.resync = False
        issues.append(
            (
                d,
                TLS_RESYNC(
                    f"resynchronised the {self._name(d)} TLS stream at offset {st.start} after "
                    f"{st.lost_bytes} lost or skipped bytes ({found - st.seq_at_gap} records lost)",
                    offset=st.start,
                    where=self._name(d),
                ),
            )
        )
        return True

    def _find_seq(self, st: _Dir, cipher: RecordCipher, ctype: int, frag: bytes, lost: int) -> int | None:
        base = st.seq_at_gap
        most = min(lost // 22 + 1, 1 << 20)  # the smallest protected record is 22 bytes
        avg = st.wire / st.ok if st.ok else 1000.0
        guess = base + round(lost / max(avg, 22.0))
        order = []
        if not self.tls13 and cipher.suite.cipher in ("gcm", "ccm") and len(frag) >= 8:
            order.append(int.from_bytes(frag[:8], "big"))  # OpenSSL sends the sequence number
        order.append(guess)
        for k in range(1, MAX_TRIALS):
            order += (guess + k, guess - k)
        trial = RecordCipher(cipher.suite, cipher.key, cipher.iv, cipher.mac_key, cipher.etm, cipher.secret)
        tried = 0
        for seq in order:
            if not base <= seq <= base + most:
                continue
            trial.seq = seq
            if trial.decrypt(ctype, 0x0303, frag) is not None:
                return seq
            tried += 1
            if tried >= MAX_TRIALS:
                break
        return None

    def _no_handshake(self) -> Issue:
        return TLS_NO_HANDSHAKE(
            "TLS connection whose handshake is not in the capture (started before it): "
            "it cannot be decrypted",
        )

    def _record(
        self, d: int, st: _Dir, ctype: int, version: int, frag: bytes, offset: int, ev, out, issues
    ) -> None:
        if ctype == CCS:
            if not self.tls13 and self.hello_seen and self.suite_code is not None:
                st.encrypted = True  # TLS 1.2: this direction's next records are protected
            return
        protected = st.encrypted and (ctype == APPLICATION_DATA or not self.tls13)
        if not protected:
            if ctype == HANDSHAKE:
                self._handshake_bytes(d, st, frag, ev, out, issues)
            elif ctype == ALERT and len(frag) >= 2:
                self._alert(d, frag, offset, issues)
            elif ctype == APPLICATION_DATA:
                st.undecrypted += 1
                if not self.hello_seen and not self.said_not_decrypted:
                    self.said_not_decrypted = True
                    issues.append((-1, self._no_handshake()))
            return
        if not st.keys_looked_up:
            self._lookup_keys(d, st, issues)
        cipher = st.epochs[st.epoch][1] if st.epoch < len(st.epochs) else None
        res = cipher.decrypt(ctype, version, frag) if cipher is not None else None
        if res is None:
            # TLS 1.3: a later epoch (the application secret when a Finished went unseen or the
            # handshake secret is missing) may be the right one
            for j in range(st.epoch + 1, len(st.epochs)):
                label, c = st.epochs[j]
                if c is None:
                    continue
                trial = RecordCipher(c.suite, c.key, c.iv, c.mac_key, c.etm, c.secret)
                res = trial.decrypt(ctype, version, frag)
                if res is not None:
                    st.epochs[j] = (label, trial)
                    st.epoch = j
                    break
        if res is None:
            self._failed(d, st, cipher, len(frag), offset, ev, out, issues)
            return
        st.ok += 1
        st.wire += len(frag) + 5
        st.fails = 0
        self.decrypted = True
        inner, plain = res
        if inner == APPLICATION_DATA:
            if plain:
                out.append(StreamData(self.conn, d, st.out, plain, ev.ts, ev.packet_index))
                st.out += len(plain)
        elif inner == HANDSHAKE:
            self._handshake_bytes(d, st, plain, ev, out, issues)
        elif inner == ALERT and len(plain) >= 2:
            self._alert(d, plain, offset, issues)

    def _failed(self, d: int, st: _Dir, cipher, size: int, offset: int, ev, out, issues) -> None:
        if not st.epochs or all(c is None for _l, c in st.epochs):
            st.undecrypted += 1  # no keys for this direction: said once already
            return
        label = st.epochs[st.epoch][0] if st.epoch < len(st.epochs) else "?"
        if cipher is None:
            st.undecrypted += 1  # a secret the key log lacks (said once by tls.partial_keys)
            return
        st.fails += 1
        if not st.ok:
            issues.append(
                (
                    d,
                    TLS_WRONG_KEY(
                        f"the first protected record of the {self._name(d)} stream (offset {offset}) does "
                        f"not authenticate with the key log's {label} for client random "
                        f"{(self.client_random or b'').hex()[:16]}...: wrong key; this direction is not "
                        "decrypted",
                        offset=offset,
                        where=self._name(d),
                    ),
                )
            )
            self._lose(d, st, "wrong key", ev, out)
            return
        overhead = (
            5 + 16 + (8 if self.suite is not None and self.suite.cipher == "gcm" and not self.tls13 else 0)
        )
        lost = max(1, size - overhead)
        issues.append(
            (
                d,
                TLS_BAD_RECORD(
                    f"TLS record at offset {offset} of the {self._name(d)} stream ({size} bytes) fails "
                    f"authentication (corrupt); about {lost} bytes of plaintext are lost",
                    offset=offset,
                    where=self._name(d),
                ),
            )
        )
        out.append(Gap(self.conn, d, st.out, lost, ev.ts, ev.packet_index))
        st.out += lost
        if st.fails >= MAX_FAILS:
            issues.append(
                (
                    d,
                    TLS_DECRYPT_FAILED(
                        f"{MAX_FAILS} records in a row of the {self._name(d)} stream fail authentication; "
                        "this direction is no longer decrypted",
                        offset=offset,
                        where=self._name(d),
                    ),
                )
            )
            self._lose(d, st, "records fail authentication", ev, out)

    def _lookup_keys(self, d: int, st: _Dir, issues: list) -> None:
        st.keys_looked_up = True
        cr = self.client_random
        suite = self.suite
        keylog = self.keylog
        is_client = d == self.client
        if cr is None or suite is None or self.server_random is None:
            st.epochs = []
            if not self.said_not_decrypted and not (self.hello_seen and suite is None):
                self.said_not_decrypted = True
                issues.append((-1, self._no_handshake()))
            return
        if keylog is None or not keylog.given:
            self._say_not_decrypted(issues, "no key log given (--tls-keylog FILE)", Severity.NOTE)
            return
        if self.tls13:
            labels = (kl.CLIENT_HS, kl.CLIENT_AP0) if is_client else (kl.SERVER_HS, kl.SERVER_AP0)
            for label in labels:
                secret = keylog.get(label, cr)
                st.epochs.append((label, RecordCipher.tls13_from_secret(suite, secret) if secret else None))
            missing = [label for label, c in st.epochs if c is None]
            if len(missing) == len(labels):
                self._say_not_decrypted(
                    issues,
                    f"the key log has no {' or '.join(labels)} for client random {cr.hex()[:16]}...",
                    Severity.WARNING,
                )
            elif missing:
                issues.append(
                    (
                        d,
                        TLS_PARTIAL_KEYS(
                            f"the key log has no {missing[0]} for this connection: the {self._name(d)} "
                            "records protected with it are not decrypted",
                            where=self._name(d),
                        ),
                    )
                )
            return
        master = keylog.get(kl.CLIENT_RANDOM, cr)
        if master is None:
            self._say_not_decrypted(
                issues,
                f"the key log has no CLIENT_RANDOM for client random {cr.hex()[:16]}...",
                Severity.WARNING,
            )
            st.epochs = [(kl.CLIENT_RANDOM, None)]
            return
        if len(master) != 48:
            issues.append(
                (
                    -1,
                    TLS_WRONG_KEY(
                        f"the master secret for this connection is {len(master)} bytes, not 48",
                    ),
                )
            )
            st.epochs = [(kl.CLIENT_RANDOM, None)]
            return
        cl, sv = tls12_key_block(suite, master, cr, self.server_random)
        mac, key, iv = cl if is_client else sv
        st.epochs = [(kl.CLIENT_RANDOM, RecordCipher(suite, key, iv, mac, self.etm))]

    def _say_not_decrypted(self, issues: list, why: str, make: Severity) -> None:
        if self.said_not_decrypted:
            return
        self.said_not_decrypted = True
        issues.append(
            (-1, TLS_NOT_DECRYPTED(f"{self.summary()} connection not decrypted: {why}", severity=make))
        )

    def _alert(self, d: int, frag: bytes, offset: int, issues: list) -> None:
        level, desc = frag[0], frag[1]
        name = ALERTS.get(desc, f"alert {desc}")
        if desc == 0:
            return  # close_notify: the normal end
        sev = Severity.ERROR if level == 2 else Severity.WARNING
        issues.append(
            (
                d,
                TLS_ALERT(
                    f"the {self._name(d)} sent a {'fatal' if level == 2 else 'warning'} TLS alert: {name}",
                    offset=offset,
                    where=self._name(d),
                    severity=sev,
                ),
            )
        )

    # -- handshake messages --------------------------------------------------------------------
    def _handshake_bytes(self, d: int, st: _Dir, data: bytes, ev, out, issues) -> None:
        if st.hskip:
            k = min(st.hskip, len(data))
            st.hskip -= k
            data = data[k:]
        hb = st.hbuf
        hb += data
        switch = False
        update = False
        while len(hb) >= 4:
            t = hb[0]
            n = hb[1] << 16 | hb[2] << 8 | hb[3]
            if t not in _WANTED or n > MAX_HANDSHAKE:
                have = len(hb) - 4
                if have >= n:
                    del hb[: 4 + n]
                    continue
                st.hskip = n - have
                hb.clear()
                break
            if len(hb) < 4 + n:
                break
            body = bytes(hb[4 : 4 + n])
            del hb[: 4 + n]
            if t == HS_CLIENT_HELLO:
                self._client_hello(d, body, issues)
            elif t == HS_SERVER_HELLO:
                self._server_hello(d, body, issues)
            elif t == HS_FINISHED:
                if st.encrypted and self.tls13:
                    switch = True
                if d != self.client:
                    self.handshake_complete = True
            elif t == HS_KEY_UPDATE and self.tls13 and st.encrypted:
                update = True
        if (
            switch
            and st.epoch + 1 < len(st.epochs)
            and st.epochs[st.epoch][0] in (kl.CLIENT_HS, kl.SERVER_HS)
        ):
            st.epoch += 1
            label, c = st.epochs[st.epoch]
            if c is not None:
                c.seq = 0
        if update and st.epoch < len(st.epochs):
            label, c = st.epochs[st.epoch]
            if c is not None and c.secret is not None:
                st.epochs[st.epoch] = (label + "+update", c.updated())

    def _client_hello(self, d: int, body: bytes, issues: list) -> None:
        try:
            ch = parse_client_hello(body)
        except HelloError as exc:
            issues.append((d, TLS_BAD_HELLO(f"malformed ClientHello: {exc}", where=self._name(d))))
            return
        if self.client is None:
            self.client = d
        if self.client_random is not None:
            return  # the second ClientHello after a HelloRetryRequest keeps the first's random
        self.client_random = ch["random"]
        self.sni = ch["sni"]
        self.alpn_offered = ch["alpn"]
        self.offered_session = ch["session_id"]
        self.offered_resumption = ch["ticket"] or ch["psk"]
        if self.version is None:
            self.version = max(ch["versions"]) if ch["versions"] else None

    def _server_hello(self, d: int, body: bytes, issues: list) -> None:
        try:
            sh = parse_server_hello(body)
        except HelloError as exc:
            issues.append((d, TLS_BAD_HELLO(f"malformed ServerHello: {exc}", where=self._name(d))))
            return
        if self.client is None:
            self.client = 1 - d
        self.suite_code = sh["cipher_suite"]
        self.version = sh["version"]
        if sh["hrr"]:
            return  # HelloRetryRequest: the real ServerHello follows the second ClientHello
        self.hello_seen = self.client_random is not None
        self.server_random = sh["random"]
        self.tls13 = sh["version"] == 0x0304
        self.etm = sh["etm"]
        self.alpn = sh["alpn"]
        self.suite = SUITES.get(sh["cipher_suite"])
        if self.tls13:
            self.resumed = sh["psk"]
            # from the ServerHello on, both directions' application_data records are protected
            for st in self.dirs:
                st.encrypted = True
        else:
            self.resumed = bool(sh["session_id"]) and sh["session_id"] == self.offered_session
        if self.suite is None or (self.suite.tls13 != self.tls13):
            issues.append(
                (
                    -1,
                    TLS_UNSUPPORTED_SUITE(
                        f"{version_name(self.version)} cipher suite {suite_name(sh['cipher_suite'])} "
                        "cannot be decrypted by this analyzer",
                    ),
                )
            )
            self.suite = None
        elif (
            not self.tls13
            and self.version is not None
            and self.version < 0x0302
            and self.suite.cipher == "cbc"
        ):
            issues.append(
                (
                    -1,
                    TLS_UNSUPPORTED_SUITE(
                        f"{version_name(self.version)} CBC records (implicit IVs) cannot be decrypted "
                        "by this analyzer",
                    ),
                )
            )
            self.suite = None
