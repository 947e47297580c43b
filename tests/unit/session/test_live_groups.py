"""The consumer groups as they happen (analyzer.session.live_groups, and the news/bounds of
analyzer.session.rebalances and analyzer.session.lag it reads): fed exchange by exchange, the
feed writes the objects one offline run gives (the export's), each when it is known; with a
small ``keep`` the trackers stay bounded, count what they let go, and still tell everything."""

import json

import pytest

from analyzer.model import Exchange
from analyzer.pipeline import Analysis
from analyzer.session.insights import GroupInsights
from analyzer.session.live_groups import GroupFeed
from tests.helpers.captures import CAPTURES

SCENARIOS = ["group-joins", "group-cooperative", "group-kip848", "group-static", "group-lag"]
EXPORTED = ("generation", "rebalance", "lag")


def offline(name: str) -> tuple[list[dict], float]:
    a = Analysis(str(CAPTURES / f"{name}.pcap"))
    ins = GroupInsights(a.knowledge.topic_ids)
    outcome = a.run(ins)
    return ins.objects(outcome.last_ts), outcome.last_ts


def fed(name: str, keep: int) -> tuple[list[tuple[str, dict, float]], GroupFeed]:
    """(kind, object, the capture time it was told at) of each thing the feed told."""
    a = Analysis(str(CAPTURES / f"{name}.pcap"))
    out: list[tuple[str, dict, float]] = []
    feed = GroupFeed(lambda k, o: out.append((k, o, a.last_ts)), a.knowledge.topic_ids, keep=keep)

    class Live:
        def event(self, ev):
            if type(ev) is Exchange:
                feed.exchange(ev, a.last_ts)

    outcome = a.run(Live())
    feed.done(outcome.last_ts)
    return out, feed


def _sorted(objs):
    return sorted(json.dumps(o, sort_keys=True) for o in objs)


@pytest.mark.parametrize("keep", [1000, 2])
@pytest.mark.parametrize("name", SCENARIOS)
def test_the_feed_tells_what_one_offline_run_finds(name, keep):
    objs, last = offline(name)
    told, feed = fed(name, keep)
    for kind in EXPORTED:
        assert _sorted(o for k, o, _ in told if k == kind) == _sorted(o for o in objs if o["type"] == kind), (
            kind
        )
    # the end: every group's status at the capture's end, as the export's
    statuses = [o for o in objs if o["type"] == "consumer_status"]
    assert [o for k, o, t in told if k == "consumer_status" and t == last][-len(statuses) :] == statuses
    # each rebalance's end is told at once, with the rebalance's row; its start before it
    ends = [(o, t) for k, o, t in told if k == "rebalance_end"]
    rebs = [o for o in objs if o["type"] == "rebalance"]
    assert len(ends) == len(rebs)
    for o, t in ends:
        if o["end"] is not None:
            assert t < last or o["end"] == last
    starts = [o for k, o, _ in told if k == "rebalance_start"]
    assert len(starts) <= len(rebs) and starts
    dropped = feed.dropped()
    if keep == 2:
        rebs_per_group = {}
        for r in rebs:
            rebs_per_group[r["group"]] = rebs_per_group.get(r["group"], 0) + 1
        assert dropped["rebalances"] == sum(max(0, n - 2) for n in rebs_per_group.values())
        for g in feed.insights.groups.groups.values():
            assert len(g.rebalances) <= 2 and len(g.generations) <= 2
        lag_groups = {r["group"] for r in objs if r["type"] == "lag"}
        for gid in lag_groups:
            assert sum(r.group == gid for r in feed.insights.lag.rows) <= 4
    else:
        assert dropped == {"rebalances": 0, "generations": 0, "lag_rows": 0, "rebalances_unwritten": 0}
    assert dropped["rebalances_unwritten"] == 0


def test_rebalances_and_statuses_are_told_as_they_happen():
    """group-joins: each rebalance's end is told at the exchange that ended it (not at the end of
    the capture); group-lag: the statuses change on the way (STOP comes with time, between
    commits), and the last told of each group is the one at the end."""
    told, _ = fed("group-joins", 1000)
    ends = [(o["end"], t) for k, o, t in told if k == "rebalance_end"]
    assert len(ends) == 5
    for end, t in ends:
        assert end is not None and t - end < 0.01
    told, _ = fed("group-lag", 1000)
    changes = {}
    for k, o, _ in told:
        if k == "consumer_status":
            changes.setdefault(o["group"], []).append(o["status"])
    assert changes["g-lag-ok"][-1] == "OK"
    assert changes["g-lag-stop"][-1] == "ERR"
    assert any(s == "WARN" for s in changes["g-lag-slow"])


def test_news_is_said_once():
    a = Analysis(str(CAPTURES / "group-joins.pcap"))
    ins = GroupInsights(a.knowledge.topic_ids, keep=3)
    a.run(ins)
    news = ins.groups.news()
    assert len(news.rebalances) == 3 and [i for i, _ in news.rebalances] == [2, 3, 4]  # 2 let go untold
    assert ins.groups.news() == ([], [], [])
    rows = ins.lag.news()
    assert rows and ins.lag.news() == []
    first = ins.lag.status_changes(ins.lag.last_ts, every=True)
    assert [s["group"] for s in first] == ["g-group-joins"]
    assert ins.lag.status_changes(ins.lag.last_ts, every=True) == []  # nothing changed
    assert ins.lag.status(ins.lag.last_ts) == ins.lag.status(ins.lag.last_ts)  # judging changes nothing
