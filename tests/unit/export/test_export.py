"""The export validates against the project's JSON Schema, and says what the capture holds."""

import json
import tempfile
from functools import cache
from importlib import resources
from pathlib import Path

import jsonschema_rs
import pytest

from analyzer.cli import main
from tests.helpers.captures import ROOT, project_captures, public_captures

SCHEMA = json.loads(resources.files("analyzer.export").joinpath("schema.json").read_text())
# jsonschema-rs (a complete Draft 2020-12 validator): the Python jsonschema package took ~7 ms an
# exported line (6.4 s for group-lag.pcap's 956 lines, 80% of this module's time); this 0.015 s
LINE = jsonschema_rs.Draft202012Validator(SCHEMA)
DOC = jsonschema_rs.Draft202012Validator({"$defs": SCHEMA["$defs"], "$ref": "#/$defs/document"})

CAPTURES = public_captures() + project_captures()
PROJECT = frozenset(project_captures())


def export(path, tmp_path, *extra):
    """(exit code, output bytes) of ``export PATH EXTRA...`` run in this process; an NDJSON
    export of one of the project's captures once per process (with and without --records, two
    tests assert on each: test_records_flag_only_adds_record_lists reads them again)."""
    if "--format" not in extra and Path(path) in PROJECT:
        return _export(str(path), extra)
    out = tmp_path / "out.json"
    rc = main(["export", str(path), "-o", str(out), *extra])
    return rc, out.read_bytes()


@cache
def _export(path: str, extra: tuple[str, ...]) -> tuple[int, bytes]:
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "out.json"
        rc = main(["export", path, "-o", str(out), *extra])
        return rc, out.read_bytes()


def entries(obj):
    """Every entry of every records object in an export object (batches of records fields)."""
    if isinstance(obj, dict):
        if set(obj) == {"length", "batches"} and isinstance(obj["batches"], list):
            yield from obj["batches"]
            return
        for v in obj.values():
            yield from entries(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from entries(v)


@pytest.mark.parametrize("records", [True, False], ids=["records", "no-records"])
@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_ndjson_lines_validate(path, tmp_path, records):
    rc, data = export(path, tmp_path, *(["--records"] if records else []))
    assert rc == 0
    lines = [json.loads(x) for x in data.splitlines()]
    for obj in lines:
        LINE.validate(obj)
    assert lines[0]["type"] == "capture" and lines[-1]["type"] == "summary"
    assert any(o["type"] == "exchange" for o in lines)
    assert any(o["type"] == "connection" for o in lines)
    # record_list exactly with --records; every other key of an entry is there either way
    for e in entries(lines):
        assert ("record_list" in e) is records
        if records and not e["batch"]["partial"] and e["batch"]["crc_ok"] is not False:
            assert len(e["record_list"]) <= e["record_count"]


@pytest.mark.parametrize("records", [True, False], ids=["records", "no-records"])
@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_json_document_validates(path, tmp_path, records):
    rc, data = export(path, tmp_path, "--format", "json", *(["--records"] if records else []))
    assert rc == 0
    DOC.validate(json.loads(data))


def test_export_keys_cannot_collide_with_wire_names():
    """The export adds <field>_text and <error code>_name beside wire fields, and gives records
    fields (named records / unaligned_records, as the schema says) their own object: no
    schema (messages, headers, embedded data) has a field with one of those names."""
    from analyzer.dissect import protocol_table as pt
    from analyzer.dissect.decoder import snake

    def structs(fields):
        yield fields
        for f in fields:
            if f.children:
                yield from structs(f.children)

    segments = [*pt.MESSAGES.values(), *pt.HEADERS.values(), *pt.DATA.values()]
    seen = 0
    for segs in segments:
        for seg in segs:
            for fields in structs(seg[3]):
                names = {snake(f.name): f.type for f in fields}
                for n, t in names.items():
                    seen += 1
                    assert not n.endswith("_text"), n
                    assert not (n.endswith("_name") and n[:-5] in names), n
                    assert (t == "records") == (n in ("records", "unaligned_records")), (n, t)
    assert seen > 1000


def test_spans_point_at_the_field_bytes(tmp_path):
    path = ROOT.parent / "shared" / "captures" / "public" / "deepflow_00-produce-v7-sw8.pcap"
    if not path.exists():
        pytest.skip("public captures absent")
    rc, data = export(path, tmp_path)
    ex = next(json.loads(x) for x in data.splitlines() if b'"exchange"' in x)
    req = ex["request"]
    assert ex["api_name"] == "Produce" and ex["api_version"] == 7
    assert req["header"]["client_id"] == "kafka-python-producer-1"
    off, length = req["spans"]["/header/client_id"]
    assert length == 2 + len("kafka-python-producer-1")  # int16 length + bytes
    name = req["body"]["topic_data"][0]["name"]
    off, length = req["spans"]["/body/topic_data/0/name"]
    assert name == "quickstart-events" and length == 2 + len(name)
    assert ex["topics"] == {"quickstart-events": [0]}
    assert ex["latency_ms"] > 0 and ex["response"]["body"]["responses"][0]["name"] == name


def test_records_with_headers_as_text(tmp_path):
    path = ROOT.parent / "shared" / "captures" / "public" / "deepflow_00-produce-v7-sw8.pcap"
    if not path.exists():
        pytest.skip("public captures absent")
    rc, data = export(path, tmp_path, "--records")
    ex = next(json.loads(x) for x in data.splitlines() if b'"exchange"' in x)
    entry = ex["request"]["body"]["topic_data"][0]["partition_data"][0]["records"]["batches"][0]
    rec = entry["record_list"][0]
    assert [h["key"] for h in rec["headers"]] == ["sw8"]
    assert entry["batch"]["crc_ok"] is True and entry["batch"]["magic"] == 2
    assert entry["record_count"] == len(entry["record_list"])


def _without_record_lists(obj):
    if isinstance(obj, dict):
        return {k: _without_record_lists(v) for k, v in obj.items() if k != "record_list"}
    if isinstance(obj, list):
        return [_without_record_lists(v) for v in obj]
    return obj


@pytest.mark.parametrize("path", project_captures(), ids=lambda p: p.name)
def test_records_flag_only_adds_record_lists(path, tmp_path):
    """--records adds each batch's record_list and changes nothing else (no key changes type)."""
    rc, with_records = export(path, tmp_path, "--records")
    assert rc == 0
    rc, without = export(path, tmp_path)
    assert rc == 0
    a = [_without_record_lists(json.loads(x)) for x in with_records.splitlines()]
    b = [json.loads(x) for x in without.splitlines()]
    assert a == b
