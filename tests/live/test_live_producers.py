"""`live` shows the producers, transactions and clients as they happen: producer-plain.pcap and
producer-txn.pcap replayed at their original speed (tcpreplay) over a veth pair in a network
namespace of the module's own, sniffed by `live` with one worker and with two (``--mode read``
and ``--mode export``) and by tcpdump. The retry and ended-transaction lines equal what the
offline `producers` and `transactions` find in tcpdump's recording of the same replay, the lost
records the offline producers' failed records; the export's retry and transaction objects (and
the producer, e2e, client and edge objects written at the end) equal the offline `export`'s; a
retry's and a transaction's line come while the replay runs, not at its end. Every process stops
by itself (--duration, timeout)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tests.helpers.captures import CAPTURES, ROOT
from tests.helpers.netns import isolated

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(os.geteuid() != 0, reason="live capture needs root"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="AF_PACKET is Linux only"),
    pytest.mark.skipif(shutil.which("tcpreplay") is None, reason="needs tcpreplay"),
    pytest.mark.skipif(shutil.which("tcpdump") is None, reason="needs tcpdump"),
]

SENDER, SNIFFED = "kla-pa", "kla-pb"
LIMIT = 120  # seconds any process of a test may run
RETRY, ENDED, HANGING = "  producer retry  ", "  transaction ended  ", "  transaction HANGING  "
EXPORTED = ("retry", "transaction", "producer", "held_back", "e2e", "client", "edge")


@pytest.fixture(scope="module")
def veth():
    """A veth pair in the module's namespace: tcpreplay sends on one end, the sniffers read the
    other (its own traffic: none but the replay, and IPv6 off so no neighbour discovery)."""
    with isolated("producers") as ns:
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


def offline(command: list[str]) -> str:
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", *command], capture_output=True, cwd=ROOT, timeout=300
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.decode()


def _sorted(objs):
    return sorted(json.dumps(o, sort_keys=True) for o in objs)


@pytest.mark.parametrize("capture", ["producer-plain", "producer-txn"])
def test_live_producers_as_they_happen(veth, tmp_path, capture):
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
    during: dict[tuple[int, str], bool] = {}
    wanted = (RETRY,) if capture == "producer-plain" else (RETRY, ENDED, HANGING)
    try:
        for proc, _, err, ready in procs:
            wait_for(err, proc, ready, 60)
        time.sleep(0.5)  # the fanout workers' rings are open once the parent says so; settle
        replay = subprocess.Popen(
            ["timeout", str(LIMIT), "tcpreplay", "-i", SENDER, str(pcap)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        while replay.poll() is None:  # lines while the replay still runs
            for w in (1, 2):
                text = runs[("read", w)][1].read_text()
                for what in wanted:
                    during[(w, what)] = during.get((w, what), False) or what in text
            time.sleep(0.1)
        assert replay.returncode == 0, replay.stderr.read() if replay.stderr else ""
        time.sleep(1.5)  # the last packets through every worker
    finally:
        rcs = [stop(p[0]) for p in procs]
    assert all(rc in (0, 124) for rc in rcs[1:]), [p[2].read_text() for p in procs]
    assert all(during.values()) and len(during) == 2 * len(wanted), during

    producers = offline(["producers", str(recorded), "-t"]).splitlines()
    transactions = offline(["transactions", str(recorded), "-t"]).splitlines()
    report = json.loads(offline(["producers", str(recorded), "--format", "json"]))
    exported = [json.loads(x) for x in offline(["export", str(recorded), "--no-spans"]).splitlines()]
    retries = sorted(x.strip() for x in producers if " records, attempt " in x)
    assert retries, "the replay's recording shows no retry"
    ended = sorted(x for x in transactions if ": commit " in x or ": abort " in x)
    assert (capture == "producer-txn") == bool(ended)
    failed = sum(p["failed_records"] for p in report["producers"])
    for w in (1, 2):
        lines = runs[("read", w)][1].read_text().splitlines()
        assert sorted(x.replace(RETRY, "  ", 1) for x in lines if RETRY in x) == retries, w
        got = sorted(x.split(ENDED, 1)[1].split("; offsets: ")[0] for x in lines if ENDED in x)
        assert got == ended, w
        lost = [x for x in lines if " records LOST " in x]
        assert sum(int(x.split(": ")[1].split(" records LOST")[0]) for x in lost) == failed, w
        if capture == "producer-txn":
            assert [x for x in lines if HANGING in x and "txn-producer-txn-hanging" in x], w

        objs = [json.loads(x) for x in runs[("export", w)][1].read_bytes().splitlines()]
        assert objs[0]["type"] == "capture" and objs[-1]["type"] == "summary"
        for kind in EXPORTED:
            got_objs = _sorted(o for o in objs if o["type"] == kind)
            assert got_objs == _sorted(o for o in exported if o["type"] == kind), (w, kind)
