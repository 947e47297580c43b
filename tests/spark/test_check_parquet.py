"""``check --parquet DIR`` over the tables of ``kafka-analyzer spark`` gives what ``check`` gives over
the captures: the same rules, statuses, counts, findings (the exchanges, connections and packets
they name), exit code, JUnit and SARIF (modulo the input names and the run time), baselines;
``--set`` picks a capture set; tables it cannot evaluate are one line and exit 2."""

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
from tests.helpers.captures import CAPTURES, cut

pyspark = pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("Spark needs Java", allow_module_level=True)

# captures where check finds something: acks=0 and uncompressed batches, Kafka 4.0's removed
# versions, SASL PLAIN in clear text, a truncated file (protocol errors, incomplete analysis),
# a file that is no capture (inconclusive), and a recording rotated into pieces (one chain)
WHOLE = ["librdkafka-acks0.pcap", "kafka-python-0.8.2-none.pcap", "librdkafka-sasl-plain.pcap"]
ROTATED = "kafka-go-none.pcap"
TRUNCATED = "librdkafka-produce-consume-gzip.pcap"
OTHER = "librdkafka-produce-consume-zstd.pcap"  # the second capture set
# written twice more: cut into 4 KB byte-range splits (set "split": connections and frames cross
# splits) and analysed whole (set "whole"); acks=0 and SASL PLAIN findings, and the admin client
# whose simple commits the stitching judges against the group members
SPLIT = ["librdkafka-acks0.pcap", "librdkafka-admin.pcap", "librdkafka-sasl-plain.pcap"]
# and a recording rotated every 40 packets (files of about 10 KB: one chain, in 4 KB splits too)
SPLIT_ROTATED = "librdkafka-produce-consume-none.pcap"

RULES = """
[check]
allow = ["decode.trailing_bytes"]

[pack]
"kafka.metadata-storm" = { max_rate = 0.01 }

[[rule]]
id = "produce-latency"
where = "api == Produce"
aggregate = "p99(latency)"
max = "1ms"

[[rule]]
id = "no-v0-fetch"
where = "api == Fetch"
assert = "version > 0"

[[rule]]
id = "keys"
where = "records"
assert = 'not records.key contains "zz" and all(records.codec != "lz4")'

[[rule]]
id = "per-client"
where = "api == Metadata"
aggregate = "count"
max = 1
per = "software"

[[waiver]]
rule = "kafka.acks-all"
where = "api == Produce"
until = 2099-01-01
reason = "acks=0 on purpose"
"""


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in argv])
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def tables(spark, tmp_path_factory) -> dict:
    """One Spark session: set ``main`` (the captures above, with --records), set ``other``
    (one capture, without --records), sets ``split`` and ``whole`` (the SPLIT captures with
    --records, in 4 KB splits and whole) written into one output directory."""

    from analyzer.cli import build_parser
    from analyzer.spark.jobs import _spark_run, guarded

    src = tmp_path_factory.mktemp("check-captures")
    for name in WHOLE:
        shutil.copy(CAPTURES / name, src / name)
    pieces = cut(CAPTURES / ROTATED, 90, src)
    data = (CAPTURES / TRUNCATED).read_bytes()
    (src / "truncated.pcap").write_bytes(data[: len(data) * 3 // 5])
    (src / "notes.pcap").write_text("this is not a capture\n")
    other = tmp_path_factory.mktemp("check-other")
    shutil.copy(CAPTURES / OTHER, other / OTHER)
    split = tmp_path_factory.mktemp("check-split")
    for name in SPLIT:
        shutil.copy(CAPTURES / name, split / name)
    rotated = cut(CAPTURES / SPLIT_ROTATED, 40, split)
    out = tmp_path_factory.mktemp("check-tables")
    for d, name, extra in (
        (src, "main", ["--records"]),
        (other, "other", []),
        (split, "split", ["--records", "--split-size", "4K"]),
        (split, "whole", ["--records", "--split-size", "0"]),
    ):
        args = build_parser().parse_args(["spark", str(d), "--out", str(out), "--set", name, *extra])
        args.captures, args.top = args.inputs, 20
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            guarded(args, _spark_run, spark)
    rules = out.parent / "rules.toml"
    rules.write_text(RULES)
    return {
        "src": src,
        "other": other,
        "split": split,
        "out": out,
        "rules": rules,
        "pieces": pieces,
        "rotated": rotated,
    }


def _captures(d: Path) -> list[str]:
    return sorted(str(p) for p in d.glob("*.pcap"))


def _names(text: str, dirs: list[Path]) -> str:
    """The input names out of a report (a capture's directory differs; Spark names local
    files file:/...), and the run time."""
    for d in dirs:
        text = text.replace(str(d) + "/", "")
    return re.sub(r'time="[0-9.]+"', 'time="T"', text)


def _both(t: dict, tmp_path: Path, *flags, inputs="src", parquet_set="main") -> tuple:
    """check over the captures and check --parquet over the tables, with the same flags: (exit
    code, JSON report, JUnit, SARIF) of each."""
    got = []
    for kind in ("captures", "parquet"):
        junit, sarif = tmp_path / f"{kind}.xml", tmp_path / f"{kind}.sarif"
        where = _captures(t[inputs]) if kind == "captures" else ["--parquet", t["out"], "--set", parquet_set]
        rc, out, err = _run(["check", *where, *flags, "--format", "json", "--junit", junit, "--sarif", sarif])
        assert out, err
        dirs = [t[inputs]]
        got.append(
            (
                rc,
                json.loads(_names(out, dirs)),
                _names(junit.read_text(), dirs),
                json.loads(_names(sarif.read_text(), dirs)),
            )
        )
    return got[0], got[1]


def _findings(doc: dict) -> dict:
    return {
        r["id"]: (
            r["status"],
            r["count"],
            r.get("value"),
            [json.dumps(f, sort_keys=True) for f in r["findings"]],
        )
        for r in doc["rules"]
    }


@pytest.mark.parametrize(
    "flags",
    [
        [],
        ["--fail-on", "warning", "-v"],
        ["--rules", "RULES"],
        ["--rules", "RULES", "-Y", "api != Metadata", "--assert", "not error", "--latency", "Fetch=p95:1"],
        [
            "--forbid-error",
            "UNKNOWN_TOPIC_OR_PARTITION",
            "--expect-api",
            "DeleteTopics",
            "--max-unanswered",
            "0",
        ],
    ],
    ids=["pack", "fail-on-warning", "rules", "rules-select", "flags"],
)
def test_check_parquet_equals_check_on_the_captures(tables, tmp_path, flags):
    flags = [str(tables["rules"]) if f == "RULES" else f for f in flags]
    (rc_c, doc_c, junit_c, sarif_c), (rc_p, doc_p, junit_p, sarif_p) = _both(tables, tmp_path, *flags)
    assert rc_p == rc_c
    assert _findings(doc_p) == _findings(doc_c)
    assert doc_p["captures"] == doc_c["captures"]
    assert doc_p == doc_c
    assert junit_p == junit_c
    assert sarif_p == sarif_c
    # something is found: rules fail or warn, with findings naming exchanges of chained pieces
    statuses = {r["status"] for r in doc_c["rules"]}
    assert rc_c in (1, 3) and statuses & {"failed", "warned"}
    assert any(" + " in c["name"] for c in doc_c["captures"])  # the rotated pieces: one chain


def test_the_rules_file_finds_what_it_should(tables, tmp_path):
    _c, (rc, doc, _j, _s) = _both(tables, tmp_path, "--rules", tables["rules"])
    by = {r["id"]: r for r in doc["rules"]}
    assert rc == 1
    assert by["produce-latency"]["status"] == "failed"
    assert by["kafka.acks-all"]["status"] == "waived"
    assert by["kafka.metadata-storm"]["status"] == "warned"
    assert any(f["exchange"] for f in by["kafka.sasl-plain-cleartext"]["findings"])


def test_baselines_from_the_tables_equal_those_from_the_captures(tables, tmp_path):
    base_c, base_p = tmp_path / "c.json", tmp_path / "p.json"
    assert _run(["check", *_captures(tables["src"]), "--baseline", base_c, "--update-baseline"])[0] == 1
    rc, _o, err = _run(
        ["check", "--parquet", tables["out"], "--set", "main", "--baseline", base_p, "--update-baseline"]
    )
    assert rc == 1, err
    assert base_p.read_text() == base_c.read_text()
    # a changed baseline regresses alike
    doc = json.loads(base_c.read_text())
    for c in doc["clients"].values():
        c["apis"] = {a: v for a, v in c["apis"].items() if a != "Produce"}
    base_c.write_text(json.dumps(doc))
    c, p = _both(tables, tmp_path, "--baseline", base_c)
    assert p[0] == c[0] == 1
    assert _findings(p[1]) == _findings(c[1])
    assert any(r["id"].startswith("baseline.") and r["status"] == "failed" for r in p[1]["rules"])


def test_set_selects_one_capture_set(tables, tmp_path):
    # set "other" was written without --records: the built-in kafka.invalid-batches needs them
    rc, out, err = _run(["check", "--parquet", tables["out"], "--set", "other"])
    assert rc == 2 and not out
    assert err.count("\n") == 1 and "--records" in err and "kafka.invalid-batches" in err
    # with that rule off, check over that capture alone (which decodes no record body either)
    rules = tmp_path / "off.toml"
    rules.write_text('[pack]\n"kafka.invalid-batches" = false\n')
    c, p = _both(tables, tmp_path, "--rules", rules, inputs="other", parquet_set="other")
    assert p[0] == c[0] == 0
    assert p[1] == c[1] and p[2] == c[2] and p[3] == c[3]
    assert [x["name"] for x in p[1]["captures"]] == [OTHER]
    # no --set: every set's pieces in one run
    rc, out, _err = _run(["check", "--parquet", tables["out"], "--rules", rules, "--format", "json"])
    names = {Path(x["name"].split(" + ")[0]).name for x in json.loads(out)["captures"]}
    assert OTHER in names and "librdkafka-acks0.pcap" in names
    rc, out, err = _run(["check", "--parquet", tables["out"], "--set", "nope"])
    assert rc == 2 and "no capture set 'nope'" in err and err.count("\n") == 1


def test_not_tables_is_one_line_and_exit_2(tables, tmp_path):
    rc, out, err = _run(["check", "--parquet", tmp_path])
    assert rc == 2 and not out and err.count("\n") == 1 and "not an output directory" in err
    bad = tmp_path / "bad"
    shutil.copytree(tables["out"], bad)
    for f in (bad / "captures").rglob("*.parquet"):
        f.write_bytes(b"PAR1 this is no Parquet file PAR1")
    rc, out, err = _run(["check", "--parquet", bad])
    assert rc == 2 and not out and err.count("\n") == 1, err
    assert "Traceback" not in err
    rc, _out, err = _run(["check", "--parquet", tables["out"], tables["out"]])
    assert rc == 2 and "one output directory" in err


def _rewrite(base: Path, table: str, change) -> None:
    """Every Parquet file of ``table`` rewritten as ``change(pyarrow table)`` gives it."""
    import pyarrow.parquet as pq

    for f in (base / table).rglob("*.parquet"):
        pq.write_table(change(pq.read_table(f, partitioning=None)), f)


def test_tables_that_cannot_be_checked_say_why(tables, tmp_path):
    import pyarrow as pa

    filtered = tmp_path / "filtered"
    shutil.copytree(tables["out"], filtered)

    def where(t):
        i = t.schema.get_field_index("where_filter")
        return t.set_column(i, "where_filter", pa.array(["api == Produce"] * len(t), pa.string()))

    _rewrite(filtered, "captures", where)
    rc, out, err = _run(["check", "--parquet", filtered, "--set", "main"])
    assert rc == 2 and not out and err.count("\n") == 1 and "spark -Y api == Produce" in err
    older = tmp_path / "older"
    shutil.copytree(tables["out"], older)
    _rewrite(older, "exchanges", lambda t: t.drop(["state"]))
    rc, out, err = _run(["check", "--parquet", older, "--set", "main"])
    assert rc == 2 and not out and err.count("\n") == 1 and "older" in err
    # every rule reading record bodies off, tables with them: a note says their issues count
    rules = tmp_path / "off.toml"
    rules.write_text('[pack]\n"kafka.invalid-batches" = false\n')
    rc, out, err = _run(["check", "--parquet", tables["out"], "--set", "main", "--rules", rules])
    assert rc == 1 and "note:" in err and "record bodies" in err


@pytest.mark.parametrize(
    "flags", [[], ["--rules", "RULES", "--fail-on", "warning", "-v"]], ids=["pack", "rules"]
)
def test_check_parquet_on_a_file_analysed_in_splits_equals_check(tables, tmp_path, flags):
    """Big files, and a chain of rotated files, analysed in byte-range splits and stitched: the
    same verdicts as check on them."""
    from analyzer.capture.split import splits

    assert all(len(splits(str(tables["split"] / n), 4096)) > 3 for n in SPLIT)
    rotated = tables["rotated"]
    assert len(rotated) > 3 and sum(len(splits(p, 4096)) for p in rotated) > len(rotated)
    flags = [str(tables["rules"]) if f == "RULES" else f for f in flags]
    c, p = _both(tables, tmp_path, *flags, inputs="split", parquet_set="split")
    assert p[0] == c[0]
    assert _findings(p[1]) == _findings(c[1])
    assert p[1] == c[1] and p[2] == c[2] and p[3] == c[3]
    assert {r["status"] for r in c[1]["rules"]} & {"failed", "warned"}
    assert len(c[1]["captures"]) == len(SPLIT) + 1


def test_a_split_file_has_the_state_and_order_of_one_run(tables):
    """The stitching writes the ``seq`` and ``state`` of the exchanges, the ``seq`` and
    ``roles_known`` of the issues, the ``seq`` of the connections' ends, and the captures row,
    that one run over the file (the chain of rotated files) writes."""
    import pyarrow.dataset as ds

    def rows(table: str, columns: list[str], which: str) -> dict:
        d = ds.dataset(tables["out"] / table, format="parquet", partitioning="hive")
        got: dict = {}
        for r in d.to_table(
            columns=["capture", *columns], filter=ds.field("capture_set") == which
        ).to_pylist():
            got.setdefault(Path(r.pop("capture")).name, []).append(r)
        return got

    for table, columns in (
        ("exchanges", ["seq", "state", "connection", "correlation_id", "issues"]),
        ("issues", ["seq", "roles_known", "connection", "code", "message", "ts"]),
        ("connections", ["seq", "connection", "client", "broker", "first_ts", "last_ts", "closed"]),
        ("captures", ["packets", "exchanges", "issues", "exit_code", "inconclusive", "records_bodies"]),
    ):
        split, whole = rows(table, columns, "split"), rows(table, columns, "whole")
        assert sorted(split) == sorted(whole)
        # the chain's exchanges name their files, its captures row the first
        if table not in ("issues", "connections"):
            pieces = {p.name for p in tables["rotated"]}
            first = tables["rotated"][0].name + f" (+{len(pieces) - 1} more)"
            files = set(whole) - set(SPLIT)
            assert files == {first} if table == "captures" else files <= pieces and len(files) > 1
        for name in whole:
            a = sorted(split[name], key=lambda r: (r.get("seq") or 0, json.dumps(r, sort_keys=True)))
            b = sorted(whole[name], key=lambda r: (r.get("seq") or 0, json.dumps(r, sort_keys=True)))
            if table == "exchanges":
                for r in a + b:
                    r["state"] = json.loads(r["state"])
            assert a == b, (table, name)
    states = [json.loads(r["state"]) for r in rows("exchanges", ["state"], "split")["librdkafka-admin.pcap"]]
    assert any(i[1] == "quirk.simple_commit_rejected" for s in states for i in s["issues"])
    assert any(s["software"] for s in states)
