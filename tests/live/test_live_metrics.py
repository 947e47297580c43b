"""``live --metrics ADDR:PORT``: a bundled capture (producer-txn.pcap: produce, fetch, errors,
transactions) replayed with tcpreplay at its original speed over a veth pair in a namespace of
the module's own; ``/metrics`` scraped during the replay and after it, ``/healthz`` while
capturing: after the replay the request, error and byte totals per API are the offline
``stats``' of the same file, with one worker and with two; ``promtool check metrics`` accepts
both scrapes; SIGTERM ends the run with exit code 0. Every process stops by itself
(--duration, timeout)."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers.captures import CAPTURES, ROOT
from tests.helpers.netns import veth_pair

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(os.geteuid() != 0, reason="live capture needs root"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="AF_PACKET is Linux only"),
    pytest.mark.skipif(shutil.which("tcpreplay") is None, reason="needs tcpreplay"),
]

SENDER, SNIFFED = "klm-sa", "klm-sb"
LIMIT = 120  # seconds any process of a test may run
PCAP = CAPTURES / "producer-txn.pcap"


@pytest.fixture(scope="module")
def veth():
    with veth_pair("metrics", SENDER, SNIFFED) as ns:
        yield ns


@pytest.fixture(scope="module")
def offline():
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", "stats", str(PCAP), "--format", "json"],
        capture_output=True,
        cwd=ROOT,
        timeout=300,
        check=True,
    )
    return json.loads(r.stdout)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def per_api(text: str) -> dict[str, dict[str, float]]:
    """Per API: requests, errors, request and response bytes."""
    names = {
        "kafka_analyzer_requests_total": "count",
        "kafka_analyzer_errors_total": "errors",
        "kafka_analyzer_request_bytes_total": "request_bytes",
        "kafka_analyzer_response_bytes_total": "response_bytes",
    }
    out: dict[str, dict[str, float]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name in names:
                row = out.setdefault(s.labels["api"], dict.fromkeys(names.values(), 0))
                row[names[s.name]] += s.value
    return out


def expected(tables: dict) -> dict[str, dict[str, float]]:
    return {
        a["api_name"]: {
            "count": a["count"],
            "errors": sum(a["errors"].values()),
            "request_bytes": a["request_bytes"],
            "response_bytes": a["response_bytes"],
        }
        for a in tables["apis"]
    }


def promtool_ok(text: str) -> None:
    if shutil.which("promtool") is None:
        return
    r = subprocess.run(
        ["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("workers", [1, 2])
def test_scraped_totals_are_the_offline_stats(veth, offline, workers):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as d:
        err = Path(d) / "live.err"
        argv = [sys.executable, "-m", "analyzer", "live", "-i", SNIFFED, "-f", "tcp", "--mode", "stats"]
        argv += ["--workers", str(workers), "--duration", str(LIMIT), "--metrics", f"127.0.0.1:{port}"]
        with open(err, "wb") as ferr:
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=ferr, cwd=ROOT)
        replay = None
        try:
            end = time.monotonic() + 60
            while b"capturing" not in err.read_bytes():
                assert proc.poll() is None and time.monotonic() < end, err.read_text()
                time.sleep(0.05)
            time.sleep(0.5)
            status, body = get(f"{base}/healthz")
            health = json.loads(body)
            assert status == 200 and health["capturing"] is True and health["kernel_dropped"] == 0, health
            assert get(f"{base}/nothing")[0] == 404
            replay = subprocess.Popen(
                ["timeout", str(LIMIT), "tcpreplay", "-i", SENDER, str(PCAP)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            time.sleep(4)  # about half of the replay
            status, during = get(f"{base}/metrics")
            assert status == 200
            promtool_ok(during.decode())
            seen = per_api(during.decode())
            assert 0 < sum(r["count"] for r in seen.values()) < offline["capture"]["exchanges"]
            replay.wait()
            assert replay.returncode == 0, replay.stderr.read() if replay.stderr else ""
            want = expected(offline)
            deadline = time.monotonic() + 20
            while True:  # the workers send their counts every second (the last ACKs and FINs too)
                after = get(f"{base}/metrics")[1].decode()
                families = {f.name: f for f in text_string_to_metric_families(after)}
                packets = families["kafka_analyzer_packets"].samples[0].value
                done = per_api(after) == want and packets >= offline["capture"]["packets"]
                if done or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            assert per_api(after) == want
            promtool_ok(after)
            assert packets >= offline["capture"]["packets"]
            assert families["kafka_analyzer_dropped_packets"].samples[0].value == 0
            assert "kafka_analyzer_transactions" in families and "kafka_analyzer_build_info" in families
            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(60)
        finally:
            for p in (proc, replay):
                if p is not None and p.poll() is None:
                    p.kill()
                    p.wait(10)
        assert rc == 0, err.read_text()
        assert "Traceback" not in err.read_text()
