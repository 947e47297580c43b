"""The AF_PACKET ring source on lo, in a network namespace of the module's own (tests.helpers.netns:
its lo carries these tests' traffic only): the same exchanges as tcpdump + offline analysis,
with one worker and with two (equal to one), drops reported exactly as the kernel counted them,
Ctrl-C, --user, --write rotation by size and by time, fanout."""

import contextlib
import json
import os
import pwd
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tests.helpers.captures import ROOT
from tests.helpers.kafkamock import Mock
from tests.helpers.netns import isolated

confluent_kafka = pytest.importorskip("confluent_kafka")
pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(os.geteuid() != 0, reason="live capture needs root"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="AF_PACKET is Linux only"),
]


def wait_for(path, proc, text: bytes, timeout: float) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if text in path.read_bytes():
            return
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise AssertionError(f"never saw {text!r}; stderr: {path.read_bytes().decode(errors='replace')}")


def live(tmp_path, *args, name="live"):
    """Start `kafka-analyzer live -i lo ...`; returns (process, stdout path, stderr path)."""
    out, err = tmp_path / f"{name}.out", tmp_path / f"{name}.err"
    with open(out, "wb") as fout, open(err, "wb") as ferr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "analyzer", "live", "-i", "lo", "--duration", "120", *args],
            stdout=fout,
            stderr=ferr,
            cwd=ROOT,
        )
    wait_for(err, proc, b"capturing on lo", 60)
    return proc, out, err


def interrupt(proc) -> int:
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise


def exchange_keys(lines) -> list:
    """What identifies an exchange whichever capture saw it (the test clients' only: the mock
    cluster's own handle talks to its brokers at times neither capture controls)."""
    keys = []
    for o in lines:
        if o["type"] == "exchange" and (o["client_id"] or "").startswith("ring-test"):
            c = o["connection"]
            keys.append(
                (repr(c["client"]), repr(c["broker"]), o["api_key"], o["correlation_id"], len(o["issues"]))
            )
    return sorted(keys, key=repr)


def export(path) -> list[dict]:
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", "export", str(path), "--no-spans"],
        capture_output=True,
        cwd=ROOT,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    return [json.loads(x) for x in r.stdout.splitlines()]


@pytest.fixture(scope="module", autouse=True)
def netns():
    with isolated("ring") as ns:
        yield ns


@pytest.fixture(scope="module")
def mock(netns):
    return Mock()


def test_ring_finds_what_tcpdump_finds_with_one_worker_and_two(mock, tmp_path):
    """One process, and two in a fanout group whose outputs the parent merges, on the same
    traffic: each finds the exchanges the offline analysis of tcpdump's recording finds, so two
    workers find what one finds; their summaries count the same exchanges per API."""
    td_pcap = tmp_path / "tcpdump.pcap"
    td_err = tmp_path / "tcpdump.err"
    with open(td_err, "wb") as ferr:
        td = subprocess.Popen(["tcpdump", "-i", "lo", "-n", "-U", "-w", str(td_pcap), mock.bpf], stderr=ferr)
    wait_for(td_err, td, b"listening on", 30)
    runs = {}
    try:
        for w in (1, 2):
            runs[w] = live(
                tmp_path, "-f", mock.bpf, "--mode", "export", "--no-spans", "--workers", str(w), name=f"w{w}"
            )
        mock.traffic(60)
        time.sleep(1.0)
    finally:
        rcs = {w: interrupt(proc) for w, (proc, _, _) in runs.items()}
        td.send_signal(signal.SIGINT)
        td.wait(30)
    offline = exchange_keys(export(td_pcap))
    assert len(offline) > 20
    found = {}
    for w, (_, out, err) in runs.items():
        assert rcs[w] == 0, err.read_text()
        lines = [json.loads(x) for x in out.read_bytes().splitlines()]
        assert lines[-1]["type"] == "summary"
        assert lines[-1]["capture"]["dropped_packets"] == 0
        assert exchange_keys(lines) == offline, w
        found[w] = sorted(
            (o["api_name"], o["request"] is not None, o["response"] is not None)
            for o in lines
            if o["type"] == "exchange" and (o["client_id"] or "").startswith("ring-test")
        )
    assert found[2] == found[1]


def test_drops_are_reported_as_the_kernel_counted(tmp_path):
    """One 4 KiB block, flooded while nobody reads it: what the driver reports is exactly what
    PACKET_STATISTICS said, and every packet is either analysed or counted as dropped."""
    from analyzer.capture.ring import RingCapture
    from analyzer.events import CaptureIssue, CaptureStats
    from analyzer.pipeline import Analysis, Exit

    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    port = rx.getsockname()[1]
    src = RingCapture("lo", f"udp port {port}", duration=1.5, block_size=4096, buffer_mb=0, announce=False)
    assert src.open()
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    burst = 2000
    for i in range(burst):
        tx.sendto(b"%06d" % i + b"x" * 200, ("127.0.0.1", port))
    tx.close()
    rx.close()
    a = Analysis(src)
    events = list(a.events())
    stats = [e for e in events if type(e) is CaptureStats]
    issues = [e.issue for e in events if type(e) is CaptureIssue]
    ring = src.ring
    assert ring.dropped > 0
    assert stats and stats[-1].dropped == ring.dropped == src.dropped
    assert stats[-1].received == ring.received == burst
    assert a.packets + ring.dropped == burst
    assert [i.code for i in issues] == ["capture.packets_dropped", "capture.no_tcp"]
    assert f"dropped {ring.dropped} of {burst}" in issues[0].message
    assert a.outcome().exit_code() == Exit.DAMAGED
    from analyzer.session.report import stats_tables
    from analyzer.session.stats import Stats

    assert stats_tables(Stats(), a.outcome())["capture"]["dropped_packets"] == ring.dropped


def test_sigint_user_and_rotation(mock, tmp_path):
    """Ctrl-C prints the summary; the --write files rotate by size (-C) and, in a second run on
    the same traffic, by time (-G), belong to --user, and together hold every packet the live
    run analysed."""
    with tempfile.TemporaryDirectory(prefix="ring-user-") as d:  # pytest's tmp_path is 0700
        os.chmod(d, 0o777)
        by_size, by_time = Path(d) / "size", Path(d) / "time"
        for sub in (by_size, by_time):
            sub.mkdir()
            os.chmod(sub, 0o777)
        common = ("-f", mock.bpf, "--mode", "stats", "--user", "nobody")
        size = live(tmp_path, *common, "--write", str(by_size / "cap.pcap"), "-C", "0.05", name="size")
        timed = live(tmp_path, *common, "--write", str(by_time / "cap-%H%M%S.pcap"), "-G", "1", name="time")
        try:
            mock.traffic(300, size=1000, compression="gzip")  # decoded after the privilege drop
            time.sleep(2.5)  # the -G run's files span more than one second
        finally:
            rcs = [interrupt(size[0]), interrupt(timed[0])]
        files = _user_and_rotation(*size, rcs[0], by_size)
        assert files[:3] == ["cap.pcap", "cap.pcap1", "cap.pcap2"], files
        for f in files:
            assert (by_size / f).stat().st_size <= 50_000 or _packets(by_size / f) == 1  # a lone big packet
        files = _user_and_rotation(*timed, rcs[1], by_time)
        assert len(files) >= 2 and all(f.startswith("cap-") and f.endswith(".pcap") for f in files), files


def _packets(path: Path) -> int:
    from analyzer.capture.files import CaptureFile

    return sum(1 for _ in CaptureFile(str(path)))


def _user_and_rotation(proc, out, err, rc, out_dir) -> list[str]:
    """Check one run (exit 0 on Ctrl-C, its summary, its files: valid, nobody's, every packet
    the run analysed in them); its file names in creation order."""
    assert rc == 0, err.read_text()
    text = out.read_text()
    head = text.splitlines()[0]
    assert "Kafka exchanges" in head and "0 dropped by the kernel" in head, text
    packets = int(head.split()[0])
    files = sorted(os.listdir(out_dir), key=lambda n: (len(n), n))
    nobody = pwd.getpwnam("nobody").pw_uid
    total = 0
    for f in files:
        path = out_dir / f
        assert path.stat().st_uid == nobody
        r = subprocess.run(
            [sys.executable, "-m", "analyzer", "stats", str(path), "--format", "json"],
            capture_output=True,
            cwd=ROOT,
            timeout=120,
        )
        assert r.returncode in (0, 1), r.stderr  # 1: a file may hold no whole Kafka exchange
        cap = json.loads(r.stdout)["capture"]
        assert not [i for i in json.loads(r.stdout)["anomalies"] if i["anomaly"].startswith("capture.")]
        total += cap["packets"]
    assert total == packets
    return files


def test_sigint_with_no_traffic_leaves_a_valid_file(tmp_path):
    pcap = tmp_path / "empty.pcap"
    proc, out, err = live(tmp_path, "-f", "tcp port 9", "--mode", "export", "--write", str(pcap))
    rc = interrupt(proc)
    assert rc == 0, err.read_text()
    lines = [json.loads(x) for x in out.read_bytes().splitlines()]
    assert lines[-1]["type"] == "summary"
    from analyzer.capture.files import CaptureFile

    cf = CaptureFile(str(pcap))
    assert list(cf) == [] and not cf.issues


def test_capture_errors_exit_2(tmp_path):
    for args, text in (
        (["-i", "no-such-if0"], "no interface named 'no-such-if0'"),
        (["-i", "lo", "-f", "tcp port"], "bad capture filter 'tcp port'"),
    ):
        r = subprocess.run(
            [sys.executable, "-m", "analyzer", "live", *args, "--duration", "1"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=60,
        )
        assert r.returncode == 2 and text in r.stderr, r.stderr


def test_no_permission_is_a_clear_error(tmp_path):
    r = subprocess.run(
        [
            "setpriv",
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            sys.executable,
            "-m",
            "analyzer",
            "live",
            "-i",
            "lo",
            "--duration",
            "1",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    if "setpriv" in r.stderr and r.returncode != 2:
        pytest.skip(f"setpriv: {r.stderr}")
    assert r.returncode == 2 and "no permission to capture on lo" in r.stderr, r.stderr


def test_fanout_splits_flows_and_keeps_both_directions_together(tmp_path):
    """40 TCP connections on lo, 2 workers: both workers get connections, and every
    connection's two directions reach the same worker (the symmetric flow hash)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    port = srv.getsockname()[1]
    stop = False

    def serve():
        srv.settimeout(0.2)
        while not stop:
            try:
                c, _ = srv.accept()
            except TimeoutError:
                continue
            c.sendall(c.recv(100) * 2)
            c.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    proc, out, err = live(tmp_path, "-f", f"tcp port {port}", "--mode", "stats", "--workers", "2")
    try:
        for i in range(40):
            with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
                c.sendall(b"ping %d" % i)
                c.recv(100)
        time.sleep(1.0)
    finally:
        rc = interrupt(proc)
        stop = True
        t.join(5)
        srv.close()
    assert rc == 0, err.read_text()
    text = out.read_text()
    rows = [line.split() for line in text.split("\nConnections\n")[1].splitlines()[1:] if line.strip()]
    rows = [r for r in rows if r[0].isdigit()]
    assert len(rows) == 40, text
    ids = [int(r[0]) for r in rows]
    assert any(i < 1_000_000 for i in ids) and any(i > 1_000_000 for i in ids), ids
    # one row per connection with the bytes of both directions: no worker saw half a connection
    for r in rows:
        assert int(r[4]) in (6, 7) and int(r[5]) in (12, 14), r


@pytest.mark.parametrize("workers", ["1", "2"])
def test_cli_reports_drops_and_exits_1(workers):
    """A 1 MB ring per worker flooded by a burst of 8 KB datagrams: the warning while it runs,
    the count in the summary, every packet analysed or counted, exit code 1."""
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    port = rx.getsockname()[1]
    burst = 4000
    proc = subprocess.Popen(
        [sys.executable, "-m", "analyzer", "live", "-i", "lo", "-f", f"udp port {port}", "--buffer", "1"]
        + ["--workers", workers, "--mode", "stats", "--duration", "6"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    try:
        time.sleep(2.5)  # started (the "capturing on" line is read at the end with the rest)
        tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for _ in range(burst):
            with contextlib.suppress(OSError):
                tx.sendto(b"x" * 8000, ("127.0.0.1", port))
        tx.close()
        out, err = proc.communicate(timeout=60)
    finally:
        rx.close()
        if proc.poll() is None:
            proc.kill()
    head = out.decode().splitlines()[0]
    packets, dropped = int(head.split()[0]), int(head.split(", ")[-1].split()[0])
    assert dropped > 0, head
    assert packets + dropped == burst, head
    assert f"the kernel dropped {dropped} of {burst} packets" in err.decode()
    assert "stream gaps" in err.decode()
    assert proc.returncode == 1
