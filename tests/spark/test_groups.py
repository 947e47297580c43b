"""The consumer groups' Spark tables (generations, rebalances, lag, consumer_status,
group_health) on the generated group scenarios: each piece's rows are the CLI's ``export``
group objects and ``stats``' group_health of the capture, whether Spark analyses a capture
whole, cut into 4 KB byte-range splits whose connections are shared among owners (the group's
exchanges on several owners, followed again in capture order), or rotated into pieces that it
chains; ``stats --parquet`` and the jobs' table carry the group_health rows. One Spark session,
three analyses."""

from __future__ import annotations

import io
import json
import os
import shutil
from contextlib import redirect_stdout

import pytest

from analyzer import cli
from analyzer.session.insights import GROUP_TYPES
from tests.helpers.captures import CAPTURES, connection_keys, cut

pyspark = pytest.importorskip("pyspark")

if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("Spark needs Java", allow_module_level=True)

SCENARIOS = ["group-joins", "group-cooperative", "group-kip848", "group-static", "group-lag"]
FILES = [CAPTURES / f"{name}.pcap" for name in SCENARIOS]
# the Spark tables of each export object type (Analysis attribute, write_tables directory)
TABLE = {
    "generation": "generations",
    "rebalance": "rebalances",
    "lag": "lag",
    "consumer_status": "consumer_status",
}


def _cli(*args: str) -> tuple[int, bytes]:
    buf = io.BytesIO()
    out = io.TextIOWrapper(buf, encoding="utf-8")
    with redirect_stdout(out):
        rc = cli.main(list(args))
        out.flush()
    return rc, buf.getvalue()


def cli_groups(path) -> dict:
    """The CLI's view of a capture's groups: export's group objects by type (in its order), and
    stats' group_health rows."""
    _, export = _cli("export", str(path))
    objects: dict[str, list] = {t: [] for t in GROUP_TYPES}
    for d in map(json.loads, export.splitlines()):
        if d.get("type") in objects:
            objects[d.pop("type")].append(d)
    _, stats = _cli("stats", "--format", "json", str(path))
    objects["group_health"] = json.loads(stats)["group_health"]
    return objects


def spark_groups(a) -> dict:
    """The rows of the group tables by piece (its first file's path), as plain data without
    their ``capture``."""
    from analyzer.spark.source import local_path

    out: dict[str, dict[str, list]] = {}
    for kind, table in [*TABLE.items(), ("group_health", "group_health")]:
        for r in getattr(a, table).collect():
            row = r.asDict(recursive=True)
            first = os.path.realpath(local_path(row.pop("capture").split(" (+")[0]))
            if kind == "generation" and row["source"] is None:  # the export has it only when set
                del row["source"]
            out.setdefault(first, {k: [] for k in (*TABLE, "group_health")})[kind].append(row)
    return out


def _ordered(objects: dict) -> dict:
    """Each table's rows in one order (Spark's rows come unordered; the CLI's order is the
    group's, then time's)."""
    return {k: sorted(rows, key=lambda r: json.dumps(r, sort_keys=True)) for k, rows in objects.items()}


@pytest.fixture(scope="module")
def want() -> dict:
    return {str(f.resolve()): cli_groups(f) for f in FILES}


def test_the_scenarios_have_every_kind_of_row(want):
    for f, objects in want.items():
        assert all(objects[k] for k in (*GROUP_TYPES, "group_health")), f


@pytest.fixture(scope="module")
def whole(spark, tmp_path_factory):
    """The scenarios analysed each whole, its tables written and read back by ``stats --parquet``."""
    from analyzer.spark.jobs import run_jobs
    from analyzer.spark.source import analyze, write_tables

    a = analyze(spark, [str(f) for f in FILES], bodies=True, chain=False, split_size=None)
    out = tmp_path_factory.mktemp("groups-parquet") / "out"
    try:
        got = spark_groups(a)
        jobs = [r.asDict() for r in run_jobs(a)["group_health"].collect()]
        write_tables(a, str(out), "groups")
    finally:
        a.unpersist()
    return got, jobs, out


def test_whole_captures_give_the_cli_groups(whole, want):
    got, _jobs, _out = whole
    assert set(got) == set(want)
    for f in want:
        assert _ordered(got[f]) == _ordered(want[f]), f


def test_stats_parquet_and_the_jobs_carry_group_health(whole, want):
    _got, jobs, out = whole
    health = sorted((r for f in want for r in want[f]["group_health"]), key=lambda r: r["group_id"])
    assert [{k: v for k, v in r.items() if k != "capture"} for r in jobs] == health
    rc, text = _cli("stats", "--parquet", str(out), "--format", "json")
    assert rc == 0
    assert json.loads(text)["group_health"] == health
    rc, text = _cli("stats", "--parquet", str(out))  # as text: every table, the groups' too
    assert rc == 0 and b"Consumer groups over time" in text and b"g-group-joins" in text
    # the tables written: every group table, with the piece's name and the capture set
    import pyarrow.dataset as ds

    for kind, table in [*TABLE.items(), ("group_health", "group_health")]:
        rows = ds.dataset(str(out / table), format="parquet", partitioning="hive").to_table().to_pylist()
        assert len(rows) == sum(len(want[f][kind]) for f in want), table
        assert {r["capture_set"] for r in rows} == {"groups"}


def test_connections_of_a_group_on_several_owners_in_tiny_splits(spark, want, monkeypatch):
    """Each scenario cut into 4 KB splits, every other connection (in the order they open) on
    another owner: a group's members, its coordinator's answers and the fetches are on
    different owners; the rows are those of the capture whole."""
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
        assert len(a.split) == len(FILES) and min(a.split.values()) > 10
        assert len(planned) == len(FILES) and min(planned) >= 2
        got = spark_groups(a)
        assert set(got) == set(want)
        for f in want:
            assert _ordered(got[f]) == _ordered(want[f]), f
    finally:
        a.unpersist()


def test_rotated_pieces_chained_give_the_capture_whole(spark, want, tmp_path):
    """Two scenarios rotated every 23 packets into one folder: Spark chains each recording's
    pieces and its groups are those of the file whole (the rows name the chain's first file)."""
    from analyzer.spark.source import analyze

    firsts = {}
    for name in ("group-kip848", "group-lag"):
        d = tmp_path / name
        d.mkdir()
        firsts[str((CAPTURES / f"{name}.pcap").resolve())] = str(cut(CAPTURES / f"{name}.pcap", 23, d)[0])
    a = analyze(spark, [str(tmp_path / "group-kip848"), str(tmp_path / "group-lag")], split_size=None)
    try:
        assert len(a.pieces) == 2 and all(len(p.uris) > 10 for p in a.pieces)
        got = spark_groups(a)
        assert set(got) == {os.path.realpath(first) for first in firsts.values()}
        for f, first in firsts.items():
            assert _ordered(got[os.path.realpath(first)]) == _ordered(want[f]), f
    finally:
        a.unpersist()


def test_the_tables_have_the_export_columns(want):
    """Each table's columns (and its nested structs' fields) are the JSON Schema's properties of
    the export's objects of its type (its ``type`` aside), with the piece's ``capture`` first;
    group_health's are stats' columns."""
    from pyspark.sql.types import ArrayType, StructType

    from analyzer.spark.rows import GROUP_TABLES

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
            inner = v.get("items", v)
            out[k] = props(inner) if "properties" in inner else None
        return out

    for kind in GROUP_TYPES:
        table = fields(GROUP_TABLES[kind])
        assert list(table)[0] == "capture"
        assert {**table, "type": None} == {**props(defs[kind]), "capture": None}, kind
    rows = [r for f in want for r in want[f]["group_health"]]
    assert GROUP_TABLES["group_health"].names == ["capture", *rows[0]]
