"""``kafka-analyzer stats --parquet DIR``: the stats tables from the Parquet tables that
``kafka-analyzer spark`` wrote (:func:`analyzer.spark.source.write_tables`), read with pyarrow:
no Spark, no capture read again.

The tables are those of ``stats`` over the captures, computed the same way
(:class:`~analyzer.session.stats.Stats`, exact percentiles): per API, topics, clients,
connections, brokers, anomalies, and the capture counters. Client software and brokers are
learnt again from the ApiVersions requests and Metadata responses in the table's JSON bodies,
in time order. The consumer groups' health is the ``group_health`` table's (each piece's groups,
followed over the piece's connections in capture order when Spark analysed it); the producers',
transactions', end-to-end latency's and readiness' sections are made from the ``producers``,
``transactions``, ``e2e`` and ``clients`` tables as ``stats`` makes them from the export's
objects (a row per piece: sorted as ``stats`` sorts them, then by piece; the transactions
counted per transactional id and piece). What the Parquet tables do not hold stays empty: the
groups' membership table, TLS connections. Connections are identified within their piece (a
capture file, or the chain of rotated files it belongs to): the same id in two pieces is two
connections.
"""

from __future__ import annotations

import json
import os

from analyzer.dissect.constants import ApiKey
from analyzer.issues import PAIRING_NO_RESPONSE, REGISTRY
from analyzer.model import Severity
from analyzer.session.consumption import host_of
from analyzer.session.insights import readiness_section
from analyzer.session.producer_insights import e2e_section, producer_section, transaction_section
from analyzer.session.records import FETCH_APIS
from analyzer.session.stats import Stats

_PAIRING = frozenset(code for code, kind in REGISTRY.items() if kind.stage == "pairing")
_SEVERITY = {str(s): s for s in Severity}

EXCHANGE_COLUMNS = [
    "capture",
    "ts",
    "connection",
    "client_id",
    "api_key",
    "api_name",
    "topics",
    "request_bytes",
    "response_bytes",
    "latency_ms",
    "errors",
    "issue_details",
    "record_counts",
]


class NotTables(Exception):
    """The directory holds no tables of ``kafka-analyzer spark``."""


class _Empty:
    def to_pylist(self) -> list:
        return []

    def to_batches(self) -> list:
        return []


def _table(base: str, name: str, columns: list[str] | None, capture_set: str | None):
    import pyarrow.dataset as ds

    path = os.path.join(base, name)
    if not os.path.isdir(path):
        raise NotTables(f"{base}: no {name}/ table (not an output directory of `kafka-analyzer spark`)")
    d = ds.dataset(path, format="parquet", partitioning="hive", exclude_invalid_files=True)
    if not d.files:  # Spark writes no file for an empty table
        return _Empty()
    flt = None
    if capture_set is not None:
        flt = ds.field("capture_set") == capture_set
    return d.to_table(columns=columns, filter=flt)


def read_stats(base: str, capture_set: str | None = None) -> dict:
    """The tables of ``stats`` (:func:`~analyzer.session.report.stats_tables`' shape) over the
    Parquet tables under ``base``; ``capture_set``: that partition only (default: all)."""
    caps = _table(base, "captures", None, capture_set).to_pylist()
    piece_of = {}
    for c in caps:
        for f in c["files"] or (c["capture"],):
            piece_of[f] = c["capture"]
    stats = Stats()
    conn_ids: dict[tuple, int] = {}  # (piece, connection) -> a number unique over the pieces
    exchanges = _table(base, "exchanges", EXCHANGE_COLUMNS, capture_set)
    for batch in exchanges.to_batches():
        for r in batch.to_pylist():
            _exchange(stats, r, piece_of, conn_ids)
    for r in _table(base, "issues", ["code", "message"], capture_set).to_pylist():
        stats.anomaly(r["code"], r["message"])
    connections = []
    for r in sorted(
        _table(base, "connections", None, capture_set).to_pylist(),
        key=lambda r: (r["capture"], r["connection"]),
    ):
        known = bool(r["roles_known"])
        key = (piece_of.get(r["capture"], r["capture"]), r["connection"])
        connections.append(
            {
                "connection": r["connection"],
                "client": r["client"],
                "broker": r["broker"],
                "exchanges": stats.conn_exchanges[conn_ids.get(key, -1)],
                "requests": r["requests"] if known else 0,
                "responses": r["responses"] if known else 0,
                "bytes_to_broker": r["bytes_to_broker"],
                "bytes_to_client": r["bytes_to_client"],
                "gaps": r["gaps"],
                "duration_s": round(max((r["last_ts"] or 0.0) - (r["first_ts"] or 0.0), 0.0), 6),
                "status": r["not_kafka"] and f"not Kafka: {r['not_kafka']}" or r["closed"] or "open",
            }
        )
    software, brokers, racks = _learn(base, capture_set)
    firsts = [c["first_ts"] for c in caps if c["first_ts"] is not None]
    lasts = [c["last_ts"] for c in caps if c["last_ts"] is not None]
    return {
        "capture": {
            "packets": sum(c["packets"] or 0 for c in caps),
            "tcp_connections": sum(c["tcp_connections"] or 0 for c in caps),
            "exchanges": stats.exchanges,
            "first_ts": min(firsts) if firsts else None,
            "last_ts": max(lasts) if lasts else None,
            "skipped_packets": {},
            "dropped_packets": None,
            "pieces": len(caps),
        },
        "apis": stats.api_rows(),
        "topics": stats.topic_rows(),
        "clients": [
            {**row, "software": " ".join(x for x in software[row["client_id"]] if x)}
            if row["client_id"] in software
            else row
            for row in stats.client_rows()
        ],
        "connections": connections,
        "brokers": [{"node_id": n, "address": a, "rack": racks.get(n)} for n, a in sorted(brokers.items())],
        "groups": [],
        "group_health": _group_health(base, capture_set),
        **_producer_sections(base, capture_set),
        "tls": [],
        "anomalies": stats.anomaly_rows(),
    }


def _group_health(base: str, capture_set: str | None) -> list[dict]:
    """``stats``' consumer-group rows, as each piece's analysis made them (the table's columns
    but the piece's and the partition's): by group, then piece. Tables written before the
    groups were (no ``group_health/``) have none."""
    if not os.path.isdir(os.path.join(base, "group_health")):
        return []
    rows = _table(base, "group_health", None, capture_set).to_pylist()
    rows.sort(key=lambda r: (r["group_id"], r["capture"]))
    return [{k: v for k, v in r.items() if k not in ("capture", "capture_set")} for r in rows]


def _objects(base: str, name: str, capture_set: str | None) -> list[dict]:
    """The rows of an insight table as the export's objects (with their ``capture``); none for
    tables written before it was (no ``name/``)."""
    if not os.path.isdir(os.path.join(base, name)):
        return []
    return [
        {
            k: (dict(v) if isinstance(v, list) and k in _MAPS else v)
            for k, v in r.items()
            if k != "capture_set"
        }
        for r in _table(base, name, None, capture_set).to_pylist()
    ]


_MAPS = frozenset(("codecs", "throttle_by_api"))  # map columns: pyarrow gives (key, value) pairs


def _producer_sections(base: str, capture_set: str | None) -> dict[str, list[dict]]:
    """``stats``' producers, transactions, e2e and readiness sections from the ``producers``,
    ``transactions``, ``e2e`` and ``clients`` tables: each piece's rows in the order ``stats``
    gives them (producers and clients by first seen, e2e by topic, partition and clients), then
    by piece; transactions counted per transactional id and piece."""
    producers = _objects(base, "producers", capture_set)
    producers.sort(
        key=lambda r: (
            r["first"],
            host_of(r["client"]),
            r["client_id"] is not None,
            r["client_id"] or "",
            r["producer_id"],
            r["capture"],
        )
    )
    pieces: dict[str, list[dict]] = {}
    for x in _objects(base, "transactions", capture_set):
        pieces.setdefault(x["capture"], []).append(x)
    transactions = [
        {**row, "capture": piece} for piece, txns in pieces.items() for row in transaction_section(txns)
    ]
    transactions.sort(key=lambda r: (r["transactional_id"], r["capture"]))
    e2e = _objects(base, "e2e", capture_set)
    e2e.sort(
        key=lambda r: (
            r["topic"],
            r["partition"],
            r["producer_client"],
            r["consumer_client"],
            r["group"] or "",
            r["capture"],
        )
    )
    clients = _objects(base, "clients", capture_set)
    clients.sort(key=lambda r: (r["first"], str((r["client"], r["client_id"])), r["capture"]))
    return {
        "producers": producer_section(producers),
        "transactions": [{k: v for k, v in r.items() if k != "capture"} for r in transactions],
        "e2e": e2e_section(e2e),
        "readiness": readiness_section(clients),
    }


def _learn(base: str, capture_set: str | None) -> tuple[dict, dict, dict]:
    """Client software (ApiVersions requests) and brokers (Metadata responses), in time order,
    as :class:`~analyzer.session.knowledge.Knowledge` learns them."""
    import pyarrow.dataset as ds

    software: dict = {}
    brokers: dict = {}
    racks: dict = {}
    path = os.path.join(base, "exchanges")
    d = ds.dataset(path, format="parquet", partitioning="hive", exclude_invalid_files=True)
    if not d.files:
        return software, brokers, racks
    flt = ds.field("api_key").isin([int(ApiKey.API_VERSIONS), int(ApiKey.METADATA)])
    if capture_set is not None:
        flt = flt & (ds.field("capture_set") == capture_set)
    cols = ["ts", "client_id", "api_key", "request", "response"]
    rows = d.to_table(columns=cols, filter=flt).to_pylist()
    for r in sorted(rows, key=lambda r: r["ts"] or 0.0):
        if r["api_key"] == ApiKey.API_VERSIONS and r["request"] and r["client_id"] is not None:
            body = json.loads(r["request"]).get("body") or {}
            name, ver = body.get("client_software_name"), body.get("client_software_version")
            if name or ver:
                software[r["client_id"]] = (name, ver)
        elif r["api_key"] == ApiKey.METADATA and r["response"]:
            body = json.loads(r["response"]).get("body") or {}
            for b in body.get("brokers") or ():
                node = b.get("node_id")
                if node is not None:
                    brokers[node] = f"{b.get('host')}:{b.get('port')}"
                    if b.get("rack"):
                        racks[node] = b.get("rack")
    return software, brokers, racks


def _exchange(stats: Stats, r: dict, piece_of: dict, conn_ids: dict) -> None:
    """What :meth:`Stats._exchange` counts, from an exchanges row."""
    stats.exchanges += 1
    ts = r["ts"]
    if ts is not None:
        if stats.first_ts is None or ts < stats.first_ts:
            stats.first_ts = ts
        if stats.last_ts is None or ts > stats.last_ts:
            stats.last_ts = ts
    conn = conn_ids.setdefault((piece_of.get(r["capture"], r["capture"]), r["connection"]), len(conn_ids))
    stats.conn_exchanges[conn] += 1
    key, name = r["api_key"], r["api_name"]
    a = stats.apis[(key if key is not None else -1, name)]
    a.count += 1
    if r["latency_ms"] is not None:
        a.latencies.append(r["latency_ms"] / 1000.0)
    has_request = r["request_bytes"] is not None
    if has_request:
        a.req_bytes += r["request_bytes"]
    if r["response_bytes"] is not None:
        a.resp_bytes += r["response_bytes"]
        for n in r["errors"] or ():
            a.errors[n] += 1
            stats.anomaly(f"kafka.{n}", f"{name} response with error {n}")
    for issue in json.loads(r["issue_details"]) if r["issue_details"] else ():
        code = issue["code"]
        if code == PAIRING_NO_RESPONSE.code:
            a.unanswered += 1
        if _SEVERITY.get(issue["severity"], Severity.NOTE) >= Severity.WARNING or code in _PAIRING:
            stats.anomaly(code, issue["message"])
    if has_request:
        cid = r["client_id"]
        label = cid if cid is not None else "(none)"
        c = stats.clients[label]
        c.requests += 1
        stats.client_connection(c, label, conn)
        if r["errors"]:
            c.errors += 1
    for topic in r["topics"] or ():
        stats.topics[topic].requests += 1
    produced = key == ApiKey.PRODUCE
    if produced or key in FETCH_APIS:
        for rc in r["record_counts"] or ():
            t = stats.topics[rc["topic"]]
            if produced:
                t.produced_records += rc["records"]
                t.produced_bytes += rc["bytes"]
            else:
                t.fetched_records += rc["records"]
                t.fetched_bytes += rc["bytes"]
