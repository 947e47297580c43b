"""``kafka-analyzer groups``: the timeline, lag and fetch sections of a recording, as text and
JSON, against what the recording's clients recorded (captures/manifest.json)."""

import json

from analyzer.cli import main
from tests.helpers.captures import CAPTURES

MANIFEST = {e["file"]: e for e in json.loads((CAPTURES / "manifest.json").read_text())}


def run(capsys, *args) -> tuple[int, str, str]:
    rc = main(["groups", *map(str, args)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_json_report_of_a_group_that_consumed_everything(capsys):
    name = "librdkafka-produce-consume-zstd.pcap"
    rc, out, _ = run(capsys, CAPTURES / name, "--format", "json")
    assert rc == 0
    report = json.loads(out)
    (g,) = report["groups"]
    assert g["group"] == "g-librdkafka-produce-consume-zstd" and g["protocol"] == "classic"
    (gen,) = g["generations"]
    consumed = {(r["topic"], r["partition"]) for r in MANIFEST[name]["consumed"]}
    assigned = {(t, p) for m in gen["members"] for t, ps in m["assignment"].items() for p in ps}
    assert consumed == assigned
    (reb,) = g["rebalances"]
    assert reb["generation_after"] == gen["generation"] and reb["duration_ms"] >= 0
    assert {(r["topic"], r["partition"]): r["committed_offset"] for r in g["lag"]} == {
        tp: 1 + max(r["offset"] for r in MANIFEST[name]["consumed"] if (r["topic"], r["partition"]) == tp)
        for tp in consumed
    }
    assert g["status"]["status"] == "OK"
    assert sum(c["idle_long_polls"] for c in report["fetch_clients"]) == 6


def test_text_timeline_names_the_cause_members_and_lag(capsys):
    rc, out, _ = run(capsys, CAPTURES / "tansu-kafka-python-0.10.1-group.pcap")
    assert rc == 0
    assert "group g-tansu-kafka-python-0.10.1-group (consumer, range; classic protocol)" in out
    assert "1 generation, 1 rebalance (longest" in out
    assert "cause: member joining (gen-tansu-kafka-python-0.10.1-group-consumer)" in out
    assert "kp-none[0,1,2]" in out and "kp-none[0]  lag 0  0.000 s  OK" in out


def test_what_the_capture_could_not_see_is_said(capsys):
    rc, out, _ = run(capsys, CAPTURES / "librdkafka-txn.pcap", "--group", "g-librdkafka-txn")
    assert rc == 0
    assert "coverage: partial: no generation formed in the capture" in out
    assert "no end offset seen for rdk-txn-source[0]" in out
    assert "Burrow: no judgement" in out


def test_no_group_and_bad_settings(capsys):
    rc, out, _ = run(capsys, CAPTURES / "librdkafka-acks0.pcap", "--group", "nope")
    assert rc == 0 and out.startswith("no consumer group nope in the capture")
    rc, out, _ = run(capsys, CAPTURES / "librdkafka-acks0.pcap")
    assert rc == 0 and out.startswith("no consumer group in the capture")


def test_a_group_named_keeps_its_own_fetching_clients(capsys):
    """``--group G``: the fetching clients are those G's members were; a group the capture does
    not have is named as missing, with no fetching client."""
    rc, out, _ = run(capsys, CAPTURES / "group-lag.pcap", "--group", "nosuch", "--format", "json")
    assert rc == 0 and json.loads(out)["groups"] == [] and json.loads(out)["fetch_clients"] == []
    rc, out, _ = run(capsys, CAPTURES / "group-lag.pcap", "--group", "nosuch")
    assert out.startswith("no consumer group nosuch in the capture")
    rc, out, _ = run(capsys, CAPTURES / "group-lag.pcap", "--format", "json")
    every = json.loads(out)
    for g in every["groups"]:
        rc, out, _ = run(capsys, CAPTURES / "group-lag.pcap", "--group", g["group"], "--format", "json")
        one = json.loads(out)
        ids = {m["client_id"] for gen in g["generations"] for m in gen["members"]}
        assert one["fetch_clients"] == [f for f in every["fetch_clients"] if f["client_id"] in ids]
        assert one["fetch_clients"] and len(one["fetch_clients"]) < len(every["fetch_clients"])
    rc, _, err = run(capsys, CAPTURES / "librdkafka-acks0.pcap", "--intervals", "0")
    assert rc == 2 and "--intervals is at least 1" in err
