"""`live` as the systemd unit runs it (deploy/systemd): started as an unprivileged user holding
only CAP_NET_RAW and CAP_NET_ADMIN (``setpriv``: the unit's ``User=`` and
``AmbientCapabilities=``), ``--user`` clears them once the sockets are open; ``--output`` and
``--write`` are renamed in the middle of a replay (producer-txn.pcap over a veth pair in a
namespace of the module's own, tcpreplay at its original speed) and ``SIGHUP`` starts new files
under the old names (logrotate): the exchanges of the old and the new NDJSON file together are the
offline export's, the packets of the old and new pcaps together the replay's, with one worker and
with two. Every process stops by itself (--duration, timeout)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from analyzer.capture.files import CaptureFile
from tests.helpers.captures import CAPTURES, ROOT
from tests.helpers.netns import veth_pair

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(os.geteuid() != 0, reason="live capture needs root"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="AF_PACKET is Linux only"),
    pytest.mark.skipif(shutil.which("tcpreplay") is None, reason="needs tcpreplay"),
    pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux)"),
]

SENDER, SNIFFED = "kla-sa", "kla-sb"
LIMIT = 120  # seconds any process of a test may run
CAPS = "+net_raw,+net_admin"


@pytest.fixture(scope="module")
def veth():
    with veth_pair("service", SENDER, SNIFFED) as ns:
        yield ns


def packets(path: Path) -> int:
    return sum(1 for index, *_ in CaptureFile(path).records() if index)


def capabilities(pid: int) -> dict[str, int]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {k: int(v, 16) for k, v in (x.split(":\t") for x in lines) if k.startswith("Cap")}


@pytest.mark.parametrize("workers", [1, 2])
def test_sighup_reopens_the_output_files_of_an_unprivileged_live(veth, workers):
    pcap = CAPTURES / "producer-txn.pcap"
    with tempfile.TemporaryDirectory() as d:
        out = Path(d)
        out.chmod(0o777)  # written by nobody
        err = out / "live.err"
        argv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        argv += [f"--inh-caps=-all,{CAPS}", f"--ambient-caps=-all,{CAPS}", f"--bounding-set=-all,{CAPS}"]
        argv += [sys.executable, "-m", "analyzer", "live", "-i", SNIFFED, "-f", "tcp", "--user", "nobody"]
        argv += ["--workers", str(workers), "--duration", str(LIMIT), "--mode", "export", "--no-spans"]
        argv += ["-o", str(out / "live.ndjson"), "-w", str(out / "live.pcap")]
        with open(err, "wb") as ferr:
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=ferr, cwd=ROOT)
        try:
            end = time.monotonic() + 60
            while b"capturing" not in err.read_bytes():
                assert proc.poll() is None and time.monotonic() < end, err.read_text()
                time.sleep(0.05)
            time.sleep(0.5)  # the fanout workers' rings are open once the parent says so; settle
            caps = capabilities(proc.pid)
            assert caps["CapEff"] == caps["CapPrm"] == caps["CapAmb"] == 0, caps
            replay = subprocess.Popen(
                ["timeout", str(LIMIT), "tcpreplay", "-i", SENDER, str(pcap)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            time.sleep(3)  # a third of the replay
            names = [p.name for p in sorted(out.iterdir()) if p.suffix in (".ndjson", ".pcap")]
            assert len(names) == 1 + workers, names
            for name in names:
                (out / name).rename(out / f"{name}.1")
            proc.send_signal(signal.SIGHUP)
            replay.wait()
            assert replay.returncode == 0, replay.stderr.read() if replay.stderr else ""
            time.sleep(1.5)  # the last packets through every worker
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
            rc = proc.wait(60)
        assert rc == 0, err.read_text()
        for name in names:  # new files under the old names, the old ones complete
            assert (out / name).exists() and (out / f"{name}.1").exists(), name
        old, new = (
            [json.loads(x) for x in (out / n).read_bytes().splitlines()]
            for n in ("live.ndjson.1", "live.ndjson")
        )
        assert old[0]["type"] == "capture" and new[-1]["type"] == "summary"
        before = [o for o in old if o["type"] == "exchange"]
        after = [o for o in new if o["type"] == "exchange"]
        assert before and after
        offline = subprocess.run(
            [sys.executable, "-m", "analyzer", "export", str(pcap), "--no-spans"],
            capture_output=True,
            cwd=ROOT,
            timeout=300,
            check=True,
        )
        exchanges = [o for o in map(json.loads, offline.stdout.splitlines()) if o["type"] == "exchange"]
        assert len(before) + len(after) == len(exchanges)
        key = ("api_name", "correlation_id", "client_id")
        got = sorted(json.dumps([o.get(k) for k in key]) for o in before + after)
        assert got == sorted(json.dumps([o.get(k) for k in key]) for o in exchanges)
        pcaps = [n for n in names if n.endswith(".pcap")]
        total = sum(packets(out / n) + packets(out / f"{n}.1") for n in pcaps)
        assert total == packets(pcap)
        assert all(packets(out / f"{n}.1") for n in pcaps) or workers > 1
