"""The baseline's client-health dimensions (analyzer.check.baseline, from ClientTracker's rows):
what --update-baseline records per client (client id and software: readiness for the target,
Metadata rate, connections and fast reconnections, throttled time), that the same recording
holds against it, and that each dimension fails for exactly the client whose traffic changed: a
legacy client's requests renamed to a ready client's id (readiness), a Produce answer throttled
(throttling), and a baseline written from the first packets of the reconnect-loop and
Metadata-storm scenarios against the whole recordings (connections, Metadata rate); one process
and -j 2 write the same file; a baseline written before clients' health was recorded says so."""

import io
import json
import struct
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from analyzer import cli
from analyzer.check import baseline
from analyzer.dissect.constants import ApiKey
from tests.helpers.capture_patch import exchanges, patch_field, patch_frame, records
from tests.helpers.captures import CAPTURES

KP011 = CAPTURES / "kafka-python-0.11-lz4.pcap"
KP09 = CAPTURES / "kafka-python-0.9-none.pcap"
GZIP = CAPTURES / "librdkafka-produce-consume-gzip.pcap"
LOOP = CAPTURES / "client-reconnect-loop.pcap"
STORM = CAPTURES / "client-metadata-storm.pcap"
RDKAFKA = "confluent-kafka-python 2.16.1-rdkafka-2.16.0"
CLIENT_DIMS = [d for d in baseline.DIMENSIONS if d.startswith("baseline.client-")]


def check_json(*args) -> tuple[int, dict]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = cli.main(["check", *map(str, args), "--format", "json"])
    return rc, json.loads(out.getvalue())


def record(base: Path, *captures, jobs: int = 1) -> dict:
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        cli.main(
            ["check", *map(str, captures), "-j", str(jobs), "--baseline", str(base), "--update-baseline"]
        )
    return json.loads(base.read_text())


def flagged(doc: dict) -> dict[str, tuple[str, list[str]]]:
    """Each client dimension's status and its findings' messages."""
    return {
        r["id"]: (r["status"], [f["message"] for f in r["findings"]])
        for r in doc["rules"]
        if r["id"] in CLIENT_DIMS
    }


def prefix(src: Path, out: Path, packets: int) -> Path:
    """``src``'s first ``packets`` packets (a recording stopped early)."""
    raw = src.read_bytes()
    recs = records(raw)
    out.write_bytes(raw[: recs[packets][0]] if packets < len(recs) else raw)
    return out


def test_the_baseline_records_each_clients_health(tmp_path):
    doc = record(tmp_path / "base.json", KP09, LOOP)
    h = doc["client_health"]
    assert sorted(h) == [
        f"gen-client-reconnect-loop-flappy-producer | {RDKAFKA}",
        "gen-kafka-python-0.9-none",
        "gen-kafka-python-0.9-none-consumer",
    ]
    assert h["gen-kafka-python-0.9-none-consumer"] == {
        "connections": 5,
        "fast_reconnects": 0,
        "metadata_rate": 2.0,
        "old_formats": 6,
        "removed_versions": {"Fetch": [1], "ListOffsets": [0]},
        "target": "4.2",
        "throttle_ms": 0,
    }
    flappy = h[f"gen-client-reconnect-loop-flappy-producer | {RDKAFKA}"]
    assert (flappy["connections"], flappy["fast_reconnects"], flappy["removed_versions"]) == (119, 111, {})
    # the keys are those of the clients' profiles (no address, no port)
    assert set(h) == set(doc["clients"])
    (tmp_path / "j2").mkdir()
    assert record(tmp_path / "j2" / "base.json", KP09, LOOP, jobs=2) == doc


def test_the_same_recording_holds_against_its_baseline(tmp_path):
    record(tmp_path / "base.json", KP09, LOOP)
    _, doc = check_json(KP09, LOOP, "--baseline", tmp_path / "base.json")
    assert flagged(doc) == dict.fromkeys(CLIENT_DIMS, ("passed", []))


def test_a_client_that_newly_uses_what_kafka_4_refuses_regresses(tmp_path):
    """kafka-python 0.9's producer (Produce v1, magic 0/1) renamed to kafka-python 0.11's (ready),
    whose id has the same length: that client now uses what 4.x refuses; no other is flagged."""
    base = tmp_path / "base.json"
    record(base, KP011, KP09)
    renamed = tmp_path / "renamed.pcap"
    old, new = "gen-kafka-python-0.9-none", "gen-kafka-python-0.11-lz4"
    n = patch_frame(KP09, renamed, lambda ex: ex.client_id == old, "request", 10, new.encode(), count=1000)
    assert n == sum(1 for ex in exchanges(KP09) if ex.client_id == old) > 0
    rc, doc = check_json(KP011, renamed, "--baseline", base)
    got = flagged(doc)
    assert rc == 1
    assert got["baseline.client-readiness"] == (
        "failed",
        [
            f"{new}: now uses what Kafka 4.2 refuses (KIP-896): Produce v1",
            f"{new}: now sends or is sent 6 record batches in the old formats",
        ],
    )
    assert {k: v for k, v in got.items() if k != "baseline.client-readiness"} == dict.fromkeys(
        CLIENT_DIMS[1:], ("passed", [])
    )
    # the other way round: the renamed client no longer uses them (a note, with the errors'
    # list when one fails), and kafka-python 0.9's producer, new to that baseline, is not ready
    record(tmp_path / "b2.json", KP011, renamed)
    _, doc = check_json(KP011, KP09, "--baseline", tmp_path / "b2.json")
    r = next(r for r in doc["rules"] if r["id"] == "baseline.client-readiness")
    assert r["status"] == "failed" and [f["message"] for f in r["findings"]] == [
        f"{old}: a client the baseline does not have uses what Kafka 4.2 refuses: Produce v1; "
        "6 record batches in the old formats (magic 0/1)"
    ]
    diffs = baseline.compare(json.loads((tmp_path / "b2.json").read_text()), json.loads(base.read_text()))
    assert [d.message for d in diffs if d.client == new and d.rule == "baseline.client-readiness"] == [
        "no longer uses what Kafka 4.2 refuses (KIP-896): Produce v1",
        "no longer uses the old record formats",
    ]


def test_a_throttled_client_regresses(tmp_path):
    base = tmp_path / "base.json"
    record(base, GZIP)
    throttled = tmp_path / "throttled.pcap"
    sel = lambda ex: ex.api_key == ApiKey.PRODUCE  # noqa: E731
    assert patch_field(GZIP, throttled, sel, "response", "throttle_time_ms", struct.pack(">i", 250)) == 1
    rc, doc = check_json(throttled, "--baseline", base)
    got = flagged(doc)
    assert got["baseline.client-throttle"] == (
        "failed",
        [f"gen-librdkafka-produce-consume-gzip | {RDKAFKA}: throttled 250 ms (baseline 0 ms)"],
    )
    assert {k: v[0] for k, v in got.items()} == {
        "baseline.client-readiness": "passed",
        "baseline.client-metadata-rate": "passed",
        "baseline.client-connections": "passed",
        "baseline.client-throttle": "failed",
    }


def test_a_reconnect_loop_and_a_metadata_storm_regress(tmp_path):
    """Baselines written from the scenarios' first packets (before the broker flaps, before the
    producer asks again and again) against the whole recordings: the flappy producer's connections
    and the storm producer's Metadata rate fail, the well-behaved producer is not flagged."""
    storm_ex = [
        ex for ex in exchanges(STORM) if ex.api_key == ApiKey.METADATA and "storm" in (ex.client_id or "")
    ]
    cut_storm = max(storm_ex[1].response.frame.packet_indexes) + 1
    loop_ex = [ex for ex in exchanges(LOOP) if ex.api_key == ApiKey.PRODUCE]
    cut_loop = max(loop_ex[0].response.frame.packet_indexes) + 1
    base = tmp_path / "base.json"
    doc = record(
        base,
        prefix(LOOP, tmp_path / "loop-start.pcap", cut_loop),
        prefix(STORM, tmp_path / "storm-start.pcap", cut_storm),
    )
    flappy = f"gen-client-reconnect-loop-flappy-producer | {RDKAFKA}"
    stormy = f"gen-client-metadata-storm-storm-producer | {RDKAFKA}"
    assert doc["client_health"][flappy]["connections"] < 5
    assert doc["client_health"][stormy]["metadata_rate"] <= 2.0
    rc, out = check_json(LOOP, STORM, "--baseline", base)
    got = flagged(out)
    assert rc == 1
    status, msgs = got["baseline.client-connections"]
    x = doc["client_health"][flappy]
    assert status == "failed" and msgs == [
        f"{flappy}: 119 connections (baseline {x['connections']}, beyond +50%)",
        f"{flappy}: 111 reconnections without backoff (baseline {x['fast_reconnects']})",
    ]
    y = doc["client_health"][stormy]["metadata_rate"]
    assert got["baseline.client-metadata-rate"] == (
        "failed",
        [f"{stormy}: 11.157 Metadata requests/s (baseline {y:g}/s)"],
    )
    assert got["baseline.client-readiness"][0] == got["baseline.client-throttle"][0] == "passed"


def test_a_baseline_without_client_health_says_so(tmp_path):
    base = tmp_path / "base.json"
    doc = record(base, KP09)
    del doc["client_health"]
    base.write_text(baseline.dumps(doc))
    _, out = check_json(KP09, "--baseline", base)
    got = flagged(out)
    assert got["baseline.client-readiness"][0] == "noted"
    assert "--update-baseline records it" in got["baseline.client-readiness"][1][0]
    assert {v[0] for k, v in got.items() if k != "baseline.client-readiness"} == {"passed"}


def test_a_damaged_client_health_section_is_a_usage_error(tmp_path):
    base = tmp_path / "base.json"
    doc = record(base, KP09)
    doc["client_health"]["gen-kafka-python-0.9-none"]["connections"] = "many"
    base.write_text(baseline.dumps(doc))
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        rc = cli.main(["check", str(KP09), "--baseline", str(base)])
    assert rc == 2 and "its client_health is not a kafka-analyzer baseline's" in err.getvalue()
