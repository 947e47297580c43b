"""Every hostile capture through the command line (read, stats, export --records, check): the
issue codes it must name, the exchanges it must still find, the exit code, and never a traceback."""

from __future__ import annotations

import json
import re
import time

import pytest

from analyzer.cli import main
from tests.helpers.peak import peak_mb, reset_peak
from tests.hostile.gen import cases

CASES = cases()
# check names every damage (errors fail it, kafka.incomplete-analysis warns of what was not seen
# or decoded whole) except a concatenation: an oddity of the file, nothing is lost
NOT_DAMAGE = {"capture.concatenated"}
LIMIT_S = 60
LIMIT_RSS_MB = 500
START_MB = 80  # above a fresh kafka-analyzer process's resident memory with its modules loaded (~25 MB)
PAIRED = re.compile(r"ApiVersions v3 .* \d+/\d+B +[\d.]+ms")  # a read line with both sides


def run(capsys, *argv) -> tuple[int, str, str]:
    """One command in this process: ends within LIMIT_S, and what it adds to the process's
    resident memory at its peak, on top of a fresh process's START_MB, stays under LIMIT_RSS_MB
    (the suite's earlier tests' memory does not count); no traceback."""
    base = reset_peak()
    t0 = time.monotonic()
    rc = main([*map(str, argv)])
    elapsed = time.monotonic() - t0
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert elapsed < LIMIT_S, (argv, elapsed)
    rss = START_MB + peak_mb() - base
    assert rss < LIMIT_RSS_MB, (argv, rss)
    return rc, out, err


def named(code: str, out: str, err: str) -> bool:
    """The damage is named: its code, or (capture damage, said before any exchange is shown)
    a line of its own on stderr."""
    said = re.search(r"^kafka-analyzer: (error|warning): ", err, re.M) is not None
    return code in out + err or (code.startswith("capture.") and said)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    out = {}
    for name, case in CASES.items():
        p = d / f"{name}.pcap"
        p.write_bytes(case.data)
        out[name] = p
    return out


def issue_codes(obj) -> set[str]:
    """Codes of the issues anywhere in an exported exchange (its own, its messages')."""
    if isinstance(obj, list):
        return set().union(*map(issue_codes, obj)) if obj else set()
    if not isinstance(obj, dict):
        return set()
    out = {obj["code"]} if "code" in obj and "severity" in obj else set()
    for k in ("issues", "request", "response"):
        if k in obj:
            out |= issue_codes(obj[k])
    return out


def complete(exchanges) -> int:
    return sum(1 for e in exchanges if e.get("request") and e.get("response"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_capture(name, files, capsys, tmp_path):
    case = CASES[name]
    path = files[name]

    rc, out, err = run(capsys, "read", *case.read_args, path)
    assert rc == case.rc, err
    for word in case.says:
        assert word in err
    for code in case.codes:
        assert named(code, out, err), (code, out[-2000:], err)
    if case.exchanges is not None and case.rc != 2:
        assert len(PAIRED.findall(out)) == case.exchanges

    rc, out, err = run(capsys, "stats", "--format", "json", path)
    assert rc == case.rc, err
    for code in case.codes:
        assert named(code, out, err), (code, err)
    if case.rc != 2:
        tables = json.loads(out)
        if case.exchanges is not None:
            assert tables["capture"]["exchanges"] >= case.exchanges

    ndjson = tmp_path / "out.ndjson"
    rc, out, err = run(capsys, "export", "--records", "-o", ndjson, path)
    assert rc == case.rc, err
    lines = [json.loads(x) for x in ndjson.read_text().splitlines()] if ndjson.exists() else []
    codes = {x.get("code") for x in lines if x.get("type") in ("issue", "gap")}
    codes |= {i["code"] for x in lines if x.get("type") == "summary" for i in x.get("capture_issues", [])}
    codes |= {c for x in lines if x.get("type") == "exchange" for c in issue_codes(x)}
    if case.rc != 2:
        for code in case.codes:
            assert code in codes, (code, codes)
        if case.exchanges is not None:
            assert complete(x for x in lines if x.get("type") == "exchange") == case.exchanges

    rc, out, err = run(capsys, "check", path)
    assert rc == case.check_rc, out + err
    for code in set(case.codes) - NOT_DAMAGE:
        # inconclusive (no Kafka seen): the one line says why, in the words read uses
        if rc == 3 and case.says:
            assert all(word in out + err for word in case.says), out + err
        else:
            assert code in out + err, (code, out + err)
