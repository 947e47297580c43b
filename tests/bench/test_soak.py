"""bench/soak.py's parts that need no namespace: its section of bench/RESULTS.md between its own
markers (bench/run.py's splice), the counters that went down between two scrapes, the live
processes' usage summed from /proc."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

from tests.helpers.captures import ROOT

_spec = importlib.util.spec_from_file_location("kafka_analyzer_soak", ROOT / "bench" / "soak.py")
assert _spec is not None and _spec.loader is not None
soak = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = soak  # its dataclasses look their module up
_spec.loader.exec_module(soak)


def test_its_section_goes_last_then_is_replaced_in_place():
    run = soak.run
    old = f"# Benchmark results\n\n{run.BEGIN}\nrun's\n{run.END}\n\n## By hand\n\ntext\n"
    once = run.splice_results(old, "soak 1", soak.BEGIN, soak.END)
    assert once.startswith(old.rstrip("\n")) and once.endswith(f"{soak.BEGIN}\nsoak 1\n{soak.END}\n")
    twice = run.splice_results(once + "\n## Later\n", "soak 2", soak.BEGIN, soak.END)
    assert "soak 1" not in twice and f"{soak.BEGIN}\nsoak 2\n{soak.END}\n" in twice
    assert twice.index("run's") < twice.index("## By hand") < twice.index("soak 2") < twice.index("## Later")
    assert run.splice_results(twice, "run 2").count("run 2") == 1 and "soak 2" in twice


def scrape(t: float, values: dict) -> object:
    samples = {(name, ()): v for name, v in values.items()}
    counters = {n for n in values if n.endswith("_total")}
    return soak.Scrape(t, samples, counters, 0, 0.0)


def test_a_counter_going_down_is_found_a_gauge_is_not():
    a = scrape(0, {"kafka_analyzer_packets_total": 10, "kafka_analyzer_tcp_connections_tracked": 5})
    b = scrape(5, {"kafka_analyzer_packets_total": 9, "kafka_analyzer_tcp_connections_tracked": 1})
    assert [d.split("{")[0] for d in soak.decreases(a, b)] == ["kafka_analyzer_packets_total"]
    assert soak.decreases(a, a) == []
    assert b.get("packets_total") == 9


def test_usage_sums_the_process_and_its_children():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert child.pid in soak.tree(os.getpid())
        u = soak.usage(os.getpid(), 0.0)
        assert u.processes >= 2 and u.rss_mb > 0 and u.cpu_s > 0
    finally:
        child.kill()
        child.wait()


def test_live_done_when_fails_a_replay_that_fell_behind_its_rate():
    """bench/live.py's verdict below the limit: every pair and no drop is a pass only at the
    rate asked for (a tcpreplay at --replay-nice 19 sends slower when the analyzer takes both
    cores)."""
    live = soak.live
    pairs = {"Produce": 3}
    run = {"pairs": dict(pairs), "dropped": 0, "rc": 0, "over": False, "rate": 50000, "achieved_pps": 49996.1}
    live.judge(run, pairs)
    assert run["ok"] and run["verdict"] == "pairs per API equal offline, 0 drops"
    run.update(achieved_pps=45734.4)
    live.judge(run, pairs)
    assert not run["ok"] and run["verdict"] == "FAILS: sent at 45734 pps"
