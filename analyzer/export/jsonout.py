"""JSON views of pipeline events: the export format (documented by ``export/schema.json``).

Field trees become plain JSON values (structs -> objects, arrays -> lists, bytes -> text when
they are printable UTF-8, else ``{"base64": ...}``), so ``jq '.request.body.topic_data[0].name'``
works; the byte span of every field goes into a separate flat ``spans`` object keyed by JSON
pointer (``"/topic_data/0/name": [offset, length]``, offsets in the frame payload), which is what
a hex view needs. Keys the export adds beside a wire field are ``<field>_text`` (a display text)
and ``<error code field>_name``; a test checks that no schema has a field of those names.

A ``records`` field is the one place whose JSON is not the wire tree: it becomes
``{"length": <bytes>, "batches": [...]}`` with one object per entry (v2 record batch or v0/v1
message / compressed wrapper), the same shape for every magic (see :func:`entry_json`):
``batch`` (the header, :data:`~analyzer.dissect.records_common.BATCH_KEYS`, null where the magic
has no such field), ``record_count`` (an int) and, with record bodies (``export --records``),
``record_list`` (one object per record, see :func:`record_json`). Batches get one span each
(``.../records/batches/N``); the fields inside them none (they would outweigh the records, and
fields inside decompressed data have no span in the frame at all).

The records of an internal topic (``__consumer_offsets``, ``__transaction_state``,
``__share_group_state``, named by name in the message) carry ``coordinator`` beside ``key`` and
``value`` in ``record_list``: the record decoded with the coordinator schemas
(:func:`coordinator_json`, the Fields of
:func:`~analyzer.dissect.coordinator.decode_coordinator_record` as JSON).
"""

from __future__ import annotations

import base64
from typing import Any

from analyzer.dissect import schema
from analyzer.dissect.coordinator import CoordinatorRecord, decode_coordinator_record
from analyzer.dissect.decoder import ScalarArrayField
from analyzer.dissect.records_common import Record, iso_timestamp
from analyzer.dissect.records_view import RecordsField, batch_records_field, entry_records, v2_records
from analyzer.events import CaptureIssue, ConnIssue
from analyzer.issues import STREAM_GAP
from analyzer.model import ConnInfo, Exchange, Field, Message
from analyzer.session.internal import internal_partitions

# a compact scalar array gets one span per element up to this many (beyond: the array's span only,
# a hostile array of millions of int32 must not cost a dict entry each)
_ELEMENT_SPANS = 10_000
_INT_TYPES = frozenset(("int8", "int16", "uint16", "int32", "uint32", "int64"))
# isinstance() with a tuple: ``bytes | bytearray | memoryview`` builds a union at each call (3x slower)
_BYTES_TYPES = (bytes, bytearray, memoryview)


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


# ASCII that is text: printable characters and tab / newline / carriage return
_ASCII_TEXT = bytes(range(0x20, 0x7F)) + b"\t\n\r"


def _data_json(raw: bytes | None) -> Any:
    """A record's key, value or header value: :func:`bytes_json`, plain ASCII first (fast)."""
    if raw is None:
        return None
    if not raw.translate(None, _ASCII_TEXT):
        return raw.decode("ascii")
    return bytes_json(raw)


def field_json(
    f: Field, spans: dict | None, path: str, records: bool = False, internal: dict[int, str] | None = None
) -> Any:
    """``records``: the records were decoded with bodies (``export --records``): records fields
    then carry every batch's ``record_list``; ``internal``: the records fields of internal topics
    (:func:`~analyzer.session.internal.internal_partitions`), whose records get ``coordinator``."""
    if spans is not None:
        spans[path or "/"] = [f.offset, f.length]
    if type(f) is ScalarArrayField:  # compact: no element Fields built for the export
        if spans is not None and f.value <= _ELEMENT_SPANS:
            p, sz = f.first, f.size
            for i in range(f.value):
                spans[f"{path}/{i}"] = [p + i * sz, sz]
        return list(f.values)
    ch = f.children
    t = f.type
    if t == "records":
        return records_json(f, spans, path, records, internal)
    if ch is None:
        v = f.value
        if isinstance(v, _BYTES_TYPES):
            return bytes_json(bytes(v))
        return v
    if t.startswith("[]") or t == "array":
        if f.value is None:
            return None
        return [field_json(c, spans, f"{path}/{i}", records, internal) for i, c in enumerate(ch)]
    if t == "bytes":  # bytes with an embedded protocol decoded below them
        out: dict[str, Any] = {"raw": bytes_json(f.value), "protocol": f.display}
        for c in ch:
            out[c.name] = field_json(c, spans, f"{path}/{c.name}", records, internal)
        return out
    return struct_json(f, spans, path, records, internal)


def records_json(
    f: Field, spans: dict | None, path: str, records: bool, internal: dict[int, str] | None = None
) -> dict | None:
    """A records field: ``{"length", "batches"}`` (null for a null records field)."""
    if f.value is None:
        return None
    batches = []
    topic = internal.get(id(f)) if internal else None
    for i, b in enumerate(f.children or ()):
        if spans is not None:
            spans[f"{path}/batches/{i}"] = [b.offset, b.length]
        batches.append(entry_json(b, records, topic))
    return {"length": f.value, "batches": batches}


def entry_json(e: Field, records: bool, topic: str | None = None) -> dict:
    """One entry of a records field (a v2 batch, a v0/v1 message or wrapper, or a partial one):
    ``{"batch": {...}, "record_count": n[, "record_list": [...]]}``, the same keys for every
    magic. ``record_list`` (only when ``records``) holds what :func:`entry_records` gives."""
    batch = dict(e.value)
    out: dict[str, Any] = {"batch": batch, "record_count": batch.pop("record_count")}
    if records and topic is not None:  # an internal topic's: each record decoded
        out["record_list"] = [
            {**record_json(r), "coordinator": None if r.control else coordinator_json(topic, r.key, r.value)}
            for r in entry_records(e)
        ]
    elif records:
        rf = batch_records_field(e) if e.type == "record_batch" else None
        if rf is not None and not rf.batch.attributes & 0x20:
            out["record_list"] = rows_json(rf)
        else:
            out["record_list"] = [record_json(r) for r in entry_records(e)]
    return out


def record_json(r: Record) -> dict:
    """One record in the export's shape (for every magic)."""
    ts = r.timestamp
    return {
        "offset": r.offset,
        "timestamp": ts,
        "timestamp_iso": None if ts is None else iso_timestamp(ts),
        "key": _data_json(r.key),
        "value": _data_json(r.value),
        "headers": [{"key": k, "value": _data_json(v)} for k, v in r.headers],
        "control": r.control,
        "control_type": r.control_type,
    }


def coordinator_json(topic: str, key: bytes | None, value: bytes | None) -> dict | None:
    """An internal topic's record decoded (:class:`~analyzer.dissect.coordinator.CoordinatorRecord`):
    record type and name, tombstone, the key's and the value's fields (each starting with its
    int16 ``version``), the one-line summary and the issues."""
    rec = decode_coordinator_record(topic, key, value)
    return None if rec is None else record_object(rec)


def record_object(rec: CoordinatorRecord) -> dict:
    return {
        "record_type": rec.record_type,
        "name": rec.name,
        "tombstone": rec.tombstone,
        "key": struct_json(rec.key, None, "") if rec.key is not None else None,
        "value": struct_json(rec.value, None, "") if rec.value is not None else None,
        "summary": rec.summary,
        "issues": [i.to_dict() for i in rec.issues],
    }


def rows_json(rf: RecordsField) -> list[dict]:
    """The records of a v2 data batch (the hot path of ``export --records``), straight from the
    rows of the records parser: what :func:`record_json` makes of :func:`v2_records`, without the
    intermediate tuples (a test holds the two equal)."""
    bo, bts, mts, attrs = rf.batch[:4]
    if attrs & 0x20:
        return [record_json(r) for r in v2_records(rf)]
    buf = rf.buf
    data = _data_json
    iso = iso_timestamp
    log_append = attrs & 0x08
    fixed = None if mts == -1 else mts
    fixed_iso = None if fixed is None else iso(fixed)
    no_ts = bts == -1
    out: list[dict] = []
    append = out.append
    for _rs, _b, _re, _a, tsd, _te, od, _oe, kd, ke, vd, ve, _hc, _he, hdrs, ok in rf.rows:
        if not ok:
            continue
        if log_append:
            ts, ts_iso = fixed, fixed_iso
        elif no_ts:
            ts = ts_iso = None
        else:
            ts = bts + tsd
            ts_iso = iso(ts)
        append(
            {
                "offset": bo + od,
                "timestamp": ts,
                "timestamp_iso": ts_iso,
                "key": None if kd < 0 else data(buf[kd:ke]),
                "value": None if vd < 0 else data(buf[vd:ve]),
                "headers": [
                    {
                        "key": buf[hkd:hke].decode("utf-8", "replace"),
                        "value": None if hvd < 0 else data(buf[hvd:hve]),
                    }
                    for _hs, hkd, hke, hvd, hve in hdrs
                ]
                if hdrs
                else [],
                "control": False,
                "control_type": None,
            }
        )
    return out


def struct_json(
    f: Field, spans: dict | None, path: str, records: bool = False, internal: dict[int, str] | None = None
) -> dict:
    out: dict[str, Any] = {}
    for c in f.children or ():
        name = c.name
        if type(c) is Field and c.children is None and c.type != "records":
            # a leaf (most of a message): field_json's leaf case inline, its path made only for a span
            if spans is not None:
                spans[f"{path}/{name}"] = [c.offset, c.length]
            v = c.value
            if isinstance(v, _BYTES_TYPES):
                v = bytes_json(bytes(v))
            out[name] = v
        else:
            v = out[name] = field_json(c, spans, f"{path}/{name}", records, internal)
            if c.display is None or c.children is not None:  # (display first: children may be lazy)
                continue
        d = c.display
        if d is not None and d != v:
            if c.type in _INT_TYPES and name.endswith("error_code"):
                out[name + "_name"] = d
            else:
                out[name + "_text"] = d
    return out


def message_json(m: Message | None, with_spans: bool = True, records: bool = False) -> dict | None:
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
        "body": struct_json(m.body, spans, "/body", records, internal_partitions(m) if records else None)
        if m.body is not None
        else None,
    }
    if spans is not None:
        out["spans"] = spans
    return out


def endpoint_pair(info: ConnInfo) -> dict:
    if info.client_direction is None:
        return {"id": info.id, "client": str(info.a), "broker": str(info.b)}
    return {"id": info.id, "client": str(info.client), "broker": str(info.broker)}


def exchange_json(ex: Exchange, with_spans: bool = True, records: bool = False) -> dict:
    """``records``: the exchange was decoded with record bodies; record batches then carry
    their ``record_list``."""
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
        "request": message_json(ex.request, with_spans, records),
        "response": message_json(ex.response, with_spans, records),
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
        "closed_by": info.closed_by,
        "not_kafka": info.not_kafka,
        "tls": info.tls,
    }


def stream_event_json(ev: ConnIssue | CaptureIssue) -> dict:
    """A connection or capture issue: a gap line for lost bytes, an issue line for the rest."""
    issue = ev.issue
    conn = ev.conn if type(ev) is ConnIssue else None
    direction = None
    if conn is not None and ev.direction >= 0 and conn.client_direction is not None:  # type: ignore[union-attr]
        direction = "client" if ev.direction == conn.client_direction else "broker"  # type: ignore[union-attr]
    return {
        "type": "gap" if issue.code == STREAM_GAP.code else "issue",
        "ts": ev.ts,
        "connection": conn.id if conn is not None else None,
        "direction": direction,
        **issue.to_dict(),
    }
