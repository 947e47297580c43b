"""The merge's corrections on their own: connection ids and order over parts, lines put right,
the simple commit judged again, and when one run would close connections early."""

from array import array

import orjson

from analyzer.export.merge import (
    CONNECTION,
    END,
    EXCHANGE,
    ISSUE,
    UNNAMED_ANSWER,
    SimpleCommit,
    TableLog,
    TopicRefs,
    connection_ids,
    evicts,
    name_broker,
    name_broker_in,
    order_key,
    relabel,
    renumber,
    with_issues,
)
from analyzer.issues import QUIRK_SIMPLE_COMMIT_REJECTED, STREAM_GAP


def test_connection_ids_follow_the_opening_packets_over_every_part():
    ids = connection_ids([("a", [5, 9]), ("b", [1, 7])])
    assert ids == {("b", 1): 1, ("a", 1): 2, ("b", 2): 3, ("a", 2): 4}


def test_the_end_is_ordered_by_connection():
    assert order_key(12, 3, 7) == (12, 0, 3)
    assert order_key(END, 3, 7) == (END, 7, 3)
    assert sorted([order_key(END, 0, 9), order_key(END, 5, 2), order_key(40, 9, 1)]) == [
        (40, 0, 9),
        (END, 2, 5),
        (END, 9, 0),
    ]


def test_lines_are_renumbered_relabelled_and_reissued():
    ex = b'{"type":"exchange","connection":{"id":3,"client":"x"},"topics":{"t":[0]},"request":{},"issues":[]}'
    assert b'"connection":{"id":17,' in renumber(ex, EXCHANGE, 17)
    conn = b'{"type":"connection","id":3,"client":"x"}'
    assert renumber(conn, CONNECTION, 8) == b'{"type":"connection","id":8,"client":"x"}'
    issue = b'{"type":"issue","connection":3,"code":"x"}'
    assert renumber(issue, ISSUE, 4) == b'{"type":"issue","connection":4,"code":"x"}'
    assert b'"topics":{"orders":[0,1]},"request"' in relabel(ex, {"orders": [0, 1]})
    gap = STREAM_GAP("lost bytes")
    assert with_issues(ex, [gap]).endswith(b'"issues":' + orjson.dumps([gap.to_dict()]) + b"}")


def test_the_broker_is_named_where_it_was_not():
    said = UNNAMED_ANSWER + "UNKNOWN_MEMBER_ID"
    assert name_broker(said, "Apache Kafka") == "Apache Kafka answered UNKNOWN_MEMBER_ID"
    assert name_broker("something else", "Apache Kafka") == "something else"
    assert name_broker_in(orjson.dumps({"m": said}), "Tansu") == orjson.dumps(
        {"m": "Tansu answered UNKNOWN_MEMBER_ID"}
    )


def test_topic_refs_name_topics_by_id_where_they_are_read():
    refs = TopicRefs(
        [(None, "id1", [0]), ("t", None, [1]), (None, "id1", [2])], [(None, "id1", 3, 30), ("t", None, 1, 5)]
    )
    names = {"id1": "orders"}.get
    assert refs.topics(lambda nm, tid: nm or names(tid, tid)) == {"orders": [0, 2], "t": [1]}
    assert refs.record_counts(lambda nm, tid: nm or tid) == [("id1", 3, 30), ("t", 1, 5)]


def test_a_simple_commit_gets_its_quirk_for_an_empty_group():
    quirk = QUIRK_SIMPLE_COMMIT_REJECTED("the broker answered ...")
    gap = STREAM_GAP("x")
    c = SimpleCommit("g", False, [gap], quirk, [gap])
    assert c.issues(True) == [gap, quirk, gap]
    assert c.issues(False) == [gap, gap]
    assert c.own_issues(True) == [gap, quirk]


def _log(*steps):
    t = TableLog()
    for index, size, opened in steps:
        t.feed(index, size, opened)
    return t.log


def test_one_run_evicts_when_the_parts_together_reach_the_limit():
    # part 0 holds one connection from packet 1 to 10, part 1 opens one at 5 and another at 20
    a = _log((1, 2, True), (10, 0, False))
    b = _log((5, 2, True), (20, 4, True))
    assert not evicts([a, b], 3)
    assert evicts([a, b], 1)  # two open together at packet 5
    assert not evicts([a, _log((20, 2, True))], 1)  # opened after the first closed
    assert not evicts([array("q"), array("q")], 1)
