"""Statistics over pipeline events: a pure accumulator that front ends render.

Per API (count, latency percentiles, errors by name), per topic (produced and fetched records
and bytes), per client, per connection, and anomalies (CRC errors, gaps, unanswered requests,
error codes, unsupported versions, resynchronisations).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import NamedTuple

from analyzer.dissect import schema
from analyzer.dissect.apikeys import PRODUCE
from analyzer.dissect.errors import ERRORS
from analyzer.events import CaptureIssue, ConnectionEnd, ConnIssue, Event
from analyzer.issues import PAIRING_NO_RESPONSE, REGISTRY
from analyzer.model import ConnInfo, Exchange, Message, Severity
from analyzer.plain import field, record, replace
from analyzer.session.bounded import DEFAULT_BOUNDS, Bounds, Evictions, Expiry, Latencies
from analyzer.session.entities import TopicRef, topic_refs
from analyzer.session.records import FETCH_APIS

# pairing issues are anomalies even as notes (unanswered requests, acks=0...)
_PAIRING = frozenset(code for code, kind in REGISTRY.items() if kind.stage == "pairing")


def notable(code: str, severity: Severity) -> bool:
    """Whether an exchange's issue is an anomaly: warnings and worse, and every pairing issue
    (unanswered requests, acks=0... even as notes)."""
    return severity >= Severity.WARNING or code in _PAIRING


def percentile(sorted_values: list[float], q: float) -> float | None:
    """Nearest-rank percentile of already sorted values."""
    if not sorted_values:
        return None
    k = max(0, min(len(sorted_values) - 1, int(round(q / 100.0 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[k]


def error_names(msg: Message | None) -> list[str]:
    """Names of the non-zero error codes of a message (collected while decoding)."""
    if msg is None:
        return []
    return [ERRORS.get(c, (f"UNKNOWN_ERROR_CODE({c})",))[0] for c in msg.errors]


def record_totals(msg: Message | None, topic_ids: dict[str, str] | None = None) -> dict[str, list[int]]:
    """topic -> [records, bytes] carried by the records fields of a Produce request or Fetch
    response (record counts from batch headers, so no record body is decoded)."""
    out: dict[str, list[int]] = {}
    for t in topic_refs(msg, topic_ids):
        nrec, nbytes = _topic_counts(t)
        acc = out.get(t.topic)
        if acc is None:
            out[t.topic] = [nrec, nbytes]
        else:
            acc[0] += nrec
            acc[1] += nbytes
    return out


def topic_record_counts(msg: Message | None, topic_ids: dict[str, str] | None = None):
    """(topic ref, records, bytes) of each topic struct of ``msg``, in body order."""
    for t in topic_refs(msg, topic_ids):
        nrec, nbytes = _topic_counts(t)
        yield t, nrec, nbytes


def _topic_counts(t: TopicRef) -> tuple[int, int]:
    """Records and bytes of one topic struct's records fields (what partition_records picks,
    read in one loop: every Produce and Fetch exchange is counted)."""
    nrec = nbytes = 0
    for _partition, p in t.partitions:
        if p is None:
            continue
        for x in p.children or ():
            if x.type == "records" and x.children:
                for b in x.children:
                    v = b.value
                    if isinstance(v, dict):
                        nrec += v.get("record_count") or 0
                        nbytes += v.get("bytes") or 0
    return nrec, nbytes


class ExchangeFacts(NamedTuple):
    """What :class:`Stats` counts of one exchange (:func:`exchange_facts`): small and picklable,
    so that processes analysing parts of a capture hand it to the one that sums."""

    ts: float
    api_key: int | None
    api_name: str
    latency: float | None
    request_bytes: int | None  # frame sizes with their 4-byte prefix; None when absent
    response_bytes: int | None
    errors: list[str]  # names of the response's error codes
    issues: list[tuple[str, Severity, str]]  # (code, severity, message) of all its issues
    client_id: str | None
    response_errors: bool  # the response has error codes
    topics: list[str]  # its topic labels
    record_counts: list[tuple[str, int, int]]  # (topic, records, bytes) carried by Produce / Fetch


def exchange_facts(ex: Exchange, topic_ids: dict[str, str] | None = None) -> ExchangeFacts:
    """What :class:`Stats` counts of an exchange, in a small picklable tuple (so that processes
    that analyse parts of a capture can hand it to the one that sums)."""
    key = ex.api_key
    name = (schema.api_name(key) if key is not None else None) or (
        f"Api{key}" if key is not None else "(unknown)"
    )
    req, resp = ex.request, ex.response
    totals: list[tuple[str, int, int]] = []
    if key == PRODUCE and req is not None:
        totals = [(t, n, b) for t, (n, b) in record_totals(req, topic_ids).items()]
    elif key in FETCH_APIS and resp is not None:
        totals = [(t, n, b) for t, (n, b) in record_totals(resp, topic_ids).items()]
    return ExchangeFacts(
        ex.ts,
        key,
        name,
        ex.latency,
        req.frame.length + 4 if req is not None else None,
        resp.frame.length + 4 if resp is not None else None,
        error_names(resp),
        [(i.code, i.severity, i.message) for i in ex.all_issues()],
        ex.client_id,
        resp is not None and bool(resp.errors),
        list(ex.topics),
        totals,
    )


@record
class ApiStats:
    count: int = 0
    # exact (8 bytes a latency) up to Bounds.exact_latencies, then log buckets
    latencies: Latencies = field(default_factory=Latencies)
    errors: Counter = field(default_factory=Counter)
    unanswered: int = 0
    req_bytes: int = 0
    resp_bytes: int = 0


@record
class TopicStats:
    produced_records: int = 0
    produced_bytes: int = 0
    fetched_records: int = 0
    fetched_bytes: int = 0
    requests: int = 0


@record
class ClientStats:
    requests: int = 0
    errors: int = 0
    connections: int = 0  # distinct connections it sent requests on (Stats.client_connection)
    software: str | None = None


class Stats:
    """Feed it every pipeline event (:meth:`add`); read the tables afterwards."""

    def __init__(self, topic_ids: dict[str, str] | None = None, bounds: Bounds = DEFAULT_BOUNDS) -> None:
        self.topic_ids = topic_ids if topic_ids is not None else {}  # shared with the Knowledge
        self.bounds = bounds
        # the tables that grow with the traffic (connections, clients, topics) let go the
        # longest idle past the bounds, counted (self.evictions)
        self.evictions = Evictions()
        self.expiry = {
            "stats_connections": Expiry("stats_connections", self._forget_connection, self.evictions, bounds),
            "stats_clients": Expiry("stats_clients", self._forget_client, self.evictions, bounds),
            # a topic's totals are let go past --state-max only: a capture set spans days, and
            # its earlier pieces' topics must stay counted (few topics: the size bounds them)
            "stats_topics": Expiry(
                "stats_topics", self._forget_topic, self.evictions, replace(bounds, idle=None)
            ),
        }
        self.apis: dict[tuple[int, str], ApiStats] = defaultdict(ApiStats)
        self.topics: dict[str, TopicStats] = defaultdict(TopicStats)
        self.clients: dict[str, ClientStats] = defaultdict(ClientStats)
        self.connections: dict[int, ConnInfo] = {}
        # connection id -> the client ids that sent requests on it (counted once per connection;
        # let go with the connection's row)
        self.conn_clients: dict[int, set[str]] = {}
        self.conn_exchanges: Counter = Counter()
        self.anomalies: Counter = Counter()
        self.anomaly_examples: dict[str, str] = {}
        self.exchanges = 0
        self.first_ts: float | None = None
        self.last_ts: float | None = None

    def event(self, ev: Event) -> None:
        t = type(ev)
        if t is Exchange:
            self._exchange(ev)  # type: ignore[arg-type]  # t = type(ev) once per event; mypy narrows only inline
        elif t is ConnIssue or t is CaptureIssue:
            self.anomaly(ev.issue.code, ev.issue.message)  # type: ignore[union-attr]  # t = type(ev) once per event; mypy narrows only inline
        elif t is ConnectionEnd:
            self.connection(ev.conn)  # type: ignore[union-attr]  # t = type(ev) once per event; mypy narrows only inline

    def connection(self, info: ConnInfo) -> None:
        """A connection's end (shown in the connections table)."""
        self.connections[info.id] = info
        self.expiry["stats_connections"].touch(info.id, info.ts_last)

    def _forget_connection(self, conn_id) -> None:
        self.connections.pop(conn_id, None)
        self.conn_exchanges.pop(conn_id, None)
        self.conn_clients.pop(conn_id, None)

    def client_connection(self, c: ClientStats, label: str, conn_id: int) -> None:
        """Client ``label`` (its :class:`ClientStats` ``c``) sent a request on ``conn_id``."""
        seen = self.conn_clients.get(conn_id)
        if seen is None:
            seen = self.conn_clients[conn_id] = set()
        if label not in seen:
            seen.add(label)
            c.connections += 1

    def _forget_client(self, client_id) -> None:
        self.clients.pop(client_id, None)

    def _forget_topic(self, topic) -> None:
        self.topics.pop(topic, None)

    def merge(self, other: Stats) -> None:
        """Add another accumulator's counts (a live capture's fanout workers, each with its own
        flows): every table is a sum, a union or a concatenation, so percentiles stay exact."""
        for k, o in other.apis.items():
            a = self.apis[k]
            if not a.count:
                a.latencies.cap = self.bounds.exact_latencies
            a.count += o.count
            a.latencies.extend(o.latencies)
            a.errors.update(o.errors)
            a.unanswered += o.unanswered
            a.req_bytes += o.req_bytes
            a.resp_bytes += o.resp_bytes
        for topic, ot in other.topics.items():
            t = self.topics[topic]
            t.produced_records += ot.produced_records
            t.produced_bytes += ot.produced_bytes
            t.fetched_records += ot.fetched_records
            t.fetched_bytes += ot.fetched_bytes
            t.requests += ot.requests
        for client, oc in other.clients.items():
            c = self.clients[client]
            c.requests += oc.requests
            c.errors += oc.errors
            c.connections += oc.connections  # (each process its own connections)
            c.software = c.software or oc.software
        self.connections.update(other.connections)
        self.conn_clients.update(other.conn_clients)
        self.conn_exchanges.update(other.conn_exchanges)
        self.evictions.merge(other.evictions)
        self.anomalies.update(other.anomalies)
        for code, example in other.anomaly_examples.items():
            self.anomaly_examples.setdefault(code, example)
        self.exchanges += other.exchanges
        for ts in (other.first_ts, other.last_ts):
            if ts is None:
                continue
            if self.first_ts is None or ts < self.first_ts:
                self.first_ts = ts
            if self.last_ts is None or ts > self.last_ts:
                self.last_ts = ts

    def anomaly(self, code: str, example: str) -> None:
        self.anomalies[code] += 1
        self.anomaly_examples.setdefault(code, example)

    def _exchange(self, ex: Exchange) -> None:
        self.apply(ex.conn.id, ex.conn, exchange_facts(ex, self.topic_ids))

    def apply(self, conn_id: int, conn: ConnInfo | None, facts: ExchangeFacts) -> None:
        """Count one exchange from its :func:`exchange_facts` (``conn``: its connection, shown
        unless a connection end replaces it)."""
        (ts, key, name, lat, req_bytes, resp_bytes, errors, issues, cid, resp_errors, topics, totals) = facts
        self.exchanges += 1
        if self.first_ts is None or ts < self.first_ts:
            self.first_ts = ts
        if self.last_ts is None or ts > self.last_ts:
            self.last_ts = ts
        self.connections.setdefault(conn_id, conn)  # type: ignore[arg-type]  # None only until the connection's end, which every run has
        self.conn_exchanges[conn_id] += 1
        expiry = self.expiry
        expiry["stats_connections"].touch(conn_id, ts)
        a = self.apis[(key if key is not None else -1, name)]
        if not a.count:
            a.latencies.cap = self.bounds.exact_latencies
        a.count += 1
        if lat is not None:
            a.latencies.append(lat)
        if req_bytes is not None:
            a.req_bytes += req_bytes
        if resp_bytes is not None:
            a.resp_bytes += resp_bytes
            for n in errors:
                a.errors[n] += 1
                self.anomaly(f"kafka.{n}", f"{name} response with error {n}")
        for code, severity, message in issues:
            if code == PAIRING_NO_RESPONSE.code:
                a.unanswered += 1
            if notable(code, severity):
                self.anomaly(code, message)
        if req_bytes is not None:
            label = cid if cid is not None else "(none)"
            c = self.clients[label]
            expiry["stats_clients"].touch(label, ts)
            c.requests += 1
            self.client_connection(c, label, conn_id)
            if resp_errors:
                c.errors += 1
        for topic in topics:
            self.topics[topic].requests += 1
        topic_expiry = expiry["stats_topics"]
        for topic in topics:
            topic_expiry.touch(topic, ts)
        for topic, _n, _b in totals:
            topic_expiry.touch(topic, ts)
        if key == PRODUCE:
            for topic, nrec, nbytes in totals:
                t = self.topics[topic]
                t.produced_records += nrec
                t.produced_bytes += nbytes
        else:
            for topic, nrec, nbytes in totals:
                t = self.topics[topic]
                t.fetched_records += nrec
                t.fetched_bytes += nbytes

    # -- tables --------------------------------------------------------------------------------
    def api_rows(self) -> list[dict]:
        rows = []
        for (key, name), a in sorted(self.apis.items()):
            p50, p95, p99 = a.latencies.percentiles((50, 95, 99))
            rows.append(
                {
                    "api_key": key if key >= 0 else None,
                    "api_name": name,
                    "count": a.count,
                    "p50_ms": _ms(p50),
                    "p95_ms": _ms(p95),
                    "p99_ms": _ms(p99),
                    "max_ms": _ms(a.latencies.max),
                    "unanswered": a.unanswered,
                    "request_bytes": a.req_bytes,
                    "response_bytes": a.resp_bytes,
                    "errors": dict(a.errors.most_common()),
                }
            )
        return rows

    def topic_rows(self) -> list[dict]:
        return [
            {
                "topic": name,
                "requests": t.requests,
                "produced_records": t.produced_records,
                "produced_bytes": t.produced_bytes,
                "fetched_records": t.fetched_records,
                "fetched_bytes": t.fetched_bytes,
            }
            for name, t in sorted(self.topics.items())
        ]

    def client_rows(self, knowledge=None) -> list[dict]:
        rows = []
        for cid, c in sorted(self.clients.items()):
            sw = knowledge.clients.get(cid) if knowledge is not None else None
            rows.append(
                {
                    "client_id": cid,
                    "software": " ".join(x for x in sw if x) if sw else None,
                    "requests": c.requests,
                    "responses_with_errors": c.errors,
                    "connections": c.connections,
                }
            )
        return rows

    def connection_rows(self) -> list[dict]:
        rows = []
        for cid, info in sorted(self.connections.items()):
            known = info.client_direction is not None
            cd = info.client_direction or 0
            rows.append(
                {
                    "connection": cid,
                    "client": str(info.client) if known else str(info.a),
                    "broker": str(info.broker) if known else str(info.b),
                    "exchanges": self.conn_exchanges[cid],
                    "requests": info.frames[cd] if known else 0,
                    "responses": info.frames[1 - cd] if known else 0,
                    "bytes_to_broker": info.bytes[cd],
                    "bytes_to_client": info.bytes[1 - cd],
                    "gaps": sum(info.gaps),
                    "duration_s": round(max(info.ts_last - info.ts_first, 0.0), 6),
                    "status": info.not_kafka and f"not Kafka: {info.not_kafka}" or info.closed or "open",
                }
            )
        return rows

    def entries(self) -> dict[str, int]:
        """Entries per bounded table now."""
        return {name: len(e) for name, e in self.expiry.items()}

    def bounds_rows(self) -> list[dict]:
        """What was let go or approximated to stay bounded: a row per table with evictions, a
        row per API whose percentiles come from log buckets (empty: nothing)."""
        rows = self.evictions.rows(self.bounds)
        for (_key, name), a in sorted(self.apis.items()):
            if a.latencies.approximate:
                rows.append(
                    {
                        "table": f"latencies {name}",
                        "expired_idle": 0,
                        "evicted_full": 0,
                        "said": f"{name} latency percentiles approximate (log buckets, within 1%): "
                        f"more than {self.bounds.exact_latencies} latencies; max exact",
                    }
                )
        return rows

    def anomaly_rows(self) -> list[dict]:
        return [
            {"anomaly": code, "count": n, "example": self.anomaly_examples.get(code, "")}
            for code, n in self.anomalies.most_common()
        ]


def _ms(v: float | None) -> float | None:
    return None if v is None else round(v * 1000.0, 3)
