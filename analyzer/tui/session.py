"""What the TUI browses, without Textual (unit-tested alone): one analysis (a capture file, stdin
or a live interface) with its statistics, its row index and the list's state, the decoded
exchanges kept in memory (a bounded cache), the display filter glue and the live counters.

The app (:mod:`analyzer.tui.app`) runs :meth:`Session.indexer` in a worker thread, hands the
batches it posts to :meth:`Session.take` on the UI thread, and draws what this holds.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, BinaryIO

import orjson
from rich.text import Text

from analyzer.dissect.constants import ApiKey
from analyzer.dissect.message import Options
from analyzer.model import Exchange, Issue
from analyzer.pipeline import Analysis, Exit
from analyzer.session.live_feed import SETTLE
from analyzer.session.producer_insights import producers_report, transactions_report
from analyzer.session.report import stats_tables
from analyzer.session.stats import Stats
from analyzer.tui.indexer import Indexer, Progress
from analyzer.tui.listview import ListView
from analyzer.tui.model import Index
from analyzer.tui.rows import Row, Taken
from analyzer.tui.widgets.status import problem_lines

if TYPE_CHECKING:
    from analyzer.filter import FilterError

LIVE_IDLE_TIMEOUT = 300.0  # seconds: live connections idle longer are closed (as `live` does)
LIVE_MAX_ROWS = 500_000  # exchanges a live session keeps (~50 MB packed); later ones are counted, not kept


# -- decoded exchanges ------------------------------------------------------------------------------


class DecodedCache:
    """Exchanges decoded again from the spool, least recently used first out, bounded by the
    bytes of their frames (``budget``; a decoded tree costs a small multiple of its bytes).

    Keys are ``(row index, with record bodies)``; an exchange decoded with its record bodies
    also answers for one without."""

    def __init__(self, budget: int = 64 << 20) -> None:
        self.budget = budget
        self.used = 0
        self._items: OrderedDict[tuple[int, bool], tuple[Exchange, int]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, index: int, bodies: bool) -> Exchange | None:
        items = self._items
        for key in ((index, True),) if bodies else ((index, False), (index, True)):
            hit = items.get(key)
            if hit is not None:
                items.move_to_end(key)
                self.hits += 1
                return hit[0]
        self.misses += 1
        return None

    def put(self, index: int, bodies: bool, ex: Exchange, cost: int, evict: bool = True) -> None:
        """Keep ``ex``; without ``evict`` (a filter scanning every row) only if it fits without
        pushing others out: a scan longer than the cache would otherwise evict every entry
        before it is used again, and keep none of the rows the next filter reads."""
        items = self._items
        if not evict and self.used + cost > self.budget:
            return
        key = (index, bodies)
        old = items.pop(key, None)
        if old is not None:
            self.used -= old[1]
        if bodies:  # the one with bodies answers for both
            lean = items.pop((index, False), None)
            if lean is not None:
                self.used -= lean[1]
        items[key] = (ex, cost)
        self.used += cost
        while self.used > self.budget and len(items) > 1:
            _, (_, c) = items.popitem(last=False)
            self.used -= c

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        self._items.clear()
        self.used = 0


class LazyExchange:
    """An exchange as the display filter sees it, answered from the row while it can be: the
    connection, API, version, correlation id, client id, topics, latency and time come from the
    index; anything else (the messages, their fields, errors and issues) decodes the exchange
    (once, through the cache). A filter such as ``api == Fetch and fetch.max_wait_ms > 400``
    decodes the Fetch exchanges only."""

    __slots__ = ("_row", "_decode", "_ex", "conn", "api_key", "api_version", "correlation_id", "client_id")

    def __init__(self, row: Row, decode: Callable[[Row], Exchange]) -> None:
        self._row = row
        self._decode = decode
        self._ex: Exchange | None = None
        self.conn = row.conn
        self.api_key = row.api_key
        self.api_version = row.api_version
        self.correlation_id = row.corr
        self.client_id = row.client_id

    @property
    def topics(self) -> dict[str, list[int]]:
        return self._row.topic_dict()

    @property
    def latency(self) -> float | None:
        return self._row.latency

    @property
    def ts(self) -> float:
        return self._row.ts

    def __getattr__(self, name: str) -> Any:  # request, response, issues, all_issues...
        ex = self._ex
        if ex is None:
            ex = self._ex = self._decode(self._row)
        return getattr(ex, name)


# -- the session ----------------------------------------------------------------------------------


class Session:
    """One capture (a path, a binary file object) or live source (``source.live``) being
    indexed, and the list's state. ``lock`` is held by the indexing thread while it changes the
    analysis, the statistics and the index; the UI thread takes it to read them."""

    BATCH_SECONDS = 0.25  # how often the worker posts rows while reading
    LATE_BATCH_SECONDS = 1.0  # ... after the first LATE_AFTER seconds (a file)
    LATE_AFTER = 2.0
    FIRST_BATCH_SECONDS = 0.02  # ... and the first rows, sooner
    SLICE_SECONDS = 0.05  # how long the worker holds the lock at a time
    FREEZE_ROWS = 4000  # gc.freeze() every so many rows indexed
    CACHE_BYTES = 64 << 20  # frame bytes of the decoded exchanges kept (view and filter)
    HISTORY = 100  # filters remembered (the filter bar's up and down)

    def __init__(
        self,
        source: str | BinaryIO | Any,
        opts: Options | None = None,
        ports: tuple[int, ...] = (),
        tls_keylog: str | None = None,
        max_rows: int | None = None,
        spill_after: int | None = None,
    ) -> None:
        """``spill_after``: rows kept in memory, the later ones in a temporary file (default
        :data:`analyzer.tui.rows.SPILL_ROWS`)."""
        self.source = source
        self.live = (
            not isinstance(source, str)
            and not hasattr(source, "read")
            and bool(getattr(source, "live", False))
        )
        self.opts = opts if opts is not None else Options(records_bodies=True)
        self.lock = threading.Lock()
        # indexing decodes without record bodies; the view decodes them (self.opts)
        scan = Options(
            records_bodies=False,
            show_secrets=self.opts.show_secrets,
            limits=self.opts.limits,
            packet_offsets=True,  # the hex view marks where each packet starts
        )
        self.analysis = Analysis(
            source,
            scan,
            ports=ports,
            lock=self.lock,
            tls_keylog=tls_keylog,
            idle_timeout=LIVE_IDLE_TIMEOUT if self.live else None,
        )
        self.stats = Stats(self.analysis.knowledge.topic_ids)
        self.index = Index(
            Options(True, self.opts.show_secrets, self.opts.limits),
            limit=(max_rows or LIVE_MAX_ROWS) if self.live else max_rows,
            spill_after=spill_after,
            topic_ids=self.analysis.knowledge.topic_ids,
        )
        self.lean_opts = Options(False, self.opts.show_secrets, self.opts.limits)
        self.list = ListView(Taken(self.index.rows))  # the rows taken, filtered, scoped and sorted
        self.filter_history: list[str] = []  # the filters applied, oldest first
        self.cache = DecodedCache(self.CACHE_BYTES)
        self.error_rows = 0  # exchanges with error codes or problems
        self.packets = 0
        self.connections = 0
        self.fraction: float | None = 0.0
        self.done = False
        self.load_error: str | None = None
        self.first_row_at: float | None = None  # monotonic time the first rows were taken
        self.started_at = time.monotonic()
        # live: packets per second over the last interval of :meth:`rate`
        self._rate_at = (self.started_at, 0)
        self.packet_rate = 0.0
        # the Produce requests found by time and correlation id (retries' attempts), and how
        # many rows were looked at for each (:meth:`sent_rows`)
        self._sent: dict[tuple, int] = {}
        self._sent_upto: dict[tuple, int] = {}

    # indexing -------------------------------------------------------------------------------------
    def indexer(self) -> Indexer:
        return Indexer(
            self.analysis,
            self.index,
            self.stats,
            self.lock,
            first_batch=self.FIRST_BATCH_SECONDS,
            batch=self.BATCH_SECONDS,
            late_batch=None if self.live else self.LATE_BATCH_SECONDS,
            late_after=self.LATE_AFTER,
            slice_seconds=self.SLICE_SECONDS,
            freeze_rows=self.FREEZE_ROWS,
        )

    def run_indexer(
        self, post: Callable[[Progress], bool], cancelled: Callable[[], bool], ready: Callable[[], bool]
    ) -> None:
        """Index the whole source (the worker thread). The indexing never waits for the UI
        (``ready()`` false: the rows wait for the next batch); a live source posts its
        counters even without new rows."""
        path = self.source if isinstance(self.source, str) else None
        self.indexer().run(post, cancelled, path, ready=ready, idle_posts=self.live)

    def take(self, p: Progress) -> Sequence[int] | None:
        """Take a batch on the UI thread: the row indexes appended to the list (None: the list
        was rebuilt, a new row sorts before rows already shown)."""
        added = self.list.add(p.rows)
        self.error_rows += sum(1 for r in p.rows if r.has_errors)
        if p.rows and self.first_row_at is None:
            self.first_row_at = time.monotonic()
        self.packets = p.packets
        self.connections = p.connections
        self.fraction = p.fraction
        if p.error:
            self.load_error = p.error
        if p.done:
            self.done = True
        return added

    def stop_capture(self) -> bool:
        """End a live capture (what was captured stays browsable); False when not live or done."""
        if not self.live or self.done:
            return False
        self.analysis.stop()
        return True

    def rate(self) -> float:
        """Packets per second since the last call (live status)."""
        now = time.monotonic()
        t0, n0 = self._rate_at
        n = self.analysis.packets
        if now - t0 >= 0.5:
            self.packet_rate = (n - n0) / (now - t0)
            self._rate_at = (now, n)
        return self.packet_rate

    @property
    def kernel_drops(self) -> tuple[int, int]:
        """(received, dropped) as the kernel counted them (live)."""
        src = self.analysis.source
        return int(getattr(src, "received", 0) or 0), int(getattr(src, "dropped", 0) or 0)

    @property
    def ring_full(self) -> int:
        ring = getattr(self.analysis.source, "ring", None)
        return int(getattr(ring, "freeze_q", 0) or 0)

    # rows and exchanges ---------------------------------------------------------------------------
    @property
    def rows(self) -> Taken:
        """The rows taken so far, made again from the index on each access."""
        return self.list.rows  # type: ignore[return-value]

    def exchange(self, row: Row, bodies: bool = True, scan: bool = False) -> Exchange:
        """The exchange of ``row`` with its field trees (record bodies with ``bodies``), decoded
        from the spool or taken from the cache (``scan``: a filter reading every row, which
        only fills the cache's free room)."""
        ex = self.cache.get(row.index, bodies)
        if ex is None:
            ex = self.index.exchange(row, None if bodies else self.lean_opts)
            # the frames' bytes stay with the exchange; its tree costs a fraction more
            cost = max(row.req_bytes, 0) + max(row.resp_bytes, 0) + 512
            self.cache.put(row.index, bodies, ex, cost, evict=not scan)
        return ex

    def predicate(self, flt) -> Callable[[Row], bool]:
        """The list predicate of a compiled display filter: the filter runs on a
        :class:`LazyExchange` (rows are decoded only when the index cannot answer), record
        bodies decoded only when it reads them."""
        flt.knowledge = self.analysis.knowledge
        bodies = bool(flt.needs_records)

        def decode(row: Row) -> Exchange:
            return self.exchange(row, bodies, scan=True)

        return lambda row: flt(LazyExchange(row, decode))

    def filter_choice(self, text: str) -> tuple[Callable[[Row], bool] | None, FilterError | None, str | None]:
        """What the filter bar's ``text`` does: ``(predicate, None, None)`` for a display filter;
        ``(None, None, note)`` for plain words that are not one (a text search over the rows,
        the note says so); ``(None, error, None)`` for anything else (the list stays)."""
        if not text:
            return None, None, None
        from analyzer.filter import FilterError, compile_filter, plain_words

        try:
            flt = compile_filter(text)
        except FilterError as exc:
            if not plain_words(text):
                return None, exc, None
            return None, None, f"text search: {text!r} is not a display filter ({exc.message})"
        return self.predicate(flt), None, None

    def field_filter(self, row: Row, kind: str, path: tuple) -> tuple[str | None, str]:
        """The display filter ``f`` builds from a tree field (``path`` from its message's root)
        of ``row``'s ``kind`` message: ``field == value``, checked to compile and to keep
        ``row`` itself; else ``(None, why)``."""
        from analyzer.filter import FilterError, compile_filter, field_expressions

        found = field_expressions(row.api_key, kind, path)
        if isinstance(found, str):
            return None, found
        why = ""
        for expr in found:
            try:
                flt = compile_filter(expr)
            except FilterError as exc:
                why = f"{expr}: {exc.message}"
                continue
            if self.predicate(flt)(row):
                return expr, ""
            why = f"{expr} does not keep this exchange"
        return None, why

    def remember_filter(self, text: str) -> None:
        """Put ``text`` last in the filter history (once; at most ``HISTORY`` kept)."""
        text = " ".join(text.split())
        if not text:
            return
        h = self.filter_history
        if text in h:
            h.remove(text)
        h.append(text)
        del h[: -self.HISTORY]

    @staticmethod
    def exchange_json(ex: Exchange) -> bytes:
        """An exchange as the export writes it (decoded, with record bodies), indented."""
        from analyzer.export.jsonout import exchange_json

        return orjson.dumps(exchange_json(ex), option=orjson.OPT_INDENT_2)

    # what the views show ----------------------------------------------------------------------------
    @property
    def capture_issues(self) -> list[Issue]:
        return self.analysis.capture_issues if self.done else []

    def problem_lines(self) -> list[Text]:
        said = self.analysis.outcome().problems() if self.done and not self.load_error else []
        no_kafka = next((line for line in said if line.startswith("no Kafka")), None)
        return problem_lines(self.load_error, self.capture_issues, no_kafka, live=self.live)

    @property
    def exit_code(self) -> int:
        """The analysis' exit code (see :class:`~analyzer.pipeline.Exit`); an unreadable file is
        2, a failure of the analysis itself 1; 0 when quit before the end."""
        if self.load_error:
            return Exit.USAGE if not self.rows and not self.packets else Exit.DAMAGED
        if not self.done:
            return Exit.OK
        return int(self.analysis.outcome().exit_code())

    def stats_snapshot(self) -> dict:
        with self.lock:
            return stats_tables(self.stats, self.analysis.outcome())

    def latencies(self) -> dict[str, list[float]]:
        with self.lock:
            return {name: list(a.latencies) for (_, name), a in self.stats.apis.items() if a.latencies}

    def connection_rows(self) -> list[dict]:
        with self.lock:
            return self.index.connection_rows(self.analysis.knowledge)

    def connection_timeline(self, conn: int) -> tuple[str, list[Row]]:
        """Connection ``conn`` (``client -> broker``) and its exchanges in request-time order."""
        rows = sorted((r for r in self.rows if r.conn.id == conn), key=lambda r: (r.ts, r.index))
        with self.lock:
            s = self.index.conns.get(conn)
        title = rows[0].endpoints if rows else (f"{s.info.a} ?? {s.info.b}" if s is not None else "?")
        return title, rows

    def group_events(self) -> list[dict]:
        """The consumer groups' exchanges over time (``#`` is the exchange's number)."""
        with self.lock:
            return self.index.groups.rows(self.index.origin)

    def group_report(self) -> dict:
        """The consumer groups as the groups view shows them: ``groups``, per group its
        generations, rebalances, lag rows and Burrow's status at the last packet (``now``)
        (:meth:`~analyzer.session.insights.GroupInsights.report`); ``origin``, the time the view
        counts from; ``exchanges``, the exchanges the insights were given so far."""
        with self.lock:
            a = self.analysis
            now = a.last_ts if a.packets else None
            return {
                "groups": self.index.insights.groups.report(now),
                "origin": self.index.origin,
                "now": now,
                "exchanges": len(self.index.rows) + self.index.dropped,
            }

    def rebalance_exchanges(self, group: str, start: float, end: float | None) -> list[int]:
        """The exchanges (row indexes) of ``group``'s rebalance from ``start`` to ``end``: its
        group protocol exchanges and OffsetCommits sent meanwhile."""
        with self.lock:
            return self.index.groups.between(group, start, end)

    def generation_exchanges(self, group: str, generation: int) -> list[int]:
        """The JoinGroup and SyncGroup exchanges (KIP-848: heartbeats) of ``group``'s ``generation``."""
        with self.lock:
            return self.index.groups.formed(group, generation)

    def client_report(self, target: str) -> dict:
        """The clients as the clients and topology views show them: ``clients``, a row per
        client judged for Kafka ``target``
        (:meth:`~analyzer.session.clients.ClientTracker.rows`); ``flows``, the topology through
        the brokers; ``dropped``, what a bounded (live) index let go."""
        with self.lock:
            c = self.index.insights.clients
            dropped = dict(c.dropped)
            if c.flows_dropped:
                dropped["flows"] = c.flows_dropped
            return {"clients": c.rows(target), "flows": c.flows_rows(), "dropped": dropped}

    def producer_report(self) -> dict:
        """The producers as the producers view shows them: the ``producers`` command's report
        (:func:`~analyzer.session.producer_insights.producers_report`: ``producers``,
        ``retries``...) and ``origin``, the time the view counts from. Following a live
        capture, a batch nothing happened to for :data:`~analyzer.session.live_feed.SETTLE`
        seconds is counted first (its retries, its outcome), as ``live`` does."""
        with self.lock:
            a = self.analysis
            pi = self.index.insights.producers
            if self.live and not self.done and a.packets:
                pi.producers.settle(a.last_ts, SETTLE)
            report = producers_report(pi)
        return report | {"origin": self.index.origin}

    def transaction_report(self) -> dict:
        """The transactions as the transactions view shows them: the ``transactions``
        command's report (:func:`~analyzer.session.producer_insights.transactions_report`)
        at the last packet, ``origin``, and per transaction (``rows``, in their order) the row
        of its first exchange and of its EndTxn (None: not in the list)."""
        with self.lock:
            a = self.analysis
            pi = self.index.insights.producers
            report = transactions_report(pi, a.last_ts if a.packets else None)
            tt = pi.txns
            marks = {(x.transactional_id, x.start): (x.first_mark, x.end_mark) for x in tt.done_}
            marks.update(
                {(x.transactional_id, x.start): (x.first_mark, x.end_mark) for x in tt.open.values()}
            )
        rows = [marks.get((x["transactional_id"], x["start"]), (None, None)) for x in report["transactions"]]
        return report | {"origin": self.index.origin, "rows": rows}

    def sent_rows(self, attempts: list[dict]) -> list[int | None]:
        """The rows of the Produce requests ``attempts`` (a retry's ``first`` and ``later``:
        sent at ``time`` with ``correlation_id``), None for one the list does not keep. Found
        by their request time; each row is looked at once per attempt asked for."""
        rows = self.index.rows
        with self.lock:
            n = len(rows)
        found = self._sent
        keys = [(a["time"], a["correlation_id"]) for a in attempts]
        missing = {k for k in keys if k not in found and self._sent_upto.get(k, 0) < n}
        if missing:
            times = {t for t, _ in missing}
            start = min(self._sent_upto.get(k, 0) for k in missing)
            for i in range(start, n):
                if rows.ts(i) in times:
                    r = rows[i]
                    k = (r.ts, r.corr)
                    if k in missing and r.api_key == ApiKey.PRODUCE:
                        found[k] = i
            for k in missing:
                self._sent_upto[k] = n
        return [found.get(k) for k in keys]

    def issue_rows(self):
        with self.lock:
            return self.index.issue_rows()

    def close(self) -> None:
        self.index.close()
