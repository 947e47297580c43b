"""Telling a TLS record header from a Kafka frame."""

from analyzer.tls.detect import looks_like_tls


def test_looks_like_tls():
    assert looks_like_tls(b"\x16\x03\x01\x00\xc4")
    assert looks_like_tls(b"\x17\x03\x03\x00\x20")
    assert not looks_like_tls(b"\x00\x00\x00\x20\x00\x12")
    assert not looks_like_tls(b"\x17\x03\x03\xff\xff")
