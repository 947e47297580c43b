"""Amplification captures (tests/hostile/bombs.py) through every command as a separate process:
each ends within 60 s, its peak RSS (``wait4``'s ru_maxrss of that one child) stays under 500 MB,
no traceback, and the issue that names the budget hit is in the export."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from analyzer.issues import (
    RECORDS_BAD_CONTROL_COUNT,
    RECORDS_DECOMPRESSION_BUDGET,
    RECORDS_DECOMPRESSION_LIMIT,
)
from tests.helpers.captures import ROOT
from tests.hostile.bombs import BOMBS

LIMIT_S = 60
LIMIT_RSS_MB = 500
COMMANDS = {
    "read": ["read"],
    "stats": ["stats"],
    "export": ["export", "--records", "--format", "ndjson"],
    "check": ["check"],
}


@pytest.fixture(scope="module")
def bomb_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bombs")
    out = {}
    for name, b in BOMBS.items():
        p = d / f"{name}.pcap"
        p.write_bytes(b.build())
        out[name] = p
    return out


def run_measured(args: list[str], out_path) -> tuple[int, float, float, str]:
    """(exit code, seconds, peak RSS in MB, stderr) of one command in its own process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(out_path, "wb") as out, open(str(out_path) + ".err", "wb") as err:
        t0 = time.monotonic()
        p = subprocess.Popen(
            [sys.executable, "-m", "analyzer", *args], stdout=out, stderr=err, cwd=ROOT, env=env
        )
        try:
            _, status, usage = os.wait4(p.pid, 0)  # this child's own rusage, not every child's
        except BaseException:
            p.kill()
            raise
        p.returncode = os.waitstatus_to_exitcode(status)
        elapsed = time.monotonic() - t0
    with open(str(out_path) + ".err", encoding="utf-8", errors="replace") as f:
        stderr = f.read()
    return p.returncode, elapsed, usage.ru_maxrss / 1024, stderr


def export_codes(text: str) -> set[str]:
    codes: set[str] = set()

    def walk(v):
        if isinstance(v, dict):
            if "code" in v and "severity" in v:
                codes.add(v["code"])
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    for line in text.splitlines():
        if line.strip():
            walk(json.loads(line))
    return codes


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("name", sorted(BOMBS))
def test_bomb_is_bounded(name, command, bomb_files, tmp_path):
    out = tmp_path / "out"
    rc, elapsed, rss, stderr = run_measured([*COMMANDS[command], str(bomb_files[name])], out)
    assert "Traceback" not in stderr, stderr
    assert rc in (0, 1, 3), stderr  # 3: check could conclude nothing (no Kafka exchange)
    assert elapsed < LIMIT_S, f"{name} {command}: {elapsed:.1f}s"
    assert rss < LIMIT_RSS_MB, f"{name} {command}: peak RSS {rss:.0f} MB"
    if command == "export":
        codes = export_codes(out.read_text())
        want = BOMBS[name].codes
        assert not want or codes & set(want), (want, codes)


# what read and stats (which inflate no v2 batch) and check say, from the batch headers and the
# sizes the codecs' framing declares: the same damage as export --records names by inflating
NAMED_WITHOUT_INFLATING = {
    "zstd-control-batch-of-zeros": (RECORDS_BAD_CONTROL_COUNT.code,),
    "eight-zstd-control-batches": (RECORDS_BAD_CONTROL_COUNT.code,),
    "48-partitions-of-64mib-zstd": (RECORDS_DECOMPRESSION_LIMIT.code,),
    "48-partitions-of-64mib-gzip": (RECORDS_DECOMPRESSION_LIMIT.code, RECORDS_DECOMPRESSION_BUDGET.code),
    "48-partitions-of-8mib-zstd": (RECORDS_DECOMPRESSION_BUDGET.code,),
}


@pytest.mark.parametrize("command", ["read", "stats", "check"])
@pytest.mark.parametrize("name", sorted(NAMED_WITHOUT_INFLATING))
def test_v2_bomb_is_named_without_inflating_it(name, command, bomb_files, tmp_path):
    """Without --records no v2 batch is inflated: a control batch's header names the damage (it
    holds one record, this one claims 2^31-1), and a compressed batch's codec framing declares
    the size it would inflate to, held against the limits inflating would apply."""
    out = tmp_path / "out"
    rc, _elapsed, _rss, stderr = run_measured([*COMMANDS[command], str(bomb_files[name])], out)
    assert "Traceback" not in stderr, stderr
    text = out.read_text() + stderr
    assert any(code in text for code in NAMED_WITHOUT_INFLATING[name]), text[:2000]
