"""Packet decoding helpers."""

from __future__ import annotations

import ipaddress
import random

from analyzer.reassembly.packet import ip_text


def test_ip_text_is_ipaddress_text():
    rng = random.Random(7)
    addrs = [
        bytes(4),
        b"\xff" * 4,
        b"\x7f\x00\x00\x01",
        bytes(16),
        b"\x00" * 10 + b"\xff\xff\x7f\x00\x00\x01",
    ]
    addrs += [rng.randbytes(4) for _ in range(200)] + [rng.randbytes(16) for _ in range(50)]
    for raw in addrs:
        assert ip_text(raw) == str(ipaddress.ip_address(raw)), raw
