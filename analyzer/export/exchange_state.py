"""An exchange as plain data and back: what ``kafka-analyzer spark`` stores in the Parquet
exchanges' ``state`` column so that ``check --parquet`` evaluates its rules on the very objects
``check`` evaluates on captures (:class:`~analyzer.model.Exchange`, its messages and decoded
trees), through the same engine and display filters.

Unlike the export's JSON, nothing is lost that a rule or a filter reads: every decoded Field
keeps its name, type, value (bytes stay bytes, a record batch's header its dict), children and
display; the messages keep their api key, version, correlation id, client id, error codes,
issues (the exchange's own apart from its messages'), frame times, lengths and packet numbers;
the connection is the one the exchange was emitted with (its roles, and whether and by whom it
was closed at that point); ``software`` is what the run knew of the client id's software then.
What is left out is what no rule reads: the frame payloads (their secrets stay masked, as the
trees are) and the byte spans of the fields. Record bodies are in the trees when the analysis
decoded them (``spark --records``).
"""

from __future__ import annotations

import base64
from typing import Any

import orjson

from analyzer.model import ConnInfo, Endpoint, Exchange, Field, Frame, Issue, Message, Severity

_SEVERITY = {str(s): s for s in Severity}
# isinstance() with tuples: a ``X | Y`` union is built at each call (3x slower), once per field here
_BYTES_TYPES = (bytes, bytearray, memoryview)
_SEQUENCES = (list, tuple)
_SCALARS = (int, float, str)


def _value(v: Any) -> Any:
    if v is None or type(v) in (bool, int, float, str):
        return v
    if isinstance(v, _BYTES_TYPES):
        return {"b": base64.b64encode(bytes(v)).decode()}
    if isinstance(v, dict):
        return {"d": {str(k): _value(x) for k, x in v.items()}}
    if isinstance(v, _SEQUENCES):
        return {"t": [_value(x) for x in v]}
    if isinstance(v, _SCALARS):  # IntEnum, str subclasses
        return v if not isinstance(v, bool) else bool(v)
    raise TypeError(f"cannot store a field value of type {type(v).__name__}")


def _unvalue(v: Any) -> Any:
    if type(v) is not dict:
        return v
    if "b" in v:
        return base64.b64decode(v["b"])
    if "d" in v:
        return {k: _unvalue(x) for k, x in v["d"].items()}
    return tuple(_unvalue(x) for x in v["t"])


class KeptBatch(Field):
    """A v2 record batch rebuilt from plain data: with the decompressed size of its records
    the producers' compression ratio read (:meth:`BatchField.sized_for_ratio`)."""

    __slots__ = ("sized",)
    sized: int | None

    def sized_for_ratio(self) -> int | None:
        return self.sized


def field_state(f: Field) -> list:
    """``[name, type, value, children, display]`` (children null for a leaf; trailing nulls
    left out), and for a v2 record batch the size its compression ratio reads;
    lazily built children (compact scalar arrays, v2 records) are built here."""
    ch = f.children
    out = [f.name, f.type, _value(f.value)]
    sized = getattr(f, "sized_for_ratio", None)
    size = None if sized is None else sized()
    if ch is not None or f.display is not None or size is not None:
        out.append(None if ch is None else [field_state(c) for c in ch])
        if f.display is not None or size is not None:
            out.append(f.display)
        if size is not None:
            out.append(size)
    return out


def field_from_state(s: list) -> Field:
    name, ftype, value, children, display, size = (*s, None, None, None)[:6]
    if size is not None:
        kept = KeptBatch(
            name,
            ftype,
            _unvalue(value),
            0,
            0,
            None if children is None else [field_from_state(c) for c in children],
            display,
        )
        kept.sized = size
        return kept
    return Field(
        name,
        ftype,
        _unvalue(value),
        0,
        0,
        None if children is None else [field_from_state(c) for c in children],
        display,
    )


def issue_state(i: Issue) -> list:
    """An issue as plain data: [severity, code, message, offset, where]."""
    return [str(i.severity), i.code, i.message, i.offset, i.where]


def _unissue(s: list) -> Issue:
    return Issue(_SEVERITY[s[0]], s[1], s[2], s[3], s[4])


def message_state(m: Message | None) -> dict | None:
    if m is None:
        return None
    fr = m.frame
    return {
        "frame": [fr.conn, fr.direction, fr.offset, fr.length, fr.ts_first, fr.ts_last]
        + [list(fr.packet_indexes)],
        "kind": m.kind,
        "api_key": m.api_key,
        "api_version": m.api_version,
        "correlation_id": m.correlation_id,
        "client_id": m.client_id,
        "errors": list(m.errors),
        "issues": [issue_state(i) for i in m.issues],
        "header": None if m.header is None else field_state(m.header),
        "body": None if m.body is None else field_state(m.body),
    }


def message_from_state(s: dict | None) -> Message | None:
    if s is None:
        return None
    conn, direction, offset, length, ts_first, ts_last, packets = s["frame"]
    frame = Frame(conn, direction, offset, length, b"", ts_first, ts_last, tuple(packets), s["kind"])
    return Message(
        frame,
        s["kind"],
        s["api_key"],
        s["api_version"],
        s["correlation_id"],
        None if s["header"] is None else field_from_state(s["header"]),
        None if s["body"] is None else field_from_state(s["body"]),
        [_unissue(i) for i in s["issues"]],
        s["client_id"],
        list(s["errors"]),
    )


def conn_state(c: ConnInfo) -> dict:
    return {
        "id": c.id,
        "a": [c.a.ip, c.a.port],
        "b": [c.b.ip, c.b.port],
        "ts_first": c.ts_first,
        "syn": c.syn,
        "client_direction": c.client_direction,
        "ts_last": c.ts_last,
        "closed": c.closed,
        "closed_by": c.closed_by,
        "not_kafka": c.not_kafka,
    }


def conn_from_state(s: dict) -> ConnInfo:
    return ConnInfo(
        s["id"],
        Endpoint(*s["a"]),
        Endpoint(*s["b"]),
        s["ts_first"],
        s["syn"],
        s["client_direction"],
        s["ts_last"],
        s["closed"],
        s["closed_by"],
        not_kafka=s["not_kafka"],
    )


def exchange_state(ex: Exchange, software: tuple | None = None) -> dict:
    """The exchange as plain data (JSON-ready); ``software``: the client id's ``(name,
    version)`` the run knew when the exchange was emitted."""
    return {
        "conn": conn_state(ex.conn),
        "request": message_state(ex.request),
        "response": message_state(ex.response),
        "issues": [issue_state(i) for i in ex.issues],
        "topics": ex.topics,
        "software": None if software is None else list(software),
    }


def _json(v: Any) -> bytes:
    return orjson.dumps(v, option=orjson.OPT_NON_STR_KEYS)


def state_parts(ex: Exchange) -> tuple[bytes, bytes, bytes, bytes]:
    """The JSON of :func:`exchange_state` in the parts that a later step completes apart:
    the connection, the request, the response and the exchange's issues. Spark's stitching
    gives them the connection id, issues, topics and software one run has there
    (:func:`joined_state`), without parsing the decoded trees again."""
    return (
        _json(conn_state(ex.conn)),
        _json(message_state(ex.request)),
        _json(message_state(ex.response)),
        _json([issue_state(i) for i in ex.issues]),
    )


_FRAME = b'{"frame":['  # how a message's state starts (message_state): its connection id next


def _frame_conn(message: bytes, conn: int) -> bytes:
    """A message's state JSON (or ``null``) with its frame's connection id ``conn``."""
    if message == b"null":
        return message
    assert message.startswith(_FRAME)
    end = message.index(b",", len(_FRAME))
    return _FRAME + str(conn).encode() + message[end:]


def joined_state(
    parts: tuple[bytes, bytes, bytes, bytes],
    conn: int,
    issues: list[Issue] | None,
    topics: dict,
    software: tuple | None,
) -> bytes:
    """The JSON of :func:`exchange_state` (``orjson``, non-string keys allowed) from its
    :func:`state_parts`, with the connection id ``conn`` (the connection's and both frames'),
    ``issues`` (None: the parts' own), ``topics`` and ``software``: the bytes that dumping the
    whole state so completed gives."""
    c, req, resp, own = parts
    cs = orjson.loads(c)
    cs["id"] = conn
    return b"".join(
        (
            b'{"conn":',
            _json(cs),
            b',"request":',
            _frame_conn(req, conn),
            b',"response":',
            _frame_conn(resp, conn),
            b',"issues":',
            own if issues is None else _json([issue_state(i) for i in issues]),
            b',"topics":',
            _json(topics),
            b',"software":',
            _json(None if software is None else list(software)),
            b"}",
        )
    )


def exchange_from_state(s: dict) -> tuple[Exchange, tuple | None]:
    """The :class:`Exchange` of :func:`exchange_state`, and the software known then."""
    ex = Exchange(
        conn_from_state(s["conn"]),
        message_from_state(s["request"]),
        message_from_state(s["response"]),
        [_unissue(i) for i in s["issues"]],
        {k: list(v) for k, v in s["topics"].items()},
    )
    sw = s["software"]
    return ex, None if sw is None else tuple(sw)
