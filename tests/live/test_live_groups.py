"""`live` shows the consumer groups as they happen: group-joins.pcap and group-lag.pcap replayed at
their original speed (tcpreplay) over a veth pair in a network namespace of the module's own,
sniffed by `live` with one worker and with two (``--mode read`` and ``--mode export``) and by
tcpdump. The rebalance lines and the last status of each group equal what the offline `groups`
finds in tcpdump's recording of the same replay; the export's generation, rebalance and lag
objects and each group's last consumer_status equal the offline `export`'s; a rebalance's line
comes while the replay runs, not at its end. Every process stops by itself (--duration,
timeout)."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from analyzer.cli.live_feed import rebalance_line
from tests.helpers.captures import CAPTURES, ROOT
from tests.helpers.netns import isolated

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(os.geteuid() != 0, reason="live capture needs root"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="AF_PACKET is Linux only"),
    pytest.mark.skipif(shutil.which("tcpreplay") is None, reason="needs tcpreplay"),
    pytest.mark.skipif(shutil.which("tcpdump") is None, reason="needs tcpdump"),
]

SENDER, SNIFFED = "kla-va", "kla-vb"
LIMIT = 120  # seconds any process of a test may run


@pytest.fixture(scope="module")
def veth():
    """A veth pair in the module's namespace: tcpreplay sends on one end, the sniffers read the
    other (its own traffic: none but the replay, and IPv6 off so no neighbour discovery)."""
    with isolated("groups") as ns:
        assert ns is not None
        subprocess.run(["ip", "link", "add", SENDER, "type", "veth", "peer", "name", SNIFFED], check=True)
        for dev in (SENDER, SNIFFED):
            subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1"], check=False)
            subprocess.run(["ip", "link", "set", dev, "up"], check=True)
        yield ns


def wait_for(path, proc, text: bytes, timeout: float) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if text in path.read_bytes():
            return
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise AssertionError(f"never saw {text!r}; stderr: {path.read_bytes().decode(errors='replace')}")


def start(tmp_path, name: str, argv: list[str], ready: bytes):
    out, err = tmp_path / f"{name}.out", tmp_path / f"{name}.err"
    with open(out, "wb") as fout, open(err, "wb") as ferr:
        proc = subprocess.Popen(argv, stdout=fout, stderr=ferr, cwd=ROOT)
    return proc, out, err, ready


def stop(proc) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise


def offline(command: list[str]) -> bytes:
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", *command], capture_output=True, cwd=ROOT, timeout=300
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


def statuses_of(lines: list[str]) -> dict[str, tuple]:
    """Each group's last status line: (group status, ((partition, status), ...))."""
    out = {}
    for line in lines:
        m = re.search(r"  group (\S+)  status (\w+) \(windows complete \d+%\): (.*)$", line)
        if m:
            out[m[1]] = (m[2], tuple(re.findall(r"(\S+\[\d+\]) (\w+) lag", m[3])))
    return out


@pytest.mark.parametrize("capture", ["group-joins", "group-lag"])
def test_live_groups_as_they_happen(veth, tmp_path, capture):
    pcap = CAPTURES / f"{capture}.pcap"
    recorded = tmp_path / "tcpdump.pcap"
    live = [sys.executable, "-m", "analyzer", "live", "-i", SNIFFED, "-f", "tcp", "--duration", str(LIMIT)]
    runs = {}
    procs = [
        start(
            tmp_path,
            "tcpdump",
            ["timeout", str(LIMIT), "tcpdump", "-i", SNIFFED, "-n", "-U", "--time-stamp-precision=nano"]
            + ["-w", str(recorded), "tcp"],
            b"listening on",
        )
    ]
    for w in (1, 2):
        runs[("read", w)] = start(
            tmp_path, f"read{w}", [*live, "--workers", str(w), "--absolute"], b"capturing"
        )
        runs[("export", w)] = start(
            tmp_path,
            f"export{w}",
            [*live, "--workers", str(w), "--mode", "export", "--no-spans"],
            b"capturing",
        )
    procs += list(runs.values())
    seen_during: dict[int, bool] = {}
    try:
        for proc, _, err, ready in procs:
            wait_for(err, proc, ready, 60)
        time.sleep(0.5)  # the fanout workers' rings are open once the parent says so; settle
        replay = subprocess.Popen(
            ["timeout", str(LIMIT), "tcpreplay", "-i", SENDER, str(pcap)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        while replay.poll() is None:  # a rebalance's line while the replay still runs
            for w in (1, 2):
                if not seen_during.get(w):
                    seen_during[w] = b"rebalance ended" in runs[("read", w)][1].read_bytes()
            time.sleep(0.1)
        assert replay.returncode == 0, replay.stderr.read() if replay.stderr else ""
        time.sleep(1.5)  # the last packets through every worker
    finally:
        rcs = [stop(p[0]) for p in procs]
    assert all(rc in (0, 124) for rc in rcs[1:]), [p[2].read_text() for p in procs]
    assert seen_during == {1: True, 2: True}

    report = json.loads(offline(["groups", str(recorded), "--format", "json"]))
    exported = [json.loads(x) for x in offline(["export", str(recorded), "--no-spans"]).splitlines()]
    rebalances = [r for g in report["groups"] for r in g["rebalances"]]
    assert rebalances, "the replay's recording shows no rebalance"
    expected = sorted(rebalance_line(r, None, True) for r in rebalances)
    final = {
        g["group"]: (
            g["status"]["status"],
            tuple((f"{p['topic']}[{p['partition']}]", p["status"]) for p in g["status"]["partitions"]),
        )
        for g in report["groups"]
        if g["status"] is not None and g["status"]["partitions"]
    }
    assert final
    for w in (1, 2):
        lines = runs[("read", w)][1].read_text().splitlines()
        ended = sorted(x for x in lines if "  rebalance ended " in x or "  rebalance unfinished " in x)
        assert ended == expected, w
        started = [x for x in lines if "  rebalance started " in x]
        assert 0 < len(started) <= len(rebalances)
        assert statuses_of(lines) == final, w

        objs = [json.loads(x) for x in runs[("export", w)][1].read_bytes().splitlines()]
        assert objs[0]["type"] == "capture" and objs[-1]["type"] == "summary"
        for kind in ("generation", "rebalance", "lag"):
            got = sorted(json.dumps(o, sort_keys=True) for o in objs if o["type"] == kind)
            want = sorted(json.dumps(o, sort_keys=True) for o in exported if o["type"] == kind)
            assert got == want, (w, kind)
        last = {o["group"]: o for o in objs if o["type"] == "consumer_status"}
        assert sorted(last.values(), key=lambda o: o["group"]) == [
            o for o in exported if o["type"] == "consumer_status"
        ], w
