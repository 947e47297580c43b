"""JSON views of pipeline events: the export format (documented by ``export/schema.json``).

Field trees become plain JSON values (structs -> objects, arrays -> lists, bytes -> text when
they are printable UTF-8, else ``{"base64": ...}``), so ``jq '.request.body.topic_data[0].name'``
works; the byte span of every field goes into a separate flat ``spans`` object keyed by JSON
pointer (``"/topic_data/0/name": [offset, length]``, offsets in the frame payload), which is what
a hex view needs. Record batches and legacy messages get one span each (the fields inside them
none: they would outweigh the records), and fields inside decompressed data have no span in the
frame at all.
"""

from __future__ import annotations

import base64
from typing import Any

from analyzer.dissect import schema
from analyzer.dissect.records import RecordsField, record_timestamp_text
from analyzer.events import CaptureIssue, ConnIssue
from analyzer.model import ConnInfo, Exchange, Field, Message

_INT_TYPES = frozenset(("int8", "int16", "uint16", "int32", "uint32", "int64"))


def bytes_json(raw: bytes | None) -> Any:
    """Text when the bytes are printable UTF-8, else {"base64": ...}."""
    if raw is None:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(raw).decode()}
    if text.isprintable() or all(c.isprintable() or c in "\t\n\r" for c in text):
        return text
    return {"base64": base64.b64encode(raw).decode()}


def field_json(f: Field, spans: dict | None, path: str) -> Any:
    if type(f) is RecordsField:
        return records_json(f)
    if spans is not None:
        spans[path or "/"] = [f.offset, f.length]
    ch = f.children
    t = f.type
    if ch is None:
        v = f.value
        if isinstance(v, bytes | bytearray | memoryview):
            return bytes_json(bytes(v))
        return v
    if t == "records":
        # spans of the batches only: one per record field would outweigh the records themselves
        if spans is not None:
            for i, b in enumerate(ch):
                spans[f"{path}/batches/{i}"] = [b.offset, b.length]
        return {
            "length": f.value,
            "batches": [field_json(b, None, "") for b in ch],
        }
    if t == "array" and ch and ch[0].type == "record":
        return [record_json(r) for r in ch]
    if t.startswith("[]") or t == "array":
        if f.value is None:
            return None
        return [field_json(c, spans, f"{path}/{i}") for i, c in enumerate(ch)]
    if t == "bytes":  # bytes with an embedded protocol decoded below them
        out: dict[str, Any] = {"raw": bytes_json(f.value), "protocol": f.display}
        for c in ch:
            out[c.name] = field_json(c, spans, f"{path}/{c.name}")
        return out
    return struct_json(f, spans, path)


def _value_json(f: Field):
    v = f.value
    if type(v) is bytes:
        d = f.display  # the records decoder already tried UTF-8
        if d is not None and d.isprintable():
            return d
        return bytes_json(v)
    return v


# ASCII that is text: printable characters and tab / newline / carriage return
_ASCII_TEXT = bytes(range(0x20, 0x7F)) + b"\t\n\r"


def records_json(rf: RecordsField) -> list[dict]:
    """The records of a v2 batch (the hot path of ``export --records``), straight from the rows
    of the records parser: the same objects :func:`record_json` makes of their Fields."""
    bo, bts, mts, attrs = rf.batch[:4]
    if attrs & 0x20:  # control records (one per marker batch): their key and value are structs
        return [record_json(r) for r in rf.children]
    buf = rf.buf
    ts_text = record_timestamp_text
    out = []
    kids = None
    for i, row in enumerate(rf.rows):
        rstart, body, rend, a, tsd, tse, od, ode, kd, ke, vd, ve, hc, hce, hdrs, ok = row
        if not ok:  # a malformed record: whatever parsed of it, as its Field shows
            if kids is None:
                kids = rf.children
            out.append(record_json(kids[i]))
            continue
        d: dict[str, Any] = {"length": rend - body, "attributes": a, "timestamp_delta": tsd}
        t = ts_text(rf.batch, tsd)
        if t is not None:
            d["timestamp_delta_text"] = t
        d["offset_delta"] = od
        d["offset_delta_text"] = f"offset {bo + od}"
        if kd < 0:
            d["key"] = None
        else:
            _bytes_into(d, "key", buf[kd:ke])
        if vd < 0:
            d["value"] = None
        else:
            _bytes_into(d, "value", buf[vd:ve])
        d["headers"] = [
            {
                "key": buf[hkd:hke].decode("utf-8", "replace"),
                "value": None if hvd < 0 else _header_value_json(buf[hvd:hve]),
            }
            for _hs, hkd, hke, hvd, hve in hdrs
        ]
        out.append(d)
    return out


def _bytes_into(d: dict, name: str, raw: bytes) -> None:
    """A record's key or value, as :func:`record_json` gives its Field."""
    if not raw.translate(None, _ASCII_TEXT):  # plain ASCII text, the common case
        d[name] = raw.decode("ascii")
        return
    try:
        text: str | None = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    v = d[name] = text if text is not None and text.isprintable() else bytes_json(raw)
    if text is not None and text != v:
        d[name + "_text"] = text


def _header_value_json(raw: bytes) -> Any:
    if not raw.translate(None, _ASCII_TEXT):
        return raw.decode("ascii")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return bytes_json(raw)
    return text if text.isprintable() else bytes_json(raw)


def record_json(r: Field) -> dict:
    """One record of a batch (the hot path of ``export --records``): the same object the generic
    struct conversion gives, built without its per-field dispatch."""
    out: dict[str, Any] = {}
    for c in r.children or ():
        n = c.name
        if n == "headers" and c.children is not None:
            out[n] = [
                {h.name: _value_json(h) for h in hdr.children or ()}
                if hdr.type == "struct"
                else field_json(hdr, None, "")
                for hdr in c.children
            ]
        elif c.children is not None:
            out[n] = field_json(c, None, "")
        else:
            v = out[n] = _value_json(c)
            d = c.display
            if d is not None and d != v:
                out[n + "_text"] = d
    return out


def struct_json(f: Field, spans: dict | None, path: str) -> dict:
    out: dict[str, Any] = {}
    for c in f.children or ():
        if c.type == "decompressed":
            # what a compressed record batch or wrapper message holds; its fields live in the
            # decompressed buffer, so they get no spans in the frame
            out["decompressed_size"] = len(c.value) if c.value is not None else None
            inner = c.children or []
            if inner and all(x.name == "message" for x in inner):
                out["messages"] = [field_json(x, None, "") for x in inner]
            else:
                out.update(struct_json(c, None, ""))
            continue
        v = out[c.name] = field_json(c, spans, f"{path}/{c.name}")
        if c.display is not None and c.children is None and c.display != v:
            if c.type in _INT_TYPES and c.name.endswith("error_code"):
                out[c.name + "_name"] = c.display
            else:
                out[c.name + "_text"] = c.display
    if isinstance(f.value, dict):  # record batch / message summary
        for k, v in f.value.items():
            out.setdefault(k, v)
    return out


def message_json(m: Message | None, with_spans: bool = True) -> dict | None:
    if m is None:
        return None
    fr = m.frame
    spans: dict | None = {} if with_spans else None
    out: dict[str, Any] = {
        "ts": fr.ts_first,
        "ts_last": fr.ts_last,
        "frames": list(fr.packet_indexes),
        "offset": fr.offset,
        "length": fr.length,
        "header": struct_json(m.header, spans, "/header") if m.header is not None else None,
        "body": struct_json(m.body, spans, "/body") if m.body is not None else None,
    }
    if spans is not None:
        out["spans"] = spans
    return out


def endpoint_pair(info: ConnInfo) -> dict:
    if info.client_direction is None:
        return {"id": info.id, "client": str(info.a), "broker": str(info.b)}
    return {"id": info.id, "client": str(info.client), "broker": str(info.broker)}


def exchange_json(ex: Exchange, with_spans: bool = True) -> dict:
    key = ex.api_key
    lat = ex.latency
    return {
        "type": "exchange",
        "ts": ex.ts,
        "api_key": key,
        "api_name": schema.api_name(key) if key is not None else None,
        "api_version": ex.api_version,
        "correlation_id": ex.correlation_id,
        "client_id": ex.client_id,
        "connection": endpoint_pair(ex.conn),
        "topics": ex.topics,
        "request": message_json(ex.request, with_spans),
        "response": message_json(ex.response, with_spans),
        "latency_ms": None if lat is None else round(lat * 1000.0, 3),
        "issues": [i.to_dict() for i in ex.all_issues()],
    }


def connection_json(info: ConnInfo) -> dict:
    cd = info.client_direction
    names = ("client", "broker") if cd in (0, None) else ("broker", "client")
    return {
        "type": "connection",
        **endpoint_pair(info),
        "roles_known": cd is not None,
        "syn_seen": info.syn,
        "first_ts": info.ts_first,
        "last_ts": info.ts_last,
        "frames": {names[0]: info.frames[0], names[1]: info.frames[1]},
        "bytes": {names[0]: info.bytes[0], names[1]: info.bytes[1]},
        "gaps": {names[0]: info.gaps[0], names[1]: info.gaps[1]},
        "closed": info.closed,
        "not_kafka": info.not_kafka,
    }


def stream_event_json(ev: ConnIssue | CaptureIssue) -> dict:
    """A connection or capture issue: a gap line for lost bytes, an issue line for the rest."""
    issue = ev.issue
    conn = ev.conn if type(ev) is ConnIssue else None
    direction = None
    if conn is not None and ev.direction >= 0 and conn.client_direction is not None:  # type: ignore[union-attr]
        direction = "client" if ev.direction == conn.client_direction else "broker"  # type: ignore[union-attr]
    return {
        "type": "gap" if issue.code == "stream.gap" else "issue",
        "ts": ev.ts,
        "connection": conn.id if conn is not None else None,
        "direction": direction,
        **issue.to_dict(),
    }
