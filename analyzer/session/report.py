"""What front ends show of an analysis: the summary tables and short texts, shared by the CLI,
the TUI and the export (plain data and strings; no terminal or UI code)."""

from __future__ import annotations

from analyzer.session.stats import Stats


def topics_text(topics: dict[str, list[int]], limit: int = 3) -> str:
    parts = []
    for name, parts_ in list(topics.items())[:limit]:
        ps = sorted(set(parts_))
        parts.append(f"{name}[{','.join(map(str, ps))}]" if ps else name)
    if len(topics) > limit:
        parts.append(f"+{len(topics) - limit} more")
    return " ".join(parts)


def stats_tables(stats: Stats, pipeline) -> dict:
    """Every summary table of an analysis, as plain rows (the pipeline supplies the counters)."""
    k = pipeline.knowledge
    return {
        "capture": {
            "packets": pipeline.packets,
            "tcp_connections": pipeline.reasm.connections,
            "exchanges": stats.exchanges,
            "first_ts": pipeline.first_ts,
            "last_ts": pipeline.last_ts,
            "skipped_packets": dict(pipeline.skipped),
        },
        "apis": stats.api_rows(),
        "topics": stats.topic_rows(),
        "clients": stats.client_rows(k),
        "connections": stats.connection_rows(),
        "brokers": [
            {"node_id": n, "address": a, "rack": k.racks.get(n)} for n, a in sorted(k.brokers.items())
        ],
        "groups": [
            {
                "group_id": g.group_id,
                "protocol_type": g.protocol_type,
                "protocol": g.protocol_name,
                "generations": g.generations_seen,
                "members": len(g.members),
            }
            for g in k.groups.values()
        ],
        "anomalies": stats.anomaly_rows(),
    }


TABLES = {  # section -> (title, columns), in display order
    "apis": (
        "Requests per API",
        ["api_name", "count", "p50_ms", "p95_ms", "p99_ms", "max_ms", "unanswered", "errors"],
    ),
    "topics": (
        "Topics",
        ["topic", "requests", "produced_records", "produced_bytes", "fetched_records", "fetched_bytes"],
    ),
    "clients": ("Clients", ["client_id", "software", "requests", "responses_with_errors", "connections"]),
    "connections": (
        "Connections",
        [
            "connection",
            "client",
            "broker",
            "exchanges",
            "bytes_to_broker",
            "bytes_to_client",
            "gaps",
            "duration_s",
            "status",
        ],
    ),
    "brokers": ("Brokers", ["node_id", "address", "rack"]),
    "groups": ("Consumer groups", ["group_id", "protocol_type", "protocol", "generations", "members"]),
    "anomalies": ("Anomalies", ["anomaly", "count", "example"]),
}


def cell(v) -> str:
    """A table value as text."""
    if v is None:
        return "-"
    if isinstance(v, dict):
        return ", ".join(f"{k}={n}" for k, n in v.items()) or "-"
    if isinstance(v, list):
        return ",".join(map(str, v)) or "-"
    return str(v)
