"""The built-in pack's consumer-group rules (analyzer.check.groups) on the generated group scenarios:
kafka.group-status and kafka.group-rewind against the Burrow status each group-lag consumer was
written to reach (captures/group-lag.truth.json), kafka.group-lag and kafka.group-rebalance-long
with their bounds tuned under [pack], the evidence (group, partitions, exchanges, times, coverage)
in text, JSON, JUnit and SARIF, waivers and -Y by group, -j 2, and the [pack] validation."""

import io
import json
from contextlib import redirect_stderr, redirect_stdout

import pytest

from analyzer import cli
from tests.helpers.captures import CAPTURES

LAG = CAPTURES / "group-lag.pcap"
JOINS = CAPTURES / "group-joins.pcap"
GROUP_CAPTURES = [CAPTURES / f"group-{n}.pcap" for n in ("joins", "cooperative", "kip848", "static", "lag")]
IDS = ("kafka.group-rebalance-long", "kafka.group-status", "kafka.group-rewind", "kafka.group-lag")


def check(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = cli.main(["check", *map(str, args)])
    return rc, out.getvalue(), err.getvalue()


def check_json(*args) -> tuple[int, dict]:
    rc, out, err = check(*args, "--format", "json")
    assert out, err
    return rc, json.loads(out)


def rule(doc: dict, rid: str) -> dict:
    return next(r for r in doc["rules"] if r["id"] == rid)


def rules_file(tmp_path, text: str):
    p = tmp_path / "rules.toml"
    p.write_text(text)
    return p


def test_the_group_rules_are_in_the_pack_and_pass_the_healthy_scenarios():
    rc, doc = check_json(*GROUP_CAPTURES[:4])
    for rid in IDS:
        r = rule(doc, rid)
        assert r["status"] == "passed" and r["source"] == "built-in", r
    assert rule(doc, "kafka.group-status")["severity"] == "error"
    assert rule(doc, "kafka.group-rebalance-long")["severity"] == "warning"


def test_status_and_rewind_follow_the_consumers_burrow_truth():
    truth = json.loads((CAPTURES / "group-lag.truth.json").read_text())["expect"]["burrow"]
    rc, doc = check_json(LAG)
    status, rewind = rule(doc, "kafka.group-status"), rule(doc, "kafka.group-rewind")
    assert rc == 1 and status["status"] == "failed"  # an error: the STOP consumer fails the run
    assert rewind["status"] == "warned"  # a warning
    stopped = [g for g, s in truth.items() if s in ("STOP", "STALL")]
    rewound = [g for g, s in truth.items() if s == "REWIND"]
    assert [f["message"].split(":")[0] for f in status["findings"]] == [f"group {g}" for g in stopped]
    assert [f["message"].split(":")[0] for f in rewind["findings"]] == [f"group {g}" for g in rewound]
    f = status["findings"][0]
    # the partitions, the evidence exchange (the last commit) and what the capture saw
    assert "grp-lag[0] STOP" in f["message"] and "grp-lag[2] STOP" in f["message"]
    assert f["api"] == "OffsetCommit" and f["exchange"] >= 1 and f["packets"] and f["connection"]
    assert f"last commit exchange {f['exchange']} OffsetCommit at " in f["message"]
    assert "coverage: complete for the generations seen" in f["message"]
    assert "end offsets seen for every committed partition" in f["message"]
    f = rewind["findings"][0]
    assert (
        "REWIND" in f["message"]
        and f"committed 0 after 5 at exchange {f['exchange']} OffsetCommit" in f["message"]
    )
    # WARN (g-lag-slow) is no finding of either rule
    assert "g-lag-slow" not in json.dumps(status) + json.dumps(rewind)


def test_lag_bounds_in_records_and_time(tmp_path):
    _, doc = check_json(LAG)
    assert rule(doc, "kafka.group-lag")["status"] == "passed"  # 100000 records, 60 s by default
    p = rules_file(tmp_path, '[pack]\n"kafka.group-lag" = { max_records = 16, max_time = false }\n')
    _, doc = check_json(LAG, "--rules", p)
    r = rule(doc, "kafka.group-lag")
    groups = sorted(f["message"].split(":")[0] for f in r["findings"])
    assert groups == ["group g-lag-rewind", "group g-lag-slow"] and r["status"] == "warned"
    slow = next(f for f in r["findings"] if "g-lag-slow" in f["message"])
    assert "grp-lag[1] lag 17 records > 16 at exchange " in slow["message"]
    assert "(committed 3, end offset 20)" in slow["message"] and " s > " not in slow["message"]
    assert slow["api"] == "OffsetCommit"
    p = rules_file(tmp_path, '[pack]\n"kafka.group-lag" = { max_records = false, max_time = "19s" }\n')
    _, doc = check_json(LAG, "--rules", p)
    r = rule(doc, "kafka.group-lag")
    msgs = " ".join(f["message"] for f in r["findings"])
    assert "lag 20.009 s > 19 s at the capture's end" in msgs and "records" not in msgs
    assert "g-lag-ok" not in msgs


def test_the_longest_rebalance_names_its_exchanges(tmp_path):
    p = rules_file(tmp_path, '[pack]\n"kafka.group-rebalance-long" = { max = "2.5s", severity = "error" }\n')
    rc, doc = check_json(JOINS, "--rules", p)
    r = rule(doc, "kafka.group-rebalance-long")
    assert rc == 1 and r["status"] == "failed" and r["count"] == 1
    f = r["findings"][0]
    m = f["message"]
    assert m.startswith("group g-group-joins: longest rebalance 3.002 s > 2.5 s (generation 3 -> 4, ")
    assert (
        f"from exchange {f['exchange']} JoinGroup at 6.524 s to exchange " in m
        and "SyncGroup at 9.525 s" in m
    )
    assert "cause: member joining" in m and "4 of 5 rebalances over it" in m and "coverage: complete" in m
    assert f["api"] == "JoinGroup"
    p = rules_file(tmp_path, '[pack]\n"kafka.group-rebalance-long" = { max = 3500 }\n')  # milliseconds
    _, doc = check_json(JOINS, "--rules", p)
    assert rule(doc, "kafka.group-rebalance-long")["status"] == "passed"


def test_junit_sarif_and_text_carry_the_evidence(tmp_path):
    junit, sarif = tmp_path / "c.xml", tmp_path / "c.sarif"
    rc, out, _ = check(LAG, "--junit", junit, "--sarif", sarif)
    assert rc == 1
    line = next(x for x in out.splitlines() if "group g-lag-stop" in x)
    assert (
        line.lstrip().startswith(f"{LAG}, exchange ") and "OffsetCommit corr=" in line and "packets" in line
    )
    assert "group g-lag-stop: Burrow status ERR" in junit.read_text()
    doc = json.loads(sarif.read_text())
    res = [x for x in doc["runs"][0]["results"] if x["ruleId"] == "kafka.group-status"]
    assert len(res) == 1 and "group g-lag-stop" in res[0]["message"]["text"]
    assert res[0]["properties"]["api"] == "OffsetCommit" and res[0]["locations"]
    names = {x["id"] for x in doc["runs"][0]["tool"]["driver"]["rules"]}
    assert set(IDS) <= names


def test_waivers_and_select_by_group(tmp_path):
    p = rules_file(
        tmp_path,
        '[[waiver]]\nrule = "kafka.group-status"\nwhere = \'group == "g-lag-stop"\'\n'
        'until = 2099-01-01\nreason = "the scenario"\n',
    )
    rc, doc = check_json(LAG, "--rules", p)
    assert rule(doc, "kafka.group-status")["status"] == "waived" and rc == 0
    p = rules_file(
        tmp_path,
        '[[waiver]]\nrule = "kafka.group-status"\nwhere = \'group == "g-lag-ok"\'\n'
        'until = 2099-01-01\nreason = "another group"\n',
    )
    assert check_json(LAG, "--rules", p)[0] == 1  # a waiver of another group does not waive it
    # -Y: the group rules judge the groups the selected exchanges name
    rc, doc = check_json(LAG, "-Y", 'group == "g-lag-rewind"')
    assert rule(doc, "kafka.group-status")["status"] == "passed"
    assert rule(doc, "kafka.group-rewind")["count"] == 1


def test_rules_switched_off(tmp_path):
    p = rules_file(tmp_path, '[pack]\n"kafka.group-status" = false\n"kafka.group-rewind" = false\n')
    rc, doc = check_json(LAG, "--rules", p)
    ids = {r["id"] for r in doc["rules"]}
    assert "kafka.group-status" not in ids and "kafka.group-rewind" not in ids and rc == 0


def test_same_findings_with_two_processes():
    docs = []
    for j in ("1", "2"):
        _, out, _ = check(*GROUP_CAPTURES, "-j", j, "--format", "json")
        docs.append(out)
    assert docs[0] == docs[1]
    assert "group g-lag-stop" in docs[0]


@pytest.mark.parametrize(
    "text, says",
    [
        ('"kafka.group-lag" = { max = 3 }', "unknown key 'max'"),
        ('"kafka.group-lag" = { where = "api == Fetch" }', "unknown key 'where'"),
        ('"kafka.group-lag" = { max_time = "3 weeks" }', "max_time: '3 weeks': expected a duration"),
        ('"kafka.group-lag" = { max_records = "many" }', "max_records: 'many': expected a number >= 0"),
        ('"kafka.group-lag" = { max_records = -1 }', "expected a number >= 0"),
        ('"kafka.group-lag" = { max_records = false, max_time = false }', "every bound is off"),
        ('"kafka.group-rebalance-long" = { max = true }', "expected a bound or false"),
        ('"kafka.group-status" = { max = 1 }', "unknown key 'max'"),
    ],
)
def test_bad_pack_settings_are_usage_errors(tmp_path, text, says):
    p = rules_file(tmp_path, "[pack]\n" + text + "\n")
    rc, out, err = check(LAG, "--rules", p)
    assert rc == 2 and says in err and "Traceback" not in err, err
