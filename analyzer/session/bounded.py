"""Bounds on the long-lived tables of a run (``live`` runs for weeks): idle expiry by capture time
and a maximum size, every eviction counted per table; and :class:`Latencies`, latencies kept
exactly while few, then in log buckets.

Time is capture time (packet timestamps), never the wall clock, so a file and its live replay,
``-j N``, rotated pieces and Spark let the same entries go at the same points.

An owner of a table keeps an :class:`Expiry` beside it: :meth:`Expiry.touch` each time a key is
used (an ordered dict moved to its end: O(1)), and the expiry calls the owner back for the keys
it lets go, the longest idle first: past :attr:`Bounds.max_entries` at once, and, at most once per
:attr:`Bounds.every` seconds of capture time, every key idle longer than :attr:`Bounds.idle`
(popped from the front: no scan of the table).
"""

from __future__ import annotations

import math
from array import array
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from analyzer.plain import record

IDLE = 86_400.0  # capture seconds an entry may stay unused (a day)
MAX_ENTRIES = 200_000  # entries per table
EVERY = 60.0  # capture seconds between idle sweeps
EXACT = 100_000  # latencies kept exactly per API before the log buckets
GAMMA = 1.02  # log bucket ratio: a bucket's middle is within 1% of any value in it


# the latency histogram bounds of the metrics (analyzer.session.metrics, --metrics-buckets), here
# where the command line's help reads them without loading the metrics
# seconds: 0.5 ms to 10 s, Kafka's usual request latencies (fetches wait up to fetch.max.wait.ms)
DEFAULT_BUCKETS: tuple[float, ...] = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)


@record(frozen=True)
class Bounds:
    """The bounds of every long-lived table (``--state-idle``, ``--state-max``)."""

    idle: float | None = IDLE  # None: no idle expiry
    max_entries: int = MAX_ENTRIES
    every: float = EVERY
    exact_latencies: int = EXACT


DEFAULT_BOUNDS = Bounds()
# the knowledge's tables (names learnt): bounded by their size only, the oldest learnt let go
LEARNT = frozenset(("topic ids", "leaders", "client software", "known groups"))


def duration_text(seconds: float) -> str:
    """``3600`` -> ``1h``, ``90`` -> ``90s``, ``86400`` -> ``1d``."""
    for unit, n in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= n and seconds % n == 0:
            return f"{int(seconds // n)}{unit}"
    return f"{seconds:g}s"


class Evictions:
    """Entries let go, per table: ``{table: [expired idle, evicted over the maximum]}``."""

    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts: dict[str, list[int]] = {}

    def add(self, table: str, idle: int = 0, full: int = 0) -> None:
        c = self.counts.get(table)
        if c is None:
            c = self.counts[table] = [0, 0]
        c[0] += idle
        c[1] += full

    def merge(self, other: Evictions) -> None:
        for table, (idle, full) in other.counts.items():
            self.add(table, idle, full)

    def totals(self) -> dict[str, int]:
        """Table -> entries let go (both ways), the tables that let any go."""
        return {t: i + f for t, (i, f) in sorted(self.counts.items()) if i + f}

    def rows(self, bounds: Bounds) -> list[dict]:
        """Per table: what was let go and why (the report's ``evictions`` section)."""
        return [
            {"table": t, "expired_idle": i, "evicted_full": f, "said": said(t, i, f, bounds)}
            for t, (i, f) in sorted(self.counts.items())
            if i + f
        ]

    def __bool__(self) -> bool:
        return any(i + f for i, f in self.counts.values())


def said(table: str, idle: int, full: int, bounds: Bounds) -> str:
    """``"3 groups expired after 1h idle; 2 evicted (more than 10 at once)"``."""
    parts = []
    table = table.replace("_", " ")
    if idle:
        parts.append(f"{idle} {table} expired after {duration_text(bounds.idle or 0.0)} idle")
    if full:
        what = f"{full} {table} evicted" if not idle else f"{full} evicted"
        order = "the oldest learnt first" if table in LEARNT else "the longest idle first"
        parts.append(f"{what}, {order} (more than {bounds.max_entries} at once)")
    return "; ".join(parts)


class Expiry:
    """The last capture time each key of one table was used, the longest idle first; lets go
    (calling ``evict(key)``) past the bounds, counting into ``evictions`` under ``table``."""

    __slots__ = ("table", "bounds", "seen", "evict", "evictions", "next_sweep")

    def __init__(
        self,
        table: str,
        evict: Callable[[Any], None],
        evictions: Evictions,
        bounds: Bounds = DEFAULT_BOUNDS,
    ) -> None:
        self.table = table
        self.bounds = bounds
        self.seen: OrderedDict[Hashable, float] = OrderedDict()
        self.evict = evict
        self.evictions = evictions
        self.next_sweep: float | None = None

    def __len__(self) -> int:
        return len(self.seen)

    def touch(self, key: Hashable, ts: float) -> None:
        """``key`` used at ``ts``; lets go the longest idle past the maximum, and (at most once
        per :attr:`Bounds.every`) the ones idle too long."""
        seen = self.seen
        if key in seen:
            seen.move_to_end(key)
            if ts > seen[key]:
                seen[key] = ts
        else:
            seen[key] = ts
            if len(seen) > self.bounds.max_entries:
                old, _ = seen.popitem(last=False)
                self.evictions.add(self.table, full=1)
                self.evict(old)
        nxt = self.next_sweep
        if nxt is None:
            self.next_sweep = ts + self.bounds.every
        elif ts >= nxt:
            self.sweep(ts)

    def sweep(self, now: float) -> None:
        """Let go every key idle longer than :attr:`Bounds.idle` at ``now``."""
        self.next_sweep = now + self.bounds.every
        idle = self.bounds.idle
        if idle is None:
            return
        seen, limit, n = self.seen, now - idle, 0
        while seen:
            key, last = next(iter(seen.items()))
            if last >= limit:
                break
            del seen[key]
            n += 1
            self.evict(key)
        if n:
            self.evictions.add(self.table, idle=n)

    def discard(self, key: Hashable) -> None:
        """The owner let ``key`` go itself (not counted)."""
        self.seen.pop(key, None)


class Latencies:
    """Latencies (seconds) of one API: exact while at most ``exact`` (percentiles by nearest
    rank), then counts in log buckets of ratio :data:`GAMMA` (a percentile within 1%:
    :attr:`approximate`). The buckets are a function of the values alone, so parts merged give
    what one process gives."""

    __slots__ = ("values", "buckets", "zeros", "count", "max", "cap")

    def __init__(self, cap: int = EXACT) -> None:
        self.cap = cap
        self.values: array[float] | None = array("d")  # None once in buckets
        self.buckets: dict[int, int] = {}
        self.zeros = 0  # latencies <= 0 (out-of-order timestamps)
        self.count = 0
        self.max: float | None = None

    @property
    def approximate(self) -> bool:
        return self.values is None

    def append(self, v: float) -> None:
        self.count += 1
        if self.max is None or v > self.max:
            self.max = v
        values = self.values
        if values is not None:
            values.append(v)
            if len(values) > self.cap:
                self._to_buckets()
        else:
            self._bucket(v)

    def extend(self, other: Latencies) -> None:
        """Merge ``other`` in."""
        if other.count == 0:
            return
        self.count += other.count
        if other.max is not None and (self.max is None or other.max > self.max):
            self.max = other.max
        mine, theirs = self.values, other.values
        if mine is not None and theirs is not None and len(mine) + len(theirs) <= self.cap:
            mine.extend(theirs)
            return
        if self.values is not None:
            self._to_buckets()
        if other.values is not None:
            for v in other.values:
                self._bucket(v)
        else:
            self.zeros += other.zeros
            b = self.buckets
            for i, n in other.buckets.items():
                b[i] = b.get(i, 0) + n

    def __len__(self) -> int:
        return self.count

    def __iter__(self):
        """The values (once :attr:`approximate`: each bucket's middle, as often as counted)."""
        if self.values is not None:
            yield from self.values
            return
        for _ in range(self.zeros):
            yield 0.0
        for i in sorted(self.buckets):
            mid = _middle(i)
            for _ in range(self.buckets[i]):
                yield mid

    def _to_buckets(self) -> None:
        values, self.values = self.values, None
        for v in values or ():
            self._bucket(v)

    def _bucket(self, v: float) -> None:
        if v <= 0.0:
            self.zeros += 1
            return
        i = math.floor(math.log(v) / _LOG_GAMMA)
        self.buckets[i] = self.buckets.get(i, 0) + 1

    def percentile(self, q: float) -> float | None:
        """Nearest-rank percentile (a bucket's middle once :attr:`approximate`)."""
        n = self.count
        if n == 0:
            return None
        k = max(0, min(n - 1, int(round(q / 100.0 * n + 0.5)) - 1))
        if self.values is not None:
            return sorted(self.values)[k]
        if k < self.zeros:
            return 0.0
        seen = self.zeros
        for i in sorted(self.buckets):
            seen += self.buckets[i]
            if seen > k:
                mid = _middle(i)
                return mid if self.max is None else min(mid, self.max)
        return self.max

    def percentiles(self, qs: Iterable[float]) -> list[float | None]:
        """Several percentiles (one sort)."""
        if self.values is not None:
            vals = sorted(self.values)
            n = len(vals)
            out: list[float | None] = []
            for q in qs:
                if not n:
                    out.append(None)
                    continue
                out.append(vals[max(0, min(n - 1, int(round(q / 100.0 * n + 0.5)) - 1))])
            return out
        return [self.percentile(q) for q in qs]


def _middle(i: int) -> float:
    """The value within (g - 1) / (g + 1) (< 1%) of every value of bucket ``[g^i, g^(i+1))``."""
    return 2.0 * GAMMA ** (i + 1) / (GAMMA + 1.0)


_LOG_GAMMA = math.log(GAMMA)


def median(values: Iterable[float]) -> float:
    """The median of ``values`` (not empty), as :func:`statistics.median` gives it (the middle one,
    or the mean of the two middle ones); here so that a start-up does not load :mod:`statistics`
    (with fractions, decimal and random) for the reports' two medians."""
    data = sorted(values)
    n = len(data)
    if n % 2 == 1:
        return data[n // 2]
    i = n // 2
    return (data[i - 1] + data[i]) / 2
