"""Stats.merge (live fanout workers): two accumulators over disjoint connections, merged, give
the tables of one accumulator over everything."""

from analyzer.events import ConnectionEnd, ConnIssue
from analyzer.model import Exchange
from analyzer.pipeline import Analysis
from analyzer.session.stats import Stats
from tests.helpers.captures import CAPTURES


def conn_id(ev):
    t = type(ev)
    if t is Exchange or t is ConnectionEnd or t is ConnIssue:
        return ev.conn.id
    return 0


def test_merged_halves_equal_the_whole():
    for name in (
        "librdkafka-produce-consume-gzip.pcap",
        "kafka-python-0.11-lz4.pcap",
        "librdkafka-admin.pcap",
    ):
        a = Analysis(CAPTURES / name)
        events = list(a.events())
        whole, even, odd = (
            Stats(a.knowledge.topic_ids),
            Stats(a.knowledge.topic_ids),
            Stats(a.knowledge.topic_ids),
        )
        for ev in events:
            whole.event(ev)
            (even if conn_id(ev) % 2 == 0 else odd).event(ev)
        merged = Stats(a.knowledge.topic_ids)
        merged.merge(even)
        merged.merge(odd)
        assert odd.exchanges and even.exchanges, name
        for rows in ("api_rows", "topic_rows", "client_rows", "connection_rows", "anomaly_rows"):
            assert getattr(merged, rows)() == getattr(whole, rows)(), (name, rows)
        assert (merged.exchanges, merged.first_ts, merged.last_ts) == (
            whole.exchanges,
            whole.first_ts,
            whole.last_ts,
        )


def test_rows_kept_under_a_topic_id_are_folded_into_the_name():
    from analyzer.fanout import name_topic_ids

    s = Stats()
    s.topics["bench"].fetched_records = 5
    s.topics["bench"].requests = 1
    s.topics["yLupTSqVRXykY8uGNBgH_Q"].fetched_records = 3
    s.topics["yLupTSqVRXykY8uGNBgH_Q"].requests = 2
    s.topics["other"].requests = 1
    name_topic_ids(s, {"yLupTSqVRXykY8uGNBgH_Q": "bench"})
    assert [(r["topic"], r["requests"], r["fetched_records"]) for r in s.topic_rows()] == [
        ("bench", 3, 8),
        ("other", 1, 0),
    ]
