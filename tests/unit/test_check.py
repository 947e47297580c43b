"""kafka-analyzer check: rules over a capture, exit codes and a JUnit report CI tools read."""

import subprocess
import sys
import xml.etree.ElementTree as ET

from conftest import CAPTURES, ROOT

CAP = CAPTURES / "librdkafka-produce-consume-gzip.pcap"
TXN = CAPTURES / "librdkafka-txn.pcap"


def check(*args):
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", "check", *map(str, args)],
        capture_output=True,
        cwd=ROOT,
        timeout=120,
        text=True,
    )
    return r.returncode, r.stdout, r.stderr


def test_passing_rules_exit_0_and_write_junit(tmp_path):
    junit = tmp_path / "r.xml"
    # the mock's malformed UNSUPPORTED_VERSION answers are allowed by code
    rc, out, _ = check(
        CAP,
        "--allow",
        "decode.bad_count",
        "--latency",
        "Produce=50",
        "--expect-api",
        "Produce,Fetch",
        "--max-unanswered",
        "10",
        "--junit",
        junit,
    )
    assert rc == 0, out
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("failures") == "0" and int(suite.get("tests")) == 5
    assert {c.get("name") for c in suite} == {
        "problems",
        "unanswered",
        "latency.Produce.p99",
        "expect.Produce",
        "expect.Fetch",
    }


def test_failing_rules_exit_1_with_the_offending_exchanges(tmp_path):
    junit = tmp_path / "r.xml"
    rc, out, _ = check(
        TXN,
        "--latency",
        "Fetch=p50:0.001",
        "--forbid-error",
        "UNSUPPORTED_VERSION",
        "--expect-api",
        "DeleteTopics",
        "--junit",
        junit,
    )
    assert rc == 1
    assert "FAIL  problems" in out  # CRC-0 transaction markers and the mock's malformed answers
    assert "FAIL  latency.Fetch.p50" in out and "Fetch v16 corr=" in out
    assert "FAIL  forbidden_errors" in out and "FAIL  expect.DeleteTopics" in out
    failures = [c for c in ET.parse(junit).getroot().iter("testcase") if c.find("failure") is not None]
    assert {c.get("name") for c in failures} == {
        "problems",
        "latency.Fetch.p50",
        "forbidden_errors",
        "expect.DeleteTopics",
    }
    crc = next(c for c in failures if c.get("name") == "problems").find("failure").text
    assert "records.crc_mismatch" in crc


def test_bad_rule_is_a_usage_error():
    rc, _, err = check(CAP, "--latency", "NoSuchApi=5")
    assert rc == 2 and "unknown API" in err
