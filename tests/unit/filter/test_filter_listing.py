"""``kafka-analyzer filters``: every listed field and example compiles, and every decoded field
of every API in the protocol table is listed."""

import json

from analyzer import cli
from analyzer.dissect.protocol_table import API_NAMES, MESSAGES
from analyzer.filter import compile_filter
from analyzer.filter.fields import api_paths


def _json(capsys, *argv):
    capsys.readouterr()
    assert cli.main(["filters", *argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_exchange_fields_listed_and_their_examples_compile(capsys):
    rows = _json(capsys)
    names = {r["name"] for r in rows}
    assert {"api", "latency", "error", "client", "records.codec", "records.key", "unanswered"} <= names
    for r in rows:
        compile_filter(r["name"])
        for example in r["example"].split("; "):
            compile_filter(example)
    assert [r["needs_record_bodies"] for r in rows if r["name"] == "records.key"] == [True]


def test_every_api_lists_every_decoded_field_and_each_compiles(capsys):
    keys = sorted(k for k in API_NAMES if (k, "request") in MESSAGES)
    assert len(keys) == 93
    total = 0
    for key in keys:
        rows = _json(capsys, str(key)) if key % 10 == 0 else None
        paths = api_paths(key)
        if rows is not None:
            assert len(rows) == len(paths)
        for path in paths:
            prefix = API_NAMES[key]
            f = compile_filter(f"{prefix}.{'.'.join(path)}")
            assert f.needs_trees
            total += 1
    assert total > 1500
    rows = _json(capsys, "Produce")
    by = {r["name"]: r for r in rows}
    assert by["produce.acks"] == {
        "name": "produce.acks",
        "type": "int",
        "many": False,
        "in": ["request"],
        "example": "produce.acks > 0",
    }
    assert by["produce.responses.partition_responses.error_code"]["many"] is True
    for r in rows:
        compile_filter(r["example"])


def test_filters_text_and_unknown_api(capsys):
    capsys.readouterr()
    assert cli.main(["filters"]) == 0
    out = capsys.readouterr().out
    assert "all(FIELD OP VALUE)" in out and "latency" in out and "records.key" in out
    assert cli.main(["filters", "fetch"]) == 0
    out = capsys.readouterr().out
    assert "fetch.isolation_level" in out and "fetch.topics.partitions.fetch_offset" in out
    assert cli.main(["filters", "Prodce"]) == 2
    assert "unknown API" in capsys.readouterr().err
