"""``export`` and ``stats`` with ``-j 1`` and ``-j N`` on one capture (a file, or the rotated
pieces of one recording), alternating; checks that the outputs are the same bytes.

    .venv/bin/python bench/jobs.py CAPTURE... [--jobs 2] [--rounds 3]

Prints a markdown table of median wall time, median CPU time (the command and the processes it
waited for), throughput on the input's size and peak RSS (the largest single process), from
``os.wait4``, and the load average at the start and the end: on a machine busy with other work,
``-j N`` can only use the cores left over, so read the CPU column with the wall one.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(argv: list[str], out: str) -> tuple[float, float, float, str]:
    """(wall s, CPU s, peak RSS MB, sha256 of stdout) of one command."""
    t0 = time.monotonic()
    with open(out, "wb") as f:
        p = subprocess.Popen(
            [sys.executable, "-m", "analyzer", *argv],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=f,
            stderr=subprocess.DEVNULL,
        )
        _, _status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    digest = hashlib.sha256(Path(out).read_bytes()).hexdigest()
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, digest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("capture", nargs="+")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    size = sum(os.path.getsize(c) for c in a.capture)
    load0 = os.getloadavg()
    res: dict[tuple[str, int], list[tuple[float, float, float, str]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        for _ in range(a.rounds):
            for cmd in ("export", "stats"):
                for j in (1, a.jobs):
                    argv = [cmd, "-j", str(j), *a.capture] + (["--format", "json"] if cmd == "stats" else [])
                    res.setdefault((cmd, j), []).append(run(argv, out))
    print(f"input: {' '.join(a.capture)} ({size / 1e6:.0f} MB)")
    print()
    print("| command | -j | wall median s | CPU median s | MB/s | peak RSS MB | same output as -j 1 |")
    print("|---|---|---|---|---|---|---|")
    same = True
    for (cmd, j), v in res.items():
        wall = statistics.median(x[0] for x in v)
        cpu = statistics.median(x[1] for x in v)
        ok = {x[3] for x in v} == {x[3] for x in res[(cmd, 1)]}
        same = same and ok
        print(
            f"| {cmd} | {j} | {wall:.2f} | {cpu:.2f} | {size / 1e6 / wall:.0f} | "
            f"{max(x[2] for x in v):.0f} | {'yes' if ok else 'NO'} |"
        )
    load1 = os.getloadavg()
    print()
    print("load average at start:", " / ".join(f"{x:.2f}" for x in load0))
    print("load average at end:", " / ".join(f"{x:.2f}" for x in load1))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
