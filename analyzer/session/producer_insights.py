"""The producers' insights of a run, as ``stats``, ``export`` and the ``producers`` and
``transactions`` commands give them: batches, retries and outcomes
(:mod:`analyzer.session.producers`), transactions and read_committed consumers held back
(:mod:`analyzer.session.transactions`), end-to-end latency (:mod:`analyzer.session.e2e`).

One consumer (:class:`ProducerInsights`) for one process; work shared among processes sends
:meth:`ProducerInsights.facts` of each exchange to the merge, which gives them to
:meth:`ProducerInsights.apply` in capture order: the same state one process has.
"""

from __future__ import annotations

from analyzer.model import Exchange
from analyzer.session.bounded import DEFAULT_BOUNDS, Bounds, Evictions
from analyzer.session.e2e import E2ETracker
from analyzer.session.producers import ProducerTracker
from analyzer.session.transactions import TxnTracker

# the export's objects (NDJSON ``type``; sections of the JSON document)
OBJECT_TYPES = ("producer", "retry", "transaction", "held_back", "e2e")


class ProducerInsights:
    """The consumer: every producer, retry, transaction and end-to-end latency."""

    def __init__(self, topic_ids: dict[str, str] | None = None, bounds: Bounds = DEFAULT_BOUNDS) -> None:
        self.bounds = bounds
        self.producers = ProducerTracker(topic_ids, bounds)
        self.txns = TxnTracker(topic_ids, bounds)
        self.e2e = E2ETracker(topic_ids, bounds)
        self.closed = False

    def event(self, ev) -> None:
        if type(ev) is Exchange:
            f = self.facts(ev)
            if f is not None:
                self.apply(f)

    def done(self, outcome=None) -> None:
        if not self.closed:
            self.producers.done()
            self.closed = True

    # -- shared work ------------------------------------------------------------------------------------
    def facts(self, ex: Exchange) -> tuple | None:
        """What an exchange tells the producers, the transactions and the latencies (plain
        values; None: nothing)."""
        p, t, e = self.producers.facts(ex), self.txns.facts(ex), self.e2e.facts(ex)
        return None if p is None and t is None and e is None else (p, t, e)

    def apply(self, facts: tuple, mark: object = None) -> None:
        """One exchange's :meth:`facts`; ``mark``: what the caller names the exchange by, kept
        where it may be evidence (check's findings)."""
        p, t, e = facts
        if p is not None:
            self.producers.apply(p, mark)
        if t is not None:
            self.txns.apply(t, mark)
        if e is not None:
            self.e2e.apply(e, mark)

    # -- what it found ----------------------------------------------------------------------------------
    def evictions(self) -> Evictions:
        """What the producers', transactions' and end-to-end latencies' tables let go, per table."""
        out = Evictions()
        out.merge(self.producers.evictions)
        out.merge(self.txns.evictions)
        out.merge(self.e2e.evictions)
        return out

    def tables(self, now: float | None) -> dict[str, list[dict]]:
        """``stats``' producer sections."""
        self.done()
        return {
            "producers": producer_section(self.producers.rows()),
            "transactions": transaction_section(self.txns.transactions(now)),
            "e2e": e2e_section(self.e2e.rows()),
        }

    def objects(self, now: float | None) -> list[dict]:
        """The export's objects, each with its ``type``."""
        self.done()
        out: list[dict] = [{"type": "producer", **r} for r in self.producers.rows()]
        retries = sorted(self.producers.retries, key=lambda r: (r["later"]["time"], r["first"]["time"]))
        out.extend({"type": "retry", **r} for r in retries)
        out.extend({"type": "transaction", **r} for r in self.txns.transactions(now))
        out.extend({"type": "held_back", **r} for r in self.txns.held_back())
        out.extend({"type": "e2e", **r} for r in self.e2e.rows())
        return out

    def coverage(self) -> str:
        return self.e2e.coverage()


# -- stats' sections, from the export's objects (also what ``stats --parquet`` reads) ------------------

PRODUCER_COLUMNS = (
    "client_id",
    "producer_id",
    "transactional_id",
    "batches",
    "records",
    "retried_records",
    "failed_records",
    "unanswered_records",
    "duplicates_written",
    "sequence_gaps",
    "fenced",
    "records_per_batch",
    "linger_ms",
    "under_batched",
)
E2E_COLUMNS = (
    "topic",
    "partition",
    "producer_client",
    "consumer_client",
    "group",
    "count",
    "p50_ms",
    "p99_ms",
    "max_ms",
)


def producer_section(producers: list[dict]) -> list[dict]:
    """``stats``' producers rows of ``producer`` objects (in their order)."""
    return [{k: r[k] for k in PRODUCER_COLUMNS} for r in producers]


def transaction_section(transactions: list[dict]) -> list[dict]:
    """``stats``' transactions rows (one per transactional id, by id) of ``transaction`` objects."""
    by_id: dict[str, dict] = {}
    for x in transactions:
        row = by_id.setdefault(
            x["transactional_id"],
            {
                "transactional_id": x["transactional_id"],
                "commit": 0,
                "abort": 0,
                "hanging": 0,
                "open": 0,
                "failed": 0,
                "longest_ms": None,
                "records": 0,
            },
        )
        row[x["outcome"]] += 1
        row["failed"] += x["error"] is not None
        row["records"] += x["records"]
        if x["duration_ms"] is not None and (
            row["longest_ms"] is None or x["duration_ms"] > row["longest_ms"]
        ):
            row["longest_ms"] = x["duration_ms"]
    return [by_id[k] for k in sorted(by_id)]


def e2e_section(e2e: list[dict]) -> list[dict]:
    """``stats``' e2e rows of ``e2e`` objects (in their order)."""
    return [{k: r[k] for k in E2E_COLUMNS} for r in e2e]


# -- the ``producers`` and ``transactions`` reports (the commands' JSON; the TUI's views) ---------------


def producers_report(insights: ProducerInsights, wanted: set[str] | None = None) -> dict:
    """The producers (of the client ids ``wanted``; none: all), their retries (in the order of
    their later attempt), the retries seen (``retries_seen``) and let go (``retries_dropped``),
    the end-to-end latencies of what they wrote and that latency's coverage. It reads the
    insights without closing anything (a live capture's batches stay open for retries)."""
    pt = insights.producers
    rows = [r for r in pt.rows() if not wanted or r["client_id"] in wanted]
    clients = {(r["client_id"], r["client"]) for r in rows}
    retries = sorted(pt.retries, key=lambda r: (r["later"]["time"], r["first"]["time"]))
    e2e = [r for r in insights.e2e.rows() if not wanted or r["producer_client"].split("@")[0] in wanted]
    return {
        "producers": rows,
        "retries": [r for r in retries if (r["client_id"], r["client"]) in clients],
        "retries_seen": pt.retry_count,
        "retries_dropped": max(0, pt.retry_count - len(pt.retries)),
        "e2e": e2e,
        "e2e_coverage": insights.coverage(),
    }


def transactions_report(
    insights: ProducerInsights, now: float | None, wanted: set[str] | None = None
) -> dict:
    """The transactions (of the transactional ids ``wanted``; none: all), those ended and let go
    (``finished_dropped``) and open ones let go (``open_dropped``), and the read_committed
    consumers held back; ``now``: the capture's end (open ones past their timeout: hanging)."""
    tt = insights.txns
    txns = [x for x in tt.transactions(now) if not wanted or x["transactional_id"] in wanted]
    return {
        "transactions": txns,
        "finished_seen": tt.finished,
        "finished_dropped": max(0, tt.finished - len(tt.done_)),
        "open_dropped": tt.dropped_open,
        "held_back": tt.held_back(),
    }
