"""The recording machinery: a private network namespace (``kgen``, loopback with a 1500-byte MTU
and no segmentation offloads, so packets are sized as on a real Ethernet network), commands run
inside it, and ``tcpdump`` on its loopback. Nothing leaves that namespace."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .core import ROOT

NETNS = os.environ.get("KGEN_NETNS", "kgen")  # another name lets two generators run at once
ENTRY = ROOT / "tools" / "gen_captures.py"  # what the namespace's processes run (internal modes)
TCPDUMP_START_S = 0.5  # give tcpdump time to start before the clients run
TCPDUMP_DRAIN_S = 0.5  # let the last FIN/ACKs pass before stopping tcpdump


def _run(cmd: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


@contextlib.contextmanager
def namespace() -> Iterator[None]:
    if os.geteuid() != 0:
        sys.exit("needs root (network namespace and tcpdump): sudo .venv/bin/python tools/gen_captures.py")
    for tool in ("ip", "tcpdump", "ethtool"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found")
    _run(["ip", "netns", "del", NETNS], check=False)
    _run(["ip", "netns", "add", NETNS])
    try:
        _run(["ip", "netns", "exec", NETNS, "ip", "link", "set", "lo", "up", "mtu", "1500"])
        _run(["ip", "netns", "exec", NETNS, "ethtool", "-K", "lo", "gso", "off", "tso", "off", "gro", "off"])
        yield
    finally:
        _run(["ip", "netns", "del", NETNS], check=False)


def in_ns(cmd: list[str]) -> list[str]:
    return ["ip", "netns", "exec", NETNS, *cmd]


def self_cmd(*args: str) -> list[str]:
    return [sys.executable, str(ENTRY), *args]


def stop(proc: subprocess.Popen[Any], sig: int = signal.SIGTERM, wait: float = 5.0) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(wait)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def tcpdump(pcap: Path, notes: list[str], ports: list[int] | None = None) -> Iterator[None]:
    """Capture TCP on the namespace's loopback into ``pcap``; kernel drops go to ``notes``.
    With ``ports``, only connections to those ports (a SASL front-end's: its own connections
    to the mock brokers would repeat every packet).

    --immediate-mode matters: without it libpcap's TPACKET_V3 ring hands packets over in
    blocks every second, and the block still open at SIGINT is lost.
    """
    pcap.unlink(missing_ok=True)
    cmd = [
        "tcpdump",
        "-i",
        "lo",
        "-w",
        str(pcap),
        "-s",
        "0",
        "-U",
        "-n",
        "--immediate-mode",
        "-Z",
        "root",
        "tcp" if not ports else "tcp and (" + " or ".join(f"port {p}" for p in ports) + ")",
    ]
    proc = subprocess.Popen(in_ns(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    started = proc.stderr.readline()  # "listening on lo, link-type EN10MB ..."
    if "listening" not in started:
        stop(proc)
        raise RuntimeError(f"tcpdump did not start: {started}{proc.stderr.read()}")
    time.sleep(TCPDUMP_START_S)
    try:
        yield
    finally:
        time.sleep(TCPDUMP_DRAIN_S)
        stop(proc, signal.SIGINT)
        for line in proc.stderr.read().splitlines():  # "N packets dropped by kernel"
            words = line.split()
            if "dropped" in words and words[0].isdigit() and int(words[0]):
                notes.append(f"tcpdump: {line.strip()}")


def ports_of(bootstrap: str) -> list[int]:
    return [int(hp.rsplit(":", 1)[1]) for hp in bootstrap.split(",")]
