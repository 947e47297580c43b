"""Before/after: the same commands run by two source trees of kafka-analyzer, alternating.

    git worktree add --detach /tmp/before REV
    .venv/bin/python bench/ab.py CAPTURE --before /tmp/before [--after .] [--rounds 3]

Prints a markdown table of median wall time, median CPU time and peak RSS per command and tree
(each command's own ``os.wait4`` figures), and the load average at the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("capture")
    ap.add_argument("--before", required=True, help="source tree of the old commit")
    ap.add_argument("--after", default=str(Path(__file__).resolve().parents[1]))
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    trees = {"before": a.before, "after": a.after}
    cmds = {
        "read": ["read", a.capture],
        "stats": ["stats", a.capture],
        "export --records": ["export", a.capture, "--records", "-o", os.devnull],
    }
    res: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    for _ in range(a.rounds):
        for name, argv in cmds.items():
            for tree, path in trees.items():
                env = {**os.environ, "PYTHONPATH": path}
                t0 = time.monotonic()
                p = subprocess.Popen(
                    [sys.executable, "-m", "analyzer", *argv],
                    env=env,
                    cwd=path,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                _, _status, ru = os.wait4(p.pid, 0)
                res.setdefault((name, tree), []).append(
                    (time.monotonic() - t0, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024)
                )
    print("| command | tree | wall median s | CPU median s | peak RSS MB |")
    print("|---|---|---|---|---|")
    for (name, tree), v in res.items():
        wall = statistics.median(x[0] for x in v)
        cpu = statistics.median(x[1] for x in v)
        print(f"| {name} | {tree} | {wall:.2f} | {cpu:.2f} | {max(x[2] for x in v):.0f} |")
    print("load average:", " / ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
