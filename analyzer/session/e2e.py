"""End-to-end latency: each produced record matched to every Fetch answer that returns it.

A consumer (:meth:`E2ETracker.event` per event, in capture order):

* a **produced record** is at (topic, partition, offset): a Produce answer's base offset plus
  the record's place in the batches its request sent there, produced at the Produce request's
  capture time by its client; the first record of each batch also has its own timestamp (the
  batch's firstTimestamp, CreateTime);
* a **Fetch answer** returns the records of the batches it holds (any offset inside a fetched
  batch counts: a fetch that starts inside a batch returns the whole batch, and the records
  before the fetch offset are not the consumer's, so they are left out);
* each match is a latency: the Fetch answer's capture time minus the Produce request's, kept
  per (topic, partition, producer client, consumer client, consumer group); the same from the
  record's timestamp (it includes the producer's batching, and depends on its clock) apart, for
  the first record of each batch, and only when it is within a day of the capture's clock
  (generated traffic often carries made-up timestamps);
* a consumer's group is the group its client (host and client id) named in JoinGroup,
  SyncGroup, Heartbeat, OffsetCommit or ConsumerGroupHeartbeat requests.

Percentiles are exact up to :data:`EXACT` latencies per key; past it they come from
logarithmic buckets 1% wide. Produced batches are kept for the last :data:`PRODUCED_KEPT` of
each partition, and for :attr:`~analyzer.session.bounded.Bounds.idle` seconds of capture time: a
record fetched after that many newer batches, or that long after its Produce, is not matched
(said in :meth:`E2ETracker.coverage`). The partitions followed, the latency keys and the
consumers' groups are tables bounded as every long-lived one is (:mod:`analyzer.session.bounded`:
idle expiry, a maximum, each entry let go counted).
"""

from __future__ import annotations

import math
from bisect import bisect_right

from analyzer.dissect.constants import ApiKey, ErrorCode
from analyzer.model import Exchange
from analyzer.plain import field, record, replace
from analyzer.session.bounded import DEFAULT_BOUNDS, Bounds, Evictions, Expiry, duration_text
from analyzer.session.consumption import fetcher_of
from analyzer.session.walks import fetched, produced, topic_of

PRODUCED_KEPT = 20_000
PLAUSIBLE_S = 86_400.0  # a record timestamp further than this from the capture's clock is not used
EXACT = 50_000
_STEP = math.log(1.01)
_GROUP_APIS = frozenset(
    (
        ApiKey.JOIN_GROUP,
        ApiKey.SYNC_GROUP,
        ApiKey.HEARTBEAT,
        ApiKey.OFFSET_COMMIT,
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
    )
)
_KEYS = _GROUP_APIS | {ApiKey.PRODUCE, ApiKey.FETCH}
PRODUCED, FETCHED, MEMBER = range(3)


@record
class Latencies:
    """Latencies (ms) with their counts: exact values, then buckets."""

    exact: dict[float, int] = field(default_factory=dict)
    buckets: dict[int, int] = field(default_factory=dict)
    count: int = 0
    largest: float = 0.0
    slowest: object = None  # the mark of the exchange that gave the largest (check's evidence)

    def add(self, ms: float, n: int) -> None:
        self.count += n
        if ms > self.largest:
            self.largest = ms
        if self.buckets or len(self.exact) >= EXACT:
            if self.exact:
                for v, k in self.exact.items():
                    self._bucket(v, k)
                self.exact = {}
            self._bucket(ms, n)
        else:
            v = round(ms, 3)
            self.exact[v] = self.exact.get(v, 0) + n

    def _bucket(self, ms: float, n: int) -> None:
        b = math.floor(math.log(ms) / _STEP) if ms > 0.001 else -1_000_000
        self.buckets[b] = self.buckets.get(b, 0) + n

    def quantile(self, q: float) -> float | None:
        """The value at or below which ``q`` of the latencies are (nearest rank)."""
        if not self.count:
            return None
        rank = max(1, math.ceil(q * self.count))
        seen = 0
        if not self.buckets:
            for v in sorted(self.exact):
                seen += self.exact[v]
                if seen >= rank:
                    return v
            return self.largest
        for b in sorted(self.buckets):
            seen += self.buckets[b]
            if seen >= rank:
                return 0.0 if b == -1_000_000 else min(round(math.exp((b + 1) * _STEP), 3), self.largest)
        return self.largest


class _Produced:
    """A partition's produced batches by base offset: (base, last, time, producer, first ts)."""

    __slots__ = ("bases", "rows")

    def __init__(self) -> None:
        self.bases: list[int] = []
        self.rows: list[tuple[int, int, float, tuple, float | None]] = []

    def add(
        self, base: int, last: int, t: float, producer: tuple, first_ts: float | None, idle: float | None
    ) -> int:
        """The batch kept; the number of batches let go for being older than ``idle`` seconds."""
        if self.bases and base <= self.bases[-1]:
            i = bisect_right(self.bases, base) - 1
            if i >= 0 and self.bases[i] == base:
                return 0  # the same batch answered again (a duplicate answered with its offset)
            self.bases.insert(i + 1, base)
            self.rows.insert(i + 1, (base, last, t, producer, first_ts))
        else:
            self.bases.append(base)
            self.rows.append((base, last, t, producer, first_ts))
        rows = self.rows
        if len(rows) > 2 * PRODUCED_KEPT:
            del self.bases[:PRODUCED_KEPT]
            del rows[:PRODUCED_KEPT]
        if idle is not None and not len(rows) & 255 and rows[0][2] < t - idle:
            # (amortised: looked at every 256 batches) the batches produced too long ago
            limit, n = t - idle, 0
            while n < len(rows) and rows[n][2] < limit:
                n += 1
            del self.bases[:n]
            del rows[:n]
            return n
        return 0


class E2ETracker:
    """The consumer: produced records, the fetches that return them, their latencies."""

    def __init__(self, topic_ids: dict[str, str] | None = None, bounds: Bounds = DEFAULT_BOUNDS) -> None:
        self.topic_ids = topic_ids
        self.bounds = bounds
        self.produced: dict[tuple[str, int], _Produced] = {}
        self.groups: dict[tuple[str, str | None], str] = {}  # consumer (host, client id) -> group
        self.by_capture: dict[tuple, Latencies] = {}
        self.by_timestamp: dict[tuple, Latencies] = {}
        self.fetched_unmatched = 0  # records fetched whose production the capture did not show
        self.evictions = Evictions()
        self.partitions = Expiry("e2e_partitions", self._forget_partition, self.evictions, bounds)
        self.keys = Expiry("e2e_latencies", self._forget_key, self.evictions, bounds)
        self.consumers = Expiry("e2e_consumers", self._forget_consumer, self.evictions, bounds)

    def follow(self, keep_keys: int) -> None:
        """A run that lasts (``live``): at most ``keep_keys`` partitions followed, latency keys
        and consumers (the longest idle let go first, counted)."""
        bounds = replace(self.bounds, max_entries=min(self.bounds.max_entries, keep_keys))
        for table in (self.partitions, self.keys, self.consumers):
            table.bounds = bounds

    def _forget_partition(self, tp: tuple[str, int]) -> None:
        self.produced.pop(tp, None)

    def _forget_key(self, k: tuple) -> None:
        self.by_capture.pop(k, None)
        self.by_timestamp.pop(k, None)

    def _forget_consumer(self, who: tuple) -> None:
        self.groups.pop(who, None)

    def entries(self) -> dict[str, int]:
        """Entries per bounded table now."""
        return {
            "e2e_partitions": len(self.partitions),
            "e2e_latencies": len(self.keys),
            "e2e_consumers": len(self.consumers),
            # produced batches kept (those let go for their age: evictions' "e2e_batches")
            "e2e_batches": sum(len(p.bases) for p in self.produced.values()),
        }

    # -- feeding ------------------------------------------------------------------------------------
    def event(self, ev) -> None:
        f = self.facts(ev)
        if f is not None:
            self.apply(f)

    def facts(self, ev) -> tuple | None:
        if type(ev) is not Exchange or ev.request is None or ev.request.body is None:
            return None
        key = ev.api_key
        if key not in _KEYS:
            return None
        who = fetcher_of(ev)
        if key in _GROUP_APIS:
            gid = ev.request.body.get("group_id")
            return (MEMBER, who, gid, ev.request.frame.ts_first) if isinstance(gid, str) and gid else None
        if ev.response is None or ev.response.body is None:
            return None
        if key == ApiKey.PRODUCE:
            out = []
            for pp in produced(ev):
                base = pp.base_offset
                if pp.error != ErrorCode.NONE or base is None or base < 0 or not pp.batches:
                    continue
                out.append((pp.ref, base, [(b["record_count"] or 0, _first_ts(b)) for b in pp.batches]))
            return (PRODUCED, ev.request.frame.ts_first, who, out) if out else None
        if key == ApiKey.FETCH:
            got = []
            for fp in fetched(ev).answered:
                if fp.error != ErrorCode.NONE:
                    continue
                spans = [
                    (b["base_offset"], b["last_offset"])
                    for b in fp.batches
                    if type(b["base_offset"]) is int and type(b["last_offset"]) is int and not b["control"]
                ]
                if spans:
                    got.append((fp.ref, fp.fetch_offset, spans))
            return (FETCHED, ev.response.frame.ts_first, who, got) if got else None
        return None

    def apply(self, facts: tuple, mark: object = None) -> None:
        """One exchange's :meth:`facts`; ``mark``: kept with the largest latency it gives
        (:attr:`Latencies.slowest`)."""
        kind = facts[0]
        if kind == MEMBER:
            self.groups[facts[1]] = facts[2]
            self.consumers.touch(facts[1], facts[3])
        elif kind == PRODUCED:
            _, t, who, parts = facts
            ids, produced_all, idle = self.topic_ids, self.produced, self.bounds.idle
            for ref, base, batches in parts:
                tp = (ref[0], ref[2]) if ref[0] else topic_of(ref, ids)
                produced = produced_all.get(tp)
                if produced is None:
                    produced = produced_all[tp] = _Produced()
                self.partitions.touch(tp, t)
                for n, first_ts in batches:
                    if n > 0:
                        expired = produced.add(base, base + n - 1, t, who, first_ts, idle)
                        if expired:
                            self.evictions.add("e2e_batches", idle=expired)
                        base += n
        else:
            self._fetched(facts[1], facts[2], facts[3], mark)

    def _fetched(self, t: float, who: tuple, parts: list, mark: object) -> None:
        """A Fetch answer's batches (:meth:`facts`): the records matched, their latencies."""
        group = self.groups.get(who)
        ids, by_capture, by_timestamp = self.topic_ids, self.by_capture, self.by_timestamp
        for ref, start, spans in parts:
            tp = (ref[0], ref[2]) if ref[0] else topic_of(ref, ids)
            produced = self.produced.get(tp)
            bases, rows = (produced.bases, produced.rows) if produced is not None else ((), ())
            for lo, hi in spans:
                if start is not None and start > lo:
                    lo = start
                if lo > hi:
                    continue
                matched = 0
                # the produced batches overlapping lo..hi, by base offset
                i = bisect_right(bases, lo) - 1 if bases else 0
                if i < 0:
                    i = 0
                while i < len(rows):
                    base, last, pt, producer, first_ts = rows[i]
                    i += 1
                    if base > hi:
                        break
                    if last < lo:
                        continue
                    n = (hi if hi < last else last) - (lo if lo > base else base) + 1
                    matched += n
                    k = (tp[0], tp[1], producer, who, group)
                    lat = by_capture.get(k)
                    if lat is None:
                        lat = by_capture[k] = Latencies()
                    self.keys.touch(k, t)
                    ms = (t - pt) * 1000
                    if ms < 0.0:
                        ms = 0.0
                    if mark is not None and (lat.slowest is None or ms > lat.largest):
                        lat.slowest = mark
                    lat.add(ms, n)
                    if first_ts is not None and lo <= base and abs(t - first_ts) < PLAUSIBLE_S:
                        ts = by_timestamp.get(k)
                        if ts is None:
                            ts = by_timestamp[k] = Latencies()
                        ts.add(max(0.0, (t - first_ts) * 1000), 1)
                self.fetched_unmatched += hi - lo + 1 - matched

    # -- what it found ---------------------------------------------------------------------------------
    def rows(self) -> list[dict]:
        """The export's ``e2e`` objects: one per (topic, partition, producer, consumer, group)."""
        out = []
        for k in sorted(self.by_capture, key=lambda k: (k[0], k[1], _who(k[2]), _who(k[3]), k[4] or "")):
            lat, ts = self.by_capture[k], self.by_timestamp.get(k)
            out.append(
                {
                    "topic": k[0],
                    "partition": k[1],
                    "producer_client": _who(k[2]),
                    "consumer_client": _who(k[3]),
                    "group": k[4],
                    "count": lat.count,
                    "p50_ms": lat.quantile(0.5),
                    "p95_ms": lat.quantile(0.95),
                    "p99_ms": lat.quantile(0.99),
                    "max_ms": round(lat.largest, 3),
                    "timestamp": None
                    if ts is None
                    else {
                        "count": ts.count,
                        "p50_ms": ts.quantile(0.5),
                        "p95_ms": ts.quantile(0.95),
                        "p99_ms": ts.quantile(0.99),
                        "max_ms": round(ts.largest, 3),
                    },
                }
            )
        return out

    def coverage(self) -> str:
        let_go = self.evictions.totals()
        lost = []
        if let_go.get("e2e_partitions"):
            lost.append(f"{let_go['e2e_partitions']} partitions' produced batches let go (bounds)")
        if let_go.get("e2e_latencies"):
            lost.append(
                f"{let_go['e2e_latencies']} (topic, partition, producer, consumer, group) latencies "
                "let go (bounds): not in the rows"
            )
        if let_go.get("e2e_consumers"):
            lost.append(f"{let_go['e2e_consumers']} consumers' groups forgotten (bounds)")
        tail = "; " + "; ".join(lost) if lost else ""
        if not self.fetched_unmatched:
            return "every fetched record's Produce was in the capture" + tail
        aged = self.bounds.idle
        return (
            f"{self.fetched_unmatched} fetched records without their Produce in the capture (produced "
            "before it, by a connection it does not hold, or more than "
            f"{PRODUCED_KEPT} batches"
            + (f" or {duration_text(aged)}" if aged is not None else "")
            + " before their fetch)"
        ) + tail


def _who(w: tuple) -> str:
    host, client_id = w
    return f"{client_id or '-'}@{host}"


def _first_ts(b: dict) -> float | None:
    ts = b["base_timestamp"]
    if b["timestamp_type"] != "create_time" or type(ts) is not int or ts <= 0:
        return None
    return ts / 1000
