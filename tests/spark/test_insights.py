"""The producers' and the clients' Spark tables (producers, retries, transactions, held_back, e2e,
clients, edges) on the producer scenarios, librdkafka's transactions, an old kafka-python and
a consumer group: each piece's rows are the CLI's ``export`` objects of those types, whether
Spark analyses a capture whole or cut into 4 KB byte-range splits whose connections are shared
among owners (a producer's, its transaction coordinator's and the consumers' connections on
different owners, followed again in capture order with the connections' ends); ``stats
--parquet`` gives ``stats``' producers, transactions, e2e and readiness sections. One Spark
session, three analyses."""

from __future__ import annotations

import io
import json
import os
import shutil
from contextlib import redirect_stdout

import pytest

from analyzer import cli
from analyzer.session.insights import CLIENT_TYPES
from analyzer.session.producer_insights import OBJECT_TYPES as PRODUCER_TYPES
from tests.helpers.captures import CAPTURES, connection_keys, cut

pyspark = pytest.importorskip("pyspark")

if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("Spark needs Java", allow_module_level=True)

SCENARIOS = [
    "producer-idempotent",
    "producer-plain",
    "producer-txn",
    "producer-mix",
    "librdkafka-txn",
    "kafka-python-0.9-gzip",
    "group-lag",
]
FILES = [CAPTURES / f"{name}.pcap" for name in SCENARIOS]
TYPES = (*PRODUCER_TYPES, *CLIENT_TYPES)
SECTIONS = ("producers", "transactions", "e2e", "readiness")


def _cli(*args: str) -> tuple[int, bytes]:
    buf = io.BytesIO()
    out = io.TextIOWrapper(buf, encoding="utf-8")
    with redirect_stdout(out):
        rc = cli.main(list(args))
        out.flush()
    return rc, buf.getvalue()


def cli_view(path) -> dict:
    """The CLI's view of a capture: export's producer and client objects by type (in its
    order), and stats' producer and readiness sections."""
    _, export = _cli("export", str(path))
    objects: dict[str, list] = {t: [] for t in TYPES}
    for d in map(json.loads, export.splitlines()):
        if d.get("type") in objects:
            objects[d.pop("type")].append(d)
    _, stats = _cli("stats", "--format", "json", str(path))
    tables = json.loads(stats)
    return {"objects": objects, "sections": {k: tables[k] for k in SECTIONS}}


def _norm(v):
    """Numbers as floats (a Spark double column gives 1.0 for the export's 1), recursively."""
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_norm(x) for x in v]
    if isinstance(v, int | float) and not isinstance(v, bool):
        return float(v)
    return v


def _ordered(objects: dict) -> dict:
    """Each type's rows in one order (Spark's rows come unordered)."""
    return {
        k: sorted((_norm(r) for r in rows), key=lambda r: json.dumps(r, sort_keys=True))
        for k, rows in objects.items()
    }


def spark_objects(a) -> dict:
    """The rows of the producer and client tables by piece (its first file's path), as plain
    data without their ``capture`` (one Spark job: the events of those kinds)."""
    from pyspark.sql import functions as F

    from analyzer.spark.source import local_path

    out: dict[str, dict[str, list]] = {}
    for r in a.events.where(F.col("kind").isin(*TYPES)).collect():
        kind = r["kind"]
        row = r[kind].asDict(recursive=True)
        first = os.path.realpath(local_path(row.pop("capture").split(" (+")[0]))
        out.setdefault(first, {k: [] for k in TYPES})[kind].append(row)
    return out


@pytest.fixture(scope="module")
def want() -> dict:
    return {str(f.resolve()): cli_view(f) for f in FILES}


def test_the_scenarios_have_every_kind_of_object(want):
    seen = {k for v in want.values() for k, rows in v["objects"].items() if rows}
    # no bundled capture has a read_committed consumer held back: see test_a_held_back_row
    assert seen == set(TYPES) - {"held_back"}
    assert all(any(v["sections"][s] for v in want.values()) for s in SECTIONS)


@pytest.fixture(scope="module")
def whole(spark, tmp_path_factory):
    """The scenarios analysed each whole, their tables written (read back by ``stats
    --parquet``)."""
    from analyzer.spark.source import analyze, write_tables

    a = analyze(spark, [str(f) for f in FILES], bodies=True, chain=False, split_size=None)
    out = tmp_path_factory.mktemp("insights-parquet") / "out"
    try:
        got = spark_objects(a)
        write_tables(a, str(out), "insights")
    finally:
        a.unpersist()
    return got, out


def test_whole_captures_give_the_cli_objects(whole, want):
    got, _out = whole
    assert set(got) == set(want)
    for f in want:
        assert _ordered(got[f]) == _ordered(want[f]["objects"]), f


def _merged(want: dict) -> dict:
    """``stats --parquet``'s sections over every piece: each capture's ``stats`` rows, sorted as
    ``stats`` sorts them (the keys of the export's objects of the same rows), then by piece."""
    from analyzer.session.consumption import host_of

    rows: dict[str, list] = {s: [] for s in SECTIONS}
    for f in sorted(want):
        objects, sections = want[f]["objects"], want[f]["sections"]
        for o, r in zip(objects["producer"], sections["producers"], strict=True):
            key = (o["first"], host_of(o["client"]), o["client_id"] or "", o["producer_id"])
            rows["producers"].append((key, f, r))
        for r in sections["transactions"]:
            rows["transactions"].append(((r["transactional_id"],), f, r))
        for r in sections["e2e"]:
            key = (r["topic"], r["partition"], r["producer_client"], r["consumer_client"], r["group"] or "")
            rows["e2e"].append((key, f, r))
        for o, r in zip(objects["client"], sections["readiness"], strict=True):
            rows["readiness"].append(((o["first"], str((o["client"], o["client_id"]))), f, r))
    return {s: [r for _k, _f, r in sorted(v, key=lambda x: (x[0], x[1]))] for s, v in rows.items()}


def test_stats_parquet_gives_the_producer_and_readiness_sections(whole, want):
    _got, out = whole
    rc, text = _cli("stats", "--parquet", str(out), "--format", "json")
    assert rc == 0
    tables = json.loads(text)
    merged = _merged(want)
    for s in SECTIONS:
        assert tables[s] == merged[s], s
    rc, text = _cli("stats", "--parquet", str(out))  # as text: the sections' titles and rows
    assert rc == 0
    for title in (
        b"Producers (export",
        b"Transactions (export",
        b"End-to-end latency",
        b"readiness for Kafka",
    ):
        assert title in text
    import pyarrow.dataset as ds

    from analyzer.spark.source import INSIGHT_NAMES

    for kind in TYPES:
        path = out / INSIGHT_NAMES[kind]
        n = sum(len(want[f]["objects"][kind]) for f in want)
        assert path.is_dir() == (n > 0), kind  # a table without a row is not written
        if not n:
            continue
        rows = ds.dataset(str(path), format="parquet", partitioning="hive").to_table().to_pylist()
        assert len(rows) == n, kind
        assert {r["capture_set"] for r in rows} == ({"insights"} if rows else set())


def test_connections_on_several_owners_in_tiny_splits(spark, want, monkeypatch):
    """Each scenario cut into 4 KB splits, every other connection (in the order they open) on
    another owner: the rows are those of the capture whole."""
    from analyzer.spark import stitch
    from analyzer.spark.source import analyze

    keys = [k for f in FILES for k in connection_keys(f)]
    planned = []

    def plan(_path, parts):
        planned.append(parts)
        return {k: i % parts for i, k in enumerate(keys)}

    monkeypatch.setattr(stitch, "plan_owners", plan)
    a = analyze(spark, [str(f) for f in FILES], chain=False, split_size=4096)
    try:
        # (kafka-python-0.9-gzip is smaller than a split: analysed whole)
        assert len(a.split) == len(FILES) - 1 and min(a.split.values()) > 10
        assert min(planned) >= 2
        got = spark_objects(a)
        assert set(got) == set(want)
        for f in want:
            assert _ordered(got[f]) == _ordered(want[f]["objects"]), f
    finally:
        a.unpersist()


def test_rotated_pieces_chained_give_the_capture_whole(spark, want, tmp_path):
    """A transactional scenario rotated every 29 packets: Spark chains the pieces and its
    producers, transactions and clients are those of the file whole (the rows name the chain's
    first file)."""
    from analyzer.spark.source import analyze

    src = CAPTURES / "producer-txn.pcap"
    first = cut(src, 29, tmp_path)[0]
    a = analyze(spark, [str(tmp_path)], split_size=None)
    try:
        assert len(a.pieces) == 1 and len(a.pieces[0].uris) > 10
        got = spark_objects(a)
        assert set(got) == {os.path.realpath(first)}
        assert _ordered(got[os.path.realpath(first)]) == _ordered(want[str(src.resolve())]["objects"])
    finally:
        a.unpersist()


def test_the_tables_have_the_export_columns():
    """Each table's columns (and its nested structs' fields) are the JSON Schema's properties of
    the export's objects of its type (its ``type`` aside), with the piece's ``capture`` first."""
    from pyspark.sql.types import ArrayType, StructType

    from analyzer.spark.rows import CLIENT_TABLES, PRODUCER_TABLES

    defs = json.loads((CAPTURES.parent / "analyzer" / "export" / "schema.json").read_text())["$defs"]

    def fields(t) -> dict:
        out = {}
        for f in t.fields:
            inner = f.dataType.elementType if isinstance(f.dataType, ArrayType) else f.dataType
            out[f.name] = fields(inner) if isinstance(inner, StructType) else None
        return out

    def props(d: dict) -> dict:
        out = {}
        for k, v in d["properties"].items():
            if "$ref" in v:
                v = defs[v["$ref"].rsplit("/", 1)[1]]
            inner = v.get("items", v)
            if "oneOf" in inner:  # null or an object
                inner = next(x for x in inner["oneOf"] if x.get("type") == "object")
            out[k] = props(inner) if "properties" in inner else None
        return out

    for kind, t in {**PRODUCER_TABLES, **CLIENT_TABLES}.items():
        table = fields(t)
        assert list(table)[0] == "capture"
        assert {**table, "type": None} == {**props(defs[kind]), "capture": None}, kind


def test_a_held_back_row(spark):
    """A ``held_back`` object (none of the captures has one) as its row and back."""
    from analyzer.spark.rows import EVENT, insight_rows
    from analyzer.spark.source import Analysis

    obj = {
        "client_id": "reader",
        "client": "10.0.0.2",
        "topic": "t",
        "partition": 3,
        "fetches": 7,
        "max_held_back": 12,
        "last_held_back": 10,
        "growing": True,
    }

    class Held:
        class groups:  # noqa: N801 - stands for GroupInsights
            @staticmethod
            def table(now):
                return []

        @staticmethod
        def objects(now):
            return [{"type": "held_back", **obj}]

    rows = insight_rows("file:/x.pcap", Held, 1.0)
    a = Analysis(spark.createDataFrame(rows, EVENT), False)
    assert [r.asDict(recursive=True) for r in a.held_back.collect()] == [{"capture": "file:/x.pcap", **obj}]
