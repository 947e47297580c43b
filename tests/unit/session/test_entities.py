"""The entity walker on the bundled captures: topics, groups, brokers, producer and
transactional ids, found by the schemas' entityType."""

from __future__ import annotations

from functools import cache

import pytest

from analyzer.dissect.constants import ApiKey
from analyzer.dissect.message import Options
from analyzer.model import Exchange, Field
from analyzer.pipeline import Analysis
from analyzer.session import entities
from analyzer.session.entities import (
    BROKER,
    GROUP,
    PRODUCER_ID,
    TRANSACTIONAL_ID,
    EntityRef,
    TopicRef,
    entity_values,
    plan,
    topic_refs,
    walk,
)
from analyzer.session.knowledge import topics_of
from analyzer.session.records import iter_records
from tests.helpers.captures import CAPTURES, project_captures

ALL = [p.name for p in project_captures()]


@cache
def exchanges(name: str) -> tuple[list[Exchange], dict[str, str]]:
    a = Analysis(CAPTURES / name)
    exs = [ev for ev in a.events() if isinstance(ev, Exchange)]
    return exs, a.knowledge.topic_ids


def messages(name: str, api_key: int, kind: str):
    exs, _ = exchanges(name)
    for ex in exs:
        m = ex.request if kind == "request" else ex.response
        if ex.api_key == api_key and m is not None and m.body is not None:
            yield m


# The field-name heuristic that labelled exchanges before the entity walker, kept here verbatim as
# the reference the walker's labels must equal.
_OLD_TOPIC_ARRAYS = frozenset(
    ("topics", "topic_data", "responses", "partitions_data", "topic_partitions", "assigned_topic_partitions")
    + ("data", "topic_errors")
)
_OLD_NAMES = ("name", "topic", "topic_name")
_OLD_PARTITIONS = ("partition_index", "partition", "index", "partition_id")


def _old_topic_name(t: Field, ids: dict[str, str]) -> str | None:
    name = tid = None
    for x in t.children or ():
        if x.name in _OLD_NAMES and x.type == "string" and x.value:
            name = x.value
        elif x.name == "topic_id" and x.type == "uuid":
            tid = x.value
    if name:
        return name
    if tid and tid != entities.ZERO_UUID:
        return ids.get(tid, tid)
    return None


def _old_collect(f: Field, ids: dict[str, str], out: dict[str, list[int]], depth: int) -> None:
    if depth > 3 or not f.children:
        return
    for c in f.children:
        if c.children is None or c.type == "records":
            continue
        if c.name in _OLD_TOPIC_ARRAYS and c.type.startswith("[]"):
            for t in c.children:
                name = _old_topic_name(t, ids)
                if name is None:
                    continue
                parts = out.setdefault(name, [])
                for pc in t.children or ():
                    if pc.type.startswith("[]") and pc.children:
                        for p in pc.children:
                            if p.children:
                                for x in p.children:
                                    if x.name in _OLD_PARTITIONS and isinstance(x.value, int):
                                        parts.append(x.value)
                                        break
                            elif p.type == "int32":
                                parts.append(p.value)
        elif not c.type.startswith("[]"):
            _old_collect(c, ids, out, depth + 1)


@pytest.mark.parametrize("name", ALL)
def test_exchange_topics_equal_the_old_heuristic(name):
    exs, ids = exchanges(name)
    compared = 0
    for ex in exs:
        for m in (ex.request, ex.response):
            if m is None or m.body is None:
                continue
            old: dict[str, list[int]] = {}
            _old_collect(m.body, ids, old, 0)
            new = topics_of(m, ids)
            assert new == old and list(new) == list(old), (ex.api_key, m.kind, m.api_version)
            compared += bool(old)
    assert compared, "no message of the capture names a topic"


@pytest.mark.parametrize("name", ALL)
def test_topic_refs_are_the_walk_for_topics(name):
    """topic_refs collects without generators what walk(msg, None, TOPICS) yields: same refs,
    same order, on every message of every bundled capture."""
    exs, _ = exchanges(name)
    compared = 0
    for ex in exs:
        for m in (ex.request, ex.response):
            if m is None:
                continue
            m.topic_refs = None  # not the refs cached while the capture was analysed
            assert tuple(topic_refs(m)) == tuple(walk(m, None, entities.TOPICS)), (ex.api_key, m.kind)
            compared += m.topic_refs is not None and bool(m.topic_refs[0])
    assert compared, "no message of the capture names a topic"


def test_fetch_topic_ids_resolve_to_names():
    exs, ids = exchanges("librdkafka-produce-consume-zstd.pcap")
    fetches = [m for m in messages("librdkafka-produce-consume-zstd.pcap", ApiKey.FETCH, "request")]
    flexible_ids = [m for m in fetches if m.api_version >= 13]
    assert flexible_ids, "librdkafka fetches by topic id"
    for m in flexible_ids:
        refs = list(topic_refs(m, ids))
        assert refs and all(r.name is None and r.topic_id for r in refs)
        assert all(r.topic == ids[r.topic_id] for r in refs)
        assert all(r.partition_indexes() for r in refs)
        # without the knowledge, the id stands for the topic
        assert [r.topic for r in topic_refs(m)] == [r.topic_id for r in refs]


def test_groups_from_join_group_and_offset_commit():
    name = "librdkafka-produce-consume-gzip.pcap"
    joins = list(messages(name, ApiKey.JOIN_GROUP, "request"))
    commits = list(messages(name, ApiKey.OFFSET_COMMIT, "request"))
    assert joins and commits
    for m in joins + commits:
        assert entity_values(m, GROUP) == [m.body.get("group_id")]
        assert m.body.get("group_id")
    for m in commits:
        assert [r.topic for r in topic_refs(m)] == [t.get("name") for t in m.body.child("topics").children]


def test_producer_and_transactional_ids():
    name = "librdkafka-txn.pcap"
    inits = list(messages(name, ApiKey.INIT_PRODUCER_ID, "response"))
    assert inits
    for m in inits:
        pids = entity_values(m, PRODUCER_ID)
        assert pids == [m.body.get("producer_id")] and pids[0] >= 0
    adds = list(messages(name, ApiKey.ADD_PARTITIONS_TO_TXN, "request"))
    assert adds and all(m.api_version <= 3 for m in adds)
    for m in adds:
        txn = m.body.get("v3_and_below_transactional_id")
        assert txn and entity_values(m, TRANSACTIONAL_ID) == [txn]
        assert entity_values(m, PRODUCER_ID) == [m.body.get("v3_and_below_producer_id")]
        # the walker finds its topics (the exchange labels keep the old arrays only)
        refs = list(topic_refs(m))
        assert refs and {r.array for r in refs} == {"v3_and_below_topics"} and not topics_of(m)
        assert all(r.partition_indexes() for r in refs)


def test_brokers_from_metadata():
    for m in messages("librdkafka-admin.pcap", ApiKey.METADATA, "response"):
        nodes = [b.get("node_id") for b in m.body.child("brokers").children]
        brokers = entity_values(m, BROKER)
        assert nodes and set(nodes) <= set(brokers)  # leaders, replicas and the controller too


def test_walk_order_and_kinds():
    m = next(messages("librdkafka-txn.pcap", ApiKey.TXN_OFFSET_COMMIT, "request"))
    got = [(r.entity, r.value) if isinstance(r, EntityRef) else ("topic", r.topic) for r in walk(m)]
    kinds = [k for k, _ in got]
    assert kinds[:3] == [TRANSACTIONAL_ID, GROUP, PRODUCER_ID] and "topic" in kinds


def test_records_view_uses_the_walker():
    a = Analysis(CAPTURES / "librdkafka-produce-consume-none.pcap", Options(records_bodies=True))
    exs = [ev for ev in a.events() if isinstance(ev, Exchange) and ev.api_key == ApiKey.PRODUCE]
    m = exs[0].request
    refs = list(topic_refs(m))
    assert refs and all(p is not None for r in refs for p, _ in r.partitions)
    assert {r.topic for r in iter_records(m)} == {r.topic for r in refs}


def test_plan_is_per_version_and_pruned():
    fetch12, fetch13 = plan(ApiKey.FETCH, "request", 12), plan(ApiKey.FETCH, "request", 13)
    assert fetch12["topics"].names_topic and fetch13["topics"].names_topic
    assert fetch12["topics"].sub["topic"].role == entities.TOPIC
    assert "topic" not in fetch13["topics"].sub and "topic_id" in fetch13["topics"].sub
    assert fetch13["topics"].sub["partitions"].sub["partition"].role == "partition"
    assert "max_wait_ms" not in fetch13  # fields that name nothing are left out
    assert plan(ApiKey.FETCH, "request", 999) is None
    assert plan(ApiKey.FETCH, "request", 13) is fetch13
    assert walk(None) is not None and list(walk(None)) == []


def test_topic_ref_of_a_name_list():
    m = next(messages("librdkafka-kip848.pcap", ApiKey.CONSUMER_GROUP_HEARTBEAT, "request"))
    names = [r for r in topic_refs(m) if r.array == "subscribed_topic_names"]
    assert names and all(isinstance(r, TopicRef) and r.element is None and not r.partitions for r in names)
