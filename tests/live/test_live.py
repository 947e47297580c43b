"""Live sniffing on lo: a librdkafka mock cluster, `kafka-analyzer live`, N messages produced
and consumed, and every one of them found in the export."""

import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from tests.helpers.captures import ROOT, known_malformed
from tests.helpers.kafkamock import Mock
from tests.helpers.netns import isolated

pytest.importorskip("confluent_kafka")
pytest.importorskip("scapy")

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(os.geteuid() != 0, reason="live capture needs root"),
]

N = 40


def wait_for(path, proc, text: bytes, timeout: float) -> None:
    """Wait until the process's stderr (a file) contains text."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if text in path.read_bytes():
            return
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise AssertionError(f"never saw {text!r}; stderr: {path.read_bytes().decode(errors='replace')}")


@pytest.fixture(scope="module")
def mock():
    """The mock cluster in a network namespace of the module's own: its lo carries this
    module's traffic only."""
    with isolated("live") as ns:
        assert ns is not None  # root, with ip(8)
        yield Mock(prefix="live-test")


@pytest.mark.parametrize("backend", ["ring", "scapy"])
def test_live_sniffing_finds_every_message(tmp_path, backend, mock):
    pcap = tmp_path / "live.pcap"
    out = tmp_path / "live.ndjson"
    err = tmp_path / "live.err"
    with open(out, "wb") as fout, open(err, "wb") as ferr:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "analyzer",
                "live",
                "-i",
                "lo",
                "-f",
                mock.bpf,
                "--mode",
                "export",
                "--records",
                "--write",
                str(pcap),
                "--duration",
                "120",
                "--backend",
                backend,
            ],
            stdout=fout,
            stderr=ferr,
            cwd=ROOT,
        )
        try:
            wait_for(err, proc, b"capturing on lo", 60)
            wanted = [f"live-value-{i}-{uuid.uuid4().hex}".encode() for i in range(N)]
            topic, _ = mock.traffic(N, compression="gzip", values=wanted)
            values = [v.decode() for v in wanted]
            time.sleep(1.0)
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise
    assert proc.returncode == 0, err.read_text()
    lines = [json.loads(x) for x in out.read_bytes().splitlines()]
    assert lines[0]["type"] == "capture" and lines[-1]["type"] == "summary"
    produced, fetched = set(), set()

    def records(body):
        for t in (body or {}).get("topic_data", []) + (body or {}).get("responses", []):
            if t.get("name") not in (topic, None) and t.get("topic") != topic:
                continue
            for p in t.get("partition_data", []) + t.get("partitions", []):
                recs = p.get("records") or {}
                for b in recs.get("batches", []):
                    for r in b["record_list"]:
                        yield r["value"]

    for o in lines:
        if o["type"] != "exchange":
            continue
        if o["api_name"] == "Produce" and o["request"]:
            produced.update(records(o["request"]["body"]))
        if o["api_name"] == "Fetch" and o["response"]:
            fetched.update(records(o["response"]["body"]))
        resp = o["response"] or {}
        err = (resp.get("body") or {}).get("error_code")
        if known_malformed(o["api_key"], "response", err):
            continue
        for i in o["issues"]:
            assert i["severity"] != "error", (o["api_name"], i)
    assert produced >= set(values)
    assert fetched >= set(values)
    # the saved pcap holds the same conversation
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", "stats", str(pcap), "--format", "json"],
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    topics = {t["topic"]: t for t in json.loads(r.stdout)["topics"]}
    assert topics[topic]["produced_records"] == N
