"""The baseline's consumer-group dimensions (analyzer.check.baseline): what --update-baseline
records per group (rebalances, the longest, max lag in records and seconds, Burrow status), that
the same recording holds against it, and that each dimension fails when the recording is worse
than the recorded baseline (the baseline edited to a better past, or a group renamed), over one
process and -j 2; a baseline written before groups were recorded says so."""

import io
import json
from contextlib import redirect_stderr, redirect_stdout

from analyzer import cli
from analyzer.check import baseline
from tests.helpers.capture_patch import exchanges, field_position, find
from tests.helpers.captures import CAPTURES

LAG = CAPTURES / "group-lag.pcap"
STATIC = CAPTURES / "group-static.pcap"
JOINS = CAPTURES / "group-joins.pcap"
GROUP_DIMS = [d for d in baseline.DIMENSIONS if d.startswith("baseline.group")]


def check_json(*args) -> tuple[int, dict]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = cli.main(["check", *map(str, args), "--format", "json"])
    return rc, json.loads(out.getvalue())


def record(tmp_path, *captures) -> dict:
    base = tmp_path / "base.json"
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        cli.main(["check", *map(str, captures), "--baseline", str(base), "--update-baseline"])
    return json.loads(base.read_text())


def statuses(doc: dict) -> dict:
    return {r["id"]: r["status"] for r in doc["rules"] if r["id"] in GROUP_DIMS}


def test_the_baseline_records_each_group(tmp_path):
    doc = record(tmp_path, LAG, JOINS)
    g = doc["groups"]
    assert sorted(g) == ["g-group-joins", "g-lag-ok", "g-lag-rewind", "g-lag-slow", "g-lag-stop"]
    assert g["g-group-joins"] == {
        "longest_rebalance_ms": 3002.463,
        "max_lag": 0,
        "max_lag_s": 0.0,
        "rebalances": 5,
        "status": "OK",
    }
    assert g["g-lag-stop"]["status"] == "ERR" and g["g-lag-slow"]["status"] == "WARN"
    assert g["g-lag-slow"]["max_lag"] == 17
    # two processes give the same file
    other = tmp_path / "j2"
    other.mkdir()
    base = other / "base.json"
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        cli.main(["check", str(LAG), str(JOINS), "-j", "2", "--baseline", str(base), "--update-baseline"])
    assert json.loads(base.read_text()) == doc


def test_the_same_recording_holds_against_its_baseline(tmp_path):
    record(tmp_path, LAG)
    _, doc = check_json(LAG, "--baseline", tmp_path / "base.json")
    assert statuses(doc) == dict.fromkeys(GROUP_DIMS, "passed")


def test_each_group_dimension_regresses(tmp_path):
    doc = record(tmp_path, LAG, JOINS)
    g = doc["groups"]
    g["g-group-joins"].update(rebalances=2, longest_rebalance_ms=500.0)  # a better past
    g["g-lag-slow"].update(status="OK", max_lag=3, max_lag_s=1.0)
    (tmp_path / "base.json").write_text(baseline.dumps(doc))
    rc, out = check_json(LAG, JOINS, "--baseline", tmp_path / "base.json")
    assert rc == 1
    assert statuses(out) == {
        "baseline.groups": "passed",
        "baseline.group-rebalances": "failed",
        "baseline.group-rebalance-time": "failed",
        "baseline.group-lag": "failed",
        "baseline.group-status": "failed",
    }
    msgs = {r["id"]: " / ".join(f["message"] for f in r["findings"]) for r in out["rules"]}
    assert msgs["baseline.group-rebalances"] == "group g-group-joins: 5 rebalances (baseline 2, beyond +50%)"
    assert msgs["baseline.group-rebalance-time"] == (
        "group g-group-joins: longest rebalance 3.002 s (baseline 0.500 s)"
    )
    # 17 records is within the 1000-record margin of 3; 20 s is beyond 2x and +10 s of 1 s
    assert msgs["baseline.group-lag"] == "group g-lag-slow: max lag 20.009 s (baseline 1 s)"
    assert msgs["baseline.group-status"] == "group g-lag-slow: Burrow status WARN (baseline OK)"
    # the other way round: improvements are notes, nothing fails
    doc["groups"]["g-lag-slow"].update(status="ERR")
    (tmp_path / "base.json").write_text(baseline.dumps(doc))
    _, out = check_json(LAG, "--baseline", tmp_path / "base.json")
    st = next(r for r in out["rules"] if r["id"] == "baseline.group-status")
    assert st["status"] == "noted" and "WARN (baseline ERR)" in st["findings"][0]["message"]


def test_a_new_group_fails(tmp_path):
    record(tmp_path, STATIC)
    p = tmp_path / "renamed.pcap"

    def named(ex) -> bool:
        return (
            ex.request is not None
            and ex.request.body is not None
            and ex.request.body.get("group_id") == "g-group-static"
        )

    # the last character of every group id of the group (int16 or compact length alike)
    raw = bytearray(STATIC.read_bytes())
    n = 0
    for ex in exchanges(STATIC):
        if named(ex):
            f = find(ex.request.body, "group_id")
            at = field_position(bytes(raw), ex, "request", f)
            raw[at + f.length - 1] = ord("x")
            n += 1
    assert n > 10
    p.write_bytes(bytes(raw))
    rc, out = check_json(p, "--baseline", tmp_path / "base.json")
    r = next(r for r in out["rules"] if r["id"] == "baseline.groups")
    assert rc == 1 and r["status"] == "failed"
    assert [f["message"] for f in r["findings"]] == [
        "group g-group-statix: a consumer group the baseline does not have"
    ]


def test_a_baseline_without_groups_says_so(tmp_path):
    doc = record(tmp_path, LAG)
    del doc["groups"]
    (tmp_path / "base.json").write_text(baseline.dumps(doc))
    rc, out = check_json(LAG, "--baseline", tmp_path / "base.json")
    st = statuses(out)
    assert st["baseline.groups"] == "noted" and rc == 1  # (kafka.group-status: g-lag-stop)
    assert {v for k, v in st.items() if k != "baseline.groups"} == {"passed"}
    r = next(r for r in out["rules"] if r["id"] == "baseline.groups")
    assert "--update-baseline records them" in r["summary"]


def test_a_damaged_groups_section_is_a_usage_error(tmp_path):
    doc = record(tmp_path, LAG)
    doc["groups"]["g-lag-ok"] = {"rebalances": 1}
    (tmp_path / "base.json").write_text(baseline.dumps(doc))
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = cli.main(["check", str(LAG), "--baseline", str(tmp_path / "base.json")])
    assert rc == 2 and "its groups are not a kafka-analyzer baseline's" in err.getvalue()
