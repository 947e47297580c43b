"""pcap writing with tcpdump-style rotation (-C by size, -G by time), read back by our reader."""

import time

from analyzer.capture.files import CaptureFile
from analyzer.capture.pcapwriter import RotatingPcapWriter


def packets(n, t0=1_700_000_000.0, step=0.5, size=100):
    return [(t0 + i * step, size + 10, bytes([i % 256]) * size) for i in range(n)]


def read(path):
    cf = CaptureFile(str(path))
    out = [(round(ts, 6), bytes(data)) for _, ts, _, data in cf]
    # the packets' wire length is 10 bytes more than what was kept: the reader says so
    assert all(i.code == "capture.snaplen" for i in cf.issues)
    return out


def test_size_rotation_names_and_contents(tmp_path):
    w = RotatingPcapWriter(str(tmp_path / "c.pcap"), 1, rotate_mb=0.001)  # 1000 bytes
    pk = packets(30)
    w.write_block(pk[:10])
    w.write_block(pk[10:])
    w.close()
    names = sorted((p.name for p in tmp_path.iterdir()), key=lambda n: (len(n), n))
    assert names[:3] == ["c.pcap", "c.pcap1", "c.pcap2"]
    got = []
    for n in names:
        assert (tmp_path / n).stat().st_size <= 1000
        got += read(tmp_path / n)
    assert got == [(round(ts, 6), d) for ts, _, d in pk]


def test_time_rotation_uses_strftime_of_the_first_packet(tmp_path):
    pattern = str(tmp_path / "c-%H%M%S.pcap")
    w = RotatingPcapWriter(pattern, 1, rotate_seconds=2)
    pk = packets(10, step=0.5)  # 4.5 s of packets: 3 files of at most 2 s
    w.write_block(pk)
    w.close()
    assert w.files == [time.strftime(pattern, time.localtime(pk[i][0])) for i in (0, 4, 8)]
    assert [len(read(f)) for f in w.files] == [4, 4, 2]


def test_no_packet_still_leaves_a_valid_file(tmp_path):
    w = RotatingPcapWriter(str(tmp_path / "e.pcap"), 1)
    w.close()
    assert read(tmp_path / "e.pcap") == []


def test_pcap_writer_reopened_after_rename(tmp_path):
    path = tmp_path / "cap.pcap"
    w = RotatingPcapWriter(str(path), 1)
    w.write_block([(1.0, 60, b"a" * 60)])
    w.reopen()
    w.write_block([(2.0, 60, b"b" * 60)])
    path.rename(tmp_path / "cap.pcap.1")
    w.reopen()
    w.write_block([(3.0, 60, b"c" * 60)])
    w.close()
    old = [d for i, _, d, _ in CaptureFile(tmp_path / "cap.pcap.1").records() if i]
    new = [d for i, _, d, _ in CaptureFile(path).records() if i]
    assert [bytes(d[:1]) for d in old] == [b"a", b"b"] and [bytes(d[:1]) for d in new] == [b"c"]
