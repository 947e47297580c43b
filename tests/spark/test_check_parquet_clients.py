"""``check --parquet`` on the client scenarios gives ``check``'s verdicts on the captures: the
connections table carries each connection's end at its place among the events (``seq``), so the
reconnect loop (kafka.connection-churn) fires from the tables as from the capture, and the
Metadata storm too; analysed whole and in 4 KB byte-range splits (stitched), with the baseline's
client health equal."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from analyzer.cli import main
from tests.helpers.captures import CAPTURES

pyspark = pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("Spark needs Java", allow_module_level=True)

SCENARIOS = ["client-reconnect-loop.pcap", "client-metadata-storm.pcap"]
SETS = {"whole": ["--split-size", "0"], "split": ["--split-size", "4K"]}
FLAPPY = "gen-client-reconnect-loop-flappy-producer"
STORMY = "gen-client-metadata-storm-storm-producer"


def _run(argv: list) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in argv])
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def tables(spark, tmp_path_factory) -> dict:
    from analyzer.cli import build_parser
    from analyzer.spark.jobs import _spark_run, guarded

    src = tmp_path_factory.mktemp("client-captures")
    for name in SCENARIOS:
        shutil.copy(CAPTURES / name, src / name)
    out = tmp_path_factory.mktemp("client-tables")
    for name, extra in SETS.items():
        args = build_parser().parse_args(
            ["spark", str(src), "--out", str(out), "--set", name, "--records", *extra]
        )
        args.captures, args.top = args.inputs, 20
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            guarded(args, _spark_run, spark)
    return {"src": src, "out": out}


def _doc(text: str, src: Path) -> dict:
    return json.loads(re.sub(re.escape(str(src) + "/"), "", text))


@pytest.mark.parametrize("parquet_set", sorted(SETS))
def test_client_rules_fire_from_the_tables_as_from_the_captures(tables, tmp_path, parquet_set):
    captures = sorted(str(p) for p in tables["src"].glob("*.pcap"))
    rc_c, out_c, err_c = _run(["check", *captures, "--format", "json"])
    rc_p, out_p, err_p = _run(["check", "--parquet", tables["out"], "--set", parquet_set, "--format", "json"])
    assert out_c and out_p, (err_c, err_p)
    doc_c, doc_p = _doc(out_c, tables["src"]), _doc(out_p, tables["src"])
    assert rc_p == rc_c
    assert doc_p == doc_c
    by = {r["id"]: r for r in doc_p["rules"]}
    churn = by["kafka.connection-churn"]
    assert churn["status"] == "warned" and len(churn["findings"]) == 1
    assert f"client {FLAPPY} on 127.0.0.1" in churn["findings"][0]["message"]
    assert "111 reconnections within 100 ms" in churn["findings"][0]["message"]
    storm = by["kafka.metadata-storm"]
    assert storm["status"] == "warned" and {STORMY} == {f["message"].split()[1] for f in storm["findings"]}
    # the baselines' clients' health (connections, fast reconnections) alike
    base_c, base_p = tmp_path / "c.json", tmp_path / "p.json"
    _run(["check", *captures, "--baseline", base_c, "--update-baseline"])
    _run(
        ["check", "--parquet", tables["out"], "--set", parquet_set, "--baseline", base_p, "--update-baseline"]
    )
    assert base_p.read_text() == base_c.read_text()
    health = json.loads(base_p.read_text())["client_health"]
    flappy = next(v for k, v in health.items() if k.startswith(FLAPPY + " |"))
    assert (flappy["connections"], flappy["fast_reconnects"]) == (119, 111)


def test_older_tables_without_the_ends_place_say_so(tables, tmp_path):
    import pyarrow.parquet as pq

    older = tmp_path / "older"
    shutil.copytree(tables["out"], older)
    for f in (older / "connections").rglob("*.parquet"):
        pq.write_table(pq.read_table(f, partitioning=None).drop(["seq"]), f)
    rc, out, err = _run(["check", "--parquet", older, "--set", "whole"])
    assert rc == 2 and not out and err.count("\n") == 1 and "older" in err
