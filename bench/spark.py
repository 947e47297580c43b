"""The CLI and Spark on 1 GB capture sets, in one run; writes a section of bench/RESULTS.md.

    .venv/bin/pip install -e ".[spark,bench]"
    .venv/bin/python bench/spark.py [--capture /work/perf/bench-250mb.pcap] [--copies 4]
        [--big /work/perf/bench-1gb.pcap] [--pieces 10] [--sets rotated,single,copies]
        [--runs cli1,cli2,local1,local2,default]
    .venv/bin/python bench/spark.py --sets huge,many --runs default   # "Spark at scale"

The sets, each about 1 GB, in ``bench/out/spark-set-KIND/``:

* ``rotated``: ``--big`` (one continuous recording, ``bench/pcapcat.py -n 4`` of the bench
  capture) cut by ``editcap -c`` into ``--pieces`` rotated files, as ``tcpdump -C`` leaves
  them: one chain, connections crossing every file edge;
* ``single``: ``--big`` itself, one file: Spark cuts it into byte-range splits
  (``--split-size``, default 128 MB), the CLI's ``-j 2`` shares its connections between two
  processes;
* ``copies``: ``--copies`` hard links (copies across file systems) of ``--capture``: four
  recordings of the same time, four pieces, none chained.

Two more sets show that default settings scale (their own section, "Spark at scale: SETS"):

* ``huge``: one file of about 10 GB, ``bench/pcapcat.py -n --huge-copies`` of ``--capture``
  (made once in ``bench/out/``, kept: it takes minutes);
* ``many``: ``--big`` cut by ``editcap -c`` into ``--many`` rotated files (1,000: about 1 MB
  each), one chain with connections crossing every edge.

For each set, one after the other, each once (the page cache warm from a first read), the
``--runs`` chosen:

* ``cli1``, ``cli2``: ``kafka-analyzer stats SET/* -j 1`` and ``-j 2``;
* ``export2``: ``kafka-analyzer export SET/* -j 2 -o /dev/null``, the CLI run issue #32 holds
  Spark to: with default settings, at most 1.5 times its wall time plus 15 s (the report gives
  the ratio and the verdict for each Spark run of a set that also has ``export2``);
* ``local1``, ``local2``: ``kafka-analyzer spark SET --out DIR --master local[1]`` and
  ``local[2]``, default settings (driver memory 1 GiB): the analysis on the executors, the
  Parquet tables written;
* ``default``: ``kafka-analyzer spark SET --out DIR``, nothing set at all (``local[*]``).

For each: wall time, MB/s of capture, for Spark the time its session took to start (the
``spark`` command says it on stderr) (the set's bytes / wall time), and peak memory sampled
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
SCALE_SECTION = "## Spark at scale"


SETS = ("rotated", "single", "copies", "huge", "many")
SCALE = ("huge", "many")
RUNS = ("cli1", "cli2", "export2", "local1", "local2", "default")
SESSION = re.compile(r"Spark's session started in ([\d.]+) s")


def make_set(kind: str, args: argparse.Namespace) -> tuple[Path, int, str]:
    """The set's directory, its bytes and a line describing it."""
    d = OUT / f"spark-set-{kind}"
    d.mkdir(parents=True, exist_ok=True)
    if kind == "huge":
        src = Path(args.capture)
        dst = d / f"{src.stem}-x{args.huge_copies}{src.suffix}"
        if not dst.exists():
            for old in d.iterdir():
                old.unlink()
            cat = [sys.executable, str(ROOT / "bench" / "pcapcat.py"), str(src), "-n", str(args.huge_copies)]
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            subprocess.run([*cat, "-o", str(dst)], check=True, cwd=ROOT, env=env)  # via a .part file
        what = (
            f"`{src.name}` (the bench capture) {args.huge_copies} times back to back, one file "
            f"(`bench/pcapcat.py -n {args.huge_copies}`: each copy's connections their own addresses)"
        )
        return d, dst.stat().st_size, what
    for old in d.iterdir():
        old.unlink()
    if kind == "copies":
        src = Path(args.capture)
        for i in range(args.copies):
            _link(src, d / f"{src.stem}-{i}{src.suffix}")
        what = (
            f"{args.copies} hard links of `{src.name}` (the bench capture): {args.copies} recordings "
            "of the same time, none chained"
        )
    elif kind == "single":
        src = Path(args.big)
        _link(src, d / src.name)
        what = f"`{src.name}` alone, one file (Spark cuts it into byte-range splits)"
    else:
        src = Path(args.big)
        packets = _packets(src)
        per = -(-packets // (args.many if kind == "many" else args.pieces))
        subprocess.run(["editcap", "-F", "pcap", "-c", str(per), str(src), str(d / "rot.pcap")], check=True)
        what = (
            f"`{src.name}` ({packets:,} packets) cut by `editcap -c {per}` into "
            f"{len(list(d.iterdir()))} rotated files: one chain, connections crossing every edge"
        )
    return d, sum(f.stat().st_size for f in d.iterdir()), what


def _link(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def _packets(path: Path) -> int:
    r = subprocess.run(["capinfos", "-c", "-M", str(path)], capture_output=True, text=True, check=True)
    return int(r.stdout.split(":")[-1].strip())


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
    ap.add_argument("--capture", default="/work/perf/bench-250mb.pcap", help="(copies) the capture linked")
    ap.add_argument("--copies", type=int, default=4)
    ap.add_argument("--big", default="/work/perf/bench-1gb.pcap", help="(rotated, single) one 1 GB recording")
    ap.add_argument("--pieces", type=int, default=10, help="(rotated) files the recording is cut into")
    ap.add_argument("--huge-copies", type=int, default=40, help="(huge) copies of --capture in one file")
    ap.add_argument("--many", type=int, default=1000, help="(many) files --big is cut into")
    ap.add_argument("--sets", default="rotated,single,copies", help=f"comma-separated: {', '.join(SETS)}")
    ap.add_argument("--runs", default="cli1,cli2,local1,local2", help=f"comma-separated: {', '.join(RUNS)}")
    args = ap.parse_args()
    kinds = [k for k in args.sets.split(",") if k]
    if not kinds or any(k not in SETS for k in kinds):
        ap.error(f"--sets takes {', '.join(SETS)}")
    if set(kinds) & set(SCALE) and not set(kinds) <= set(SCALE):
        ap.error(f"--sets: {', '.join(SCALE)} have their own section; run them apart from the others")
    runs = [r for r in args.runs.split(",") if r]
    if not runs or any(r not in RUNS for r in runs):
        ap.error(f"--runs takes {', '.join(RUNS)}")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable}
    cli = [sys.executable, "-m", "analyzer"]
    load0 = os.getloadavg()
    started = dt.datetime.now(dt.UTC)
    done = []
    for kind in kinds:
        d, total, what = make_set(kind, args)
        files = sorted(str(f) for f in d.iterdir())
        for name in files:  # the page cache warm
            with open(name, "rb") as f:
                while f.read(1 << 24):
                    pass
        results = []
        every = {
            "cli1": ("CLI `stats -j 1`", [*cli, "stats", *files, "-j", "1"]),
            "cli2": ("CLI `stats -j 2`", [*cli, "stats", *files, "-j", "2"]),
            "export2": ("CLI `export -j 2`", [*cli, "export", *files, "-j", "2", "-o", os.devnull]),
            "local1": ("Spark `local[1]`", "local[1]"),
            "local2": ("Spark `local[2]`", "local[2]"),
            "default": ("Spark, default settings", ""),
        }
        for label, cmd in (every[r] for r in runs):
            if isinstance(cmd, str):
                out = tempfile.mkdtemp(prefix="spark-bench-", dir=OUT)
                cmd = [*cli, "spark", str(d), "--out", out, *(["--master", cmd] if cmd else [])]
            r = run(cmd, env)
            r["label"] = label
            text = r["stdout"].decode(errors="replace")
            r["session"] = None
            if "spark" in cmd:
                shutil.rmtree(out, ignore_errors=True)
                head = text.splitlines()[:1]
                r["said"] = head[0] if head else ""
                m = SESSION.search(r["stderr"].decode(errors="replace"))
                r["session"] = float(m.group(1)) if m else None
            elif "export" in cmd:
                r["said"] = ""
            else:
                found = [int(n.replace(",", "")) for n in re.findall(r"(\d[\d,]*) Kafka exchanges", text)]
                r["said"] = f"{sum(found)} exchanges" if found else ""
            results.append(r)
            p = r["peaks"]
            print(
                f"{kind} {label}: {r['wall']:.1f} s, {total / 1e6 / r['wall']:.1f} MB/s, rc {r['rc']}, "
                f"peak MB driver {p['driver']:.0f} jvm {p['jvm']:.0f} workers {p['workers']:.0f} "
                f"(one {p['worker']:.0f}) total {p['total']:.0f}; {r['said']}"
                + (f"; session started in {r['session']:.1f} s" if r["session"] is not None else ""),
                flush=True,
            )
            if r["rc"] not in (0, 1):
                print(r["stderr"].decode(errors="replace")[-2000:], file=sys.stderr)
        done.append((kind, what, total, results))
    load1 = os.getloadavg()
    title = f"{SCALE_SECTION}: {', '.join(kinds)}" if set(kinds) <= set(SCALE) else SECTION
    section = report(title, done, started, load0, load1)
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    line = "\n" + title + "\n"  # the heading itself, not a longer one it begins
    if line in text:  # replace this section only
        head, _, rest = text.partition(line)
        nxt = rest.find("\n## ")
        text = head + "\n" + section + (rest[nxt + 1 :] if nxt >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    RESULTS.write_text(text)
    return 0 if all(r["rc"] in (0, 1) for *_, rs in done for r in rs) else 1


def report(title, done, started, load0, load1) -> str:
    import pyspark

    lines = [
        title,
        "",
        f"Written by `bench/spark.py` on {started:%Y-%m-%d %H:%M} UTC; every figure below comes from that "
        "one run (one round each, page cache warm), on the 2-core machine "
        f"(load average {load0[0]:.2f} / {load0[1]:.2f} / {load0[2]:.2f} at start, "
        f"{load1[0]:.2f} / {load1[1]:.2f} / {load1[2]:.2f} at end).",
        "",
        f"* PySpark {pyspark.__version__}, Java {_java()}, Python {platform.python_version()}; "
        "Spark with default settings (driver memory 1 GiB, 128 MB splits), the `kafka-analyzer spark` "
        "command: listing and chaining (a span pass over every file on the executors), the analysis, "
        "the Parquet tables written (zstd, date/hour/capture_set)",
        "* peak memory: RSS sampled every 0.1 s over the process tree (psutil); driver = the Python "
        "process started; JVM = Spark's (driver and executors: one JVM in local mode); workers = "
        "Python worker processes (Spark's daemon and its forks; the CLI's worker processes; "
        "not the JVM's short-lived forks before they exec the daemon, which share its pages); "
        "each column the highest sum at one sample (RSS counts the pages a forked worker shares "
        "with Spark's daemon in each process); one worker = the largest single worker process",
        "",
    ]
    for kind, what, total, results in done:
        lines += [
            f"### {kind}: {total / 2**20:.1f} MiB",
            "",
            f"* {what}",
            "",
            "| run | wall s | MB/s | session start s | exit | driver MB | JVM MB | workers MB | one worker MB"
            " | total MB |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in results:
            p = r["peaks"]
            session = "-" if r.get("session") is None else f"{r['session']:.1f}"
            lines.append(
                f"| {r['label']} | {r['wall']:.1f} | {total / 1e6 / r['wall']:.1f} | {session} | {r['rc']} | "
                f"{p['driver']:.0f} | {p['jvm']:.0f} | {p['workers']:.0f} | {p['worker']:.0f} | "
                f"{p['total']:.0f} |"
            )
        lines.append("")
        lines += target_lines(results)
        for r in results:
            cmd = " ".join(_short(c) for c in r["cmd"][1:])
            if len(cmd) > 200:
                cmd = cmd[:200] + " ..."
            said = f" -> {r['said']}" if r["said"] else ""
            lines.append(f"* {r['label']}: `python {cmd}`{said}")
        lines.append("")
    return "\n".join(lines) + "\n"  # (a blank line before the next section)


def target_lines(results: list[dict]) -> list[str]:
    """Issue #32's Spark target for each Spark run beside an ``export -j 2`` of the same set: the
    ratio of the wall times, and whether it is at most 1.5x plus 15 s."""
    cli = next((r for r in results if r["label"] == "CLI `export -j 2`"), None)
    if cli is None:
        return []
    out = []
    for r in results:
        if "Spark" not in r["label"]:
            continue
        limit = 1.5 * cli["wall"] + 15
        start = f", of which {r['session']:.1f} s the session's start" if r.get("session") is not None else ""
        verdict = "met" if r["wall"] <= limit else "not met"
        out.append(
            f"* {r['label']}: {r['wall']:.1f} s{start}, {r['wall'] / cli['wall']:.2f}x `export -j 2` "
            f"({cli['wall']:.1f} s); target at most 1.5x + 15 s = {limit:.1f} s: {verdict}"
        )
    return [*out, ""] if out else []


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
