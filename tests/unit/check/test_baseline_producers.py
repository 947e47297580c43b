"""The baseline's producer dimensions (analyzer.check.baseline): what --update-baseline records per
producer (client id and transactional id: records, retried, failed, duplicated), per transactional
id (transactions by outcome) and per (topic, group) (e2e p99); that the same recording holds
against it, over one process and -j 2; that each dimension fails when the recording is worse than
the recorded baseline (the baseline edited to a better past) and notes improvements; a baseline
written before producers were recorded says so; a damaged section is a usage error."""

import io
import json
from contextlib import redirect_stderr, redirect_stdout

from analyzer import cli
from analyzer.check import baseline
from tests.helpers.captures import CAPTURES

TXN = CAPTURES / "librdkafka-txn.pcap"
LEGACY = CAPTURES / "kafka-python-0.9-gzip.pcap"
GROUP = CAPTURES / "group-static.pcap"
DIMS = [
    d
    for d in baseline.DIMENSIONS
    if d.startswith(("baseline.producer", "baseline.transactions", "baseline.e2e"))
]
TXN_PRODUCER = "gen-librdkafka-txn | transactional id txn-librdkafka-txn"


def check_json(*args) -> tuple[int, dict]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = cli.main(["check", *map(str, args), "--format", "json"])
    return rc, json.loads(out.getvalue())


def record(path, *captures, jobs: str = "1") -> dict:
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        cli.main(["check", *map(str, captures), "-j", jobs, "--baseline", str(path), "--update-baseline"])
    return json.loads(path.read_text())


def statuses(doc: dict) -> dict:
    return {r["id"]: r["status"] for r in doc["rules"] if r["id"] in DIMS}


def messages(doc: dict) -> dict:
    return {r["id"]: " / ".join(f["message"] for f in r["findings"]) for r in doc["rules"] if r["id"] in DIMS}


def test_the_baseline_records_producers_transactions_and_latency(tmp_path):
    doc = record(tmp_path / "base.json", TXN, LEGACY, GROUP)
    p = doc["producers"]
    assert p[TXN_PRODUCER] == {"duplicated": 0, "failed": 0, "records": 9, "retried": 0}
    assert p["gen-kafka-python-0.9-gzip"] == {"duplicated": 0, "failed": 6, "records": 6, "retried": 0}
    assert not any(k[:1].isdigit() for k in p)  # no producer ids in the names
    assert doc["transactions"] == {
        "txn-librdkafka-txn": {"abort": 1, "commit": 2, "failed": 0, "hanging": 0, "open": 0}
    }
    e2e = doc["e2e"]
    assert "grp-static | g-group-static" in e2e and all(set(v) == {"p99_ms"} for v in e2e.values())
    # two processes give the same file
    assert record(tmp_path / "j2.json", TXN, LEGACY, GROUP, jobs="2") == doc


def test_the_same_recording_holds_against_its_baseline(tmp_path):
    record(tmp_path / "base.json", TXN, GROUP)
    _, doc = check_json(TXN, GROUP, "--baseline", tmp_path / "base.json")
    assert statuses(doc) == dict.fromkeys(DIMS, "passed")


def test_each_producer_dimension_regresses(tmp_path):
    base = tmp_path / "base.json"
    doc = record(base, TXN, LEGACY, GROUP)
    doc["producers"][TXN_PRODUCER].update(records=3)  # a better (or other) past
    doc["producers"]["gen-kafka-python-0.9-gzip"].update(failed=0)
    doc["transactions"]["txn-librdkafka-txn"].update(commit=8)
    key = "grp-static | g-group-static"
    doc["e2e"][key]["p99_ms"] = 1.0
    base.write_text(baseline.dumps(doc))
    rc, out = check_json(TXN, LEGACY, GROUP, "--baseline", base)
    assert rc == 1
    st = statuses(out)
    assert {k for k, v in st.items() if v == "failed"} == {
        "baseline.producer-records",
        "baseline.producer-lost",
        "baseline.transactions",
        "baseline.e2e-latency",
    }
    msgs = messages(out)
    assert (
        msgs["baseline.producer-records"] == f"producer {TXN_PRODUCER}: 9 records (baseline 3, beyond +-50%)"
    )
    assert msgs["baseline.producer-lost"] == (
        "producer gen-kafka-python-0.9-gzip: 6 records lost (last attempt failed) (baseline 0)"
    )
    assert msgs["baseline.transactions"] == (
        "transactional id txn-librdkafka-txn: 2 commits (baseline 8, beyond +-50%)"
    )
    assert msgs["baseline.e2e-latency"].startswith(f"topic | group {key}: e2e p99 ")
    # the other way round: fewer lost records, retries and duplicates are notes
    doc = record(base, TXN, LEGACY, GROUP)
    doc["producers"]["gen-kafka-python-0.9-gzip"].update(failed=9, retried=4, duplicated=2)
    base.write_text(baseline.dumps(doc))
    rc, out = check_json(TXN, LEGACY, GROUP, "--baseline", base)
    st = statuses(out)
    assert st["baseline.producer-lost"] == st["baseline.producer-retries"] == "noted"
    assert st["baseline.producer-duplicates"] == "noted"


def test_new_producers_hanging_and_failed_transactions_fail(tmp_path):
    base = tmp_path / "base.json"
    doc = record(base, TXN, LEGACY)
    del doc["producers"]["gen-kafka-python-0.9-gzip"]
    doc["producers"]["gen-gone"] = {"records": 1, "retried": 0, "failed": 0, "duplicated": 0}
    doc["transactions"]["txn-librdkafka-txn"].update(hanging=0, failed=0)
    base.write_text(baseline.dumps(doc))
    _, out = check_json(TXN, LEGACY, "--baseline", base)
    r = next(r for r in out["rules"] if r["id"] == "baseline.producers")
    assert r["status"] == "failed"
    assert [f["message"] for f in r["findings"]] == [
        "producer gen-kafka-python-0.9-gzip: a producer the baseline does not have"
    ]
    # a capture with a transaction more hanging than the baseline's
    cur = json.loads(base.read_text())
    cur["transactions"]["txn-librdkafka-txn"]["hanging"] = 1
    diffs = baseline.compare(doc, cur)
    assert [d.message for d in diffs if d.rule == "baseline.transactions"] == [
        "1 transactions hanging (baseline 0)"
    ]


def test_a_baseline_without_producers_says_so(tmp_path):
    base = tmp_path / "base.json"
    doc = record(base, TXN)
    for k in ("producers", "transactions", "e2e"):
        del doc[k]
    base.write_text(baseline.dumps(doc))
    rc, out = check_json(TXN, "--baseline", base)
    st = statuses(out)
    assert st["baseline.producers"] == "noted" and rc == 0
    assert {v for k, v in st.items() if k != "baseline.producers"} == {"passed"}
    r = next(r for r in out["rules"] if r["id"] == "baseline.producers")
    assert "--update-baseline records them" in r["summary"]


def test_a_damaged_producers_section_is_a_usage_error(tmp_path):
    base = tmp_path / "base.json"
    doc = record(base, TXN)
    doc["producers"][TXN_PRODUCER] = {"records": "many"}
    base.write_text(baseline.dumps(doc))
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = cli.main(["check", str(TXN), "--baseline", str(base)])
    assert rc == 2 and "its producers are not a kafka-analyzer baseline's" in err.getvalue()


def test_records_written_twice_and_retried_regress(tmp_path):
    from tests.helpers.producer_patch import resend_batch

    base = tmp_path / "base.json"
    doc = record(base, TXN)
    resent = resend_batch(TXN, tmp_path / "resent.pcap")
    _, out = check_json(resent, "--baseline", base)
    st = statuses(out)
    assert st["baseline.producer-duplicates"] == "failed"
    assert messages(out)["baseline.producer-duplicates"] == (
        f"producer {TXN_PRODUCER}: 1 records written twice (baseline 0)"
    )
    assert st["baseline.producer-retries"] == "passed"  # 1 record: within the +10 records margin
    cur = json.loads(json.dumps(doc))
    cur["producers"][TXN_PRODUCER]["retried"] = 11
    diffs = [d for d in baseline.compare(doc, cur) if d.rule == "baseline.producer-retries"]
    assert [(d.severity, d.message) for d in diffs] == [("error", "11 records retried (baseline 0)")]
