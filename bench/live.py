"""Live capture at a ladder of packet rates: a capture replayed with tcpreplay over a veth pair
between two network namespaces, ``kafka-analyzer live --mode export`` on the receiving end.

    sudo .venv/bin/python bench/live.py [--capture bench/out/bench-50mb.pcap]
        [--rates 10000,20000,50000,100000] [--loop 1] [--workers 1,2] [--backend ring] [--tshark]
        [--replay-nice 19]

Per rate and worker count it reports: exchanges (request/response pairs) in the live export
against ``kafka-analyzer export`` of the same file offline; the drops the live run reported
(PACKET_STATISTICS); packets it analysed against a tcpdump on the same interface (missed =
tcpdump's count - ours - our reported drops: packets lost without being counted, which must be
0); CPU seconds (user+sys, the live process and its workers) and peak RSS. With ``--tshark``,
tshark live on the same replay (a separate run): Kafka frames it decoded and responses it
paired with their request (its single-pass equivalent of our exchanges).

``--done-when CAPTURE`` runs exactly the measurement of issue 14's "Done when", in one command:

    sudo .venv/bin/python bench/live.py --done-when /work/perf/bench-250mb.pcap --markdown out.md

1. offline: ``kafka-analyzer export`` of the capture's ``--loop`` (4) copies concatenated as
   ``tcpreplay --loop`` sends them (same addresses; ``bench/pcapcat.py --same-addresses``):
   request/response pairs per API;
2. for each ``--done-rates`` rate (20000, 50000 pps): ``tcpreplay --pps RATE --loop 4`` over
   the veth pair, ``live --mode export --workers 2`` on the peer: its pairs per API must equal
   the offline ones, with 0 drops reported;
3. above the rate it can take (``--over-rate``, default ``topspeed``: tcpreplay as fast as it
   can; or a number of pps): the same replay recorded by tcpdump (to a file, 256 MiB buffer)
   next to the live run; the packets the live run missed (tcpdump's recording minus what it
   analysed) must equal the drops it reported. tcpdump's own kernel drops are reported: when
   they are not 0 the comparison is against tcpreplay's sent count instead.

It prints a markdown table (and the APIs whose pair counts differ) for bench/RESULTS.md, and
exits 1 when a condition does not hold.

Everything runs inside two namespaces this script creates (``kla-bench-tx``, ``kla-bench-rx``,
or ``--ns-prefix``) and deletes at the end; nothing leaves the machine. Needs root, tcpreplay
and tcpdump.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
TX, RX = "kla-bench-tx", "kla-bench-rx"
TX_IF, RX_IF = "kbtx0", "kbrx0"
# tcpreplay's niceness (--replay-nice): its --pps pacing spins on sched_yield, and at the
# analyzer's priority it took a quarter of the two cores at 50,000 pps (2026-11-29)
REPLAY_NICE = 0


def set_prefix(prefix: str) -> None:
    global TX, RX
    TX, RX = f"{prefix}-tx", f"{prefix}-rx"


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


def replay(capture: Path, pps: int, loop: int, extra: tuple[str, ...] = ()) -> dict:
    """tcpreplay into the veth pair at ``pps`` packets per second (0: --topspeed), with ``extra``
    options (bench/soak.py: --unique-ip, --duration)."""
    speed = ["--pps", str(pps)] if pps else ["--topspeed"]
    nice = ["nice", "-n", str(REPLAY_NICE)] if REPLAY_NICE else []
    r = sh(
        "ip",
        "netns",
        "exec",
        TX,
        *nice,
        "tcpreplay",
        "-i",
        TX_IF,
        *speed,
        "--loop",
        str(loop),
        *extra,
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


def run_ours(
    capture: Path,
    pps: int,
    loop: int,
    workers: int,
    backend: str,
    tmp: Path,
    record: Path | None = None,
    extra: tuple[str, ...] = (),
) -> dict:
    """One live run on the replay, tcpdump next to it (writing to ``record``, or counting only)."""
    out, err = tmp / "live.ndjson", tmp / "live.err"
    td_err = tmp / "td.err"
    target = str(record) if record is not None else "/dev/null"
    td = subprocess.Popen(
        ["ip", "netns", "exec", RX, "tcpdump", "-i", RX_IF, "-n", "-w", target, "-B", "262144", "tcp"],
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
    cmd += extra
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
    m = re.search(r"(\d+) packets dropped by kernel", td_err.read_text())
    tcpdump_dropped = int(m.group(1)) if m else None
    exchanges, pairs, summary = read_export(out)
    cap = summary.get("capture", {})
    dropped = cap.get("dropped_packets") or 0
    packets = cap.get("packets")
    return {
        **rep,
        "exchanges": exchanges,
        "pairs": dict(pairs),
        "packets": packets,
        "dropped": dropped,
        "tcpdump_packets": tcpdump_packets,
        "tcpdump_dropped": tcpdump_dropped,
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


def read_export(path: Path) -> tuple[int, Counter, dict]:
    """Exchanges, request/response pairs per API and the summary of an export (ndjson) file."""
    exchanges, pairs, summary = 0, Counter(), {}
    with open(path, "rb") as f:
        for line in f:
            if line.startswith(b'{"type":"exchange"'):
                exchanges += 1
                o = json.loads(line)
                if o.get("request") and o.get("response"):
                    pairs[o.get("api_name") or f"api {o.get('api_key')}"] += 1
            elif line.startswith(b'{"type":"summary"'):
                summary = json.loads(line)
    return exchanges, pairs, summary


def offline(capture: Path, tmp: Path | None = None) -> int:
    return offline_pairs(capture, tmp or Path(tempfile.gettempdir()))[0]


def offline_pairs(capture: Path, tmp: Path) -> tuple[int, Counter]:
    """Exchanges and pairs per API of ``kafka-analyzer export`` of the file."""
    out = tmp / "offline.ndjson"
    with open(out, "wb") as f:
        subprocess.run(
            [PY, "-m", "analyzer", "export", str(capture), "--no-spans"],
            stdout=f,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            check=False,
        )
    exchanges, pairs, _ = read_export(out)
    out.unlink()
    return exchanges, pairs


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
    ap.add_argument(
        "--done-when",
        type=Path,
        metavar="CAPTURE",
        help="issue 14's measurement on CAPTURE (the perf capture): --done-rates with --loop 4 and "
        "2 workers against the offline export of the 4 copies, then --over-rate",
    )
    ap.add_argument("--done-rates", default="20000,50000")
    ap.add_argument("--over-rate", default="topspeed", help="pps above the limit, or topspeed")
    ap.add_argument(
        "--live-args", default="", help="more arguments for every live run, e.g. '--buffer 1' (a small ring)"
    )
    ap.add_argument(
        "--replay-nice",
        type=int,
        default=0,
        help="run tcpreplay at this niceness (19: its pacing's spinning takes only what the analyzer "
        "leaves; a rate it then cannot keep fails the run)",
    )
    ap.add_argument(
        "--ns-prefix", default="kla-bench", help="names of the two namespaces: PREFIX-tx, PREFIX-rx"
    )
    args = ap.parse_args()
    set_prefix(args.ns_prefix)
    global REPLAY_NICE
    REPLAY_NICE = args.replay_nice
    if os.geteuid() != 0:
        print("bench/live.py needs root (namespaces, capture)", file=sys.stderr)
        return 2
    for tool in ("tcpreplay", "tcpdump"):
        if shutil.which(tool) is None:
            print(f"bench/live.py needs {tool}", file=sys.stderr)
            return 2
    if args.done_when is not None:
        return done_when(args)
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


def done_when(args) -> int:
    """Issue 14's measured run: see the module docstring."""
    cap: Path = args.done_when
    loop = 4 if args.loop == 1 else args.loop
    workers = int(args.workers) if args.workers != "1" else 2
    over = 0 if args.over_rate == "topspeed" else int(args.over_rate)
    r: dict = {
        "capture": str(cap),
        "loop": loop,
        "workers": workers,
        "load_start": os.getloadavg(),
        "runs": [],
    }
    with tempfile.TemporaryDirectory(prefix="kla-bench-done-") as d:
        tmp = Path(d)
        sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
        from pcapcat import concat

        cat = tmp / "copies.pcap"
        t0 = time.monotonic()
        packets, _ = concat(cap, cat, loop, rewrite=False)
        exchanges, pairs = offline_pairs(cat, tmp)
        cat.unlink()
        r.update(offline_packets=packets, offline_exchanges=exchanges, offline_pairs=dict(pairs))
        print(
            f"offline export of {cap.name} x{loop} (as tcpreplay --loop {loop} sends it): {packets} packets, "
            f"{sum(pairs.values())} request/response pairs, {exchanges} exchanges "
            f"({time.monotonic() - t0:.0f} s)",
            flush=True,
        )
        setup()
        try:
            for rate in [int(x) for x in args.done_rates.split(",")] + [over]:
                rec = tmp / "tcpdump.pcap" if rate == over else None
                x = run_ours(
                    cap, rate, loop, workers, args.backend, tmp, rec, tuple(shlex.split(args.live_args))
                )
                x.update(rate=rate or "topspeed", workers=workers, tool="kafka-analyzer", over=rate == over)
                if rec is not None:
                    x["tcpdump_recorded"] = count_packets(rec)
                    rec.unlink()
                judge(x, pairs)
                r["runs"].append(x)
                print(
                    f"{x['rate']:>9} pps (achieved {x['achieved_pps']}): {sum(x['pairs'].values())}/"
                    f"{sum(pairs.values())} pairs, {x['packets']} packets analysed + {x['dropped']} dropped "
                    f"reported; tcpdump {x['tcpdump_packets']} ({x['tcpdump_dropped']} dropped by it), "
                    f"tcpreplay sent {x['sent']}: {x['verdict']}",
                    flush=True,
                )
        finally:
            teardown()
    r["load_end"] = os.getloadavg()
    text = done_when_markdown(r)
    print()
    print(text, end="")
    if args.json:
        args.json.write_text(json.dumps(r, indent=1))
    if args.markdown:
        args.markdown.write_text(text)
    return 0 if all(x["ok"] for x in r["runs"]) else 1


def count_packets(path: Path) -> int | None:
    """Packets in a pcap file (a cut-off last record, from a tcpdump stopped mid-write, not counted)."""
    from pcapcat import MAGICS, _records  # on the path since done_when

    data = path.read_bytes()
    if data[:4] not in MAGICS:
        return None
    return sum(1 for _ in _records(data, MAGICS[data[:4]][0]))


def judge(x: dict, pairs: Counter) -> None:
    """Below the limit: pairs per API equal to offline's and 0 drops. Above it: the packets the
    run missed (the reference's count minus those analysed) equal the drops it reported; the
    reference is tcpdump's recording, or tcpreplay's sent count when tcpdump dropped some too."""
    diff = {
        api: (x["pairs"].get(api, 0), pairs.get(api, 0))
        for api in sorted(set(x["pairs"]) | set(pairs))
        if x["pairs"].get(api, 0) != pairs.get(api, 0)
    }
    x["pairs_diff"] = diff
    if not x["over"]:
        # (a starved tcpreplay, --replay-nice, falls behind the rate: that is no pass either)
        slow = isinstance(x["rate"], int) and (x["achieved_pps"] or 0) < 0.99 * x["rate"]
        x["ok"] = not diff and x["dropped"] == 0 and x["rc"] == 0 and not slow
        why = [] if not diff else [f"{len(diff)} APIs differ"]
        why += [f"sent at {x['achieved_pps']:.0f} pps"] if slow else []
        why += [f"{x['dropped']} drops"] if x["dropped"] else []
        why += [f"exit {x['rc']}"] if x["rc"] else []
        x["verdict"] = "pairs per API equal offline, 0 drops" if x["ok"] else "FAILS: " + ", ".join(why)
        return
    if x.get("tcpdump_dropped") == 0 and x.get("tcpdump_recorded") is not None:
        ref, what = x["tcpdump_recorded"], "tcpdump's recording"
    else:
        ref, what = x["sent"], "tcpreplay's sent count (tcpdump dropped too)"
    x["reference"], x["reference_is"] = ref, what
    x["missed"] = None if ref is None or x["packets"] is None else ref - x["packets"]
    x["ok"] = x["missed"] is not None and x["missed"] == x["dropped"]
    x["verdict"] = (
        f"missed {x['missed']} (vs {what}) {'==' if x['ok'] else '!='} {x['dropped']} drops reported"
        + ("" if x["ok"] else ": FAILS")
    )


def done_when_markdown(r: dict) -> str:
    n_pairs = sum(r["offline_pairs"].values())
    lines = [
        f"`{Path(r['capture']).name}` replayed with `tcpreplay --loop {r['loop']}` over a veth pair, "
        f"`kafka-analyzer live --mode export --workers {r['workers']}` on the peer; offline: `export` of "
        f"the {r['loop']} copies concatenated ({r['offline_packets']} packets, {n_pairs} request/response "
        f"pairs in {len(r['offline_pairs'])} APIs). Load average at start "
        f"{' / '.join(f'{x:.2f}' for x in r['load_start'])}, at end "
        f"{' / '.join(f'{x:.2f}' for x in r['load_end'])}.",
        "",
        "| rate (pps) | achieved pps | pairs live / offline | APIs differing | packets analysed | "
        "drops reported | tcpdump packets (its drops) | tcpreplay sent | missed | CPU s | peak RSS MB | "
        "exit | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for x in r["runs"]:
        td = x.get("tcpdump_recorded", x["tcpdump_packets"])
        lines.append(
            f"| {x['rate']} | {x['achieved_pps'] or 0:.0f} | {sum(x['pairs'].values())} / {n_pairs} | "
            f"{len(x['pairs_diff'])} | {x['packets']} | {x['dropped']} | {td} ({x['tcpdump_dropped']}) | "
            f"{x['sent']} | {x['missed']} | {x['cpu_s']:.1f} | {x['rss_mb']:.0f} | {x['rc']} | "
            f"{x['verdict']} |"
        )
    for x in r["runs"]:
        if x["pairs_diff"]:
            lines += ["", f"At {x['rate']} pps, pairs per API (live / offline):", ""]
            lines += [f"- {api}: {a} / {b}" for api, (a, b) in x["pairs_diff"].items()]
    return "\n".join(lines) + "\n"


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
