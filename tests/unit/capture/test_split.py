"""Splits of big capture files: boundaries are true record (block) starts, and the splits' packets,
one split after the other, are the file's packets, numbered as in the whole file."""

import gzip
import struct
from pathlib import Path

import pytest

from analyzer.capture.files import CaptureFile
from analyzer.capture.split import CHAIN, Split, SplitSource, count_packets, splits
from analyzer.issues import CAPTURE_TRUNCATED
from tests.helpers.captures import CAPTURES, project_captures, tls_captures


def packets_of(source) -> list[tuple]:
    return [(i, ts, lt, bytes(d)) for i, ts, lt, d in source]


def read_splits(parts: list[Split]) -> list[tuple]:
    out = []
    first = 1
    for s in parts:
        n = count_packets(s)
        if s.first is not None:
            assert s.first == first
        got = packets_of(SplitSource(s, first))
        assert len(got) == n
        out += got
        first += n
    return out


def pcap_record_starts(raw: bytes) -> set[int]:
    order = "<" if raw[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    starts = set()
    pos = 24
    while pos + 16 <= len(raw):
        starts.add(pos)
        pos += 16 + struct.unpack_from(order + "I", raw, pos + 8)[0]
    return starts


ALL = project_captures() + tls_captures()


@pytest.mark.parametrize("path", ALL, ids=[p.name for p in ALL])
@pytest.mark.parametrize("target", [4096, 9000, 20000])
def test_splits_read_as_the_whole_file(path: Path, target: int):
    parts = splits(path, target)
    size = path.stat().st_size
    assert parts[0].start == 0 and parts[-1].end == size
    assert all(a.end == b.start for a, b in zip(parts, parts[1:], strict=False))
    if size >= 2 * target:
        assert len(parts) > 1
    raw = path.read_bytes()
    if raw[:4] != b"\x0a\x0d\x0d\x0a":
        starts = pcap_record_starts(raw)
        assert all(s.start in starts for s in parts[1:])
    assert read_splits(parts) == packets_of(CaptureFile(path))


def test_pcapng_splits_carry_interfaces_and_secrets():
    path = CAPTURES / "kafka-python-tls-tls13-aes128gcm-dsb.pcapng"
    whole = CaptureFile(path)
    packets_of(whole)
    assert whole.secrets
    parts = splits(path, 4096)
    assert len(parts) > 3
    for s in parts[1:]:
        assert s.header.startswith(b"\x0a\x0d\x0d\x0a")
        src = SplitSource(s)
        assert packets_of(src)
        assert src.secrets == whole.secrets  # the DSB before the split travels with it
        assert not src.issues


def test_chained_checks_skip_headers_inside_packet_data(tmp_path):
    """Packet data holding pcap record headers (a capture of a capture being copied) must not be
    taken for a boundary: fewer than CHAIN plausible headers in a row are rejected."""
    ts = 1_700_000_000

    def record(sec: int, payload: bytes) -> bytes:
        return struct.pack("<IIII", sec, 1000, len(payload), len(payload)) + payload

    fake = b"".join(record(ts, b"x" * 20) for _ in range(CHAIN - 1))
    body = fake + b"\xff" * 64  # the fake chain ends in garbage
    raw = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    for i in range(400):
        raw += record(ts + i // 100, body)
    path = tmp_path / "decoy.pcap"
    path.write_bytes(raw)
    starts = pcap_record_starts(raw)
    for target in range(4096, 20000, 997):
        parts = splits(path, target)
        assert len(parts) > 1
        assert all(s.start in starts for s in parts[1:]), target
        assert read_splits(parts) == packets_of(CaptureFile(path))


def test_compressed_files_are_one_split(tmp_path):
    src = CAPTURES / "librdkafka-txn.pcap"
    path = tmp_path / "c.pcap.gz"
    path.write_bytes(gzip.compress(src.read_bytes()))
    parts = splits(path, 4096)
    assert parts == [Split(str(path), 0, path.stat().st_size, b"", 1)]
    assert packets_of(SplitSource(parts[0])) == packets_of(CaptureFile(src))
    assert count_packets(parts[0]) == len(packets_of(CaptureFile(src)))


def test_not_a_capture_is_one_split_whose_reader_says_so(tmp_path):
    path = tmp_path / "x.pcap"
    path.write_bytes(b"hello world, not a capture" * 1000)
    (part,) = splits(path, 4096)
    src = SplitSource(part)
    assert packets_of(src) == []
    assert src.issues and "not a pcap" in src.issues[0].message


def test_a_truncated_file_keeps_its_damage_in_the_last_split(tmp_path):
    raw = (CAPTURES / "librdkafka-txn.pcap").read_bytes()
    path = tmp_path / "cut.pcap"
    path.write_bytes(raw[:-10])
    parts = splits(path, 8192)
    assert len(parts) > 2
    got = read_splits(parts)
    whole = CaptureFile(path)
    assert got == packets_of(whole)
    last = SplitSource(parts[-1])
    packets_of(last)
    assert [i.code for i in last.issues] == [CAPTURE_TRUNCATED.code]
    # numbered on from the splits before, its issue is the whole file's: byte offset, packets
    numbered = SplitSource(parts[-1], len(got) - count_packets(parts[-1]) + 1)
    packets_of(numbered)
    assert [(i.message, i.offset) for i in numbered.issues] == [(i.message, i.offset) for i in whole.issues]
    for s in parts[:-1]:
        src = SplitSource(s)
        packets_of(src)
        assert not src.issues


@pytest.mark.parametrize("name", ["librdkafka-admin.pcap", "kafka-python-tls-tls13-aes128gcm-dsb.pcapng"])
def test_a_splits_issues_are_the_files(tmp_path, name):
    """Damage found inside a split (the file cut in the middle of its last packet) is reported
    at the file's byte offset and packet numbers, as reading the whole file reports it: pcapng
    splits know their first packet, a pcap split is numbered on from the splits before."""
    raw = (CAPTURES / name).read_bytes()
    path = tmp_path / ("cut" + Path(name).suffix)
    path.write_bytes(raw[:-7])
    whole = CaptureFile(path)
    n = len(packets_of(whole))
    assert [i.code for i in whole.issues] == [CAPTURE_TRUNCATED.code]
    parts = splits(path, 4096)
    assert len(parts) > 4 and parts[-1].start > whole.issues[0].offset - 4096
    first = 1
    found = []
    for s in parts:
        src = SplitSource(s, first)
        first += len(packets_of(src))
        found += [(i.code, i.message, i.offset) for i in src.issues]
    assert first == n + 1
    assert found == [(i.code, i.message, i.offset) for i in whole.issues]
