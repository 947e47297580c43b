"""Bounded long-lived tables: idle expiry by capture time, a maximum, evictions counted; the
latencies exact while few, then log buckets within 1%."""

from __future__ import annotations

import gc
import random
import tracemalloc

import pytest

from analyzer.events import ConnectionEnd
from analyzer.model import Exchange
from analyzer.pipeline import Analysis
from analyzer.session.bounded import Bounds, Evictions, Expiry, Latencies, said
from analyzer.session.insights import Insights
from analyzer.session.lag import COMMIT
from analyzer.session.live_feed import InsightFeed
from analyzer.session.stats import ExchangeFacts, Stats
from tests.helpers.captures import CAPTURES


def _expiry(bounds: Bounds):
    gone: list = []
    ev = Evictions()
    return Expiry("groups", gone.append, ev, bounds), gone, ev


def test_expiry_max_evicts_longest_idle_first_and_counts():
    e, gone, ev = _expiry(Bounds(idle=None, max_entries=3))
    for i, k in enumerate("abcd"):
        e.touch(k, float(i))
    assert gone == ["a"] and list(e.seen) == ["b", "c", "d"]
    e.touch("b", 10.0)  # used again: now the most recent
    e.touch("x", 11.0)
    assert gone == ["a", "c"]
    assert ev.counts == {"groups": [0, 2]}


def test_expiry_idle_sweeps_at_most_every_and_counts():
    e, gone, ev = _expiry(Bounds(idle=100.0, max_entries=1000, every=10.0))
    for i in range(50):
        e.touch(i, float(i))
    e.touch("late", 160.0)  # the first sweep past `every`: idle before 60 go
    assert gone == list(range(50)) and ev.counts == {"groups": [50, 0]}
    e.discard("late")
    assert len(e) == 0 and ev.totals() == {"groups": 50}


def test_said():
    b = Bounds(idle=3600.0, max_entries=10)
    assert said("groups", 3, 0, b) == "3 groups expired after 1h idle"
    assert said("stats_clients", 0, 2, b) == (
        "2 stats clients evicted, the longest idle first (more than 10 at once)"
    )


def test_latencies_exact_then_buckets_within_one_percent():
    rnd = random.Random(7)
    values = [rnd.lognormvariate(-6, 1.5) for _ in range(20_000)]
    exact = sorted(values)
    lat = Latencies(cap=1000)
    for v in values:
        lat.append(v)
    assert lat.approximate and len(lat) == 20_000 and lat.max == exact[-1]
    n = len(exact)
    for q in (50, 90, 95, 99, 99.9):
        want = exact[max(0, min(n - 1, int(round(q / 100.0 * n + 0.5)) - 1))]
        got = lat.percentile(q)
        assert got is not None and abs(got - want) / want <= 0.01
    small = Latencies(cap=1000)
    for v in values[:1000]:
        small.append(v)
    assert not small.approximate
    assert small.percentile(50) == sorted(values[:1000])[499]


def test_latencies_merged_parts_equal_one():
    rnd = random.Random(3)
    values = [rnd.random() / 10 for _ in range(5000)]
    one = Latencies(cap=2000)
    for v in values:
        one.append(v)
    parts = [Latencies(cap=2000) for _ in range(3)]
    for i, v in enumerate(values):
        parts[i % 3].append(v)
    merged = Latencies(cap=2000)
    for p in parts:
        merged.extend(p)
    assert merged.percentiles((50, 95, 99)) == one.percentiles((50, 95, 99))
    assert merged.max == one.max and len(merged) == len(one)


def _facts(i: int, ts: float) -> ExchangeFacts:
    return ExchangeFacts(ts, 18, "ApiVersions", 0.001, 40, 60, [], [], f"client-{i}", False, [], [])


def test_stats_tables_bounded_evictions_exact():
    bounds = Bounds(idle=600.0, max_entries=100, every=60.0)
    s = Stats(bounds=bounds)
    for i in range(5000):  # a new client and connection every 10 s
        s.apply(i, None, _facts(i, i * 10.0))
    assert len(s.clients) <= 67 and len(s.connections) <= 67  # idle 600 s + a sweep each 60 s
    gone = s.evictions.totals()
    assert gone["stats_clients"] == 5000 - len(s.clients)
    assert gone["stats_connections"] == 5000 - len(s.connections)
    assert [r["table"] for r in s.bounds_rows()] == ["stats_clients", "stats_connections"]


def _commit(i: int, t: float) -> tuple:
    """A group's commit and a consumer's fetch (a new group and consumer each time)."""
    fetch = (t, t + 0.001, (f"10.0.1.{i % 100}", f"consumer-{i}"), [(("topic", None, 0), i, i + 5)])
    return ((COMMIT, t, f"group-{i}", [(("topic", None, 0), i)], None), fetch)


def _produce(i: int, t: float) -> tuple:
    # base offset -1: not followed as written (that table has its own bound, WRITTEN_KEPT per
    # partition), so what stays is the producers' own state
    batch = (("topic", None, 0), 1000 + i, 0, 0, 1, 1, 100, "none", None, 0, -1)
    client = f"10.0.0.{i % 100}:1"  # (a few hosts: host_of keeps a cache of 4096)
    return (t, t + 0.001, f"{client} -> 10.9.9.9:9092", i, f"p{i}", client, -1, None, [batch])


def _feed(ins: Insights, n: int) -> None:
    for i in range(n):
        t = i * 10.0
        ins.apply(None, (_commit(i, t), (_produce(i, t), None, None), None))


def test_insights_groups_and_producers_bounded():
    bounds = Bounds(idle=600.0, max_entries=40, every=60.0)
    ins = Insights(bounds=bounds)
    _feed(ins, 3000)
    assert len(ins.groups.expiry) <= 40 and len(ins.groups.lag.windows) <= 40
    assert len(ins.producers.producers.producers) <= 40
    gone = ins.evictions().totals()
    assert gone["groups"] == 3000 - len(ins.groups.lag.windows)
    assert gone["producers"] == 3000 - len(ins.producers.producers.producers)
    consumption = ins.groups.consumption
    assert len(consumption.positions) <= 40 and len(consumption.fetched_by) <= 40
    assert gone["fetchers"] == 3000 - len(consumption.fetched_by)
    groups = {r["group_id"] for r in ins.groups.table(None)}
    assert groups == set(ins.groups.lag.windows) and "group-2999" in groups
    assert {r.group for r in ins.groups.lag.rows} <= groups | ins.groups.gone


def _held(n: int) -> int:
    """Bytes the tables hold after ``n`` new clients, groups, producers and connections (one
    each 10 s of capture time)."""
    _feed(Insights(), 50)  # warm the module-level caches up
    gc.collect()
    tracemalloc.start()
    ins = Insights(bounds=Bounds(idle=300.0, max_entries=50, every=30.0))
    s = Stats(bounds=Bounds(idle=300.0, max_entries=50, every=30.0, exact_latencies=100))
    _feed(ins, n)
    for i in range(n):
        s.apply(i, None, _facts(i, i * 10.0))
    ins.groups.purge()
    gc.collect()
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return held


def test_memory_flat_as_the_input_doubles():
    small, big = _held(2000), _held(4000)
    assert big < small * 1.1, (small, big)


@pytest.mark.parametrize("name", ["group-cooperative", "producer-txn", "client-reconnect-loop"])
def test_the_live_feed_runs_at_tiny_bounds(name):
    """Every table at one entry: the feed tells what it still has, counts what it let go."""
    a = Analysis(str(CAPTURES / f"{name}.pcap"))
    told: list[str] = []
    feed = InsightFeed(lambda k, o: told.append(k), a.knowledge.topic_ids, bounds=Bounds(max_entries=1))

    class Live:
        def event(self, ev):
            if type(ev) is Exchange:
                feed.exchange(ev, a.last_ts)
            elif type(ev) is ConnectionEnd:
                feed.connection_end(ev, a.last_ts)

    outcome = a.run(Live())
    feed.done(outcome.last_ts)
    assert told and feed.all.evictions()
    assert all(n <= 1 for n in feed.all.entries().values())


def test_median_is_statistics_median():
    import statistics

    from analyzer.session.bounded import median

    for values in ([3], [1, 2], [5, 1, 4], [2, 8, 1, 7], [0.5, 0.25], [1, 1.5, 2, 10], list(range(101))):
        got, want = median(values), statistics.median(values)
        assert (got, type(got)) == (want, type(want)), values
