"""captures/group-internal.pcap: records of ``__consumer_offsets`` and ``__transaction_state`` a
reader fetched, against what the writer wrote (captures/group-internal.truth.json: the input of
the independent encoder tests/helpers/coordinator_schemas.py for every record), field for field;
and what they feed: the lag (commits counted once when also seen as an OffsetCommit exchange),
the group timeline (generations read from GroupMetadata records, marked, in the coverage), the
same with ``-j 2``; ``read -v``, ``export --records`` and its JSON Schema.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from analyzer.dissect.constants import ApiKey
from analyzer.dissect.message import Options
from analyzer.model import Exchange
from analyzer.pipeline import Analysis
from analyzer.session.insights import GroupInsights
from analyzer.session.internal import exchange_internal_records
from tests.helpers import coordinator_schemas as cs
from tests.helpers.captures import CAPTURES, ROOT

PCAP = CAPTURES / "group-internal.pcap"
TRUTH = CAPTURES / "group-internal.truth.json"
needs_schemas = pytest.mark.skipif(not cs.available(), reason="../shared/kafka-schemas/coordinator is absent")


def written() -> list[dict[str, Any]]:
    doc = json.loads(TRUTH.read_text())
    return [e for e in doc["clients"]["writer"]["events"] if e["event"] == "written"]


def encoder_input(v: Any) -> Any:
    """The truth's JSON back to the encoder's input ({"hex": ...} -> bytes)."""
    if isinstance(v, dict):
        if set(v) == {"hex"}:
            return bytes.fromhex(v["hex"])
        return {k: encoder_input(x) for k, x in v.items()}
    if isinstance(v, list):
        return [encoder_input(x) for x in v]
    return v


def fetched(bodies: bool) -> dict[tuple[str, int, int], Any]:
    """The internal records of the reader's Fetch answers by (topic, partition, offset)."""
    out = {}
    for ev in Analysis(PCAP, Options(records_bodies=bodies)).events():
        if type(ev) is Exchange and ev.api_key == ApiKey.FETCH:
            for r in exchange_internal_records(ev):
                assert r.offset is not None and r.partition is not None
                out[(r.topic, r.partition, r.offset)] = r
    return out


@needs_schemas
@pytest.mark.parametrize("bodies", [True, False], ids=["bodies", "no-bodies"])
def test_every_record_written_is_decoded_field_for_field(bodies):
    got = fetched(bodies)
    truth = written()
    assert len(truth) == 15
    assert set(got) == {(w["topic"], w["partition"], w["offset"]) for w in truth}
    names = set()
    for w in truth:
        r = got[(w["topic"], w["partition"], w["offset"])]
        rec = r.record
        assert rec.issues == [], rec.issues
        assert rec.record_type == w["record_type"] and rec.name == w["record"]
        assert rec.tombstone == (w["value_version"] is None)
        cs.check_record(
            rec,
            w["record"],
            w["key_version"],
            encoder_input(w["key"]),
            w["value_version"],
            encoder_input(w["value"]),
        )
        names.add((w["record"], w["value_version"]))
        if rec.tombstone:
            assert "tombstone" in rec.summary
    # every kind the scenario meant to write
    assert names >= {
        ("OffsetCommit", 0),
        ("OffsetCommit", 1),
        ("OffsetCommit", 3),
        ("OffsetCommit", None),
        ("GroupMetadata", 1),
        ("GroupMetadata", 2),
        ("GroupMetadata", 3),
        ("GroupMetadata", None),
        ("TransactionLog", 0),
        ("TransactionLog", 1),
        ("TransactionLog", None),
    }


def insights() -> GroupInsights:
    a = Analysis(PCAP)
    gi = GroupInsights(a.knowledge.topic_ids)
    a.run(gi)
    return gi


def test_offset_commit_records_feed_the_lag_once():
    gi = insights()
    commits = [
        (w["key"]["partition"], w["value"]["offset"], w["value"]["commitTimestamp"] / 1000)
        for w in written()
        if w["record"] == "OffsetCommit" and w["key"]["group"] == "g-int-offsets" and w["value"] is not None
    ]
    rows = [r for r in gi.lag.rows if r.group == "g-int-offsets"]
    assert [(r.partition, r.committed_offset, r.time) for r in rows] == commits
    # 9 records produced, 3 per partition: the end offsets are 3
    assert all(r.end_offset == 3 and r.lag == 3 - r.committed_offset for r in rows)
    # g-int-real's commit: an OffsetCommit exchange and the same commit as a record, counted once
    real = [r for r in gi.lag.rows if r.group == "g-int-real"]
    assert [(r.topic, r.partition, r.committed_offset) for r in real] == [("grp-int", 0, 2)]
    assert real[0].position is not None  # the exchange's row (the committer's position known)
    status = {s["group"]: s for s in gi.lag.status()}
    assert status["g-int-offsets"]["coverage"] == "end offsets seen for every committed partition"


def test_group_metadata_records_give_the_generations_the_wire_did_not():
    gi = insights()
    groups = gi.groups.groups
    g = groups["g-int-offsets"]
    meta = {
        w["value"]["generation"]: w["value"]
        for w in written()
        if w["record"] == "GroupMetadata" and w["key"]["group"] == "g-int-offsets"
    }
    assert [x.generation for x in g.generations] == sorted(meta) == [5, 6]
    for gen in g.generations:
        want = meta[gen.generation]
        assert gen.source == "__consumer_offsets"
        assert (gen.protocol_type, gen.protocol_name, gen.leader) == (
            want["protocolType"],
            want["protocol"],
            want["leader"],
        )
        assert gen.time == want["currentStateTimestamp"] / 1000
        assert sorted(m.member_id for m in gen.members) == sorted(m["memberId"] for m in want["members"])
        assert {m.member_id: m.instance_id for m in gen.members} == {
            m["memberId"]: m.get("groupInstanceId") for m in want["members"]
        }
    assert {m.member_id: m.assignment for m in g.generations[0].members} == {
        "m-1": {"grp-int": [0, 1]},
        "m-2": {"grp-int": [2]},
    }
    assert g.generation == 6 and list(g.members) == ["m-1"]
    assert "generations 5, 6 read from __consumer_offsets" in g.coverage
    assert g.rebalances == []
    # g-int-real: its generation formed on the wire; the record of it adds nothing
    real = groups["g-int-real"]
    assert [(x.generation, x.source) for x in real.generations] == [(2, None)]
    assert len(real.rebalances) == 1
    # g-int-gone: a generation then its tombstone
    gone = groups["g-int-gone"]
    assert [x.generation for x in gone.generations] == [1]
    assert gone.coverage.startswith("deleted (a GroupMetadata tombstone in __consumer_offsets)")
    objs = [o for o in gi.objects(None) if o["type"] == "generation"]
    assert [o.get("source") for o in objs if o["group"] == "g-int-offsets"] == ["__consumer_offsets"] * 2
    assert "source" not in next(o for o in objs if o["group"] == "g-int-real")


def run(*args: str) -> str:
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", *args],
        capture_output=True,
        cwd=ROOT,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.decode()


def test_export_records_carry_the_decoded_records_and_match_the_schema(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    one = run("export", str(PCAP), "--records", "-j", "1")
    two = run("export", str(PCAP), "--records", "-j", "2")
    assert one == two
    schema = json.loads((ROOT / "analyzer" / "export" / "schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    decoded = {}
    for line in one.splitlines():
        obj = json.loads(line)
        validator.validate(obj)
        if obj["type"] != "exchange" or obj["api_name"] != "Fetch" or obj["response"] is None:
            continue
        for t in obj["response"]["body"]["responses"]:
            for p in t["partitions"]:
                for b in (p["records"] or {}).get("batches", ()):
                    for r in b.get("record_list", ()):
                        if t["topic"].startswith("__"):
                            decoded[(t["topic"], p["partition_index"], r["offset"])] = r["coordinator"]
                        else:
                            assert "coordinator" not in r
    truth = written()
    assert set(decoded) == {(w["topic"], w["partition"], w["offset"]) for w in truth}
    for w in truth:
        c = decoded[(w["topic"], w["partition"], w["offset"])]
        assert c["name"] == w["record"] and c["record_type"] == w["record_type"]
        assert c["tombstone"] == (w["value"] is None) and c["issues"] == []
        assert c["key"] == {"version": w["record_type"], **{cs.snake(k): v for k, v in w["key"].items()}}
        if w["value"] is None:
            assert c["value"] is None
        else:
            assert c["value"]["version"] == w["value_version"]
    # generations and lag the same with -j 2
    for kind in ('"type":"generation"', '"type":"lag"', '"type":"consumer_status"'):
        assert [x for x in one.splitlines() if kind in x] == [x for x in two.splitlines() if kind in x]
    assert sum('"source":"__consumer_offsets"' in x for x in one.splitlines()) == 3


def test_read_verbose_prints_each_record_under_its_exchange():
    out = run("read", "-v", str(PCAP))
    lines = out.splitlines()
    heads = [
        x
        for x in lines
        if x.startswith("    __consumer_offsets[") or x.startswith("    __transaction_state[")
    ]
    # the writer's Produce requests and the reader's Fetch answers each hold the 15 records
    assert len(heads) == 30
    assert any(
        "OffsetCommit tombstone: the offset of group 'g-int-offsets' for grp-int[2] deleted" in x
        for x in heads
    )
    assert any("GroupMetadata tombstone: group 'g-int-gone' deleted" in x for x in heads)
    assert any("TransactionLog transactional_id='txn-int'" in x and "state=ONGOING" in x for x in heads)
    assert "      value: null (tombstone)" in lines
    assert "        commit_timestamp: " in out and "transaction_status: 4 (COMPLETE_COMMIT)" in out
    assert "            subscription: 19 bytes: ConsumerProtocolSubscription" in lines
    # without -v: one line per exchange, as before
    assert not any(x.startswith("    __") for x in run("read", str(PCAP)).splitlines())
    # the groups command shows the generations read from the records
    groups = run("groups", str(PCAP))
    assert "generation 5 (read from __consumer_offsets)" in groups
    assert "generation 6 (read from __consumer_offsets)" in groups
