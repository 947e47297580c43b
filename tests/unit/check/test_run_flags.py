"""check's flags are shorthands for rules: -Y chooses the exchanges the exchange rules look at,
--assert must hold for each of them (every one that breaks it listed), --latency, --forbid-error,
--max-kafka-errors, --max-unanswered and --expect-api bound aggregates; bad ones exit 2."""

import io
import json
import xml.etree.ElementTree as ET
from contextlib import redirect_stderr, redirect_stdout

from analyzer import cli
from analyzer.dissect.message import Options
from analyzer.model import Exchange
from analyzer.pipeline import Analysis
from tests.helpers.captures import CAPTURES

GZIP = CAPTURES / "librdkafka-produce-consume-gzip.pcap"
TXN = CAPTURES / "librdkafka-txn.pcap"


def exchanges(path):
    return [ev for ev in Analysis(path, Options(records_bodies=True)).events() if type(ev) is Exchange]


def check(*argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = cli.main(["check", *map(str, argv)])
    return rc, out.getvalue(), err.getvalue()


def rules(out: str) -> dict:
    return {r["id"]: r for r in json.loads(out)["rules"]}


def test_assert_lists_every_failing_exchange(tmp_path):
    fetch = [e for e in exchanges(GZIP) if e.api_key == 1]
    # unanswered ones have no latency: "latency < 100ms" does not hold for them either
    slow = [e for e in fetch if not (e.latency is not None and e.latency < 0.1)]
    assert 0 < len(slow) < len(fetch)
    junit = tmp_path / "r.xml"
    args = (GZIP, "-Y", "api == Fetch", "--assert", "latency < 100ms", "--assert", "not error")
    rc, out, _ = check(*args, "--junit", junit, "--format", "json")
    r = rules(out)
    assert rc == 1 and r["assert-1"]["status"] == "failed" and r["assert-1"]["count"] == len(slow)
    assert sorted(f["correlation_id"] for f in r["assert-1"]["findings"]) == sorted(
        e.correlation_id for e in slow
    )
    assert all(f["api"] == "Fetch" for f in r["assert-1"]["findings"])
    assert r["assert-2"]["status"] == "passed"
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert cases["assert-1"].find("failure") is not None and cases["assert-2"].find("failure") is None
    rc, text, _ = check(*args)
    assert "FAIL  assert-1 (error): " in text and "not latency < 100ms" in text


def test_select_limits_the_exchange_rules():
    exs = exchanges(GZIP)
    assert any(35 in (e.response.errors if e.response else []) for e in exs)  # ApiVersions fallback
    rc, out, _ = check(GZIP, "--forbid-error", "UNSUPPORTED_VERSION", "--format", "json")
    assert rules(out)["forbidden-errors"]["status"] == "failed"
    rc, out, _ = check(
        GZIP, "--forbid-error", "UNSUPPORTED_VERSION", "-Y", "not api == ApiVersions", "--format", "json"
    )
    assert rules(out)["forbidden-errors"]["status"] == "passed"
    # record bodies are decoded when an assertion needs them
    rc, out, _ = check(
        GZIP, "-Y", "api == Produce", "--assert", 'records.key contains "k-"', "--format", "json"
    )
    assert rules(out)["assert-1"]["status"] == "passed"


def test_aggregate_flags(tmp_path):
    rc, out, _ = check(
        TXN,
        "--latency",
        "Fetch=p50:0.001",
        "--expect-api",
        "DeleteTopics,Produce",
        "--max-kafka-errors",
        "0",
        "--max-unanswered",
        "100",
        "--format",
        "json",
    )
    r = rules(out)
    assert rc == 1
    assert r["latency-1"]["status"] == "failed" and r["latency-1"]["value"] > 0.001
    assert r["expect-DeleteTopics"]["status"] == "failed" and r["expect-Produce"]["status"] == "passed"
    assert r["kafka-errors"]["status"] == "failed" and r["unanswered"]["status"] == "passed"


def test_bad_flags_are_configuration_errors():
    rc, _, err = check(GZIP, "--latency", "NoSuchApi=5")
    assert rc == 2 and "NoSuchApi" in err
    rc, _, err = check(GZIP, "--assert", "latency <")
    assert rc == 2 and "--assert latency <" in err and "expected a value" in err
    rc, _, err = check(GZIP, "-Y", "api == Fetch and")
    assert rc == 2 and "-Y" in err
