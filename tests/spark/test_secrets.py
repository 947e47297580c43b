"""SASL secrets over Spark: ``kafka-analyzer spark`` on the captures with known secrets (PLAIN,
SCRAM; tests.helpers.secrets) writes none of them, in any encoding, in any column of any Parquet
table (read back with pyarrow), nor does ``stats --parquet`` print one; with ``--show-secrets``
(threaded to the executors) the same grep finds every one of them in the tables of its capture."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from tests.helpers.captures import CAPTURES
from tests.helpers.secrets import SASL, json_bytes, secrets, shown_secrets, shows

pyspark = pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("Spark needs Java", allow_module_level=True)
if not SASL:
    pytest.skip("no SASL captures in captures/manifest.json", allow_module_level=True)

TABLES = ("exchanges", "issues", "connections", "records", "captures")


@pytest.fixture(scope="module")
def outputs(spark, tmp_path_factory) -> dict[bool, tuple[Path, str]]:
    """``kafka-analyzer spark --records`` of the SASL captures, masked and with --show-secrets:
    (the output directory, what the command printed), in one local session. Each run takes
    every capture twice: as it is, cut into 4 KB byte-range splits (analyzer.spark.stitch: the
    owners of its connections write its rows), and gzip-compressed, analysed whole by one task
    (a compressed file is one split) under the name NAME.gz: both paths of the executors, every
    mechanism through each, the flag threaded to both."""
    import gzip

    from analyzer.cli import build_parser
    from analyzer.spark.jobs import _spark_run, guarded

    src = tmp_path_factory.mktemp("sasl")
    files = []
    for e in SASL:
        (src / f"{e['file']}.gz").write_bytes(gzip.compress((CAPTURES / e["file"]).read_bytes()))
        files += [str(CAPTURES / e["file"]), str(src / f"{e['file']}.gz")]
    out: dict[bool, tuple[Path, str]] = {}
    for shown in (False, True):
        d = tmp_path_factory.mktemp("shown" if shown else "masked")
        argv = ["spark", *files, "--out", str(d), "--records", "--set", "sasl", "--split-size", "4K"]
        args = build_parser().parse_args(argv + (["--show-secrets"] if shown else []))
        args.captures, args.top = args.inputs, 20  # as spark_command, in this session
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = guarded(args, _spark_run, spark)
        printed = buf.getvalue()
        assert rc == 0, printed
        assert f"{len(SASL)} big files cut into" in printed, printed  # the .gz ones are not
        out[shown] = d, printed
    return out


def _values(v, out: list[bytes], texts: list[str]) -> None:
    """Every string and bytes value of a row, nested lists, maps and structs included (numbers
    too, as text); the strings also go to ``texts`` (the JSON columns are grepped decoded)."""
    if isinstance(v, dict):
        for k, x in v.items():
            _values(k, out, texts)
            _values(x, out, texts)
    elif isinstance(v, list | tuple):
        for x in v:
            _values(x, out, texts)
    elif isinstance(v, str):
        out.append(v.encode())
        texts.append(v)
    elif isinstance(v, bytes):
        out.append(v)
    elif v is not None:
        out.append(str(v).encode())


def tables(base: Path) -> dict[str, list[tuple[bytes, list[str]]]]:
    """Per capture file name: every table's rows of it, as (their values joined, their
    strings), read with pyarrow (every column of every partition)."""
    import pyarrow.dataset as ds

    from analyzer.spark.source import local_path

    rows: dict[str, list[tuple[bytes, list[str]]]] = defaultdict(list)
    seen = set()
    for name in TABLES:
        d = base / name
        if not d.is_dir():
            continue
        seen.add(name)
        for row in ds.dataset(str(d), format="parquet", partitioning="hive").to_table().to_pylist():
            vals: list[bytes] = []
            texts: list[str] = []
            _values(row, vals, texts)
            rows[Path(local_path(row["capture"])).name].append((b"\n".join(vals), texts))
    assert {"exchanges", "records", "connections", "captures"} <= seen, seen
    return rows


def leaks(blob: bytes, texts: list[str], secret: bytes) -> bool:
    """``secret`` in the values in any encoding, or in a JSON column's strings and base64."""
    if shows(blob, secret, False):
        return True
    return any(t[:1] in ("{", "[") and any(secret in b for b in json_bytes(t)) for t in texts)


def test_parquet_tables_hold_no_secret(outputs):
    base, printed = outputs[False]
    rows = tables(base)
    assert {f"{e['file']}{gz}" for e in SASL for gz in ("", ".gz")} <= set(rows)
    every = [s for e in SASL for s in secrets(e)]
    for name, got in rows.items():
        for blob, texts in got:
            for secret in every:
                assert not leaks(blob, texts, secret), (name, secret)
    # the SASL exchanges are there, their tokens masked
    assert any("SaslHandshake" in t for got in rows.values() for _b, ts in got for t in ts)
    assert any("masked" in t for got in rows.values() for _b, ts in got for t in ts)
    for secret in every:
        assert not shows(printed.encode(), secret, False), secret


@pytest.mark.parametrize("entry", SASL, ids=lambda e: e["file"])
def test_show_secrets_puts_them_in_the_tables(outputs, entry):
    """The grep above fails on --show-secrets' tables: each capture's secrets are in its rows."""
    every = tables(outputs[True][0])
    for name in (entry["file"], f"{entry['file']}.gz"):  # in splits, and whole
        rows = every[name]
        for secret in shown_secrets(entry):
            assert any(leaks(blob, texts, secret) for blob, texts in rows), (name, secret)
        if entry["sasl"]["mechanism"] != "PLAIN":  # SCRAM sends no password, only proofs
            password = entry["sasl"]["password"].encode()
            assert not any(leaks(blob, texts, password) for blob, texts in rows), name


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize("show", [False, True], ids=["masked", "shown"])
def test_stats_parquet_prints_no_secret(outputs, fmt, show, capsys):
    """``stats --parquet`` shows no message bytes: no secret, whichever way the tables were made."""
    from analyzer.cli import main

    rc = main(["stats", "--parquet", str(outputs[show][0]), "--format", fmt])
    stdout, stderr = capsys.readouterr()
    assert rc == 0, stderr
    out = (stdout + stderr).encode()
    assert b"SaslAuthenticate" in out
    if fmt == "json":
        json.loads(stdout)
    for secret in (s for e in SASL for s in secrets(e)):
        assert not shows(out, secret, fmt == "json"), secret
