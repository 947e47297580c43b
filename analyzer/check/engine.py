"""Evaluating rules over the events of one or more analyses (a capture set).

:class:`Engine` is fed every event of each capture (``begin``/``add``/``end``), keeps the
findings (each names its capture, exchange, connection and packets) and the samples of the
aggregate rules, and gives a :class:`Result` per rule. Its state (:meth:`Engine.state`) is plain
data, so captures analysed in parallel processes merge into one result (:meth:`Engine.merge`).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import asdict, dataclass, field

from analyzer.check import clients as C
from analyzer.check import producers as P
from analyzer.check.groups import JUDGES as GROUP_JUDGES
from analyzer.check.groups import LAG, REBALANCE, Bounds, GroupJudge
from analyzer.check.rules import SEVERITIES, Config, Rule
from analyzer.dissect import schema
from analyzer.dissect.protocol_table import CURRENT_RELEASE
from analyzer.events import CaptureIssue, ConnectionEnd, ConnIssue, Event
from analyzer.filter import Filter, field_values
from analyzer.model import Exchange, Issue, Severity
from analyzer.pipeline import UNUSABLE
from analyzer.session.clients import ClientTracker
from analyzer.session.insights import GroupInsights
from analyzer.session.producer_insights import ProducerInsights
from analyzer.session.stats import percentile

MAX_FINDINGS = 200  # kept per rule (all are counted)
MIN_RATE_WINDOW = 60.0  # seconds: a rate over a shorter capture counts it as this long
_GROUP_IDS = field_values("group")
_TXN_IDS = field_values("txn.id")


@dataclass(slots=True)
class Finding:
    rule: str
    severity: str
    message: str
    capture: str
    exchange: int | None = None  # 1-based, in the order the capture's exchanges completed
    connection: int | None = None
    packets: tuple[int, ...] = ()
    api: str | None = None
    correlation_id: int | None = None
    endpoints: str | None = None
    ts: float | None = None
    waived: str | None = None  # the waiver's reason

    def location(self) -> str:
        parts = [self.capture]
        if self.exchange is not None:
            what = f"exchange {self.exchange}"
            if self.api:
                what += f" {self.api}"
            if self.correlation_id is not None:
                what += f" corr={self.correlation_id}"
            parts.append(what)
        if self.connection is not None:
            parts.append(f"connection {self.connection}" + (f" {self.endpoints}" if self.endpoints else ""))
        if self.packets:
            p = self.packets
            parts.append(f"packet {p[0]}" if len(p) == 1 else f"packets {p[0]}-{p[-1]}")
        return ", ".join(parts)


@dataclass(slots=True)
class Result:
    rule: str
    severity: str
    status: str  # "passed", "failed", "warned", "noted", "inconclusive", "waived"
    summary: str
    findings: list[Finding] = field(default_factory=list)
    count: int = 0  # findings, waived ones included
    value: float | None = None  # an aggregate's worst value
    samples: int | None = None
    source: str = "built-in"
    help: str = ""


@dataclass(slots=True)
class CaptureInfo:
    name: str
    exchanges: int = 0
    packets: int = 0
    first_ts: float | None = None
    last_ts: float | None = None
    inconclusive: str | None = None  # why nothing can be concluded from this capture
    exit_code: int = 0


def _exchange_location(ex: Exchange) -> dict:
    c = ex.conn
    m = ex.request or ex.response
    ends = f"{c.client} -> {c.broker}" if c.client_direction is not None else f"{c.a} <-> {c.b}"
    pk: tuple[int, ...] = ()
    for msg in (ex.request, ex.response):
        if msg is not None:
            pk += msg.frame.packet_indexes
    return {
        "connection": c.id,
        "endpoints": ends,
        "packets": tuple(sorted(set(pk))),
        "api": schema.api_name(ex.api_key) if ex.api_key is not None else None,
        "correlation_id": ex.correlation_id,
        "ts": m.frame.ts_first if m is not None else None,
    }


class Engine:
    """``groups``: follow the consumer groups and the producers even when no rule judges them
    (the baseline's dimensions read :attr:`group_rows` and :attr:`producer_rows`)."""

    def __init__(
        self,
        config: Config,
        select: Filter | None = None,
        today: dt.date | None = None,
        groups: bool = False,
    ) -> None:
        self.config = config
        self.rules = config.rules
        self.select = select
        self.today = today or dt.date.today()
        self.findings: dict[str, list[Finding]] = defaultdict(list)
        self.counts: dict[str, int] = defaultdict(int)
        self.samples: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        self.captures: list[CaptureInfo] = []
        self._exchange_rules = [r for r in self.rules if r.check is not None]
        self._aggregates = [r for r in self.rules if r.aggregate is not None]
        self._issue_rules = [r for r in self.rules if r.issues is not None]
        self._groups = {r.id: field_values(r.per) for r in self._aggregates if r.per}
        self._group_rules = {r.judge: r for r in self.rules if r.judge in GROUP_JUDGES}
        self._producer_rules = {r.judge: r for r in self.rules if r.judge in P.JUDGES}
        self._want_groups = groups or bool(self._group_rules)
        self._want_producers = groups or bool(self._producer_rules)
        self._client_rules = {r.judge: r for r in self.rules if r.judge in C.JUDGES}
        self._want_clients = groups or bool(self._client_rules)
        self.clients: ClientTracker | None = None
        self._cjudge: C.ClientJudge | None = None
        self.client_rows: list[dict] = []  # the capture's clients (ClientTracker.rows)
        self.insights: GroupInsights | None = None
        self._judge: GroupJudge | None = None
        self._selected_groups: set[str] | None = None
        self.group_rows: list[dict] = []  # the capture's consumer groups (GroupInsights.table)
        self.producer_insights: ProducerInsights | None = None
        self._pjudge: P.ProducerJudge | None = None
        self._selected_clients: set[str | None] | None = None
        self._selected_txns: set[str] | None = None
        # the capture's producers, transactions, e2e latencies (ProducerInsights.tables)
        self.producer_rows: dict[str, list[dict]] = {}
        self._cur: CaptureInfo | None = None
        self._knowledge = None

    # -- feeding -------------------------------------------------------------------------------------
    def begin(self, name: str, knowledge=None) -> None:
        self._cur = CaptureInfo(name)
        self.captures.append(self._cur)
        self._knowledge = knowledge
        for r in self.rules:
            for flt in (r.where, getattr(r.check, "filter", None)):
                if flt is not None:
                    flt.knowledge = knowledge
        if self.select is not None:
            self.select.knowledge = knowledge
        if self._want_groups:
            self.insights = GroupInsights(getattr(knowledge, "topic_ids", None))
            self._judge = GroupJudge(self.insights, self._bounds())
            self._selected_groups = set() if self.select is not None else None
        if self._want_producers:
            self.producer_insights = ProducerInsights(getattr(knowledge, "topic_ids", None))
            if self._producer_rules:
                self._pjudge = P.ProducerJudge(self.producer_insights, self._producer_bounds())
            self._selected_clients = set() if self.select is not None else None
            self._selected_txns = set() if self.select is not None else None
        if self._want_clients:
            self.clients = ClientTracker(getattr(knowledge, "topic_ids", None))
            self._cjudge = C.ClientJudge(self.clients, self._client_bounds()) if self._client_rules else None
            if self._selected_clients is None and self.select is not None:
                self._selected_clients = set()

    def _bounds(self) -> Bounds:
        rules = self._group_rules
        b = Bounds(rules={j: r.id for j, r in rules.items()})
        if REBALANCE in rules:
            b.rebalance_ms = rules[REBALANCE].settings.get("max")
        if LAG in rules:
            b.lag_records = rules[LAG].settings.get("max_records")
            b.lag_ms = rules[LAG].settings.get("max_time")
        return b

    def _producer_bounds(self) -> P.Bounds:
        rules = self._producer_rules
        b = P.Bounds(
            rules={j: r.id for j, r in rules.items()}, severities={j: r.severity for j, r in rules.items()}
        )
        if P.RETRIES in rules:
            b.retry_share = rules[P.RETRIES].settings.get("max_share")
        if P.E2E in rules:
            b.e2e_ms = rules[P.E2E].settings.get("max")
        return b

    def _client_bounds(self) -> C.Bounds:
        rules = self._client_rules
        b = C.Bounds(rules={j: r.id for j, r in rules.items()})
        if C.READINESS in rules:
            b.target = C.target_of(rules[C.READINESS].settings.get("target") or 0.0)
        if C.STORM in rules:
            b.max_answers = rules[C.STORM].settings.get("max_answers")
            b.max_rate = rules[C.STORM].settings.get("max_rate")
        if C.CHURN in rules:
            b.max_fast = rules[C.CHURN].settings.get("max_fast_reconnects")
            b.max_per_min = rules[C.CHURN].settings.get("max_per_min")
        if C.THROTTLE in rules:
            b.throttle_ms = rules[C.THROTTLE].settings.get("max")
        return b

    def event(self, ev: Event) -> None:
        t = type(ev)
        if t is Exchange:
            self._exchange(ev)  # type: ignore[arg-type]
        elif t is ConnectionEnd:
            if self.clients is not None:
                f = self.clients.facts(ev)
                if f is not None:
                    self.clients.apply(f)
        elif t is ConnIssue:
            c = ev.conn  # type: ignore[union-attr]
            ends = f"{c.client} -> {c.broker}" if c.client_direction is not None else f"{c.a} <-> {c.b}"
            self._issue(ev.issue, {"connection": c.id, "endpoints": ends, "ts": ev.ts})  # type: ignore[union-attr]
        elif t is CaptureIssue:
            if ev.issue.code in UNUSABLE:  # type: ignore[union-attr]
                return  # nothing to check in it: the capture is inconclusive (see end())
            self._issue(ev.issue, {"ts": ev.ts})  # type: ignore[union-attr]

    def done(self, outcome) -> None:
        """The capture's facts from the run's :class:`~analyzer.pipeline.Outcome`."""
        self.finish(
            outcome.packets,
            outcome.first_ts,
            outcome.last_ts if outcome.packets else None,
            int(outcome.exit_code()),
            outcome.inconclusive(),
        )

    def finish(
        self, packets: int, first_ts: float | None, last_ts: float | None, exit_code: int, inconclusive
    ) -> None:
        """The capture's facts once its events are in (:meth:`done` takes them from the outcome;
        ``check --parquet`` from the captures table)."""
        cur = self._cur
        assert cur is not None
        cur.packets = packets
        cur.first_ts = first_ts
        cur.last_ts = last_ts
        cur.exit_code = exit_code
        cur.inconclusive = inconclusive
        if self.insights is not None and self._judge is not None:
            self._judge_groups(first_ts, last_ts)
        if self.producer_insights is not None:
            self._judge_producers(first_ts, last_ts)
        if self.clients is not None:
            self._judge_clients(first_ts)

    def _judge_clients(self, first_ts: float | None) -> None:
        """The clients at the capture's end: the client rules' findings, the rows the baseline
        records (only the client ids a selected exchange names, with ``-Y``)."""
        assert self.clients is not None
        wanted = self._selected_clients
        if self._cjudge is not None:
            by_id = {r.id: r for r in self._client_rules.values()}
            for f in self._cjudge.findings(first_ts, wanted):
                ev = f.evidence
                loc = dict(ev.loc) if ev else {}
                self._find(by_id[f.rule], f.message, loc, ev.ex if ev else None, ev.n if ev else None)
        target = self._cjudge.bounds.target if self._cjudge is not None else CURRENT_RELEASE
        self.client_rows = [
            r for r in self.clients.rows(target) if wanted is None or r["client_id"] in wanted
        ]

    def _judge_groups(self, first_ts: float | None, now: float | None) -> None:
        """The consumer groups at the capture's end: the group rules' findings, the rows the
        baseline records (only the groups a selected exchange names, with ``-Y``)."""
        assert self.insights is not None and self._judge is not None
        self.insights.done()
        self._judge.end()
        wanted = self._selected_groups
        self.group_rows = [r for r in self.insights.table(now) if wanted is None or r["group_id"] in wanted]
        by_id = {r.id: r for r in self._group_rules.values()}
        for f in self._judge.findings(first_ts, now, wanted):
            r = by_id[f.rule]
            ev = f.evidence
            self._find(r, f.message, dict(ev.loc) if ev else {}, ev.ex if ev else None, ev.n if ev else None)

    def _judge_producers(self, first_ts: float | None, now: float | None) -> None:
        """The producers at the capture's end: the producer rules' findings, the rows the
        baseline records (only the producers and transactions a selected exchange names, with ``-Y``)."""
        ins = self.producer_insights
        assert ins is not None
        clients, txns = self._selected_clients, self._selected_txns
        if self._pjudge is not None:
            by_judge = {r.id: r for r in self._producer_rules.values()}
            for f in self._pjudge.findings(first_ts, now, clients, txns):
                m = f.evidence
                r = by_judge[f.rule]
                waived = m.waived.get(r.id) if m is not None else self._waiver(r.id, None)
                loc = dict(m.loc) if m is not None else {}
                self._find(r, f.message, loc, None, m.n if m is not None else None, str(f.severity), waived)
        tables = ins.tables(now)
        self.producer_rows = {
            "producers": [r for r in ins.producers.rows() if clients is None or r["client_id"] in clients],
            "transactions": [
                r for r in tables["transactions"] if txns is None or r["transactional_id"] in txns
            ],
            "e2e": [
                r
                for r in tables["e2e"]
                if clients is None
                or r["producer_client"].rsplit("@", 1)[0] in clients
                or r["consumer_client"].rsplit("@", 1)[0] in clients
            ],
        }

    def _mark(self, ex: Exchange, n: int) -> P.Mark:
        waived = {}
        for r in self._producer_rules.values():
            reason = self._waiver(r.id, ex)
            if reason is not None:
                waived[r.id] = reason
        return P.mark_of(ex, n, _exchange_location(ex), waived)

    def _exchange(self, ex: Exchange) -> None:
        cur = self._cur
        assert cur is not None
        cur.exchanges += 1
        n = cur.exchanges
        for i in ex.all_issues():
            self._issue(i, None, ex, n)
        if self.insights is not None and self._judge is not None:
            # every exchange, selected or not: a group's state needs the whole conversation
            self.insights.event(ex)
            self._judge.exchange(ex, n, lambda: _exchange_location(ex))
        pi = self.producer_insights
        if pi is not None:
            facts = pi.facts(ex)
            if facts is not None:
                pi.apply(facts, self._mark(ex, n) if self._pjudge is not None else None)
        if self.clients is not None:
            cf = self.clients.facts(ex)
            if cf is not None:
                self.clients.apply(cf)
            if self._cjudge is not None:
                self._cjudge.exchange(ex, cf, n, lambda: _exchange_location(ex))
        if self.select is not None and not self.select(ex):
            return
        if self._selected_groups is not None:
            self._selected_groups.update(_GROUP_IDS(ex))
        if self._selected_clients is not None:
            self._selected_clients.add(ex.client_id)
        if self._selected_txns is not None:
            self._selected_txns.update(_TXN_IDS(ex))
        loc = None
        for r in self._exchange_rules:
            if r.where is not None and not r.where(ex):
                continue
            msg = r.check(ex)  # type: ignore[misc]
            if msg is not None:
                loc = loc or _exchange_location(ex)
                self._find(r, msg, loc, ex, n)
        for r in self._aggregates:
            if r.where is not None and not r.where(ex):
                continue
            agg = r.aggregate
            assert agg is not None
            values = [1.0] if agg.values is None else [float(v) for v in agg.values(ex)]
            if not values:
                continue
            keys = [str(k) for k in self._groups[r.id](ex)] if r.per else [""]
            for k in keys or ["(none)"]:
                self.samples[r.id][k].extend(values)

    def _issue(
        self, issue: Issue, loc: dict | None, ex: Exchange | None = None, n: int | None = None
    ) -> None:
        if issue.code in self.config.allow:
            return
        for r in self._issue_rules:
            if r.issues(issue):  # type: ignore[misc]
                if ex is not None:
                    loc = _exchange_location(ex)
                self._find(r, f"{issue.code}: {issue.message}", loc or {}, ex, n)

    def _find(
        self,
        r: Rule,
        message: str,
        loc: dict,
        ex: Exchange | None,
        n: int | None,
        severity: str | None = None,
        waived: str | None | bool = False,  # (False: not looked up yet)
    ) -> None:
        """A finding of ``r`` (``severity``: its own when not the rule's; ``waived``: the reason
        already found, None for none; False: look the waivers up with ``ex``)."""
        cur = self._cur
        assert cur is not None
        reason = self._waiver(r.id, ex) if waived is False else waived
        self.counts[r.id] += 1
        if len(self.findings[r.id]) < MAX_FINDINGS:
            self.findings[r.id].append(
                Finding(
                    r.id,
                    severity or str(r.severity),
                    message,
                    cur.name,
                    n,
                    waived=reason if isinstance(reason, str) else None,
                    **loc,
                )
            )

    def _waiver(self, rid: str, ex: Exchange | None) -> str | None:
        for w in self.config.waivers:
            if w.rule != rid or not w.active(self.today):
                continue
            if w.where is None or (ex is not None and w.where(ex)):
                return w.reason
        return None

    # -- merging (parallel captures) ------------------------------------------------------------------
    def state(self) -> dict:
        return {
            "findings": {k: [asdict(f) for f in v] for k, v in self.findings.items()},
            "counts": dict(self.counts),
            "samples": {k: dict(v) for k, v in self.samples.items()},
            "captures": [asdict(c) for c in self.captures],
        }

    def merge(self, state: dict) -> None:
        for k, v in state["findings"].items():
            room = MAX_FINDINGS - len(self.findings[k])
            self.findings[k].extend(Finding(**{**f, "packets": tuple(f["packets"])}) for f in v[:room])
        for k, n in state["counts"].items():
            self.counts[k] += n
        for k, groups in state["samples"].items():
            for g, vals in groups.items():
                self.samples[k][g].extend(vals)
        self.captures.extend(CaptureInfo(**c) for c in state["captures"])

    # -- results -----------------------------------------------------------------------------------------
    def duration(self) -> float:
        return sum(
            c.last_ts - c.first_ts for c in self.captures if c.first_ts is not None and c.last_ts is not None
        )

    def results(self) -> list[Result]:
        fail_on = self.config.fail_on
        out = []
        for r in self.rules:
            if r.aggregate is not None:
                out.append(self._aggregate_result(r, fail_on))
                continue
            found = self.findings.get(r.id, [])
            total = self.counts.get(r.id, 0)
            live = [f for f in found if f.waived is None]
            res = Result(r.id, str(r.severity), "passed", "", found, total, source=r.source, help=r.help)
            if total == 0:
                res.summary = "no finding"
            elif not live and total == len(found):
                res.status = "waived"
                res.summary = f"{total} finding{'s' if total != 1 else ''}, all waived"
            else:
                # a rule whose findings have severities of their own (kafka.producer-lost's
                # unanswered records, a warning beside its errors) is as bad as its worst live one
                sev = r.severity
                if total == len(found):
                    sev = max((SEVERITIES.get(f.severity, r.severity) for f in live), default=r.severity)
                res.status = _status(sev, fail_on)
                res.summary = f"{total} finding{'s' if total != 1 else ''}: {r.message}"
            out.append(self._expired(res))
        return out

    def _aggregate_result(self, r: Rule, fail_on: Severity) -> Result:
        agg = r.aggregate
        assert agg is not None
        groups = self.samples.get(r.id, {})
        res = Result(r.id, str(r.severity), "passed", "", source=r.source, help=r.help)
        n = sum(len(v) for v in groups.values())
        res.samples = n
        if n < r.min_samples or (not groups and agg.fn not in ("count", "rate")):
            if n < r.min_samples:
                res.status = "inconclusive"
                res.summary = f"{n} sample{'s' if n != 1 else ''}, fewer than min_samples {r.min_samples}"
            else:
                res.summary = "no exchange selected"
            return res
        window = max(self.duration(), MIN_RATE_WINDOW)
        worst = None
        bad = []
        for g, vals in sorted(groups.items()) or [("", [])]:
            v = _value(agg.fn, agg.q, vals, window)
            if v is None:
                continue
            if worst is None or (r.max is not None and v > worst) or (r.max is None and v < worst):
                worst = v
            if (r.max is not None and v > r.max) or (r.min is not None and v < r.min):
                bad.append((g, v))
        res.value = worst
        unit = agg.unit
        if not bad:
            res.summary = f"{agg.text} = {_num(worst)}{unit}" + (
                f" (worst of {len(groups)} {r.per})" if r.per else ""
            )
            return res
        waived = self._waiver(r.id, None)
        for g, v in bad:
            who = f" for {r.per} {g}" if r.per else ""
            res.findings.append(
                Finding(
                    r.id,
                    str(r.severity),
                    f"{agg.text}{who} = {_num(v)}{unit}: {r.message}",
                    "(capture set)",
                    waived=waived,
                )
            )
        res.count = len(bad)
        res.status = "waived" if waived else _status(r.severity, fail_on)
        res.summary = "; ".join(f.message for f in res.findings[:3]) + (" ..." if len(bad) > 3 else "")
        return self._expired(res)

    def _expired(self, res: Result) -> Result:
        if res.status in ("failed", "warned"):
            old = [w for w in self.config.waivers if w.rule == res.rule and not w.active(self.today)]
            if old:
                res.summary += f" (waiver expired on {old[0].until.isoformat()}: {old[0].reason})"
        return res

    def inconclusive(self) -> list[CaptureInfo]:
        return [c for c in self.captures if c.inconclusive]


def _status(sev: Severity, fail_on: Severity) -> str:
    if sev >= fail_on:
        return "failed"
    return "warned" if sev >= Severity.WARNING else "noted"


def _value(fn: str, q: float | None, vals: list[float], window: float) -> float | None:
    if fn == "count":
        return float(len(vals))
    if fn == "rate":
        return len(vals) / window
    if not vals:
        return None
    if fn == "p":
        return percentile(sorted(vals), q)  # type: ignore[arg-type]
    if fn == "max":
        return max(vals)
    if fn == "min":
        return min(vals)
    if fn == "sum":
        return float(sum(vals))
    return sum(vals) / len(vals)


def _num(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.0f}" if v == int(v) else f"{v:.3f}".rstrip("0").rstrip(".")
