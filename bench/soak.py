"""Soak: the perf capture looped at 20,000 packets/s for half an hour into ``kafka-analyzer live
--metrics`` (issue 30's "Done when"), writes its part of bench/RESULTS.md.

    sudo .venv/bin/python bench/soak.py [--capture bench/out/bench-50mb.pcap] [--pps 20000]
        [--minutes 30] [--warmup 5] [--workers 2] [--interval 5] [--scrapes 100]

``tcpreplay --pps PPS --loop 0 --unique-ip --duration WARMUP+MINUTES`` sends the capture over
bench/live.py's veth pair between two namespaces, each loop with new IP addresses (new flows:
the connection, group and producer tables must expire entries, not only revisit them), into
``kafka-analyzer live -i IFACE -f tcp --mode stats --workers 2 --metrics 127.0.0.1:PORT`` (the
stats tables only at the end: nothing printed while it runs). Every ``--interval`` seconds,
from a thread inside the receiving namespace: a GET of ``/metrics`` parsed with
prometheus_client's parser (its counters must never go down, packets and exchanges must grow),
and the RSS, PSS and CPU time of the live processes (the parent and its workers, summed from
/proc). At the end:

1. RSS growth: the summed RSS at the end of the replay against the RSS at the end of the
   warm-up; under 10% passes;
2. packets lost without being counted: tcpreplay's sent count minus (packets the analyzer read +
   packets the kernel reports dropped: ``kafka_analyzer_packets_total`` +
   ``kafka_analyzer_dropped_packets_total``, scraped once the counts stop moving; the final
   stats line is checked against them); 0 passes;
3. the CPU cost of scraping: with the replay over and the state full, the analyzer's CPU
   seconds (all its processes) over ``--scrapes`` back-to-back scrapes, minus what it spends
   in an equal time without scrapes (measured just before and just after, averaged), divided by
   the number of scrapes: CPU seconds per scrape; divided by the interval (5 s) it is the share
   of one core that scraping every 5 s costs; under 5% passes. The cost without the idle part
   taken off (an upper bound) is printed too.

It prints the RSS curve, the tables' sizes (``kafka_analyzer_tcp_connections_tracked``, and
``kafka_analyzer_table_entries{table}`` / ``kafka_analyzer_evicted_total{table}`` when the
analyzer exports them), exchanges/s, PASS or FAIL per criterion, and exits 1 when one fails. A
run of at least 30 minutes after a 5-minute warm-up writes its section of bench/RESULTS.md
(between its markers); a shorter run (``--minutes 3 --warmup 1``, to try it) writes nothing.

Needs root, tcpreplay, and prometheus_client (the ``live`` extra).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import re
import resource
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import live  # noqa: E402 - bench/live.py: the namespaces, the replay
import run  # noqa: E402 - bench/run.py: the capture, RESULTS.md's markers

from tests.helpers.netns import entered  # noqa: E402

BEGIN = "<!-- bench/soak.py: begin; written by bench/soak.py, edit outside these markers -->"
END = "<!-- bench/soak.py: end -->"
M = "kafka_analyzer_"
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


# -- the live processes ----------------------------------------------------------------------------


def tree(root: int) -> list[int]:
    """``root`` and its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


@dataclass
class Usage:
    """The live processes at one moment: summed RSS and PSS (MB), CPU seconds (user + system)."""

    t: float
    rss_mb: float = 0.0
    pss_mb: float = 0.0
    cpu_s: float = 0.0
    processes: int = 0
    rss_each: list[float] = field(default_factory=list)  # MB: the parent, then each worker


def usage(root: int, t0: float) -> Usage:
    u = Usage(time.monotonic() - t0)
    for pid in tree(root):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text()
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:  # gone meanwhile
            continue
        rest = fields[fields.rindex(")") + 2 :].split()
        u.cpu_s += (int(rest[11]) + int(rest[12])) / TICK
        u.rss_mb += int(rest[21]) * PAGE / 2**20
        u.rss_each.append(int(rest[21]) * PAGE / 2**20)
        m = re.search(r"^Pss:\s+(\d+) kB", rollup, re.M)
        u.pss_mb += int(m.group(1)) / 1024 if m else 0.0
        u.processes += 1
    return u


def each_text(rss_each: list[float]) -> str:
    """The RSS of each process, ``parent + worker + ...`` in MB."""
    return " + ".join(f"{m:.0f}" for m in rss_each)


# -- the scrapes -----------------------------------------------------------------------------------


@dataclass
class Scrape:
    """One GET of /metrics: every sample by (name, labels), the counters' names, its size."""

    t: float
    samples: dict[tuple[str, tuple], float]
    counters: set[str]
    size: int
    seconds: float

    def get(self, name: str, **labels: str) -> float | None:
        return self.samples.get((M + name, tuple(sorted(labels.items()))))

    def by(self, name: str, label: str) -> dict[str, float]:
        return {
            dict(k[1])[label]: v
            for k, v in self.samples.items()
            if k[0] == M + name and dict(k[1]).get(label)
        }


def scrape(url: str, t0: float) -> Scrape:
    from prometheus_client.parser import text_string_to_metric_families

    start = time.monotonic()
    with urllib.request.urlopen(url, timeout=30) as r:
        body = r.read()
    took = time.monotonic() - start
    samples: dict[tuple[str, tuple], float] = {}
    counters: set[str] = set()
    for fam in text_string_to_metric_families(body.decode()):
        for s in fam.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
            if fam.type in ("counter", "histogram"):
                counters.add(s.name)
    return Scrape(start - t0, samples, counters, len(body), took)


def decreases(a: Scrape, b: Scrape) -> list[str]:
    """The counter series present in both scrapes whose value went down from ``a`` to ``b``."""
    return [
        f"{name}{dict(labels)}: {v} -> {b.samples[(name, labels)]}"
        for (name, labels), v in a.samples.items()
        if name in a.counters and (name, labels) in b.samples and b.samples[(name, labels)] < v
    ]


@dataclass
class Run:
    samples: list[tuple[Usage, Scrape]] = field(default_factory=list)
    decreased: list[str] = field(default_factory=list)
    failed_scrapes: list[str] = field(default_factory=list)


# -- the soak --------------------------------------------------------------------------------------


def soak(args, capture: Path, port: int, copy: dict) -> dict:
    total = (args.warmup + args.minutes) * 60
    tmp = Path(tempfile.mkdtemp(prefix="kla-soak-"))
    out, err = tmp / "live.out", tmp / "live.err"
    cmd = [
        *("ip", "netns", "exec", live.RX),
        live.PY,
        "-m",
        "analyzer",
        "live",
        "-i",
        live.RX_IF,
        "-f",
        "tcp",
    ]
    cmd += ["--mode", "stats", "--workers", str(args.workers), "--metrics", f"127.0.0.1:{port}"]
    cmd += shlex.split(args.live_args)
    r: dict = {"capture": str(capture), "command": cmd[4:], "load_start": os.getloadavg(), **copy}
    proc = subprocess.Popen(
        cmd,
        stdout=open(out, "wb"),  # noqa: SIM115
        stderr=open(err, "w"),  # noqa: SIM115
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        live.wait_text(err, "capturing on", proc)
        extra = ("--unique-ip", "--duration", str(int(total)))
        sent: dict = {}
        replay = threading.Thread(
            target=lambda: sent.update(live.replay(capture, args.pps, 0, extra)), name="tcpreplay"
        )
        r["replay"] = [
            "tcpreplay",
            "-i",
            live.TX_IF,
            "--pps",
            str(args.pps),
            "--loop",
            "0",
            *extra,
            capture.name,
        ]
        t0 = time.monotonic()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        replay.start()
        with entered(live.RX):  # 127.0.0.1 is the receiving namespace's
            url = f"http://127.0.0.1:{port}/metrics"
            soaked = watch(proc.pid, url, t0, replay, args)
            r["replay_seconds"] = time.monotonic() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            r["tcpreplay_cpu_s"] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            r.update(sent)
            final = drain(url, t0, sent.get("sent"))
            r["cost"] = scrape_cost(proc.pid, url, t0, args)
        r["load_end"] = os.getloadavg()
        stop = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(args.exit_timeout)
            r["rc"] = proc.returncode
        except subprocess.TimeoutExpired:
            r["rc"] = f"none: still running {args.exit_timeout:g} s after SIGTERM, killed"
        r["exit_seconds"] = time.monotonic() - stop
    finally:
        if proc.poll() is None:
            for pid in tree(proc.pid):  # the workers too
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            proc.wait(30)
        r["stderr"] = err.read_text(errors="replace")[-4000:]
        r["summary_line"] = out.read_text(errors="replace").partition("\n")[0]
        shutil.rmtree(tmp, ignore_errors=True)
    judge(r, soaked, final, args)
    return r


def watch(pid: int, url: str, t0: float, replay: threading.Thread, args) -> Run:
    """Scrape and sample every ``--interval`` seconds while the replay runs."""
    runs = Run()
    prev: Scrape | None = None
    next_t, next_say = 0.0, 60.0
    while replay.is_alive():
        now = time.monotonic() - t0
        if now < next_t:
            replay.join(min(next_t - now, 1.0))
            continue
        next_t += args.interval
        try:
            s = scrape(url, t0)
        except (OSError, ValueError) as exc:  # no answer, or not the exposition
            runs.failed_scrapes.append(f"{now:.0f} s: {exc}")
            continue
        u = usage(pid, t0)
        runs.samples.append((u, s))
        if prev is not None:
            runs.decreased += [f"{s.t:.0f} s: {d}" for d in decreases(prev, s)]
        prev = s
        if now >= next_say:
            next_say += 60
            print(
                f"{now / 60:5.1f} min: RSS {u.rss_mb:.0f} MB ({each_text(u.rss_each)}; "
                f"PSS {u.pss_mb:.0f}), CPU {u.cpu_s:.0f} s, "
                f"packets {s.get('packets_total') or 0:.0f} + dropped "
                f"{s.get('dropped_packets_total', where='kernel') or 0:.0f}, exchanges "
                f"{s.get('exchanges_total') or 0:.0f}, connections tracked "
                f"{s.get('tcp_connections_tracked') or 0:.0f}{tables_text(s)}",
                flush=True,
            )
    return runs


def tables_text(s: Scrape) -> str:
    entries, evicted = s.by("table_entries", "table"), s.by("evicted_total", "table")
    if not entries and not evicted:
        return ""
    return ", tables " + ", ".join(
        f"{t} {entries.get(t, 0):.0f} (evicted {evicted.get(t, 0):.0f})"
        for t in sorted(set(entries) | set(evicted))
    )


def counted(s: Scrape) -> tuple[float, float]:
    return s.get("packets_total") or 0, s.get("dropped_packets_total", where="kernel") or 0


def drain(url: str, t0: float, sent: int | None, timeout: float = 300) -> Scrape:
    """The scrape once packets + drops reach what tcpreplay sent, or stop moving for 10 s (the
    workers send their counts every second; a starved worker may be seconds behind its ring)."""
    last, same, end = None, 0, time.monotonic() + timeout
    while True:
        s = scrape(url, t0)
        if sent is not None and sum(counted(s)) >= sent:
            return s
        same = same + 1 if last is not None and counted(s) == counted(last) else 0
        if same >= 10 or time.monotonic() > end:
            return s
        last = s
        time.sleep(1.0)


def scrape_cost(pid: int, url: str, t0: float, args) -> dict:
    """CPU seconds of the analyzer per scrape: ``--scrapes`` back to back, minus the idle CPU of
    an equal time just before and just after."""

    def idle(seconds: float) -> float:
        a = usage(pid, t0)
        time.sleep(seconds)
        return (usage(pid, t0).cpu_s - a.cpu_s) / seconds

    a = usage(pid, t0)
    start = time.monotonic()
    sizes = [scrape(url, t0).size for _ in range(args.scrapes)]
    wall = time.monotonic() - start
    busy = usage(pid, t0).cpu_s - a.cpu_s
    rate = (idle(max(wall, 5.0)) + idle(max(wall, 5.0))) / 2
    per = max(0.0, busy - rate * wall) / args.scrapes
    return {
        "scrapes": args.scrapes,
        "wall_s": wall,
        "cpu_s": busy,
        "idle_cpu_per_s": rate,
        "cpu_per_scrape_s": per,
        "upper_per_scrape_s": busy / args.scrapes,
        "percent": 100 * per / args.interval,
        "upper_percent": 100 * busy / args.scrapes / args.interval,
        "bytes": sum(sizes) / len(sizes),
    }


def judge(r: dict, runs: Run, final: Scrape, args) -> None:
    pts = [(u, s) for u, s in runs.samples]
    warm = args.warmup * 60
    at_warm = next((u for u, _ in pts if u.t >= warm), pts[-1][0] if pts else None)
    end = pts[-1][0] if pts else None
    r["curve"] = curve(runs, args)
    packets, dropped = counted(final)
    received = final.get("kernel_received_packets_total")
    sent = r.get("sent")
    r.update(packets=packets, dropped=dropped, received=received)
    r["lost"] = None if sent is None else sent - packets - dropped
    m = re.match(
        r"(\d+) packets, .*?(\d+) Kafka exchanges.*?(?:, (\d+) dropped by the kernel)?$", r["summary_line"]
    )
    r["summary_counts"] = (int(m.group(1)), int(m.group(3) or 0)) if m else None
    r["final_exchanges"] = int(m.group(2)) if m else None
    loops = sent / r["copy_packets"] if sent and r.get("copy_packets") else None
    r["expected_exchanges"] = loops * r["copy_exchanges"] if loops is not None else None
    first = pts[0][1] if pts else final
    span = final.t - first.t if final.t > first.t else 1.0
    ex = (final.get("exchanges_total") or 0) - (first.get("exchanges_total") or 0)
    r["exchanges"] = final.get("exchanges_total")
    r["exchanges_per_s"] = ex / span
    r["cpu_percent"] = (
        100 * (end.cpu_s - pts[0][0].cpu_s) / (end.t - pts[0][0].t) if end and end.t > pts[0][0].t else None
    )
    growth = (
        100 * (end.rss_mb - at_warm.rss_mb) / at_warm.rss_mb if end and at_warm and at_warm.rss_mb else None
    )
    r.update(rss_warm=at_warm.rss_mb if at_warm else None, rss_end=end.rss_mb if end else None, growth=growth)
    r["pss_warm"], r["pss_end"] = (at_warm.pss_mb, end.pss_mb) if at_warm and end else (None, None)
    grew = [(s.t, counted(s)[0], s.get("exchanges_total") or 0) for _, s in pts]
    totals_grow = len(grew) >= 2 and grew[-1][1] > grew[0][1] and grew[-1][2] > grew[0][2]
    cost = r["cost"]
    achieved = r.get("achieved_pps") or 0
    r["checks"] = [
        (
            f"the capture replayed at {args.pps} pps (at least 95% of it) for "
            f"{args.warmup:g} + {args.minutes:g} min",
            achieved >= 0.95 * args.pps and r["replay_seconds"] >= 0.99 * (args.warmup + args.minutes) * 60,
            f"tcpreplay: {achieved:.0f} pps for {r['replay_seconds']:.0f} s, {sent} packets sent "
            f"({r.get('failed')} failed)",
        ),
        (
            "RSS after the warm-up grows under 10%",
            growth is not None and growth < 10,
            f"{at_warm.rss_mb if at_warm else 0:.0f} MB at {warm / 60:g} min -> "
            f"{end.rss_mb if end else 0:.0f} MB at the end: "
            + (f"{growth:+.1f}%" if growth is not None else "no samples"),
        ),
        (
            "0 packets lost without being counted",
            r["lost"] == 0,
            f"tcpreplay sent {sent}, analyzer read {packets:.0f} + kernel dropped {dropped:.0f}: "
            f"lost {r['lost'] if r['lost'] is None else int(r['lost'])}",
        ),
        (
            f"scraping every {args.interval:g} s costs under 5% CPU",
            cost["percent"] < 5,
            f"{cost['cpu_per_scrape_s'] * 1000:.1f} ms CPU per scrape ({cost['bytes'] / 1024:.0f} KiB) / "
            f"{args.interval:g} s = {cost['percent']:.2f}% of a core (upper bound, idle CPU not taken off: "
            f"{cost['upper_percent']:.2f}%)",
        ),
        (
            "/metrics scraped, totals growing, no counter going down",
            totals_grow and not runs.decreased and not runs.failed_scrapes,
            f"{len(pts)} scrapes, {len(runs.failed_scrapes)} failed, {len(runs.decreased)} counter decreases",
        ),
        (
            "the final stats equal the last scrape (drops said); SIGTERM exits 0",
            r["summary_counts"] == (int(packets), int(dropped)) and r["rc"] == 0,
            f"stats: {r['summary_line'] or '(none)'}; exit {r['rc']} after {r['exit_seconds']:.1f} s",
        ),
    ]
    r["decreased"], r["failed_scrapes"] = runs.decreased[:20], runs.failed_scrapes[:20]
    r["tables_end"] = {
        "entries": final.by("table_entries", "table"),
        "evicted": final.by("evicted_total", "table"),
        "tcp_connections_tracked": final.get("tcp_connections_tracked"),
        "tcp_connections_evicted": final.get("tcp_connections_evicted_total"),
        "tcp_connections": final.get("tcp_connections_total"),
    }


def curve(runs: Run, args, points: int = 8) -> list[dict]:
    """A few samples, evenly spread, plus the one at the end of the warm-up."""
    pts = runs.samples
    if not pts:
        return []
    span = pts[-1][0].t
    want = sorted({args.warmup * 60, *(span * i / (points - 1) for i in range(points))})
    chosen: list[tuple[Usage, Scrape]] = []
    for w in want:
        best = min(pts, key=lambda p: abs(p[0].t - w))
        if best not in chosen:
            chosen.append(best)
    return [
        {
            "minute": u.t / 60,
            "rss_mb": u.rss_mb,
            "rss_each": u.rss_each,
            "pss_mb": u.pss_mb,
            "cpu_s": u.cpu_s,
            "packets": s.get("packets_total"),
            "exchanges": s.get("exchanges_total"),
            "tracked": s.get("tcp_connections_tracked"),
            "tables": tables_text(s).removeprefix(", tables "),
        }
        for u, s in sorted(chosen, key=lambda p: p[0].t)
    ]


# -- the report ------------------------------------------------------------------------------------


def machine() -> str:
    cpu = next(
        (
            x.split(":", 1)[1].strip()
            for x in Path("/proc/cpuinfo").read_text().splitlines()
            if "model name" in x
        ),
        platform.processor() or "?",
    )
    mem = re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text())
    gib = int(mem.group(1)) / 2**20 if mem else 0
    system = f"Linux {platform.release()}, Python {platform.python_version()}"
    return f"{cpu}, {os.cpu_count()} cores, {gib:.1f} GiB, {system}"


def report(r: dict, args) -> str:
    load = " / ".join
    lines = [
        f"## Soak: live --metrics for {args.minutes:g} min after a {args.warmup:g}-min warm-up "
        f"(issue 30, {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"* machine: {machine()}; load average (1/5/15 min) at start "
        f"{load(f'{x:.2f}' for x in r['load_start'])}, at end {load(f'{x:.2f}' for x in r['load_end'])}",
        f"* capture: `{r['capture']}`; replay: `{' '.join(r['replay'])}` (bench/live.py's veth "
        f"pair between two namespaces); sent {r.get('sent')} packets in {r['replay_seconds']:.0f} s "
        f"(tcpreplay: {r.get('achieved_pps')} pps, {r.get('failed')} failed)",
        f"* analyzer: `kafka-analyzer {' '.join(r['command'][r['command'].index('analyzer') + 1 :])}`; "
        f"/metrics scraped every {args.interval:g} s from the receiving namespace; RSS, PSS and CPU of its "
        f"processes (parent and workers) summed from /proc",
        f"* exchanges: {r['exchanges'] or 0:.0f} counted in /metrics by the end of the replay "
        f"({r['exchanges_per_s']:.0f}/s), {r['final_exchanges']} in the final stats (the connections "
        f"flushed); tcpreplay's loops hold {r['expected_exchanges'] or 0:.0f} ({r['copy_exchanges']} per "
        f"copy of {r['copy_packets']} packets, offline `export`)",
        f"* CPU over the replay: the analyzer {r['cpu_percent'] or 0:.0f}% of a core, tcpreplay "
        f"{100 * r['tcpreplay_cpu_s'] / r['replay_seconds']:.0f}%; the kernel received "
        f"{r['received'] or 0:.0f} packets",
        f"* scrape cost: {r['cost']['scrapes']} scrapes back to back after the replay (state full) took "
        f"{r['cost']['wall_s']:.1f} s and {r['cost']['cpu_s']:.2f} CPU s of the analyzer; its idle CPU in "
        f"equal windows before and after: {r['cost']['idle_cpu_per_s'] * 100:.1f}% of a core, taken off",
        "",
        "| criterion | result | figures |",
        "|---|---|---|",
    ]
    lines += [f"| {name} | {'PASS' if ok else 'FAIL'} | {text} |" for name, ok, text in r["checks"]]
    lines += [
        "",
        "| minute | RSS MB (sum) | parent + workers | PSS MB | CPU s | packets | exchanges "
        "| TCP connections tracked | tables |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for p in r["curve"]:
        lines.append(
            f"| {p['minute']:.1f} | {p['rss_mb']:.0f} | {each_text(p['rss_each'])} | "
            f"{p['pss_mb']:.0f} | {p['cpu_s']:.0f} | "
            f"{p['packets'] or 0:.0f} | {p['exchanges'] or 0:.0f} | {p['tracked'] or 0:.0f} | "
            f"{p['tables'] or '-'} |"
        )
    te = r["tables_end"]
    lines += [
        "",
        f"At the end: {te['tcp_connections'] or 0:.0f} TCP connections seen, "
        f"{te['tcp_connections_tracked'] or 0:.0f} tracked, "
        f"{te['tcp_connections_evicted'] or 0:.0f} evicted (--max-connections)"
        + (
            "; tables: " + ", ".join(f"{t} {n:.0f}" for t, n in sorted(te["entries"].items()))
            if te["entries"]
            else ""
        )
        + (
            "; evicted: " + ", ".join(f"{t} {n:.0f}" for t, n in sorted(te["evicted"].items()))
            if te["evicted"]
            else ""
        )
        + ".",
    ]
    if r["decreased"]:
        lines += ["", "Counters that went down:", "", *(f"- {x}" for x in r["decreased"])]
    if r["failed_scrapes"]:
        lines += ["", "Failed scrapes:", "", *(f"- {x}" for x in r["failed_scrapes"])]
    return "\n".join(lines) + "\n"


CLIENT_IP, BROKER_IP = bytes((10, 2, 0, 1)), bytes((10, 1, 0, 1))


def two_hosts(capture: Path) -> Path:
    """A copy of ``capture`` (pcap, Ethernet, IPv4) whose clients are CLIENT_IP and brokers
    BROKER_IP (a broker: the port a SYN without ACK goes to), IP header checksums recomputed.

    The perf capture is recorded on loopback: both ends are 127.0.0.1, and tcpreplay's
    ``--unique-ip`` (``fast_edit_packet``) adds the loop number to the higher address and takes it
    from the lower one, so with equal addresses the two directions of a connection get different
    address pairs from the second loop on: every later loop would be half-connections, no
    request paired with its response. With distinct addresses both directions move together."""
    out = capture.with_name(capture.stem + "-2hosts.pcap")
    if out.is_file() and out.stat().st_mtime >= capture.stat().st_mtime:
        return out
    data = capture.read_bytes()
    if data[:4] != bytes.fromhex("d4c3b2a1") or struct.unpack_from("<I", data, 20)[0] != 1:
        raise SystemExit(f"bench/soak.py: {capture.name}: a little-endian Ethernet pcap is needed")
    recs = []
    off = 24
    while off + 16 <= len(data):
        incl = struct.unpack_from("<I", data, off + 8)[0]
        recs.append((off, incl))
        off += 16 + incl
    brokers = set()
    for off, _incl in recs:  # the brokers' ports: where a SYN (no ACK) goes
        p = off + 16
        if data[p + 12 : p + 14] == b"\x08\x00" and data[p + 23] == 6:
            t = p + 14 + (data[p + 14] & 0x0F) * 4
            if data[t + 13] & 0x12 == 0x02:
                brokers.add(struct.unpack_from(">H", data, t + 2)[0])
    buf = bytearray(data)
    for off, incl in recs:
        p = off + 16
        if incl < 34 or buf[p + 12 : p + 14] != b"\x08\x00" or buf[p + 23] != 6:
            continue
        ip = p + 14
        t = ip + (buf[ip] & 0x0F) * 4
        to_broker = struct.unpack_from(">H", buf, t + 2)[0] in brokers
        buf[ip + 12 : ip + 16], buf[ip + 16 : ip + 20] = (
            (CLIENT_IP, BROKER_IP) if to_broker else (BROKER_IP, CLIENT_IP)
        )
        buf[ip + 10 : ip + 12] = b"\0\0"
        words = struct.unpack_from(f">{(buf[ip] & 0x0F) * 2}H", buf, ip)
        total = sum(words)
        while total >> 16:
            total = (total & 0xFFFF) + (total >> 16)
        struct.pack_into(">H", buf, ip + 10, ~total & 0xFFFF)
    out.write_bytes(bytes(buf))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--capture", type=Path, help="the capture (default bench/out/bench-50mb.pcap, recorded if missing)"
    )
    ap.add_argument("--pps", type=int, default=20000)
    ap.add_argument("--minutes", type=float, default=30.0, help="after the warm-up (30)")
    ap.add_argument("--warmup", type=float, default=5.0, help="minutes before the RSS reference (5)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--interval", type=float, default=5.0, help="seconds between scrapes and samples (5)")
    ap.add_argument("--scrapes", type=int, default=100, help="back-to-back scrapes of the cost measurement")
    ap.add_argument("--port", type=int, default=9308, help="of --metrics, in the receiving namespace")
    ap.add_argument("--live-args", default="", help="more arguments for live, e.g. '--max-connections 5000'")
    ap.add_argument(
        "--exit-timeout", type=float, default=600, help="seconds live may take to exit after SIGTERM (600)"
    )
    ap.add_argument("--ns-prefix", default="kla-soak", help="the namespaces: PREFIX-tx, PREFIX-rx")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--no-results", action="store_true", help="never write bench/RESULTS.md")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/soak.py needs root (namespaces, capture)", file=sys.stderr)
        return 2
    problems = [
        f"{x} must be positive" for x in ("pps", "minutes", "warmup", "interval", "scrapes", "workers")
    ]
    problems = [p for p in problems if getattr(args, p.split()[0]) <= 0]
    problems += [] if shutil.which("tcpreplay") else ["needs tcpreplay"]
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        problems.append("needs prometheus_client (pip install 'kafka-analyzer[live]')")
    if problems:
        print("bench/soak.py: " + "; ".join(problems), file=sys.stderr)
        return 2
    try:
        capture = args.capture or run.make_capture(50, timeout=3600)
    except run.BenchError as exc:
        print(f"bench/soak.py: {exc}", file=sys.stderr)
        return 2
    if not capture.is_file():
        print(f"bench/soak.py: no such capture: {capture}", file=sys.stderr)
        return 2
    capture = two_hosts(capture)
    print(f"offline reference: {capture.name} ", end="", flush=True)
    copy = {"copy_packets": live.count_packets(capture), "copy_exchanges": live.offline(capture)}
    print(f"{copy['copy_packets']} packets, {copy['copy_exchanges']} exchanges", flush=True)
    live.set_prefix(args.ns_prefix)
    live.setup()
    print(
        f"soak: {capture.name} at {args.pps} pps, {args.warmup:g} + {args.minutes:g} min, "
        f"{args.workers} workers, /metrics every {args.interval:g} s",
        flush=True,
    )
    try:
        r = soak(args, capture, args.port, copy)
    except KeyboardInterrupt:
        print("bench/soak.py: interrupted", file=sys.stderr)
        return 130
    except (OSError, RuntimeError) as exc:  # live did not start, /metrics did not answer
        print(f"bench/soak.py: {exc}", file=sys.stderr)
        return 1
    finally:
        live.teardown()
    text = report(r, args)
    print()
    print(text, end="")
    if args.json:
        args.json.write_text(json.dumps(r, indent=1, default=str))
    full = args.minutes >= 30 and args.warmup >= 5
    if full and not args.no_results:
        old = run.RESULTS.read_text() if run.RESULTS.exists() else ""
        run.RESULTS.write_text(run.splice_results(old, text, BEGIN, END))
        print(f"written to {run.RESULTS}")
    elif not full:
        print("a short run: bench/RESULTS.md not written (it takes --minutes >= 30 and --warmup >= 5)")
    return 0 if all(ok for _, ok, _ in r["checks"]) else 1


if __name__ == "__main__":
    sys.exit(main())
