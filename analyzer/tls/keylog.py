"""TLS secrets in the NSS key log format (``SSLKEYLOGFILE``, pcapng Decryption Secrets Blocks).

One line per secret: ``LABEL <client_random hex> <secret hex>``. The labels used here:
``CLIENT_RANDOM`` (TLS 1.2 master secret), ``CLIENT_HANDSHAKE_TRAFFIC_SECRET``,
``SERVER_HANDSHAKE_TRAFFIC_SECRET``, ``CLIENT_TRAFFIC_SECRET_0``, ``SERVER_TRAFFIC_SECRET_0``
(TLS 1.3). Other labels are kept but unused; malformed lines are counted and reported once.

Secrets come from a file (``--tls-keylog``) and/or from the capture itself: a capture reader
appends each Decryption Secrets Block's text to a list that :meth:`KeyLog.attach` registers;
the key log reads new entries from it when a connection asks for keys, so blocks that come
before the connection's first encrypted record are used.
"""

from __future__ import annotations

import os

from analyzer.issues import (
    TLS_KEYLOG_BAD_LINE,
)
from analyzer.model import Issue

CLIENT_RANDOM = "CLIENT_RANDOM"
CLIENT_HS = "CLIENT_HANDSHAKE_TRAFFIC_SECRET"
SERVER_HS = "SERVER_HANDSHAKE_TRAFFIC_SECRET"
CLIENT_AP0 = "CLIENT_TRAFFIC_SECRET_0"
SERVER_AP0 = "SERVER_TRAFFIC_SECRET_0"


class KeyLog:
    """Secrets by (label, client random)."""

    def __init__(self) -> None:
        self.secrets: dict[tuple[str, bytes], bytes] = {}
        self._given = False
        self.sources: list[str] = []
        self.issues: list[Issue] = []
        self.bad_lines = 0
        self._lists: list[tuple[list, list[int]]] = []  # (capture's secret texts, [entries read])

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> KeyLog:
        """Raises OSError when the file cannot be read (a usage error for the CLI)."""
        kl = cls()
        with open(path, "rb") as f:
            kl.add_text(f.read(), os.fspath(path))
        return kl

    def add_text(self, text: bytes | str, origin: str) -> int:
        """Add every secret of ``text``; returns how many were added."""
        if isinstance(text, bytes | bytearray | memoryview):
            text = bytes(text).decode("ascii", errors="replace")
        self._given = True
        self.sources.append(origin)
        added = bad = 0
        first_bad = None
        for n, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split()
            try:
                if len(parts) != 3:
                    raise ValueError
                cr = bytes.fromhex(parts[1])
                secret = bytes.fromhex(parts[2])
                if len(cr) != 32 or not secret:
                    raise ValueError
            except ValueError:
                bad += 1
                if first_bad is None:
                    first_bad = n
                continue
            self.secrets[(parts[0], cr)] = secret
            added += 1
        if bad:
            self.bad_lines += bad
            self.issues.append(
                TLS_KEYLOG_BAD_LINE(
                    f"{bad} lines of the key log {origin} are not 'LABEL <client random> <secret>' "
                    f"(first: line {first_bad}); they were ignored",
                )
            )
        return added

    @property
    def given(self) -> bool:
        """A key log file was given, or the capture carried secrets (so far)."""
        if self._lists:
            self._pull()
        return self._given

    @property
    def pulled(self) -> int:
        """How many of the capture's secret texts were read so far (read when first needed)."""
        return sum(done[0] for _texts, done in self._lists)

    def attach(self, texts: list) -> None:
        """Read secrets from ``texts`` (a list a capture reader appends to) as it grows."""
        self._lists.append((texts, [0]))

    def _pull(self) -> None:
        for texts, done in self._lists:
            while done[0] < len(texts):
                self.add_text(texts[done[0]], "the capture's decryption secrets block")
                done[0] += 1

    def get(self, label: str, client_random: bytes) -> bytes | None:
        if self._lists:
            self._pull()
        return self.secrets.get((label, bytes(client_random)))

    def __len__(self) -> int:
        return len(self.secrets)
