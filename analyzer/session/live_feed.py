"""The insights as they happen (``live``): one :class:`~analyzer.session.insights.Insights` (the
consumer groups', the producers', the clients') fed exchange by exchange and connection end by
connection end (or, from worker processes, with what :meth:`Insights.wants` and
:meth:`Insights.facts` of each, in capture order), and what it finds told as it comes.

:class:`InsightFeed` gives ``emit(kind, object)``. The consumer groups:

* ``rebalance_start``: a rebalance begun, once it is sure to be one (a member joined in it; its
  start may be earlier: a LeaveGroup, a REBALANCE_IN_PROGRESS answer); the cause seen so far;
* ``rebalance_end``: a rebalance closed (its sync phase over, or the end of the run): the
  ``rebalance`` row without the partitions' pauses, at once;
* ``rebalance``: the export's object, with each partition's pause: written when every partition
  given in it was fetched by its new owner, or :data:`PAUSE_WAIT` seconds of capture time after
  its end, or at the end of the run (then a pause not over is null, as one offline run says for
  one not over at the capture's end);
* ``generation``: a generation formed (the export's object);
* ``lag``: each commit's lag row (the export's object);
* ``consumer_status``: a group's Burrow status (the export's object) when it, or a partition's,
  changed: judged for a group at each of its commits and for every group each
  :data:`STATUS_EVERY` seconds of capture time (a consumer stops between commits); at the end
  (:meth:`InsightFeed.done`) every group's, judged at the end (as ``export`` gives them), or only
  the changed ones.

The producers:

* ``retry``: the export's object, when the later attempt comes (from the attempts seen by then:
  the offline one unless an earlier attempt's exchange comes after it; then its batch's close
  gives the offline row too);
* ``lost``: a batch whose last attempt failed and none was written, ``duplicated``: a batch
  written at more offsets than it was sent anew (plain dicts with a ``time``): told when the
  batch is counted: when nothing happened to it for :data:`SETTLE` seconds of capture time
  (:meth:`~analyzer.session.producers.ProducerTracker.settle`), past :data:`KEEP_KEYS` open
  producer-partitions, or at the end; a batch written twice when its partition's written batches
  are let go, or at the end;
* ``transaction``: the export's object of a transaction, when its EndTxn answer comes;
  ``hanging``: a transaction open past its timeout (once; its row so far and the ``time`` it
  was found past it); at the end the ones
  still open, as the export's objects;
* at the end (``final_all``): the export's ``producer``, ``held_back`` and ``e2e`` objects.

The clients:

* ``client_problem``: the first time a client shows a readiness problem for the newest release
  (a version it refuses, old record formats) or a hygiene finding (a Metadata loop or storm,
  churn, reconnections without backoff, throttling, large messages, idle connections):
  ``{time, client_id, client, software, kind, problem}``, judged each :data:`STATUS_EVERY`
  seconds of capture time for the clients that changed;
* at the end (``final_all``): the export's ``client`` and ``edge`` objects.

Time is capture time: the key of each exchange (the packet that completed it), so a run over one
process and one over several give the same objects. Each group keeps its last ``keep``
rebalances, generations and lag rows, the transactions the last ``keep`` finished and ``keep``
open, the clients ``keep`` clients and edges, the producers and end-to-end latencies
:data:`KEEP_KEYS` producer-partitions, partitions and latency keys (a run of weeks stays
bounded): :meth:`InsightFeed.dropped`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from analyzer.dissect.protocol_table import CURRENT_RELEASE
from analyzer.events import ConnectionEnd
from analyzer.model import Exchange
from analyzer.session.bounded import DEFAULT_BOUNDS, Bounds
from analyzer.session.burrow import DEFAULT_PARAMS, Params
from analyzer.session.clients import ClientView
from analyzer.session.insights import GroupInsights, Insights

STATUS_EVERY = 1.0  # capture seconds between judging every group's status (and the clients')
PAUSE_WAIT = 30.0  # capture seconds a rebalance's object waits for its partitions' first fetches
KEEP = 1000  # rebalances, generations and lag rows kept per group; transactions, clients, edges
KEEP_KEYS = 10_000  # producer-partitions open, partitions followed, e2e latency keys
SETTLE = 10.0  # capture seconds after which a batch nothing happened to is counted (lost...)
_NUMBER = re.compile(r"\d+(\.\d+)?")


class InsightFeed:
    """The insights of a live run: :meth:`exchange` and :meth:`connection_end` (one process) or
    :meth:`item` (the parent of worker processes), :meth:`done` at the end."""

    def __init__(
        self,
        emit: Callable[[str, dict], None],
        topic_ids: dict[str, str] | None = None,
        params: Params = DEFAULT_PARAMS,
        keep: int = KEEP,
        final_all: bool = True,
        bounds: Bounds = DEFAULT_BOUNDS,
    ) -> None:
        self.emit = emit
        self.topic_ids = topic_ids if topic_ids is not None else {}
        self.all = Insights(self.topic_ids, params, keep, bounds)
        self.insights: GroupInsights = self.all.groups
        pi = self.all.producers
        pi.producers.follow(KEEP_KEYS)
        pi.txns.follow(keep)
        pi.e2e.follow(KEEP_KEYS)
        self.all.clients.follow(keep)
        self.told_clients: dict[tuple, set[str]] = {}  # client -> the problems told
        self.keep = keep
        # done(): every group's status, not only the changed ones; the export's objects known
        # only at the end (producers, clients...)
        self.final_all = final_all
        self.held: list[tuple[float, str, int]] = []  # rebalances waiting for pauses: (end, group, index)
        self.now: float | None = None
        self.judged: float | None = None  # when every group's status was last judged
        self.lost_held = 0  # held rebalances let go (keep) before their object was written

    def exchange(self, ex: Exchange, key: float) -> None:
        """One process: an exchange completed by the packet at ``key``."""
        wants = Insights.wants(ex)
        facts = self.all.facts(ex)
        if wants or facts is not None:
            self.item(key, ex if wants else None, facts)

    def connection_end(self, ev: ConnectionEnd, key: float) -> None:
        """One process: a connection's end, told at ``key``."""
        facts = self.all.ended(ev)
        if facts is not None:
            self.item(key, None, facts)

    def item(self, key: float, exchange: Exchange | None, facts: tuple | None) -> None:
        """An exchange's or a connection end's part (as :meth:`Insights.apply` takes it), in
        capture order."""
        self.all.apply(exchange, facts)
        self.now = key if self.now is None else max(self.now, key)
        every = self.judged is None or self.now - self.judged >= STATUS_EVERY
        self._tell(self.now, every)

    def done(self, now: float | None) -> None:
        """The end of the run (``now``: its last packet's time; None: none)."""
        self.all.done()
        at = now if now is not None else self.now if self.now is not None else 0.0
        changed = self._tell(at, True, final=True)
        if self.final_all:
            for s in self.insights.lag.status(at):
                self.emit("consumer_status", self.insights.status_object(s))
        else:
            for s in changed:
                self.emit("consumer_status", self.insights.status_object(s))
        if self.final_all:
            self._final(at)

    def _final(self, at: float) -> None:
        """The export's objects known at the end: the open transactions, the producers, the
        read_committed consumers held back, the latencies, the clients and the edges."""
        pi, emit = self.all.producers, self.emit
        for row in pi.producers.rows():
            emit("producer", {"type": "producer", **row})
        for x in pi.txns.transactions(at):
            if x["outcome"] in ("open", "hanging"):
                emit("transaction", {"type": "transaction", **x})
        for row in pi.txns.held_back():
            emit("held_back", {"type": "held_back", **row})
        for row in pi.e2e.rows():
            emit("e2e", {"type": "e2e", **row})
        for row in self.all.clients.rows():
            emit("client", {"type": "client", **row})
        for row in self.all.clients.edges():
            emit("edge", {"type": "edge", **row})

    def dropped(self) -> dict[str, int]:
        """What was let go to stay bounded (``keep``), by kind."""
        groups = self.insights.groups.groups.values()
        pi, clients = self.all.producers, self.all.clients
        return {
            "rebalances": sum(g.dropped for g in groups),
            "generations": sum(g.dropped_generations for g in groups),
            "lag_rows": sum(self.insights.lag.dropped.values()),
            "rebalances_unwritten": self.lost_held,
            "batches_closed_early": pi.producers.closed_early,
            "retry_rows": max(0, pi.producers.retry_count - len(pi.producers.retries)),
            "transactions": max(0, pi.txns.finished - len(pi.txns.done_)),
            "open_transactions": pi.txns.dropped_open,
            "clients": clients.dropped["clients"],
            "connections": clients.dropped["connections"],
            "edges": clients.dropped["edges"],
        }

    # -- telling ----------------------------------------------------------------------------------------
    def _tell(self, now: float, every: bool, final: bool = False) -> list[dict]:
        ins, emit = self.insights, self.emit
        news = ins.groups.news()
        for begun in news.started:
            emit("rebalance_start", begun._asdict())
        for gen in news.generations:
            emit("generation", {"type": "generation", **gen.row()})
        for index, r in news.rebalances:
            emit("rebalance_end", r.row())
            self.held.append((r.end if r.end is not None else r.start, r.group, index))
            ins.forget(r.group)
        for row in ins.lag.news():
            emit("lag", {"type": "lag", **row.row()})
        if every:
            self.judged = now
        changed = ins.lag.status_changes(now, every)
        if not final:
            for st in changed:
                emit("consumer_status", ins.status_object(st))
        if self.held:
            self._release(now, final)
        self._producers(now, every)
        if every:
            self._clients(now)
        return changed

    def _producers(self, now: float, every: bool) -> None:
        pi, emit = self.all.producers, self.emit
        if every:
            pi.producers.settle(now, SETTLE)
        for kind, row in pi.producers.news():
            if kind == "retry":
                emit("retry", {"type": "retry", **row})
            else:
                emit(kind, {"time": now, **row})
        for row in pi.txns.news():
            emit("transaction", {"type": "transaction", **row})
        if every:
            for row in pi.txns.hanging(now):
                emit("hanging", {"time": now, **row})

    def _clients(self, now: float) -> None:
        """The problems each changed client shows for the first time."""
        told = self.told_clients
        for c in self.all.clients.news():
            k = (c.host, c.client_id)
            seen = told.setdefault(k, set())
            for kind, problem in _problems(c):
                key = _NUMBER.sub("#", problem)
                if key not in seen:
                    seen.add(key)
                    self.emit(
                        "client_problem",
                        {
                            "time": now,
                            "client_id": c.client_id,
                            "client": c.host,
                            "software": c.software_said,
                            "kind": kind,
                            "problem": problem,
                        },
                    )
        if len(told) > 2 * self.keep:  # the clients let go (keep)
            kept = self.all.clients.clients
            for k in [k for k in told if k not in kept]:
                del told[k]

    def _release(self, now: float, final: bool) -> None:
        """Write the held rebalances whose pauses are known (or waited long enough), in order."""
        ins = self.insights
        kept = []
        for end, group, index in self.held:
            g = ins.groups.groups.get(group)
            if g is None or not 0 <= index - g.dropped < len(g.rebalances):  # (let go: keep, bounds)
                self.lost_held += 1
                continue
            pauses = ins.consumption.rebalance_pauses(group, index)
            if final or now - end >= PAUSE_WAIT or all(p.first_fetch is not None for p in pauses):
                self.emit("rebalance", ins.rebalance_object(g.rebalances[index - g.dropped], index))
            else:
                kept.append((end, group, index))
        self.held = kept


def _problems(c: ClientView) -> list[tuple[str, str]]:
    """A client's readiness problems for the newest release and its hygiene findings."""
    row = c.row(CURRENT_RELEASE)
    out = [
        (
            "readiness",
            f"uses {x['api_name']} v{x['version']}, which Kafka {row['target']} refuses "
            f"(it accepts {x['accepted'] or 'none'})",
        )
        for x in row["removed_versions"]
    ]
    if row["old_formats"]:
        out.append(("readiness", f"{row['old_formats']} record batches in the old formats (magic 0 or 1)"))
    out += [("hygiene", f) for f in row["findings"]]
    return out
