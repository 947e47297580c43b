"""The rows of the Spark tables: their schemas (:data:`EXCHANGE`, :data:`ISSUE`,
:data:`CONNECTION`, :data:`CAPTURE`, :data:`RECORD`, one :data:`EVENT` per row tagged with its
kind), each row as a named tuple of the schema's fields (:class:`ExchangeRow`,
:class:`IssueRow`, :class:`ConnectionRow`, :class:`RecordRow`, :class:`CaptureRow`), and the rows
of the pipeline's events (:func:`exchange_row`, :func:`record_rows`, :func:`issue_row`,
:func:`connection_row`): what a piece analysed whole (:mod:`analyzer.spark.source`) and the
owners of a piece cut into splits (:mod:`analyzer.spark.stitch`) both make.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)


def _struct(*fields: tuple) -> StructType:
    return StructType([StructField(name, t, True) for name, t in fields])


_STR = StringType()
_LONG = LongType()
_INT = IntegerType()
_DOUBLE = DoubleType()

EXCHANGE = _struct(
    ("capture", _STR),  # the file's URI, as Hadoop lists it (file:/..., hdfs://...)
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
    # with bodies=True (the Parquet output): the export's JSON (no spans) of the request and the
    # response (null when missing), and of the exchange's issues (the export's "issues" list)
    ("request", _STR),
    ("response", _STR),
    ("issue_details", _STR),
    # the export's "topics": topic -> partitions named (a map; ``topics`` holds its keys)
    ("topic_partitions", MapType(_STR, ArrayType(_INT))),
    # with bodies=True, for ``check --parquet``: the exchange's place among the piece's exchange
    # and issue events (1-based, the order one run emits them), and the exchange itself as plain
    # data (analyzer.export.exchange_state: decoded trees, issues, the connection as it was);
    # (the stitching of a piece analysed in splits writes those of one run)
    ("seq", _LONG),
    ("state", _STR),
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
    ("roles_known", BooleanType()),  # the connection's client and broker were known then
    ("seq", _LONG),  # the event's place in the piece (see the exchanges' seq)
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
    # the connection's end among the piece's events (see the exchanges' seq): check --parquet
    # replays it there (the clients' connection churn)
    ("seq", _LONG),
)

CAPTURE = _struct(
    ("capture", _STR),  # the piece: its first file ("(+N more)" for rotated files chained)
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
    ("files", ArrayType(_STR)),  # the files of the piece, in the order they were analysed
    # for ``check --parquet``: why nothing can be concluded from the piece (unusable, no Kafka
    # exchange), the CLI's exit code for it, whether record bodies were decoded (``--records``)
    # and the display filter the rows were limited to (``-Y``)
    ("inconclusive", _STR),
    ("exit_code", _INT),
    ("records_bodies", BooleanType()),
    ("where_filter", _STR),
)

RECORD = _struct(
    ("capture", _STR),
    ("ts", _DOUBLE),  # of the exchange that carried the record
    ("connection", _LONG),
    ("correlation_id", _INT),
    ("direction", _STR),  # "produce" (in a Produce request) | "fetch" (Fetch/ShareFetch response)
    ("topic", _STR),
    ("partition", _INT),
    # the record fields of the export's record_list objects (analyzer.dissect.records_common.Record):
    # absolute offset (fetched batches; producers' batches start at 0), timestamp in ms
    # (LogAppendTime batches: the batch's for every record) and its ISO text, key, value,
    # headers in wire order (repeated keys kept; empty for magic 0/1), control, control_type
    ("offset", _LONG),
    ("timestamp", _LONG),
    ("timestamp_iso", _STR),
    ("key", BinaryType()),
    ("value", BinaryType()),
    ("headers", ArrayType(_struct(("key", _STR), ("value", BinaryType())))),
    ("control", BooleanType()),  # transaction markers
    ("control_type", _STR),  # "COMMIT", "ABORT"... for control records
    ("magic", _INT),  # of the record's batch (a compressed wrapper's for magic 0/1)
    ("codec", _STR),
)

# -- the consumer groups (analyzer.session.insights.GroupInsights): the export's objects of each
# type (analyzer/export/schema.json) and stats' group_health rows, each with its piece (capture)

_STRS = ArrayType(_STR)

GENERATION = _struct(
    ("capture", _STR),
    ("group", _STR),
    ("generation", _INT),
    ("time", _DOUBLE),
    ("protocol_type", _STR),
    ("protocol_name", _STR),
    ("leader", _STR),
    (
        "members",
        ArrayType(
            _struct(
                ("member_id", _STR),
                ("instance_id", _STR),
                ("client_id", _STR),
                ("client", _STR),
                ("assignment", MapType(_STR, ArrayType(_INT))),  # topic -> partitions
            )
        ),
    ),
    # "__consumer_offsets": read from a GroupMetadata record, no JoinGroup/SyncGroup of it seen
    # (the export has the key only then; null here otherwise)
    ("source", _STR),
)

REBALANCE = _struct(
    ("capture", _STR),
    ("group", _STR),
    ("protocol", _STR),  # "classic" | "consumer" (KIP-848)
    ("generation_before", _INT),
    ("generation_after", _INT),  # null: it did not finish in the capture
    ("start", _DOUBLE),
    ("end", _DOUBLE),
    ("duration_ms", _DOUBLE),
    ("join_ms", _DOUBLE),
    ("sync_ms", _DOUBLE),
    ("members_before", _STRS),
    ("members_after", _STRS),
    ("joined", _STRS),
    ("left", _STRS),
    ("evicted", _STRS),
    ("straggler", _STR),
    ("cause", _STR),
    ("pause_ms", _DOUBLE),  # the longest of its pauses
    (
        "pauses",
        ArrayType(
            _struct(
                ("topic", _STR),
                ("partition", _INT),
                ("member", _STR),
                ("last_fetch", _DOUBLE),
                ("first_fetch", _DOUBLE),
                ("pause_ms", _DOUBLE),
            )
        ),
    ),
)

LAG = _struct(
    ("capture", _STR),
    ("group", _STR),
    ("topic", _STR),
    ("partition", _INT),
    ("time", _DOUBLE),  # of the commit
    ("committed_offset", _LONG),
    ("end_offset", _LONG),
    ("lag", _LONG),
    ("lag_seconds", _DOUBLE),
    ("position", _LONG),
    ("position_lag", _LONG),
)

_STATUS_PARTITION = _struct(
    ("topic", _STR), ("partition", _INT), ("status", _STR), ("lag", _LONG), ("lag_seconds", _DOUBLE)
)

CONSUMER_STATUS = _struct(
    ("capture", _STR),
    ("group", _STR),
    ("time", _DOUBLE),  # the piece's end
    ("status", _STR),  # Burrow's: OK, WARN, ERR, STOP, STALL, REWIND, NOTFOUND
    ("complete", _DOUBLE),
    ("partitions", ArrayType(_STATUS_PARTITION)),
    ("coverage", _STR),
)

GROUP_HEALTH = _struct(
    ("capture", _STR),
    ("group_id", _STR),
    ("rebalances", _LONG),
    ("longest_rebalance_ms", _DOUBLE),
    ("rebalancing_ms", _DOUBLE),
    ("longest_pause_ms", _DOUBLE),
    ("paused_ms", _DOUBLE),
    ("status", _STR),
    ("max_lag", _LONG),
    ("max_lag_s", _DOUBLE),
    ("coverage", _STR),
)

GROUP_TABLES = {
    "generation": GENERATION,
    "rebalance": REBALANCE,
    "lag": LAG,
    "consumer_status": CONSUMER_STATUS,
    "group_health": GROUP_HEALTH,
}

# -- the producers (ProducerInsights) and the clients (ClientTracker): the export's objects of each
# type, each with its piece. Nested values are Spark structs, arrays and maps (as the groups'
# members and assignments): Parquet keeps them typed, so SQL reaches into them (``later.time``,
# ``explode(removed_versions)``, ``codecs['gzip']``) with no JSON parsing, and pyarrow reads
# them back as the export's dicts and lists.

_ATTEMPT = _struct(("connection", _STR), ("correlation_id", _INT), ("time", _DOUBLE))
_LATENCY = (
    ("count", _LONG),
    ("p50_ms", _DOUBLE),
    ("p95_ms", _DOUBLE),
    ("p99_ms", _DOUBLE),
    ("max_ms", _DOUBLE),
)
_APIS = ArrayType(_struct(("api_key", _INT), ("api_name", _STR), ("version", _INT), ("count", _LONG)))

PRODUCER = _struct(
    ("capture", _STR),
    ("client_id", _STR),
    ("client", _STR),
    ("producer_id", _LONG),  # -1: not idempotent
    ("producer_epoch", _INT),
    ("transactional_id", _STR),
    ("idempotent", BooleanType()),
    ("first", _DOUBLE),
    ("last", _DOUBLE),
    ("requests", _LONG),
    ("batches", _LONG),
    ("records", _LONG),
    ("bytes", _LONG),
    ("retried_records", _LONG),
    ("failed_records", _LONG),
    ("unanswered_records", _LONG),
    ("duplicates_written", _LONG),
    ("sequence_gaps", _LONG),
    ("epoch_bumps", _LONG),
    ("fenced", _LONG),
    ("records_per_batch", _DOUBLE),
    ("bytes_per_batch", _DOUBLE),
    ("linger_ms", _DOUBLE),
    ("requests_per_s", _DOUBLE),
    ("codecs", MapType(_STR, _LONG)),  # codec -> batches
    ("compression_ratio", _DOUBLE),
    ("compression_batches", _LONG),
    ("under_batched", BooleanType()),
)

RETRY = _struct(
    ("capture", _STR),
    ("client_id", _STR),
    ("client", _STR),
    ("producer_id", _LONG),
    ("topic", _STR),
    ("partition", _INT),
    ("first", _ATTEMPT),  # the batch's first attempt: connection "client -> broker", request time
    ("later", _ATTEMPT),  # this attempt
    ("attempt", _INT),
    ("error", _STR),  # what the attempt before got (an error name, or "no answer")
    ("records", _LONG),
)

TRANSACTION = _struct(
    ("capture", _STR),
    ("transactional_id", _STR),
    ("producer_id", _LONG),
    ("producer_epoch", _INT),
    ("client", _STR),
    ("start", _DOUBLE),
    ("end", _DOUBLE),
    ("duration_ms", _DOUBLE),
    ("outcome", _STR),  # commit | abort | hanging | open
    ("error", _STR),
    ("timeout_ms", _LONG),
    ("partitions", ArrayType(_struct(("topic", _STR), ("partition", _INT)))),
    ("records", _LONG),
    (
        "offsets_committed",
        ArrayType(_struct(("group", _STR), ("topic", _STR), ("partition", _INT), ("offset", _LONG))),
    ),
)

HELD_BACK = _struct(
    ("capture", _STR),
    ("client_id", _STR),
    ("client", _STR),
    ("topic", _STR),
    ("partition", _INT),
    ("fetches", _LONG),
    ("max_held_back", _LONG),
    ("last_held_back", _LONG),
    ("growing", BooleanType()),
)

E2E = _struct(
    ("capture", _STR),
    ("topic", _STR),
    ("partition", _INT),
    ("producer_client", _STR),  # "client_id@host"
    ("consumer_client", _STR),
    ("group", _STR),
    *_LATENCY,
    ("timestamp", _struct(*_LATENCY)),  # from the records' CreateTime; null when none plausible
)

CLIENT = _struct(
    ("capture", _STR),
    ("client_id", _STR),
    ("client", _STR),  # the host
    ("software", _STR),
    ("first", _DOUBLE),
    ("last", _DOUBLE),
    ("connections", _LONG),
    ("apis", _APIS),
    ("target", _STR),
    (
        "removed_versions",
        ArrayType(_struct(("api_key", _INT), ("api_name", _STR), ("version", _INT), ("accepted", _STR))),
    ),
    ("old_formats", _LONG),
    ("ready", BooleanType()),
    ("metadata_requests", _LONG),
    ("metadata_rate", _DOUBLE),
    ("metadata_all_topics", _DOUBLE),
    ("metadata_loops", ArrayType(_struct(("topic", _STR), ("error", _STR), ("answers", _LONG)))),
    ("connections_per_min", _DOUBLE),
    ("median_lifetime_s", _DOUBLE),
    ("fast_reconnects", _LONG),
    ("empty_connections", _LONG),
    ("idle_connections", _LONG),
    ("throttle_ms", _LONG),
    ("throttle_by_api", MapType(_STR, _LONG)),  # API name -> ms
    ("large_messages", _LONG),
    ("largest_bytes", _LONG),
    ("findings", _STRS),
)

EDGE = _struct(
    ("capture", _STR),
    ("kind", _STR),  # produce | fetch
    ("from", _STR),  # a producer's client id, or a topic
    ("to", _STR),  # a topic, or "group G" (a consumer's client id without a group)
    ("records", _LONG),
    ("bytes", _LONG),
)

PRODUCER_TABLES = {
    "producer": PRODUCER,
    "retry": RETRY,
    "transaction": TRANSACTION,
    "held_back": HELD_BACK,
    "e2e": E2E,
}
CLIENT_TABLES = {"client": CLIENT, "edge": EDGE}
INSIGHT_TABLES = {**GROUP_TABLES, **PRODUCER_TABLES, **CLIENT_TABLES}

TABLES = {
    "exchange": EXCHANGE,
    "issue": ISSUE,
    "connection": CONNECTION,
    "capture": CAPTURE,
    "record": RECORD,
    **INSIGHT_TABLES,
}
# one row per event: its kind, and the struct of that kind (the others null)
EVENT = StructType([StructField("kind", _STR, False)] + [StructField(k, t, True) for k, t in TABLES.items()])
_SLOT = {k: i + 1 for i, k in enumerate(TABLES)}
_WIDTH = len(TABLES) + 1


class ExchangeRow(NamedTuple):
    """A row of :data:`EXCHANGE` (its fields, in order)."""

    capture: str
    ts: float
    connection: int
    client: str | None
    broker: str | None
    client_id: str | None
    api_key: int | None
    api_name: str
    api_version: int | None
    correlation_id: int | None
    topics: list[str]
    request_bytes: int | None
    response_bytes: int | None
    latency_ms: float | None
    errors: list[str]
    issues: list[str]
    severity: str | None
    record_counts: list[tuple[str, int, int]]
    json: str | None
    request: str | None
    response: str | None
    issue_details: str | None
    topic_partitions: dict[str, list[int]]
    seq: int | None
    state: str | None


class IssueRow(NamedTuple):
    """A row of :data:`ISSUE`."""

    capture: str
    ts: float | None
    connection: int | None
    client: str | None
    broker: str | None
    direction: str | None
    type: str
    severity: str
    code: str
    message: str
    offset: int | None
    where: str | None
    roles_known: bool
    seq: int | None


class ConnectionRow(NamedTuple):
    """A row of :data:`CONNECTION`."""

    capture: str
    connection: int
    client: str | None
    broker: str | None
    roles_known: bool
    syn_seen: bool
    first_ts: float
    last_ts: float
    requests: int
    responses: int
    bytes_to_broker: int
    bytes_to_client: int
    gaps: int
    closed: str | None
    not_kafka: str | None
    seq: int | None = None


class RecordRow(NamedTuple):
    """A row of :data:`RECORD`."""

    capture: str
    ts: float
    connection: int
    correlation_id: int | None
    direction: str
    topic: str | None
    partition: int | None
    offset: int | None
    timestamp: int | None
    timestamp_iso: str | None
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    control: bool
    control_type: str | None
    magic: int | None
    codec: str | None


class CaptureRow(NamedTuple):
    """A row of :data:`CAPTURE`."""

    capture: str
    format: str | None
    compression: str | None
    size: int | None
    packets: int
    tcp_connections: int
    exchanges: int
    issues: int
    first_ts: float | None
    last_ts: float | None
    damaged: bool
    files: list[str]
    inconclusive: str | None
    exit_code: int | None
    records_bodies: bool | None
    where_filter: str | None


ROWS: dict[str, type[tuple]] = {
    "exchange": ExchangeRow,
    "issue": IssueRow,
    "connection": ConnectionRow,
    "capture": CaptureRow,
    "record": RecordRow,
}
for _kind, _row in ROWS.items():  # the named tuples are the schemas' fields, in order
    assert _row._fields == tuple(TABLES[_kind].names), _kind  # type: ignore[attr-defined]


def row_of(ev: tuple) -> tuple:
    """The row of an :func:`event`."""
    return ev[_SLOT[ev[0]]]


def event(kind: str, row: tuple) -> tuple:
    """The :data:`EVENT` of a row of ``kind``."""
    out: list[Any] = [None] * _WIDTH
    out[0] = kind
    out[_SLOT[kind]] = row
    return tuple(out)


def exchange_row(
    capture: str,
    ex,
    topic_ids: dict,
    with_json: bool,
    records: bool = False,
    bodies: bool = False,
    seq: int | None = None,
    knowledge=None,
) -> ExchangeRow:
    """An exchanges row; with ``bodies`` and ``knowledge`` (the run's, as it is when the exchange
    is emitted), its ``seq`` and ``state`` for ``check --parquet``."""
    from analyzer.dissect import schema
    from analyzer.dissect.constants import ApiKey
    from analyzer.export.jsonout import endpoint_pair
    from analyzer.session.records import FETCH_APIS
    from analyzer.session.stats import error_names, record_totals

    info = ex.conn
    ends = endpoint_pair(info)
    key = ex.api_key
    req, resp = ex.request, ex.response
    lat = ex.latency
    issues = ex.all_issues()
    worst = max((i.severity for i in issues), default=None)
    counts: dict = {}
    if key == ApiKey.PRODUCE and req is not None:
        counts = record_totals(req, topic_ids)
    elif key in FETCH_APIS and resp is not None:
        counts = record_totals(resp, topic_ids)
    if key is None:
        name = "(unknown)"
    else:
        name = schema.api_name(key) or f"Api{key}"
    js = rq = rs = det = state = None
    if bodies and knowledge is not None:
        import orjson

        from analyzer.export.exchange_state import exchange_state

        sw = knowledge.clients.get(ex.client_id) if ex.client_id is not None else None
        state = orjson.dumps(exchange_state(ex, sw), option=orjson.OPT_NON_STR_KEYS).decode()
    if with_json or bodies:
        import orjson

        from analyzer.export.jsonout import exchange_json

        d = exchange_json(ex, False, records)
        if with_json:
            js = orjson.dumps(d, option=orjson.OPT_NON_STR_KEYS).decode()
        if bodies:
            rq, rs, det = (
                orjson.dumps(d[k], option=orjson.OPT_NON_STR_KEYS).decode() if d[k] is not None else None
                for k in ("request", "response", "issues")
            )
    return ExchangeRow(
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
        rq,
        rs,
        det,
        ex.topics,
        None if state is None else seq,
        state,
    )


def record_rows(capture: str, ex, topic_ids: dict) -> Iterator[RecordRow]:
    from analyzer.dissect.constants import ApiKey
    from analyzer.session.records import FETCH_APIS, iter_records

    key = ex.api_key
    if key == ApiKey.PRODUCE and ex.request is not None:
        msg, direction = ex.request, "produce"
    elif key in FETCH_APIS and ex.response is not None:
        msg, direction = ex.response, "fetch"
    else:
        return
    for r in iter_records(msg, topic_ids):
        yield RecordRow(
            capture,
            ex.ts,
            ex.conn.id,
            ex.correlation_id,
            direction,
            r.topic,
            r.partition,
            r.offset,
            r.timestamp,
            r.timestamp_iso,
            _binary(r.key),
            _binary(r.value),
            [(k, _binary(v)) for k, v in r.headers],
            r.control,
            r.control_type,
            r.magic,
            r.codec,
        )


def _binary(v):
    if v is None or type(v) is bytes:
        return v
    return bytes(v)


def issue_row(capture: str, ev, seq: int | None = None) -> IssueRow:
    from analyzer.export.jsonout import endpoint_pair, stream_event_json

    d = stream_event_json(ev)
    from analyzer.events import ConnIssue

    conn = ev.conn if type(ev) is ConnIssue else None
    ends = endpoint_pair(conn) if conn is not None else {"client": None, "broker": None}
    i = ev.issue
    return IssueRow(
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
        conn is not None and conn.client_direction is not None,
        seq,
    )


def connection_row(capture: str, info, seq: int | None = None) -> ConnectionRow:
    from analyzer.export.jsonout import endpoint_pair

    ends = endpoint_pair(info)
    known = info.client_direction is not None
    cd = info.client_direction or 0
    return ConnectionRow(
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
        seq,
    )


def insight_rows(capture: str, insights, now: float | None) -> list[tuple]:
    """The :data:`EVENT` rows of a piece's insights: ``insights`` an
    :class:`~analyzer.session.insights.Insights` that saw the whole piece in capture order (its
    exchanges and connection ends), ``now`` the piece's end (its last packet's time; None
    without packets): the export's objects of every insight type and stats' group_health rows,
    as ``export`` and ``stats`` give them the capture's."""
    out = []
    for obj in insights.objects(now):
        kind = obj["type"]
        out.append(event(kind, _conform(TABLES[kind], {**obj, "capture": capture})))
    for row in insights.groups.table(now):
        out.append(event("group_health", _conform(GROUP_HEALTH, {**row, "capture": capture})))
    return out


def _conform(t: DataType, v: Any) -> Any:
    """A plain value (the export's JSON data) as Spark takes it for type ``t``: structs as tuples
    of their fields in order, numbers as the column's (an int in a double column is a float)."""
    if v is None:
        return None
    if isinstance(t, StructType):
        return tuple(_conform(f.dataType, v.get(f.name)) for f in t.fields)
    if isinstance(t, ArrayType):
        return [_conform(t.elementType, x) for x in v]
    if isinstance(t, MapType):
        return {k: _conform(t.valueType, x) for k, x in v.items()}
    if isinstance(t, DoubleType):
        return float(v)
    if isinstance(t, LongType | IntegerType):
        return int(v)
    return v
