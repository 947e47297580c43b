"""`export --records` of every project capture holds the manifest's records, in one shape for
magic 0, 1 and 2: one jq path finds every value, and absolute offsets and timestamps are the
manifest's.

The path is ``.. | .record_list? | .[]? | .value`` (``.[]?``: jq stops an input with "Cannot
iterate over null" on the objects that have no ``record_list``, i.e. all but the batches).
:func:`jq_records` walks the JSON the way ``.. | .record_list? | .[]?`` does; one test runs the
real ``jq`` when it is installed.
"""

import json
import shutil
import subprocess
from collections import defaultdict

import pytest

from analyzer.cli import main
from tests.helpers.captures import CAPTURES

MANIFEST = (
    json.loads((CAPTURES / "manifest.json").read_text()) if (CAPTURES / "manifest.json").exists() else []
)
JQ_PATH = ".. | .record_list? | .[]? | .value"


def descend(node):
    """jq's ``..``: the node, then every value inside it, depth first, in document order."""
    yield node
    if isinstance(node, dict):
        for v in node.values():
            yield from descend(v)
    elif isinstance(node, list):
        for v in node:
            yield from descend(v)


def jq_records(node):
    """``.. | .record_list? | .[]?``: the records of every batch under ``node``."""
    for x in descend(node):
        if isinstance(x, dict) and isinstance(x.get("record_list"), list):
            yield from x["record_list"]


def keylog_args(entry) -> list[str]:
    """A TLS scenario's key log (the manifest names it), for --tls-keylog."""
    keylog = (entry.get("tls") or {}).get("keylog")
    return ["--tls-keylog", str(CAPTURES / keylog)] if keylog else []


def export_lines(path, tmp_path, entry=None):
    out = tmp_path / (path.stem + ".ndjson")
    extra = keylog_args(entry) if entry else []
    assert main(["export", str(path), "--records", "--no-spans", "-o", str(out), *extra]) == 0
    return out, [json.loads(x) for x in out.read_bytes().splitlines()]


def magic(entry) -> int:
    """The record format of a scenario's batches (its client's api_version setting)."""
    if entry["client"] == "kafka-python" and entry["api_version"] in ("0.8.2", "0.9"):
        return 0
    if entry["client"] == "kafka-go":  # kafka-go 0.2 writes message sets of magic 1 only
        return 1
    legacy_v1 = entry["api_version"] in ("0.10.0", "0.10.1")  # a producer at 0.10.x: magic 1
    return 1 if entry["client"] == "kafka-python" and legacy_v1 else 2


# group-internal's records are coordinator records (binary keys and values): test_internal_capture.py
# checks each field for field against what its writer encoded; these tests compare text
TEXT_RECORDS = [e for e in MANIFEST if e["scenario"] != "group-internal"]


def text(v):
    assert not isinstance(v, dict), v  # the manifest's keys and values are UTF-8 text
    return v


@pytest.mark.parametrize("entry", TEXT_RECORDS, ids=lambda e: e["file"])
def test_one_jq_path_finds_every_record_with_its_offset_and_timestamp(entry, tmp_path):
    _, lines = export_lines(CAPTURES / entry["file"], tmp_path, entry)
    values = [r["value"] for line in lines for r in jq_records(line)]
    produced, fetched = defaultdict(list), defaultdict(list)
    for line in lines:
        if line["type"] != "exchange":
            continue
        if line["api_name"] == "Produce" and line["request"]:
            for r in jq_records(line["request"]):
                produced[(text(r["key"]), text(r["value"]))].append(r)
        if line["api_name"] in ("Fetch", "ShareFetch") and line["response"]:
            for r in jq_records(line["response"]):
                if not r["control"]:
                    fetched[(text(r["key"]), text(r["value"]))].append(r)
    magics = {
        x["batch"]["magic"] for line in lines for x in descend(line) if isinstance(x, dict) and "batch" in x
    }
    assert magics == {magic(entry)}
    for want in entry["produced"]:
        assert want["value"] in values
        got = produced[(want["key"], want["value"])]
        assert got, want
        for r in got:
            assert r["headers"] == [{"key": k, "value": v} for k, v in want["headers"] or []]
            assert r["control"] is False and r["control_type"] is None
            if want["timestamp"] is not None:  # the CreateTime the producer set (null: magic 0)
                assert r["timestamp"] == want["timestamp"], (want, r)
                assert r["timestamp_iso"] is not None
            else:
                assert r["timestamp"] is None and r["timestamp_iso"] is None
    # a record written twice (producer-idempotent, producer-plain: a batch sent again) is fetched
    # at each of its offsets
    offsets = defaultdict(set)
    for want in entry["consumed"]:
        offsets[(want["key"], want["value"])].add(want["offset"])
    for want in entry["consumed"]:
        assert want["value"] in values
        got = fetched[(want["key"], want["value"])]
        assert got, want
        assert {r["offset"] for r in got} == offsets[(want["key"], want["value"])], want
        for r in got:  # fetched batches carry absolute offsets
            assert r["timestamp"] == want["timestamp"], (want, r)


def test_every_magic_is_covered():
    assert {magic(e) for e in MANIFEST} == {0, 1, 2}


# one capture per magic: v0 (fetched back), v1 (nested gzip wrappers), v2 with control batches
JQ_CASES = ["kafka-python-0.9-none.pcap", "kafka-python-0.10.0-gzip.pcap", "librdkafka-txn.pcap"]


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq not installed")
@pytest.mark.parametrize("name", JQ_CASES)
def test_real_jq_agrees(name, tmp_path):
    out, lines = export_lines(CAPTURES / name, tmp_path)
    r = subprocess.run(["jq", "-c", JQ_PATH, str(out)], capture_output=True, timeout=120, check=True)
    got = [json.loads(x) for x in r.stdout.splitlines()]
    assert got == [rec["value"] for line in lines for rec in jq_records(line)]
    manifest = next(e for e in MANIFEST if e["file"] == name)
    assert {w["value"] for w in manifest["produced"] + manifest["consumed"]} <= {
        v for v in got if not isinstance(v, dict)
    }


@pytest.mark.parametrize("entry", TEXT_RECORDS, ids=lambda e: e["file"])
def test_records_view_is_the_export_shape(entry):
    """The session's records view (stats, check, Spark) gives the records the export writes."""
    from analyzer.dissect.message import Options
    from analyzer.dissect.records import Record
    from analyzer.export.jsonout import exchange_json, record_json
    from analyzer.model import Exchange
    from analyzer.pipeline import Analysis
    from analyzer.session.records import iter_records

    keylog = (entry.get("tls") or {}).get("keylog")
    a = Analysis(
        CAPTURES / entry["file"], Options(records_bodies=True), tls_keylog=keylog and CAPTURES / keylog
    )
    n = 0
    for ev in a.events():
        if type(ev) is not Exchange:
            continue
        js = exchange_json(ev, False, True)
        for m, kind in ((ev.request, "request"), (ev.response, "response")):
            if m is None or m.body is None:
                continue
            view = [
                record_json(
                    Record(r.offset, r.timestamp, r.key, r.value, r.headers, r.control, r.control_type)
                )
                for r in iter_records(m, a.knowledge.topic_ids)
            ]
            assert view == list(jq_records(js[kind])), (ev.api_key, kind)
            n += len(view)
    assert n > 0
