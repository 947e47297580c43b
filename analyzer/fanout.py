"""Live analysis over several processes: N ring sockets in one ``PACKET_FANOUT`` group.

The parent opens the N rings (as root; then drops privileges if asked) and forks N workers.
The kernel hashes each packet's flow symmetrically (``PACKET_FANOUT_HASH``, defragmenting
first), so both directions of a TCP connection reach the same worker. Each worker runs its own
:class:`~analyzer.pipeline.Analysis` and :class:`~analyzer.session.stats.Stats` over its flows
and formats its events itself (the export JSON line, the ``read`` line: the expensive part), and
sends ``(key, output)`` pairs to the parent every 0.1 s, with a *watermark*: the time before
which it will send nothing more (the packet it is at, or the wall clock minus 0.5 s when its
ring is empty). The parent writes the outputs in key order up to the lowest watermark (keys are
the capture time of the packet that completed the event, as in a single-process run), sums the
kernel drop counters, and at the end merges the workers' statistics, knowledge and capture
issues into one :class:`~analyzer.pipeline.Outcome` for the summary and the exit code.

Insights: one group's members (one producer's retries, one client's connections) talk over
connections that land in different workers, so the workers do not follow the insights
themselves: with an :class:`~analyzer.session.live_feed.InsightFeed` given, each worker sends,
keyed like its outputs, what :meth:`~analyzer.session.insights.Insights.facts` says of each
exchange (and :meth:`~analyzer.session.insights.Insights.ended` of each connection's end) and
the exchanges :meth:`~analyzer.session.insights.Insights.wants` whole, and the parent feeds the one feed in
key order: up to the lowest watermark, and never holding an item more than
:data:`REORDER_DELAY` seconds of capture time behind the newest key received (a worker far
behind does not hold every group back); an item that arrives after one keyed later was fed is
fed at once, out of order, and counted (:attr:`Fanout.late`).

Topic ids: a worker sends the topic ids it learns (Metadata, CreateTopics responses) with its
batches and the parent relays them to the other workers, so a Fetch on one worker's connection
is named by a Metadata response seen on another's; the summary's topic rows are also folded by
the merged knowledge at the end.

What falls short of one process: an exchange decoded before the relay arrives (within about
0.2 s of the Metadata response, or when the Metadata came after it) keeps the topic id in its
export line; the rest of the knowledge (brokers, groups, client software) is merged only for
the summary; the per-worker connection ids are offset by ``1_000_000 * worker``; ``read``
times are relative to the start of the capture, not to the first exchange; the parent holds
the outputs of a worker that is ahead until the others' watermarks pass them (memory grows
with the lag between workers).
"""

from __future__ import annotations

import contextlib
import ctypes
import heapq
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING, cast

from analyzer.events import CaptureIssue, CaptureStats, ConnectionEnd
from analyzer.issues import CAPTURE_NO_TCP, CAPTURE_PACKETS_DROPPED, CAPTURE_WORKER_FAILED
from analyzer.model import Exchange, Issue
from analyzer.pipeline import Analysis, Outcome, no_tcp
from analyzer.plain import replace
from analyzer.session.bounded import DEFAULT_BOUNDS, Bounds
from analyzer.session.insights import Insights
from analyzer.session.metrics import Health, Metrics, metric_extra
from analyzer.session.stats import Stats, exchange_facts

if TYPE_CHECKING:
    from analyzer.capture.ring import Ring, RingCapture
    from analyzer.session.live_feed import InsightFeed
    from analyzer.session.metrics import LiveMetrics, MetricLimits

CONN_ID_STRIDE = 1_000_000
PR_SET_PDEATHSIG = 1
SEND_EVERY = 0.1
IDLE_LAG = 0.5  # an idle ring has handed over every packet older than this (block timeout: 50 ms)
METRICS_EVERY = 1.0  # seconds between a worker's metrics sent to the parent (and at its end)
# a worker's events waiting for its sender thread at most: past it the capture waits (the ring
# fills and the kernel drops, counted) rather than memory growing while the parent falls behind.
# About 2 s of one worker's exchanges at 20,000 packets/s (0.7 s at 50,000): the ring, not this,
# is the buffer for a slow moment. Each stall fills it, and a full backlog is sent to the parent
# at once: the peak it leaves in both processes is memory Python keeps (a soak with 20,000 here
# grew 94 MB in one stall at minute 20, and stayed there)
BACKLOG_MAX = 2_000
REORDER_DELAY = 2.0  # capture seconds an insight item waits for the other workers' earlier ones
# seconds between two returns of the C heap's free pages to the system (live runs for weeks)
TRIM_EVERY = 30.0


def keep_heap_trimmed(every: float = TRIM_EVERY) -> threading.Thread | None:
    """Start a daemon thread that calls glibc's ``malloc_trim(0)`` every ``every`` seconds, in
    this process (a forked worker starts its own). Python gives the packets, the batches sent
    between processes and the parsed exchanges (anything over 512 bytes) to the C heap; their
    free pages stay in the process (freed memory among live blocks, in the arena of each thread
    that allocated it) until trimmed: a stall's peak (a worker's full backlog) stays in RSS.
    In a soak without stalls it was worth a few MB a process (bench/RESULTS.md). None where the
    C library has no ``malloc_trim`` (musl): RSS then keeps those pages."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int

    def run() -> None:
        while True:
            time.sleep(every)
            trim(0)

    t = threading.Thread(target=run, name="kafka-analyzer-heap-trim", daemon=True)
    t.start()
    return t


def _merge_issues(per_worker: list[list[Issue]], received: int, dropped: int, none_tcp: bool) -> list[Issue]:
    """One list of capture issues: the drops summed into one issue, ``capture.no_tcp`` when
    ``none_tcp`` (no packet any worker saw was TCP), the rest once per distinct message."""
    from analyzer.capture.ring import dropped_issue

    out: list[Issue] = []
    seen = set()
    for issues in per_worker:
        for i in issues:
            if i.code in (CAPTURE_PACKETS_DROPPED.code, CAPTURE_NO_TCP.code) or (i.code, i.message) in seen:
                continue
            seen.add((i.code, i.message))
            out.append(i)
    if dropped:
        out.append(dropped_issue(received, dropped))
    if none_tcp:
        out.append(CAPTURE_NO_TCP("no TCP traffic in the capture"))
    return out


def _worker(
    i: int,
    conn,
    inbound,
    stop,
    make_source: Callable[[int], RingCapture],
    make_analysis: Callable[[RingCapture], Analysis],
    formatter: Callable[[object], object],
    others: list[Ring],
    groups: bool = False,
    limits: MetricLimits | None = None,
    bounds: Bounds = DEFAULT_BOUNDS,
) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent says when to stop
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    hup: list[RingCapture] = []  # SIGHUP (the parent relays it): reopen the --write file

    def on_hup(*_) -> None:
        for source in hup:
            source.reopen()

    signal.signal(signal.SIGHUP, on_hup)
    for ring in others:  # the other workers' rings: if one of them dies, its socket closes
        ring.close()
    with contextlib.suppress(Exception):  # die with the parent, even if it is killed
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() == 1:
        return
    keep_heap_trimmed()
    src = make_source(i)
    hup.append(src)
    a = make_analysis(src)
    a.pipeline.reasm.next_id = 1 + i * CONN_ID_STRIDE
    a.knowledge.most = bounds.max_entries
    stats = Stats(a.knowledge.topic_ids, bounds)
    lock = threading.Lock()
    taken = threading.Condition(lock)  # the sender took the backlog
    pending: list = []
    facts: list = []  # the insights' items: (key, exchange it wants or None, facts)
    insights = Insights(a.knowledge.topic_ids) if groups else None  # its facts only
    metrics = Metrics(limits, a.knowledge.topic_ids) if limits is not None else None
    sent_at = [0.0]  # when the metrics were last sent (every METRICS_EVERY seconds)
    done = threading.Event()
    topic_ids = a.knowledge.topic_ids  # shared with stats; only the main thread writes it
    sent_ids: set[str] = set()
    learned: list[dict] = []  # topic ids from other workers, applied by the main thread

    def send(final: bool = False) -> None:
        wm = src.watermark()  # before taking the pending events: later ones are keyed after it
        with lock:
            batch = pending[:]
            pending.clear()
            items = facts[:]
            facts.clear()
            taken.notify_all()
        new = {k: v for k, v in list(topic_ids.items()) if k not in sent_ids}
        sent_ids.update(new)
        counted = None
        if metrics is not None and (final or time.monotonic() - sent_at[0] >= METRICS_EVERY):
            sent_at[0] = time.monotonic()
            with lock:
                counted = _counted(metrics, a, src, stats)
        conn.send(("batch", wm, batch, src.received, src.dropped, new, items, counted))
        while inbound.poll():
            learned.append(inbound.recv())

    def sender() -> None:
        while not done.wait(SEND_EVERY):
            if stop.is_set():
                a.stop()
            try:
                send()
            except OSError:  # the parent is gone
                a.stop()
                return

    class Feed:
        """The worker's consumer: topic ids learnt elsewhere applied, the statistics counted,
        each event formatted and queued under the capture time that completed it."""

        def event(self, ev) -> None:
            while learned:  # names of topic ids another worker learned (Metadata elsewhere)
                for k, v in learned.pop().items():
                    topic_ids.setdefault(k, v)
                    sent_ids.add(k)
            ty = type(ev)
            if ty is CaptureIssue or ty is CaptureStats:  # the parent merges these
                return
            count(ev, ty, stats, metrics, lock)
            out = formatter(ev)
            if out is not None:
                key = a.pipeline.last_ts
                with lock:
                    pending.append((key, out))
            if insights is not None and (ty is Exchange or ty is ConnectionEnd):
                wants = ty is Exchange and Insights.wants(ev)
                told = insights.facts(ev) if ty is Exchange else insights.ended(ev)
                if wants or told is not None:
                    item = (a.pipeline.last_ts, ev if wants else None, told)
                    with lock:
                        facts.append(item)
            wait_backlog(taken, pending, facts, t)

    t = threading.Thread(target=sender, daemon=True)
    t.start()
    try:
        outcome = a.run(Feed())
    finally:
        done.set()
        t.join()
    try:
        send(final=True)
        conn.send(("end", {"outcome": outcome, "stats": stats}))
    except OSError:  # the parent is gone
        pass
    conn.close()


def wait_backlog(taken: threading.Condition, pending: list, facts: list, sender: threading.Thread) -> None:
    """Wait while a worker's sender hands its backlog over (it may be waiting on the parent):
    the worker stops reading its ring meanwhile, whose overflow the kernel counts as drops."""
    if len(pending) + len(facts) < BACKLOG_MAX:
        return
    with taken:
        while len(pending) + len(facts) >= BACKLOG_MAX and sender.is_alive():
            taken.wait(SEND_EVERY)


def count(ev, ty: type, stats: Stats, metrics: Metrics | None, lock) -> None:
    """An event counted by the statistics and the metrics (these under ``lock``: they are sent
    from another thread), the exchange's facts read once for both."""
    if metrics is None:
        stats.event(ev)
    elif ty is Exchange:
        f = exchange_facts(ev, stats.topic_ids)
        stats.apply(ev.conn.id, ev.conn, f)
        extra = metric_extra(ev)
        with lock:
            metrics.apply(f, extra)
    else:
        stats.event(ev)
        with lock:
            metrics.event(ev)


def _counted(metrics: Metrics, a: Analysis, src, stats: Stats) -> bytes:
    """A worker's metrics and capture health so far, pickled (under the lock its counting holds),
    with its statistics' and knowledge's bounded tables (their evictions, their sizes)."""
    p = a.pipeline
    ring = getattr(src, "ring", None)
    health = Health(
        packets=p.packets,
        received=src.received,
        kernel_dropped=src.dropped,
        ring_full=ring.freeze_q if ring is not None else 0,
        connections=p.connections,
        tracked=p.reasm.tracked,
    )
    metrics.evicted = p.reasm.evicted
    metrics.state_of(stats, a.knowledge)
    return pickle.dumps((metrics, health), pickle.HIGHEST_PROTOCOL)


def name_topic_ids(stats: Stats, topic_ids: dict[str, str]) -> None:
    """Fold the rows a worker kept under a topic id (it never saw the Metadata naming it) into
    the topic's name, now that the merged knowledge knows it."""
    for key in [k for k in stats.topics if k in topic_ids and topic_ids[k] != k]:
        o = stats.topics.pop(key)
        t = stats.topics[topic_ids[key]]
        t.produced_records += o.produced_records
        t.produced_bytes += o.produced_bytes
        t.fetched_records += o.fetched_records
        t.fetched_bytes += o.fetched_bytes
        t.requests += o.requests


class Fanout:
    """Run ``workers`` processes over rings already opened (``rings``); :meth:`run` returns the
    merged statistics and outcome."""

    def __init__(
        self,
        name: str,
        rings: list[Ring],
        make_source: Callable[[int, Ring], RingCapture],
        make_analysis: Callable[[RingCapture], Analysis],
        formatter: Callable[[object], object],
        output: Callable[[object], None],
        on_drops: Callable[[CaptureStats], None] | None = None,
        feed: InsightFeed | None = None,
        metrics: LiveMetrics | None = None,
        bounds: Bounds = DEFAULT_BOUNDS,
        flush: Callable[[], None] | None = None,
    ):
        """``bounds``: the workers' statistics' and knowledge's tables' (the insights' are the
        ``feed``'s, in this process); ``flush``: called after the outputs of each round of the
        workers' batches were given to ``output`` (one flush of the output a round, not a line)."""
        self.bounds = bounds
        self.name = name
        self.rings = rings
        self.make_source = make_source
        self.make_analysis = make_analysis
        self.formatter = formatter
        self.output = output
        self.flush = flush
        self.on_drops = on_drops
        self.feed = feed
        self.metrics = metrics  # each worker's counts, and the insights fed under its lock
        self.late = 0  # insight items fed after one keyed later (REORDER_DELAY passed)
        self._stop = False
        self._procs: list = []
        self._pid = os.getpid()

    def stop(self) -> None:
        self._stop = True

    def hangup(self) -> None:
        """Relay a ``SIGHUP`` to the workers: each reopens its ``--write`` file."""
        if os.getpid() != self._pid:  # a worker just forked, still with the parent's handler
            return
        for p in self._procs:
            with contextlib.suppress(OSError, ValueError):
                if p.pid is not None:
                    os.kill(p.pid, signal.SIGHUP)

    def run(self) -> tuple[Stats, Outcome]:
        ctx = multiprocessing.get_context("fork")
        stop = ctx.Event()
        procs, conns, outs = self._start(ctx, stop)
        keep_heap_trimmed()  # (after the forks: each worker has its own)
        self._procs = procs
        n = len(procs)
        print(
            f"kafka-analyzer: capturing on {self.name.removeprefix('live:')} with {n} workers",
            file=sys.stderr,
            flush=True,
        )
        self._heap: list = []
        self._seq = 0
        self._watermarks = [float("-inf")] * n
        self._received, self._dropped = [0] * n, [0] * n
        self._results: list[dict | None] = [None] * n
        self._gheap: list = []  # the insight items: (key, seq, exchange or None, facts)
        self._newest = float("-inf")  # the newest insight item's key received
        self._fed = float("-inf")  # the key of the last insight item fed
        if self.metrics is not None:
            self.metrics.health.running = True
        self._poll(stop, conns, outs)
        if self.metrics is not None:
            with self.metrics.lock:
                self.metrics.health.running = False
        while self._heap:
            self.output(heapq.heappop(self._heap)[2])
        self._feed(float("inf"))
        if self.flush is not None:
            self.flush()
        if self.metrics is not None:
            with self.metrics.lock:
                self.metrics.ended = True
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                with contextlib.suppress(OSError):
                    os.kill(p.pid, signal.SIGKILL)
        for o in outs:
            o.close()
        return self._merge()

    def _start(self, ctx, stop) -> tuple[list, list, list]:
        """Fork a worker per ring: the processes, the pipes their batches come back on and the
        pipes the parent relays topic ids to them on."""
        procs, conns, outs = [], [], []
        for i, ring in enumerate(self.rings):
            r, w = ctx.Pipe(duplex=False)
            ir, iw = ctx.Pipe(duplex=False)  # parent -> worker: topic ids learned elsewhere
            p = ctx.Process(
                target=_worker,
                args=(
                    i,
                    w,
                    ir,
                    stop,
                    lambda i, ring=ring: self.make_source(i, ring),
                    self.make_analysis,
                    self.formatter,
                    [r for r in self.rings if r is not ring],
                    self.feed is not None,
                    self.metrics.limits if self.metrics is not None else None,
                    self.bounds,
                ),
                daemon=True,
                name=f"kafka-analyzer-worker-{i}",
            )
            p.start()
            w.close()
            ir.close()
            procs.append(p)
            conns.append(r)
            outs.append(iw)
        for ring in self.rings:  # the workers hold them now
            ring.close()
        return procs, conns, outs

    def _poll(self, stop, conns: list, outs: list) -> None:
        """Take the workers' messages until every one has ended (or died): outputs up to the
        lowest watermark are written, drop counts reported as they change."""
        reported = 0
        alive = dict(zip(conns, range(len(conns)), strict=True))
        while alive:
            if self._stop:
                stop.set()
            for c in cast(list[Connection], wait(list(alive), timeout=0.2)):  # wait() returns its own
                i = alive[c]
                try:
                    msg = c.recv()
                except (EOFError, OSError):
                    del alive[c]
                    self._watermarks[i] = float("inf")
                    continue
                if msg[0] == "batch":
                    self._batch(i, msg, outs)
                else:
                    self._results[i] = msg[1]
                    self._received[i] = msg[1]["outcome"].received or 0
                    self._dropped[i] = msg[1]["outcome"].dropped or 0
                    self._watermarks[i] = float("inf")
                    del alive[c]
            low = min(self._watermarks)
            wrote = bool(self._heap) and self._heap[0][0] <= low
            while self._heap and self._heap[0][0] <= low:
                self.output(heapq.heappop(self._heap)[2])
            self._feed(max(low, self._newest - REORDER_DELAY))
            if wrote and self.flush is not None:
                self.flush()
            total = sum(self._dropped)
            if total != reported:
                reported = total
                if self.on_drops is not None:
                    self.on_drops(CaptureStats(None, sum(self._received), total))

    def _batch(self, i: int, msg: tuple, outs: list) -> None:
        """A worker's batch: its outputs queued by key, its counters and watermark taken, the
        topic ids it learned relayed to the other workers."""
        _, wm, batch, self._received[i], self._dropped[i], new_ids, items, counted = msg
        if counted is not None and self.metrics is not None:
            with self.metrics.lock:
                self.metrics.part(i, *pickle.loads(counted))
        if new_ids and self.feed is not None:
            for k, v in new_ids.items():
                self.feed.topic_ids.setdefault(k, v)
        for key, ex, facts in items:
            if key < self._fed:  # later than REORDER_DELAY: fed now, out of order
                self.late += 1
                self._give(key, ex, facts)
                continue
            heapq.heappush(self._gheap, (key, self._seq, ex, facts))
            self._seq += 1
            self._newest = max(self._newest, key)
        if new_ids:
            for j, o in enumerate(outs):
                if j != i:
                    with contextlib.suppress(OSError):
                        o.send(new_ids)
        for key, out in batch:
            heapq.heappush(self._heap, (key, self._seq, out))
            self._seq += 1
        self._watermarks[i] = max(self._watermarks[i], wm)

    def _feed(self, upto: float) -> None:
        """Feed the insight items keyed up to ``upto`` to the feed, in key order."""
        heap = self._gheap
        while heap and heap[0][0] <= upto:
            key, _seq, ex, facts = heapq.heappop(heap)
            self._fed = max(self._fed, key)
            self._give(key, ex, facts)

    def _give(self, key: float, ex, facts) -> None:
        if self.feed is None:
            return
        if self.metrics is None:
            self.feed.item(key, ex, facts)
            return
        with self.metrics.lock:
            self.feed.item(key, ex, facts)
            self.metrics.now = key if self.metrics.now is None else max(self.metrics.now, key)

    def _merge(self) -> tuple[Stats, Outcome]:
        """The workers' end results as one outcome and one set of statistics."""
        parts: list[Outcome] = []
        issues: list[list[Issue]] = []
        for i, r in enumerate(self._results):
            if r is None:
                issues.append([CAPTURE_WORKER_FAILED(f"capture worker {i} ended without its results")])
                continue
            parts.append(r["outcome"])
            issues.append(list(r["outcome"].capture_issues))
        merged = Outcome.combine(parts)
        stats = Stats(merged.knowledge.topic_ids, self.bounds)
        for r in self._results:
            if r is not None:
                stats.merge(r["stats"])
        name_topic_ids(stats, merged.knowledge.topic_ids)
        received, dropped = sum(self._received), sum(self._dropped)
        none_tcp = no_tcp(merged.packets, merged.skipped)
        merged = replace(
            merged,
            name=self.name,
            received=received,
            dropped=dropped,
            live=True,
            interrupted=merged.interrupted or self._stop,
            capture_issues=tuple(_merge_issues(issues, received, dropped, none_tcp)),
        )
        for issue in merged.capture_issues:
            stats.event(CaptureIssue(issue, None))
        return stats, merged
