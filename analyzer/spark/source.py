"""Capture files -> Spark DataFrames: the pipeline runs on the executors, one file at a time.

:func:`analyze` lists the capture files (local paths, globs, directories or any Hadoop URI:
``hdfs://``, ``s3a://``...) with Spark's ``binaryFile`` source, and each executor streams the
content of its files through :class:`~analyzer.capture.files.CaptureFile` (a file object over
the bytes Spark read: no path has to exist on the executors) and :func:`~analyzer.pipeline.
analyze_file`, in ``mapPartitions``. One pass over the files makes one DataFrame of tagged
events (``events``, persisted by default); the tables are views of it:

* ``exchanges``: one row per request/response pair (:data:`EXCHANGE`);
* ``issues``: connection- and capture-level issues: gaps, resynchronisations, truncation,
  damaged or unknown files (:data:`ISSUE`); an exchange's own issues are in its ``issues``;
* ``connections``: one row per TCP connection (:data:`CONNECTION`);
* ``captures``: one row per file (:data:`CAPTURE`);
* ``records`` (``records=True`` only): every record a producer sent or a consumer fetched
  (:data:`RECORD`).

Spark's ``binaryFile`` source holds each file in one value, so a file must stay under 2 GiB;
``read="local"`` lifts that limit when every executor sees the files at the same local path
(one machine, NFS...): executors then open and stream the files themselves.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Iterable, Iterator
from functools import partial

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

PRODUCE, FETCH, SHARE_FETCH = 0, 1, 78


def _struct(*fields: tuple) -> StructType:
    return StructType([StructField(name, t, True) for name, t in fields])


_STR = StringType()
_LONG = LongType()
_INT = IntegerType()
_DOUBLE = DoubleType()

EXCHANGE = _struct(
    ("capture", _STR),  # the file's URI, as Spark lists it (file:/..., hdfs://...)
    ("ts", _DOUBLE),  # seconds since the epoch: first packet of the request (else response)
    ("connection", _LONG),  # connection id, unique within the capture
    ("client", _STR),  # endpoint "ip:port" ("[ip]:port" for IPv6)
    ("broker", _STR),
    ("client_id", _STR),
    ("api_key", _INT),
    ("api_name", _STR),  # "Produce"...; "Api<key>" for an unknown key, "(unknown)" without one
    ("api_version", _INT),
    ("correlation_id", _INT),
    ("topics", ArrayType(_STR)),
    ("request_bytes", _LONG),  # frame sizes with their 4-byte size prefix; null when missing
    ("response_bytes", _LONG),
    ("latency_ms", _DOUBLE),  # response first packet - request last packet; null if unanswered
    ("errors", ArrayType(_STR)),  # names of the non-zero error codes of the response
    ("issues", ArrayType(_STR)),  # issue codes of the exchange and its messages
    ("severity", _STR),  # worst issue: "note" | "warning" | "error"; null without issues
    # records and bytes per topic carried by a Produce request / Fetch response (batch headers)
    (
        "record_counts",
        ArrayType(_struct(("topic", _STR), ("records", _LONG), ("bytes", _LONG))),
    ),
    ("json", _STR),  # the exchange as the export writes it (no spans), with json=True only
)

ISSUE = _struct(
    ("capture", _STR),
    ("ts", _DOUBLE),
    ("connection", _LONG),  # null for capture-level issues
    ("client", _STR),
    ("broker", _STR),
    ("direction", _STR),  # "client" | "broker" (who sent the bytes) or null
    ("type", _STR),  # "gap" | "issue", as in the export
    ("severity", _STR),
    ("code", _STR),  # capture.truncated, stream.gap, framing.resync...
    ("message", _STR),
    ("offset", _LONG),
    ("where", _STR),
)

CONNECTION = _struct(
    ("capture", _STR),
    ("connection", _LONG),
    ("client", _STR),
    ("broker", _STR),
    ("roles_known", BooleanType()),
    ("syn_seen", BooleanType()),
    ("first_ts", _DOUBLE),
    ("last_ts", _DOUBLE),
    ("requests", _LONG),  # frames client -> broker
    ("responses", _LONG),
    ("bytes_to_broker", _LONG),
    ("bytes_to_client", _LONG),
    ("gaps", _LONG),
    ("closed", _STR),
    ("not_kafka", _STR),
)

CAPTURE = _struct(
    ("capture", _STR),
    ("format", _STR),  # pcap | pcapng | null (not a capture)
    ("compression", _STR),  # gzip | zstd | null
    ("size", _LONG),  # bytes of the file
    ("packets", _LONG),
    ("tcp_connections", _LONG),
    ("exchanges", _LONG),
    ("issues", _LONG),  # rows of this capture in the issues table
    ("first_ts", _DOUBLE),
    ("last_ts", _DOUBLE),
    # an error-level capture issue: truncated, corrupt, not a capture, no TCP, unreadable
    ("damaged", BooleanType()),
)

RECORD = _struct(
    ("capture", _STR),
    ("ts", _DOUBLE),  # of the exchange that carried the record
    ("connection", _LONG),
    ("correlation_id", _INT),
    ("direction", _STR),  # "produce" (in a Produce request) | "fetch" (Fetch/ShareFetch response)
    ("topic", _STR),
    ("partition", _INT),
    # base offset + delta: absolute in fetched batches; producers send base offset 0
    ("offset", _LONG),
    ("key", BinaryType()),
    ("value", BinaryType()),
    # header keys -> values; Kafka allows repeated keys, of which the last one wins here
    ("headers", MapType(_STR, BinaryType(), True)),
    ("timestamp", _LONG),  # milliseconds since the epoch
    ("codec", _STR),
    ("control", BooleanType()),  # transaction markers
)

TABLES = {
    "exchange": EXCHANGE,
    "issue": ISSUE,
    "connection": CONNECTION,
    "capture": CAPTURE,
    "record": RECORD,
}
# one row per event: its kind, and the struct of that kind (the others null)
EVENT = StructType([StructField("kind", _STR, False)] + [StructField(k, t, True) for k, t in TABLES.items()])
_SLOT = {k: i + 1 for i, k in enumerate(TABLES)}
_WIDTH = len(TABLES) + 1


def _event(kind: str, row: tuple) -> tuple:
    out: list = [None] * _WIDTH
    out[0] = kind
    out[_SLOT[kind]] = row
    return tuple(out)


# -- executor side ---------------------------------------------------------------------------------


class _BytesReader:
    """A read-only file object over bytes Spark handed us, without copying them (io.BytesIO
    copies a bytearray)."""

    def __init__(self, data, name: str):
        self.mv = memoryview(data)
        self.pos = 0
        self.name = name

    def read(self, n: int = -1) -> bytes:
        end = len(self.mv) if n is None or n < 0 else min(len(self.mv), self.pos + n)
        out = bytes(self.mv[self.pos : end])
        self.pos = end
        return out


def local_path(uri: str) -> str:
    """The local file path of a ``file:`` URI (or a plain path)."""
    if uri.startswith("file://"):
        return uri[len("file://") :]
    if uri.startswith("file:"):
        return uri[len("file:") :]
    if "://" in uri:
        raise ValueError(f"not a local file: {uri} (read='local' needs files every executor can open)")
    return uri


def _exchange_row(capture: str, ex, topic_ids: dict, with_json: bool) -> tuple:
    from analyzer.dissect import schema
    from analyzer.export.jsonout import endpoint_pair
    from analyzer.session.stats import error_names, record_totals

    info = ex.conn
    ends = endpoint_pair(info)
    key = ex.api_key
    req, resp = ex.request, ex.response
    lat = ex.latency
    issues = ex.all_issues()
    worst = max((i.severity for i in issues), default=None)
    counts: dict = {}
    if key == PRODUCE and req is not None:
        counts = record_totals(req.body, topic_ids)
    elif key in (FETCH, SHARE_FETCH) and resp is not None:
        counts = record_totals(resp.body, topic_ids)
    if key is None:
        name = "(unknown)"
    else:
        name = schema.api_name(key) or f"Api{key}"
    js = None
    if with_json:
        import orjson

        from analyzer.export.jsonout import exchange_json

        js = orjson.dumps(exchange_json(ex, False), option=orjson.OPT_NON_STR_KEYS).decode()
    return (
        capture,
        ex.ts,
        info.id,
        ends["client"],
        ends["broker"],
        ex.client_id,
        key,
        name,
        ex.api_version,
        ex.correlation_id,
        list(ex.topics),
        None if req is None else req.frame.length + 4,
        None if resp is None else resp.frame.length + 4,
        None if lat is None else round(lat * 1000.0, 3),
        error_names(resp),
        [i.code for i in issues],
        None if worst is None else str(worst),
        [(t, n, b) for t, (n, b) in counts.items()],
        js,
    )


def _record_rows(capture: str, ex, topic_ids: dict) -> Iterator[tuple]:
    from analyzer.session.records import iter_records

    key = ex.api_key
    if key == PRODUCE and ex.request is not None:
        body, direction = ex.request.body, "produce"
    elif key in (FETCH, SHARE_FETCH) and ex.response is not None:
        body, direction = ex.response.body, "fetch"
    else:
        return
    for r in iter_records(body, topic_ids):
        headers = {("" if k is None else k): _binary(v) for k, v in r.headers}
        yield (
            capture,
            ex.ts,
            ex.conn.id,
            ex.correlation_id,
            direction,
            r.topic,
            r.partition,
            r.offset,
            _binary(r.key),
            _binary(r.value),
            headers,
            r.timestamp,
            r.codec,
            r.control,
        )


def _binary(v):
    if v is None or type(v) is bytes:
        return v
    return bytes(v)


def _issue_row(capture: str, ev) -> tuple:
    from analyzer.export.jsonout import endpoint_pair, stream_event_json

    d = stream_event_json(ev)
    from analyzer.events import ConnIssue

    conn = ev.conn if type(ev) is ConnIssue else None
    ends = endpoint_pair(conn) if conn is not None else {"client": None, "broker": None}
    i = ev.issue
    return (
        capture,
        ev.ts,
        d["connection"],
        ends["client"],
        ends["broker"],
        d["direction"],
        d["type"],
        str(i.severity),
        i.code,
        i.message,
        i.offset,
        i.where,
    )


def _connection_row(capture: str, info) -> tuple:
    from analyzer.export.jsonout import endpoint_pair

    ends = endpoint_pair(info)
    known = info.client_direction is not None
    cd = info.client_direction or 0
    return (
        capture,
        info.id,
        ends["client"],
        ends["broker"],
        known,
        info.syn,
        info.ts_first,
        info.ts_last,
        info.frames[cd],
        info.frames[1 - cd],
        info.bytes[cd],
        info.bytes[1 - cd],
        sum(info.gaps),
        info.closed,
        info.not_kafka,
    )


def analyze_one(
    capture: str,
    source,
    size: int | None,
    *,
    records: bool = False,
    with_json: bool = False,
    ports: Iterable[int] = (),
) -> Iterator[tuple]:
    """Event rows (:data:`EVENT`) of one capture: ``source`` is a path or a binary file object.

    Never raises for a bad file: damage is an issue row; so is a failure of the analysis itself
    (``spark.analysis_failed``, with everything before it kept), so one file cannot fail a job.
    """
    from analyzer.capture.files import CaptureFile
    from analyzer.dissect.message import Options
    from analyzer.events import CaptureIssue, ConnectionEnd, ConnIssue
    from analyzer.model import Exchange, Severity
    from analyzer.pipeline import Analysis

    cap = CaptureFile(source)
    a = Analysis(cap, Options(records_bodies=records), ports=ports)
    topic_ids = a.knowledge.topic_ids
    issues = 0
    damaged = False
    try:
        for ev in a.events():
            t = type(ev)
            if t is Exchange:
                yield _event("exchange", _exchange_row(capture, ev, topic_ids, with_json))
                if records:
                    for r in _record_rows(capture, ev, topic_ids):
                        yield _event("record", r)
            elif t is ConnIssue or t is CaptureIssue:
                issues += 1
                if t is CaptureIssue and ev.issue.severity == Severity.ERROR:
                    damaged = True
                yield _event("issue", _issue_row(capture, ev))
            elif t is ConnectionEnd:
                yield _event("connection", _connection_row(capture, ev.conn))
    except Exception as exc:  # a bug must not fail the whole job: report it as the file's issue
        issues += 1
        damaged = True
        tb = traceback.format_exc(limit=-3).strip().replace("\n", " | ")
        yield _event(
            "issue",
            (
                capture,
                a.last_ts,
                None,
                None,
                None,
                None,
                "issue",
                "error",
                "spark.analysis_failed",
                f"analysis stopped after {a.packets} packets: {exc!r} ({tb})",
                None,
                None,
            ),
        )
    yield _event(
        "capture",
        (
            capture,
            cap.format,
            cap.compression,
            size,
            a.packets,
            a.connections,
            a.exchanges,
            issues,
            a.first_ts,
            a.last_ts if a.packets else None,
            damaged,
        ),
    )


def _unreadable(uri: str, size, message: str) -> Iterator[tuple]:
    yield _event(
        "issue",
        (uri, None, None, None, None, None, "issue", "error", "capture.unreadable", message, None, None),
    )
    yield _event("capture", (uri, None, None, size, 0, 0, 0, 1, None, None, True))


def _analyze_partition(rows: Iterable, read: str, records: bool, with_json: bool, ports) -> Iterator[tuple]:
    opts = {"records": records, "with_json": with_json, "ports": ports}
    for row in rows:
        uri, length = row[0], row[1]
        if read == "content":
            yield from analyze_one(uri, _BytesReader(row[2], uri), length, **opts)
            continue
        try:
            f = open(local_path(uri), "rb")  # noqa: SIM115 - closed below
        except (ValueError, OSError) as exc:
            yield from _unreadable(uri, length, f"cannot open {uri} on the executor: {exc}")
            continue
        with f:
            yield from analyze_one(uri, f, length, **opts)


# -- driver side -----------------------------------------------------------------------------------


class Analysis:
    """The DataFrames of one analysis (see the module docstring); ``records`` is None unless
    the analysis decoded record bodies. ``unpersist()`` frees the cached events."""

    def __init__(self, events: DataFrame, records: bool):
        self.events = events
        self.exchanges = self._kind("exchange")
        self.issues = self._kind("issue")
        self.connections = self._kind("connection")
        self.captures = self._kind("capture")
        self.records = self._kind("record") if records else None

    def _kind(self, kind: str) -> DataFrame:
        return self.events.where(F.col("kind") == kind).select(f"{kind}.*")

    def unpersist(self) -> None:
        self.events.unpersist()


def analyze(
    spark: SparkSession,
    paths: str | Iterable[str],
    *,
    records: bool = False,
    json: bool = False,
    ports: Iterable[int] = (),
    read: str = "content",
    partitions: int | None = None,
    recursive: bool = False,
    glob_filter: str | None = None,
    persist: bool = True,
) -> Analysis:
    """Analyse every capture file that ``paths`` name (paths, globs, directories, URIs).

    ``records``: decode record bodies and fill ``records``. ``json``: fill the exchanges'
    ``json`` column with the export's JSON of each exchange. ``ports``: broker ports, as
    ``--port``. ``read``: ``"content"`` (Spark reads the files; any Hadoop file system) or
    ``"local"`` (executors open the files themselves; no 2 GiB limit per file).
    ``partitions``: how many tasks (default: Spark's split of the files, about one task per
    core; with ``read="content"`` a different number reshuffles the file contents).
    ``recursive``/``glob_filter``: the ``binaryFile`` options ``recursiveFileLookup`` and
    ``pathGlobFilter``. ``persist``: keep the events (memory and disk) so that the tables do not
    analyse the files again.
    """
    if read not in ("content", "local"):
        raise ValueError(f"read must be 'content' or 'local', not {read!r}")
    paths = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    paths = [os.fspath(p) for p in paths]
    reader = spark.read.format("binaryFile")
    if recursive:
        reader = reader.option("recursiveFileLookup", "true")
    if glob_filter:
        reader = reader.option("pathGlobFilter", glob_filter)
    files = reader.load(paths)
    if read == "content":
        files = files.select("path", "length", "content")
        if partitions:
            files = files.repartition(partitions)
        rdd = files.rdd
    else:
        # the listing is small: spread it over the tasks, biggest files first
        listing = sorted(files.select("path", "length").collect(), key=lambda r: -r[1])
        sc = spark.sparkContext
        n = max(1, min(len(listing), partitions or sc.defaultParallelism))
        rdd = sc.parallelize([(r[0], r[1]) for r in listing], n)
    fn = partial(_analyze_partition, read=read, records=records, with_json=json, ports=tuple(ports))
    events = spark.createDataFrame(rdd.mapPartitions(fn), EVENT, verifySchema=False)
    if persist:
        events = events.persist(StorageLevel.MEMORY_AND_DISK)
    return Analysis(events, records)
