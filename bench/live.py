"""Live capture at a ladder of packet rates: a capture replayed with tcpreplay over a veth pair
between two network namespaces, ``kafka-analyzer live --mode export`` on the receiving end.

    sudo .venv/bin/python bench/live.py [--capture bench/out/bench-50mb.pcap]
        [--rates 10000,20000,50000,100000] [--loop 1] [--workers 1,2] [--backend ring] [--tshark]

Per rate and worker count it reports: exchanges (request/response pairs) in the live export
against ``kafka-analyzer export`` of the same file offline; the drops the live run reported
(PACKET_STATISTICS); packets it analysed against a tcpdump on the same interface (missed =
tcpdump's count - ours - our reported drops: packets lost without being counted, which must be
0); CPU seconds (user+sys, the live process and its workers) and peak RSS. With ``--tshark``,
tshark live on the same replay (a separate run): Kafka frames it decoded and responses it
paired with their request (its single-pass equivalent of our exchanges).

Everything runs inside two namespaces this script creates (``kla-bench-tx``, ``kla-bench-rx``)
and deletes at the end; nothing leaves the machine. Needs root, tcpreplay and tcpdump.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
TX, RX = "kla-bench-tx", "kla-bench-rx"
TX_IF, RX_IF = "kbtx0", "kbrx0"


def sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


def setup() -> None:
    teardown()
    sh("ip", "netns", "add", TX)
    sh("ip", "netns", "add", RX)
    sh("ip", "link", "add", TX_IF, "netns", TX, "type", "veth", "peer", "name", RX_IF, "netns", RX)
    for ns, dev in ((TX, TX_IF), (RX, RX_IF)):
        sh("ip", "-n", ns, "link", "set", dev, "mtu", "9000")
        sh("ip", "-n", ns, "link", "set", dev, "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")


def teardown() -> None:
    for ns in (TX, RX):
        sh("ip", "netns", "del", ns, check=False)


def wait_text(path: Path, text: str, proc, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if text in path.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"exited early: {path.read_text(errors='replace')}")
        time.sleep(0.05)
    raise RuntimeError(f"never saw {text!r} in {path}")


def wait_rusage(proc, timeout: float = 120):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return ru
        time.sleep(0.05)
    proc.kill()
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return ru


def replay(capture: Path, pps: int, loop: int) -> dict:
    r = sh(
        "ip",
        "netns",
        "exec",
        TX,
        "tcpreplay",
        "-i",
        TX_IF,
        "--pps",
        str(pps),
        "--loop",
        str(loop),
        str(capture),
    )
    out = r.stdout + r.stderr
    sent = re.search(r"Successful packets:\s+(\d+)", out)
    failed = re.search(r"Failed packets:\s+(\d+)", out)
    rate = re.search(r"Rated: [\d.]+ Bps, [\d.]+ Mbps, ([\d.]+) pps", out)
    return {
        "sent": int(sent.group(1)) if sent else None,
        "failed": int(failed.group(1)) if failed else None,
        "achieved_pps": float(rate.group(1)) if rate else None,
    }


def run_ours(capture: Path, pps: int, loop: int, workers: int, backend: str, tmp: Path) -> dict:
    out, err = tmp / "live.ndjson", tmp / "live.err"
    td_err = tmp / "td.err"
    td = subprocess.Popen(
        ["ip", "netns", "exec", RX, "tcpdump", "-i", RX_IF, "-n", "-w", "/dev/null", "-B", "65536", "tcp"],
        stderr=open(td_err, "w"),  # noqa: SIM115
    )
    wait_text(td_err, "listening on", td)
    cmd = [
        "ip",
        "netns",
        "exec",
        RX,
        PY,
        "-m",
        "analyzer",
        "live",
        "-i",
        RX_IF,
        "--mode",
        "export",
        "--no-spans",
    ]
    cmd += ["--backend", backend, "-f", "tcp"]
    if backend == "ring":
        cmd += ["--workers", str(workers)]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        stdout=open(out, "wb"),  # noqa: SIM115
        stderr=open(err, "w"),  # noqa: SIM115
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    wait_text(err, "capturing on", proc)
    rep = replay(capture, pps, loop)
    time.sleep(3.0)  # let the analyzer drain its ring
    proc.send_signal(signal.SIGINT)
    ru = wait_rusage(proc)
    wall = time.monotonic() - t0
    td.send_signal(signal.SIGINT)
    td.wait(30)
    m = re.search(r"(\d+) packets captured", td_err.read_text())
    tcpdump_packets = int(m.group(1)) if m else None
    exchanges = 0
    summary = {}
    with open(out, "rb") as f:
        for line in f:
            if line.startswith(b'{"type":"exchange"'):
                exchanges += 1
            elif line.startswith(b'{"type":"summary"'):
                summary = json.loads(line)
    cap = summary.get("capture", {})
    dropped = cap.get("dropped_packets") or 0
    packets = cap.get("packets")
    return {
        **rep,
        "exchanges": exchanges,
        "packets": packets,
        "dropped": dropped,
        "tcpdump_packets": tcpdump_packets,
        "missed": (tcpdump_packets - packets - dropped)
        if tcpdump_packets is not None and packets is not None
        else None,
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "rss_mb": ru.ru_maxrss / 1024,
        "wall_s": wall,
        "rc": proc.returncode,
    }


def run_tshark(capture: Path, pps: int, loop: int, ports: list[int], tmp: Path) -> dict:
    err = tmp / "tshark.err"
    out = tmp / "tshark.out"
    cmd = ["ip", "netns", "exec", RX, "tshark", "-i", RX_IF, "-n", "-l", "-f", "tcp", "-Y", "kafka"]
    for p in ports:
        cmd += ["-d", f"tcp.port=={p},kafka"]
    cmd += ["-T", "fields", "-e", "kafka.response_frame", "-e", "kafka.request_frame"]
    proc = subprocess.Popen(cmd, stdout=open(out, "w"), stderr=open(err, "w"))  # noqa: SIM115
    wait_text(err, "Capturing on", proc)
    rep = replay(capture, pps, loop)
    time.sleep(3.0)
    proc.send_signal(signal.SIGINT)
    ru = wait_rusage(proc)
    lines = out.read_text().splitlines()
    # single pass: a response names its request (kafka.request_frame), not the other way round
    answered = sum(1 for x in lines if x.split("\t")[-1].strip())
    m = re.search(r"(\d+) packets? dropped", err.read_text())
    return {
        **rep,
        "kafka_frames": len(lines),
        "requests_answered": answered,
        "dropped": int(m.group(1)) if m else 0,
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "rss_mb": ru.ru_maxrss / 1024,
    }


def offline(capture: Path) -> int:
    r = subprocess.run(
        [PY, "-m", "analyzer", "export", str(capture), "--no-spans"],
        capture_output=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    return sum(1 for x in r.stdout.splitlines() if x.startswith(b'{"type":"exchange"'))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--capture", type=Path, default=ROOT / "bench/out/bench-50mb.pcap")
    ap.add_argument("--rates", default="10000,20000,50000,100000")
    ap.add_argument("--loop", type=int, default=1)
    ap.add_argument("--workers", default="1")
    ap.add_argument("--backend", default="ring")
    ap.add_argument("--tshark", action="store_true")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--markdown", type=Path, help="also write them as a RESULTS.md table here")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/live.py needs root (namespaces, capture)", file=sys.stderr)
        return 2
    for tool in ("tcpreplay", "tcpdump"):
        if shutil.which(tool) is None:
            print(f"bench/live.py needs {tool}", file=sys.stderr)
            return 2
    meta = args.capture.with_suffix(".json")
    ports = json.loads(meta.read_text())["broker_ports"] if meta.exists() else []
    print(f"offline export of {args.capture.name}: ", end="", flush=True)
    base = offline(args.capture)
    print(f"{base} exchanges (x{args.loop} loops)", flush=True)
    results = {
        "capture": str(args.capture),
        "offline_exchanges": base,
        "loop": args.loop,
        "load_start": os.getloadavg(),
        "runs": [],
    }
    setup()
    try:
        with tempfile.TemporaryDirectory(prefix="kla-bench-live-") as d:
            tmp = Path(d)
            for rate in (int(x) for x in args.rates.split(",")):
                for workers in (int(x) for x in args.workers.split(",")):
                    r = run_ours(args.capture, rate, args.loop, workers, args.backend, tmp)
                    r.update(rate=rate, workers=workers, tool="kafka-analyzer")
                    results["runs"].append(r)
                    print(
                        f"{rate:>7} pps  workers {workers}: {r['exchanges']}/{base * args.loop} exchanges, "
                        f"{r['packets']} packets + {r['dropped']} dropped (tcpdump {r['tcpdump_packets']}, "
                        f"missed {r['missed']}), sent {r['sent']} at {r['achieved_pps']} pps, "
                        f"cpu {r['cpu_s']:.1f} s, rss {r['rss_mb']:.0f} MB, rc {r['rc']}",
                        flush=True,
                    )
                if args.tshark and shutil.which("tshark"):
                    t = run_tshark(args.capture, rate, args.loop, ports, tmp)
                    t.update(rate=rate, tool="tshark")
                    results["runs"].append(t)
                    print(
                        f"{rate:>7} pps  tshark: {t['requests_answered']} paired responses in "
                        f"{t['kafka_frames']} Kafka frames, {t['dropped']} dropped, cpu {t['cpu_s']:.1f} s, "
                        f"rss {t['rss_mb']:.0f} MB",
                        flush=True,
                    )
    finally:
        teardown()
    results["load_end"] = os.getloadavg()
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    if args.markdown:
        args.markdown.write_text(markdown(results))
    return 0


def markdown(r: dict) -> str:
    """The figures as the rows of a RESULTS.md table."""
    lines = [
        f"Load average (1/5/15 min) at start {' / '.join(f'{x:.2f}' for x in r['load_start'])}, "
        f"at end {' / '.join(f'{x:.2f}' for x in r['load_end'])}.",
        "",
        "| rate (pps) | tool | workers | achieved pps | exchanges (offline) | packets analysed | "
        "drops reported | missed vs tcpdump | CPU s | peak RSS MB | exit |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for x in r["runs"]:
        if x["tool"] == "tshark":
            lines.append(
                f"| {x['rate']} | tshark | 1 | {x['achieved_pps']:.0f} | {x['requests_answered']} paired "
                f"responses, {x['kafka_frames']} Kafka frames | - | {x['dropped']} | - | {x['cpu_s']:.1f} | "
                f"{x['rss_mb']:.0f} | - |"
            )
        else:
            lines.append(
                f"| {x['rate']} | kafka-analyzer | {x['workers']} | {x['achieved_pps']:.0f} | "
                f"{x['exchanges']} ({r['offline_exchanges'] * r['loop']}) | {x['packets']} | "
                f"{x['dropped']} | {x['missed']} | "
                f"{x['cpu_s']:.1f} | {x['rss_mb']:.0f} | {x['rc']} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
