"""The Spark front end gives what the in-process pipeline gives: same exchanges, the statistics of
``Stats`` (percentiles within percentile_approx's tolerance), capture issues for damaged files,
the manifest's records; in local mode, and on a standalone master and worker started here."""

from __future__ import annotations

import bisect
import gzip
import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from analyzer.events import CaptureIssue, ConnectionEnd, ConnIssue
from analyzer.model import Exchange
from analyzer.pipeline import Analysis
from analyzer.session.stats import Stats, error_names
from tests.helpers.capture_patch import exchanges, member_stays
from tests.helpers.captures import CAPTURES, PUBLIC, ROOT, connection_keys, public_captures, tls_captures
from tests.helpers.captures import project_captures as _clear_text_captures
from tests.helpers.spark import JVM_OPTIONS


def project_captures():
    """Every file of captures/ (Spark reads the TLS ones without their key logs)."""
    return sorted(_clear_text_captures() + tls_captures())


pyspark = pytest.importorskip("pyspark")

if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("Spark needs Java", allow_module_level=True)

MANIFEST = (
    json.loads((CAPTURES / "manifest.json").read_text()) if (CAPTURES / "manifest.json").exists() else []
)
TRUNCATED = "librdkafka-produce-consume-gzip.pcap"
GZIPPED = "aiokafka-gzip.pcap"


@pytest.fixture(scope="module")
def extra(tmp_path_factory) -> Path:
    """A folder with a truncated capture, a gzip-compressed one and a file that is no capture."""
    d = tmp_path_factory.mktemp("spark-captures")
    data = (CAPTURES / TRUNCATED).read_bytes()
    (d / ("truncated-" + TRUNCATED)).write_bytes(data[: len(data) * 3 // 5])
    (d / (GZIPPED + ".gz")).write_bytes(gzip.compress((CAPTURES / GZIPPED).read_bytes()))
    (d / "notes.pcap").write_text("this is not a capture\n")
    return d


def _inputs(extra: Path) -> tuple[list[str], list[Path]]:
    """What Spark is given (globs, a directory) and the files that it names."""
    given = [str(CAPTURES / "*.pcap*"), str(extra)]  # the files of project_captures()
    files = project_captures() + sorted(extra.iterdir())
    if public_captures():
        given.append(str(PUBLIC / "*.{pcap,pcapng}"))  # those of public_captures()
        files += public_captures()
    return given, [f.resolve() for f in files]


def _local(uri: str) -> str:
    from analyzer.spark.source import local_path

    return str(Path(local_path(uri)).resolve())


class Expected:
    """What the in-process pipeline gives for the same files."""

    def __init__(self, files: list[Path]):
        self.rows: dict[str, Counter] = {}
        self.issues: dict[str, list] = {}
        self.connections = 0
        self.stats = Stats()
        for f in files:
            a = Analysis(f)
            self.stats.topic_ids = a.knowledge.topic_ids
            rows = self.rows[str(f)] = Counter()
            issues = self.issues[str(f)] = []
            for ev in a.events():
                self.stats.event(ev)
                if isinstance(ev, Exchange):
                    rows[_row(ev)] += 1
                elif type(ev) is ConnIssue:
                    issues.append((ev.conn.id, ev.issue.code, str(ev.issue.severity)))
                elif type(ev) is CaptureIssue:
                    issues.append((None, ev.issue.code, str(ev.issue.severity)))
                elif isinstance(ev, ConnectionEnd):
                    self.connections += 1

    def keys(self) -> Counter:
        out: Counter = Counter()
        for f, rows in self.rows.items():
            for k, n in rows.items():
                out[(f, k[0], k[1], k[2])] += n
        return out


def _row(ex: Exchange) -> tuple:
    """An exchange as comparable values, computed from the model (not by the code under test)."""
    lat = ex.latency
    return (
        ex.api_key,
        ex.api_version,
        ex.correlation_id,
        ex.conn.id,
        ex.client_id,
        tuple(sorted(ex.topics)),
        ex.request.frame.length + 4 if ex.request else None,
        ex.response.frame.length + 4 if ex.response else None,
        None if lat is None else round(lat * 1000.0, 3),
        tuple(error_names(ex.response)),
        tuple(i.code for i in ex.all_issues()),
        str(max(i.severity for i in ex.all_issues())) if ex.all_issues() else None,
    )


def _spark_row(r) -> tuple:
    return (
        r.api_key,
        r.api_version,
        r.correlation_id,
        r.connection,
        r.client_id,
        tuple(sorted(r.topics)),
        r.request_bytes,
        r.response_bytes,
        r.latency_ms,
        tuple(r.errors),
        tuple(r.issues),
        r.severity,
    )


@pytest.fixture(scope="module")
def expected(extra) -> Expected:
    """What the pipeline gives for every file of ``_inputs`` (each analysed once, for the tests
    that compare with it)."""
    return Expected(_inputs(extra)[1])


@pytest.fixture(scope="module")
def analysed(spark, extra, expected):
    from analyzer.spark.source import analyze

    given, files = _inputs(extra)
    a = analyze(spark, given, chain=False)  # each file on its own, as Expected analyses them
    yield a, expected, files
    a.unpersist()


def test_persisted_events_are_read_by_a_task_per_core_at_least(analysed, spark):
    """A few rows are read back (each table written) by one task per core, not one task: the
    exchanges' table of the 1 GB bench set took 8 s to write in one task, the other core idle."""
    a, _, files = analysed
    cores = spark.sparkContext.defaultParallelism
    assert len(files) > cores  # the analysis ran in more tasks than that
    assert a.events.count() < 500_000  # TASK_ROWS: one task would do
    assert a.events.rdd.getNumPartitions() == cores


def test_exchanges_equal_the_pipeline(analysed):
    a, ex, files = analysed
    rows = a.exchanges.collect()
    assert len(rows) == sum(ex.keys().values()) > 0
    got_keys = Counter((_local(r.capture), r.api_key, r.api_version, r.correlation_id) for r in rows)
    assert got_keys == ex.keys()
    got: dict[str, Counter] = {}
    for r in rows:
        got.setdefault(_local(r.capture), Counter())[_spark_row(r)] += 1
    assert got == {f: c for f, c in ex.rows.items() if c}
    # one captures row per file, with its exchanges; every connection once
    caps = {_local(r.capture): r for r in a.captures.collect()}
    assert set(caps) == {str(f) for f in files}
    assert {f: r.exchanges for f, r in caps.items()} == {f: sum(c.values()) for f, c in ex.rows.items()}
    assert a.connections.count() == ex.connections
    # the gzip-compressed copy gives the same exchanges as the original
    gz = next(f for f in ex.rows if f.endswith(GZIPPED + ".gz"))
    assert caps[gz].compression == "gzip"
    assert ex.rows[gz] == ex.rows[str((CAPTURES / GZIPPED).resolve())]


def test_truncated_and_unknown_files_are_capture_issues(analysed):
    a, ex, _files = analysed
    trunc = next(f for f in ex.rows if Path(f).name == "truncated-" + TRUNCATED)
    full = str((CAPTURES / TRUNCATED).resolve())
    partial = a.exchanges.where(a.exchanges.capture.endswith("truncated-" + TRUNCATED)).count()
    assert partial == sum(ex.rows[trunc].values())
    assert 0 < partial < sum(ex.rows[full].values())
    issues = [(_local(r.capture), r.connection, r.code, r.severity) for r in a.issues.collect()]
    assert (trunc, None, "capture.truncated", "error") in issues
    notes = next(f for f in ex.rows if f.endswith("notes.pcap"))
    assert (notes, None, "capture.unknown_format", "error") in issues
    # the issues table holds every stream and capture issue the pipeline reports, nothing else
    assert Counter((f, c, code, sev) for f, c, code, sev in issues) == Counter(
        (f, *i) for f, lst in ex.issues.items() for i in lst
    )
    damaged = {_local(r.capture) for r in a.captures.where("damaged").collect()}
    assert damaged == {trunc, notes}


def _rank_ok(sorted_ms: list[float], got: float | None, want: float | None, accuracy: int) -> bool:
    """percentile_approx returns a value of the data whose rank is within count/accuracy of the
    exact one; Stats' nearest rank rounds half to even, which can be one rank off Spark's."""
    if want is None or got is None:
        return want is got
    n = len(sorted_ms)
    tol = 1 + math.ceil(n / accuracy)
    k = bisect.bisect_left(sorted_ms, want)
    lo, hi = bisect.bisect_left(sorted_ms, got), bisect.bisect_right(sorted_ms, got) - 1
    return hi >= lo and lo - tol <= k <= hi + tol


def test_api_latency_matches_stats(analysed):
    from analyzer.spark.jobs import ACCURACY, api_latency

    a, ex, _files = analysed
    got = {r.api_name: r for r in api_latency(a.exchanges).collect()}
    want = {r["api_name"]: r for r in ex.stats.api_rows()}
    assert set(got) == set(want)
    lats = {
        name: sorted(round(v * 1000.0, 3) for v in s.latencies) for (_k, name), s in ex.stats.apis.items()
    }
    for name, w in want.items():
        g = got[name]
        assert (g.api_key, g["count"], g.max_ms, g.unanswered) == (
            w["api_key"],
            w["count"],
            w["max_ms"],
            w["unanswered"],
        )
        assert (g.request_bytes, g.response_bytes) == (w["request_bytes"], w["response_bytes"])
        assert g.errors == sum(w["errors"].values())
        for q in ("p50_ms", "p95_ms", "p99_ms"):
            assert _rank_ok(lats[name], g[q], w[q], ACCURACY), (name, q, g[q], w[q])


def test_errors_and_topics_match_stats(analysed):
    from analyzer.spark.jobs import errors_by_api, errors_by_client, slowest, topics

    a, ex, _files = analysed
    got = {(r.api_name, r.error): r["count"] for r in errors_by_api(a.exchanges).collect()}
    want = {(name, e): n for (_k, name), s in ex.stats.apis.items() for e, n in s.errors.items()}
    assert got == want and got
    assert sum(r["count"] for r in errors_by_client(a.exchanges).collect()) == sum(want.values())
    got_t = [r.asDict() for r in topics(a.exchanges).collect()]
    assert sorted(got_t, key=lambda r: r["topic"]) == ex.stats.topic_rows()
    assert any(r["produced_records"] for r in got_t) and any(r["fetched_records"] for r in got_t)
    slow = slowest(a.exchanges, 3).collect()
    every = sorted((v for s in ex.stats.apis.values() for v in s.latencies), reverse=True)
    assert [r.latency_ms for r in slow] == [round(v * 1000.0, 3) for v in every[:3]]


def _text(b):
    """A record's key or value as text (the bytes that are not UTF-8, as the coordinator
    records of __consumer_offsets, kept apart by surrogate escapes)."""
    return None if b is None else bytes(b).decode("utf-8", "surrogateescape")


@pytest.mark.skipif(not MANIFEST, reason="no captures/manifest.json")
def test_records_hold_the_manifest(spark, expected):
    """Record bodies on (and the executors opening the files themselves, and the JSON column)."""
    from analyzer.spark.source import analyze

    # no key logs on Spark; group-internal's coordinator records (binary keys and values) are
    # checked field for field by tests/captures/test_internal_capture.py
    manifest = [
        e for e in MANIFEST if not (e.get("tls") or {}).get("keylog") and e["scenario"] != "group-internal"
    ]
    files = [str(CAPTURES / e["file"]) for e in manifest]
    a = analyze(spark, files, records=True, json=True)
    try:
        got: dict[tuple[str, str], Counter] = {}
        for r in a.records.where("NOT control").collect():
            rec = (r.topic, r.partition, _text(r.key), _text(r.value))
            hdrs = tuple(sorted((h.key, _text(h.value)) for h in r.headers))
            got.setdefault((Path(_local(r.capture)).name, r.direction), Counter())[(*rec, hdrs)] += 1
        for e in manifest:
            for direction, key in (("produce", "produced"), ("fetch", "consumed")):
                want = {
                    (
                        r["topic"],
                        r["partition"],
                        r["key"],
                        r["value"],
                        tuple(sorted(map(tuple, r["headers"] or []))),
                    )
                    for r in e[key]
                }
                assert set(got.get((e["file"], direction), ())) == want, (e["file"], direction)
        # the same exchanges as the in-process pipeline, each with the export's JSON
        rows = a.exchanges.select("capture", "api_key", "correlation_id", "json").collect()
        names = {str(Path(f).resolve()) for f in files}  # the pipeline's, of these files
        assert names <= set(expected.rows)
        want = Counter()
        for (f, key, _version, corr), n in expected.keys().items():
            if f in names:
                want[(f, key, corr)] += n
        assert Counter((_local(r.capture), r.api_key, r.correlation_id) for r in rows) == want
        for r in rows[:50]:
            d = json.loads(r.json)
            assert (d["type"], d["api_key"], d["correlation_id"]) == ("exchange", r.api_key, r.correlation_id)
    finally:
        a.unpersist()


# -- a standalone cluster: one master, one worker, the command line as the driver --------------------


def _spark_class() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home()) / "bin" / "spark-class"


def _start(args: list[str], log: Path, env: dict) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen(
            [str(_spark_class()), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )


def _wait_for(log: Path, proc: subprocess.Popen, marker: str, deadline: float) -> str | None:
    while time.monotonic() < deadline and proc.poll() is None:
        for line in log.read_text(errors="replace").splitlines():
            if marker in line:
                return line
        time.sleep(0.2)
    return None


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, 15)  # the worker's process group holds its executors
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(5)


def test_tls_with_a_key_log(spark):
    """TLS captures with their key log (shipped to the executors): the exchanges the pipeline
    finds with it; the one with secrets in the pcapng needs none."""
    from analyzer.spark.source import analyze

    entries = [e for e in MANIFEST if (e.get("tls") or {}).get("pcapng_with_secrets")]
    if not entries:
        pytest.skip("no TLS captures")
    e = entries[0]
    keylog = CAPTURES / e["tls"]["keylog"]
    want = sum(1 for ev in Analysis(CAPTURES / e["file"], tls_keylog=keylog).events() if type(ev) is Exchange)
    assert want > 0
    a = analyze(spark, [str(CAPTURES / e["file"])], tls_keylog=keylog)
    assert a.exchanges.count() == want
    a = analyze(spark, [str(CAPTURES / e["tls"]["pcapng_with_secrets"])])
    assert a.exchanges.count() == want


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _export_exchanges(files: list[str], env: dict) -> Counter:
    """``kafka-analyzer export --records --no-spans`` of the files: every exchange object, keyed
    by the name of the first file of the capture (or recording) it came from."""
    cmd = [sys.executable, "-m", "analyzer", "export", *files, "--records", "--no-spans", "-j", "2"]
    r = subprocess.run(cmd, capture_output=True, cwd=ROOT, env=env, timeout=300)
    assert r.returncode in (0, 1), r.stderr[-2000:]
    out: Counter = Counter()
    current = None
    for line in r.stdout.splitlines():
        d = json.loads(line)
        if d["type"] == "capture":
            current = Path(d["file"].split(" (+")[0]).name
        elif d["type"] == "exchange":
            out[(current, json.dumps(d, sort_keys=True))] += 1
    return out


def _parquet_exchanges(out: Path) -> Counter:
    """The exchanges table written by ``kafka-analyzer spark``, read back with pyarrow and turned
    into the export's exchange objects (api_name: the export's null for an unknown key)."""
    import pyarrow.dataset as ds

    pieces = {}
    for c in ds.dataset(out / "captures", partitioning="hive").to_table().to_pylist():
        for f in c["files"]:
            pieces[f] = Path(c["files"][0]).name
    got: Counter = Counter()
    for r in ds.dataset(out / "exchanges", partitioning="hive").to_table().to_pylist():
        d = {
            "type": "exchange",
            "ts": r["ts"],
            "api_key": r["api_key"],
            "api_name": r["api_name"] if r["api_key"] is not None else None,
            "api_version": r["api_version"],
            "correlation_id": r["correlation_id"],
            "client_id": r["client_id"],
            "connection": {"id": r["connection"], "client": r["client"], "broker": r["broker"]},
            "topics": dict(r["topic_partitions"]),
            "request": None if r["request"] is None else json.loads(r["request"]),
            "response": None if r["response"] is None else json.loads(r["response"]),
            "latency_ms": r["latency_ms"],
            "issues": json.loads(r["issue_details"]),
        }
        # the partition columns hold the exchange's UTC date and hour
        when = time.gmtime(r["ts"])
        assert (r["date"], r["hour"]) == (time.strftime("%Y-%m-%d", when), when.tm_hour)
        got[(pieces[r["capture"]], json.dumps(d, sort_keys=True))] += 1
    return got


def test_cli_on_a_standalone_cluster(tmp_path):
    """``kafka-analyzer spark`` on a standalone master with two workers started here, a split
    size forced small enough to cut connections mid-frame (the bundled captures as one file, in
    4 KB splits, and a gzip-compressed capture, analysed whole): the exchanges in its Parquet
    output are, field for field, those of ``kafka-analyzer export``."""
    from analyzer.capture.split import splits

    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env["SPARK_DAEMON_JAVA_OPTS"] = JVM_OPTIONS  # the master and workers
    env.pop("SPARK_HOME", None)
    procs: list[subprocess.Popen] = []
    deadline = time.monotonic() + 180  # the JVMs start slowly on a busy machine
    try:
        master_log = tmp_path / "master.log"
        port = _free_port()
        master = ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port)]
        procs.append(_start([*master, "--webui-port", str(_free_port())], master_log, env))
        line = _wait_for(master_log, procs[0], "Starting Spark master at spark://", deadline)
        assert line is not None, f"the Spark master did not start: {master_log.read_text()[-2000:]}"
        url = line[line.index("spark://") :].split()[0]
        works, logs = [], []
        for i in range(2):  # both started at once, then waited for
            log, work = tmp_path / f"worker{i}.log", tmp_path / f"work{i}"
            worker = ["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1"]
            worker += ["--port", str(_free_port()), "--webui-port", str(_free_port())]
            worker += ["--cores", "1", "--memory", "768m", "--work-dir", str(work)]
            procs.append(_start(worker, log, env))
            works.append(work)
            logs.append(log)
        for i, (log, proc) in enumerate(zip(logs, procs[1:], strict=True)):
            registered = _wait_for(log, proc, "Successfully registered with master", deadline)
            assert registered is not None, f"Spark worker {i} did not start: {log.read_text()[-2000:]}"
        out = tmp_path / "out"
        conf = [
            "spark.ui.enabled=false",
            "spark.executor.memory=512m",
            "spark.executor.cores=1",
            "spark.driver.host=127.0.0.1",
            f"spark.driver.extraJavaOptions={JVM_OPTIONS}",
            f"spark.executor.extraJavaOptions={JVM_OPTIONS}",
        ]
        big = _one_recording(tmp_path / "bundled.pcap")
        gz = tmp_path / (GZIPPED + ".gz")
        gz.write_bytes(gzip.compress((CAPTURES / GZIPPED).read_bytes()))
        files = [str(big), str(gz)]
        cmd = [sys.executable, "-m", "analyzer", "spark", *files, "--master", url, "--out", str(out)]
        cmd += ["--records", "--set", "bundled", "--partitions", "4", "--split-size", "4K"]
        cmd += [x for c in conf for x in ("--conf", c)]
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
        assert r.returncode == 0, r.stderr[-4000:]
        assert "Requests per API" in r.stdout and "capture set 'bundled'" in r.stdout
        assert f"1 big files cut into {len(splits(big, 4096))} splits" in r.stdout
        # the work ran on both workers' executors
        assert all(any(w.glob("app-*/*/stderr")) for w in works)
        got = _parquet_exchanges(out)
        want = _export_exchanges(files, env)
        assert sum(want.values()) > 1000
        assert got == want
        assert _frames_cut(big, 4096, Counter(t for f, t in want if f == big.name)) > 0  # frames cut
        # the partition layout: date=/hour=/capture_set=
        assert all(p.name == "capture_set=bundled" for p in (out / "exchanges").glob("date=*/hour=*/*"))
        import pyarrow.dataset as ds

        recs = ds.dataset(out / "records", partitioning="hive").to_table()
        assert recs.num_rows > 0 and set(recs.column("direction").to_pylist()) == {"produce", "fetch"}
    finally:
        for p in reversed(procs):
            _stop(p)


def _cut_pcap(src: Path, dest: Path, every: int) -> list[Path]:
    """A classic pcap cut into files of ``every`` packets each (as ``editcap -c`` does)."""
    import struct

    data = src.read_bytes()
    head, pos = data[:24], 24
    order = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    records = []
    while pos + 16 <= len(data):
        caplen = struct.unpack(order + "I", data[pos + 8 : pos + 12])[0]
        records.append(data[pos : pos + 16 + caplen])
        pos += 16 + caplen
    out = []
    for i in range(0, len(records), every):
        f = dest / f"{src.stem}-{i // every:04d}.pcap"
        f.write_bytes(head + b"".join(records[i : i + every]))
        out.append(f)
    return out


def test_rotated_pieces_are_one_recording(spark, tmp_path):
    """A capture cut every few packets (hundreds of small files, connections cut mid-frame):
    the pieces are chained on the executors into one recording and give the exchanges of the
    whole file."""
    from analyzer.spark.source import analyze

    src = CAPTURES / "librdkafka-txn.pcap"
    pieces = _cut_pcap(src, tmp_path, 3)
    assert len(pieces) > 100
    whole = Analysis(src)
    want = Counter(
        (
            ev.api_key,
            ev.correlation_id,
            ev.conn.id,
            ev.ts,
            None if ev.latency is None else round(ev.latency * 1e3, 3),
        )
        for ev in whole.events()
        if type(ev) is Exchange
    )
    a = analyze(spark, str(tmp_path))
    try:
        rows = a.exchanges.select("api_key", "correlation_id", "connection", "ts", "latency_ms").collect()
        assert Counter(tuple(r) for r in rows) == want
        caps = a.captures.collect()
        assert len(caps) == 1 and len(caps[0].files) == len(pieces) and not caps[0].damaged
        # the exchanges name the piece their request began in
        assert {Path(_local(r.capture)).name for r in a.exchanges.select("capture").collect()} <= {
            p.name for p in pieces
        }
    finally:
        a.unpersist()


def test_stats_reads_the_parquet_tables(spark, tmp_path, capsys):
    """``stats --parquet DIR`` over the tables written for a capture: the tables of ``stats``
    over the capture itself (consumer groups and TLS aside: the rows do not hold them)."""
    from analyzer.cli import main
    from analyzer.spark.source import analyze, write_tables

    f = CAPTURES / "librdkafka-txn.pcap"
    a = analyze(spark, [str(f)], bodies=True)
    try:
        write_tables(a, str(tmp_path / "out"), "txn")
    finally:
        a.unpersist()
    assert main(["stats", str(f), "--format", "json"]) == 0
    want = json.loads(capsys.readouterr().out)
    assert main(["stats", "--parquet", str(tmp_path / "out"), "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    for key in ("apis", "topics", "clients", "connections", "brokers"):
        assert got[key] == want[key], key
    assert sorted(map(json.dumps, got["anomalies"])) == sorted(map(json.dumps, want["anomalies"]))
    assert {k: got["capture"][k] for k in want["capture"] if k != "skipped_packets"} == {
        k: v for k, v in want["capture"].items() if k != "skipped_packets"
    }
    assert main(["stats", "--parquet", str(tmp_path / "out"), "--set", "other"]) == 1  # no exchanges
    assert main(["stats", "--parquet", str(tmp_path)]) == 2
    assert "not an output directory" in capsys.readouterr().err


def test_an_executor_out_of_memory_is_one_line(tmp_path):
    """A Python worker that runs out of memory (its address space capped by
    spark.executor.pyspark.memory) fails the job: one line naming the setting, exit code 2, no
    traceback."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, "-m", "analyzer", "spark", str(CAPTURES / TRUNCATED), "--out", str(tmp_path)]
    cmd += ["--master", "local[1]", "--conf", "spark.executor.pyspark.memory=60m"]
    cmd += ["--conf", "spark.ui.enabled=false", "--conf", "spark.driver.host=127.0.0.1"]
    cmd += ["--conf", f"spark.driver.extraJavaOptions={JVM_OPTIONS}"]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert r.returncode == 2, r.stderr[-3000:]
    ours = [ln for ln in r.stderr.splitlines() if ln.startswith("kafka-analyzer:")]
    assert len(ours) == 1 and "spark.executor.pyspark.memory" in ours[0], r.stderr[-3000:]
    assert "Traceback" not in r.stderr and "py4j" not in r.stderr


def test_owners_grow_with_the_file():
    """Two owners per core for a file of a few splits; about one per 128 MB beyond, so that an
    owner's task stays that size for a 10 GB file (four owners of 2.5 GB each ran the default
    1 GiB driver out of heap); never more than the splits."""
    from analyzer.spark.stitch import owner_parts

    assert owner_parts(1 << 30, 8, 2) == 8
    assert owner_parts(300 << 20, 3, 2) == 3
    assert owner_parts(600 << 20, 5, 2) == 5
    assert owner_parts(10 << 30, 80, 2) == 80
    assert owner_parts(10 << 30, 80, 64) == 80
    assert owner_parts(2 << 20, 500, 2) == 4  # tiny splits of a small file: two per core


def test_local_mode_jvm_options():
    """The JVM local mode starts compiles with C1 only (the C2 compiler cost as much CPU as the
    tasks on the 1 GB bench set) and, on a few cores, collects with the serial collector."""
    from analyzer.spark.jobs import local_jvm_options

    assert local_jvm_options("local[2]") == "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    assert local_jvm_options("local") == "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    assert local_jvm_options("local[16]") == "-XX:TieredStopAtLevel=1"
    assert local_jvm_options("local[8,3]") == "-XX:TieredStopAtLevel=1"
    cores = os.cpu_count() or 1
    assert ("SerialGC" in local_jvm_options("local[*]")) == (cores <= 4)


def test_spark_failures_are_one_line():
    """Spark's failures become one line naming the setting to change; other exceptions are not
    Spark's to explain."""
    from pyspark.errors import PySparkException

    from analyzer.spark.jobs import failure_message

    def text(t: str) -> str | None:
        return failure_message(PySparkException(message=t))

    assert "spark.executor.memory" in text("Job aborted: java.lang.OutOfMemoryError: Java heap space")
    assert "spark.executor.pyspark.memory" in text("PythonException: MemoryError")
    # a capped worker may run out while importing: the OS's error, not Python's MemoryError
    assert "spark.executor.pyspark.memory" in text("OSError: [Errno 12] Cannot allocate memory")
    # or in CPython's compiler, whose failed allocation is a SystemError (seen in CI)
    assert "spark.executor.pyspark.memory" in text(
        "SystemError: <built-in function compile> returned NULL without setting an exception"
    )
    # or in pyspark's worker.main, after which the worker exits (both lines in the job's text;
    # seen in CI)
    assert "spark.executor.pyspark.memory" in text(
        'File "pyspark/worker.py", line 4364, in main\nSystemError: error return without exception'
        " set\norg.apache.spark.SparkException: Python worker exited unexpectedly (crashed)"
    )
    assert "memoryOverhead" in text(
        "org.apache.spark.SparkException: Python worker exited unexpectedly (crashed)"
    )
    assert "spark.driver.memory" in failure_message(ConnectionRefusedError("Connection refused"))
    assert text("line one\nValueError: bad thing\nmore").startswith("Spark failed: ValueError: bad thing")
    assert failure_message(ValueError("a bug")) is None


def test_cli_reports_missing_files_and_damage(spark, extra, tmp_path, capsys):
    from analyzer.spark.jobs import main

    assert main([str(tmp_path / "nothing-*.pcap")], spark=spark) == 2
    assert "nothing-*.pcap: matches no file" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main([str(tmp_path / "empty")], spark=spark) == 2
    assert "empty: no capture file in it" in capsys.readouterr().err
    out = tmp_path / "out"
    assert main([str(extra), "--out", str(out), "--format", "parquet", "--save"], spark=spark) == 1
    err = capsys.readouterr().err
    assert "capture file is truncated" in err and "not a pcap or pcapng capture" in err
    assert (
        spark.read.parquet(str(out / "exchanges")).count()
        == spark.read.parquet(str(out / "apis")).agg({"count": "sum"}).first()[0]
    )
    assert not spark.sparkContext._jsc.sc().isStopped()  # a session passed in is left running


def test_where_filters_on_the_executors(spark):
    """``analyze(where=EXPR)``: compiled on the driver (a bad filter fails at once), applied on
    the executors: the exchanges and records of the matching exchanges only, the same ones as
    the compiled filter keeps in-process."""
    from analyzer.dissect.message import Options
    from analyzer.filter import FilterError, compile_filter
    from analyzer.spark.source import analyze

    with pytest.raises(FilterError) as info:
        analyze(spark, [str(CAPTURES / TRUNCATED)], where="api == Prodce")
    assert info.value.position == 7 and "Produce" in info.value.message

    files = [str(CAPTURES / TRUNCATED), str(CAPTURES / "librdkafka-produce-consume-zstd.pcap")]
    where = 'api in {Produce, Fetch} and records.key contains "-1" and latency > 0.02ms'
    want: Counter = Counter()
    for f in files:
        flt = compile_filter(where)
        a = Analysis(f, Options(records_bodies=True))
        flt.knowledge = a.knowledge
        for ev in a.events():
            if type(ev) is Exchange and flt(ev):
                want[(Path(f).name, ev.api_key, ev.conn.id, ev.correlation_id)] += 1
    assert want and {k[1] for k in want} == {0, 1}
    a = analyze(spark, files, where=where, records=True)
    try:
        rows = a.exchanges.select("capture", "api_key", "connection", "correlation_id").collect()
        got = Counter((Path(_local(r.capture)).name, r.api_key, r.connection, r.correlation_id) for r in rows)
        assert got == want
        recs = a.records.select("capture", "key").collect()
        assert recs and {Path(_local(r.capture)).name for r in recs} == {k[0] for k in want}
        # the capture rows still count every exchange of the file
        total = sum(r.exchanges for r in a.captures.collect())
        assert total > sum(want.values())
    finally:
        a.unpersist()


# the bundled pcaps _one_recording joins: those up to this size (about 40 of them, every client
# stack, ~850 KB, ~1,400 exchanges); the group and producer scenarios, a few times bigger each,
# would triple the file (2.6 MB) and what the tests using it cost, for no other kind of cut
ONE_RECORDING_MAX = 48_000


def _one_recording(dest: Path) -> Path:
    """The bundled clear-text pcaps (all Ethernet, little-endian) of up to ONE_RECORDING_MAX bytes
    as one file, in time order."""
    import struct

    files = sorted(
        (f for f in _clear_text_captures() if f.suffix == ".pcap" and f.stat().st_size <= ONE_RECORDING_MAX),
        key=lambda f: struct.unpack("<I", f.read_bytes()[24:28]),
    )
    data = bytearray(files[0].read_bytes()[:24])
    for f in files:
        data += f.read_bytes()[24:]
    dest.write_bytes(data)
    return dest


def _export_objects(f: Path) -> dict[str, Counter]:
    """``kafka-analyzer export --no-spans --records`` of one file (one process): its objects
    by type, each as sorted JSON text."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
    }
    cmd = [sys.executable, "-m", "analyzer", "export", str(f), "--no-spans", "--records"]
    r = subprocess.run(cmd, capture_output=True, cwd=ROOT, env=env, timeout=120)
    assert r.returncode in (0, 1), r.stderr[-2000:]
    out: dict[str, Counter] = {}
    for line in r.stdout.splitlines():
        d = json.loads(line)
        out.setdefault(d["type"], Counter())[json.dumps(d, sort_keys=True)] += 1
    return out


def _frames_cut(f: Path, size: int, exchanges: Counter) -> int:
    """How many of the export's frames have their packets in two of the file's splits."""
    from analyzer.capture.split import count_packets, splits

    starts, n = [], 0
    for c in splits(f, size):
        starts.append(n + 1)
        n += count_packets(c)
    cut = 0
    for text in exchanges:
        d = json.loads(text)
        for m in (d["request"], d["response"]):
            if m is not None and len({bisect.bisect_right(starts, p) for p in m["frames"]}) > 1:
                cut += 1
    return cut


def test_a_big_file_in_tiny_splits_gives_the_export(spark, tmp_path, monkeypatch):
    """One file cut into 4 KB byte-range splits (connections, exchanges and frames cut between
    splits): walked by several tasks, shuffled by connection and stitched, it gives the export's
    exchanges field for field (pairs, latencies, connection ids, topics, issues, bodies), its
    connections, issues, records and counts. The owners are as many as a file 2,000 times
    bigger would have (a task's bytes scaled down with the file)."""
    from analyzer.capture.split import splits
    from analyzer.dissect.message import Options
    from analyzer.session.records import FETCH_APIS, iter_records
    from analyzer.spark import stitch
    from analyzer.spark.source import analyze

    big = _one_recording(tmp_path / "bundled.pcap")
    cuts = splits(big, 4096)
    assert len(cuts) > 100
    want = _export_objects(big)
    assert _frames_cut(big, 4096, want["exchange"]) > 0  # frames cut in the middle
    monkeypatch.setattr(stitch, "TASK_BYTES", (128 << 20) // 2000)
    owners = stitch.owner_parts(big.stat().st_size, len(cuts), spark.sparkContext.defaultParallelism)
    assert owners > 2 * spark.sparkContext.defaultParallelism
    a = analyze(spark, [str(big)], json=True, records=True, bodies=True, split_size=4096)
    try:
        assert list(a.split.values()) == [len(cuts)]
        assert a._owned.getNumPartitions() == owners
        got = Counter(json.dumps(json.loads(r.json), sort_keys=True) for r in a.exchanges.collect())
        assert sum(got.values()) == sum(want["exchange"].values()) > 1000
        assert got == want["exchange"]
        # connections and issues: the export's (ids in the order connections opened)
        conns = Counter(
            (r.connection, r.client, r.broker, r.first_ts, r.last_ts, r.requests, r.responses, r.closed)
            for r in a.connections.collect()
        )
        wconns = Counter()
        for text in want["connection"]:
            d = json.loads(text)
            req, resp = (d["frames"]["client"], d["frames"]["broker"]) if d["roles_known"] else (None, None)
            wconns[
                (d["id"], d["client"], d["broker"], d["first_ts"], d["last_ts"], req, resp, d["closed"])
            ] += 1
        if any(k[5] is None for k in wconns):  # roles unknown: the rows count one way
            conns = Counter({k[:5] + k[7:]: v for k, v in conns.items()})
            wconns = Counter({k[:5] + k[7:]: v for k, v in wconns.items()})
        assert conns == wconns
        issues = Counter((r.ts, r.connection, r.code, r.message) for r in a.issues.collect())
        wissues = Counter()
        for kind in ("issue", "gap"):
            for text in want.get(kind, ()):
                d = json.loads(text)
                wissues[(d["ts"], d["connection"], d["code"], d["message"])] += 1
        assert issues == wissues and any("mock cluster answered" in k[3] for k in issues)
        cap = a.captures.collect()
        summary = json.loads(next(iter(want["summary"])))["capture"]
        assert len(cap) == 1 and (cap[0].packets, cap[0].tcp_connections, cap[0].exchanges) == (
            summary["packets"],
            summary["tcp_connections"],
            summary["exchanges"],
        )
        # records: those the pipeline reads from the whole file, topics named as it names them
        whole = Analysis(big, Options(records_bodies=True))
        wrecs = Counter()
        for ev in whole.events():
            if type(ev) is Exchange:
                msg = ev.request if ev.api_key == 0 else ev.response if ev.api_key in FETCH_APIS else None
                for r in iter_records(msg, whole.knowledge.topic_ids):
                    wrecs[
                        (ev.correlation_id, r.topic, r.partition, r.offset, _text(r.key), _text(r.value))
                    ] += 1
        recs = Counter(
            (r.correlation_id, r.topic, r.partition, r.offset, _text(r.key), _text(r.value))
            for r in a.records.collect()
        )
        assert recs == wrecs and recs
        # check --parquet's columns: the seq and state of each exchange, the seq and roles of each
        # issue, the seq of each connection's end, the captures row's verdict, as one run over
        # the whole file writes them
        one = analyze(spark, [str(big)], records=True, bodies=True, split_size=0)
        assert not one.split
        for table, cols in (
            ("exchanges", ("seq", "state")),
            ("issues", ("seq", "roles_known", "connection", "code", "message")),
            ("connections", ("seq", "connection", "first_ts", "last_ts")),
            ("captures", ("issues", "exit_code", "inconclusive", "records_bodies")),
        ):
            split_rows, whole_rows = (
                sorted(tuple(r[c] for c in cols) for r in getattr(x, table).collect()) for x in (a, one)
            )
            assert split_rows == whole_rows, table
            assert all(r[0] is not None for r in split_rows)
        one.unpersist()
        seqs = sorted(r.seq for t in (a.exchanges, a.issues, a.connections) for r in t.collect())
        assert seqs == list(range(1, len(seqs) + 1))
    finally:
        a.unpersist()


def test_a_pcapng_in_tiny_splits_carries_interfaces_and_secrets(spark):
    """A pcapng with its TLS secrets in Decryption Secrets Blocks, cut into 4 KB splits at block
    boundaries: every split reads with the interface table in force, the secrets reach the
    owners, and the exchanges are those of the whole file."""
    from analyzer.capture.split import splits
    from analyzer.spark.source import analyze

    f = CAPTURES / "kafka-python-tls-tls13-aes128gcm-dsb.pcapng"
    if not f.exists():
        pytest.skip("no pcapng with secrets")
    want = Counter(
        (
            ev.api_key,
            ev.correlation_id,
            ev.conn.id,
            ev.ts,
            None if ev.latency is None else round(ev.latency * 1e3, 3),
        )
        for ev in Analysis(f).events()
        if type(ev) is Exchange
    )
    assert sum(want.values()) > 10
    a = analyze(spark, [str(f)], split_size=4096)
    try:
        assert list(a.split.values()) == [len(splits(f, 4096))] and len(splits(f, 4096)) > 5
        rows = a.exchanges.select("api_key", "correlation_id", "connection", "ts", "latency_ms").collect()
        assert Counter(tuple(r) for r in rows) == want
    finally:
        a.unpersist()


@pytest.mark.parametrize("stays", [True, False], ids=["member-stays", "member-left"])
def test_group_members_on_another_owner_in_tiny_splits(spark, tmp_path, monkeypatch, stays):
    """The admin's simple commit answered UNKNOWN_MEMBER_ID on one owner's connection, the
    consumer's JoinGroup and LeaveGroup on another's: the stitching judges the commit against
    the members one run knows (``quirk.simple_commit_rejected`` only once the member left)."""
    from analyzer.spark import stitch
    from analyzer.spark.source import analyze

    src = CAPTURES / "librdkafka-admin.pcap"
    f = member_stays(src, tmp_path / "member-stays.pcap") if stays else src
    want = _export_objects(f)
    named = any("quirk.simple_commit_rejected" in t for t in want["exchange"])
    assert named is not stays
    consumer = {ex.conn.a.port for ex in exchanges(f) if ex.api_key == 11}  # JoinGroup
    owners = {k: int(not any(port in consumer for _a, port in k)) for k in connection_keys(f)}
    monkeypatch.setattr(stitch, "plan_owners", lambda _path, _parts: owners)
    # a file:// URI: the splits are read through pyarrow.fs (LocalFileSystem, from_uri)
    a = analyze(spark, [f.as_uri()], json=True, records=True, bodies=True, split_size=4096)
    try:
        assert list(a.split.values())[0] > 4
        got = Counter(json.dumps(json.loads(r.json), sort_keys=True) for r in a.exchanges.collect())
        assert got == want["exchange"]
        quirks = [r for r in a.exchanges.collect() if "quirk.simple_commit_rejected" in r.issues]
        assert len(quirks) == int(not stays)
    finally:
        a.unpersist()


@pytest.mark.parametrize("name", ["librdkafka-admin.pcap", "kafka-python-tls-tls13-aes128gcm-dsb.pcapng"])
def test_damage_in_a_tiny_split_is_where_the_whole_file_has_it(spark, tmp_path, name):
    """A file cut in the middle of its last packet, in 4 KB splits: its capture issue has the
    whole file's byte offset and packet numbers (not the last split's)."""
    from analyzer.capture.files import CaptureFile
    from analyzer.spark.source import analyze

    raw = (CAPTURES / name).read_bytes()
    f = tmp_path / ("cut" + Path(name).suffix)
    f.write_bytes(raw[:-7])
    whole = CaptureFile(f)
    for _ in whole:
        pass
    want = [(i.code, i.message, i.offset) for i in whole.issues]
    assert want and want[0][2] > 8192
    a = analyze(spark, [str(f)], split_size=4096)
    try:
        assert list(a.split.values())[0] > 4
        got = [(r.code, r.message, r.offset) for r in a.issues.collect() if r.connection is None]
        assert got == want
        # check --parquet's view: the issues' order and the file's verdict are one run's
        one = analyze(spark, [str(f)], split_size=0)
        for table, cols in (
            ("issues", ("seq", "roles_known", "connection", "code", "message", "ts")),
            ("captures", ("issues", "damaged", "exit_code", "inconclusive")),
        ):
            rows = [sorted(tuple(r[c] for c in cols) for r in getattr(x, table).collect()) for x in (a, one)]
            assert rows[0] == rows[1], table
        assert a.captures.collect()[0].exit_code == 1
        one.unpersist()
    finally:
        a.unpersist()


def test_splits_are_read_through_the_file_system_layer(tmp_path):
    """A URI's splits are found and read through ``pyarrow.fs`` (seeks and ranged reads, the
    size from the file info): the same splits and packets as the local file's; a URI no file
    system reads is one line naming it, and the file is then analysed whole."""
    from analyzer.capture.files import CaptureFile
    from analyzer.capture.split import SplitSource, splits
    from analyzer.spark.source import Piece, open_ranged
    from analyzer.spark.stitch import plan_splits

    for name in ("librdkafka-admin.pcap", "kafka-python-tls-tls13-aes128gcm-dsb.pcapng"):
        path = CAPTURES / name
        uri = path.as_uri()
        f, size = open_ranged(uri)
        with f:
            assert type(f).__module__.startswith("pyarrow") and size == path.stat().st_size
        local = splits(path, 4096)
        remote = splits(uri, 4096, open_ranged)
        assert len(local) > 4
        assert [s._replace(path=str(path)) for s in remote] == local
        got, first = [], 1
        for s in remote:
            got += [(i, ts, bytes(d)) for i, ts, _lt, d in SplitSource(s, s.first or first, open_ranged)]
            first = len(got) + 1
        assert got == [(i, ts, bytes(d)) for i, ts, _lt, d in CaptureFile(path)]
    for uri in ("foo://host/x.pcap", (tmp_path / "gone.pcap").as_uri()):
        with pytest.raises(OSError) as err:
            open_ranged(uri)
        msg = str(err.value)
        assert msg.startswith(uri + ": ") and "\n" not in msg
        assert plan_splits(Piece((uri,), (1 << 20,)), 4096) is None


def _all_rows(a) -> dict[str, list]:
    """Every row of every table, every column, sorted (lists and maps as sorted text)."""

    def value(v):
        return json.dumps(v, sort_keys=True, default=str) if isinstance(v, list | dict) else v

    tables = {name: getattr(a, name) for name in ("exchanges", "issues", "connections", "captures")}
    if a.records is not None:
        tables["records"] = a.records
    return {
        name: sorted((tuple(value(r[c]) for c in df.columns) for r in df.collect()), key=repr)
        for name, df in tables.items()
    }


def test_a_chain_in_tiny_splits_gives_the_chain_whole(spark, tmp_path):
    """A capture rotated every 40 packets (files of about 7 KB, connections and frames cut
    between them) in 4 KB splits: the chain's files are splits of one piece (each file its own
    header, some cut inside), walked by several tasks, shuffled by connection and stitched; every
    row of every table (the capture column naming each row's file, seq and state, the captures
    row) is that of the chain analysed as one piece, and the exchanges are the export's of the
    concatenation."""
    from analyzer.capture.split import splits
    from analyzer.spark.source import analyze

    src = CAPTURES / "librdkafka-txn.pcap"
    folder = tmp_path / "rotated"
    folder.mkdir()
    pieces = _cut_pcap(src, folder, 40)
    cuts = sum(len(splits(p, 4096)) for p in pieces)
    assert len(pieces) > 5 and cuts > len(pieces)  # some files are cut inside too
    want = _export_objects(src)
    a = analyze(spark, str(folder), json=True, records=True, bodies=True, split_size=4096)
    one = analyze(spark, str(folder), json=True, records=True, bodies=True, split_size=None)
    try:
        assert list(a.split.values()) == [cuts] and not one.split
        assert len(a.pieces) == 1 and len(a.pieces[0].uris) == len(pieces)
        got = Counter(json.dumps(json.loads(r.json), sort_keys=True) for r in a.exchanges.collect())
        assert got == want["exchange"] and sum(got.values()) > 20
        split_rows, whole_rows = _all_rows(a), _all_rows(one)
        for table in split_rows:
            assert split_rows[table] == whole_rows[table], table
        names = {Path(_local(r.capture)).name for r in a.exchanges.collect()}
        assert len(names) > 3 and names <= {p.name for p in pieces}
    finally:
        a.unpersist()
        one.unpersist()


def test_rotated_captures_in_tiny_splits_give_their_chains_whole(spark, tmp_path):
    """The bundled clear-text pcaps as one file rotated every 60 packets, a truncated rotation
    among them, and one of them rotated on its own (a second recording at the same time: a
    second chain): in 4 KB splits, every row of every table is that of each chain analysed as
    one piece, damage named by its file."""
    from analyzer.spark.source import analyze

    big = _one_recording(tmp_path / "bundled.pcap")
    folder = tmp_path / "rotated"
    folder.mkdir()
    pieces = _cut_pcap(big, folder, 60)
    cut = pieces[len(pieces) // 2]
    cut.write_bytes(cut.read_bytes()[:-7])  # a rotation cut in the middle of its last packet
    pieces += _cut_pcap(CAPTURES / "librdkafka-txn.pcap", folder, 40)
    a = analyze(spark, str(folder), records=True, bodies=True, split_size=4096)
    one = analyze(spark, str(folder), records=True, bodies=True, split_size=None)
    try:
        chains = [p for p in a.pieces if len(p.uris) > 1]
        assert len(chains) == 2 and sum(len(p.uris) for p in chains) == len(pieces) > 100
        assert len(a.split) == 2 and not one.split
        split_rows, whole_rows = _all_rows(a), _all_rows(one)
        for table in split_rows:
            assert split_rows[table] == whole_rows[table], table
        damage = [r for r in a.issues.collect() if r.connection is None and r.code == "capture.truncated"]
        assert damage and all(r.message.startswith(cut.name + ": ") for r in damage)
    finally:
        a.unpersist()
        one.unpersist()


def test_limits_travel_to_the_owners_of_splits(spark):
    """With limits (``--max-records``, ``--max-elements``, ``--max-decompressed``) a file cut into
    splits gives the rows of the file analysed whole with them; with ``--max-connections`` low
    enough that one run closes connections early (which ones depends on them all) the file is
    analysed whole instead."""
    from analyzer.dissect.codecs import Limits
    from analyzer.spark.source import analyze

    path = str(CAPTURES / "librdkafka-txn.pcap")
    for limits in (Limits(max_records=3, max_elements=5, max_total_output=0), Limits(max_connections=1)):
        got = []
        for size in (4096, 0):
            a = analyze(spark, [path], records=True, bodies=True, json=True, split_size=size, limits=limits)
            try:
                assert bool(a.split) == bool(size)
                got.append(
                    (
                        sorted((r.json, r.seq, r.state) for r in a.exchanges.collect()),
                        Counter(tuple(r) for r in a.issues.collect()),
                        [tuple(r) for r in a.captures.collect()],
                        Counter(tuple(r) for r in a.connections.collect()),
                    )
                )
            finally:
                a.unpersist()
        assert got[0] == got[1], limits
        codes = {c[8] for c in got[0][1]}
        assert ("stream.evicted" in codes) == (limits.max_connections == 1)
