"""The insights as they happen (analyzer.session.live_feed, and the news/bounds of the trackers
it reads: rebalances, lag, producers, transactions, e2e, clients): fed exchange by exchange, the
feed writes the objects one offline run gives (the export's), each when it is known; with a
small ``keep`` the trackers stay bounded, count what they let go, and still tell everything."""

import json

import pytest

from analyzer.events import ConnectionEnd
from analyzer.model import Exchange
from analyzer.pipeline import Analysis
from analyzer.session.insights import GroupInsights, Insights
from analyzer.session.live_feed import SETTLE, InsightFeed
from tests.helpers.captures import CAPTURES

SCENARIOS = ["group-joins", "group-cooperative", "group-kip848", "group-static", "group-lag"]
EXPORTED = ("generation", "rebalance", "lag")
LEGACY = ["kafka-python-0.8.2-gzip", "kafka-python-0.10.0-none"]


def offline(name: str) -> tuple[list[dict], float]:
    a = Analysis(str(CAPTURES / f"{name}.pcap"))
    ins = GroupInsights(a.knowledge.topic_ids)
    outcome = a.run(ins)
    return ins.objects(outcome.last_ts), outcome.last_ts


def fed(name: str, keep: int) -> tuple[list[tuple[str, dict, float]], InsightFeed]:
    """(kind, object, the capture time it was told at) of each thing the feed told."""
    a = Analysis(str(CAPTURES / f"{name}.pcap"))
    out: list[tuple[str, dict, float]] = []
    feed = InsightFeed(lambda k, o: out.append((k, o, a.last_ts)), a.knowledge.topic_ids, keep=keep)

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
        assert not any(dropped.values()), dropped
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


# -- the producers' and the clients' insights through the same feed --------------------------------
PRODUCER_SCENARIOS = ["producer-plain", "producer-txn", "producer-idempotent", "producer-mix"]
END_TYPES = ("producer", "held_back", "e2e", "client", "edge")


def everything(name: str):
    """(the offline export's insight objects, what the feed told: (kind, object, capture time))."""
    a = Analysis(str(CAPTURES / f"{name}.pcap"))
    ins = Insights(a.knowledge.topic_ids)
    outcome = a.run(ins)
    objs = ins.objects(outcome.last_ts)
    a = Analysis(str(CAPTURES / f"{name}.pcap"))
    told: list[tuple[str, dict, float]] = []
    feed = InsightFeed(lambda k, o: told.append((k, o, a.last_ts)), a.knowledge.topic_ids)

    class Live:
        def event(self, ev):
            if type(ev) is Exchange:
                feed.exchange(ev, a.last_ts)
            elif type(ev) is ConnectionEnd:
                feed.connection_end(ev, a.last_ts)

    outcome = a.run(Live())
    feed.done(outcome.last_ts)
    return objs, told, outcome, feed


@pytest.mark.parametrize("name", PRODUCER_SCENARIOS)
def test_the_feed_tells_the_producers_transactions_and_clients_of_one_offline_run(name):
    objs, told, outcome, feed = everything(name)
    for kind in ("retry", "transaction", *END_TYPES):
        want = _sorted(o for o in objs if o["type"] == kind)
        assert _sorted(o for k, o, _ in told if k == kind) == want, kind
    # lost and duplicated records: the producers' counts, told batch by batch
    for field, kind in (("failed_records", "lost"), ("duplicates_written", "duplicated")):
        per: dict[tuple, int] = {}
        for k, o, _ in told:
            if k == kind:
                key = (o["client_id"], o["client"], o["producer_id"])
                per[key] = per.get(key, 0) + o["records"]
        want = {
            (o["client_id"], o["client"], o["producer_id"]): o[field]
            for o in objs
            if o["type"] == "producer" and o[field]
        }
        assert per == want, kind
    assert not any(feed.dropped().values())


def test_retries_and_transactions_are_told_as_they_happen():
    """A retry when its later attempt's exchange comes; a transaction at its EndTxn answer; a
    hanging one once past its timeout, before the end of the capture."""
    _, told, outcome, _ = everything("producer-plain")
    retries = [(o, t) for k, o, t in told if k == "retry"]
    assert len(retries) == 3
    for o, t in retries:
        assert t < outcome.last_ts and t - o["later"]["time"] < 0.5
    lost = [o for k, o, _ in told if k == "lost"]
    assert [(o["topic"], o["records"], o["error"]) for o in lost] == [("pplain", 3, "NOT_ENOUGH_REPLICAS")]
    _, told, outcome, _ = everything("producer-txn")
    ended = [(o, t) for k, o, t in told if k == "transaction" and o["outcome"] in ("commit", "abort")]
    assert len(ended) == 6
    for o, t in ended:
        assert t - o["end"] < 0.01
    hanging = [(o, t) for k, o, t in told if k == "hanging"]
    assert len(hanging) == 1
    o, t = hanging[0]
    assert o["transactional_id"] == "txn-producer-txn-hanging" and t < outcome.last_ts
    assert t - o["start"] >= o["timeout_ms"] / 1000 and t - o["start"] < o["timeout_ms"] / 1000 + 1.5


def test_a_batch_nothing_happens_to_is_counted_after_settle():
    """producer-plain's lost batch is told SETTLE seconds of capture time after its last answer
    (the feed's settle; the capture ends before: at its end) and a retry coming later than that
    would be a batch of its own: settle closes only the quiet ones."""
    from analyzer.session.producers import ProducerTracker

    a = Analysis(str(CAPTURES / "producer-plain.pcap"))
    tr = ProducerTracker(a.knowledge.topic_ids)
    tr.follow()

    class Only:  # its events, not its done()
        def event(self, ev):
            tr.event(ev)

    a.run(Only())
    assert sum(len(o) for o in tr.open.values()) == 7
    tr.settle(a.last_ts, 1000.0)
    assert sum(len(o) for o in tr.open.values()) == 7  # nothing quiet for that long
    news = tr.news()
    assert [k for k, _ in news] == ["retry"] * 3
    tr.settle(a.last_ts + 100.0, SETTLE)
    assert not tr.open
    assert [k for k, _ in tr.news()] == ["lost"]  # the retries were told as they came
    assert tr.news() == []


def test_bounded_producers_transactions_and_clients_count_what_they_let_go():
    from analyzer.session.producers import ProducerTracker
    from analyzer.session.transactions import TxnTracker

    a = Analysis(str(CAPTURES / "producer-mix.pcap"))
    tr = ProducerTracker(a.knowledge.topic_ids)
    tr.follow(keep_keys=1)
    txns = TxnTracker(a.knowledge.topic_ids)
    txns.follow(1)
    ins = Insights(a.knowledge.topic_ids)
    ins.clients.follow(1)
    ins.producers.e2e.follow(1)
    a.run(tr, txns, ins)
    tr.done()
    assert len(tr.open) <= 1 and tr.closed_early > 0 and len(tr.written) <= 1
    full = Analysis(str(CAPTURES / "producer-mix.pcap"))
    whole = ProducerTracker(full.knowledge.topic_ids)
    full.run(whole)
    whole.done()
    # closing early loses no batch: the same counts (these batches get no retry that late)
    assert [r["batches"] for r in tr.rows()] == [r["batches"] for r in whole.rows()]
    assert len(ins.clients.clients) == 1 and ins.clients.dropped["clients"] > 0
    assert len(ins.clients.produce_edges) <= 1 and ins.clients.dropped["edges"] > 0
    e2e = ins.producers.e2e
    assert len(e2e.produced) <= 1 and len(e2e.by_capture) <= 1
    assert "let go" in e2e.coverage() or "not counted" in e2e.coverage()
    assert len(txns.done_) <= 2 and txns.finished >= len(txns.done_)


def test_a_client_problem_is_told_once():
    """A client of the legacy captures: each version the newest release refuses told once, at
    the first status tick after it was used."""
    for name in LEGACY:
        _, told, _, _ = everything(name)
        problems = [o for k, o, _ in told if k == "client_problem"]
        assert problems, name
        keys = [(o["client"], o["client_id"], o["problem"]) for o in problems]
        assert len(keys) == len(set(keys))
        assert any(o["kind"] == "readiness" and "refuses" in o["problem"] for o in problems)
