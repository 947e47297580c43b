"""``live --state-max N``: a bundled capture with many client connections
(client-reconnect-loop.pcap) replayed over a veth pair in a namespace of the module's own into
``live --metrics`` with every long-lived table bounded to one entry: ``/metrics`` counts the
evictions per table and the tables stay at their bound; the summary says what was let go.
Every process stops by itself (--duration, timeout)."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
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

SENDER, SNIFFED = "klb-sa", "klb-sb"
LIMIT = 120  # seconds any process of a test may run
PCAP = CAPTURES / "client-reconnect-loop.pcap"


@pytest.fixture(scope="module")
def veth():
    with veth_pair("bounds", SENDER, SNIFFED) as ns:
        yield ns


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tables(text: str) -> tuple[dict[str, float], dict[str, float]]:
    """(evicted per table, entries per table) of an exposition."""
    evicted: dict[str, float] = {}
    entries: dict[str, float] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == "kafka_analyzer_evicted_total":
                evicted[s.labels["table"]] = s.value
            elif s.name == "kafka_analyzer_table_entries":
                entries[s.labels["table"]] = s.value
    return evicted, entries


@pytest.mark.parametrize("workers", [1, 2])
def test_live_tables_stay_bounded_and_count_evictions(veth, workers):
    port = _port()
    with tempfile.TemporaryDirectory() as d:
        err = Path(d) / "live.err"
        argv = [sys.executable, "-m", "analyzer", "live", "-i", SNIFFED, "-f", "tcp", "--mode", "stats"]
        argv += ["--workers", str(workers), "--duration", str(LIMIT), "--metrics", f"127.0.0.1:{port}"]
        argv += ["--state-max", "1"]
        with open(err, "wb") as ferr:
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=ferr, cwd=ROOT)
        try:
            end = time.monotonic() + 60
            while b"capturing" not in err.read_bytes():
                assert proc.poll() is None and time.monotonic() < end, err.read_text()
                time.sleep(0.05)
            time.sleep(0.5)
            subprocess.run(
                ["timeout", str(LIMIT), "tcpreplay", "-x", "4", "-i", SENDER, str(PCAP)],
                stdout=subprocess.DEVNULL,
                check=True,
            )
            deadline = time.monotonic() + 20
            while True:  # the workers send their counts every second
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
                    evicted, entries = _tables(r.read().decode())
                if evicted.get("stats_connections", 0) > 0 or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            assert evicted["stats_connections"] > 0 and evicted["client_hosts"] > 0, evicted
            # one entry per table (the statistics' tables: one per worker)
            assert all(n <= workers for n in entries.values()), entries
            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        said = err.read_text()
        assert rc == 0, said
        assert "Traceback" not in said
        assert "kafka-analyzer: bounded: " in said and "stats connections evicted" in said, said
