"""CRC-32 / CRC-32C helpers, checked against published check values and independent code."""

from __future__ import annotations

import sys
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.record._crc32c import crc as kafka_crc32c  # kafka-python's pure-Python CRC-32C

from analyzer.dissect import crc

CHECK = b"123456789"  # the standard check input of the CRC catalogue


def test_check_values():
    assert crc.crc32(CHECK) == 0xCBF43926
    assert crc.crc32c(CHECK) == 0xE3069283
    assert crc.crc32c_python(CHECK) == 0xE3069283
    assert crc.crc32(b"") == 0
    assert crc.crc32c(b"") == 0


def test_preferred_backend_in_this_environment():
    assert crc.CRC32C_IMPLEMENTATION == "crc32c"


@given(st.binary(max_size=4096))
def test_crc32c_matches_kafka_python_and_fallback(data):
    expected = kafka_crc32c(data)
    assert crc.crc32c(data) == expected
    assert crc.crc32c_python(data) == expected


@given(st.binary(max_size=4096))
def test_crc32_matches_zlib(data):
    assert crc.crc32(data) == zlib.crc32(data) & 0xFFFFFFFF


def test_buffers_without_copy():
    data = bytes(range(256)) * 20
    mv = memoryview(data)[17:3001]
    expected = crc.crc32c(data[17:3001])
    assert crc.crc32c(mv) == expected
    assert crc.crc32c(bytearray(data[17:3001])) == expected
    assert crc.crc32(mv) == crc.crc32(data[17:3001])


def test_fallback_to_google_crc32c(monkeypatch):
    pytest.importorskip("google_crc32c")  # optional: only crc32c is a dependency
    monkeypatch.setitem(sys.modules, "crc32c", None)  # makes `import crc32c` raise ImportError
    fn, name = crc._select()
    assert name == "google_crc32c"
    assert fn(CHECK) == 0xE3069283
    assert fn(memoryview(CHECK)) == 0xE3069283  # the wrapper copies non-bytes buffers


def test_fallback_to_pure_python(monkeypatch):
    monkeypatch.setitem(sys.modules, "crc32c", None)
    monkeypatch.setitem(sys.modules, "google_crc32c", None)
    fn, name = crc._select()
    assert name == "python"
    assert fn(CHECK) == 0xE3069283
