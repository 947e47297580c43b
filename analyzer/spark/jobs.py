"""Jobs over the DataFrames of :func:`analyzer.spark.source.analyze`, and their command line.

Each job takes a DataFrame and returns a (small) DataFrame: latency percentiles per API, errors
by name per API and per client, top topics by produced/fetched records, the slowest exchanges,
issues by code, the consumer groups' health, and the captures. The numbers are those of
``kafka-analyzer stats`` over the same files, except that the percentiles are Spark's
``percentile_approx``.

    python -m analyzer.spark.jobs CAPTURES... [--master local[2]] [--out DIR] [--format json|parquet]

``CAPTURES`` are paths, globs, directories or Hadoop URIs (``hdfs://``, ``s3a://``). The tables
are printed, and with ``--out`` written to ``DIR/<table>/`` (one part file each). Exit codes as
the CLI's: 0; 1 when a capture is damaged or no Kafka exchange was found; 2 usage errors and
missing files.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from analyzer.dissect.codecs import DEFAULT_LIMITS, Limits
from analyzer.dissect.constants import ApiKey
from analyzer.issues import PAIRING_NO_RESPONSE
from analyzer.session.records import FETCH_APIS
from analyzer.spark.source import Analysis, NoCaptures, analyze

# percentile_approx accuracy: the rank error is at most count / ACCURACY (exact below that size)
ACCURACY = 10000


def api_latency(exchanges: DataFrame, accuracy: int = ACCURACY) -> DataFrame:
    """Per API: exchanges, latency p50/p95/p99/max (ms, answered exchanges only), unanswered
    requests, responses with errors and error codes, request and response bytes."""
    pct = F.percentile_approx("latency_ms", [0.5, 0.95, 0.99], accuracy)
    return (
        exchanges.groupBy("api_key", "api_name")
        .agg(
            F.count(F.lit(1)).alias("count"),
            pct.alias("pct"),
            F.max("latency_ms").alias("max_ms"),
            F.sum(F.array_contains("issues", PAIRING_NO_RESPONSE.code).cast("long")).alias("unanswered"),
            F.sum((F.size("errors") > 0).cast("long")).alias("error_responses"),
            F.sum(F.size("errors")).cast("long").alias("errors"),
            F.coalesce(F.sum("request_bytes"), F.lit(0)).alias("request_bytes"),
            F.coalesce(F.sum("response_bytes"), F.lit(0)).alias("response_bytes"),
        )
        .select(
            "api_key",
            "api_name",
            "count",
            F.col("pct")[0].alias("p50_ms"),
            F.col("pct")[1].alias("p95_ms"),
            F.col("pct")[2].alias("p99_ms"),
            "max_ms",
            "unanswered",
            "error_responses",
            "errors",
            "request_bytes",
            "response_bytes",
        )
        .orderBy(F.col("api_key").asc_nulls_last(), "api_name")
    )


def errors_by_api(exchanges: DataFrame) -> DataFrame:
    """Error names in responses, per API."""
    return (
        exchanges.select("api_key", "api_name", F.explode("errors").alias("error"))
        .groupBy("api_key", "api_name", "error")
        .count()
        .orderBy(F.desc("count"), F.col("api_key").asc_nulls_last(), "error")
    )


def errors_by_client(exchanges: DataFrame) -> DataFrame:
    """Error names in responses, per client id (``(none)`` without one)."""
    return (
        exchanges.select(
            F.coalesce("client_id", F.lit("(none)")).alias("client_id"), F.explode("errors").alias("error")
        )
        .groupBy("client_id", "error")
        .count()
        .orderBy(F.desc("count"), "client_id", "error")
    )


def topics(exchanges: DataFrame, limit: int | None = None) -> DataFrame:
    """Per topic: exchanges naming it, records and bytes produced (Produce requests) and fetched
    (Fetch/ShareFetch responses), from the record batch headers; busiest topics first."""
    counts = exchanges.select("api_key", F.explode("record_counts").alias("rc"))
    produced = F.col("api_key") == int(ApiKey.PRODUCE)
    fetched = F.col("api_key").isin(*sorted(int(k) for k in FETCH_APIS))

    def total(cond, what: str):
        return F.sum(F.when(cond, F.col(f"rc.{what}")).otherwise(F.lit(0))).cast("long")

    moved = counts.groupBy(F.col("rc.topic").alias("topic")).agg(
        total(produced, "records").alias("produced_records"),
        total(produced, "bytes").alias("produced_bytes"),
        total(fetched, "records").alias("fetched_records"),
        total(fetched, "bytes").alias("fetched_bytes"),
    )
    named = (
        exchanges.select(F.explode("topics").alias("topic"))
        .groupBy("topic")
        .agg(F.count(F.lit(1)).alias("requests"))
    )
    cols = ["produced_records", "produced_bytes", "fetched_records", "fetched_bytes"]
    out = (
        named.join(moved, "topic", "full_outer")
        .fillna(0, ["requests", *cols])
        .select("topic", "requests", *cols)
        .orderBy(F.desc(F.col("produced_records") + F.col("fetched_records")), F.desc("requests"), "topic")
    )
    return out.limit(limit) if limit else out


def slowest(exchanges: DataFrame, limit: int = 20) -> DataFrame:
    """The answered exchanges with the highest latency."""
    return (
        exchanges.where(F.col("latency_ms").isNotNull())
        .orderBy(F.desc("latency_ms"), "capture", "ts")
        .select(
            "latency_ms",
            "api_name",
            "api_version",
            "client",
            "broker",
            "client_id",
            "correlation_id",
            "topics",
            "errors",
            "ts",
            "capture",
        )
        .limit(limit)
    )


def issues_by_code(issues: DataFrame) -> DataFrame:
    """Connection and capture issues by code, with the captures they occur in and an example."""
    return (
        issues.groupBy("code", "severity")
        .agg(
            F.count(F.lit(1)).alias("count"),
            F.countDistinct("capture").alias("captures"),
            F.first("message").alias("example"),
        )
        .orderBy(F.desc("count"), "code")
    )


def group_health(health: DataFrame) -> DataFrame:
    """``stats``' consumer-group table (rebalances, pauses, Burrow's status, lag, coverage): a row
    per group of each piece, as ``stats`` gives it for the piece (the piece in ``capture``)."""
    return health.orderBy("group_id", "capture")


def run_jobs(a: Analysis, limit: int = 20, accuracy: int = ACCURACY) -> dict[str, DataFrame]:
    """Every job's table, by name, in display order."""
    x = a.exchanges
    return {
        "apis": api_latency(x, accuracy),
        "errors_by_api": errors_by_api(x),
        "errors_by_client": errors_by_client(x),
        "topics": topics(x, limit),
        "slowest": slowest(x, limit),
        "issues": issues_by_code(a.issues),
        "group_health": group_health(a.group_health),
        "captures": a.captures.orderBy(F.desc("damaged"), "capture"),
    }


TITLES = {
    "apis": "Requests per API",
    "errors_by_api": "Errors per API",
    "errors_by_client": "Errors per client",
    "topics": "Top topics",
    "slowest": "Slowest exchanges",
    "issues": "Connection and capture issues",
    "group_health": "Consumer groups",
    "captures": "Captures",
}


# -- command line ----------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m analyzer.spark.jobs",
        description="Analyse many capture files on a Spark cluster: latency per API, errors, "
        "top topics, slowest exchanges.",
    )
    p.add_argument("captures", nargs="+", metavar="CAPTURE", help="paths, globs, directories or URIs")
    p.add_argument("--master", help="Spark master URL (default: spark-submit's, else local[*])")
    p.add_argument("--out", metavar="DIR", help="write every table to DIR/<table>/")
    p.add_argument("--format", choices=("json", "parquet"), default="json", help="format of --out")
    p.add_argument("--top", type=int, default=20, metavar="N", help="rows of the top/slowest tables")
    p.add_argument("--port", type=int, action="append", help="a broker port (repeatable)")
    p.add_argument(
        "--save",
        action="store_true",
        help="with --out, also write the exchanges, issues, connections (and records) tables",
    )
    p.add_argument("--records", action="store_true", help="decode record bodies (the records table)")
    p.add_argument(
        "--tls-keylog", metavar="FILE", help="decrypt TLS with this NSS key log (read on the driver)"
    )
    p.add_argument(
        "--show-secrets", action="store_true", help="do not mask SASL passwords, SCRAM proofs and signatures"
    )
    p.add_argument("--recursive", action="store_true", help="look for files in subdirectories too")
    p.add_argument(
        "--separate",
        action="store_true",
        help="analyse each file on its own, even when files are rotated pieces of one recording",
    )
    p.add_argument("--partitions", type=int, metavar="N", help="number of analysis tasks")
    p.add_argument(
        "-Y",
        "--display-filter",
        metavar="EXPR",
        help="only the exchanges matching this display filter (see `kafka-analyzer filters`)",
    )
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting")
    p.add_argument("--log-level", default="WARN", help="Spark log level (default WARN)")
    lim = p.add_argument_group("limits (hostile or huge captures; each limit hit is reported as an issue)")
    for option, metavar, text in (
        (
            "--max-records",
            "N",
            f"records decoded one by one per batch (default {DEFAULT_LIMITS.max_records})",
        ),
        (
            "--max-decompressed",
            "MIB",
            f"decompressed record bytes per message (default {DEFAULT_LIMITS.max_total_output >> 20} MiB)",
        ),
        (
            "--max-elements",
            "N",
            f"array elements decoded per message (default {DEFAULT_LIMITS.max_elements})",
        ),
        (
            "--max-connections",
            "N",
            f"TCP connections tracked at once (default {DEFAULT_LIMITS.max_connections})",
        ),
    ):
        lim.add_argument(option, type=int, metavar=metavar, help=text)
    return p


_CACHE_BATCH = "spark.sql.inMemoryColumnarStorage.batchSize"
# The JVM of local mode (this process starts it; it is the executors too). Its share of the work is
# moving the Python workers' rows into Spark and the Parquet files out; the C2 compiler spent as
# much CPU on Spark's generated classes (the events' schema is wide) as the tasks themselves, and
# on a few cores G1's concurrent threads compete with the Python workers. The 1 GB rotated bench
# set on 2 cores: 99.5 -> 82 s wall, the JVM's CPU 89 -> 48 s (bench/RESULTS.md). A cluster's
# executors keep their defaults; a user's own spark.driver.extraJavaOptions come after these.
LOCAL_JVM = "-XX:TieredStopAtLevel=1"
LOCAL_JVM_FEW_CORES = "-XX:+UseSerialGC"  # up to FEW_CORES cores
FEW_CORES = 4


def _session(args) -> SparkSession:
    """The session of the command line: ``--master`` (else spark-submit's, else ``local[*]``),
    ``--conf`` settings, few shuffle partitions (the summaries are small) unless configured."""
    b = SparkSession.builder.appName("kafka-analyzer")
    master = args.master
    if master is None and not os.environ.get("PYSPARK_GATEWAY_PORT"):  # not under spark-submit
        master = "local[*]"
    if master:
        b = b.master(master)
        if master.startswith("local") and "PYSPARK_PYTHON" not in os.environ:
            # the Python workers of local mode: this interpreter, which can import the analyzer
            os.environ["PYSPARK_PYTHON"] = sys.executable
    if not sys.stderr.isatty():
        b = b.config("spark.ui.showConsoleProgress", "false")
    conf = {}
    for kv in args.conf:
        k, sep, v = kv.partition("=")
        if not sep:
            raise SystemExit(f"--conf needs KEY=VALUE, not {kv!r}")
        conf[k] = v
    # the driver's log at --log-level from its start (a JVM started here; spark-submit's has
    # its own log configuration)
    log = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")
    java = f"-Dlog4j2.configurationFile=file:{log} -Dkafka_analyzer.log_level={args.log_level.lower()}"
    if master and master.startswith("local"):
        java += f" {local_jvm_options(master)}"
    key = "spark.driver.extraJavaOptions"
    conf[key] = f"{java} {conf[key]}" if key in conf else java
    for k, v in conf.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel(args.log_level)
    if not spark.sparkContext.getConf().contains("spark.sql.shuffle.partitions"):
        spark.conf.set("spark.sql.shuffle.partitions", str(max(2, spark.sparkContext.defaultParallelism)))
    if not spark.sparkContext.getConf().contains(_CACHE_BATCH):
        # the events are cached column-wise, 10,000 rows a batch by default; a row carries the
        # exchange's export JSON and check state (about 10 KB), so a batch's column buffers
        # (grown by doubling) reached hundreds of MB and two tasks ran a 1 GiB driver out of heap
        # on the 1 GB bench capture (local mode: the executors are the driver's JVM)
        spark.conf.set(_CACHE_BATCH, "1000")
    _quiet_glob_warning(spark)
    return spark


def local_jvm_options(master: str) -> str:
    """The JVM options of a local-mode session (``LOCAL_JVM``): the collector too on a machine of
    at most ``FEW_CORES`` cores, or a master that uses that few (``local[2]``)."""
    inside = master.partition("[")[2].partition("]")[0].split(",")[0]
    cores = int(inside) if inside.isdigit() else 1 if master == "local" else (os.cpu_count() or 1)
    return f"{LOCAL_JVM} {LOCAL_JVM_FEW_CORES}" if cores <= FEW_CORES else LOCAL_JVM


def _quiet_glob_warning(spark: SparkSession) -> None:
    """Spark warns, with a stack trace, that a single glob path has no streaming metadata
    directory (FileStreamSink); that says nothing about the captures."""
    try:
        jvm = spark.sparkContext._jvm
        assert jvm is not None  # a live session's
        level = jvm.org.apache.logging.log4j.Level.ERROR
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
            "org.apache.spark.sql.execution.streaming", level
        )
    except Exception:  # another logging backend: only the warning stays
        pass


def _write(df: DataFrame, out: str, name: str, fmt: str) -> None:
    w = df.coalesce(1).write.mode("overwrite")
    path = out.rstrip("/") + "/" + name
    if fmt == "json":
        w.json(path)
    else:
        w.parquet(path)


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> int:
    """The command line; with ``spark``, runs in that session (``--master``/``--conf`` are then
    ignored) and leaves it running."""
    args = build_parser().parse_args(argv)
    return guarded(args, run, spark)


def guarded(args: argparse.Namespace, fn, spark: SparkSession | None = None) -> int:
    """``fn(args, spark)`` in a session of :func:`_session` (or ``spark``, left running), with
    Spark's failures turned into one line that names the setting to change (exit 2), never a
    py4j traceback."""
    own = spark is None
    try:
        if own:
            spark = _session(args)
        return fn(args, spark)
    except KeyboardInterrupt:
        print("kafka-analyzer: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # stdout closed early (| head): not an error
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        return 0
    except Exception as exc:
        message = failure_message(exc)
        if message is None:
            raise
        print(f"kafka-analyzer: {message}", file=sys.stderr)
        return 2
    finally:
        if own and spark is not None:
            with contextlib.suppress(Exception):  # a JVM that died cannot be stopped
                spark.stop()


# what a failed Spark job's text says -> what to tell (the first match wins)
_FAILURES = (
    (
        ("java.lang.OutOfMemoryError",),
        "Spark ran out of memory (java.lang.OutOfMemoryError): raise spark.executor.memory "
        "(spark.driver.memory in local mode), e.g. --conf spark.driver.memory=4g",
    ),
    (
        # (CPython's C code failing an allocation without setting MemoryError says one of the
        # last two, as a SystemError: seen when the worker's spark.executor.pyspark.memory limit
        # is hit while it compiles, or in pyspark's worker.main itself)
        (
            "MemoryError",
            "[Errno 12] Cannot allocate memory",
            "returned NULL without setting an exception",
            "error return without exception set",
        ),
        "a Python worker ran out of memory (MemoryError): raise spark.executor.pyspark.memory "
        "or spark.executor.memoryOverhead, or run fewer tasks per executor (spark.executor.cores)",
    ),
    (
        ("Python worker exited unexpectedly", "crashed"),
        "a Python worker died (killed, usually for lack of memory): raise "
        "spark.executor.memoryOverhead, or run fewer tasks per executor (spark.executor.cores)",
    ),
    (
        ("ExecutorLostFailure",),
        "an executor was lost (killed, usually for lack of memory): raise spark.executor.memory "
        "and spark.executor.memoryOverhead",
    ),
    (
        ("ModuleNotFoundError: No module named 'analyzer'",),
        "the executors cannot import the analyzer: install it on the nodes, or ship it with "
        "spark-submit --py-files (see the README's Spark section); spark.pyspark.python names "
        "the executors' Python",
    ),
)


def failure_message(exc: BaseException) -> str | None:
    """One line for a failure of Spark (a job, an executor, the driver's JVM), naming the setting
    to change; None for an exception that is not Spark's (a bug: its traceback is wanted)."""
    names = {c.__name__ for c in type(exc).__mro__}
    module = type(exc).__module__ or ""
    spark_error = module.startswith(("py4j", "pyspark")) or bool(
        names & {"Py4JError", "Py4JJavaError", "Py4JNetworkError", "PySparkException"}
    )
    if isinstance(exc, BrokenPipeError) or (
        not spark_error and not isinstance(exc, ConnectionError | EOFError)
    ):
        return None
    text = str(exc)
    for needles, message in _FAILURES:
        if any(n in text for n in needles):
            return message
    if (
        "Py4JNetworkError" in names
        or isinstance(exc, ConnectionError | EOFError)
        or "Answer from Java" in text
    ):
        return (
            "the Spark driver's JVM died (usually for lack of memory): raise spark.driver.memory, "
            "e.g. --conf spark.driver.memory=4g"
        )
    lines = [ln.strip().lstrip(": ") for ln in text.splitlines() if ln.strip().lstrip(": ")]
    first = lines[0] if lines else type(exc).__name__
    cause = next((ln for ln in lines if "Exception:" in ln or "Error:" in ln), first)
    head, sep, rest = cause.partition("Exception: ")
    if sep and " " not in head.strip():  # "org.apache.spark.SparkException: why" -> "why"
        cause = rest
    return f"Spark failed: {cause[:300]} (--log-level WARN shows Spark's log)"


def split_size(args: argparse.Namespace) -> dict:
    """``analyze``'s ``split_size`` from ``--split-size`` (0: never split; absent: the default)."""
    size = getattr(args, "split_size", None)
    if size is None:
        return {}
    return {"split_size": size or None}


def start(args: argparse.Namespace, spark: SparkSession, bodies: bool = False) -> Analysis | None:
    """:func:`~analyzer.spark.source.analyze` with the command line's options; None (the reason
    printed) for a path naming nothing, an unreadable key log or a bad display filter."""
    from analyzer.filter import FilterError

    try:
        return analyze(
            spark,
            args.captures,
            records=args.records,
            bodies=bodies,
            ports=args.port or (),
            partitions=args.partitions,
            recursive=args.recursive,
            chain=not args.separate,
            tls_keylog=args.tls_keylog,
            where=args.display_filter,
            show_secrets=getattr(args, "show_secrets", False),
            limits=Limits.from_settings(args),  # the CLI's limit options, when its parser has them
            **split_size(args),
        )
    except NoCaptures as exc:
        print(f"kafka-analyzer: {exc}", file=sys.stderr)
    except OSError as exc:  # the key log
        print(f"kafka-analyzer: --tls-keylog: {exc}", file=sys.stderr)
    except FilterError as exc:
        text, _, caret = exc.caret(args.display_filter).rpartition("\n")
        print(f"kafka-analyzer: bad display filter: {exc.message}\n  {text}\n  {caret}", file=sys.stderr)
    return None


def run(args: argparse.Namespace, spark: SparkSession) -> int:
    a = start(args, spark)
    if a is None:
        return 2
    caps = a.captures.cache()
    n_caps = caps.count()
    try:
        for name, df in run_jobs(a, args.top).items():
            df = df.cache()
            if args.out:
                _write(df, args.out, name, args.format)
            print(TITLES[name])
            df.show(1000 if name == "apis" else args.top, truncate=False)
            df.unpersist()
        if args.out and args.save:
            saved = {"exchanges": a.exchanges, "issues": a.issues, "connections": a.connections}
            if a.records is not None:
                saved["records"] = a.records
            for name, df in saved.items():
                df.write.mode("overwrite").format(args.format).save(args.out.rstrip("/") + "/" + name)
        totals = caps.agg(
            F.sum("exchanges").alias("exchanges"), F.sum(F.col("damaged").cast("int")).alias("damaged")
        ).first()
        assert totals is not None  # an aggregate has one row
        exchanges, damaged = totals["exchanges"] or 0, totals["damaged"] or 0
        print(f"{n_caps} captures, {exchanges} exchanges, {damaged} damaged or not captures")
        if damaged:
            for r in a.issues.where("connection IS NULL AND severity = 'error'").orderBy("capture").collect():
                print(f"kafka-analyzer: {r['capture']}: {r['message']}", file=sys.stderr)
        return 1 if damaged or not exchanges else 0
    finally:
        caps.unpersist()
        a.unpersist()


# -- kafka-analyzer spark ----------------------------------------------------------------------------


def set_name(inputs: list[str]) -> str:
    """The default ``capture_set`` of a run: the last plain (glob-free) component of the first
    input, without capture extensions (``/data/day1/*.pcap`` -> ``day1``, ``a.pcap.gz`` -> ``a``)."""
    first = inputs[0].rstrip("/") if inputs else ""
    plain: list[str] = []
    for part in first.replace("\\", "/").split("/"):
        if any(c in part for c in "*?[{"):
            break
        if part and not part.endswith(":"):
            plain.append(part)
    name = plain[-1] if plain else "captures"
    for ext in (".gz", ".zst", ".pcapng", ".pcap", ".cap"):
        name = name.removesuffix(ext)
    clean = "".join(c if c.isalnum() or c in "._-" else "_" for c in name).strip("._")
    return clean or "captures"


def spark_command(args: argparse.Namespace) -> int:
    """``kafka-analyzer spark INPUT... --out DIR``: analyse on Spark, write the Parquet tables
    (:func:`~analyzer.spark.source.write_tables`), print what was written and the per-API
    summary. Exit codes as the CLI's: 0; 1 a capture is damaged or no Kafka exchange was found;
    2 usage errors, missing files, Spark failures (one line naming the setting to change).
    At the end of a run that completed, on stderr: how long Spark's session took to start (the
    JVM, the first executors) apart from the rest (the analysis, the tables written, the session
    stopped)."""
    args.captures = args.inputs
    args.top = 20
    t0 = time.monotonic()
    started: list[float] = []

    def timed(args: argparse.Namespace, spark: SparkSession) -> int:
        started.append(time.monotonic() - t0)
        return _spark_run(args, spark)

    rc = guarded(args, timed)
    if started and rc in (0, 1):  # (a failure's one line stays the only one)
        print(
            f"kafka-analyzer: Spark's session started in {started[0]:.1f} s; the analysis, its tables"
            f" and the session's stop took {time.monotonic() - t0 - started[0]:.1f} s",
            file=sys.stderr,
        )
    return rc


def _spark_run(args: argparse.Namespace, spark: SparkSession) -> int:
    from analyzer.spark.source import write_tables

    name = args.set or set_name(args.inputs)
    a = start(args, spark, bodies=True)
    if a is None:
        return 2
    try:
        paths = write_tables(a, args.out, name)
        caps = a.captures.collect()
        files = sum(len(c["files"] or ()) for c in caps)
        exchanges = sum(c["exchanges"] or 0 for c in caps)
        damaged = [c for c in caps if c["damaged"]]
        chained = sum(1 for c in caps if len(c["files"] or ()) > 1)
        print(
            f"{files} files in {len(caps)} pieces ({chained} chains of rotated files), "
            f"{exchanges} exchanges, {len(damaged)} damaged or not captures"
            + (f"; {len(a.split)} big files cut into {sum(a.split.values())} splits" if a.split else "")
        )
        print(f"capture set {name!r}: Parquet (zstd) tables, partitioned by date/hour/capture_set:")
        for table, path in paths.items():
            print(f"  {table}: {path}")
        if exchanges:
            print(TITLES["apis"])
            api_latency(a.exchanges).show(1000, truncate=False)
        if damaged:
            bad = a.issues.where("connection IS NULL AND severity = 'error'").orderBy("capture")
            for r in bad.select("capture", "message").collect():
                print(f"kafka-analyzer: {r['capture']}: {r['message']}", file=sys.stderr)
        return 1 if damaged or not exchanges else 0
    finally:
        a.unpersist()


if __name__ == "__main__":
    sys.exit(main())
