"""The consumer groups as they happen (``live``): one :class:`~analyzer.session.insights.GroupInsights`
fed exchange by exchange (or, from worker processes, with what :meth:`GroupInsights.wants` and
:meth:`GroupInsights.facts` of each, in capture order), and what it finds told as it comes.

:class:`GroupFeed` gives ``emit(kind, object)``:

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
  (:meth:`GroupFeed.done`) every group's, judged at the end (as ``export`` gives them), or only
  the changed ones.

Time is capture time: the key of each exchange (the packet that completed it), so a run over one
process and one over several give the same objects. Each group keeps its last ``keep``
rebalances, generations and lag rows (a run of weeks stays bounded): :meth:`GroupFeed.dropped`.
"""

from __future__ import annotations

from collections.abc import Callable

from analyzer.model import Exchange
from analyzer.session.burrow import DEFAULT_PARAMS, Params
from analyzer.session.insights import GroupInsights

STATUS_EVERY = 1.0  # capture seconds between judging every group's status
PAUSE_WAIT = 30.0  # capture seconds a rebalance's object waits for its partitions' first fetches
KEEP = 1000  # rebalances, generations and lag rows kept per group


class GroupFeed:
    """The groups of a live run: :meth:`exchange` (one process) or :meth:`item` (the parent of
    worker processes), :meth:`done` at the end."""

    def __init__(
        self,
        emit: Callable[[str, dict], None],
        topic_ids: dict[str, str] | None = None,
        params: Params = DEFAULT_PARAMS,
        keep: int = KEEP,
        final_all: bool = True,
    ) -> None:
        self.emit = emit
        self.topic_ids = topic_ids if topic_ids is not None else {}
        self.insights = GroupInsights(self.topic_ids, params, keep)
        self.final_all = final_all  # done(): every group's status, not only the changed ones
        self.held: list[tuple[float, str, int]] = []  # rebalances waiting for pauses: (end, group, index)
        self.now: float | None = None
        self.judged: float | None = None  # when every group's status was last judged
        self.lost_held = 0  # held rebalances let go (keep) before their object was written

    def exchange(self, ex: Exchange, key: float) -> None:
        """One process: an exchange completed by the packet at ``key``."""
        wants = GroupInsights.wants(ex)
        facts = self.insights.facts(ex)
        if wants or facts is not None:
            self.item(key, ex if wants else None, facts)

    def item(self, key: float, exchange: Exchange | None, facts: tuple | None) -> None:
        """An exchange's part (as :meth:`GroupInsights.apply` takes it), in capture order."""
        self.insights.apply(exchange, facts)
        self.now = key if self.now is None else max(self.now, key)
        every = self.judged is None or self.now - self.judged >= STATUS_EVERY
        self._tell(self.now, every)

    def done(self, now: float | None) -> None:
        """The end of the run (``now``: its last packet's time; None: none)."""
        self.insights.done()
        at = now if now is not None else self.now if self.now is not None else 0.0
        changed = self._tell(at, True, final=True)
        if self.final_all:
            for s in self.insights.lag.status(at):
                self.emit("consumer_status", self.insights.status_object(s))
        else:
            for s in changed:
                self.emit("consumer_status", self.insights.status_object(s))

    def dropped(self) -> dict[str, int]:
        """What was let go to stay bounded (``keep``), by kind."""
        groups = self.insights.groups.groups.values()
        return {
            "rebalances": sum(g.dropped for g in groups),
            "generations": sum(g.dropped_generations for g in groups),
            "lag_rows": sum(self.insights.lag.dropped.values()),
            "rebalances_unwritten": self.lost_held,
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
        return changed

    def _release(self, now: float, final: bool) -> None:
        """Write the held rebalances whose pauses are known (or waited long enough), in order."""
        ins = self.insights
        kept = []
        for end, group, index in self.held:
            g = ins.groups.groups[group]
            if index < g.dropped:
                self.lost_held += 1
                continue
            pauses = ins.consumption.rebalance_pauses(group, index)
            if final or now - end >= PAUSE_WAIT or all(p.first_fetch is not None for p in pauses):
                self.emit("rebalance", ins.rebalance_object(g.rebalances[index - g.dropped], index))
            else:
                kept.append((end, group, index))
        self.held = kept
