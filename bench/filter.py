"""Cost of display filters on ``read``: CPU time of ``read CAPTURE`` against ``read CAPTURE -Y
EXPR`` (child processes, user+sys from ``os.wait4``, median of ``--rounds``), and in-process the
time to evaluate each compiled filter over every exchange of the capture against the time the
pipeline took to produce them.

    .venv/bin/python bench/filter.py CAPTURE [--rounds 5] [-Y EXPR ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = [
    "api == Produce and latency > 5ms",
    "latency >= 0 or not latency",
    "produce.acks == -1 or not api == Produce",
    "records.codec == zstd",
]


def cpu(argv: list[str]) -> float:
    env = dict(os.environ, PYTHONPATH=ROOT)
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen([sys.executable, "-m", "analyzer", *argv], stdout=null, env=env)
        _, status, ru = os.wait4(p.pid, 0)
    return ru.ru_utime + ru.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("capture")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("-Y", action="append", dest="exprs")
    a = ap.parse_args()
    exprs = a.exprs or DEFAULT
    runs: dict[str, list[float]] = {"": []}
    for e in exprs:
        runs[e] = []
    for _ in range(a.rounds):
        for e in runs:
            runs[e].append(cpu(["read", a.capture] + (["-Y", e] if e else [])))
    base = statistics.median(runs[""])
    print(f"read CPU time, median of {a.rounds} (user+sys):")
    for e, ts in runs.items():
        m = statistics.median(ts)
        print(f"  {m:7.3f} s  {m / base - 1:+6.1%}  read {'-Y ' + repr(e) if e else '(no filter)'}")

    sys.path.insert(0, ROOT)
    from analyzer.filter import compile_filter
    from analyzer.model import Exchange
    from analyzer.pipeline import Analysis

    t0 = time.process_time()
    p = Analysis(a.capture)
    exchanges = [ev for ev in p.events() if type(ev) is Exchange]
    pipe = time.process_time() - t0
    print(f"in-process: pipeline {pipe:.3f} s for {len(exchanges)} exchanges; filter evaluation over them:")
    for e in exprs:
        f = compile_filter(e)
        f.knowledge = p.knowledge
        if f.needs_records:
            print(f"  (skipped, needs record bodies) {e!r}")
            continue
        t0 = time.process_time()
        n = sum(1 for ex in exchanges if f(ex))
        dt = time.process_time() - t0
        print(f"  {dt * 1000:8.2f} ms  {dt / pipe:6.2%} of the pipeline  {n} match  {e!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
