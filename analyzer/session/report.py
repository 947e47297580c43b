"""What front ends show of an analysis: the summary tables and short texts, shared by the CLI,
the TUI and the export (plain data and strings; no terminal or UI code)."""

from __future__ import annotations

from analyzer.dissect import schema
from analyzer.dissect.protocol_table import CURRENT_RELEASE
from analyzer.issues import REGISTRY
from analyzer.model import Exchange, Issue, Severity
from analyzer.session.producer_insights import E2E_COLUMNS, PRODUCER_COLUMNS
from analyzer.session.stats import Stats, error_names


def api_text(key: int | None, version: int | None) -> str:
    """ "Produce v9"; "?" when the api key is unknown (a response without its request)."""
    name = (schema.api_name(key) if key is not None else None) or ("?" if key is None else f"Api{key}")
    return f"{name} v{version}" if version is not None else name


def endpoints(ex: Exchange) -> tuple[str, str, bool]:
    """(client, broker, roles known); direction-0 sender first when the roles are unknown."""
    conn = ex.conn
    known = conn.client_direction is not None
    a, b = (conn.client, conn.broker) if known else (conn.a, conn.b)
    return str(a), str(b), known


def sizes_text(ex: Exchange) -> str:
    """Request/response frame sizes on the wire ("96/21"; "-" for a missing side)."""
    req = ex.request.frame.length + 4 if ex.request else "-"
    resp = ex.response.frame.length + 4 if ex.response else "-"
    return f"{req}/{resp}"


def latency_text(ex: Exchange) -> str:
    lat = ex.latency
    return f"{lat * 1000:.3f}ms" if lat is not None else "-"


def exchange_flags(
    ex: Exchange, issues: list[Issue] | None = None, errs: list[str] | None = None
) -> tuple[list[str], Severity | None]:
    """The response's error names and the exchange's notable issues (warnings and worse, and
    every pairing issue), and the worst severity among them (errors count as ERROR).
    ``issues`` and ``errs``: ``ex.all_issues()`` and ``error_names(ex.response)`` when the
    caller has them already."""
    if errs is None:
        errs = error_names(ex.response)
    flags: list[str] = []
    worst: Severity | None = Severity.ERROR if errs else None
    if errs:
        uniq = sorted(set(errs))
        flags.append(",".join(uniq[:3]) + (f",+{len(uniq) - 3}" if len(uniq) > 3 else ""))
    for i in ex.all_issues() if issues is None else issues:
        if i.severity >= Severity.WARNING or REGISTRY[i.code].stage == "pairing":
            flags.append(i.code)
            if i.severity >= Severity.WARNING and (worst is None or i.severity > worst):
                worst = i.severity
    return list(dict.fromkeys(flags)), worst


def topics_text(topics: dict[str, list[int]], limit: int = 3) -> str:
    parts = []
    for name, parts_ in list(topics.items())[:limit]:
        ps = sorted(set(parts_))
        parts.append(f"{name}[{','.join(map(str, ps))}]" if ps else name)
    if len(topics) > limit:
        parts.append(f"+{len(topics) - limit} more")
    return " ".join(parts)


def stats_tables(stats: Stats, outcome, insights=None) -> dict:
    """Every summary table of a run, as plain rows (its :class:`~analyzer.pipeline.Outcome`
    supplies the counters and the knowledge; ``insights``, an
    :class:`~analyzer.session.insights.Insights`, the consumer groups over time and the producers)."""
    k = outcome.knowledge
    now = outcome.last_ts if outcome.packets else None
    tables = {
        "capture": {
            "packets": outcome.packets,
            "tcp_connections": outcome.connections,
            "exchanges": stats.exchanges,
            "first_ts": outcome.first_ts,
            "last_ts": outcome.last_ts,
            "skipped_packets": {str(r): n for r, n in outcome.skipped.items()},
            # packets the kernel dropped (live captures that count them), else None
            "dropped_packets": outcome.dropped,
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
        **(insights.tables(now) if insights is not None else {k: [] for k in INSIGHT_TABLES}),
        "tls": tls_rows(stats),
        "anomalies": stats.anomaly_rows(),
    }
    bounded = bounds_rows(stats, insights, k)
    if bounded:  # only when a table let entries go (or latencies went to buckets)
        tables["evictions"] = bounded
    return tables


def bounds_rows(stats: Stats, insights=None, knowledge=None) -> list[dict]:
    """What the run let go to stay bounded, a row per table (:class:`~analyzer.session.bounded.Evictions`):
    the knowledge's (names learnt), the statistics' and the insights' tables, the latencies kept
    in buckets (the TCP connections closed early are a capture issue of their own)."""
    known = knowledge.evictions.rows(stats.bounds) if knowledge is not None else []
    return known + stats.bounds_rows() + (insights.bounds_rows() if insights is not None else [])


def tls_rows(stats: Stats) -> list[dict]:
    """TLS connections grouped by server, version, cipher, SNI and whether they were decrypted."""
    groups: dict[tuple, dict] = {}
    for info in stats.connections.values():
        t = info.tls
        if t is None:
            continue
        server = str(info.broker) if info.client_direction is not None else str(info.b)
        key = (server, t["version"], t["cipher"], t["sni"], t["decrypted"])
        row = groups.get(key)
        if row is None:
            row = groups[key] = {
                "server": server,
                "version": t["version"],
                "cipher": t["cipher"],
                "sni": t["sni"],
                "connections": 0,
                "bytes": 0,
                "decrypted": "yes" if t["decrypted"] else "no",
            }
        row["connections"] += 1
        row["bytes"] += sum(info.bytes)
    return [groups[k] for k in sorted(groups, key=lambda k: tuple(str(x) for x in k))]


INSIGHT_TABLES = (
    "group_health",
    "producers",
    "transactions",
    "e2e",
    "readiness",
)  # the sections of Insights.tables
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
    "group_health": (
        "Consumer groups over time (groups CAPTURE: the timeline)",
        [
            "group_id",
            "rebalances",
            "longest_rebalance_ms",
            "rebalancing_ms",
            "longest_pause_ms",
            "paused_ms",
            "status",
            "max_lag",
            "max_lag_s",
            "coverage",
        ],
    ),
    "producers": ("Producers (export: producer, retry objects)", list(PRODUCER_COLUMNS)),
    "transactions": (
        "Transactions (export: transaction objects)",
        ["transactional_id", "commit", "abort", "hanging", "open", "failed", "longest_ms", "records"],
    ),
    "e2e": ("End-to-end latency, Produce request to Fetch answer (export: e2e objects)", list(E2E_COLUMNS)),
    "readiness": (
        f"Clients' readiness for Kafka {CURRENT_RELEASE} and hygiene (clients CAPTURE --target V)",
        [
            "client_id",
            "client",
            "software",
            "ready",
            "removed_versions",
            "old_formats",
            "metadata_rate",
            "throttle_ms",
            "findings",
        ],
    ),
    "tls": ("TLS", ["server", "version", "cipher", "sni", "connections", "bytes", "decrypted"]),
    "anomalies": ("Anomalies", ["anomaly", "count", "example"]),
    "evictions": ("Let go to stay bounded (--state-idle, --state-max)", ["table", "said"]),
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
