"""``read -w OUT``: the packets of exactly the exchanges shown (``-Y`` and the shorthands), in
capture order, pcap or pcapng as the input was, with their connections' handshake and FIN/RST
packets. Read back by the analyzer, the file holds the same exchanges (the same ``read``
lines); read by tshark (when installed), the same requests. A TLS connection is written whole
(encrypted): read back with the same filter, the same lines."""

import os
import shutil
import subprocess
import sys

import pytest

from analyzer import cli
from analyzer.capture.files import PCAPNG_SHB, CaptureFile
from analyzer.model import Exchange
from analyzer.pipeline import Analysis
from tests.helpers.captures import CAPTURES, ROOT


def _read(capsys, *argv) -> tuple[int, list[str], str]:
    capsys.readouterr()
    rc = cli.main(["read", *map(str, argv), "--absolute"])
    out, err = capsys.readouterr()
    return rc, [line for line in out.splitlines() if "TLS connection:" not in line], err


CASES = [
    ("librdkafka-produce-consume-gzip.pcap", ["-Y", "api == Produce"]),
    # Fetch v13+ names topics by id: the Metadata exchanges that name them are written too
    ("librdkafka-produce-consume-gzip.pcap", ["--api", "Fetch,Metadata", "--topic", "rdk-gzip"]),
    ("librdkafka-txn.pcap", ["-Y", "api in {EndTxn, AddPartitionsToTxn} or error"]),
    ("group-cooperative.pcap", ["-Y", "api == JoinGroup or api == SyncGroup"]),
    ("librdkafka-sasl-scram.pcap", ["-Y", "api == SaslAuthenticate"]),
    ("kafka-python-0.8.2-gzip.pcap", ["--errors"]),
    ("librdkafka-admin.pcap", ["-Y", "kafka.request_key in {8, 9, 10}"]),  # Wireshark names
]


@pytest.mark.parametrize(("name", "flt"), CASES, ids=[f"{n}:{' '.join(f)}" for n, f in CASES])
def test_written_packets_hold_exactly_the_exchanges_shown(capsys, tmp_path, name, flt):
    cap = CAPTURES / name
    out = tmp_path / "out.pcap"
    rc, shown, err = _read(capsys, cap, *flt, "-w", out)
    assert rc == 0 and shown, err
    assert f"of {len(shown)} exchanges to {out}" in err
    rc, everything, _ = _read(capsys, cap)
    assert len(shown) < len(everything)
    rc, back, err = _read(capsys, out)
    assert back == shown, err
    # packets in capture order, each as it was (same bytes, same time), handshakes included
    orig = {bytes(d): ts for _, ts, _, d in CaptureFile(cap)}
    copied = list(CaptureFile(out))
    assert [ts for _, ts, _, d in copied] == sorted(orig[bytes(d)] for _, _, _, d in copied)


def test_the_handshake_and_the_close_are_kept(capsys, tmp_path):
    """Each connection of the exchanges written starts with its SYN, SYN-ACK and ACK and keeps
    its FINs: Wireshark sees whole connections, with holes where other exchanges were."""
    from analyzer.reassembly.packet import ACK, FIN, SYN, decode_tcp

    out = tmp_path / "out.pcap"
    _read(capsys, CAPTURES / "librdkafka-produce-consume-gzip.pcap", "-Y", "api == Produce", "-w", out)
    flows: dict = {}
    for _, _, lt, data in CaptureFile(out):
        src, sport, dst, dport, _seq, _ack, flags, payload = decode_tcp(lt, data)
        key = tuple(sorted([(src, sport), (dst, dport)]))
        flows.setdefault(key, []).append((flags & (SYN | ACK | FIN), bool(len(payload))))
    assert len(flows) == 3
    for pkts in flows.values():
        assert pkts[:3] == [(SYN, False), (SYN | ACK, False), (ACK, False)], pkts
        assert sum(1 for f, _ in pkts if f & FIN) == 2, pkts


def test_pcapng_in_pcapng_out_with_its_secrets(capsys, tmp_path):
    """A pcapng gives a pcapng, its Decryption Secrets Block copied: the TLS connections of the
    exchanges shown are written whole and still decrypt; with the same filter, the same lines."""
    cap = CAPTURES / "kafka-python-tls-tls13-aes128gcm-dsb.pcapng"
    out = tmp_path / "out.pcapng"
    rc, shown, err = _read(capsys, cap, "-Y", "api == Fetch", "-w", out)
    assert rc == 0 and shown, err
    assert out.read_bytes()[:4] == PCAPNG_SHB
    rc, back, err = _read(capsys, out, "-Y", "api == Fetch")
    assert back == shown, err


def test_a_tls_capture_with_a_key_log(capsys, tmp_path):
    cap = CAPTURES / "kafka-python-tls-tls12-aes128gcm.pcap"
    keys = cap.with_suffix(".keys")
    out = tmp_path / "out.pcap"
    rc, shown, err = _read(capsys, cap, "--tls-keylog", keys, "-Y", "api == Produce", "-w", out)
    assert rc == 0 and shown, err
    rc, back, err = _read(capsys, out, "--tls-keylog", keys, "-Y", "api == Produce")
    assert back == shown, err


def test_a_pcapng_made_from_a_pcap_stays_pcapng(capsys, tmp_path):
    if shutil.which("editcap") is None:
        pytest.skip("no editcap")
    ng = tmp_path / "in.pcapng"
    subprocess.run(["editcap", "-F", "pcapng", CAPTURES / "librdkafka-txn.pcap", ng], check=True)
    out = tmp_path / "out.pcapng"
    rc, shown, _ = _read(capsys, ng, "-Y", "api == Produce", "-w", out)
    assert rc == 0 and shown
    assert out.read_bytes()[:4] == PCAPNG_SHB
    assert _read(capsys, out)[1] == shown


def test_pieces_of_one_recording_give_one_file(capsys, tmp_path):
    from tests.helpers.captures import cut

    pieces = cut(CAPTURES / "librdkafka-produce-consume-gzip.pcap", 40, tmp_path)
    out = tmp_path / "out.pcap"
    rc, shown, err = _read(capsys, *pieces, "-Y", "api == Produce", "-w", out)
    assert rc == 0 and shown, err
    whole = tmp_path / "whole.pcap"
    _read(capsys, CAPTURES / "librdkafka-produce-consume-gzip.pcap", "-Y", "api == Produce", "-w", whole)
    assert out.read_bytes() == whole.read_bytes()


def test_to_stdout(tmp_path):
    """``-w -``: the capture on stdout and nothing else; the same bytes as ``-w FILE``."""
    cap = CAPTURES / "librdkafka-produce-consume-gzip.pcap"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "analyzer", "read", str(cap), "-Y", "api == Fetch"]
    r = subprocess.run([*argv, "-w", "-"], capture_output=True, env=env, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    f = tmp_path / "out.pcap"
    subprocess.run([*argv, "-w", str(f)], capture_output=True, env=env, cwd=ROOT, timeout=120, check=True)
    assert r.stdout == f.read_bytes() and len(r.stdout) > 24


@pytest.mark.skipif(shutil.which("tshark") is None, reason="no tshark")
def test_tshark_sees_the_same_requests(capsys, tmp_path):
    cap = CAPTURES / "librdkafka-produce-consume-gzip.pcap"
    out = tmp_path / "out.pcap"
    flt = "api in {Produce, Fetch} and partition == 1"
    _read(capsys, cap, "-Y", flt, "-w", out)
    exs = [ev for ev in Analysis(out).events() if type(ev) is Exchange]
    ports = {ex.conn.broker.port for ex in exs}
    args = ["tshark", "-r", str(out), "-Y", "kafka.request_key", "-T", "fields", "-E", "occurrence=a"]
    for p in sorted(ports):
        args += ["-d", f"tcp.port=={p},kafka"]
    args += ["-e", "kafka.request_key", "-e", "kafka.correlation_id", "-e", "tcp.srcport"]
    rows = subprocess.run(args, capture_output=True, text=True, timeout=120, check=True).stdout.split("\n")
    theirs = sorted(tuple(map(int, r.split("\t"))) for r in rows if r.strip())
    want = sorted((ex.api_key, ex.correlation_id, ex.conn.client.port) for ex in exs)
    assert theirs == want and len(want) >= 2


def test_what_cannot_be_written_is_said(capsys, tmp_path):
    cap = CAPTURES / "librdkafka-produce-consume-gzip.pcap"
    for argv, said in (
        (["-", "-w", str(tmp_path / "x.pcap")], "not stdin"),
        ([str(cap), "-w", str(tmp_path / "no" / "x.pcap")], "no such directory"),
        ([str(cap), "-w", str(tmp_path)], "is a directory"),
        ([str(cap), "-w", str(cap)], "is the capture being read"),
        ([str(cap), str(CAPTURES / "group-lag.pcap"), "-w", str(tmp_path / "x.pcap")], "writes one capture"),
    ):
        capsys.readouterr()
        assert cli.main(["read", *argv]) == 2
        assert said in capsys.readouterr().err
    assert (CAPTURES / "librdkafka-produce-consume-gzip.pcap").stat().st_size > 0
