"""Start-up: ``kafka-analyzer stats`` of a 10-packet capture against the bare interpreter.

    .venv/bin/python bench/startup.py [--rounds 11] [--write]

The capture is the first 10 packets of ``captures/kafka-python-0.8.2-gzip.pcap`` (one Metadata
exchange), written to ``bench/out/startup-10.pcap``. The byte code is compiled once first (into
``bench/out/pycache``, ``PYTHONPYCACHEPREFIX``, whatever ``PYTHONDONTWRITEBYTECODE`` says): an
installed package runs from its .pyc files, and a run that compiles every module measures the
compiler instead. Then ``python -c pass`` and ``python -m analyzer stats`` run alternately
``--rounds`` times each; reported: median and best wall time of each, their CPU time (user +
system, from ``os.wait4``), and the difference of the medians (what the analyzer adds to the
interpreter's own start). The issue #32 target is ``stats`` under 0.12 s of wall time.

``--write`` puts the figures into bench/RESULTS.md between this script's own markers (bench/run.py
calls :func:`measure_startup` too and writes the same block).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
RESULTS = ROOT / "bench" / "RESULTS.md"
SOURCE = ROOT / "captures" / "kafka-python-0.8.2-gzip.pcap"
TARGET_S = 0.12
BEGIN = "<!-- bench/startup.py: begin; written by bench/startup.py and bench/run.py -->"
END = "<!-- bench/startup.py: end -->"


def ten_packets(source: Path, dest: Path, n: int = 10) -> Path:
    """The first ``n`` packets of the classic pcap ``source`` (either byte order) into ``dest``."""
    data = source.read_bytes()
    order = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    pos = 24
    for _ in range(n):
        (incl,) = struct.unpack_from(order + "I", data, pos + 8)
        pos += 16 + incl
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data[:pos])
    return dest


def _env(pycache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    env.setdefault("PYTHONPATH", str(ROOT))
    return env


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s of that process) of one run; raises when it fails."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read() if proc.stderr else b""
    if proc.stderr:
        proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {err.decode(errors='replace')[-500:]}")
    return wall, ru.ru_utime + ru.ru_stime


def measure_startup(rounds: int = 11, out: Path = OUT, python: str = sys.executable) -> dict:
    """The figures of one start-up measurement (see the module docstring)."""
    cap = ten_packets(SOURCE, out / "startup-10.pcap")
    env = _env(out / "pycache")
    bare = [python, "-c", "pass"]
    stats = [python, "-m", "analyzer", "stats", str(cap)]
    _run(stats, env)  # compile the byte code once
    _run(bare, env)
    samples: dict[str, list[tuple[float, float]]] = {"bare": [], "stats": []}
    for _ in range(rounds):
        samples["bare"].append(_run(bare, env))
        samples["stats"].append(_run(stats, env))
    res: dict = {"rounds": rounds, "load": _load()}
    for key, got in samples.items():
        res[key] = {
            "wall_median": statistics.median(w for w, _ in got),
            "wall_best": min(w for w, _ in got),
            "cpu_median": statistics.median(c for _, c in got),
        }
    res["added_wall"] = res["stats"]["wall_median"] - res["bare"]["wall_median"]
    res["added_cpu"] = res["stats"]["cpu_median"] - res["bare"]["cpu_median"]
    return res


def _load() -> str:
    try:
        return " / ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def startup_text(res: dict, date: str | None = None) -> str:
    """The RESULTS.md block of one measurement."""
    s, b = res["stats"], res["bare"]
    verdict = "met" if s["wall_median"] < TARGET_S else "not met"
    date = date or dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return "\n".join(
        [
            "## Start-up",
            "",
            f"Written by `bench/startup.py` on {date}: `kafka-analyzer stats` of a 10-packet capture"
            f" (`bench/out/startup-10.pcap`), byte code compiled beforehand, {res['rounds']} rounds"
            f" alternating with `python -c pass`; load average at start {res['load']}.",
            "",
            "| command | wall median s | wall best s | CPU median s |",
            "|---|---|---|---|",
            f"| python -c pass | {b['wall_median']:.3f} | {b['wall_best']:.3f} | {b['cpu_median']:.3f} |",
            f"| stats (10 packets) | {s['wall_median']:.3f} | {s['wall_best']:.3f} | {s['cpu_median']:.3f} |",
            "",
            f"* start-up: {s['wall_median']:.3f} s median wall ({s['wall_best']:.3f} s best), target"
            f" under {TARGET_S} s: {verdict}; the analyzer adds {res['added_wall']:.3f} s of wall time"
            f" and {res['added_cpu']:.3f} s of CPU to the bare interpreter",
        ]
    )


def write_startup(text: str, path: Path = RESULTS) -> None:
    """``text`` between this script's markers in ``path`` (appended at the end the first time)."""
    old = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark results\n"
    block = f"{BEGIN}\n{text.rstrip()}\n{END}\n"
    if BEGIN in old and END in old.split(BEGIN, 1)[1]:
        head, rest = old.split(BEGIN, 1)
        after = rest.split(END, 1)[1].lstrip("\n")
        new = head + block + ("\n" + after if after else "")  # (a blank line before what follows)
    else:
        new = old.rstrip("\n") + "\n\n" + block
    path.write_text(new, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=11, help="runs of each command (median, best)")
    ap.add_argument("--write", action="store_true", help="write the figures into bench/RESULTS.md")
    args = ap.parse_args(argv)
    text = startup_text(measure_startup(max(1, args.rounds)))
    print(text)
    if args.write:
        write_startup(text)
        print(f"\nwrote {RESULTS.relative_to(ROOT)} (its start-up block)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
