"""Who talks to the cluster, and how well: each client's software, APIs and versions, its
readiness for a Kafka release, its hygiene, and who produces to and fetches from what.

A consumer (:meth:`ClientTracker.event` per event, in capture order). A **client** is a client
id on a host (a process may hold many connections):

* **inventory**: the software it names in ApiVersions v3+ (KIP-511; "before KIP-511" when it
  asked ApiVersions only in an older version, or not at all), every (API, version) it used with
  counts, first and last seen, its connections;
* **readiness** for a target release (:func:`target_floors`): every version it used that the
  target no longer accepts (Kafka 4.0 removed the oldest versions of many APIs, KIP-896), and
  record batches in the old formats (magic 0 and 1, KIP-724) it sent or was sent;
* **hygiene**: Metadata requests per second and the share asking for all topics, loops of
  answers UNKNOWN_TOPIC_OR_PARTITION or LEADER_NOT_AVAILABLE for a topic (a client asking again
  and again for a topic that is missing or leaderless: a Metadata storm); connection churn
  (connections per minute, their median lifetime, reconnections to a broker within
  :data:`NO_BACKOFF_S` of the previous connection's end: a client dropping its bootstrap
  connection for the broker's own does it once, a client reconnecting in a loop again and
  again; a connection that carried no request, refused or closed at once, counts as the
  reconnection of the client whose connection from the same host to the same broker ended just
  before); throttling (throttle_time_ms summed per
  API); messages over :data:`LARGE_BYTES`; connections opened and never used past the
  handshake (idle);
* **topology**: edges producer client -> topic and topic -> consumer group (or client, without
  a group), with records and bytes: what Produce requests wrote (answered without error) and
  Fetch answers returned.

Processes that share the work send :meth:`ClientTracker.facts` of each exchange and each
connection's end to the merge, which applies them in capture order as one run does.
"""

from __future__ import annotations

from collections.abc import Callable

from analyzer.dissect.constants import ApiKey, ErrorCode
from analyzer.dissect.errors import error_name
from analyzer.dissect.protocol_table import CURRENT_RELEASE, CURRENT_VERSIONS
from analyzer.dissect.schema import api_name, version_range
from analyzer.events import ConnectionEnd
from analyzer.model import Exchange
from analyzer.plain import field, record
from analyzer.session.bounded import DEFAULT_BOUNDS, Bounds, Evictions, Expiry, median
from analyzer.session.consumption import host_of
from analyzer.session.walks import fetched, produced, topic_of

NO_BACKOFF_S = 0.1  # a reconnection to the same broker sooner than this after the last ended
LARGE_BYTES = 1_048_576  # a request or answer over this (the brokers' default message.max.bytes)
STORM_ANSWERS = 10  # answers of one missing/leaderless topic in a row that make a loop
STORM_RATE = 10.0  # Metadata requests per second (over their span, a second at least)
IDLE_S = 10.0  # a connection open this long that carried no request past the handshake
CHURN_PER_MIN = 30.0  # new connections per minute (over a minute or more) that make churn
# fast reconnections that make a finding: librdkafka drops its bootstrap connection and reconnects
# to each broker once or twice (3 in librdkafka-txn's consumer), a client without backoff whose
# broker goes away reconnects dozens of times in milliseconds (client-reconnect-loop: 111)
RECONNECT_LOOP = 10
_HANDSHAKE = frozenset(
    (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE, ApiKey.METADATA)
)
_MISSING = frozenset((ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.LEADER_NOT_AVAILABLE))
_GROUP_APIS = frozenset(
    (
        ApiKey.JOIN_GROUP,
        ApiKey.SYNC_GROUP,
        ApiKey.HEARTBEAT,
        ApiKey.OFFSET_COMMIT,
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
    )
)
EXCHANGE, CONNECTION = range(2)
TARGETS = ("3.9", "4.0", "4.1", "4.2")
BEFORE_KIP511 = "before KIP-511"  # a client's software when it never sent ApiVersions v3+
NOT_NAMED = "not named"  # ... when it did but left the name out


def target_floors(target: str) -> dict[int, tuple[int, int]] | None:
    """The request versions a release accepts (api key -> (lo, hi)); None: every version the
    schemas know (before 4.0). Kafka removes versions in major releases only: 4.0 removed
    KIP-896's, and 4.1 and 4.2 accept what 4.0 does (the newest schemas' floors)."""
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r} (known: {', '.join(TARGETS)})")
    return None if target < "4.0" else CURRENT_VERSIONS


def refuses(floors: dict[int, tuple[int, int]] | None, key: int, version: int) -> bool:
    """The release whose accepted versions are ``floors`` (:func:`target_floors`) refuses version
    ``version`` of API ``key``: below its oldest accepted version, or an API it removed (an API
    the schemas do not know is not judged)."""
    if floors is None or version_range(key) is None:
        return False
    rng = floors.get(key)
    return rng is None or version < rng[0]


def all_topics(ex: Exchange) -> bool | None:
    """A Metadata request asks for every topic (v1+: topics null; v0: an empty list); None for
    another API or an undecoded request."""
    if ex.api_key != ApiKey.METADATA:  # (first: the TUI's rows answer it without decoding)
        return None
    req = ex.request
    if req is None or req.body is None or req.api_version is None:
        return None
    topics = req.body.child("topics")
    if req.api_version >= 1:
        return topics is None or topics.value is None
    return not (topics and topics.children)


@record
class ConnSeen:
    broker: str
    first: float
    last: float
    used: bool = False  # a request past the handshake (ApiVersions, SASL, Metadata)


@record
class ClientView:
    client_id: str | None
    host: str
    software: str | None = None
    kip511: bool = False  # it sent ApiVersions v3+ (which names the software)
    first: float = 0.0
    last: float = 0.0
    apis: dict[tuple[int, int], int] = field(default_factory=dict)
    old_formats: int = 0
    metadata: int = 0
    metadata_all: int = 0
    metadata_first: float | None = None
    metadata_last: float = 0.0
    missing_run: dict[str, tuple[str, int]] = field(
        default_factory=dict
    )  # topic -> (error, answers in a row)
    loops: dict[str, tuple[str, int]] = field(default_factory=dict)  # topic -> (error, longest run)
    # every topic's longest run of missing answers, short ones too (kafka.metadata-storm's bound)
    longest_runs: dict[str, tuple[str, int]] = field(default_factory=dict)
    throttle_ms: dict[int, int] = field(default_factory=dict)
    large: int = 0
    largest: int = 0
    connections: dict[str, ConnSeen] = field(default_factory=dict)  # label -> seen
    ended: list[tuple[str, float, float]] = field(default_factory=list)  # (broker, first, last)
    fast_reconnects: int = 0
    empty: int = 0  # of those, connections that carried no request (refused, reset, closed at once)
    idle: int = 0
    forgotten: int = 0  # (live) ended connections let go of (counted in connections)

    @property
    def software_said(self) -> str:
        """Its software as the outputs say it: name and version, or why there is none."""
        return self.software or (NOT_NAMED if self.kip511 else BEFORE_KIP511)

    def row(self, target: str) -> dict:
        floors = target_floors(target)
        removed = []
        if floors is not None:
            for (key, version), _n in sorted(self.apis.items()):
                if refuses(floors, key, version):
                    rng = floors.get(key)
                    removed.append(
                        {
                            "api_key": key,
                            "api_name": api_name(key),
                            "version": version,
                            "accepted": None if rng is None else f"{rng[0]}-{rng[1]}",
                        }
                    )
        lifetimes = [last - first for _, first, last in self.ended]
        span = self.last - self.first
        meta_span = self.metadata_last - (self.metadata_first or 0.0)
        # over the span of its Metadata requests, a second at least (130 requests in 0.3 s are a
        # storm; one request is 1/s)
        meta_rate = self.metadata / max(meta_span, 1.0) if self.metadata_first is not None else None
        conns = len(self.connections) + self.forgotten
        per_min = conns / (span / 60) if span >= 60 else None
        findings = []
        for topic, (err, n) in sorted(self.loops.items()):
            findings.append(f"Metadata loop: {n} answers {err} for {topic} in a row")
        if meta_rate is not None and meta_rate > STORM_RATE:
            findings.append(f"Metadata storm: {meta_rate:.1f} requests/s")
        if per_min is not None and per_min > CHURN_PER_MIN:
            findings.append(f"connection churn: {per_min:.1f} connections/min")
        if self.fast_reconnects >= RECONNECT_LOOP:
            empty = f", {self.empty} of them refused or closed before a request" if self.empty else ""
            within = f"{NO_BACKOFF_S * 1000:.0f} ms"
            findings.append(f"{self.fast_reconnects} reconnections within {within} (no backoff{empty})")
        if self.throttle_ms:
            findings.append(f"throttled {sum(self.throttle_ms.values())} ms")
        if self.large:
            findings.append(f"{self.large} messages over {LARGE_BYTES} bytes (largest {self.largest})")
        if self.idle:
            findings.append(f"{self.idle} connections never used past the handshake")
        old = self.old_formats if floors is not None else 0
        return {
            "client_id": self.client_id,
            "client": self.host,
            "software": self.software_said,
            "first": self.first,
            "last": self.last,
            "connections": conns,
            "apis": [
                {"api_key": k, "api_name": api_name(k), "version": v, "count": n}
                for (k, v), n in sorted(self.apis.items())
            ],
            "target": target,
            "removed_versions": removed,
            "old_formats": self.old_formats,
            "ready": not removed and not old,
            "metadata_requests": self.metadata,
            "metadata_rate": None if meta_rate is None else round(meta_rate, 3),
            "metadata_all_topics": round(self.metadata_all / self.metadata, 3) if self.metadata else None,
            "metadata_loops": [
                {"topic": t, "error": e, "answers": n} for t, (e, n) in sorted(self.loops.items())
            ],
            "connections_per_min": None if per_min is None else round(per_min, 3),
            "median_lifetime_s": round(median(lifetimes), 3) if lifetimes else None,
            "fast_reconnects": self.fast_reconnects,
            "empty_connections": self.empty,
            "idle_connections": self.idle,
            "throttle_ms": sum(self.throttle_ms.values()),
            "throttle_by_api": {api_name(k) or str(k): v for k, v in sorted(self.throttle_ms.items())},
            "large_messages": self.large,
            "largest_bytes": self.largest or None,
            "findings": findings,
        }


class ClientTracker:
    """The consumer: every client's inventory, readiness and hygiene, and the topology."""

    def __init__(self, topic_ids: dict[str, str] | None = None, bounds: Bounds = DEFAULT_BOUNDS) -> None:
        self.topic_ids = topic_ids
        self.clients: dict[tuple[str, str | None], ClientView] = {}
        # a client unused past the bounds' idle time, or the longest idle past their maximum,
        # is let go (its view and group), counted
        self.evictions = Evictions()
        self.expiry = Expiry("clients", self._evict, self.evictions, bounds)
        self.ends_expiry = Expiry("client_hosts", self.last_end_forget, self.evictions, bounds)
        self.by_label: dict[str, tuple[str, str | None]] = {}  # connection -> its client
        self.groups: dict[tuple[str, str | None], str] = {}  # (host, client id) -> consumer group
        self.produce_edges: dict[tuple[str, str], list[int]] = {}  # (client id, topic) -> [records, bytes]
        self.fetch_edges: dict[tuple[str, tuple], list[int]] = {}  # (topic, consumer key) -> [records, bytes]
        self.partitions: dict[tuple[str, int], list[int]] = {}  # produced [records, bytes] per partition
        # the topology through the brokers: (host, client id, broker, kind, topic) -> [records, bytes]
        self.flows: dict[tuple[str, str | None, str, int, str], list[int]] = {}
        self.flows_dropped = 0  # (live) flows not counted to stay within 4 * keep
        # (host, broker) -> the client whose connection between them ended last, and when
        self.last_end: dict[tuple[str, str], tuple[tuple[str, str | None], float]] = {}
        self.keep: int | None = None  # (live, :meth:`follow`) clients, connections, edges kept
        self.dirty: set[tuple[str, str | None]] | None = None  # (live) clients changed since news
        self.dropped = {"clients": 0, "connections": 0, "edges": 0}  # let go to stay within keep
        # told of each client let go (idle past the bounds, or the longest idle over the maximum)
        # with its view, before the view goes: what is judged on a client is judged then too
        self.on_evict: Callable[[tuple[str, str | None], ClientView], None] | None = None

    # -- feeding ------------------------------------------------------------------------------------
    def event(self, ev) -> None:
        f = self.facts(ev)
        if f is not None:
            self.apply(f)

    @staticmethod
    def end_facts(ev: ConnectionEnd) -> tuple:
        """What a connection's end tells (plain values: its endpoints and times)."""
        info = ev.conn
        known = info.client_direction is not None
        client, broker = (info.client, info.broker) if known else (info.a, info.b)
        return (CONNECTION, f"{client} -> {broker}", str(broker), info.ts_first, info.ts_last)

    def facts(self, ev) -> tuple | None:  # noqa: C901 - one pass over what an exchange tells
        t = type(ev)
        if t is ConnectionEnd:
            return self.end_facts(ev)
        if t is not Exchange or ev.request is None:
            return None
        req, resp = ev.request, ev.response
        key, version = req.api_key, req.api_version
        if key is None or version is None:
            return None
        conn = ev.conn
        known = conn.client_direction is not None
        client, broker = (conn.client, conn.broker) if known else (conn.a, conn.b)
        body = req.body
        software = None
        meta = None
        group = None
        if key == ApiKey.API_VERSIONS and body is not None:
            name, sw_version = body.get("client_software_name"), body.get("client_software_version")
            if name:
                software = f"{name} {sw_version}" if sw_version else name
        elif key == ApiKey.METADATA and body is not None:
            every = all_topics(ev)
            missing = []
            if resp is not None and resp.body is not None:
                for x in resp.body.elements("topics"):
                    err = x.get("error_code")
                    if err in _MISSING:
                        missing.append(
                            (x.get("name") or x.get("topic_id") or "?", error_name(err) or str(err))
                        )
            meta = (bool(every), tuple(missing), resp is not None)
        elif key in _GROUP_APIS and body is not None:
            gid = body.get("group_id")
            group = gid if isinstance(gid, str) and gid else None
        throttle = resp.body.get("throttle_time_ms") if resp is not None and resp.body is not None else None
        sizes = max(req.frame.length, resp.frame.length if resp is not None else 0)
        old = 0
        moved: list[tuple] = []
        if key == ApiKey.PRODUCE and body is not None:
            for pp in produced(ev):
                n = size = 0
                for b in pp.batches:
                    if isinstance(b.get("magic"), int) and b["magic"] < 2:
                        old += 1
                    n += b.get("record_count") or 0
                    size += b.get("bytes") or 0
                if pp.error == ErrorCode.NONE and n:
                    moved.append((0, pp.ref, n, size))
        elif key == ApiKey.FETCH and resp is not None and resp.body is not None:
            for fp in fetched(ev).answered:
                n = size = 0
                for b in fp.batches:
                    if isinstance(b.get("magic"), int) and b["magic"] < 2:
                        old += 1
                    if not b.get("control"):
                        n += b.get("record_count") or 0
                        size += b.get("bytes") or 0
                if n:
                    moved.append((1, fp.ref, n, size))
        return (
            EXCHANGE,
            req.frame.ts_first,
            f"{client} -> {broker}",
            host_of(str(client)),
            ev.client_id,
            key,
            version,
            software,
            meta,
            group,
            throttle if isinstance(throttle, int) and throttle > 0 else 0,
            sizes,
            old,
            moved,
        )

    def apply(self, facts: tuple) -> None:  # noqa: C901 - one case per fact
        if facts[0] == CONNECTION:
            self._ended(*facts[1:])
            return
        _, t, label, host, client_id, key, version, software, meta, group, throttle, size, old, moved = facts
        ck = (host, client_id)
        c = self.clients.get(ck)
        if c is None:
            c = self.clients[ck] = ClientView(client_id, host, first=t)
            if self.keep is not None and len(self.clients) > self.keep:
                oldest = next(iter(self.clients))
                del self.clients[oldest]
                self.expiry.discard(oldest)
                self.dropped["clients"] += 1
        c.last = max(c.last, t)
        self.expiry.touch(ck, t)
        if self.dirty is not None:
            self.dirty.add(ck)
        if label not in self.by_label:
            self.by_label[label] = ck
            if self.keep is not None and len(self.by_label) > 4 * self.keep:
                del self.by_label[next(iter(self.by_label))]
                self.dropped["connections"] += 1
        seen = c.connections.get(label)
        if seen is None:
            seen = c.connections[label] = ConnSeen(label.split(" -> ", 1)[1], t, t)
        seen.last = max(seen.last, t)
        if key not in _HANDSHAKE:
            seen.used = True
        c.apis[(key, version)] = c.apis.get((key, version), 0) + 1
        if key == ApiKey.API_VERSIONS:
            c.kip511 = c.kip511 or version >= 3
            if software:
                c.software = software
        if meta is not None:
            every, missing, answered = meta
            c.metadata += 1
            c.metadata_all += every
            if c.metadata_first is None:
                c.metadata_first = t
            c.metadata_last = t
            if answered:
                now_missing = {topic for topic, _ in missing}
                for topic, err in missing:
                    run = c.missing_run.get(topic)
                    n = run[1] + 1 if run is not None else 1
                    c.missing_run[topic] = (err, n)
                    if n > c.longest_runs.get(topic, ("", 0))[1]:
                        c.longest_runs[topic] = (err, n)
                    if n >= STORM_ANSWERS and n > c.loops.get(topic, ("", 0))[1]:
                        c.loops[topic] = (err, n)
                for topic in list(c.missing_run):
                    if topic not in now_missing and not every:
                        del c.missing_run[topic]
        if group is not None:
            self.groups[ck] = group
        if throttle:
            c.throttle_ms[key] = c.throttle_ms.get(key, 0) + throttle
        if size > LARGE_BYTES:
            c.large += 1
        c.largest = max(c.largest, size)
        c.old_formats += old
        for kind, ref, n, nbytes in moved:
            topic, p = topic_of(ref, self.topic_ids)
            if kind == 0:
                e = self._edge(self.produce_edges, (client_id or "-", topic))
                part = self.partitions.get((topic, p))
                if part is None and (self.keep is None or len(self.partitions) < 4 * self.keep):
                    part = self.partitions[(topic, p)] = [0, 0]
                if part is not None:
                    part[0] += n
                    part[1] += nbytes
            else:
                e = self._edge(self.fetch_edges, (topic, ck))
            flow = self.flows.get((host, client_id, seen.broker, kind, topic))
            if flow is None:
                if self.keep is None or len(self.flows) < 4 * self.keep:
                    flow = self.flows[(host, client_id, seen.broker, kind, topic)] = [0, 0]
                else:
                    self.flows_dropped += 1
            if flow is not None:
                flow[0] += n
                flow[1] += nbytes
            if e is None:
                continue
            e[0] += n
            e[1] += nbytes

    def last_end_forget(self, key) -> None:
        """Let go of the last connection end between a host and a broker (``ends_expiry``)."""
        self.last_end.pop(key, None)

    def _evict(self, ck) -> None:
        c = self.clients.pop(ck, None)
        if c is not None and self.on_evict is not None:
            self.on_evict(ck, c)
        self.groups.pop(ck, None)
        if self.dirty is not None:
            self.dirty.discard(ck)

    def _edge(self, edges: dict, k: tuple) -> list[int] | None:
        e = edges.get(k)
        if e is None:
            if self.keep is not None and len(edges) >= self.keep:
                self.dropped["edges"] += 1
                return None
            e = edges[k] = [0, 0]
        return e

    def follow(self, keep: int) -> None:
        """(live) Keep the clients changed for :meth:`news`; keep ``keep`` clients (the oldest
        seen let go), ``4 * keep`` connections, ``keep`` edges of each kind (a new one past it
        not counted), each client's last ``keep`` ended connections; :attr:`dropped` counts."""
        self.keep = keep
        self.dirty = set()

    def news(self) -> list[ClientView]:
        """The clients changed since the last call."""
        if not self.dirty:
            return []
        out = [self.clients[k] for k in self.dirty if k in self.clients]
        self.dirty = set()
        return out

    def _ended(self, label: str, broker: str, first: float, last: float) -> None:
        ck = self.by_label.pop(label, None)
        host = host_of(label.split(" -> ", 1)[0])
        if ck is None:
            # no request on it (refused, reset or closed at once): the reconnection of the client
            # whose connection from this host to this broker ended just before, if one did
            prev = self.last_end.get((host, broker))
            if prev is None or not 0 <= first - prev[1] < NO_BACKOFF_S or prev[0] not in self.clients:
                return  # no client to tell
            was = self.clients[prev[0]]
            was.connections[label] = ConnSeen(broker, first, last)
            was.fast_reconnects += 1
            was.empty += 1
            was.ended.append((broker, first, last))
            self.last_end[(host, broker)] = (prev[0], last)
            self.ends_expiry.touch((host, broker), last)
            return
        c = self.clients.get(ck)
        if c is None:
            return
        seen = c.connections.get(label)
        previous = [x for b, _, x in c.ended if b == broker]
        if previous and 0 <= first - max(previous) < NO_BACKOFF_S:
            c.fast_reconnects += 1
        c.ended.append((broker, first, last))
        self.last_end[(host, broker)] = (ck, last)
        self.ends_expiry.touch((host, broker), last)
        if seen is not None and not seen.used and last - first >= IDLE_S:
            c.idle += 1
        if self.keep is not None:
            if seen is not None:
                del c.connections[label]
                c.forgotten += 1
            if len(c.ended) > 2 * self.keep:
                del c.ended[: self.keep]
        if self.dirty is not None:
            self.dirty.add((c.host, c.client_id))

    # -- what it found ---------------------------------------------------------------------------------
    def rows(self, target: str = CURRENT_RELEASE) -> list[dict]:
        return [
            c.row(target) for _, c in sorted(self.clients.items(), key=lambda kv: (kv[1].first, str(kv[0])))
        ]

    def edges(self) -> list[dict]:
        """The topology: producer client -> topic, topic -> consumer group (or client)."""
        out = [
            {"kind": "produce", "from": cid, "to": topic, "records": n, "bytes": b}
            for (cid, topic), (n, b) in sorted(self.produce_edges.items())
        ]
        fetch: dict[tuple[str, str], list[int]] = {}
        for (topic, ck), (n, b) in self.fetch_edges.items():
            group = self.groups.get(ck)
            to = f"group {group}" if group else (ck[1] or "-")
            e = fetch.setdefault((topic, to), [0, 0])
            e[0] += n
            e[1] += b
        out += [
            {"kind": "fetch", "from": topic, "to": to, "records": n, "bytes": b}
            for (topic, to), (n, b) in sorted(fetch.items())
        ]
        return out

    def flows_rows(self) -> list[dict]:
        """The topology through the brokers (the TUI's tree): per client (id on a host, with its
        consumer group), broker and topic, what it produced there (``produce``: Produce requests
        answered without error) or fetched (``fetch``: Fetch answers), records and bytes. Summed
        over the brokers they are :meth:`edges`' (the fetches per group or client)."""
        return [
            {
                "client": host,
                "client_id": cid,
                "group": self.groups.get((host, cid)),
                "broker": broker,
                "kind": "produce" if kind == 0 else "fetch",
                "topic": topic,
                "records": n,
                "bytes": b,
            }
            for (host, cid, broker, kind, topic), (n, b) in sorted(
                self.flows.items(), key=lambda kv: (kv[0][0], kv[0][1] or "", *kv[0][2:])
            )
        ]

    def hot_partitions(self) -> list[dict]:
        """Per topic with produce traffic: each partition's records and bytes, and the skew (the
        busiest partition's bytes over the mean)."""
        topics: dict[str, list[tuple[int, int, int]]] = {}
        for (topic, p), (n, b) in self.partitions.items():
            topics.setdefault(topic, []).append((p, n, b))
        out = []
        for topic in sorted(topics):
            parts = sorted(topics[topic])
            mean = sum(b for _, _, b in parts) / len(parts)
            hot = max(parts, key=lambda x: (x[2], -x[0]))
            out.append(
                {
                    "topic": topic,
                    "partitions": len(parts),
                    "hottest": hot[0],
                    "hottest_bytes": hot[2],
                    "skew": round(hot[2] / mean, 3) if mean else None,
                }
            )
        return out


class LetGoVerdicts:
    """The readiness of the clients a tracker lets go before the capture's end (idle past
    ``--state-idle``, or over ``--state-max``), judged for ``target`` as each goes: the ready ones
    counted, the rows of the others kept (at most ``keep``; the rest counted), so that a verdict
    over a long capture still covers every client it saw. ``client_ids``: only those."""

    def __init__(
        self, tracker: ClientTracker, target: str, keep: int, client_ids: set[str | None] | None = None
    ) -> None:
        self.target, self.keep, self.client_ids = target, keep, client_ids
        self.ready = 0
        self.not_ready: list[dict] = []
        self.not_ready_unkept = 0
        tracker.on_evict = self._let_go

    def _let_go(self, _ck, c: ClientView) -> None:
        if self.client_ids is not None and c.client_id not in self.client_ids:
            return
        row = c.row(self.target)
        if row["ready"]:
            self.ready += 1
        elif len(self.not_ready) < self.keep:
            self.not_ready.append(row)
        else:
            self.not_ready_unkept += 1

    def __len__(self) -> int:
        return self.ready + len(self.not_ready) + self.not_ready_unkept
