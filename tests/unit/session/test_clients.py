"""Clients (analyzer.session.clients, the clients and topology commands): each client's software
and versions, its readiness for a Kafka release against the versions it used (computed here from
the exchanges and the schema's removal rule), old record formats, hygiene findings, and the
topology against what a scenario's clients produced and consumed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import defaultdict

import pytest

from analyzer.dissect import schema
from analyzer.model import Exchange
from analyzer.pipeline import Analysis
from analyzer.session.clients import ClientTracker, target_floors
from analyzer.session.consumption import host_of
from tests.helpers.captures import CAPTURES, ROOT

LEGACY = [
    "kafka-python-0.8.2-gzip",
    "kafka-python-0.9-none",
    "kafka-python-0.10.0-lz4",
    "sarama-zstd",
]
# kafka-python set to speak as 0.11 (Produce v3, record batches) uses nothing Kafka 4 removed
MODERN = ["librdkafka-txn", "group-lag", "group-kip848", "aiokafka-zstd", "kafka-python-0.11-snappy"]


class Used:
    """Each client's (api key, version) pairs, read from the exchanges."""

    def __init__(self) -> None:
        self.used: dict[tuple, set] = defaultdict(set)
        self.old: dict[tuple, int] = defaultdict(int)

    def event(self, ev) -> None:
        if type(ev) is not Exchange or ev.request is None or ev.request.api_key is None:
            return
        conn = ev.conn
        client = conn.client if conn.client_direction is not None else conn.a
        key = (host_of(str(client)), ev.client_id)
        self.used[key].add((ev.request.api_key, ev.request.api_version))


def analyse(name: str) -> tuple[ClientTracker, Used]:
    a = Analysis(str(CAPTURES / f"{name}.pcap"))
    tracker, used = ClientTracker(a.knowledge.topic_ids), Used()
    a.run(tracker, used)
    return tracker, used


@pytest.mark.parametrize("name", LEGACY + MODERN)
def test_removed_versions_are_exactly_the_used_ones_kafka_4_refuses(name):
    tracker, used = analyse(name)
    rows = tracker.rows("4.0")
    assert rows
    for r in rows:
        versions = used.used[(r["client"], r["client_id"])]
        expected = sorted(
            (k, v) for k, v in versions if schema.version_range(k) is not None and schema.removed(k, v)
        )
        assert [(x["api_key"], x["version"]) for x in r["removed_versions"]] == expected
        assert sum(a["count"] for a in r["apis"]) >= len(versions)
    assert all(r["ready"] for r in tracker.rows("3.9"))  # nothing removed before 4.0
    if name in LEGACY:
        assert not any(r["ready"] for r in rows)
        assert all(r["software"] == "before KIP-511" for r in rows)
    else:
        assert all(r["ready"] for r in rows)
        assert all(
            r["software"].startswith("confluent-kafka-python") or r["software"] == "before KIP-511"
            for r in rows
        )


def test_old_message_formats_count_against_readiness():
    tracker, _ = analyse("kafka-python-0.10.0-lz4")
    [r] = tracker.rows("4.0")
    assert r["old_formats"] > 0 and not r["ready"]
    assert target_floors("3.9") is None


def test_topology_is_what_the_scenario_clients_produced_and_consumed():
    truth = json.loads((CAPTURES / "group-lag.truth.json").read_text())
    tracker, _ = analyse("group-lag")
    edges = tracker.edges()
    produced = defaultdict(int)
    consumed = defaultdict(int)
    client_ids = {}
    for name, c in truth["clients"].items():
        for e in c["events"]:
            if e["event"] == "delivery" and not e.get("error"):
                produced[e["topic"]] += 1
            if e["event"] == "consumed":
                consumed[(e["topic"], c["group"])] += 1
        client_ids[name] = c["config"].get("client.id")
    producer = client_ids["producer"]
    assert {(e["from"], e["to"]): e["records"] for e in edges if e["kind"] == "produce"} == {
        (producer, t): n for t, n in produced.items()
    }
    fetch = {(e["from"], e["to"]): e["records"] for e in edges if e["kind"] == "fetch"}
    assert set(fetch) == {(t, f"group {g}") for t, g in consumed}
    for (t, g), n in consumed.items():
        assert fetch[(t, f"group {g}")] >= n  # a consumer fetches ahead of what it hands out


def test_topology_dot_renders_and_mermaid_names_every_edge():
    out = subprocess.run(
        [sys.executable, "-m", "analyzer", "topology", str(CAPTURES / "group-lag.pcap"), "--format", "dot"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout
    assert out.startswith("digraph kafka {") and out.count("->") == 5
    if shutil.which("dot"):
        svg = subprocess.run(["dot", "-Tsvg"], input=out, capture_output=True, text=True, check=True).stdout
        assert "<svg" in svg and svg.count('<g id="edge') == 5  # (graphviz writes - as &#45;)
    mer = subprocess.run(
        [
            sys.executable,
            "-m",
            "analyzer",
            "topology",
            str(CAPTURES / "group-lag.pcap"),
            "--format",
            "mermaid",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout
    assert mer.startswith("flowchart LR") and mer.count("-->") == 5


def test_clients_command_names_the_versions_with_their_counts():
    out = subprocess.run(
        [sys.executable, "-m", "analyzer", "clients", str(CAPTURES / "sarama-zstd.pcap"), "--target", "4.0"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout
    assert "0 of 1 clients ready for Kafka 4.0" in out
    assert "OffsetCommit v1: 1 requests; Kafka 4.0 accepts v2-" in out


def _two_days_apart(dest):
    """kafka-python 0.8.2's clients (Kafka 4 refuses their versions), then, two days later in
    the same capture, a librdkafka producer and consumer (ready): past the default
    --state-idle of a day, the first two are let go before the capture's end."""
    import struct

    old = (CAPTURES / "kafka-python-0.8.2-none.pcap").read_bytes()
    new = (CAPTURES / "librdkafka-produce-consume-none.pcap").read_bytes()
    out, pos = [old], 24
    while pos + 16 <= len(new):
        sec, usec, caplen, wire = struct.unpack_from("<IIII", new, pos)
        out.append(
            struct.pack("<IIII", sec + 2 * 86400, usec, caplen, wire) + new[pos + 16 : pos + 16 + caplen]
        )
        pos += 16 + caplen
    dest.write_bytes(b"".join(out))
    return dest


def test_clients_let_go_before_the_end_stay_in_the_verdict(tmp_path, capsys):
    """A client let go before the capture's end (idle past --state-idle) is judged as it goes:
    ``clients`` counts it in "N of M ready" and lists it when it is not ready, and says so in its
    coverage; ``check``'s readiness rule finds it as it finds a client kept to the end."""
    from analyzer import cli

    cap = _two_days_apart(tmp_path / "two-days.pcap")
    capsys.readouterr()
    assert cli.main(["clients", str(cap), "--target", "4.0"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0] == "2 of 4 clients ready for Kafka 4.0"
    assert "2 clients let go before the capture's end" in text
    assert text.count("NOT READY for Kafka 4.0") == 2
    assert cli.main(["clients", str(cap), "--target", "4.0", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["let_go"] == {"ready": 0, "not_ready": 2, "not_listed": 0}
    assert sorted(r["ready"] for r in doc["clients"]) == [False, False, True, True]
    # the same verdict with every client kept to the end
    assert cli.main(["clients", str(cap), "--target", "4.0", "--state-idle", "0"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "2 of 4 clients ready for Kafka 4.0"

    assert cli.main(["check", str(cap), "--format", "json", "--fail-on", "warning"]) == 1
    doc = json.loads(capsys.readouterr().out)
    rule = next(r for r in doc["rules"] if r["id"] == "kafka.client-readiness")
    assert rule["status"] == "failed" and rule["count"] == 2  # (a warning, failing with --fail-on)
    assert all("let go before the capture's end" in f["message"] for f in rule["findings"])
