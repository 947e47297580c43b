"""Capture files -> Spark DataFrames: the pipeline runs on the executors, one piece at a time.

:func:`analyze` lists the capture files on the driver (local paths, globs, directories or any
Hadoop URI: ``hdfs://``, ``s3a://``..., through the Hadoop FileSystem of the session), groups
them into *pieces* (:class:`Piece`: one file, or the rotated files of one recording, chained as
:mod:`analyzer.capture.sets` does for the CLI) and ships only their descriptors (URIs and sizes)
to the executors. Each executor opens its files itself (:func:`open_uri`: local files directly,
other file systems through ``pyarrow.fs``) and streams them through
:class:`~analyzer.pipeline.Analysis` in ``mapPartitions``: no file is ever one value on the JVM
side, so its size is bounded by nothing but disk. :func:`analyze_piece` turns a piece into rows in
one task; a piece bigger than the split size (a file, or a chain: the splits of its files in
order) is instead cut into byte-range splits walked by several tasks, its connections brought
together by one shuffle and stitched (:mod:`analyzer.spark.stitch`: the same rows). One pass
over the files makes one DataFrame of tagged events (``events``, persisted by default); the
tables are views of it:

* ``exchanges``: one row per request/response pair (:data:`EXCHANGE`);
* ``issues``: connection- and capture-level issues: gaps, resynchronisations, truncation,
  damaged or unknown files (:data:`ISSUE`); an exchange's own issues are in its ``issues``;
* ``connections``: one row per TCP connection (:data:`CONNECTION`);
* ``captures``: one row per piece (:data:`CAPTURE`);
* ``records`` (``records=True`` only): every record a producer sent or a consumer fetched
  (:data:`RECORD`);
* the insights of each piece, followed over all its connections in capture order
  (:class:`~analyzer.session.insights.Insights`, as ``export`` and ``stats`` follow them): the
  consumer groups' ``generations``, ``rebalances``, ``lag``, ``consumer_status`` and
  ``group_health`` (``stats``' rows), the producers' ``producers``, ``retries``,
  ``transactions``, ``held_back`` and ``e2e``, the clients' ``clients`` and ``edges`` (the
  export's objects of those types, with the piece's ``capture``).

:func:`write_tables` writes them as Parquet (zstd), partitioned by ``date``/``hour`` (UTC, of
each row's time) and ``capture_set``.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import traceback
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from analyzer.capture.split import DEFAULT_SPLIT
from analyzer.dissect.codecs import DEFAULT_LIMITS, Limits

if TYPE_CHECKING:
    from analyzer.capture.sets import Span

# the tables' schemas and the pieces, where they are defined (their names here are the API)
from analyzer.spark.pieces import (  # noqa: F401 - re-exported
    READ_BUFFER,
    TASK_BYTES,
    Piece,
    local_path,
    open_named,
    open_ranged,
    open_uri,
)
from analyzer.spark.rows import (  # noqa: F401 - re-exported
    CAPTURE,
    CONNECTION,
    EVENT,
    EXCHANGE,
    ISSUE,
    RECORD,
    TABLES,
    CaptureRow,
    IssueRow,
    connection_row,
    event,
    exchange_row,
    insight_rows,
    issue_row,
    record_rows,
)

# -- executor side ---------------------------------------------------------------------------------


def piece_span(uri: str, size: int) -> Span:
    """The :class:`~analyzer.capture.sets.Span` of one file (its time range and TCP flows), read
    on an executor: what chains rotated files into pieces. A file that cannot be opened gets
    an empty span (it stays a piece of its own and its analysis reports why)."""
    from analyzer.capture.sets import Span, span

    try:
        f = open_named(uri)
    except OSError:
        return Span(uri, None, None, 0, frozenset())
    with contextlib.closing(f):
        return span(uri, f)


def analyze_piece(  # noqa: C901 - one loop dispatching every event kind to its row
    piece: Piece,
    *,
    records: bool = False,
    with_json: bool = False,
    bodies: bool = False,
    ports: Iterable[int] = (),
    tls_keylog: str | None = None,
    where: str | None = None,
    show_secrets: bool = False,
    limits: Limits = DEFAULT_LIMITS,
) -> Iterator[tuple]:
    """Event rows (:data:`EVENT`) of one piece: its files are opened here (:func:`open_uri`) and
    streamed through one pipeline. ``tls_keylog`` is the text of an NSS key log to decrypt TLS
    with; ``where`` a display filter (:mod:`analyzer.filter`): only matching exchanges (and their
    records) become rows, the capture row still counts every exchange. ``bodies``: fill the
    exchanges' ``request``, ``response`` and ``issue_details`` (the export's JSON).
    ``show_secrets``: leave SASL secrets unmasked (masked by default, as in every output).
    ``limits``: the decoding's and the connection table's (``--max-records``...).

    A piece is whole files, analysed in order by one task (a piece bigger than the split
    size, one file or a chain, is cut into splits and analysed by :mod:`analyzer.spark.stitch`
    instead, with the same rows).

    Never raises for a bad file: damage is an issue row; so is a failure of the analysis itself
    (``spark.analysis_failed``, with everything before it kept), so one file cannot fail a job.
    Running out of memory does fail the task (Spark then says which setting to raise).
    """
    from analyzer.capture.files import CaptureFile
    from analyzer.capture.sets import CaptureSet
    from analyzer.dissect.message import Options
    from analyzer.events import CaptureIssue, ConnectionEnd, ConnIssue
    from analyzer.issues import SPARK_ANALYSIS_FAILED
    from analyzer.model import Exchange, Severity
    from analyzer.pipeline import Analysis
    from analyzer.session.insights import Insights
    from analyzer.tls.keylog import KeyLog

    keylog = None
    if tls_keylog is not None:
        keylog = KeyLog()
        keylog.add_text(tls_keylog, "the key log")
    flt = None
    if where:
        from analyzer.filter import compile_filter

        flt = compile_filter(where)  # validated on the driver already
    name = piece.name
    if len(piece.uris) == 1:
        uri = piece.uris[0]
        try:
            f = open_named(uri)
        except OSError as exc:
            yield from _unreadable(uri, piece.size, f"cannot open {uri} on the executor: {exc}")
            return
        cap: CaptureFile | CaptureSet = CaptureFile(f)
        sset = None
    else:
        f = None
        cap = sset = CaptureSet(piece.uris, opener=open_named, sizes=piece.sizes)

    def file_of(number: int | None) -> str:
        if sset is None or number is None:
            return name if sset is None else sset.paths[max(0, len(sset.files) - 1)]
        return sset.file_of(number)[0]

    records_bodies = records or (flt is not None and flt.needs_records)
    opts = Options(records_bodies=records_bodies, show_secrets=show_secrets, limits=limits)
    a = Analysis(cap, opts, ports=ports, tls_keylog=keylog, display_filter=flt)
    knowledge = a.knowledge
    topic_ids = knowledge.topic_ids
    issues = 0
    damaged = False
    seq = 0  # the exchange, issue and connection-end events in the order they come (check --parquet's)
    rows: list[tuple] = []

    class RowBuilder:
        """The piece's consumer: each event's rows, taken after every batch."""

        def event(self, ev) -> None:
            nonlocal issues, damaged, seq
            t = type(ev)
            if t is Exchange:
                seq += 1
                msg = ev.request or ev.response
                where_from = file_of(
                    msg.frame.packet_indexes[0] if msg and msg.frame.packet_indexes else None
                )
                row = exchange_row(where_from, ev, topic_ids, with_json, records, bodies, seq, knowledge)
                rows.append(event("exchange", row))
                if records:
                    rows.extend(event("record", r) for r in record_rows(where_from, ev, topic_ids))
            elif t is ConnIssue or t is CaptureIssue:
                issues += 1
                seq += 1
                if t is CaptureIssue and ev.issue.severity == Severity.ERROR:
                    damaged = True
                rows.append(event("issue", issue_row(file_of(None) if t is ConnIssue else name, ev, seq)))
            elif t is ConnectionEnd:
                seq += 1
                rows.append(event("connection", connection_row(file_of(None), ev.conn, seq)))

    insights = Insights(topic_ids)  # groups, producers, clients: over the whole piece in order
    stopped = False
    try:
        for _batch in a.steps(RowBuilder(), insights):
            yield from rows
            rows.clear()
    except MemoryError:
        raise
    except Exception as exc:  # a bug must not fail the whole job: report it as the file's issue
        stopped = True
        yield from rows  # what came before it
        issues += 1
        damaged = True
        tb = traceback.format_exc(limit=-3).strip().replace("\n", " | ")
        failed = SPARK_ANALYSIS_FAILED(f"analysis stopped after {a.packets} packets: {exc!r} ({tb})")
        row = IssueRow(
            name,
            a.last_ts,
            None,
            None,
            None,
            None,
            "issue",
            str(failed.severity),
            failed.code,
            failed.message,
            None,
            None,
            False,
            seq + 1,
        )
        yield event("issue", row)
    finally:
        if f is not None:
            f.close()
    outcome = a.outcome()
    yield from _insight_rows(name, insights, outcome, stopped)
    yield event(
        "capture",
        CaptureRow(
            name,
            cap.format,
            cap.compression,
            piece.size,
            outcome.packets,
            outcome.connections,
            outcome.exchanges,
            issues,
            outcome.first_ts,
            outcome.last_ts if outcome.packets else None,
            damaged,
            list(piece.uris),
            outcome.inconclusive(),
            int(outcome.exit_code()),
            records_bodies,
            where,
        ),
    )


def _insight_rows(name: str, insights, outcome, stopped: bool) -> Iterator[tuple]:
    """The piece's insights at its end (what was seen before an analysis that stopped: its
    issue says so)."""
    try:
        if stopped:
            insights.done(outcome)
        made = insight_rows(name, insights, outcome.last_ts if outcome.packets else None)
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - after a failure the state may be half-made: no rows then
        if not stopped:
            raise
        return
    yield from made


def _unreadable(uri: str, size, message: str) -> Iterator[tuple]:
    from analyzer.issues import CAPTURE_UNREADABLE

    i = CAPTURE_UNREADABLE(message)
    row = IssueRow(
        uri, None, None, None, None, None, "issue", str(i.severity), i.code, i.message, None, None, False, 1
    )
    yield event("issue", row)
    cap = CaptureRow(
        uri, None, None, size, 0, 0, 0, 1, None, None, True, [uri], f"{i.code}: {i.message}", 2, None, None
    )
    yield event("capture", cap)


def _analyze_bin(pieces: Iterable[Piece], opts: dict) -> Iterator[tuple]:
    for piece in pieces:
        yield from analyze_piece(Piece(*piece), **opts)


def _analyze_partition(bins: Iterable[list], opts: dict) -> Iterator[tuple]:
    for b in bins:
        yield from _analyze_bin(b, opts)


# -- driver side -----------------------------------------------------------------------------------


class NoCaptures(Exception):
    """A path names no file (missing, or a glob matching nothing)."""


def list_files(
    spark: SparkSession,
    paths: Iterable[str],
    *,
    recursive: bool = False,
    glob_filter: str | None = None,
) -> list[tuple[str, int]]:
    """The files that ``paths`` name (paths, globs with ``*?[]{a,b}``, directories, URIs), as
    ``(uri, size)``, listed here on the driver through the session's Hadoop FileSystem (so
    ``hdfs://``, ``s3a://`` and the cluster's credentials work as for any Spark job). The files
    of a directory (and of its subdirectories with ``recursive``) whose names do not start with
    ``.`` or ``_`` (Hadoop's hidden files); ``glob_filter``: only file names matching this glob.
    Raises :class:`NoCaptures` for a path that names nothing."""
    sc = spark.sparkContext
    jvm = sc._jvm
    conf = sc._jsc.hadoopConfiguration()
    seen: dict[str, int] = {}

    def walk(fs, status, top: bool) -> None:
        if status.isDirectory():
            for child in fs.listStatus(status.getPath()):
                name = child.getPath().getName()
                if name.startswith((".", "_")):
                    continue
                if child.isDirectory() and not recursive:
                    continue
                walk(fs, child, False)
            return
        uri = status.getPath().toString()
        if not top and glob_filter and not fnmatch.fnmatchcase(status.getPath().getName(), glob_filter):
            return
        seen[uri] = status.getLen()
        found.append(uri)

    assert jvm is not None  # a live session's
    for p in paths:
        path = jvm.org.apache.hadoop.fs.Path(p)
        fs = path.getFileSystem(conf)
        statuses = fs.globStatus(path)
        if not statuses:
            what = "matches no file" if any(c in p for c in "*?[{") else "no such file or directory"
            raise NoCaptures(f"{p}: {what}")
        found: list[str] = []
        for st in statuses:
            walk(fs, st, not st.isDirectory())
        if not found:
            raise NoCaptures(f"{p}: no capture file in it")
    return sorted(seen.items())


def plan_pieces(spark: SparkSession, files: list[tuple[str, int]], chain: bool = True) -> list[Piece]:
    """The pieces the tasks analyse: with ``chain``, rotated files of one recording are chained
    (their spans, the time ranges and TCP flows of each file, are read on the executors and
    grouped here by :func:`~analyzer.capture.sets.chain_spans`, as the CLI groups them); without,
    or for one file, every file is a piece of its own."""
    if not chain or len(files) < 2:
        return [Piece((u,), (s,)) for u, s in files]
    from analyzer.capture.sets import chain_spans

    sc = spark.sparkContext
    n = min(len(files), 4 * sc.defaultParallelism)
    spans = sc.parallelize(_bins([Piece((u,), (s,)) for u, s in files], n), n).flatMap(_spans).collect()
    sizes = dict(files)
    return [Piece(tuple(c), tuple(sizes[u] for u in c)) for c in chain_spans(spans)]


def _spans(pieces: list) -> list:
    return [piece_span(uris[0], sizes[0]) for uris, sizes in pieces]


def _bins(pieces: list[Piece], n: int) -> list[list[tuple]]:
    """``pieces`` in ``n`` bins of about equal bytes (biggest first, each to the lightest bin)."""
    bins: list[list[tuple]] = [[] for _ in range(n)]
    loads = [0] * n
    for p in sorted(pieces, key=lambda p: (-p.size, p.uris)):
        i = loads.index(min(loads))
        bins[i].append(tuple(p))
        loads[i] += p.size
    return [b for b in bins if b]


class Analysis:
    """The DataFrames of one analysis (see the module docstring); ``records`` is None unless
    the analysis decoded record bodies. ``pieces``: what the tasks analysed. ``unpersist()``
    frees the cached events."""

    def __init__(
        self,
        events: DataFrame,
        records: bool,
        pieces: list[Piece] | None = None,
        split: dict[str, int] | None = None,
        owned=None,
        persisted: DataFrame | None = None,
    ):
        self.events = events
        self._persisted = persisted  # what ``events`` reads (coalesced), when persisted
        self.pieces = pieces or []
        self.split = split or {}  # the pieces cut into splits: first URI -> number of splits
        self._owned = owned  # the owners' output of the split files (persisted)
        self.exchanges = self._kind("exchange")
        self.issues = self._kind("issue")
        self.connections = self._kind("connection")
        self.captures = self._kind("capture")
        self.records = self._kind("record") if records else None
        # the consumer groups of each piece (GroupInsights over the piece in capture order)
        self.generations = self._kind("generation")
        self.rebalances = self._kind("rebalance")
        self.lag = self._kind("lag")
        self.consumer_status = self._kind("consumer_status")
        self.group_health = self._kind("group_health")
        # the producers' and the clients' (Insights over the piece in capture order)
        self.producers = self._kind("producer")
        self.retries = self._kind("retry")
        self.transactions = self._kind("transaction")
        self.held_back = self._kind("held_back")
        self.e2e = self._kind("e2e")
        self.clients = self._kind("client")
        self.edges = self._kind("edge")

    def _kind(self, kind: str) -> DataFrame:
        return self.events.where(F.col("kind") == kind).select(f"{kind}.*")

    def unpersist(self) -> None:
        (self.events if self._persisted is None else self._persisted).unpersist()
        if self._owned is not None:
            self._owned.unpersist()


def analyze(
    spark: SparkSession,
    paths: str | Iterable[str],
    *,
    records: bool = False,
    json: bool = False,
    bodies: bool = False,
    ports: Iterable[int] = (),
    partitions: int | None = None,
    recursive: bool = False,
    glob_filter: str | None = None,
    chain: bool = True,
    persist: bool = True,
    tls_keylog: str | os.PathLike | None = None,
    where: str | None = None,
    show_secrets: bool = False,
    split_size: int | None = DEFAULT_SPLIT,
    limits: Limits = DEFAULT_LIMITS,
) -> Analysis:
    """Analyse every capture file that ``paths`` name (paths, globs, directories, URIs; see
    :func:`list_files`, which raises :class:`NoCaptures` for a path naming nothing).

    ``records``: decode record bodies and fill ``records``. ``json``: fill the exchanges'
    ``json`` column with the export's JSON of each exchange; ``bodies``: fill ``request``,
    ``response`` and ``issue_details`` (the export's JSON of each part, what
    :func:`write_tables` writes). ``ports``: broker ports, as ``--port``.
    ``partitions``: how many tasks (default: about :data:`TASK_BYTES` of capture per task, at
    least two per core, at most one per piece). ``recursive``/``glob_filter``: see
    :func:`list_files`. ``chain``: analyse rotated files of one recording as one piece (see
    :func:`plan_pieces`). ``persist``: keep the events (on disk) so that the tables do
    not analyse the files again: computed here (one count, with the analysis' parallelism) and then read
    by a task per :data:`TASK_ROWS` rows. ``tls_keylog``: an NSS key log file (read here, on the driver,
    and shipped to the executors) to decrypt TLS connections with. ``where``: a display filter
    (``kafka-analyzer filters``), compiled here on the driver (a
    :class:`~analyzer.filter.FilterError` is raised at once for a bad one) and applied on the
    executors: ``exchanges`` and ``records`` hold the matching exchanges only.
    ``show_secrets``: the executors leave SASL passwords, SCRAM proofs and signatures and
    OAUTHBEARER tokens unmasked (``--show-secrets``); masked by default.
    ``split_size``: a piece bigger than this (one pcap or pcapng file, or rotated files chained,
    on any file system ``pyarrow.fs`` reads) is cut into byte-range splits of about this size
    (a chain: those of each of its files, in the chain's order), walked by several tasks, its
    connections brought together by one shuffle and stitched (:mod:`analyzer.spark.stitch`: the
    same rows as analysing the piece whole in one task); None: every piece whole. A compressed
    file (one split) alone and analyses with ``where`` are analysed whole.
    ``limits``: the decoding's and the connection table's (``--max-records``...), as the CLI's:
    a piece cut into splits whose connections one run would close early (more than
    ``limits.max_connections`` open at once) is analysed whole instead.
    """
    if where is not None:
        from analyzer.filter import compile_filter

        compile_filter(where)
    paths = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    files = list_files(spark, [os.fspath(p) for p in paths], recursive=recursive, glob_filter=glob_filter)
    keylog_text = None
    if tls_keylog is not None:
        with open(tls_keylog, encoding="ascii", errors="replace") as f:
            keylog_text = f.read()
    pieces = plan_pieces(spark, files, chain)
    sc = spark.sparkContext
    total = sum(p.size for p in pieces)
    n = partitions or max(2 * sc.defaultParallelism, -(-total // TASK_BYTES))
    opts = {
        "records": records,
        "with_json": json,
        "bodies": bodies,
        "ports": tuple(ports),
        "tls_keylog": keylog_text,
        "where": where,
        "show_secrets": show_secrets,
        "limits": limits,
    }
    big: list[tuple[Piece, list]] = []
    if split_size and where is None:
        from analyzer.spark.stitch import plan_splits

        for p in pieces:
            cuts = plan_splits(p, split_size)
            if cuts is not None:
                big.append((p, cuts))
    whole = [p for p in pieces if not any(p is b for b, _ in big)]
    rdd = None
    if whole:
        n = max(1, min(len(whole), n))
        rdd = sc.parallelize(_bins(whole, n), n).mapPartitions(partial(_analyze_partition, opts=opts))
    owned = None
    if big:
        from analyzer.spark.stitch import analyze_split

        split_rows, owned, again = analyze_split(spark, big, opts, n)
        rdd = split_rows if rdd is None else rdd.union(split_rows)
        if again:  # one run would close connections early: those pieces are analysed whole
            more = sc.parallelize(_bins(again, len(again)), len(again))
            rdd = rdd.union(more.mapPartitions(partial(_analyze_partition, opts=opts)))
    assert rdd is not None  # list_files found at least one file
    events = spark.createDataFrame(rdd, EVENT, verifySchema=False)
    persisted = None
    if persist:
        persisted = events.persist(StorageLevel.DISK_ONLY)
        events = _by_rows(persisted, rdd.getNumPartitions())
    return Analysis(events, records, pieces, {p.uris[0]: len(c) for p, c in big}, owned, persisted)


# the rows (events: exchanges, records, issues...) a task reads of the persisted events when it
# writes a table or answers a query: a few hundred bytes to a few kilobytes a row
TASK_ROWS = 500_000


def _by_rows(persisted: DataFrame, parts: int) -> DataFrame:
    """The persisted events, computed at once by the analysis' tasks (one count), read by as
    few tasks as their rows need (:data:`TASK_ROWS` a task). The analysis runs in two tasks per
    core at least (balanced pieces) or one per owner of a piece cut into splits, most of them a
    few rows for a small capture set; every job over the events (each table written, each query)
    ran a task per partition, and each task of a Parquet write deserializes the whole Hadoop
    configuration: a quarter of the JVM's CPU in a small run, measured with JFR."""
    rows = persisted.count()  # (with the analysis' parallelism: the later reads are coalesced)
    # at least a task per core: the exchanges' table alone (their JSON and state, about 10 KB
    # a row) took 8 s to write in one task on the 1 GB bench set while the other core waited
    cores = persisted.sparkSession.sparkContext.defaultParallelism
    tasks = max(1, cores, -(-rows // TASK_ROWS))
    return persisted.coalesce(tasks) if tasks < parts else persisted


# -- Parquet output --------------------------------------------------------------------------------

# the time column each table is partitioned by
_TIME = {"exchanges": "ts", "records": "ts", "issues": "ts", "connections": "first_ts"}


def _partitioned(df: DataFrame, ts: str, capture_set: str) -> DataFrame:
    """``df`` with the partition columns: ``date`` (yyyy-mm-dd) and ``hour`` (0-23) of ``ts``
    in UTC, whatever the session's time zone, and ``capture_set``."""
    day = F.floor(F.col(ts) / 86400).cast("int")
    return df.withColumns(
        {
            "date": F.date_format(F.date_add(F.lit("1970-01-01").cast("date"), day), "yyyy-MM-dd"),
            "hour": F.pmod(F.floor(F.col(ts) / 3600), F.lit(24)).cast("int"),
            "capture_set": F.lit(capture_set),
        }
    )


# Parquet row groups of 8 MiB (Spark's default is 128 MiB): a reader decodes a whole row group at
# once however small its batches, so ``check --parquet`` holds at most this much of the exchanges'
# states (the decoded trees) at a time
ROW_GROUP_BYTES = 8 << 20

# the rows a task writes of the small tables (captures, the insights'): at most a few hundred
# bytes a row
SMALL_TABLE_ROWS = 500_000


def write_tables(a: Analysis, out: str, capture_set: str, mode: str = "overwrite") -> dict[str, str]:
    """Write the tables as Parquet (zstd) under ``out``: ``exchanges``, ``issues``,
    ``connections`` (and ``records`` when the analysis has them), partitioned by
    ``date=``/``hour=`` (UTC) and ``capture_set=``; ``captures`` (one row per piece) and the
    insights' (:data:`INSIGHT_NAMES`: a few rows per group, producer, client...) partitioned by
    ``capture_set=`` only. Each task writes its own rows: no shuffle. ``mode``: Spark's save
    mode (``overwrite`` replaces only the partitions written, so several capture sets can share
    ``out``). An insight table without a row in this set is not written. Returns the paths of
    the tables written, by name."""
    tables = {"exchanges": a.exchanges, "issues": a.issues, "connections": a.connections}
    if a.records is not None:
        tables["records"] = a.records
    paths = {}
    base = out.rstrip("/")
    for name, df in tables.items():
        paths[name] = f"{base}/{name}"
        (
            _partitioned(df.drop("json") if name == "exchanges" else df, _TIME[name], capture_set)
            .write.mode(mode)
            .option("compression", "zstd")
            .option("partitionOverwriteMode", "dynamic")
            .option("parquet.block.size", ROW_GROUP_BYTES)
            .partitionBy("date", "hour", "capture_set")
            .parquet(paths[name])
        )
    # The small tables (a few rows per piece) are each a filter of the events: written one by
    # one, each write scanned every event again (13 scans of the whole capture set). Their rows
    # are kept apart once (one scan), then written concurrently: 13 small jobs that overlap.
    # A table with no row in this set is not written: a write of nothing replaces no partition
    # (``overwrite`` is dynamic) and costs a Spark job with its commit all the same (a third of
    # a second each; most sets hold no transaction, many no group). The readers take a table's
    # absent directory as no rows (:mod:`analyzer.spark.parquet`); ``captures`` is always written.
    kinds = {"captures": "capture", **{name: kind for kind, name in INSIGHT_NAMES.items()}}
    # Each is written by as few tasks as its rows need (SMALL_TABLE_ROWS a task): one file for
    # most, where the events' partitioning (two per core, or one per owner of a piece cut into
    # splits) made a file per partition, most of them a few rows, and a task and a commit each.
    kept = a.events.where(F.col("kind").isin(list(kinds.values()))).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        # (kept once, before the concurrent writes read it; the rows of each kind it holds)
        held = {r["kind"]: r["count"] for r in kept.groupBy("kind").count().collect()}
        kinds = {name: kind for name, kind in kinds.items() if name == "captures" or kind in held}

        def write_small(name: str) -> None:
            kind = kinds[name]
            df = kept.where(F.col("kind") == kind).select(f"{kind}.*")
            (
                df.coalesce(max(1, -(-held.get(kind, 0) // SMALL_TABLE_ROWS)))
                .withColumn("capture_set", F.lit(capture_set))
                .write.mode(mode)
                .option("compression", "zstd")
                .option("partitionOverwriteMode", "dynamic")
                .partitionBy("capture_set")
                .parquet(f"{base}/{name}")
            )

        with ThreadPoolExecutor(max_workers=4, thread_name_prefix="kafka-analyzer-write") as pool:
            list(pool.map(write_small, kinds))  # (raises the first write's error)
        paths.update({name: f"{base}/{name}" for name in kinds})
    finally:
        kept.unpersist()
    return paths


# the insight tables: export object type (``kind``) -> the Analysis attribute and the directory
# :func:`write_tables` writes it to
INSIGHT_NAMES = {
    "generation": "generations",
    "rebalance": "rebalances",
    "lag": "lag",
    "consumer_status": "consumer_status",
    "group_health": "group_health",
    "producer": "producers",
    "retry": "retries",
    "transaction": "transactions",
    "held_back": "held_back",
    "e2e": "e2e",
    "client": "clients",
    "edge": "edges",
}
