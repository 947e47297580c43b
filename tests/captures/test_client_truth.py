"""Client hygiene (analyzer.session.clients, the ``clients`` command) on the generated client
scenarios (tools/gen/clients.py), against what their clients and the mock did
(``captures/client-*.truth.json``): the producer writing to a missing topic flagged with a
Metadata loop and storm, the producer whose broker flaps flagged with a reconnect loop whose
refused connections all fall while the broker was down, the well-behaved producer not flagged;
and ``-j 2`` equal to one process."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from analyzer.events import ConnectionEnd
from analyzer.model import Exchange
from analyzer.pipeline import Analysis
from analyzer.session.clients import NO_BACKOFF_S, RECONNECT_LOOP, ClientTracker
from tests.helpers.captures import CAPTURES, ROOT


def truth(name: str) -> dict:
    return json.loads((CAPTURES / f"{name}.truth.json").read_text())


def last_stats(doc: dict, client: str) -> dict:
    return [e for e in doc["clients"][client]["events"] if e["event"] == "closed"][-1]["stats"]


class Empty:
    """The connections that carried no request: (first, last) each."""

    def __init__(self) -> None:
        self.used: set[int] = set()
        self.ends: list[tuple[float, float]] = []
        self.connections = 0

    def event(self, ev) -> None:
        if type(ev) is Exchange and ev.request is not None:
            self.used.add(ev.conn.id)
        elif type(ev) is ConnectionEnd:
            self.connections += 1
            if ev.conn.id not in self.used:
                self.ends.append((ev.conn.ts_first, ev.conn.ts_last))


def analyse(name: str) -> tuple[dict[str, dict], Empty]:
    a = Analysis(str(CAPTURES / f"{name}.pcap"))
    tracker, empty = ClientTracker(a.knowledge.topic_ids), Empty()
    a.run(tracker, empty)
    return {r["client_id"]: r for r in tracker.rows()}, empty


def test_the_producer_writing_to_a_missing_topic_is_a_metadata_storm():
    doc = truth("client-metadata-storm")
    rows, _ = analyse("client-metadata-storm")
    bad, good = rows[doc["expect"]["storm_client"]], rows[doc["expect"]["good_client"]]
    stats = last_stats(doc, "storm-producer")
    sent = sum(b["req"].get("Metadata", 0) for b in stats["brokers"].values())
    # librdkafka's own count, bootstrap connection included (its statistics name it apart)
    assert bad["metadata_requests"] >= sent > 20
    closed = [e for e in doc["clients"]["storm-producer"]["events"] if e["event"] == "closed"][-1]
    assert closed["failed"] == {"_MSG_TIMED_OUT": 5}  # the records never found their topic
    (loop,) = bad["metadata_loops"]
    assert loop["topic"] == doc["expect"]["missing_topic"]
    assert loop["error"] == "UNKNOWN_TOPIC_OR_PARTITION"
    # every answer but the bootstrap's (asked before the producer knew the topic) names it
    assert loop["answers"] >= bad["metadata_requests"] - 2
    assert any(f.startswith("Metadata loop:") for f in bad["findings"])
    assert any(f.startswith("Metadata storm:") for f in bad["findings"])
    assert good["findings"] == [] and good["metadata_loops"] == []


def test_the_producer_whose_broker_flaps_reconnects_in_a_loop():
    doc = truth("client-reconnect-loop")
    rows, empty = analyse("client-reconnect-loop")
    (row,) = rows.values()
    assert row["client_id"] == doc["expect"]["flappy_client"]
    assert row["fast_reconnects"] >= RECONNECT_LOOP
    assert any("reconnections within" in f for f in row["findings"])
    mock = doc["clients"]["mock"]["events"]
    downs = [e["t"] for e in mock if e["event"] == "broker_down"]
    ups = [e["t"] for e in mock if e["event"] == "broker_up"]
    assert len(downs) == len(ups) == doc["expect"]["flaps"]
    # every connection the client counts as refused started while broker 1 was down (the mock
    # resets connections to a broker that is down), right after the one before it ended
    assert row["empty_connections"] == len(empty.ends) > 0
    for first, _ in empty.ends:
        assert any(d <= first <= u + NO_BACKOFF_S for d, u in zip(downs, ups, strict=True)), first
    # the only client of the capture: every connection is its own
    assert row["connections"] == empty.connections


@pytest.mark.parametrize("name", ["client-metadata-storm", "client-reconnect-loop"])
def test_clients_with_two_processes_equal_one(name):
    def run(j: str) -> str:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "analyzer",
                "clients",
                str(CAPTURES / f"{name}.pcap"),
                "--format",
                "json",
                "-j",
                j,
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        ).stdout

    assert run("2") == run("1")
