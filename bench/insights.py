"""What the insights cost `stats`: each insight consumer alone over a capture's events, against
the whole `stats` run (pipeline + Stats), in one process.

    .venv/bin/python bench/insights.py bench/out/bench-40mb.pcap [--rounds 9]

The events are kept in memory once (garbage collection off while the consumers run, so the kept
events do not make every collection slower); each consumer then runs over them ``--rounds``
times, alternating, and the minimum CPU time is kept: the consumers' own cost, steadier on a busy
machine than the difference of two whole runs. Prints a markdown table (share of `stats`).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analyzer.pipeline import Analysis  # noqa: E402
from analyzer.session.clients import ClientTracker  # noqa: E402
from analyzer.session.insights import GroupInsights, Insights  # noqa: E402
from analyzer.session.producer_insights import ProducerInsights  # noqa: E402
from analyzer.session.stats import Stats  # noqa: E402


class _Keep:
    def __init__(self) -> None:
        self.events: list = []

    def event(self, ev) -> None:
        self.events.append(ev)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("capture")
    ap.add_argument("--rounds", type=int, default=9)
    a = ap.parse_args()
    whole = float("inf")
    keep = _Keep()
    analysis = None
    for _ in range(3):
        keep.events.clear()
        analysis = Analysis(a.capture)
        t = time.process_time()
        analysis.run(Stats(analysis.knowledge.topic_ids), keep)
        whole = min(whole, time.process_time() - t)
    assert analysis is not None
    ids = analysis.knowledge.topic_ids
    makers = {
        "Stats": lambda: Stats(ids),
        "GroupInsights (#27)": lambda: GroupInsights(ids),
        "ProducerInsights (#28)": lambda: ProducerInsights(ids),
        "ClientTracker (#29)": lambda: ClientTracker(ids),
        "Insights (all three)": lambda: Insights(ids),
    }
    best = dict.fromkeys(makers, float("inf"))
    gc.disable()
    for _ in range(a.rounds):
        for name, make in makers.items():
            c = make()
            t = time.process_time()
            for ev in keep.events:
                c.event(ev)
            done = getattr(c, "done", None)
            if done is not None:
                done()
            best[name] = min(best[name], time.process_time() - t)
    gc.enable()
    print(f"`stats` (pipeline + Stats, min of 3): {whole:.3f} s CPU, {len(keep.events)} events\n")
    print("| consumer | CPU (min) | share of `stats` |\n|---|---|---|")
    for name, v in best.items():
        print(f"| {name} | {v:.3f} s | {100 * v / whole:.1f}% |")
    print(f"\nload average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
