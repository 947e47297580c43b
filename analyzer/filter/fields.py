"""What a filter can name: the exchange-level fields, the records fields and every decoded field
of every API and version in the protocol table (snake_case paths, as the export writes them).

A decoded path leaves out array elements: ``metadata.topics.name`` is the ``name`` of any
element of the Metadata ``topics`` array (request or response), ``produce.request.acks`` names
one side explicitly. Without an API prefix a path matches a field of that name (or dotted
suffix) in any API: ``throttle_time_ms``, ``partitions.error_code``.

The other way round, :func:`field_expressions` gives the filters that select a field of a decoded
tree (the TUI's ``f``), from these same lists: a front end names no field itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache

from analyzer.dissect.decoder import snake
from analyzer.dissect.protocol_table import API_NAMES, MESSAGES
from analyzer.filter.syntax import literal
from analyzer.filter.wireshark import ALIASES
from analyzer.model import Field

# value types a comparison understands
INT, FLOAT, STRING, BYTES, BOOL, ADDRESS, DURATION = (
    "int",
    "float",
    "string",
    "bytes",
    "bool",
    "address",
    "duration",
)
API, ERROR, SEVERITY, STRUCT, RECORDS = "api", "error", "severity", "struct", "records"

SYNTAX_HELP = """\
Display filters (-Y EXPR; check --assert EXPR; the TUI's / bar; Spark's where=EXPR):
  comparisons   FIELD == != < <= > >= VALUE, FIELD contains "text", FIELD matches "regex",
                FIELD in {A, B, C}; a bare FIELD tests that it is present (true, for booleans)
  logic         and or not (also && || !), parentheses; not binds tightest, then and, then or
  several       a field with several values matches when ANY matches; all(FIELD OP VALUE)
                needs every value (and at least one); a != b is not (a == b)
  values        "strings" (\\" \\n \\t \\xHH \\uHHHH), bare words (Produce, gzip, warning,
                NOT_LEADER_OR_FOLLOWER), numbers 42 -1 0x1f 1.5, durations 50ms 2s 1.5s 250us,
                addresses 10.0.0.5 10.0.0.5:9092 10.0.0.0/8 [::1]:9092, true false
  example       api == Produce and latency > 5ms and not error"""

_PRIMITIVE = {
    "int8": INT,
    "int16": INT,
    "uint16": INT,
    "int32": INT,
    "uint32": INT,
    "int64": INT,
    "float64": FLOAT,
    "bool": BOOL,
    "string": STRING,
    "bytes": BYTES,
    "uuid": STRING,
    "records": RECORDS,
}


@dataclass(frozen=True, slots=True)
class Spec:
    """An exchange-level or records field: its value type and what it means."""

    name: str
    type: str
    help: str
    example: str
    many: bool = False  # several values per exchange (any/all apply)
    records: bool = False  # needs the records fields of Produce/Fetch...
    bodies: bool = False  # needs record bodies (keys, values, headers) decoded
    # the decoded fields whose values this field compares, as ``PARENT.NAME``: the field NAME of
    # a message header (PARENT: RequestHeader, ResponseHeader) or, under a records field, of a
    # PARENT of that type or name (record, message, header, record_batch); a PARENT entry's own
    # summary (its value) counts too (record_batch.codec: a batch's codec). What a front end
    # offers as the filter for a field selected in a tree (:func:`field_expressions`).
    tree: tuple[str, ...] = ()


EXCHANGE_FIELDS: dict[str, Spec] = {
    s.name: s
    for s in (
        Spec(
            "api",
            API,
            "API name (any case) or key number",
            "api == Produce; api in {Fetch, 3}",
            tree=("RequestHeader.request_api_key",),
        ),
        Spec(
            "version",
            INT,
            "API version of the request",
            "version >= 9",
            tree=("RequestHeader.request_api_version",),
        ),
        Spec(
            "corr",
            INT,
            "correlation id",
            "corr == 42",
            tree=("RequestHeader.correlation_id", "ResponseHeader.correlation_id"),
        ),
        Spec(
            "client_id",
            STRING,
            "client id of the request header",
            'client_id contains "consumer"',
            tree=("RequestHeader.client_id",),
        ),
        Spec(
            "client",
            ADDRESS,
            "client address (ip, ip:port, CIDR)",
            "client == 10.0.0.5; client == 10.0.0.0/8",
        ),
        Spec("broker", ADDRESS, "broker address (ip, ip:port, CIDR)", "broker == 10.0.0.7:9092"),
        Spec("conn", INT, "connection id (as in stats' connections table)", "conn == 3"),
        Spec("latency", DURATION, "response time; bare numbers are ms", "latency > 50ms; latency > 1.5s"),
        Spec("latency_ms", DURATION, "the same as latency", "latency_ms > 50"),
        Spec(
            "error",
            ERROR,
            "non-zero Kafka error codes of the response (names from the error table, or numbers)",
            "error == NOT_LEADER_OR_FOLLOWER; error",
            many=True,
        ),
        Spec(
            "topic",
            STRING,
            "topics the exchange names (names for topic ids when known)",
            'topic == "orders"',
            True,
        ),
        Spec("partition", INT, "partition indexes the exchange names", "partition == 0", True),
        Spec(
            "request_bytes",
            INT,
            "request frame size on the wire (with the size prefix)",
            "request_bytes > 1000",
        ),
        Spec("response_bytes", INT, "response frame size on the wire", "response_bytes > 1000000"),
        Spec(
            "issue",
            STRING,
            "issue codes of the exchange (decoder, records, pairing)",
            'issue contains "crc"',
            True,
        ),
        Spec("severity", SEVERITY, "worst issue severity: note < warning < error", "severity >= warning"),
        Spec(
            "software",
            STRING,
            "client software from ApiVersions v3+ (name version)",
            'software contains "librdkafka"',
        ),
        Spec("group", STRING, "consumer group ids the request names", 'group == "billing"', True),
        Spec(
            "group.id",
            STRING,
            "group ids of any group API (as group), and a FindCoordinator's group keys",
            'group.id == "billing"',
            True,
        ),
        Spec(
            "group.member_id",
            STRING,
            "the member a group exchange is about: the request's member ids (LeaveGroup's members "
            "too), the id a JoinGroup or ConsumerGroupHeartbeat answer gives",
            'group.member_id contains "consumer-1"',
            True,
        ),
        Spec(
            "group.instance_id",
            STRING,
            "static membership: the group.instance.id a group request names",
            'group.instance_id == "pod-3"',
            True,
        ),
        Spec(
            "group.generation",
            INT,
            "generation id (classic) or member epoch (KIP-848) a group request names or its answer gives",
            "group.generation == 4",
            True,
        ),
        Spec(
            "producer.id",
            INT,
            "producer ids a producer's exchange names: a Produce request's v2 batches, InitProducerId "
            "(request and answer), AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn "
            "(-1, none, is no value)",
            "producer.id == 4000",
            True,
        ),
        Spec(
            "producer.epoch",
            INT,
            "producer epochs the same exchanges name (-1, none, is no value)",
            "producer.epoch > 0",
            True,
        ),
        Spec(
            "producer.sequence",
            INT,
            "base sequences of a Produce request's v2 batches (-1, not idempotent, is no value)",
            "producer.sequence == 0",
            True,
        ),
        Spec(
            "producer.transactional_id",
            STRING,
            "the transactional id a producer's request carries (Produce, InitProducerId, "
            "AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn)",
            'producer.transactional_id == "orders-tx"',
            True,
        ),
        Spec(
            "txn.id",
            STRING,
            "transactional ids of any transaction API or Produce (as producer.transactional_id), "
            "and those a FindCoordinator looks up (key type 1) or DescribeTransactions asks for",
            'txn.id == "orders-tx"',
            True,
        ),
        Spec(
            "txn.committed",
            BOOL,
            "EndTxn's committed flag (false: the transaction is aborted)",
            "api == EndTxn and not txn.committed",
        ),
        Spec(
            "client.software",
            STRING,
            "the client software's name the client id gave in ApiVersions v3+ (KIP-511)",
            'client.software == "librdkafka"',
        ),
        Spec(
            "client.software_version",
            STRING,
            "the client software's version the client id gave in ApiVersions v3+",
            'client.software_version contains "2.3"',
        ),
        Spec(
            "client.removed",
            BOOL,
            "the request uses an API version that Kafka 4.x refuses (removed by KIP-896), as the "
            "clients' readiness judges it",
            "client.removed",
        ),
        Spec(
            "client.all_topics",
            BOOL,
            "a Metadata request asking for every topic",
            "client.all_topics",
        ),
        Spec("unanswered", BOOL, "a request that expected a response and got none", "unanswered"),
    )
}

RECORDS_FIELDS: dict[str, Spec] = {
    s.name: s
    for s in (
        Spec("records", BOOL, "the exchange carries record batches or messages", "records", records=True),
        Spec(
            "records.codec",
            STRING,
            "batch compression: none, gzip, snappy, lz4, zstd",
            "records.codec == zstd",
            True,
            records=True,
            tree=("record_batch.codec", "message.codec"),
        ),
        Spec(
            "records.count",
            INT,
            "number of records in the exchange (batch headers)",
            "records.count > 1000",
            records=True,
        ),
        Spec(
            "records.batches",
            INT,
            "number of record batches / top-level messages",
            "records.batches > 1",
            records=True,
        ),
        Spec(
            "records.magic",
            INT,
            "batch or message format: 0, 1, 2",
            "records.magic < 2",
            True,
            records=True,
            tree=("record_batch.magic", "message.magic"),
        ),
        Spec(
            "records.transactional",
            BOOL,
            "a transactional batch",
            "records.transactional",
            True,
            records=True,
        ),
        Spec(
            "records.control",
            BOOL,
            "a control (transaction marker) batch",
            "records.control",
            True,
            records=True,
        ),
        Spec("records.crc_ok", BOOL, "the batch CRC holds", "records.crc_ok == false", True, records=True),
        Spec(
            "records.producer_id",
            INT,
            "producer id of a v2 batch",
            "records.producer_id >= 0",
            True,
            records=True,
            tree=("record_batch.producer_id",),
        ),
        Spec(
            "records.key",
            BYTES,
            "record keys (null keys do not exist)",
            'records.key contains "user-"',
            True,
            True,
            True,
            tree=("record.key", "message.key"),
        ),
        Spec(
            "records.value",
            BYTES,
            "record values",
            'records.value matches "^\\\\{"',
            True,
            True,
            True,
            tree=("record.value", "message.value"),
        ),
        Spec(
            "records.headers.key",
            STRING,
            "record header keys",
            'records.headers.key == "trace-id"',
            True,
            True,
            True,
            tree=("header.key",),
        ),
        Spec(
            "records.headers.value",
            BYTES,
            "record header values",
            'records.headers.value == "v1"',
            True,
            True,
            True,
            tree=("header.value",),
        ),
        Spec(
            "records.offset",
            INT,
            "record offsets (absolute when the batch says: Fetch)",
            "records.offset > 1000",
            True,
            True,
            True,
        ),
        Spec(
            "records.timestamp",
            INT,
            "record timestamps (ms since the epoch)",
            "records.timestamp > 1700000000000",
            True,
            True,
            True,
        ),
    )
}


@dataclass(slots=True)
class Decoded:
    """One decoded path of one API: its value types and which sides have it."""

    types: set[str] = field(default_factory=set)
    kinds: set[str] = field(default_factory=set)
    array: bool = False  # under an array (or an array itself)


def _walk(fields: tuple, prefix: tuple[str, ...], kind: str, out: dict, in_array: bool) -> None:
    for f in fields:
        name, ftype, children = f.name, f.type, f.children
        path = (*prefix, snake(name))
        is_array = ftype.startswith("[]")
        base = ftype[2:] if is_array else ftype
        d = out.get(path)
        if d is None:
            d = out[path] = Decoded()
        d.kinds.add(kind)
        d.array = d.array or in_array or is_array
        if children is not None:
            d.types.add(STRUCT)
            _walk(children, path, kind, out, in_array or is_array)
        else:
            d.types.add(_PRIMITIVE.get(base, STRUCT))


@cache
def api_paths(api_key: int) -> dict[tuple[str, ...], Decoded]:
    """Every decoded path of ``api_key`` (request and response, every version)."""
    out: dict[tuple[str, ...], Decoded] = {}
    for kind in ("request", "response"):
        for _lo, _hi, _flex, fields in MESSAGES.get((api_key, kind), ()):
            _walk(fields, (), kind, out, False)
    return out


def _norm(name: str) -> str:
    return name.replace("_", "").lower()


@cache
def api_prefixes() -> dict[str, int]:
    """Accepted API prefixes (snake_case and lower-case of the API name) -> api key."""
    out: dict[str, int] = {}
    for key, name in API_NAMES.items():
        if (key, "request") in MESSAGES:
            out[snake(name)] = key
            out[name.lower()] = key
    return out


@cache
def api_keys_by_name() -> dict[str, int]:
    """Normalised API name ("produce", "apiversions") -> key."""
    return {_norm(name): key for key, name in API_NAMES.items() if (key, "request") in MESSAGES}


def api_key_of(word: str) -> int | None:
    return api_keys_by_name().get(_norm(word))


@cache
def suffix_index() -> dict[tuple[str, ...], dict[int, list[tuple[str, ...]]]]:
    """Dotted suffix -> {api key -> full paths ending with it}: what an unprefixed path names."""
    out: dict[tuple[str, ...], dict[int, list[tuple[str, ...]]]] = {}
    for key in api_prefixes().values():
        for path in api_paths(key):
            for i in range(len(path)):
                out.setdefault(path[i:], {}).setdefault(key, []).append(path)
    return out


def all_names() -> list[str]:
    """Every name a filter accepts (for suggestions): exchange and records fields, unprefixed
    decoded names, and prefixed decoded paths."""
    names = list(EXCHANGE_FIELDS) + list(RECORDS_FIELDS)
    names += [".".join(s) for s in suffix_index()]
    return names + list(ALIASES)


@cache
def _by_tree() -> dict[str, list[Spec]]:
    """``PARENT.NAME`` (:attr:`Spec.tree`) -> the exchange or records fields that compare it."""
    out: dict[str, list[Spec]] = {}
    for s in (*EXCHANGE_FIELDS.values(), *RECORDS_FIELDS.values()):
        for where in s.tree:
            out.setdefault(where, []).append(s)
    return out


def _tree_specs(path: Sequence[Field], records: bool) -> list[tuple[Spec, object]]:
    """The header (``records`` False) or records fields that compare the field at the end of
    ``path``, in their order above, with the value each compares: the field's own value under
    its parent, or a value of its summary (a batch's codec). A records field that needs no
    record bodies reads the summaries of the batches and messages directly in a records field
    (not those inside a compressed message)."""
    f = path[-1]
    places: list[tuple[str, object, int]] = []  # (PARENT.NAME, value, where the entry is in path)
    if len(path) >= 2:
        parent = path[-2]
        places += [(f"{p}.{f.name}", f.value, len(path) - 2) for p in (parent.type, parent.name)]
    if isinstance(f.value, dict):  # a batch's or message's summary
        places += [
            (f"{p}.{k}", v, len(path) - 1)
            for k, v in f.value.items()
            if v is not None
            for p in (f.type, f.name)
        ]
    by_tree = _by_tree()
    found: dict[str, tuple[Spec, object]] = {}
    for where, v, entry in places:
        top = entry > 0 and path[entry - 1].type == RECORDS
        for s in by_tree.get(where, ()):
            if s.records == records and (not records or s.bodies or top):
                found.setdefault(s.name, (s, v))
    return [found[name] for name in (RECORDS_FIELDS if records else EXCHANGE_FIELDS) if name in found]


def _equals(found: list[tuple[Spec, object]], what: str) -> list[str] | str:
    out: list[str] = []
    why = f"{what}: no value to compare"
    for spec, v in found:
        if spec.type == API and isinstance(v, int) and not isinstance(v, bool) and v in API_NAMES:
            text: str | None = API_NAMES[v]  # the API's name: a word of the language
        else:
            text = literal(v)
        if text is not None:
            out.append(f"{spec.name} == {text}")
        elif v is not None:
            why = f"{what}: a binary value (no text to compare)"
    return out or why


def field_expressions(api_key: int | None, kind: str, path: Sequence[Field]) -> list[str] | str:
    """Display filters that keep the exchanges whose ``kind`` message ("request", "response")
    of API ``api_key`` has the value of the tree field at the end of ``path`` (from the root of
    its message header or body), most specific first; or why there is none (a str). A header
    or records field is named by the fields above that list it in :attr:`Spec.tree`, a decoded
    field by its path in :func:`api_paths` (what the compiler resolves)."""
    if not path:
        return "select a field of the request or response"
    f = path[-1]
    if path[0].type.endswith("Header"):
        found = _tree_specs(path, records=False)
        if not found:
            return f"{f.name}: the filter language has no header field of that name"
        return _equals(found, f.name)
    if any(p.type == "records" for p in path):
        found = _tree_specs(path, records=True)
        if not found:
            return f"{f.name}: a records field the filter language does not name"
        return _equals(found, f.name)
    if api_key is None or api_key not in API_NAMES:
        return "an exchange of an unknown API"
    # a decoded path leaves out array elements
    names = tuple(p.name for i, p in enumerate(path) if i and not path[i - 1].type.startswith("[]"))
    if not names:
        return "select a field of the request or response"
    d = api_paths(api_key).get(names)
    if d is None or kind not in d.kinds:
        return f"{f.name}: a field the filter language does not name ({'.'.join(names)})"
    dotted = f"{snake(API_NAMES[api_key])}.{kind}.{'.'.join(names)}"
    if f.children is not None:
        return [dotted]  # a struct or an array: that it is there
    if f.value is None:
        return [f"not {dotted}"]
    lit = literal(f.value)
    if lit is None:
        return f"{f.name}: a binary value (no text to compare)"
    return [f"{dotted} == {lit}"]


def describe(api_key: int | None = None) -> list[dict]:
    """Rows for ``kafka-analyzer filters``: name, type, meaning, example (one API's decoded
    fields when ``api_key`` is given, else the exchange and records fields)."""
    rows: list[dict] = []
    if api_key is None:
        for s in (*EXCHANGE_FIELDS.values(), *RECORDS_FIELDS.values()):
            rows.append(
                {
                    "name": s.name,
                    "type": s.type,
                    "many": s.many,
                    "needs_record_bodies": s.bodies,
                    "help": s.help,
                    "example": s.example,
                }
            )
        return rows
    prefix = snake(API_NAMES[api_key])
    for path, d in sorted(api_paths(api_key).items()):
        types = sorted(d.types)
        rows.append(
            {
                "name": f"{prefix}.{'.'.join(path)}",
                "type": "|".join(types),
                "many": d.array,
                "in": sorted(d.kinds),
                "example": _example(prefix, path, types[0]),
            }
        )
    return rows


def _example(prefix: str, path: tuple[str, ...], t: str) -> str:
    name = f"{prefix}.{'.'.join(path)}"
    if t == INT:
        return f"{name} > 0"
    if t == FLOAT:
        return f"{name} > 0.5"
    if t == STRING:
        return f'{name} contains "x"'
    if t == BYTES:
        return f'{name} contains "x"'
    if t == BOOL:
        return f"{name} == true"
    return name
