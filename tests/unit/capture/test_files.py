"""Capture files: every format gives the same packets; damage ends cleanly with an issue."""

import gzip
import subprocess
import sys

import pytest
import zstandard

from analyzer.capture.files import CaptureFile
from tests.helpers.captures import ROOT, public_captures
from tests.helpers.packets import (
    Conversation,
    api_versions_request,
    api_versions_response,
    frames_of,
    write_pcap,
    write_pcapng,
)


def conversation_packets():
    c = Conversation().handshake()
    for i in range(1, 4):
        c.send(0, api_versions_request(i, pad=900), mss=512)
        c.send(1, api_versions_response(i, n_apis=40), mss=512)
    c.close()
    return [(1700000000.0 + i * 0.000123, bytes(p)) for i, p in enumerate(c.pkts)]


@pytest.fixture(scope="module")
def base_pcap(tmp_path_factory):
    path = tmp_path_factory.mktemp("cap") / "base.pcap"
    write_pcap(path, conversation_packets())
    return path


def packets(path):
    cap = CaptureFile(path)
    out = [(i, round(ts, 6), lt, bytes(d)) for i, ts, lt, d in cap]
    return out, cap


def test_pcap_variants_are_identical(base_pcap, tmp_path):
    ref, cap = packets(base_pcap)
    assert cap.format == "pcap" and not cap.issues and len(ref) > 10
    pk = conversation_packets()
    for be in (False, True):
        for ns in (False, True):
            p = tmp_path / f"v{be}{ns}.pcap"
            write_pcap(p, pk, big_endian=be, nanos=ns)
            got, cap = packets(p)
            assert got == ref and not cap.issues


def test_pcapng_variants_are_identical(base_pcap, tmp_path):
    ref, _ = packets(base_pcap)
    pk = conversation_packets()
    for be in (False, True):
        for res in (6, 9):
            p = tmp_path / f"n{be}{res}.pcapng"
            write_pcapng(p, [1], [(0, ts, d) for ts, d in pk], big_endian=be, tsresol=res)
            got, cap = packets(p)
            assert cap.format == "pcapng" and not cap.issues
            assert got == ref


def test_pcapng_two_interfaces_with_different_link_types(tmp_path):
    pk = conversation_packets()
    # interface 0 Ethernet, interface 1 raw IP: strip Ethernet from every other packet
    mixed = [(i % 2, ts, d if i % 2 == 0 else d[14:]) for i, (ts, d) in enumerate(pk)]
    p = tmp_path / "two.pcapng"
    write_pcapng(p, [1, 101], mixed)
    got, cap = packets(p)
    assert [x[2] for x in got] == [1 if i % 2 == 0 else 101 for i in range(len(pk))]
    ref_frames, _ = frames_of(p)
    base = tmp_path / "base.pcap"
    write_pcap(base, pk)
    assert ref_frames == frames_of(base)[0]


def test_simple_packet_blocks(tmp_path):
    pk = conversation_packets()
    p = tmp_path / "spb.pcapng"
    write_pcapng(p, [1], [(0, None, d) for _ts, d in pk])
    got, cap = packets(p)
    assert [x[3] for x in got] == [d for _ts, d in pk] and not cap.issues


def test_compressed_files_give_identical_frames(base_pcap, tmp_path):
    ref = frames_of(base_pcap)[0]
    raw = base_pcap.read_bytes()
    gz = tmp_path / "c.pcap.gz"
    gz.write_bytes(gzip.compress(raw))
    zs = tmp_path / "c.pcap.zst"
    zs.write_bytes(zstandard.ZstdCompressor().compress(raw))
    for path, comp in ((gz, "gzip"), (zs, "zstd")):
        frames, cap = frames_of(path)
        assert frames == ref and cap.compression == comp and not cap.issues


@pytest.mark.parametrize("path", public_captures(), ids=lambda p: p.name)
def test_public_capture_same_frames_as_pcapng_gzip_and_stdin(path, tmp_path):
    ref, cap = frames_of(path)
    assert not cap.issues
    pk = [(lt, ts, bytes(d)) for _i, ts, lt, d in CaptureFile(path)]
    lts = sorted({lt for lt, _, _ in pk})
    ng = tmp_path / "x.pcapng"
    write_pcapng(ng, lts, [(lts.index(lt), ts, d) for lt, ts, d in pk], tsresol=9)
    assert frames_of(ng)[0] == ref
    gz = tmp_path / "x.pcap.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert frames_of(gz)[0] == ref


def run_cli(*args, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "analyzer", *args], input=stdin, capture_output=True, cwd=ROOT, timeout=120
    )


def test_stdin_gives_the_same_output_as_the_file(base_pcap):
    a = run_cli("read", str(base_pcap))
    b = run_cli("read", "-", stdin=gzip.compress(base_pcap.read_bytes()))
    assert a.returncode == 0 and a.stdout.count(b"ApiVersions v3") == 3
    assert a.stdout == b.stdout


def test_truncated_file_keeps_packets_before_the_damage(base_pcap, tmp_path):
    raw = base_pcap.read_bytes()
    full, _ = packets(base_pcap)
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(raw[: len(raw) - 10])  # inside the last packet
    got, cap = packets(cut)
    assert got == full[:-1]
    assert [i.code for i in cap.issues] == ["capture.truncated"]
    r = run_cli("read", str(cut))
    assert r.returncode == 1
    assert b"truncated" in r.stderr and b"Traceback" not in r.stderr
    assert r.stdout.count(b"ApiVersions v3") >= 2


def test_truncated_gzip_file(base_pcap, tmp_path):
    z = gzip.compress(base_pcap.read_bytes())
    p = tmp_path / "cut.pcap.gz"
    p.write_bytes(z[: len(z) * 2 // 3])
    got, cap = packets(p)
    assert got and cap.issues and cap.issues[0].severity.name == "ERROR"
    r = run_cli("stats", str(p))
    assert r.returncode == 1 and b"Traceback" not in r.stderr


def test_hostile_record_length_does_not_allocate(base_pcap, tmp_path):
    raw = bytearray(base_pcap.read_bytes())
    # the 4th record's incl_len -> 2 GB
    full, _ = packets(base_pcap)
    off = 24 + sum(16 + len(d) for _, _, _, d in full[:3])
    raw[off + 8 : off + 12] = (0x7FFFFFFF).to_bytes(4, "little")
    p = tmp_path / "hostile.pcap"
    p.write_bytes(bytes(raw))
    got, cap = packets(p)
    assert len(got) == 3 and cap.issues[0].code == "capture.corrupt"


def test_garbage_and_missing_files():
    r = run_cli("read", "/nonexistent.pcap")
    assert r.returncode == 2 and b"no such file" in r.stderr
    r = run_cli("read", str(ROOT / "pyproject.toml"))
    assert r.returncode == 2 and b"not a pcap or pcapng" in r.stderr and b"Traceback" not in r.stderr


def test_empty_file(tmp_path):
    p = tmp_path / "empty.pcap"
    p.write_bytes(b"")
    r = run_cli("stats", str(p))
    assert r.returncode == 2 and b"empty file" in r.stderr


def _block(btype: int, body: bytes) -> bytes:
    import struct

    body += b"\x00" * (-len(body) % 4)
    n = 12 + len(body)
    return struct.pack("<II", btype, n) + body + struct.pack("<I", n)


def test_pcapng_decryption_secrets_blocks(tmp_path):
    """TLS key logs in Decryption Secrets Blocks are collected; other secrets types and an empty
    or overlong block are skipped (with an issue), never a crash."""
    import struct

    text = b"CLIENT_RANDOM " + b"00" * 32 + b" " + b"11" * 48 + b"\n"
    shb = _block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    idb = _block(1, struct.pack("<HHI", 1, 0, 65535))
    data = shb + idb
    data += _block(10, struct.pack("<II", 0x544C534B, len(text)) + text)
    data += _block(10, struct.pack("<II", 0x5353484B, 4) + b"ssh!")  # SSH keys: not ours
    data += _block(10, b"")  # no room for the secrets header
    data += _block(10, struct.pack("<II", 0x544C534B, 1000) + b"short")  # length past the block
    path = tmp_path / "secrets.pcapng"
    path.write_bytes(data)
    cap = CaptureFile(path)
    assert list(cap) == []
    assert cap.secrets == [text]
    assert [i.code for i in cap.issues] == ["capture.bad_block", "capture.bad_block"]
