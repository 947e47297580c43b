"""The generated protocol table and its look-ups, checked against known Kafka protocol facts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from analyzer.dissect import protocol_table as pt
from analyzer.dissect.schema import (
    api_name,
    data_fields,
    header_fields,
    in_versions,
    message_fields,
    version_range,
)
from tests.helpers import tools

ROOT = Path(__file__).resolve().parents[3]
SCHEMAS = ROOT.parent / "shared" / "kafka-schemas"
GENERATOR = ROOT / "tools" / "gen_protocol.py"
TABLE = ROOT / "analyzer" / "dissect" / "protocol_table.py"
COORDINATOR_TABLE = ROOT / "analyzer" / "dissect" / "coordinator_table.py"

ENTITIES = {"topicName", "groupId", "brokerId", "producerId", "transactionalId"}
PRIMITIVES = {
    "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "bool", "string", "bytes", "uuid",
    "records",
}  # fmt: skip


def field(fields: tuple, name: str) -> tuple:
    for f in fields:
        if f.name == name:
            return f
    raise KeyError(name)


def names(fields: tuple) -> list[str]:
    return [f.name for f in fields]


def present(fields: tuple, version: int) -> list[str]:
    return [f.name for f in fields if in_versions(f.versions, version)]


# --------------------------------------------------------------------------- version ranges


@pytest.mark.parametrize(
    ("api_key", "name", "lo", "hi"),
    [
        (0, "Produce", 0, 13),
        (1, "Fetch", 0, 18),
        (2, "ListOffsets", 0, 11),
        (3, "Metadata", 0, 13),
        (4, "LeaderAndIsr", 0, 7),
        (5, "StopReplica", 0, 4),
        (6, "UpdateMetadata", 0, 8),
        (7, "ControlledShutdown", 0, 3),
        (8, "OffsetCommit", 0, 10),
        (18, "ApiVersions", 0, 4),
        (68, "ConsumerGroupHeartbeat", 0, 1),
        (74, "ListConfigResources", 0, 1),  # ListClientMetricsResources in 3.9
        (78, "ShareFetch", 0, 2),
        (88, "StreamsGroupHeartbeat", 0, 0),
        (92, "DeleteShareGroupOffsets", 0, 0),
    ],
)
def test_version_ranges_and_names(api_key, name, lo, hi):
    assert api_name(api_key) == name
    assert version_range(api_key) == (lo, hi)
    for v in (lo, hi):
        assert message_fields(api_key, "request", v) is not None
        assert message_fields(api_key, "response", v) is not None
    assert message_fields(api_key, "request", hi + 1) is None


def test_every_api_key_of_both_snapshots():
    assert sorted(pt.API_NAMES) == list(range(93))
    for key in pt.API_NAMES:
        assert (key, "request") in pt.MESSAGES
        assert (key, "response") in pt.MESSAGES
        assert key in pt.API_LISTENERS
    assert api_name(9999) is None
    assert version_range(9999) is None
    assert message_fields(9999, "request", 0) is None


def test_merge_rule_segments():
    # Produce: 4.2 supplies v3-13, 3.9 only the versions 4.2 dropped (v0-2)
    assert [(s[0], s[1]) for s in pt.MESSAGES[(0, "request")]] == [(3, 13), (0, 2)]
    assert [(s[0], s[1]) for s in pt.MESSAGES[(1, "request")]] == [(4, 18), (0, 3)]
    # Metadata: 4.2 has every version, so there is no 3.9 segment
    assert [(s[0], s[1]) for s in pt.MESSAGES[(3, "request")]] == [(0, 13)]
    # LeaderAndIsr: 4.2 has validVersions "none", everything comes from 3.9
    assert [(s[0], s[1]) for s in pt.MESSAGES[(4, "request")]] == [(0, 7)]
    assert pt.API_LISTENERS[4] == ("zkBroker",)
    # ShareGroupHeartbeat: 4.2 starts at v1; the early-access v0 comes from 3.9
    assert [(s[0], s[1]) for s in pt.MESSAGES[(76, "request")]] == [(1, 1), (0, 0)]


def test_segments_are_disjoint():
    for key, segments in [*pt.MESSAGES.items(), *pt.HEADERS.items(), *pt.DATA.items()]:
        seen: set[int] = set()
        for lo, hi, _, _ in segments:
            assert lo <= hi, key
            versions = set(range(lo, hi + 1))
            assert not versions & seen, key
            seen |= versions


def check_fields(fields: tuple, where: str) -> None:
    for f in fields:
        assert type(f) is pt.FieldSpec and len(f) == 11, where
        name, ftype, versions, _nullable, tagged, tag, default, entity, map_key, flexible, children = f
        assert isinstance(name, str) and name.isidentifier(), where  # "isKRaftController" is lower-case
        assert versions is not None, f"{where}.{name}"
        assert (tag is None) == (tagged is None), f"{where}.{name}"
        assert entity is None or entity in ENTITIES, f"{where}.{name}"
        assert isinstance(map_key, bool), where
        assert flexible == pt.INHERIT or flexible is None or len(flexible) == 2, where
        assert default is None or isinstance(default, (str, int, bool)), where
        base = ftype.removeprefix("[]")
        if base in PRIMITIVES:
            assert children is None, f"{where}.{name}"
        else:
            assert isinstance(children, tuple), f"{where}.{name}"
            check_fields(children, f"{where}.{name}")


def test_field_tuple_shape():
    for key, segments in [*pt.MESSAGES.items(), *pt.HEADERS.items(), *pt.DATA.items()]:
        for lo, hi, flexible, fields in segments:
            assert flexible is None or (len(flexible) == 2 and flexible[1] == pt.OPEN), key
            check_fields(fields, f"{key}@{lo}-{hi}")


# --------------------------------------------------------------------------- field facts


def test_produce_request():
    fields, flexible = message_fields(0, "request", 3)
    assert not flexible
    txn = field(fields, "TransactionalId")
    assert txn.type == "string"
    assert in_versions(txn.versions, 3) and in_versions(txn.nullable, 3)  # present and nullable from v3
    assert txn.default == "null"
    assert txn.entity == "transactionalId"
    assert not txn.map_key and txn.flexible == pt.INHERIT
    assert message_fields(0, "request", 9)[1] is True
    assert message_fields(0, "request", 8)[1] is False
    # v0-2 come from 3.9 and have no TransactionalId
    fields0, _ = message_fields(0, "request", 0)
    assert present(fields0, 0) == ["Acks", "TimeoutMs", "TopicData"]
    topic = field(fields0, "TopicData")
    assert topic.type == "[]TopicProduceData"
    assert names(field(topic.children, "PartitionData").children) == ["Index", "Records"]
    assert field(topic.children, "Name").entity == "topicName"
    # Produce v13 identifies topics by id (KIP-516)
    fields13, _ = message_fields(0, "request", 13)
    topics13 = field(fields13, "TopicData").children
    assert present(topics13, 13)[:1] == ["TopicId"]
    assert field(topics13, "TopicId").map_key
    assert field(topics13, "TopicId").entity is None  # topic ids have no entityType


def test_fetch_topic_id_from_v13():
    for version in (13, 18):
        fields, flexible = message_fields(1, "request", version)
        assert flexible
        topics = field(fields, "Topics").children
        assert "TopicId" in present(topics, version)
        assert "Topic" not in present(topics, version)
        assert field(topics, "TopicId").type == "uuid"
    fields12, _ = message_fields(1, "request", 12)
    topics12 = field(fields12, "Topics").children
    assert "Topic" in present(topics12, 12) and "TopicId" not in present(topics12, 12)
    # ClusterId is a tagged field (tag 0) from v12
    cluster = field(fields12, "ClusterId")
    assert cluster.tagged == (12, pt.OPEN) and cluster.tag == 0 and cluster.default == "null"


def test_fetch_v0_from_39():
    fields, flexible = message_fields(1, "request", 0)
    assert not flexible
    assert present(fields, 0) == ["ReplicaId", "MaxWaitMs", "MinBytes", "Topics"]


def test_api_versions_response_tagged_fields():
    fields, flexible = message_fields(18, "response", 3)
    assert flexible
    features = field(fields, "SupportedFeatures")
    assert features.type == "[]SupportedFeatureKey"
    assert features.tagged == (3, pt.OPEN) and features.tag == 0
    assert names(features.children) == ["Name", "MinVersion", "MaxVersion"]
    assert field(features.children, "Name").map_key
    epoch = field(fields, "FinalizedFeaturesEpoch")
    assert epoch.tag == 1 and epoch.default == "-1"
    assert field(fields, "ZkMigrationReady").tag == 3
    # v0-2 are not flexible (the response header stays v0 for ApiVersions, a decoder concern)
    assert message_fields(18, "response", 2)[1] is False


def test_common_structs_are_inlined():
    # FetchResponse v16+ NodeEndpoints uses [] of a struct defined inline; MetadataRequest uses
    # commonStructs-free fields, while e.g. DescribeClientQuotas and others use commonStructs.
    for (api_key, kind), segments in pt.MESSAGES.items():
        for _, _, _, fields in segments:
            check_fields(fields, f"{api_key}/{kind}")
    # LeaderAndIsr (3.9) uses the commonStruct LeaderAndIsrPartitionState
    fields, _ = message_fields(4, "request", 7)
    topic_states = field(fields, "TopicStates").children
    states = field(topic_states, "PartitionStates")
    assert states.type == "[]LeaderAndIsrPartitionState"
    assert "Leader" in names(states.children) and "Isr" in names(states.children)


def test_request_header():
    fields, flexible = header_fields("request", 2)
    assert flexible
    client_id = field(fields, "ClientId")
    assert client_id.type == "string"
    assert client_id.flexible is None  # field-level "flexibleVersions": "none"
    assert in_versions(client_id.nullable, 2)
    # v0 (only ControlledShutdown v0 uses it) comes from 3.9 and has no ClientId
    fields0, flexible0 = header_fields("request", 0)
    assert not flexible0
    assert present(fields0, 0) == ["RequestApiKey", "RequestApiVersion", "CorrelationId"]
    assert header_fields("request", 3) is None
    assert header_fields("response", 1)[1] is True
    assert names(header_fields("response", 0)[0]) == ["CorrelationId"]


def test_data_schemas():
    expected = {"ConsumerProtocolSubscription", "ConsumerProtocolAssignment", "LeaderChangeMessage"}
    assert expected <= set(pt.DATA)
    assert "EndTxnMarker" in pt.DATA  # only in 4.2
    fields, flexible = data_fields("ConsumerProtocolSubscription", 3)
    assert not flexible  # flexibleVersions "none"
    assert "RackId" in present(fields, 3)
    assert "RackId" not in present(fields, 2)
    assert data_fields("ConsumerProtocolSubscription", 4) is None
    assert data_fields("NoSuchThing", 0) is None


def test_in_versions():
    assert in_versions((3, pt.OPEN), 3)
    assert in_versions((3, pt.OPEN), 300)
    assert not in_versions((3, pt.OPEN), 2)
    assert in_versions((0, 2), 2) and not in_versions((0, 2), 3)
    assert not in_versions(None, 0)


def test_no_prose_copied():
    text = TABLE.read_text(encoding="utf-8")
    assert "Licensed to the Apache Software Foundation" not in text
    assert "The topic name." not in text
    assert '"about"' not in text


# --------------------------------------------------------------------------- generator


@pytest.mark.skipif(not SCHEMAS.is_dir(), reason="../shared/kafka-schemas is not available")
def test_table_is_up_to_date(tmp_path):
    out = tmp_path / "protocol_table.py"
    subprocess.run(
        [sys.executable, str(GENERATOR), "--schemas", str(SCHEMAS), "--out", str(out), "--quiet"],
        check=True,
    )
    assert out.read_text(encoding="utf-8") == TABLE.read_text(encoding="utf-8"), (
        "analyzer/dissect/protocol_table.py is stale: run tools/gen_protocol.py"
    )
    # the coordinator record table, written beside it from coordinator/
    coordinator = tmp_path / "coordinator_table.py"
    assert coordinator.read_text(encoding="utf-8") == COORDINATOR_TABLE.read_text(encoding="utf-8"), (
        "analyzer/dissect/coordinator_table.py is stale: run tools/gen_protocol.py"
    )


def test_comment_stripping():
    gen_protocol = tools.load("gen_protocol")
    text = '// header\n{"a": "x // not a comment", // trailing\n "b": "\\"//\\""}\n'
    import json

    assert json.loads(gen_protocol.strip_comments(text)) == {"a": "x // not a comment", "b": '"//"'}
    assert gen_protocol.parse_versions("3+") == (3, pt.OPEN)
    assert gen_protocol.parse_versions("0-2") == (0, 2)
    assert gen_protocol.parse_versions("0") == (0, 0)
    assert gen_protocol.parse_versions("none") is None


@pytest.mark.parametrize("path", [TABLE, COORDINATOR_TABLE], ids=["protocol", "coordinator"])
def test_tables_are_constant_data(path):
    """The tables are literals only (no names, no calls) so CPython keeps them as constants of
    the .pyc and importing runs no per-field code; FieldSpecs are built per key on first use."""
    import ast

    tables = [
        node.value
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.AnnAssign | ast.Assign) and isinstance(node.value, ast.Call)
    ]
    tables = [t for t in tables if isinstance(t.func, ast.Name) and t.func.id == "Table"]
    assert len(tables) == (3 if path == TABLE else 1)
    for call in tables:
        (arg,) = call.args
        assert isinstance(ast.literal_eval(arg), dict)  # raises on any name or call


def test_table_builds_each_key_once():
    segments = pt.MESSAGES[(3, "request")]
    assert pt.MESSAGES[(3, "request")] is segments
    assert isinstance(segments[0][3][0], pt.FieldSpec)
    assert pt.MESSAGES.get((9999, "request")) is None
    assert (9999, "request") not in pt.MESSAGES
    assert len(pt.MESSAGES) == len(list(pt.MESSAGES)) == len(dict(pt.MESSAGES.items()))
