"""The insights of a run, as ``stats`` and ``export`` give them: the consumer groups'
(:class:`GroupInsights`: the timeline of :mod:`analyzer.session.rebalances`, the lag with Burrow's
status of :mod:`analyzer.session.lag`, the pauses of :mod:`analyzer.session.consumption`) and the
producers' (:class:`~analyzer.session.producer_insights.ProducerInsights`), together
:class:`Insights`.

One consumer (:class:`Insights`) for one process; work shared among processes (``export -j``,
``stats -j``) sends :meth:`Insights.facts` of each exchange to the merge, which gives them to
:meth:`Insights.apply` in capture order: the same state one process has.
"""

from __future__ import annotations

from analyzer.dissect.constants import ApiKey
from analyzer.events import ConnectionEnd
from analyzer.model import Exchange
from analyzer.session.bounded import DEFAULT_BOUNDS, Bounds, Evictions, Expiry
from analyzer.session.burrow import DEFAULT_PARAMS, Params
from analyzer.session.clients import ClientTracker
from analyzer.session.consumption import ConsumptionTracker, host_of
from analyzer.session.internal import fetched_group_metadata
from analyzer.session.lag import LagTracker
from analyzer.session.producer_insights import OBJECT_TYPES as PRODUCER_TYPES
from analyzer.session.producer_insights import ProducerInsights
from analyzer.session.rebalances import GROUP_APIS, GroupTracker, GroupView, Member, Rebalance

GROUP_TYPES = ("generation", "rebalance", "lag", "consumer_status")
CLIENT_TYPES = ("client", "edge")
# the export's objects (NDJSON ``type``; sections of the JSON document)
OBJECT_TYPES = GROUP_TYPES + PRODUCER_TYPES + CLIENT_TYPES


class GroupInsights:
    """The consumer: every group's generations, rebalances, lag and status."""

    def __init__(
        self,
        topic_ids: dict[str, str] | None = None,
        params: Params = DEFAULT_PARAMS,
        keep: int | None = None,
        bounds: Bounds = DEFAULT_BOUNDS,
    ) -> None:
        """``keep`` (a run that lasts: ``live``): per group, the last ``keep`` rebalances,
        generations and lag rows are kept (:class:`~analyzer.session.rebalances.GroupTracker`,
        :class:`~analyzer.session.lag.LagTracker`). ``bounds``: a group unused (no group
        protocol exchange, no commit) longer than its idle time, or the longest idle past its
        maximum, is let go whole (its timeline, lag, windows, pauses), counted
        (:attr:`evictions`)."""
        self.groups = GroupTracker(topic_ids, keep)
        self.consumption = ConsumptionTracker(topic_ids)
        self.lag = LagTracker(topic_ids, params, self.consumption, keep)
        self.groups.on_assigned = self._assigned
        self.evictions = Evictions()
        self.expiry = Expiry("groups", self._evict, self.evictions, bounds)
        self.lag.on_group = self.expiry.touch
        self.members = Expiry("group_members", self.groups.forget_member, self.evictions, bounds)
        self.groups.on_member = self.members.touch
        self.fetchers = Expiry("fetchers", self.consumption.forget_fetcher, self.evictions, bounds)
        self.consumption.on_fetcher = self.fetchers.touch
        self.gone: set[str] = set()  # groups let go whose commits' rows and pauses remain (purge)
        # group -> [rebalances (by index) before which the longest pauses are summed, that sum
        # in ms]: the settled ones (every pause over) and those the timeline let go (keep)
        self.settled: dict[str, list] = {}

    def event(self, ev) -> None:
        if type(ev) is Exchange:
            self.apply(ev if ev.api_key in GROUP_APIS else None, self.facts(ev))
        elif type(ev) is ConnectionEnd:
            self.consumption.closed(ev.conn.id)

    def done(self, outcome=None) -> None:
        self.groups.done()

    # -- shared work: what a process sends, what the merge applies -------------------------------------
    @staticmethod
    def wants(ex: Exchange) -> bool:
        """Whether the timeline reads this exchange itself (the merge needs it whole)."""
        return ex.api_key in GROUP_APIS

    def facts(self, ex: Exchange) -> tuple | None:
        """What an exchange tells the lag and the consumption (plain values; None: nothing): a
        process's own state goes into them (a connection's fetch session), so every exchange of
        a connection is given to the same process's :meth:`facts`, in order."""
        lag = self.lag.facts(ex)
        fetch = self.consumption.facts(ex)
        meta = fetched_group_metadata(ex.response) if ex.api_key == ApiKey.FETCH else None
        if lag is None and fetch is None and not meta:
            return None
        return (lag, fetch, meta) if meta else (lag, fetch)

    def apply(self, exchange: Exchange | None, facts: tuple | None) -> None:
        """One exchange's part, in capture order: the exchange itself for the timeline (when
        :meth:`wants` it), its :meth:`facts`."""
        if facts is not None and facts[1] is not None:
            self.consumption.apply(facts[1])
        if exchange is not None:
            body = exchange.request.body if exchange.request is not None else None
            gid = body.get("group_id") if body is not None else None
            if isinstance(gid, str):
                self.expiry.touch(gid, exchange.request.frame.ts_first)  # type: ignore[union-attr]  # body read from it
            self.groups.event(exchange)
        if facts is not None and len(facts) > 2:
            for m, t in facts[2]:
                self.groups.metadata(m, t)
        if facts is not None and facts[0] is not None:
            self.lag.apply(facts[0])

    def _evict(self, gid) -> None:
        """Let a group go (:attr:`expiry`): its own tables now, the rows of the shared ones
        (commits, pauses) in one pass once enough groups went (:meth:`purge`)."""
        self.groups.groups.pop(gid, None)
        self.settled.pop(gid, None)
        self.groups.told.pop(gid, None)
        self.groups.touched.discard(gid)
        lag = self.lag
        for table in (lag.windows, lag.dropped, lag.kept, lag.told):
            table.pop(gid, None)
        lag.committed.discard(gid)
        self.gone.add(gid)
        if len(self.gone) * 8 >= len(self.expiry) + 64:
            self.purge()

    def purge(self) -> None:
        """Drop the commits' rows, last commits and pauses of the groups let go (and not seen
        since)."""
        gone = {g for g in self.gone if g not in self.expiry.seen}
        self.gone = set()
        if not gone:
            return
        lag = self.lag
        for k in [k for k in lag.last if k[0] in gone]:
            del lag.last[k]
        for recent in lag.recent:
            for rk in [rk for rk in recent if rk[0] in gone]:
                del recent[rk]
        split = len(lag.rows) - lag.untold  # the rows news() has not given yet come last
        told = [r for r in lag.rows[:split] if r.group not in gone]
        untold = [r for r in lag.rows[split:] if r.group not in gone]
        lag.rows, lag.untold = told + untold, len(untold)
        pauses = self.consumption.pauses
        for pk in [pk for pk in pauses if pk[0] in gone]:
            del pauses[pk]

    def _assigned(self, g: GroupView, rebalance: int, member: Member, t: float) -> None:
        """A member given its assignment in a rebalance: its partitions' pauses begin."""
        known = list(g.members.values()) + (list(g.open.members.values()) if g.open is not None else [])
        fetchers = {(host_of(m.client), m.client_id) for m in known}
        me = (host_of(member.client), member.client_id)
        self.consumption.assigned(
            g.group_id, rebalance, member.member_id, me, fetchers | {me}, member.assignment, t
        )

    def pauses(self, group: str, rebalance: int) -> list[dict]:
        """A rebalance's pause per partition (``rebalance``: its index over the group's history,
        :attr:`~analyzer.session.rebalances.GroupView.dropped` + its place in the list)."""
        return [p.row() for p in self.consumption.rebalance_pauses(group, rebalance)]

    def forget(self, group: str) -> None:
        """Let go of the pauses of the group's rebalances the timeline let go (``keep``)."""
        g = self.groups.groups.get(group)
        if g is not None and g.dropped:
            self._settle_dropped(group)  # their pauses are let go: summed first
            pauses = self.consumption.pauses
            for key in [k for k in pauses if k[0] == group and k[1] < g.dropped]:
                del pauses[key]

    def rebalance_object(self, r: Rebalance, index: int) -> dict:
        """The export's ``rebalance`` object of a group's rebalance (``index``: as :meth:`pauses`)."""
        pauses = self.pauses(r.group, index)
        return {
            "type": "rebalance",
            **r.row(),
            "pause_ms": self.longest_pause(r.group, index),
            "pauses": pauses,
        }

    def status_object(self, status: dict) -> dict:
        """The export's ``consumer_status`` object of one of :meth:`LagTracker.status`'s entries."""
        seen = self.groups.groups.get(status["group"])
        return {
            "type": "consumer_status",
            **status,
            "coverage": _coverage(seen.coverage if seen is not None else None, status),
        }

    # -- what it found ----------------------------------------------------------------------------------
    def tables(self, now: float | None) -> dict[str, list[dict]]:
        """``stats``' sections."""
        return {"group_health": self.table(now)}

    def table(self, now: float | None) -> list[dict]:
        """``stats``' consumer-group health table: a row per group."""
        self.purge()
        status = {s["group"]: s for s in self.lag.status(now)}
        rows = []
        for name in sorted(set(self.groups.groups) | set(self.lag.windows)):
            g = self.groups.groups.get(name)
            rebs = [r.duration_ms for r in g.rebalances if r.duration_ms is not None] if g is not None else []
            longest = (
                [self.longest_pause(name, g.dropped + i) for i in range(len(g.rebalances))]
                if g is not None
                else []
            )
            paused = [x for x in longest if x is not None]
            st = status.get(name)
            lags = [p for p in st["partitions"] if p["lag"] is not None] if st is not None else []
            worst = max(lags, key=lambda p: p["lag"], default=None)
            secs = [p["lag_seconds"] for p in lags if p["lag_seconds"] is not None]
            rows.append(
                {
                    "group_id": name,
                    "rebalances": g.dropped + len(g.rebalances) if g is not None else 0,
                    "longest_rebalance_ms": round(max(rebs), 3) if rebs else None,
                    "rebalancing_ms": round(sum(rebs), 3) if rebs else None,
                    "longest_pause_ms": max(paused) if paused else None,
                    "paused_ms": round(sum(paused), 3) if paused else None,
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
        self.purge()
        out: list[dict] = []
        for name in sorted(self.groups.groups):
            g = self.groups.groups[name]
            out.extend({"type": "generation", **x.row()} for x in g.generations)
            out.extend(self.rebalance_object(r, i) for i, r in enumerate(g.rebalances, g.dropped))
        out.extend({"type": "lag", **r.row()} for r in self.lag.rows)
        out.extend(self.status_object(s) for s in self.lag.status(now))
        return out

    def report(self, now: float | None, wanted: set[str] | frozenset[str] = frozenset()) -> list[dict]:
        """Per group (all, or the ``wanted``), plain data: its protocol, coverage, generations,
        rebalances (with their pauses), lag rows and status at ``now`` (the ``groups`` command's
        and the TUI's groups view's)."""
        self.purge()
        groups, lag = self.groups, self.lag
        statuses = {s["group"]: s for s in lag.status(now)}
        rows_of: dict[str, list[dict]] = {}
        for r in lag.rows:
            if not wanted or r.group in wanted:
                rows_of.setdefault(r.group, []).append(r.row())
        out = []
        for name in sorted(set(groups.groups) | set(lag.windows)):
            if wanted and name not in wanted:
                continue
            g = groups.groups.get(name) or GroupView(name)
            out.append(
                {
                    "group": name,
                    "protocol": g.protocol if g.generations or g.rebalances else None,
                    "protocol_type": g.protocol_type,
                    "protocol_name": g.protocol_name,
                    "coverage": g.coverage,
                    "avoided_rebalances": g.avoided,
                    "generations": [x.row() for x in g.generations],
                    "rebalances": [
                        {**r.row(), "pause_ms": self.longest_pause(name, i), "pauses": self.pauses(name, i)}
                        for i, r in enumerate(g.rebalances)
                    ],
                    "lag": rows_of.get(name, []),
                    "status": statuses.get(name),
                }
            )
        return out

    def paused_ms(self, group: str) -> float:
        """The longest pause of each of the group's finished rebalances, summed (the groups'
        ``paused_ms``), those the timeline let go (``keep``) included. A rebalance whose every
        pause is over is summed once (a live scrape walks only the recent ones)."""
        g = self.groups.groups.get(group)
        acc = self._settle_dropped(group)
        if g is None:
            return acc[1]
        pending = 0.0
        for i in range(acc[0], g.dropped + len(g.rebalances)):
            if g.rebalances[i - g.dropped].duration_ms is None:
                continue  # not finished: nothing summed, and the later ones not settled
            pauses = self.consumption.rebalance_pauses(group, i)
            over = [p.pause_ms for p in pauses if p.pause_ms is not None]
            longest = max(over) if over else 0.0
            if i == acc[0] and pauses and len(over) == len(pauses):
                acc[0], acc[1] = i + 1, acc[1] + longest
            else:
                pending += longest
        return acc[1] + pending

    def _settle_dropped(self, group: str) -> list:
        """The group's :attr:`settled` entry, with the rebalances the timeline let go summed."""
        acc = self.settled.get(group)
        if acc is None:
            acc = self.settled[group] = [0, 0.0]
        g = self.groups.groups.get(group)
        if g is not None and acc[0] < g.dropped:
            for i in range(acc[0], g.dropped):
                acc[1] += self.longest_pause(group, i) or 0.0
            acc[0] = g.dropped
        return acc

    def longest_pause(self, group: str, rebalance: int) -> float | None:
        """A rebalance's longest pause of a partition (None: none seen over)."""
        done = [
            p.pause_ms for p in self.consumption.rebalance_pauses(group, rebalance) if p.pause_ms is not None
        ]
        return max(done) if done else None


def _coverage(timeline: str | None, status: dict | None) -> str:
    """What the capture saw of a group: its generations and its partitions' end offsets."""
    parts = [timeline or "no group protocol exchange seen (commits only)"]
    if status is not None:
        parts.append(status["coverage"])
    return "; ".join(parts)


class Insights:
    """The consumer of every insight: the consumer groups', the producers', the clients'."""

    def __init__(
        self,
        topic_ids: dict[str, str] | None = None,
        params: Params = DEFAULT_PARAMS,
        keep: int | None = None,
        bounds: Bounds = DEFAULT_BOUNDS,
    ) -> None:
        """``keep``: as :class:`GroupInsights`' (``live``; the producers' and clients' trackers
        are bounded by :class:`~analyzer.session.live_feed.InsightFeed`); ``bounds``: every
        table's idle expiry and maximum (groups, producers, clients)."""
        self.bounds = bounds
        self.groups = GroupInsights(topic_ids, params, keep, bounds)
        self.producers = ProducerInsights(topic_ids, bounds)
        self.clients = ClientTracker(topic_ids, bounds)

    def evictions(self) -> Evictions:
        """What the groups', producers' and clients' tables let go, per table."""
        out = Evictions()
        for e in (self.groups.evictions, self.producers.evictions(), self.clients.evictions):
            out.merge(e)
        return out

    def bounds_rows(self) -> list[dict]:
        """The report's rows of what the insights' tables let go (:meth:`Evictions.rows`)."""
        return self.evictions().rows(self.bounds)

    def entries(self) -> dict[str, int]:
        """Entries per bounded table now."""
        return {
            "groups": len(self.groups.expiry),
            "group_members": len(self.groups.members),
            "fetchers": len(self.groups.fetchers),
            "producers": len(self.producers.producers.expiry),
            "transactional_ids": len(self.producers.txns.expiry),
            "held_back": len(self.producers.txns.held_expiry),
            "clients": len(self.clients.expiry),
            "client_hosts": len(self.clients.ends_expiry),
            **self.producers.e2e.entries(),
        }

    def event(self, ev, mark: object = None) -> None:
        """``mark``: what the caller names an exchange by, kept where the producers' insights
        keep evidence (a transaction's first exchange and EndTxn: the TUI's row)."""
        t = type(ev)
        if t is Exchange:
            self.apply(ev if GroupInsights.wants(ev) else None, self.facts(ev), mark)
        elif t is ConnectionEnd:
            self.groups.consumption.closed(ev.conn.id)
            self.connection_end(ev)

    def connection_end(self, ev: ConnectionEnd) -> None:
        """A connection's end (the merge of shared work gives it in capture order too)."""
        self.apply_end(self.end_facts(ev))

    @staticmethod
    def end_facts(ev: ConnectionEnd) -> tuple:
        """What a connection's end tells the clients (plain values: its endpoints and times),
        for work shared among processes that do not send the connection itself."""
        return ClientTracker.end_facts(ev)

    def apply_end(self, facts: tuple) -> None:
        """A connection end's :meth:`end_facts`, in capture order."""
        self.clients.apply(facts)

    def ended(self, ev: ConnectionEnd) -> tuple | None:
        """A connection end's facts as :meth:`apply` takes them (with no exchange); its fetch
        session let go where the facts are made."""
        self.groups.consumption.closed(ev.conn.id)
        f = self.clients.facts(ev)
        return None if f is None else (None, None, f)

    def done(self, outcome=None) -> None:
        self.groups.done(outcome)
        self.producers.done(outcome)

    wants = staticmethod(GroupInsights.wants)

    def facts(self, ex: Exchange) -> tuple | None:
        g, p, c = self.groups.facts(ex), self.producers.facts(ex), self.clients.facts(ex)
        return None if g is None and p is None and c is None else (g, p, c)

    def apply(self, exchange: Exchange | None, facts: tuple | None, mark: object = None) -> None:
        self.groups.apply(exchange, facts[0] if facts is not None else None)
        if facts is not None:
            if facts[1] is not None:
                self.producers.apply(facts[1], mark)
            if facts[2] is not None:
                self.clients.apply(facts[2])

    def tables(self, now: float | None) -> dict[str, list[dict]]:
        return self.groups.tables(now) | self.producers.tables(now) | {"readiness": self._readiness()}

    def _readiness(self) -> list[dict]:
        return readiness_section(self.clients.rows())

    def objects(self, now: float | None) -> list[dict]:
        return (
            self.groups.objects(now)
            + self.producers.objects(now)
            + [{"type": "client", **r} for r in self.clients.rows()]
            + [{"type": "edge", **e} for e in self.clients.edges()]
        )


def readiness_section(clients: list[dict]) -> list[dict]:
    """``stats``' readiness rows of ``client`` objects (in their order)."""
    rows = []
    for r in clients:
        removed = ", ".join(f"{x['api_name']} v{x['version']}" for x in r["removed_versions"])
        rows.append(
            {
                "client_id": r["client_id"],
                "client": r["client"],
                "software": r["software"],
                "ready": r["ready"],
                "removed_versions": removed or None,
                "old_formats": r["old_formats"],
                "metadata_rate": r["metadata_rate"],
                "throttle_ms": r["throttle_ms"],
                "findings": "; ".join(r["findings"]) or None,
            }
        )
    return rows
