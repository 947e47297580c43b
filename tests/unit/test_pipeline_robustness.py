"""Damaged captures end cleanly: random byte flips, cuts and garbage anywhere in a real capture
never raise out of the pipeline or the CLI, and what comes before the damage is kept."""

import json
import random
import subprocess
import sys

import pytest

from analyzer.dissect.message import Options
from analyzer.export.jsonout import exchange_json
from analyzer.model import Exchange
from analyzer.pipeline import Analysis
from tests.helpers.captures import CAPTURES, ROOT

SOURCES = ["librdkafka-produce-consume-gzip.pcap", "kafka-python-0.9-snappy.pcap", "librdkafka-txn.pcap"]


def run(path):
    out = []
    for ev in Analysis(path, Options(records_bodies=True)).events():
        if isinstance(ev, Exchange):
            out.append(exchange_json(ev))  # the export must cope with whatever was decoded
    return out


@pytest.mark.parametrize("name", SOURCES)
@pytest.mark.parametrize("seed", range(6))
def test_random_damage_never_raises(name, seed, tmp_path):
    src = CAPTURES / name
    if not src.exists():
        pytest.skip("capture absent")
    raw = bytearray(src.read_bytes())
    rnd = random.Random(seed * 7919 + len(name))
    kind = seed % 3
    if kind == 0:  # flip many bytes after the file header
        for _ in range(200):
            raw[rnd.randrange(24, len(raw))] ^= 1 << rnd.randrange(8)
    elif kind == 1:  # overwrite a run with garbage (hostile lengths included)
        at = rnd.randrange(24, len(raw) - 600)
        raw[at : at + 512] = bytes(rnd.getrandbits(8) for _ in range(512))
    else:  # cut the file anywhere
        raw = raw[: rnd.randrange(24, len(raw))]
    p = tmp_path / "damaged.pcap"
    p.write_bytes(bytes(raw))
    run(p)
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", "stats", str(p)], capture_output=True, cwd=ROOT, timeout=120
    )
    assert r.returncode in (0, 1) and b"Traceback" not in r.stderr, r.stderr.decode()


def test_decompression_bomb_in_a_capture_is_refused(tmp_path):
    """A Produce request whose gzip batch inflates to 1 GiB: refused within limits, no outage."""
    import struct
    import zlib

    from analyzer.dissect.crc import crc32c
    from tests.helpers.packets import Conversation, write_pcap

    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"\0" * (1 << 20)
    bomb = b"".join(comp.compress(chunk) for _ in range(1024)) + comp.flush()
    # record batch v2, gzip, claiming 1 record
    after_crc = struct.pack(">hiqqqhii", 1, 0, 0, 0, -1, -1, -1, 1) + bomb
    batch_wo_len = struct.pack(">i", 0) + struct.pack(">b", 2)
    crc = crc32c(after_crc)
    body_after_len = batch_wo_len + struct.pack(">I", crc) + after_crc
    batch = struct.pack(">qi", 0, len(body_after_len)) + body_after_len
    # Produce v3 request: transactional_id null, acks 1, timeout, 1 topic, 1 partition
    body = struct.pack(">hhi", -1, 1, 1000) + struct.pack(">i", 1) + struct.pack(">h", 1) + b"t"
    body += struct.pack(">i", 1) + struct.pack(">i", 0) + struct.pack(">i", len(batch)) + batch
    p = struct.pack(">hhih", 0, 3, 1, 1) + b"c" + body
    c = Conversation().handshake()
    c.send(0, struct.pack(">i", len(p)) + p)
    c.close()
    cap = tmp_path / "bomb.pcap"
    write_pcap(cap, [(1.0 + i / 1000, bytes(x)) for i, x in enumerate(c.pkts)])
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", "export", str(cap), "--records"],
        capture_output=True,
        cwd=ROOT,
        timeout=60,
    )
    assert r.returncode == 0 and b"records.decompression_limit" in r.stdout


def test_a_file_of_a_close_s_acks_and_fins_is_tcp(tmp_path):
    """A rotated capture's last file may hold only the tail of a close (FINs and ACKs): TCP
    segments that open no connection. That is TCP traffic all the same: no ``capture.no_tcp``
    ("no TCP traffic in the capture") from one process or from ``-j 2``; UDP alone still gets it
    (a flaky live test, test_sigint_user_and_rotation, read such a -C file back)."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    from tests.helpers.packets import Conversation, write_pcap

    c = Conversation().handshake()
    c.send(0, b"x" * 100)
    c.pkts.clear()
    c.close()
    tail = tmp_path / "tail.pcap"
    write_pcap(tail, [(1.0 + i / 10, bytes(p)) for i, p in enumerate(c.pkts)])
    udp = tmp_path / "udp.pcap"
    write_pcap(udp, [(1.0, bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP() / b"x"))])
    for path, expected in ((tail, False), (udp, True)):
        for jobs in ((), ("-j", "2")):
            r = subprocess.run(
                [sys.executable, "-m", "analyzer", "stats", str(path), "--format", "json", *jobs],
                capture_output=True,
                text=True,
                cwd=ROOT,
                timeout=120,
            )
            codes = [a["anomaly"] for a in json.loads(r.stdout)["anomalies"]]
            assert ("capture.no_tcp" in codes) is expected, (path.name, jobs, codes, r.stderr[-2000:])
