"""``check -Y EXPR`` chooses the exchanges the rules look at; ``--assert EXPR`` must hold for
every selected exchange, and each exchange that breaks it is listed."""

import xml.etree.ElementTree as ET

from conftest import CAPTURES

from analyzer import cli
from analyzer.dissect.message import Options
from analyzer.model import Exchange
from analyzer.pipeline import Analysis

GZIP = CAPTURES / "librdkafka-produce-consume-gzip.pcap"


def _exchanges(path):
    return [ev for ev in Analysis(path, Options(records_bodies=True)).events() if type(ev) is Exchange]


def _check(capsys, *argv):
    capsys.readouterr()
    rc = cli.main(["check", str(GZIP), *map(str, argv)])
    return rc, capsys.readouterr()


def test_assert_lists_every_failing_exchange(capsys, tmp_path):
    exs = _exchanges(GZIP)
    fetch = [e for e in exs if e.api_key == 1]
    # unanswered ones have no latency: "latency < 100ms" does not hold for them either
    slow = [e for e in fetch if not (e.latency is not None and e.latency < 0.1)]
    assert 0 < len(slow) < len(fetch)
    junit = tmp_path / "r.xml"
    rc, out = _check(
        capsys,
        "--allow",
        "decode.bad_count",
        "-Y",
        "api == Fetch",
        "--assert",
        "latency < 100ms",
        "--assert",
        "not error",
        "--junit",
        junit,
    )
    assert rc == 1
    lines = out.out.splitlines()
    head = [x for x in lines if "assert: latency < 100ms" in x]
    assert head == [
        f"FAIL  assert: latency < 100ms: {len(slow)} of {len(fetch)} exchanges do not satisfy latency < 100ms"
    ]
    listed = lines[lines.index(head[0]) + 1 : lines.index(head[0]) + 1 + len(slow)]
    assert sorted(x.split()[2] for x in listed) == sorted(f"corr={e.correlation_id}" for e in slow)
    assert all(x.strip().startswith("Fetch v") for x in listed)
    assert f"PASS  assert: not error: 0 of {len(fetch)} exchanges" in out.out
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert cases["assert: latency < 100ms"].find("failure") is not None
    assert cases["assert: not error"].find("failure") is None


def test_select_limits_the_rules(capsys):
    exs = _exchanges(GZIP)
    # the UNSUPPORTED_VERSION answers are ApiVersions exchanges: out of the selection, no failure
    assert any(35 in (e.response.errors if e.response else []) for e in exs)
    rc, out = _check(capsys, "--allow", "decode.bad_count", "--max-kafka-errors", "0")
    assert rc == 1 and "FAIL  kafka_errors" in out.out
    rc, out = _check(
        capsys, "--allow", "decode.bad_count", "--max-kafka-errors", "0", "-Y", "not api == ApiVersions"
    )
    assert rc == 0 and "PASS  kafka_errors: 0 responses" in out.out
    # record bodies are decoded when an assertion needs them
    rc, out = _check(
        capsys, "--allow", "decode.bad_count", "-Y", "api == Produce", "--assert", 'records.key contains "k-"'
    )
    assert rc == 0 and "PASS  assert: records.key" in out.out


def test_bad_assert_is_a_usage_error(capsys):
    rc, out = _check(capsys, "--assert", "latency <")
    assert rc == 2 and "bad display filter" in out.err and "expected a value" in out.err
