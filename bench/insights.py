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

from analyzer.dissect.protocol_table import ApiKey  # noqa: E402
from analyzer.model import Exchange  # noqa: E402
from analyzer.pipeline import Analysis  # noqa: E402
from analyzer.session.clients import ClientTracker  # noqa: E402
from analyzer.session.insights import GroupInsights, Insights  # noqa: E402
from analyzer.session.producer_insights import ProducerInsights  # noqa: E402
from analyzer.session.stats import Stats  # noqa: E402
from analyzer.session.walks import produced  # noqa: E402


class _Keep:
    def __init__(self) -> None:
        self.events: list = []

    def event(self, ev) -> None:
        self.events.append(ev)


class _NoProducers:
    """In place of :class:`ProducerInsights` inside :class:`Insights`: what `stats` costs
    without the producers' analysis (the walks the other insights share are still paid)."""

    def facts(self, ex):
        return None

    def done(self, outcome=None) -> None:
        pass


def _without_producers(ids) -> Insights:
    ins = Insights(ids)
    ins.producers = _NoProducers()  # type: ignore[assignment]
    return ins


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
        "Insights without ProducerInsights": lambda: _without_producers(ids),
    }
    best = dict.fromkeys(makers, float("inf"))
    # the compressed batches a Produce sent without a declared size (librdkafka's lz4 and zstd):
    # the producers inflate each once for the compression ratio; forgotten before each round
    lazy = [
        e
        for ev in keep.events
        if type(ev) is Exchange and ev.api_key == ApiKey.PRODUCE
        for pp in produced(ev)
        for e in pp.entries
        if getattr(e, "blob", None) is not None
    ]
    gc.disable()
    for _ in range(a.rounds):
        for name, make in makers.items():
            for e in lazy:
                e.inflated = None
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
    marginal = best["Insights (all three)"] - best["Insights without ProducerInsights"]
    print(
        f"\nwhat the producers' analysis adds to `stats` (all three less the other two, which"
        f" share its walks of Produce and Fetch): {marginal:.3f} s, {100 * marginal / whole:.1f}%"
    )
    print(f"\nload average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
