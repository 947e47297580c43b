"""The consumer groups' insights of a run, as ``stats`` and ``export`` give them: the timeline
(:mod:`analyzer.session.rebalances`) and the lag with Burrow's status (:mod:`analyzer.session.lag`).

One consumer (:class:`GroupInsights`) for one process; work shared among processes (``export -j``,
``stats -j``) sends :meth:`GroupInsights.facts` of each exchange to the merge, which gives them
to :meth:`GroupInsights.apply` in capture order: the same state one process has.
"""

from __future__ import annotations

from analyzer.model import Exchange
from analyzer.session.burrow import DEFAULT_PARAMS, Params
from analyzer.session.lag import LagTracker
from analyzer.session.rebalances import GROUP_APIS, GroupTracker

# the export's objects (NDJSON ``type``; sections of the JSON document)
OBJECT_TYPES = ("generation", "rebalance", "lag", "consumer_status")


class GroupInsights:
    """The consumer: every group's generations, rebalances, lag and status."""

    def __init__(self, topic_ids: dict[str, str] | None = None, params: Params = DEFAULT_PARAMS) -> None:
        self.groups = GroupTracker(topic_ids)
        self.lag = LagTracker(topic_ids, params)

    def event(self, ev) -> None:
        if type(ev) is Exchange:
            if ev.api_key in GROUP_APIS:
                self.groups.event(ev)
            self.lag.event(ev)

    def done(self, outcome=None) -> None:
        self.groups.done()

    # -- shared work: what a process sends, what the merge applies -------------------------------------
    @staticmethod
    def wants(ex: Exchange) -> bool:
        """Whether the timeline reads this exchange itself (the merge needs it whole)."""
        return ex.api_key in GROUP_APIS

    def facts(self, ex: Exchange) -> tuple | None:
        """The lag's facts of an exchange (plain values; None: nothing)."""
        return self.lag.facts(ex)

    def apply(self, exchange: Exchange | None, lag_facts: tuple | None) -> None:
        """One exchange's part, in capture order: the exchange itself for the timeline (when
        :meth:`wants` it), its lag facts."""
        if exchange is not None:
            self.groups.event(exchange)
        if lag_facts is not None:
            self.lag.apply(lag_facts)

    # -- what it found ----------------------------------------------------------------------------------
    def table(self, now: float | None) -> list[dict]:
        """``stats``' consumer-group health table: a row per group."""
        status = {s["group"]: s for s in self.lag.status(now)}
        rows = []
        for name in sorted(set(self.groups.groups) | set(self.lag.windows)):
            g = self.groups.groups.get(name)
            rebs = [r.duration_ms for r in g.rebalances if r.duration_ms is not None] if g is not None else []
            st = status.get(name)
            lags = [p for p in st["partitions"] if p["lag"] is not None] if st is not None else []
            worst = max(lags, key=lambda p: p["lag"], default=None)
            secs = [p["lag_seconds"] for p in lags if p["lag_seconds"] is not None]
            rows.append(
                {
                    "group_id": name,
                    "rebalances": len(g.rebalances) if g is not None else 0,
                    "longest_rebalance_ms": round(max(rebs), 3) if rebs else None,
                    "rebalancing_ms": round(sum(rebs), 3) if rebs else None,
                    "status": st["status"] if st is not None else None,
                    "max_lag": worst["lag"] if worst is not None else None,
                    "max_lag_s": round(max(secs), 3) if secs else None,
                    "coverage": _coverage(g.coverage if g is not None else None, st),
                }
            )
        return rows

    def objects(self, now: float | None) -> list[dict]:
        """The export's objects, each with its ``type``: every generation and rebalance of every
        group, every commit's lag, each group's status at ``now`` (the capture's end)."""
        out: list[dict] = []
        for name in sorted(self.groups.groups):
            g = self.groups.groups[name]
            out.extend({"type": "generation", **x.row()} for x in g.generations)
            out.extend({"type": "rebalance", **r.row()} for r in g.rebalances)
        out.extend({"type": "lag", **r.row()} for r in self.lag.rows)
        for s in self.lag.status(now):
            seen = self.groups.groups.get(s["group"])
            s = {**s, "coverage": _coverage(seen.coverage if seen is not None else None, s)}
            out.append({"type": "consumer_status", **s})
        return out


def _coverage(timeline: str | None, status: dict | None) -> str:
    """What the capture saw of a group: its generations and its partitions' end offsets."""
    parts = [timeline or "no group protocol exchange seen (commits only)"]
    if status is not None:
        parts.append(status["coverage"])
    return "; ".join(parts)
