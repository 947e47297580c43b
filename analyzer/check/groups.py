"""The built-in pack's consumer-group rules, judged on :class:`~analyzer.session.insights.GroupInsights`
(the timeline, the lag and Burrow's status that ``stats``, ``export`` and ``groups`` show).

:class:`GroupJudge` takes each exchange after the insights have (the engine feeds both, in its one
pass over the events, numbering the exchanges as its other findings do) and keeps, bounded by the
groups and partitions the capture has, the evidence its findings name: for each group's longest
rebalance the exchange that started it and the one that ended it; for each partition its last
commit and the commits with the most lag in records and in seconds. At the end of the capture
(:meth:`GroupJudge.findings`) the rules are judged:

* ``kafka.group-rebalance-long``: a group's longest rebalance (or one still open at the capture's
  end) over ``max``;
* ``kafka.group-status``: Burrow's ERR for a group because a partition is STOP (no commit for
  longer than its window spans while the log moved on) or STALL (the same offset committed again
  and again with lag): its consumer is not making progress;
* ``kafka.group-rewind``: a partition REWIND (a commit below the one before: records read again);
* ``kafka.group-lag``: a partition's lag, at a commit or at the capture's end, over
  ``max_records`` or ``max_time``.

Every message names the group (and partitions), the exchanges and capture times of the evidence,
and the group's coverage (a capture on one broker sees part of a group).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from analyzer.model import Exchange
from analyzer.session.burrow import Status
from analyzer.session.insights import GroupInsights
from analyzer.session.lag import LagRow
from analyzer.session.rebalances import GROUP_APIS, Rebalance

REBALANCE, STATUS, REWIND, LAG = "rebalance", "status", "rewind", "lag"  # Rule.judge
JUDGES = (REBALANCE, STATUS, REWIND, LAG)
NOT_MOVING = (Status.STOP, Status.STALL)
SHOWN_PARTITIONS = 5  # partitions named in one finding (the others counted)


@dataclass(slots=True)
class Evidence:
    """An exchange a finding names: its number, location (engine's) and the exchange itself (for
    waivers' ``where``)."""

    n: int
    loc: dict
    ex: Exchange
    t: float  # its request's capture time
    rt: float | None  # its response's

    def names(self, t0: float) -> str:
        api = self.loc.get("api") or "exchange"
        return f"exchange {self.n} {api} at {self.t - t0:.3f} s"


@dataclass(slots=True)
class _Group:
    seen: int = 0  # rebalances of the group already looked at
    start: Evidence | None = None  # of the open rebalance
    end: Evidence | None = None
    longest: tuple[Rebalance, Evidence | None, Evidence | None] | None = None
    over: int = 0  # rebalances over the bound


@dataclass(slots=True)
class _Partition:
    last: Evidence | None = None  # the last commit
    most: tuple[LagRow, Evidence] | None = None  # the commit with the most lag (records)
    slowest: tuple[LagRow, Evidence] | None = None  # ... in seconds
    offset: int | None = None  # the last commit's offset
    back: tuple[int, int, Evidence] | None = None  # the last commit below the one before: from, to


@dataclass(frozen=True, slots=True)
class GroupFinding:
    rule: str
    group: str
    message: str
    evidence: Evidence | None


@dataclass(slots=True)
class Bounds:
    """The rules' settings (``[pack]``): None for a rule switched off or a bound not set."""

    rebalance_ms: float | None = None
    lag_records: float | None = None
    lag_ms: float | None = None
    rules: dict[str, str] = field(default_factory=dict)  # judge -> rule id


class GroupJudge:
    def __init__(self, insights: GroupInsights, bounds: Bounds) -> None:
        self.insights = insights
        self.bounds = bounds
        self.groups: dict[str, _Group] = {}
        self.partitions: dict[tuple[str, str, int], _Partition] = {}
        self._rows = 0  # lag rows already looked at

    def exchange(self, ex: Exchange, n: int, loc: Callable[[], dict]) -> None:
        """After the insights took ``ex`` (the ``n``-th exchange of the capture)."""
        ins = self.insights
        ev: Evidence | None = None
        rows = ins.lag.rows
        if len(rows) > self._rows:
            ev = self._evidence(ex, n, loc)
            for row in rows[self._rows :]:
                p = self.partitions.get((row.group, row.topic, row.partition))
                if p is None:
                    p = self.partitions[(row.group, row.topic, row.partition)] = _Partition()
                p.last = ev
                if p.offset is not None and row.committed_offset < p.offset:
                    p.back = (p.offset, row.committed_offset, ev)
                p.offset = row.committed_offset
                if row.lag is not None and (p.most is None or row.lag > (p.most[0].lag or 0)):
                    p.most = (row, ev)
                s = row.lag_seconds
                if s is not None and (p.slowest is None or s > (p.slowest[0].lag_seconds or 0.0)):
                    p.slowest = (row, ev)
            self._rows = len(rows)
        if ex.api_key not in GROUP_APIS or ex.request is None or ex.request.body is None:
            return
        gid = ex.request.body.get("group_id")
        g = ins.groups.groups.get(gid) if isinstance(gid, str) else None
        if g is None:
            return
        st = self.groups.get(g.group_id)
        if st is None:
            st = self.groups[g.group_id] = _Group()
        ev = ev or self._evidence(ex, n, loc)
        self._closed(st, g.rebalances, ev)
        if st.longest is not None and st.longest[0].start == ev.t and st.longest[1] is not ev:
            st.longest = (st.longest[0], ev, st.longest[2])  # a late joiner moved its start back
        o = g.open
        if o is not None:
            if o.start == ev.t:
                st.start = ev
            if o.end is not None and o.end in (ev.t, ev.rt):
                st.end = ev

    def end(self) -> None:
        """After the insights' ``done``: the rebalances closed at the capture's end."""
        for gid, st in self.groups.items():
            g = self.insights.groups.groups.get(gid)  # (None: the group let go, bounds)
            if g is not None:
                self._closed(st, g.rebalances)

    @staticmethod
    def _evidence(ex: Exchange, n: int, loc: Callable[[], dict]) -> Evidence:
        req, resp = ex.request, ex.response
        t = req.frame.ts_first if req is not None else resp.frame.ts_first if resp is not None else 0.0
        return Evidence(n, loc(), ex, t, resp.frame.ts_first if resp is not None else None)

    def _closed(self, st: _Group, rebalances: list[Rebalance], now: Evidence | None = None) -> None:
        """The rebalances closed since the last look (``now``: the exchange that closed them)."""
        while st.seen < len(rebalances):
            r = rebalances[st.seen]
            st.seen += 1
            start = next((e for e in (st.start, now) if e is not None and e.t == r.start), None)
            end = next((e for e in (now, st.end) if e is not None and r.end in (e.t, e.rt)), None)
            st.start = st.end = None
            d = r.duration_ms
            if d is None:
                continue  # still open at the capture's end: judged with the capture's end
            bound = self.bounds.rebalance_ms
            if bound is not None and d > bound:
                st.over += 1
            if st.longest is None or d > (st.longest[0].duration_ms or 0.0):
                st.longest = (r, start, end)

    # -- judging --------------------------------------------------------------------------------------
    def findings(self, first: float | None, now: float | None, groups: set[str] | None) -> list[GroupFinding]:
        """The findings at the capture's end (``now``; ``first``: its first packet's time, the
        zero of the times said); ``groups``: only those (``check -Y``), None for all."""
        t0 = first or 0.0
        ins = self.insights
        rows = {r["group_id"]: r for r in ins.table(now)}
        status = {s["group"]: s for s in ins.lag.status(now)}
        out: list[GroupFinding] = []
        for gid in sorted(rows):
            if groups is not None and gid not in groups:
                continue
            cover = f"coverage: {rows[gid]['coverage']}"
            rules = self.bounds.rules
            if REBALANCE in rules:
                out += self._rebalance(rules[REBALANCE], gid, t0, now, cover)
            st = status.get(gid)
            if st is None:
                continue
            if STATUS in rules:
                out += self._status(rules[STATUS], gid, st, NOT_MOVING, t0, now, cover)
            if REWIND in rules:
                out += self._status(rules[REWIND], gid, st, (Status.REWIND,), t0, now, cover)
            if LAG in rules:
                out += self._lag(rules[LAG], gid, st, t0, now, cover)
        return out

    def _rebalance(self, rid: str, gid: str, t0: float, now: float | None, cover: str) -> list[GroupFinding]:
        bound = self.bounds.rebalance_ms
        g = self.insights.groups.groups.get(gid)
        st = self.groups.get(gid)
        if bound is None or g is None:
            return []
        out = []
        o = g.open
        open_ms = (now - o.start) * 1000 if o is not None and now is not None else None
        if st is not None and st.longest is not None and st.over:
            r, start, end = st.longest
            ev = [f"from {start.names(t0)}" if start else f"from {r.start - t0:.3f} s"]
            if r.end is not None:
                ev.append(f"to {end.names(t0)}" if end else f"to {r.end - t0:.3f} s")
            more = f"; {st.over} of {len(g.rebalances)} rebalances over it" if st.over > 1 else ""
            out.append(
                GroupFinding(
                    rid,
                    gid,
                    f"group {gid}: longest rebalance {(r.duration_ms or 0.0) / 1000:.3f} s > "
                    f"{bound / 1000:g} s (generation {_gen(r.generation_before)} -> "
                    f"{_gen(r.generation_after)}, {' '.join(ev)}; cause: {r.cause}"
                    f"{_who(r)}{more}); {cover}",
                    start or end,
                )
            )
        if open_ms is not None and open_ms > bound and o is not None:
            start = st.start if st is not None and st.start is not None and st.start.t == o.start else None
            out.append(
                GroupFinding(
                    rid,
                    gid,
                    f"group {gid}: a rebalance still open at the capture's end, for {open_ms / 1000:.3f} s > "
                    f"{bound / 1000:g} s (from generation {_gen(o.generation_before)}, from "
                    f"{start.names(t0) if start else f'{o.start - t0:.3f} s'}); {cover}",
                    start,
                )
            )
        return out

    def _status(
        self,
        rid: str,
        gid: str,
        st: dict,
        which: tuple[Status, ...],
        t0: float,
        now: float | None,
        cover: str,
    ) -> list[GroupFinding]:
        names = {str(s) for s in which}
        bad = [p for p in st["partitions"] if p["status"] in names]
        if not bad:
            return []
        parts = []
        first: Evidence | None = None
        shown = [(p, self.partitions.get((gid, p["topic"], p["partition"]))) for p in bad[:SHOWN_PARTITIONS]]
        lasts = {id(part.last) for _, part in shown if part is not None}
        for p, part in shown:
            last = part.last if part is not None else None
            lag = "" if p["lag"] is None else f", lag {p['lag']}"
            secs = "" if p["lag_seconds"] is None else f" ({p['lag_seconds']:.3f} s)"
            if p["status"] == "REWIND" and part is not None and part.back is not None:
                was, now_, ev = part.back
                commit = f", committed {now_} after {was} at {ev.names(t0)}"
                first = first or ev
            else:
                commit = f", last commit {last.names(t0)}" if last is not None and len(lasts) > 1 else ""
                first = first or last
            parts.append(f"{p['topic']}[{p['partition']}] {p['status']}{lag}{secs}{commit}")
        if len(lasts) == 1 and shown[0][1] is not None and shown[0][1].last is not None:
            parts.append(f"last commit {shown[0][1].last.names(t0)}")
        more = f" and {len(bad) - SHOWN_PARTITIONS} more" if len(bad) > SHOWN_PARTITIONS else ""
        at = f" at the capture's end ({now - t0:.3f} s)" if now is not None else ""
        return [
            GroupFinding(
                rid,
                gid,
                f"group {gid}: Burrow status {st['status']}{at}: {'; '.join(parts)}{more}; {cover}",
                first,
            )
        ]

    def _lag(
        self, rid: str, gid: str, st: dict, t0: float, now: float | None, cover: str
    ) -> list[GroupFinding]:
        b = self.bounds
        over: list[tuple[str, Evidence | None]] = []
        for p in st["partitions"]:
            part = self.partitions.get((gid, p["topic"], p["partition"]))
            last = part.last if part is not None else None
            at_end = f"at the capture's end ({(now or 0.0) - t0:.3f} s{_since(last, t0)})"
            said = []
            ev: Evidence | None = None
            for bound, unit, peak, end_value in (
                (b.lag_records, "records", part.most if part is not None else None, p["lag"]),
                (b.lag_ms, "s", part.slowest if part is not None else None, p["lag_seconds"]),
            ):
                if bound is None:
                    continue
                limit = bound if unit == "records" else bound / 1000
                worst: tuple[float, str, Evidence | None] | None = None  # value, where, evidence
                if peak is not None:
                    row, pev = peak
                    v = row.lag if unit == "records" else row.lag_seconds
                    if v is not None:
                        worst = (
                            float(v),
                            f"at {pev.names(t0)} (committed {row.committed_offset}, end offset "
                            f"{row.end_offset})",
                            pev,
                        )
                if end_value is not None and now is not None and (worst is None or end_value > worst[0]):
                    worst = (float(end_value), at_end, last)
                if worst is not None and worst[0] > limit:
                    amount = (
                        f"{worst[0]:g} records > {limit:g}"
                        if unit == "records"
                        else f"{worst[0]:.3f} s > {limit:g} s"
                    )
                    said.append(f"lag {amount} {worst[1]}")
                    ev = ev or worst[2]
            if said:
                over.append((f"{p['topic']}[{p['partition']}] " + ", ".join(said), ev))
        if not over:
            return []
        texts = [t for t, _ in over[:SHOWN_PARTITIONS]]
        more = f"; and {len(over) - SHOWN_PARTITIONS} more partitions" if len(over) > SHOWN_PARTITIONS else ""
        ev = next((e for _, e in over if e is not None), None)
        unseen = ""
        if b.lag_ms is not None and any(p["lag_seconds"] is None for p in st["partitions"]):
            unseen = (
                "; lag in seconds not known for some partitions "
                "(their records' append times are not in the capture)"
            )
        return [GroupFinding(rid, gid, f"group {gid}: {'; '.join(texts)}{more}; {cover}{unseen}", ev)]


def _gen(g: int | None) -> str:
    return "?" if g is None else str(g)


def _who(r: Rebalance) -> str:
    parts = []
    if r.straggler:
        parts.append(f"straggler {r.straggler}")
    for what, ids in (("joined", r.joined), ("left", r.left), ("evicted", r.evicted)):
        if ids:
            parts.append(f"{what} {', '.join(ids[:3])}" + (f" +{len(ids) - 3}" if len(ids) > 3 else ""))
    return "; " + "; ".join(parts) if parts else ""


def _since(last: Evidence | None, t0: float) -> str:
    return f"; last commit {last.names(t0)}" if last is not None else "; no commit seen"
