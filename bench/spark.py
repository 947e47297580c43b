"""The CLI and Spark on one 1 GB capture set, in one run; adds a section to bench/RESULTS.md.

    .venv/bin/python bench/spark.py [--capture /work/perf/bench-250mb.pcap] [--copies 4]

The set: ``--copies`` hard links (copies across file systems) of the bench capture in
``bench/out/spark-set/`` (four recordings at the same time: four pieces, none chained). Runs,
one after the other, each once (the page cache warm from a first read):

* ``kafka-analyzer stats SET/* -j 1`` and ``-j 2`` (one process per capture, N at a time);
* ``kafka-analyzer spark SET --out DIR --master local[1]`` and ``local[2]``, default settings
  (driver memory 1 GiB): the analysis on the executors, the Parquet tables written.

For each: wall time, MB/s of capture (the set's bytes / wall time), and peak memory sampled
every 0.1 s with psutil over the process tree: the driver (the Python process started), the
JVM, and the Python workers (Spark's daemon and its forks; the CLI's per-file processes), each
the highest sum seen at one sample, and the highest total.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
RESULTS = ROOT / "bench" / "RESULTS.md"
SECTION = "## Spark and capture sets"


def make_set(capture: Path, copies: int) -> tuple[Path, int]:
    d = OUT / "spark-set"
    d.mkdir(parents=True, exist_ok=True)
    for old in d.iterdir():
        old.unlink()
    for i in range(copies):
        f = d / f"{capture.stem}-{i}{capture.suffix}"
        try:
            os.link(capture, f)
        except OSError:
            shutil.copyfile(capture, f)
    return d, sum(f.stat().st_size for f in d.iterdir())


def classify(proc: psutil.Process, root: int) -> str | None:
    """driver (the process started), jvm, workers (Python processes under it), or None: the
    launcher shell scripts (a few MB) and the JVM's short-lived forks before they exec the
    Python daemon (their RSS is the JVM's own pages, shared copy-on-write)."""
    if proc.pid == root:
        return "driver"
    try:
        name = proc.name()
    except psutil.Error:
        return None
    if name == "java":
        return "jvm"
    return "workers" if name.startswith("python") else None


def run(cmd: list[str], root_env: dict) -> dict:
    """Run ``cmd``; its wall time, exit code and the peaks of its process tree's RSS (MB)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=ROOT, env=root_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peaks = {"driver": 0.0, "jvm": 0.0, "workers": 0.0, "total": 0.0, "worker": 0.0}
    done = threading.Event()

    def sample() -> None:
        me = psutil.Process(p.pid)
        while not done.is_set():
            try:
                procs = [me, *me.children(recursive=True)]
            except psutil.Error:
                break
            now = {"driver": 0.0, "jvm": 0.0, "workers": 0.0}
            for q in procs:
                with contextlib.suppress(psutil.Error):
                    kind, rss = classify(q, p.pid), q.memory_info().rss / 1e6
                    if kind is None:
                        continue
                    now[kind] += rss
                    if kind == "workers":
                        peaks["worker"] = max(peaks["worker"], rss)
            for k, v in now.items():
                peaks[k] = max(peaks[k], v)
            peaks["total"] = max(peaks["total"], sum(now.values()))
            time.sleep(0.1)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    out, err = p.communicate()
    wall = time.monotonic() - t0
    done.set()
    t.join()
    return {"cmd": cmd, "wall": wall, "rc": p.returncode, "peaks": peaks, "stdout": out, "stderr": err}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--capture", default="/work/perf/bench-250mb.pcap")
    ap.add_argument("--copies", type=int, default=4)
    args = ap.parse_args()
    capture = Path(args.capture)
    d, total = make_set(capture, args.copies)
    files = sorted(str(f) for f in d.iterdir())
    with open(files[0], "rb") as f:  # the page cache warm (hard links share it)
        while f.read(1 << 24):
            pass
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable}
    cli = [sys.executable, "-m", "analyzer"]
    load0 = os.getloadavg()
    started = dt.datetime.now(dt.UTC)
    results = []
    for label, cmd in (
        ("CLI `stats -j 1`", [*cli, "stats", *files, "-j", "1"]),
        ("CLI `stats -j 2`", [*cli, "stats", *files, "-j", "2"]),
        ("Spark `local[1]`", "local[1]"),
        ("Spark `local[2]`", "local[2]"),
    ):
        if isinstance(cmd, str):
            out = tempfile.mkdtemp(prefix="spark-bench-", dir=OUT)
            cmd = [*cli, "spark", str(d), "--out", out, "--master", cmd]
        r = run(cmd, env)
        r["label"] = label
        if "spark" in cmd:
            shutil.rmtree(out, ignore_errors=True)
            head = r["stdout"].decode(errors="replace").splitlines()[:1]
            r["said"] = head[0] if head else ""
        else:
            r["said"] = ""
        results.append(r)
        p = r["peaks"]
        print(
            f"{label}: {r['wall']:.1f} s, {total / 1e6 / r['wall']:.1f} MB/s, rc {r['rc']}, peak MB "
            f"driver {p['driver']:.0f} jvm {p['jvm']:.0f} workers {p['workers']:.0f} (one {p['worker']:.0f}) "
            f"total {p['total']:.0f}",
            flush=True,
        )
        if r["rc"] not in (0, 1):
            print(r["stderr"].decode(errors="replace")[-2000:], file=sys.stderr)
    load1 = os.getloadavg()
    section = report(results, files, total, started, load0, load1)
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    if SECTION in text:  # replace this section only
        head, _, rest = text.partition(SECTION)
        nxt = rest.find("\n## ")
        text = head + section + (rest[nxt + 1 :] if nxt >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    RESULTS.write_text(text)
    return 0 if all(r["rc"] in (0, 1) for r in results) else 1


def report(results, files, total, started, load0, load1) -> str:
    import pyspark

    lines = [
        SECTION,
        "",
        f"Written by `bench/spark.py` on {started:%Y-%m-%d %H:%M} UTC; every figure below comes from that "
        "one run (one round each, page cache warm). The machine was shared with other jobs during the "
        f"run (load average {load0[0]:.2f} / {load0[1]:.2f} / {load0[2]:.2f} at start, "
        f"{load1[0]:.2f} / {load1[1]:.2f} / {load1[2]:.2f} at end, 2 cores): "
        "the times are indicative, not a clean measurement.",
        "",
        f"* capture set: {len(files)} hard links of `{Path(files[0]).name.rsplit('-', 1)[0]}.pcap` "
        f"(the bench capture) in `bench/out/spark-set/`, {total / 2**20:.1f} MiB in all "
        "(four recordings of the same time: four pieces, none chained)",
        f"* PySpark {pyspark.__version__}, Java {_java()}, Python {platform.python_version()}; "
        "Spark with default settings (driver memory 1 GiB), the `kafka-analyzer spark` command: "
        "listing and chaining (a span pass over every file on the executors), the analysis, the "
        "Parquet tables written (zstd, date/hour/capture_set)",
        "* peak memory: RSS sampled every 0.1 s over the process tree (psutil); driver = the Python "
        "process started; JVM = Spark's (driver and executors: one JVM in local mode); workers = "
        "Python worker processes (Spark's daemon and its forks; the CLI's one process per file; "
        "not the JVM's short-lived forks before they exec the daemon, which share its pages); "
        "each column the highest sum at one sample (RSS counts the pages a forked worker shares "
        "with Spark's daemon in each process); one worker = the largest single worker process",
        "",
        "| run | wall s | MB/s | exit | driver MB | JVM MB | workers MB | one worker MB | total MB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        p = r["peaks"]
        lines.append(
            f"| {r['label']} | {r['wall']:.1f} | {total / 1e6 / r['wall']:.1f} | {r['rc']} | "
            f"{p['driver']:.0f} | {p['jvm']:.0f} | {p['workers']:.0f} | {p['worker']:.0f} | "
            f"{p['total']:.0f} |"
        )
    lines.append("")
    for r in results:
        cmd = " ".join(_short(c) for c in r["cmd"][1:])
        said = f" -> {r['said']}" if r["said"] else ""
        lines.append(f"* {r['label']}: `python {cmd}`{said}")
    lines.append("")
    return "\n".join(lines)


def _short(arg: str) -> str:
    """An argument as the report shows it: paths relative to the project, captures by name."""
    if arg.startswith("/") and arg.endswith(".pcap"):
        return Path(arg).name
    if arg.startswith(str(ROOT) + "/"):
        return re.sub(r"spark-bench-\w+", "spark-bench-XXXX", arg[len(str(ROOT)) + 1 :])
    return arg


def _java() -> str:
    try:
        r = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
        return r.stderr.splitlines()[0].split('"')[1]
    except (OSError, IndexError, subprocess.SubprocessError):
        return "?"


if __name__ == "__main__":
    sys.exit(main())
