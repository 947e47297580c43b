"""kafka-analyzer against tshark on one large capture, in one run; writes its part of bench/RESULTS.md.

    .venv/bin/python bench/run.py [--size-mb 250] [--rounds 3] [--capture PATH] [--gb] [--profile]

1. capture: ``bench/out/bench-<N>mb.pcap`` recorded by ``tools/gen_captures.py --bench N``
   (librdkafka producers with every codec and a consumer group; reused when it exists, needs
   root to record), or ``--capture PATH``. Broker ports come from the ``.json`` next to it,
   else from the SYNs in the capture.
2. foundation: capture reading + TCP reassembly + Kafka framing (``bench/frames.py``) against
   ``tshark -q -z io,phs`` with every broker port decoded as Kafka.
3. dissector: ``decode_request``/``decode_response`` speed over the frames of ``captures/*.pcap``
   and of the big capture (``bench/decode.py``, in-process timing, no tshark counterpart).
4. records: ``bench/bench_records.py`` (records/s and MB/s per format and codec).
5. performance: ``kafka-analyzer stats`` against ``tshark -T fields`` of the main Kafka fields,
   and ``kafka-analyzer export --records`` against ``tshark -T json -J kafka``; with ``--gb``
   also ``stats`` on the capture concatenated 4 times (``bench/pcapcat.py``, about 1 GB).
6. the same on a capture recorded with the mock capped at the API versions tshark 4.0 decodes
   (``bench/gen_capped.py``). tshark 4.0 does not dissect the Produce v10 / Fetch v16 librdkafka
   speaks by default, so its JSON of the main capture holds no records at all; the
   ``export --records`` ratio target is judged only where tshark dissects every Produce and
   Fetch request (the rule for tshark 4.0: compare only what it decodes cleanly).
7. start-up (``bench/startup.py``): ``stats`` of a 10-packet capture against ``python -c pass``,
   written into its own block of bench/RESULTS.md; ``--startup-only`` runs only this step (no
   tshark, no big capture).

Every command runs ``--rounds`` times (ours and tshark alternating, page cache warm); the
median and best wall times are reported, and the peak RSS of each process from ``os.wait4``.
Ratios are ours/tshark of the medians: below 1.0 we are faster.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
OUT = BENCH / "out"
RESULTS = BENCH / "RESULTS.md"
PY = sys.executable
RSS_LIMIT_MB = 200.0
CAPPED_TAG = "tshark-decodable capture"
TSHARK_FIELDS = (
    "frame.number",
    "kafka.request_key",
    "kafka.request.version",
    "kafka.correlation_id",
    "kafka.topic_name",
    "kafka.error",
)


class BenchError(Exception):
    pass


# -- measuring one process ------------------------------------------------------------------------


@dataclass
class Sample:
    seconds: float
    rss_mb: float  # peak resident set size of the process (ru_maxrss from wait4)
    rc: int


def measure(
    cmd: list[str], timeout: float, stdout: Path | None = None, ok: tuple[int, ...] = (0,)
) -> tuple[Sample, str]:
    """Run ``cmd`` once; wall time and peak RSS of that very process (os.wait4 gives its own
    rusage, not the sum over every child we ever ran). Returns the sample and stderr's tail."""
    with tempfile.TemporaryFile() as err, contextlib.ExitStack() as stack:
        out = stack.enter_context(stdout.open("wb")) if stdout else subprocess.DEVNULL
        killed = threading.Event()
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=ROOT, start_new_session=True)

        def kill() -> None:
            killed.set()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, ru = os.wait4(proc.pid, 0)
        except BaseException:
            kill()
            proc.wait()
            raise
        finally:
            timer.cancel()
        elapsed = time.perf_counter() - t0
        proc.returncode = rc = os.waitstatus_to_exitcode(status)
        err.seek(0)
        tail = "\n".join(
            line
            for line in err.read().decode(errors="replace").splitlines()
            if "Running as user" not in line  # tshark's warning when run as root
        )[-2000:]
    if killed.is_set():
        raise BenchError(f"timed out after {timeout:.0f} s: {shlex.join(cmd)}")
    if rc not in ok:
        raise BenchError(f"exit code {rc}: {shlex.join(cmd)}\n{tail}")
    return Sample(elapsed, ru.ru_maxrss / 1024.0, rc), tail


@dataclass
class Series:
    """The rounds of one command."""

    label: str
    cmd: list[str]
    samples: list[Sample] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(s.seconds for s in self.samples)

    @property
    def best(self) -> float:
        return min(s.seconds for s in self.samples)

    @property
    def rss(self) -> float:
        return max(s.rss_mb for s in self.samples)

    def run(self, timeout: float, stdout: Path | None = None, ok: tuple[int, ...] = (0,)) -> str:
        s, tail = measure(self.cmd, timeout, stdout, ok)
        self.samples.append(s)
        if s.rc and tail:
            note = f"exit code {s.rc}: {tail.splitlines()[-1]}"
            if note not in self.notes:
                self.notes.append(note)
        print(
            f"    {self.label:<34} round {len(self.samples)}: {s.seconds:8.2f} s  {s.rss_mb:7.1f} MB",
            flush=True,
        )
        return tail


@dataclass
class Comparison:
    name: str
    ours: Series
    tshark: Series | None
    target_ratio: float | None  # ours/tshark must be at most this
    target_rss: float | None = RSS_LIMIT_MB
    facts: dict[str, str] = field(default_factory=dict)
    unjudged: str | None = None  # why the ratio target does not apply to this capture

    @property
    def ratio(self) -> float | None:
        if self.tshark is None or not self.ours.samples or not self.tshark.samples:
            return None
        return self.ours.median / self.tshark.median

    def verdict(self) -> str:
        bad = []
        if self.target_ratio is not None and self.ratio is not None and self.ratio > self.target_ratio:
            bad.append(f"ratio > {self.target_ratio:g}")
        if self.target_rss is not None and self.ours.samples and self.ours.rss >= self.target_rss:
            bad.append(f"RSS >= {self.target_rss:g} MB")
        if bad:
            return "MISSED: " + ", ".join(bad)
        return f"RSS met; ratio not judged: {self.unjudged}" if self.unjudged else "met"

    def target_text(self) -> str:
        parts = []
        if self.target_ratio is not None:
            parts.append(f"ratio <= {self.target_ratio:g}")
        if self.target_rss is not None:
            parts.append(f"RSS < {self.target_rss:g} MB")
        return ", ".join(parts) or "-"


def run_rounds(comps: list[Comparison], rounds: int, timeout: float, outputs: dict) -> None:
    """Every comparison, ``rounds`` times; ours and tshark alternate who goes first."""
    for r in range(rounds):
        print(f"  round {r + 1}/{rounds}", flush=True)
        for c in comps:
            pair = [(c.ours, "ours"), (c.tshark, "tshark")]
            if r % 2:
                pair.reverse()
            for series, who in pair:
                if series is None:
                    continue
                stdout, ok, parse = outputs.get((c.name, who), (None, (0,), None))
                series.run(timeout, stdout, ok)
                if parse is not None and r == 0:
                    c.facts.update(parse())


# -- environment ----------------------------------------------------------------------------------


def machine() -> dict[str, str]:
    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    ram = "unknown"
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram = f"{int(line.split()[1]) / 2**20:.1f} GiB"
    tshark = subprocess.run(["tshark", "--version"], capture_output=True, text=True, timeout=60)
    return {
        "CPU": cpu,
        "cores": str(os.cpu_count()),
        "RAM": ram,
        "OS": f"{platform.system()} {platform.release()}",
        "Python": platform.python_version() + f" ({platform.python_implementation()})",
        "tshark": (tshark.stdout.splitlines() or ["?"])[0],
        "kafka-analyzer": _analyzer_version(),
        "load average at start (1/5/15 min)": _load(),
    }


def _load() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def _analyzer_version() -> str:
    try:
        from analyzer import __version__
    except ImportError:
        return "?"
    return __version__


def analyzer_cmd() -> list[str]:
    script = Path(PY).parent / "kafka-analyzer"
    return [str(script)] if script.exists() else [PY, "-m", "analyzer"]


# -- the capture ----------------------------------------------------------------------------------


def make_capture(size_mb: float, timeout: float, capped: bool = False) -> Path:
    """bench/out/bench-<N>mb.pcap, or bench/out/capped/... for the tshark-decodable variant."""
    tag = f"{size_mb:g}mb"
    out = OUT / "capped" if capped else OUT
    pcap = out / f"bench-{tag}.pcap"
    if pcap.exists() and (out / f"bench-{tag}.json").exists():
        print(f"capture: reusing {pcap.relative_to(ROOT)}")
        return pcap
    if os.geteuid() != 0:
        raise BenchError(
            f"{pcap} does not exist and recording it needs root (network namespace and tcpdump): "
            "run as root, or pass --capture PATH"
        )
    if capped:
        print(f"capture: recording {pcap.relative_to(ROOT)} with bench/gen_capped.py {size_mb:g} ...")
        cmd = [PY, str(BENCH / "gen_capped.py"), f"{size_mb:g}", "--out", str(out)]
    else:
        print(
            f"capture: recording {pcap.relative_to(ROOT)} with tools/gen_captures.py --bench {size_mb:g} ..."
        )
        cmd = [PY, str(ROOT / "tools" / "gen_captures.py"), "--bench", f"{size_mb:g}", "--out", str(out)]
    try:
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise BenchError(f"recording the capture timed out after {timeout:.0f} s") from exc
    if r.returncode or not pcap.exists():
        raise BenchError(f"recording failed (exit {r.returncode}):\n{(r.stdout + r.stderr)[-3000:]}")
    return pcap


def capture_info(pcap: Path) -> dict:
    """Size, packets and time span (our reader), plus the recorder's summary if there is one."""
    from analyzer.capture.files import CaptureFile
    from analyzer.reassembly.packet import decode_tcp

    cap = CaptureFile(str(pcap))
    packets = 0
    first = last = None
    syn_ports: dict[int, int] = {}
    for _index, ts, linktype, data in cap:
        packets += 1
        if first is None:
            first = ts
        last = ts
        seg = decode_tcp(linktype, data)
        if type(seg) is tuple and seg[6] & 0x12 == 0x02:  # SYN without ACK: towards a server
            syn_ports[seg[3]] = syn_ports.get(seg[3], 0) + 1
    info: dict = {
        "path": pcap,
        "size_bytes": pcap.stat().st_size,
        "format": cap.format,
        "packets": packets,
        "duration_s": (last - first) if first is not None else 0.0,
        "issues": [i.message for i in cap.issues],
        "meta": None,
    }
    meta_path = pcap.with_suffix(".json")
    if meta_path.exists():
        with contextlib.suppress(ValueError):
            info["meta"] = json.loads(meta_path.read_text())
    meta = info["meta"] or {}
    info["ports"] = list(meta.get("broker_ports") or sorted(syn_ports))
    if not info["ports"]:
        raise BenchError(f"{pcap}: no broker ports (no .json next to it and no SYN in the capture)")
    return info


def warm(path: Path) -> None:
    """Read the file once so every measured run finds it in the page cache."""
    with path.open("rb") as f:
        while f.read(16 << 20):
            pass


def ensure_gb(pcap: Path, timeout: float) -> Path:
    big = OUT / f"{pcap.stem}-x4.pcap"  # ours even when the capture is not (--capture elsewhere)
    if big.exists() and big.stat().st_mtime >= pcap.stat().st_mtime:
        print(f"1 GB capture: reusing {big.relative_to(ROOT) if big.is_relative_to(ROOT) else big}")
        return big
    big.parent.mkdir(parents=True, exist_ok=True)
    print(f"1 GB capture: concatenating {pcap.name} 4 times ...", flush=True)
    cmd = [PY, str(BENCH / "pcapcat.py"), str(pcap), "-n", "4", "-o", str(big)]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    if r.returncode:
        raise BenchError(f"pcapcat failed: {r.stderr.strip()}")
    return big


def capped_capture(size_mb: float, timeout: float) -> dict:
    pcap = make_capture(size_mb, timeout, capped=True)
    cap = capture_info(pcap)
    print(
        f"capture: {_rel(pcap)}: {cap['size_bytes'] / 2**20:.1f} MiB, {cap['packets']} packets, "
        f"{cap['duration_s']:.1f} s, broker ports {cap['ports']}",
        flush=True,
    )
    warm(pcap)
    cap["undecoded"] = tshark_undecoded(cap, timeout)
    return cap


# -- the benchmarks -------------------------------------------------------------------------------


def tshark_decode_as(ports: list[int]) -> list[str]:
    return [a for p in ports for a in ("-d", f"tcp.port=={p},kafka")]


def foundation(cap: dict, rounds: int, timeout: float) -> Comparison:
    pcap = str(cap["path"])
    ours = Series("frames.py (read+reassemble+frame)", [PY, str(BENCH / "frames.py"), pcap, "--json"])
    tshark = Series("tshark -q -z io,phs", ["tshark", "-r", pcap, *tshark_decode_as(cap["ports"]), "-q"])
    tshark.cmd += ["-z", "io,phs"]
    c = Comparison("foundation", ours, tshark, 1.0, None)
    ours_out, tshark_out = OUT / "frames-ours.json", OUT / "frames-tshark.txt"

    def facts_ours() -> dict[str, str]:
        d = json.loads(ours_out.read_text())
        cap["frames"] = d
        return {
            "our Kafka frames": f"{d['frames']} ({d['requests']} requests, {d['responses']} responses, "
            f"{d['frame_bytes'] / 1e6:.1f} MB) in {d['connections']} TCP connections",
            "our in-process time": f"{d['seconds']:.2f} s",
        }

    def facts_tshark() -> dict[str, str]:
        m = re.search(r"^\s*kafka\s+frames:(\d+)", tshark_out.read_text(), re.M)
        mal = re.search(r"^\s*_ws\.malformed\s+frames:(\d+)", tshark_out.read_text(), re.M)
        return {
            "tshark packets with Kafka": m.group(1) if m else "?",
            "tshark malformed packets": mal.group(1) if mal else "0",
        }

    outputs = {
        ("foundation", "ours"): (ours_out, (0,), facts_ours),
        ("foundation", "tshark"): (tshark_out, (0, 2), facts_tshark),
    }
    run_rounds([c], rounds, timeout, outputs)
    return c


def performance(cap: dict, rounds: int, timeout: float, tag: str = "", export: bool = True) -> list:
    pcap = str(cap["path"])
    ka = analyzer_cmd()
    decode_as = tshark_decode_as(cap["ports"])
    fields = [a for f in TSHARK_FIELDS for a in ("-e", f)]
    suffix = f" ({tag})" if tag else ""
    slug = "-" + re.sub(r"[^A-Za-z0-9]+", "-", tag).strip("-") if tag else ""
    stats = Comparison(
        "stats" + suffix,
        Series("kafka-analyzer stats", [*ka, "stats", pcap]),
        Series("tshark -T fields", ["tshark", "-r", pcap, *decode_as, "-T", "fields", *fields]),
        1.0,
    )
    comps = [stats]
    if export:
        # The guide's rule for tshark 4.0: compare only what it decodes cleanly. Where it leaves
        # Produce / Fetch PDUs undissected its JSON holds none of their records, so the ratio
        # is printed but judged on the tshark-decodable capture instead.
        undissected = cap.get("records_undissected", 0)
        unjudged = (
            f"tshark leaves {undissected} Produce/Fetch requests undissected here, so its JSON has"
            f" no records; judged on the {CAPPED_TAG}"
            if undissected
            else None
        )
        comps.append(
            Comparison(
                "export --records" + suffix,
                Series(
                    "kafka-analyzer export --records", [*ka, "export", pcap, "--records", "-o", "/dev/null"]
                ),
                Series(
                    "tshark -T json -J kafka", ["tshark", "-r", pcap, *decode_as, "-T", "json", "-J", "kafka"]
                ),
                None if unjudged else 0.5,
                unjudged=unjudged,
            )
        )
    ours_out = OUT / f"stats-ours{slug}.txt"
    tshark_out = OUT / f"stats-tshark{slug}.tsv"

    def facts_ours() -> dict[str, str]:
        m = re.search(r"(\d+) packets, (\d+) TCP connections, (\d+) Kafka exchanges", ours_out.read_text())
        return {"our exchanges": m.group(3) if m else "?"}

    def facts_tshark() -> dict[str, str]:
        pdus = requests = 0
        with tshark_out.open(encoding="utf-8", errors="replace") as f:
            for line in f:
                cols = line.rstrip("\n").split("\t")
                if len(cols) >= 4:
                    pdus += sum(1 for c in cols[3].split(",") if c)
                    requests += sum(1 for k in cols[1].split(",") if k)
        return {"tshark Kafka PDUs (correlation ids)": str(pdus), "tshark requests": str(requests)}

    outputs = {
        (stats.name, "ours"): (ours_out, (0, 1), facts_ours),
        (stats.name, "tshark"): (tshark_out, (0, 2), facts_tshark),
    }
    for c in comps[1:]:
        outputs[(c.name, "ours")] = (None, (0, 1), None)
        outputs[(c.name, "tshark")] = (None, (0, 2), None)
    run_rounds(comps, rounds, timeout, outputs)
    return comps


def tshark_undecoded(cap: dict, timeout: float) -> str:
    """What tshark could not dissect (malformed or 'undecoded' expert info), per request API
    and version: not timed, it explains what tshark's figures include."""
    from analyzer.dissect import schema
    from analyzer.dissect.constants import ApiKey

    cmd = ["tshark", "-r", str(cap["path"]), *tshark_decode_as(cap["ports"])]
    cmd += ["-Y", "_ws.malformed or _ws.expert.group == 0x05000000", "-T", "fields"]
    cmd += ["-e", "kafka.request_key", "-e", "kafka.request.version", "-e", "kafka.response_key"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    reqs: dict[tuple[int, int], int] = {}
    responses = other = 0
    for line in r.stdout.splitlines():
        cols = [*line.split("\t"), "", "", ""][:3]
        if cols[0]:
            for k, v in zip(cols[0].split(","), cols[1].split(","), strict=False):
                if k and v:
                    reqs[(int(k), int(v))] = reqs.get((int(k), int(v)), 0) + 1
        elif cols[2]:
            responses += 1
        else:
            other += 1
    cap["records_undissected"] = sum(n for (k, _v), n in reqs.items() if k in (ApiKey.PRODUCE, ApiKey.FETCH))
    if not reqs and not responses and not other:
        return "none"
    parts = [
        f"{schema.api_name(k) or k} v{v} x{n}" for (k, v), n in sorted(reqs.items(), key=lambda kv: -kv[1])
    ]
    return (
        f"requests: {', '.join(parts) or 'none'}; {responses} response packets with a known API"
        f" and {other} more packets whose PDU tshark could not attribute to an API"
    )


def dissector(cap: dict, rounds: int, timeout: float) -> dict:
    project = sorted(str(p) for p in (ROOT / "captures").glob("*.pcap"))
    results = {}
    for label, paths in (("captures/*.pcap", project), (cap["path"].name, [str(cap["path"])])):
        if not paths:
            continue
        print(f"  decoding the frames of {label} ...", flush=True)
        cmd = [PY, str(BENCH / "decode.py"), *paths, "--rounds", str(rounds), "--json"]
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        if r.returncode:
            raise BenchError(f"decode.py failed on {label}:\n{r.stderr[-2000:]}")
        d = json.loads(r.stdout)
        results[label] = d
        for mode in ("summary", "bodies"):
            x = d[mode]
            print(
                f"    {label:<34} {mode:<8} {x['frames_per_s']:>10,.0f} frames/s {x['mb_per_s']:>8.1f} MB/s",
                flush=True,
            )
    return results


def records(rounds: int, timeout: float) -> str:
    print("  bench/bench_records.py ...", flush=True)
    cmd = [PY, str(BENCH / "bench_records.py"), "--repeat", str(max(rounds, 1))]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    if r.returncode:
        raise BenchError(f"bench_records.py failed:\n{r.stderr[-2000:]}")
    print("\n".join("    " + line for line in r.stdout.splitlines()), flush=True)
    return r.stdout.rstrip()


def profile(cap: dict, timeout: float) -> str:
    print("  python -m cProfile -s tottime -m analyzer stats ...", flush=True)
    cmd = [PY, "-m", "cProfile", "-s", "tottime", "-m", "analyzer", "stats", str(cap["path"])]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    lines = r.stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if "function calls" in line), None)
    if start is None:
        raise BenchError(f"no profile in the output (exit {r.returncode}):\n{r.stderr[-2000:]}")
    head = next((i for i in range(start, len(lines)) if lines[i].lstrip().startswith("ncalls")), start)
    return "\n".join([lines[start].strip(), *lines[head : head + 16]])


# -- report ---------------------------------------------------------------------------------------


def fmt_s(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def summary_rows(comps: list[Comparison]) -> list[list[str]]:
    rows = []
    for c in comps:
        t = c.tshark
        have_t = t is not None and t.samples
        rows.append(
            [
                c.name,
                fmt_s(c.ours.median),
                fmt_s(c.ours.best),
                fmt_s(t.median) if have_t else "-",
                fmt_s(t.best) if have_t else "-",
                f"{c.ratio:.2f}" if c.ratio is not None else "-",
                f"{c.tshark.median / c.ours.median:.2f}x" if c.ratio is not None else "-",
                f"{c.ours.rss:.0f}",
                f"{t.rss:.0f}" if have_t else "-",
                c.target_text(),
                c.verdict(),
            ]
        )
    return rows


HEAD = [
    "test",
    "ours median s",
    "ours best s",
    "tshark median s",
    "tshark best s",
    "ratio ours/tshark",
    "speed-up",
    "ours peak RSS MB",
    "tshark peak RSS MB",
    "target",
    "result",
]


def text_table(head: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True))]
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(out)


def md_table(head: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def _rounds_text(s: Series) -> str:
    return ", ".join(f"{x.seconds:.2f} s / {x.rss_mb:.0f} MB" for x in s.samples)


def write_results(ctx: dict) -> str:
    cap = ctx["capture"]
    meta = cap.get("meta") or {}
    now = ctx["date"]
    lines = [
        f"Written by `bench/run.py` on {now} (`{ctx['command']}`); every figure below comes from",
        "that one run. Ratios are ours/tshark of the median wall times (below 1.0 we are faster);",
        "peak RSS is each process's own `ru_maxrss` (from `os.wait4`), the highest over the rounds.",
        f"{ctx['rounds']} round(s) per command, ours and tshark alternating, capture in the page cache.",
        "",
        "## Machine",
        "",
        *[f"* {k}: {v}" for k, v in ctx["machine"].items()],
        "",
        "## Capture",
        "",
        f"* file: `{_rel(cap['path'])}`, {cap['size_bytes'] / 2**20:.1f} MiB ({cap['size_bytes']} bytes),"
        f" {cap['format']}",
        f"* {cap['packets']} packets over {cap['duration_s']:.1f} s of traffic"
        + (f", {cap['frames']['connections']} TCP connections" if cap.get("frames") else ""),
    ]
    if cap.get("frames"):
        f = cap["frames"]
        lines.append(
            f"* {f['frames']} Kafka frames ({f['requests']} requests, {f['responses']} responses), "
            f"{f['frame_bytes'] / 1e6:.1f} MB of frames"
        )
    if meta:
        produced = meta.get("records", {}).get("produced", {})
        consumed = meta.get("records", {}).get("consumed", {})
        lines += [
            f"* recorded by `tools/gen_captures.py --bench` with {meta.get('client_version', '?')}:"
            f" one producer per codec ({', '.join(meta.get('codecs', []))}), acks=all, linger.ms=5,"
            " and one consumer group reading every topic, against librdkafka's mock cluster"
            f" ({len(meta.get('broker_ports', []))} brokers), 1500-byte MTU",
            f"* records produced: {sum(produced.values())} ({_counts(produced)}); consumed:"
            f" {sum(consumed.values())} ({_counts(consumed)})",
            f"* payload: {meta.get('payload', '?')}",
        ]
    lines += [
        f"* broker ports given to tshark (`-d tcp.port==P,kafka`): {', '.join(map(str, cap['ports']))};"
        " kafka-analyzer finds Kafka by content (no `--port`)",
    ]
    if cap["issues"]:
        lines.append(f"* capture issues: {'; '.join(cap['issues'])}")
    if cap.get("undecoded"):
        lines.append(
            f"* what tshark could not dissect (malformed or unsupported version): {cap['undecoded']}"
        )
    ccap = ctx.get("capped")
    if ccap:
        lines += [
            "",
            f"### The {CAPPED_TAG}",
            "",
            "tshark 4.0 stops at the request versions librdkafka negotiates with today's brokers (Produce",
            "v10, Fetch v16, Metadata v13, ...): it marks those PDUs malformed or undecoded and never opens",
            "their record batches, so on the capture above its JSON holds no records and the `export",
            "--records` comparison is not like for like. `bench/gen_capped.py` records the same traffic",
            "with the mock cluster advertising at most the versions tshark 4.0 decodes (the",
            "`librdkafka-capped-apis-gzip` caps: Produce v8, Fetch v11, ListOffsets v5, Metadata v8,",
            "OffsetCommit v8, no telemetry APIs); the rows marked *" + CAPPED_TAG + "* use it.",
            "Following the project's rule for tshark 4.0 (compare only what it decodes cleanly), the",
            "`export --records` target is judged on this capture; on the capture above its ratio is",
            "printed but not judged.",
            "",
            f"* file: `{_rel(ccap['path'])}`, {ccap['size_bytes'] / 2**20:.1f} MiB, {ccap['packets']} packets"
            f" over {ccap['duration_s']:.1f} s; broker ports {', '.join(map(str, ccap['ports']))}",
            f"* what tshark could not dissect: {ccap.get('undecoded', '?')}",
        ]
    lines += ["", "## Summary", "", md_table(HEAD, summary_rows(ctx["comparisons"])), ""]
    for c in ctx["comparisons"]:
        lines += [f"### {c.name}", ""]
        for s in (c.ours, c.tshark):
            if s is None:
                continue
            lines.append(f"* `{_cmd_text(s.cmd)}`")
            lines.append(f"  * rounds: {_rounds_text(s)}")
            lines += [f"  * note: {n}" for n in s.notes]
        lines += [f"* {k}: {v}" for k, v in c.facts.items()]
        lines.append("")
    lines += ["## Dissector (decode only, in-process)", ""]
    if ctx.get("dissector"):
        lines += [
            "`bench/decode.py`: frames collected first, then only `decode_request`/`decode_response` timed",
            "(each response with its request's api key and version). *summary*: default options (record",
            "batches checked and counted, as `stats`); *bodies*: record keys, values and headers decoded",
            "(as `export --records`). MB/s counts whole frames as on the wire.",
            "",
        ]
        head = ["frames of", "frames", "MB", "mode", "frames/s (median)", "MB/s (median)", "frames/s (best)"]
        rows = []
        for label, d in ctx["dissector"].items():
            for mode in ("summary", "bodies"):
                x = d[mode]
                rows.append(
                    [
                        f"`{label}`",
                        str(d["frames"]),
                        f"{d['frame_bytes'] / 1e6:.1f}",
                        mode,
                        f"{x['frames_per_s']:,.0f}",
                        f"{x['mb_per_s']:.1f}",
                        f"{x['best_frames_per_s']:,.0f}",
                    ]
                )
        lines += [md_table(head, rows), ""]
    lines += _section_text("Records (`bench/bench_records.py`)", ctx.get("records"))
    lines += _section_text("Profile (`python -m cProfile -s tottime -m analyzer stats`)", ctx.get("profile"))
    if ctx["errors"]:
        lines += ["## Errors", "", *[f"* {e}" for e in ctx["errors"]], ""]
    lines += [
        "## Reproduce",
        "",
        "```sh",
        f".venv/bin/python {ctx['command']}  # as root when the capture must be recorded",
        "```",
        "",
    ]
    text = "\n".join(lines)
    RESULTS.write_text(splice_results(RESULTS.read_text() if RESULTS.exists() else "", text))
    return text


# bench/RESULTS.md is shared: bench/run.py owns the text between these two lines and rewrites
# only that; the sections others write by hand (TUI, live capture, before/after comparisons)
# stay where they are, outside the markers.
BEGIN = "<!-- bench/run.py: begin; written by bench/run.py, edit outside these markers -->"
END = "<!-- bench/run.py: end -->"


def splice_results(old: str, part: str) -> str:
    """``old`` with the text between the markers replaced by ``part``. Without markers (a new file,
    or one from before them) the part goes first, under the file's title, and the rest is kept."""
    block = f"{BEGIN}\n{part.rstrip()}\n{END}\n"
    if BEGIN in old and END in old.split(BEGIN, 1)[1]:
        head, rest = old.split(BEGIN, 1)
        after = rest.split(END, 1)[1].lstrip("\n")
        return head + block + ("\n" + after if after else "")
    title = "# Benchmark results\n"
    body = old[len(title) :] if old.startswith(title) else old
    return title + "\n" + block + ("\n" + body.lstrip("\n") if body.strip() else "")


def _section_text(title: str, body: str | None) -> list[str]:
    if not body:
        return []
    return [f"## {title}", "", "```", body, "```", ""]


def _counts(d: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(d.items()))


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p)


def _cmd_text(cmd: list[str]) -> str:
    return shlex.join(_rel(Path(a)) if a.startswith(str(ROOT)) else a for a in cmd)


# -- main -----------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=float, default=250.0, help="size of the capture to record or reuse")
    ap.add_argument("--capture", type=Path, help="use this capture instead of bench/out/bench-<N>mb.pcap")
    ap.add_argument("--rounds", type=int, default=3, help="runs of every command (median, best)")
    ap.add_argument("--gb", action="store_true", help="also `stats` on the capture concatenated 4 times")
    ap.add_argument("--profile", action="store_true", help="also profile `stats` once with cProfile")
    ap.add_argument(
        "--capped",
        action=argparse.BooleanOptionalAction,
        help="also stats/export on a capture recorded with the mock capped at the API versions tshark 4.0"
        " decodes (bench/gen_capped.py), so tshark decodes the record batches too; default: on unless"
        " --capture is given",
    )
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds allowed to each command")
    ap.add_argument(
        "--startup-only",
        action="store_true",
        help="only the start-up step (bench/startup.py, 11 rounds), into its block of bench/RESULTS.md",
    )
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    if args.capped is None:
        args.capped = args.capture is None
    return args


class Run:
    """One run of the bench: what it measured so far (``ctx``, read by :func:`write_results`) and
    the errors of the steps that failed (each step fails alone; the others still run)."""

    def __init__(self, args: argparse.Namespace, argv: list[str] | None) -> None:
        self.args = args
        self.ctx: dict = {
            "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "command": " ".join(["bench/run.py", *(argv if argv is not None else sys.argv[1:])]),
            "rounds": args.rounds,
            "machine": machine(),
            "comparisons": [],
            "errors": [],
        }

    def step(self, title: str, fn, *a) -> object:
        print(f"\n== {title}", flush=True)
        try:
            return fn(*a)
        except BenchError as exc:
            print(f"bench/run.py: {title}: {exc}", file=sys.stderr)
            self.ctx["errors"].append(f"{title}: {exc}")
        except subprocess.TimeoutExpired as exc:
            print(f"bench/run.py: {title}: timed out: {exc}", file=sys.stderr)
            self.ctx["errors"].append(f"{title}: timed out after {exc.timeout:.0f} s")
        return None

    def compare(self, title: str, fn, *a) -> None:
        """A step whose result is one comparison or a list of them."""
        got = self.step(title, fn, *a)
        if isinstance(got, Comparison):
            self.ctx["comparisons"].append(got)
        elif got:
            self.ctx["comparisons"] += got

    def main_capture(self) -> dict:
        args = self.args
        pcap = args.capture.resolve() if args.capture else make_capture(args.size_mb, args.timeout)
        if not pcap.exists():
            raise BenchError(f"no such capture: {pcap}")
        cap = capture_info(pcap)
        self.ctx["capture"] = cap
        print(
            f"capture: {_rel(pcap)}: {cap['size_bytes'] / 2**20:.1f} MiB, {cap['packets']} packets, "
            f"{cap['duration_s']:.1f} s, broker ports {cap['ports']}",
            flush=True,
        )
        warm(pcap)
        with contextlib.suppress(subprocess.TimeoutExpired):
            cap["undecoded"] = tshark_undecoded(cap, args.timeout)
        return cap

    def on_main_capture(self, cap: dict) -> None:
        rounds, timeout = self.args.rounds, self.args.timeout
        self.compare("foundation: read + reassemble + frame", foundation, cap, rounds, timeout)
        self.ctx["dissector"] = self.step("dissector: decode only", dissector, cap, rounds, timeout)
        self.ctx["records"] = self.step("records: bench/bench_records.py", records, rounds, timeout)
        self.compare("performance: stats and export --records", performance, cap, rounds, timeout)

    def on_gb_capture(self, cap: dict) -> None:
        try:
            gb = ensure_gb(cap["path"], self.args.timeout)
        except (BenchError, subprocess.TimeoutExpired) as exc:
            self.ctx["errors"].append(f"1 GB capture: {exc}")
            return
        warm(gb)
        size = gb.stat().st_size / 2**20
        gcap = {"path": gb, "ports": cap["ports"]}
        tag = f"{gb.name}, {size:.0f} MiB"
        self.compare(
            f"1 GB: stats on {gb.name} ({size:.0f} MiB)",
            performance,
            gcap,
            self.args.rounds,
            self.args.timeout,
            tag,
            False,
        )

    def on_capped_capture(self) -> None:
        ccap = self.step("tshark-decodable capture", capped_capture, self.args.size_mb, self.args.timeout)
        if ccap:
            self.ctx["capped"] = ccap
            self.compare(
                "performance on the tshark-decodable capture",
                performance,
                ccap,
                self.args.rounds,
                self.args.timeout,
                CAPPED_TAG,
            )

    def print_summary(self) -> None:
        cap = self.ctx["capture"]
        rows = summary_rows(self.ctx["comparisons"])
        print(
            f"\n== summary ({_rel(cap['path'])}, {cap['size_bytes'] / 2**20:.0f} MiB, "
            f"{self.args.rounds} round(s))\n"
        )
        if rows:
            print(text_table(HEAD, rows))
        for label, d in (self.ctx.get("dissector") or {}).items():
            for mode in ("summary", "bodies"):
                x = d[mode]
                rate = f"{x['frames_per_s']:,.0f} frames/s, {x['mb_per_s']:.1f} MB/s"
                print(f"dissector {label} {mode}: {rate}")


def startup_step() -> None:
    """Start-up (bench/startup.py, imported from beside this script) into its RESULTS.md block."""
    import startup  # bench/startup.py: this script's folder is sys.path[0]

    text = startup.startup_text(startup.measure_startup(11))
    print(text, flush=True)
    startup.write_startup(text)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.startup_only:
        startup_step()
        print(f"\nwrote {_rel(RESULTS)} (its start-up block)")
        return 0
    if not shutil.which("tshark"):
        print(
            "bench/run.py: tshark not found on PATH; it is the reference every ratio is measured against "
            "(apt-get install tshark)",
            file=sys.stderr,
        )
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    run = Run(args, argv)
    t_start = time.monotonic()
    try:
        cap = run.main_capture()
    except BenchError as exc:
        print(f"bench/run.py: {exc}", file=sys.stderr)
        return 2
    run.on_main_capture(cap)
    if args.gb:
        run.on_gb_capture(cap)
    if args.capped:
        run.on_capped_capture()
    if args.profile:
        run.ctx["profile"] = run.step("profile: cProfile of stats", profile, cap, args.timeout)
    run.step("start-up: stats of a 10-packet capture", startup_step)
    run.print_summary()
    run.ctx["machine"]["load average at end (1/5/15 min)"] = _load()
    write_results(run.ctx)
    print(f"\nwrote {_rel(RESULTS)} (its bench/run.py part) in {time.monotonic() - t_start:.0f} s")
    if run.ctx["errors"]:
        print("errors:\n" + "\n".join("  " + e for e in run.ctx["errors"]), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
