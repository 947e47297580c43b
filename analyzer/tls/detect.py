"""Recognising a TLS record without the TLS layer (which loads the crypto libraries): the
pipeline asks this of every new connection's first bytes."""

from __future__ import annotations

MAX_RECORD = (1 << 14) + 2048  # the largest fragment any TLS version allows
CCS, ALERT, HANDSHAKE, APPLICATION_DATA, HEARTBEAT = 20, 21, 22, 23, 24


def looks_like_tls(buf, p: int = 0) -> bool:
    """Do the bytes at ``p`` start a TLS record (a handshake, or application data / alert /
    change cipher spec with a plausible length)? A Kafka frame never does: its size prefix
    would be above 300 MB."""
    n = len(buf) - p
    if n < 3 or buf[p + 1] != 3 or buf[p + 2] > 4:
        return False
    t = buf[p]
    if t == HANDSHAKE:
        return True
    if t not in (CCS, ALERT, APPLICATION_DATA) or n < 5:
        return False
    return 0 < (buf[p + 3] << 8 | buf[p + 4]) <= MAX_RECORD
