"""Metrics of a run, in plain counters and histograms: what ``stats --metrics-file`` writes and
``live --metrics`` serves (the Prometheus exposition is the front end's,
:mod:`analyzer.cli.metrics`; nothing here knows Prometheus' library).

:class:`Metrics` is a consumer: per exchange (:meth:`Metrics.apply` of the statistics'
:class:`~analyzer.session.stats.ExchangeFacts` and :func:`metric_extra`) it counts requests by
API, version and client software, errors by API and error, request and response bytes, latency
in histogram buckets, throttle time, and per client id and per topic their traffic; per issue its
code, stream gaps. :meth:`Metrics.merge` adds another's counts (``live``'s workers); ``-j``
processes hand their facts to one :class:`Metrics` in capture order, as one process has them.

Label values that come from the wire (client ids, topics, client software, groups) are bounded:
at most ``track`` values of each are counted apart (:class:`MetricLimits`), the rest under
:data:`OTHER` from their first request (``kafka_analyzer_label_overflow_total`` counts those
observations); the exposition shows the ``limit`` values with the most traffic and folds the rest
into :data:`OTHER`. A live exposition keeps the values it showed once (:class:`Shown`), so that no
series disappears between two scrapes.

:func:`families` turns the counts, the run's :class:`~analyzer.pipeline.Outcome` (or a live
capture's health) and the :class:`~analyzer.session.insights.Insights` (lag, Burrow status,
rebalances, producers, transactions) into :class:`Family` rows, plain data.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from analyzer import __version__
from analyzer.dissect import schema
from analyzer.dissect.apikeys import API_VERSIONS
from analyzer.events import CaptureIssue, ConnectionEnd, ConnIssue
from analyzer.issues import PAIRING_NO_RESPONSE, STREAM_GAP
from analyzer.model import Exchange
from analyzer.session.bounded import DEFAULT_BUCKETS, Evictions
from analyzer.session.burrow import Status
from analyzer.session.stats import ExchangeFacts, exchange_facts, notable

OTHER = "other"  # the label value of everything past a bound
UNKNOWN = "unknown"  # a client software never named (no ApiVersions v3+ seen), an unknown version
PREFIX = "kafka_analyzer_"
UNKNOWN_ERROR_OTHER = "UNKNOWN_ERROR_CODE(other)"  # the unknown codes past MetricLimits.unknown_errors
UNKNOWN_API = "(unknown)"  # an api key the protocol table does not have (as an answer without request)
UNSUPPORTED = "unsupported"  # a request version outside the protocol table's range for its API


@dataclass(frozen=True)
class MetricLimits:
    """The bounds of the labels that come from the wire: ``limit`` values shown (the ones with
    the most traffic), ``track`` values of each counted apart at most."""

    clients: int = 50
    topics: int = 50
    software: int = 20
    groups: int = 50
    partitions: int = 500  # lag series (group, topic, partition)
    unknown_errors: int = 20  # UNKNOWN_ERROR_CODE(n) error labels, the rest as UNKNOWN_ERROR_OTHER
    track: int = 10  # times the limit: values counted apart before the rest go to OTHER
    buckets: tuple[float, ...] = DEFAULT_BUCKETS

    def tracked(self, limit: int) -> int:
        return max(1, limit) * max(1, self.track)


DEFAULT_LIMITS = MetricLimits()


class Bounded:
    """Rows of numbers per label value, at most ``cap`` values apart; the rest under OTHER."""

    __slots__ = ("cap", "width", "rows", "overflow")

    def __init__(self, cap: int, width: int) -> None:
        self.cap, self.width = cap, width
        self.rows: dict[str, list] = {}
        self.overflow = 0  # observations of values that found no room (counted under OTHER)

    def row(self, value: str) -> list:
        r = self.rows.get(value)
        if r is None:
            if len(self.rows) >= self.cap + (OTHER in self.rows):
                self.overflow += 1
                value = OTHER
                r = self.rows.get(OTHER)
                if r is not None:
                    return r
            r = self.rows[value] = [0] * self.width
        return r

    def merge(self, other: Bounded) -> None:
        self.overflow += other.overflow
        for value, o in other.rows.items():
            r = self.rows.get(value)
            if r is None:
                if len(self.rows) >= self.cap + (OTHER in self.rows) and value != OTHER:
                    self.overflow += o[0]
                    value = OTHER
                r = self.rows.setdefault(value, [0] * self.width)
            for i, x in enumerate(o):
                r[i] += x

    def top(self, limit: int, shown: set[str] | None = None) -> tuple[list[tuple[str, list]], int]:
        """The rows to show: the ``limit`` values with the most traffic (first number; ties by
        name), the rest summed under OTHER; and how many values were folded. ``shown``: values
        shown before (live), kept, and the new ones added to it."""
        ranked = sorted((v for v in self.rows if v != OTHER), key=lambda v: (-self.rows[v][0], v))
        keep = [v for v in ranked if v in shown] if shown is not None else []
        for v in ranked:
            if len(keep) >= limit:
                break
            if v not in keep:
                keep.append(v)
                if shown is not None:
                    shown.add(v)
        chosen = set(keep)
        folded = [v for v in self.rows if v not in chosen]
        out = [(v, self.rows[v]) for v in sorted(chosen)]
        if folded:
            acc = [0] * self.width
            for v in folded:
                for i, x in enumerate(self.rows[v]):
                    acc[i] += x
            out.append((OTHER, acc))
        return out, sum(1 for v in folded if v != OTHER)


def metric_extra(ex: Exchange) -> tuple[int | None, int, str | None]:
    """What :class:`Metrics` counts of an exchange beyond its
    :class:`~analyzer.session.stats.ExchangeFacts`: (api version, throttle time in ms, the
    client software an ApiVersions request names)."""
    req, resp = ex.request, ex.response
    version = ex.api_version
    throttle = 0
    if resp is not None and resp.body is not None:
        t = resp.body.get("throttle_time_ms")
        if isinstance(t, int) and t > 0:
            throttle = t
    software = None
    if req is not None and req.api_key == API_VERSIONS and req.body is not None:
        name, ver = req.body.get("client_software_name"), req.body.get("client_software_version")
        if isinstance(name, str) and name:
            software = f"{name} {ver}" if ver else name
    return version, throttle, software


def _api_labels(key: int | None, name: str, version: int | None) -> tuple[str, str]:
    """The ``api`` and ``version`` labels of an exchange: bounded by the protocol table (the
    frames a stream resynchronised on after lost packets may carry any 16-bit key and version):
    a key it does not have is :data:`UNKNOWN_API`, a version outside its range for the API
    :data:`UNSUPPORTED`."""
    r = schema.version_range(key) if key is not None else None
    if r is None:
        return UNKNOWN_API, UNKNOWN if version is None else UNSUPPORTED
    if version is None:
        return name, UNKNOWN
    return name, str(version) if r[0] <= version <= r[1] else UNSUPPORTED


class Metrics:
    """The consumer: counters and histograms of the exchanges, issues and connections."""

    def __init__(
        self, limits: MetricLimits = DEFAULT_LIMITS, topic_ids: dict[str, str] | None = None
    ) -> None:
        self.limits = limits
        self.topic_ids = topic_ids if topic_ids is not None else {}
        self.requests: dict[tuple[str, str, str], int] = {}  # (api, version, software) -> n
        self.errors: dict[tuple[str, str], int] = {}  # (api, error) -> n
        self.bytes: dict[str, list[int]] = {}  # api -> [request bytes, response bytes]
        self.latency: dict[str, list] = {}  # api -> bucket counts..., +Inf count, sum
        self.throttle: dict[str, list[int]] = {}  # api -> [throttled responses, ms]
        self.unanswered: dict[str, int] = {}
        self.issues: dict[str, int] = {}  # issue code -> n (as stats' anomalies, Kafka errors apart)
        self.gaps = 0
        self.evicted = 0  # TCP connections closed early (more open at once than tracked)
        # the statistics' bounded tables (Stats.evictions, Stats.entries(): state_of)
        self.state_evictions = Evictions()
        self.state_entries: dict[str, int] = {}
        self.connections_ended = 0
        self.exchanges = 0
        # client id -> [requests, responses with errors, request bytes, response bytes]
        self.clients = Bounded(limits.tracked(limits.clients), 4)
        # topic -> [requests, produced records, produced bytes, fetched records, fetched bytes]
        self.topics = Bounded(limits.tracked(limits.topics), 5)
        self.software: dict[str, str] = {}  # client id -> its software (ApiVersions v3+)
        self.software_seen: set[str] = set()
        self.software_overflow = 0
        self.unknown_errors: set[str] = set()  # UNKNOWN_ERROR_CODE(n) labels counted apart
        self.unknown_overflow = 0

    def __getstate__(self) -> dict:
        """Pickled without the topic ids (the knowledge's, which another thread may be changing:
        a worker sends its counts from its sender thread)."""
        return {k: v for k, v in self.__dict__.items() if k != "topic_ids"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.topic_ids = {}

    # -- feeding ----------------------------------------------------------------------------------------
    def event(self, ev) -> None:
        t = type(ev)
        if t is Exchange:
            self.apply(exchange_facts(ev, self.topic_ids), metric_extra(ev))
        elif t is ConnIssue or t is CaptureIssue:
            self.issue(ev.issue.code)
        elif t is ConnectionEnd:
            self.connections_ended += 1

    def issue(self, code: str) -> None:
        """A connection's or the capture's issue."""
        self.issues[code] = self.issues.get(code, 0) + 1
        if code == STREAM_GAP.code:
            self.gaps += 1

    def apply(self, facts: ExchangeFacts, extra: tuple[int | None, int, str | None] | None) -> None:
        """Count one exchange (its facts as :class:`~analyzer.session.stats.Stats` counts them,
        :func:`metric_extra`)."""
        version, throttle, software = extra if extra is not None else (None, 0, None)
        api, ver = _api_labels(facts.api_key, facts.api_name, version)
        cid = facts.client_id if facts.client_id is not None else "(none)"
        self.exchanges += 1
        key = (api, ver, self._software(facts.client_id, software))
        self.requests[key] = self.requests.get(key, 0) + 1
        for e in facts.errors:
            if e.startswith("UNKNOWN_ERROR_CODE(") and e not in self.unknown_errors:
                # the registry bounds error names, except an unknown code's, of any number
                if len(self.unknown_errors) >= self.limits.unknown_errors:
                    self.unknown_overflow += 1
                    e = UNKNOWN_ERROR_OTHER
                else:
                    self.unknown_errors.add(e)
            k = (api, e)
            self.errors[k] = self.errors.get(k, 0) + 1
        b = self.bytes.get(api)
        if b is None:
            b = self.bytes[api] = [0, 0]
        if facts.request_bytes is not None:
            b[0] += facts.request_bytes
        if facts.response_bytes is not None:
            b[1] += facts.response_bytes
        if facts.latency is not None:
            self._latency(api, facts.latency)
        if throttle:
            t = self.throttle.get(api)
            if t is None:
                t = self.throttle[api] = [0, 0]
            t[0] += 1
            t[1] += throttle
        for code, severity, _message in facts.issues:
            if code == PAIRING_NO_RESPONSE.code:
                self.unanswered[api] = self.unanswered.get(api, 0) + 1
            if notable(code, severity):
                self.issues[code] = self.issues.get(code, 0) + 1
        if facts.request_bytes is not None:
            c = self.clients.row(cid)
            c[0] += 1
            c[1] += facts.response_errors
            c[2] += facts.request_bytes
            c[3] += facts.response_bytes or 0
        for topic in facts.topics:
            self.topics.row(topic)[0] += 1
        produce = facts.api_key == 0
        for topic, nrec, nbytes in facts.record_counts:
            r = self.topics.row(topic)
            if produce:
                r[1] += nrec
                r[2] += nbytes
            else:
                r[3] += nrec
                r[4] += nbytes

    def _software(self, client_id: str | None, software: str | None) -> str:
        """The client software label of a request (learnt from the client id's ApiVersions)."""
        if software is not None and client_id is not None:
            self.software[client_id] = software
            if len(self.software) > self.limits.tracked(self.limits.clients):
                del self.software[next(iter(self.software))]
        sw = (
            self.software.get(client_id if client_id is not None else "(none)", UNKNOWN)
            if software is None
            else software
        )
        if sw not in self.software_seen:
            if len(self.software_seen) >= self.limits.software:
                self.software_overflow += 1
                return OTHER
            self.software_seen.add(sw)
        return sw

    def _latency(self, api: str, lat: float) -> None:
        h = self.latency.get(api)
        buckets = self.limits.buckets
        if h is None:
            h = self.latency[api] = [0] * (len(buckets) + 1) + [0.0]
        i = bisect_left(buckets, lat)  # the first bound >= lat (le: less or equal)
        h[i] += 1
        h[-1] += lat

    def state_of(self, stats, knowledge=None) -> None:
        """Take the bounded tables' evictions and sizes of ``stats`` (a
        :class:`~analyzer.session.stats.Stats`) and ``knowledge`` as they are now."""
        self.state_evictions = Evictions()
        self.state_evictions.merge(stats.evictions)
        self.state_entries = stats.entries()
        if knowledge is not None:
            self.state_evictions.merge(knowledge.evictions)
            self.state_entries.update(knowledge.entries())

    def merge(self, other: Metrics) -> None:
        """Add another's counts (live workers, each with its own connections)."""
        for mine, theirs in (
            (self.requests, other.requests),
            (self.unanswered, other.unanswered),
            (self.issues, other.issues),
        ):
            _add_counts(mine, theirs)
        for table, rows in (
            (self.bytes, other.bytes),
            (self.throttle, other.throttle),
            (self.latency, other.latency),
        ):
            _add_rows(table, rows)
        self.gaps += other.gaps
        self.evicted += other.evicted
        self.state_evictions.merge(other.state_evictions)
        for name, n in other.state_entries.items():
            self.state_entries[name] = self.state_entries.get(name, 0) + n
        self.connections_ended += other.connections_ended
        self.exchanges += other.exchanges
        self.clients.merge(other.clients)
        self.topics.merge(other.topics)
        self.software_seen |= other.software_seen
        self.software_overflow += other.software_overflow
        self.unknown_overflow += other.unknown_overflow
        for (api, e), n in other.errors.items():
            if e in other.unknown_errors and e not in self.unknown_errors:
                if len(self.unknown_errors) >= self.limits.unknown_errors:
                    self.unknown_overflow += n
                    e = UNKNOWN_ERROR_OTHER
                else:
                    self.unknown_errors.add(e)
            self.errors[(api, e)] = self.errors.get((api, e), 0) + n


def _add_counts(mine: dict[Any, int], theirs: dict[Any, int]) -> None:
    for k, n in theirs.items():
        mine[k] = mine.get(k, 0) + n


def _add_rows(mine: dict[str, list], theirs: dict[str, list]) -> None:
    for k, row in theirs.items():
        r = mine.get(k)
        if r is None:
            mine[k] = list(row)
        else:
            for i, x in enumerate(row):
                r[i] += x


@dataclass
class Health:
    """A capture's health as the exposition shows it: offline, the outcome's; live, the source's
    counters as they grow."""

    packets: int = 0
    received: int | None = None  # the kernel's count (live)
    kernel_dropped: int | None = None
    ring_full: int | None = None  # times the ring was full (live, TPACKET_V3's freeze count)
    connections: int = 0  # TCP connections seen
    tracked: int | None = None  # TCP connections tracked now (live)
    running: bool = False


class Family(NamedTuple):
    """One metric family as plain data: ``kind`` counter, gauge or histogram; each sample
    (label values, value), a histogram's (label values, (cumulative bucket counts by upper bound,
    sum, count))."""

    name: str
    kind: str
    help: str
    labels: tuple[str, ...]
    samples: list


@dataclass
class Shown:
    """The label values a live exposition showed once, kept shown (per label)."""

    values: dict[str, set[str]] = field(default_factory=dict)

    def of(self, label: str) -> set[str]:
        return self.values.setdefault(label, set())


def families(  # noqa: C901 - one family after the other
    m: Metrics,
    health: Health,
    insights=None,
    now: float | None = None,
    shown: Shown | None = None,
    final: bool = True,
) -> list[Family]:
    """Every metric family of a run: ``m``'s counts, ``health``, and ``insights`` (an
    :class:`~analyzer.session.insights.Insights`) at ``now``; ``final``: the run is over (the
    producers' last batches judged), else a live view (nothing closed)."""
    lim = m.limits
    out: list[Family] = []

    def add(name: str, kind: str, help_: str, labels: tuple[str, ...], samples: list) -> None:
        out.append(Family(PREFIX + name, kind, help_, labels, samples))

    add("build_info", "gauge", "kafka-analyzer's version", ("version",), [((__version__,), 1)])
    add(
        "requests_total",
        "counter",
        "Kafka exchanges by API, request version and client software (KIP-511); an API key the "
        'protocol table lacks is api="(unknown)", a version outside its range version="unsupported"',
        ("api", "version", "client_software"),
        [(k, n) for k, n in sorted(m.requests.items())],
    )
    add(
        "errors_total",
        "counter",
        "Error codes in responses, by API and error",
        ("api", "error"),
        [(k, n) for k, n in sorted(m.errors.items())],
    )
    add(
        "request_bytes_total",
        "counter",
        "Request frame bytes (with their size prefix) by API",
        ("api",),
        [((k,), b[0]) for k, b in sorted(m.bytes.items())],
    )
    add(
        "response_bytes_total",
        "counter",
        "Response frame bytes (with their size prefix) by API",
        ("api",),
        [((k,), b[1]) for k, b in sorted(m.bytes.items())],
    )
    add(
        "unanswered_requests_total",
        "counter",
        "Requests whose response was never seen, by API",
        ("api",),
        [((k,), n) for k, n in sorted(m.unanswered.items())],
    )
    hist = []
    for api, h in sorted(m.latency.items()):
        acc, buckets = 0, []
        for le, n in zip((*lim.buckets, float("inf")), h[:-1], strict=True):
            acc += n
            buckets.append((le, acc))
        hist.append(((api,), (buckets, h[-1], acc)))
    add("latency_seconds", "histogram", "Request to response time by API", ("api",), hist)
    add(
        "throttled_responses_total",
        "counter",
        "Responses with a throttle time, by API",
        ("api",),
        [((k,), t[0]) for k, t in sorted(m.throttle.items())],
    )
    add(
        "throttle_seconds_total",
        "counter",
        "Throttle time the brokers asked for, by API",
        ("api",),
        [((k,), t[1] / 1000.0) for k, t in sorted(m.throttle.items())],
    )
    clients, folded_clients = m.clients.top(lim.clients, shown.of("client_id") if shown else None)
    add(
        "client_requests_total",
        "counter",
        f"Requests by client id (the {lim.clients} with the most requests; the rest as {OTHER})",
        ("client_id",),
        [((c,), r[0]) for c, r in clients],
    )
    add(
        "client_error_responses_total",
        "counter",
        "Responses with error codes by client id",
        ("client_id",),
        [((c,), r[1]) for c, r in clients],
    )
    add(
        "client_bytes_total",
        "counter",
        "Request and response bytes by client id",
        ("client_id", "direction"),
        [((c, d), r[i]) for c, r in clients for d, i in (("request", 2), ("response", 3))],
    )
    topics, folded_topics = m.topics.top(lim.topics, shown.of("topic") if shown else None)
    add(
        "topic_requests_total",
        "counter",
        f"Requests naming a topic (the {lim.topics} most named; the rest as {OTHER})",
        ("topic",),
        [((t,), r[0]) for t, r in topics],
    )
    add(
        "topic_records_total",
        "counter",
        "Records produced (Produce requests) and fetched (Fetch responses) by topic",
        ("topic", "direction"),
        [((t, d), r[i]) for t, r in topics for d, i in (("produce", 1), ("fetch", 3))],
    )
    add(
        "topic_bytes_total",
        "counter",
        "Record batch bytes produced and fetched by topic",
        ("topic", "direction"),
        [((t, d), r[i]) for t, r in topics for d, i in (("produce", 2), ("fetch", 4))],
    )
    add(
        "issues_total",
        "counter",
        "Issues found (warnings and worse, and every pairing issue) by code",
        ("code",),
        [((k,), n) for k, n in sorted(m.issues.items())],
    )
    # capture health
    add("packets_total", "counter", "Packets read", (), [((), health.packets)])
    if health.received is not None:
        add("kernel_received_packets_total", "counter", "Packets the kernel saw", (), [((), health.received)])
    add(
        "dropped_packets_total",
        "counter",
        "Packets lost before the analysis, by where: the kernel's count (live captures; a full ring too)",
        ("where",),
        [(("kernel",), health.kernel_dropped or 0)],
    )
    add(
        "ring_full_total",
        "counter",
        "Times the capture ring was full (live, TPACKET_V3)",
        (),
        [((), health.ring_full or 0)],
    )
    add("tcp_connections_total", "counter", "TCP connections seen", (), [((), health.connections)])
    if health.tracked is not None:
        add("tcp_connections_tracked", "gauge", "TCP connections tracked now", (), [((), health.tracked)])
    add(
        "tcp_connections_evicted_total",
        "counter",
        "TCP connections closed early to stay within --max-connections",
        (),
        [((), m.evicted)],
    )
    evictions, entries = Evictions(), dict(m.state_entries)
    evictions.merge(m.state_evictions)
    if insights is not None:
        evictions.merge(insights.evictions())
        entries.update(insights.entries())
    let_go = evictions.totals()
    add(
        "evicted_total",
        "counter",
        "Entries let go from a long-lived table to stay bounded (idle past --state-idle, or the "
        "longest idle past --state-max), by table",
        ("table",),
        [((t,), let_go.get(t, 0)) for t in sorted(set(entries) | set(let_go))],
    )
    add(
        "table_entries",
        "gauge",
        "Entries in a long-lived bounded table now, by table",
        ("table",),
        [((t,), n) for t, n in sorted(entries.items())],
    )
    add("gaps_total", "counter", "Bytes never captured in a TCP stream (each gap)", (), [((), m.gaps)])
    add("exchanges_total", "counter", "Kafka exchanges paired (or unpaired)", (), [((), m.exchanges)])
    group_folds = _insight_families(add, insights, now, lim, shown, final) if insights is not None else {}
    folds = {"client_id": folded_clients, "topic": folded_topics, **group_folds}
    limits = {"client_id": lim.clients, "topic": lim.topics, "client_software": lim.software}
    limits["error"] = lim.unknown_errors
    limits |= {"group": lim.groups, "partition": lim.partitions}
    add(
        "label_limit",
        "gauge",
        f"Values shown of a label from the wire; the rest are summed as {OTHER}",
        ("label",),
        [((k,), v) for k, v in sorted(limits.items())],
    )
    add(
        "label_folded",
        "gauge",
        f"Values of a label past its limit, shown as {OTHER} (groups and partitions: left out)",
        ("label",),
        [((k,), v) for k, v in sorted(folds.items())],
    )
    overflow = {
        "client_id": m.clients.overflow,
        "topic": m.topics.overflow,
        "client_software": m.software_overflow,
        "error": m.unknown_overflow,
    }
    add(
        "label_overflow_total",
        "counter",
        f"Observations counted as {OTHER} from the start: their label value found no room "
        "(more values than the limit times --metrics-track)",
        ("label",),
        [((k,), v) for k, v in sorted(overflow.items())],
    )
    return out


# a group's status (Burrow's: its worst partition's, STOP, STALL and REWIND counted as ERR)
STATUSES = tuple(s.name for s in Status if s <= Status.ERR)


def _insight_families(add, insights, now, lim: MetricLimits, shown: Shown | None, final: bool):
    """The groups', producers' and transactions' families (``add``-ed); the folds per label."""
    gi = insights.groups
    statuses = {s["group"]: s for s in gi.lag.status(now)}
    names = sorted(set(gi.groups.groups) | set(gi.lag.windows))
    # the groups with the most partitions first, as many as the limit
    size = {n: len(statuses[n]["partitions"]) if n in statuses else 0 for n in names}
    keep_shown = shown.of("group") if shown is not None else None
    ranked = sorted(names, key=lambda n: (-size[n], n))
    chosen = [n for n in ranked if keep_shown is not None and n in keep_shown]
    for n in ranked:
        if len(chosen) >= lim.groups:
            break
        if n not in chosen:
            chosen.append(n)
            if keep_shown is not None:
                keep_shown.add(n)
    chosen.sort()
    lag: list = []
    lag_s: list = []
    status: list = []
    rebalances: list = []
    last_reb: list = []
    last_pause: list = []
    paused: list = []
    partitions_left = 0
    for name in chosen:
        g = gi.groups.groups.get(name)
        if g is not None:
            rebalances.append(((name,), g.dropped + len(g.rebalances)))
            paused.append(((name,), gi.paused_ms(name) / 1000.0))
            finished = [(i, r) for i, r in enumerate(g.rebalances, g.dropped) if r.duration_ms is not None]
            done = finished[-1] if finished else None
            if done is not None:
                i, r = done
                last_reb.append(((name,), r.duration_ms / 1000.0))
                pause = gi.longest_pause(name, i)
                if pause is not None:
                    last_pause.append(((name,), pause / 1000.0))
        st = statuses.get(name)
        if st is None:
            continue
        status.extend(((name, s), int(st["status"] == s)) for s in STATUSES)
        for p in st["partitions"]:
            if len(lag) >= lim.partitions:
                partitions_left += 1
                continue
            labels = (name, str(p["topic"]), str(p["partition"]))
            if p["lag"] is not None:
                lag.append((labels, p["lag"]))
            if p["lag_seconds"] is not None:
                lag_s.append((labels, p["lag_seconds"]))
    add(
        "consumer_lag",
        "gauge",
        "Records behind the partition's end offset at the group's last commit (Burrow's lag)",
        ("group", "topic", "partition"),
        lag,
    )
    add(
        "consumer_lag_seconds",
        "gauge",
        "How long ago the partition's end offset was where the group's last commit is",
        ("group", "topic", "partition"),
        lag_s,
    )
    add(
        "consumer_status",
        "gauge",
        "The group's Burrow status (1: the one it has)",
        ("group", "status"),
        status,
    )
    add("rebalances_total", "counter", "Rebalances seen, by group", ("group",), rebalances)
    add(
        "group_last_rebalance_seconds",
        "gauge",
        "Duration of the group's last finished rebalance",
        ("group",),
        last_reb,
    )
    add(
        "consumer_paused_seconds_total",
        "counter",
        "Time the group's partitions stood still in its finished rebalances (the longest pause "
        "of each, summed; as the groups' paused_ms)",
        ("group",),
        paused,
    )
    add(
        "group_last_rebalance_pause_seconds",
        "gauge",
        "Longest pause of a partition in the group's last finished rebalance",
        ("group",),
        last_pause,
    )
    pi = insights.producers
    if final:
        pi.done()
    # (counts kept by the trackers, the producers let go included: they never go down, and cost
    # no walk over the producers' rows at each scrape)
    counted = pi.producers.totals()
    totals = {
        "retried": counted["retried_records"],
        "failed": counted["failed_records"],
        "duplicated": counted["duplicates_written"],
        "sequence_gaps": counted["sequence_gaps"],
    }
    add(
        "producer_retries_total",
        "counter",
        "Records a producer sent again (retried batches' records)",
        (),
        [((), totals["retried"])],
    )
    add(
        "producer_failed_records_total",
        "counter",
        "Records whose last attempt failed (lost unless the application resent them)",
        (),
        [((), totals["failed"])],
    )
    add(
        "producer_duplicated_records_total",
        "counter",
        "Records written twice",
        (),
        [((), totals["duplicated"])],
    )
    add(
        "producer_sequence_gaps_total",
        "counter",
        "Gaps in producers' sequence numbers",
        (),
        [((), totals["sequence_gaps"])],
    )
    outcomes = {"commit": 0, "abort": 0, **pi.txns.outcomes, **pi.txns.unfinished(now)}
    add(
        "transactions_total",
        "counter",
        "Transactions ended, by outcome",
        ("outcome",),
        [((k,), outcomes[k]) for k in ("abort", "commit")],
    )
    add(
        "transactions_unfinished",
        "gauge",
        "Transactions not ended: open, or hanging (past their timeout)",
        ("state",),
        [((k,), outcomes[k]) for k in ("hanging", "open")],
    )
    return {"group": len(names) - len(chosen), "partition": partitions_left}


class LiveMetrics:
    """``live``'s metrics while it runs: the counts of each process (:meth:`part`; one process:
    part 0 is fed in place), the insights, the capture's health; :meth:`families` under
    :attr:`lock` (the scrapes come from another thread: whoever changes what it reads holds it)."""

    def __init__(self, limits: MetricLimits = DEFAULT_LIMITS) -> None:
        import threading

        self.limits = limits
        self.lock = threading.Lock()
        self.parts: dict[int, tuple[Metrics, Health]] = {}
        self.insights: Any = None  # an Insights (the live feed's)
        self.now: float | None = None
        self.shown = Shown()
        self.health = Health()  # the totals (the one process's, or the parent's sums)
        self.started = False
        self.ended = False
        self.read_health: Callable[[], None] | None = (
            None  # a callable refreshing :attr:`health` (one process)
        )

    def part(self, i: int, metrics: Metrics, health: Health) -> None:
        """A worker's counts so far (replacing the ones it sent before)."""
        self.parts[i] = (metrics, health)

    def totals(self) -> tuple[Metrics, Health]:
        if self.read_health is not None:
            self.read_health()
        if len(self.parts) == 1 and self.read_health is not None:
            return self.parts[0][0], self.health
        m = Metrics(self.limits)
        h = Health(running=self.health.running)
        for i in sorted(self.parts):
            pm, ph = self.parts[i]
            m.merge(pm)
            h.packets += ph.packets
            h.connections += ph.connections
            h.tracked = (h.tracked or 0) + (ph.tracked or 0)
            h.ring_full = (h.ring_full or 0) + (ph.ring_full or 0)
            h.received = (h.received or 0) + (ph.received or 0)
            h.kernel_dropped = (h.kernel_dropped or 0) + (ph.kernel_dropped or 0)
        return m, h

    def families(self) -> list[Family]:
        with self.lock:
            m, h = self.totals()
            return families(m, h, self.insights, self.now, self.shown, final=self.ended)

    def healthz(self) -> dict:
        """What ``/healthz`` says: whether the capture runs, and its counters."""
        with self.lock:
            _, h = self.totals()
            return {
                "capturing": h.running,
                "ended": self.ended,
                "packets": h.packets,
                "kernel_received": h.received,
                "kernel_dropped": h.kernel_dropped or 0,
                "ring_full": h.ring_full or 0,
                "tcp_connections_tracked": h.tracked,
                "workers": len(self.parts),
            }
