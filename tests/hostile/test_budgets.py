"""Amplification captures (tests/hostile/bombs.py) through every command as a separate process:
each ends within 60 s of CPU, its peak RSS (that one child's own VmHWM) stays under
500 MB, no traceback, the issue that names the budget hit is in the export, and every command names the
damage (read and stats, which inflate no v2 batch, from the batch headers and the sizes the
codecs declare)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest

from tests.helpers.captures import ROOT
from tests.helpers.peak import child_argv, read_child_mb
from tests.hostile.bombs import BOMBS

LIMIT_S = 60  # CPU seconds
HANG_S = 300  # wall seconds: a hang, whatever the load
LIMIT_RSS_MB = 500
COMMANDS = {
    "read": ["read"],
    "stats": ["stats"],
    "export": ["export", "--records", "--format", "ndjson"],
    "check": ["check"],
}


class _BombFiles(dict):
    """Each bomb written once, when a test first asks for it: a session fixture, so the module's
    tests are not one xdist group (tests/conftest.py); the tests of one bomb are its own group
    (``_by_bomb``), so the groups spread over the workers and each bomb is built once."""

    def __init__(self, d):
        super().__init__()
        self.dir = d

    def __missing__(self, name):
        p = self[name] = self.dir / f"{name}.pcap"
        p.write_bytes(BOMBS[name].build())
        return p


def _by_bomb(names):
    return [pytest.param(n, marks=pytest.mark.xdist_group(f"bomb-{n}")) for n in names]


@pytest.fixture(scope="session")
def bomb_files(tmp_path_factory):
    return _BombFiles(tmp_path_factory.mktemp("bombs"))


def run_measured(args: list[str], out_path) -> tuple[int, float, float, str]:
    """(exit code, CPU seconds, peak RSS in MB, stderr) of one command in its own process.
    CPU time (user + system, ``wait4``'s rusage of that one child): on a shared machine other
    processes do not count; a command still running after HANG_S of wall time is killed."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(out_path, "wb") as out, open(str(out_path) + ".err", "wb") as err:
        hwm = str(out_path) + ".hwm"  # its own VmHWM: ru_maxrss would count pytest's RSS at the fork
        p = subprocess.Popen(child_argv(hwm, args), stdout=out, stderr=err, cwd=ROOT, env=env)
        watchdog = threading.Timer(HANG_S, p.kill)
        watchdog.start()
        try:
            _, status, usage = os.wait4(p.pid, 0)  # this child's own rusage, not every child's
        except BaseException:
            p.kill()
            raise
        finally:
            watchdog.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
    with open(str(out_path) + ".err", encoding="utf-8", errors="replace") as f:
        stderr = f.read()
    assert p.returncode != -9, f"{args}: still running after {HANG_S} s"
    return p.returncode, usage.ru_utime + usage.ru_stime, read_child_mb(hwm), stderr


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
@pytest.mark.parametrize("name", _by_bomb(sorted(BOMBS)))
def test_bomb_is_bounded(name, command, bomb_files, tmp_path):
    out = tmp_path / "out"
    rc, cpu, rss, stderr = run_measured([*COMMANDS[command], str(bomb_files[name])], out)
    assert "Traceback" not in stderr, stderr
    assert rc in (0, 1, 3), stderr  # 3: check could conclude nothing (no Kafka exchange)
    assert cpu < LIMIT_S, f"{name} {command}: {cpu:.1f} s of CPU"
    assert rss < LIMIT_RSS_MB, f"{name} {command}: peak RSS {rss:.0f} MB"
    text = out.read_text() + stderr
    if command == "export":
        codes = export_codes(out.read_text())
        want = BOMBS[name].codes
        assert not want or codes & set(want), (want, codes)
    named = BOMBS[name].named
    assert BOMBS[name].shows in text, (BOMBS[name].shows, text[-3000:])
    if named:
        assert any(word in text for word in named), (named, text[-3000:])
    else:  # nothing damaged: the exchange is there (check: nothing found), no warning, no error
        assert rc == 0 and (" 0 failed\n" if command == "check" else "Metadata") in text, text[-3000:]


TUI_BOMBS = sorted(n for n, b in BOMBS.items() if "decode.element_limit" in b.codes and b.shows)


@pytest.mark.parametrize("name", _by_bomb(TUI_BOMBS))
def test_bomb_is_bounded_in_the_tui(name, bomb_files, tmp_path):
    """The same huge arrays through the TUI (headless, textual's Pilot, in its own process): the
    exchange is listed and opened (field tree, hex), its issue names the budget, the issues view
    counts it, and the process's peak RSS stays under the limit."""
    out = tmp_path / "out"
    script = str(ROOT / "tests" / "helpers" / "tui_child.py")
    hwm = str(out) + ".hwm"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run(
        [sys.executable, script, hwm, str(bomb_files[name])],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=HANG_S,
    )
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got["exchanges"] == 1 and got["exit"] == 0, got
    assert got["codes"].count("decode.element_limit") == 1, got
    assert "1 occurrences" in got["issues_view"], got
    rss = read_child_mb(hwm)
    assert rss < LIMIT_RSS_MB, f"{name} tui: peak RSS {rss:.0f} MB"
