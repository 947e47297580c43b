"""The built-in pack's producer rules, judged on
:class:`~analyzer.session.producer_insights.ProducerInsights` (the producers, retries,
transactions and end-to-end latencies that ``stats``, ``export``, ``producers`` and
``transactions`` show).

The engine gives the insights each exchange with a :class:`Mark` (its number, location and the
waivers its exchange matches), kept by the trackers only where it may be evidence: with a batch's
attempts while the batch is open for retries, as a transaction's first exchange and its EndTxn,
with the largest end-to-end latency of each (topic, partition, producer, consumer, group).
:class:`ProducerJudge` is told each batch's outcome and each ended transaction as they are
counted, and keeps per producer (or transactional id) the first of each kind and a count, so its
evidence is bounded by the producers the capture has. At the end of the capture
(:meth:`ProducerJudge.findings`):

* ``kafka.producer-duplicates``: records a producer's batches wrote twice (answered without error
  at two base offsets: a producer that is not idempotent sent a batch again after a timeout);
* ``kafka.producer-lost``: records whose last attempt failed and none was written (an error);
  records whose last attempt got no answer in the capture, said apart (a warning: the answer may
  have come on a connection the capture does not hold); attempts still in flight when the capture
  ended are no finding;
* ``kafka.producer-retries``: a producer that sent more than ``max_share`` of its records again;
* ``kafka.transaction-hanging``: a transaction open past its timeout at the capture's end (an
  error); a transaction its EndTxn ended with an error, PRODUCER_FENCED... (a warning);
* ``kafka.e2e-latency``: an end-to-end p99 (Produce request to the Fetch answer that returns the
  record) over ``max``.

Sequence gaps and fencing are no rule of their own: a gap the broker refuses
(OUT_OF_ORDER_SEQUENCE_NUMBER) and a fenced producer's batches end in failed records
(kafka.producer-lost) and error answers (kafka.error-responses); a gap the broker accepted
is kafka.invalid-batches' (its sequences check). The findings name them when they are there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from analyzer.dissect.errors import error_name
from analyzer.model import Exchange, Severity
from analyzer.session.e2e import Latencies
from analyzer.session.producer_insights import ProducerInsights
from analyzer.session.producers import (
    ACKS0,
    DUPLICATED,
    FAILED,
    NO_ANSWER,
    RETRIED,
    UNANSWERED,
    Attempt,
    Batch,
    ProducerView,
)
from analyzer.session.transactions import DEFAULT_TIMEOUT_MS, Transaction

DUPLICATES, LOST, RETRIES, HANGING, E2E = "duplicates", "lost", "retries", "hanging", "e2e"  # Rule.judge
JUDGES = (DUPLICATES, LOST, RETRIES, HANGING, E2E)
SHOWN = 5  # e2e keys named in one finding (the others counted)


@dataclass(frozen=True, slots=True)
class Mark:
    """An exchange a finding may name: its number, the engine's location of it, the waivers of
    the producer rules whose ``where`` it matches (rule id -> reason), whether it was still in
    flight when the capture ended."""

    n: int
    loc: dict
    waived: dict[str, str]
    cut: bool = False

    def names(self, t0: float) -> str:
        loc = self.loc
        corr = f" corr={loc['correlation_id']}" if loc.get("correlation_id") is not None else ""
        at = f" at {loc['ts'] - t0:.3f} s" if loc.get("ts") is not None else ""
        api = loc.get("api") or "exchange"
        return f"exchange {self.n} {api}{corr} on connection {loc.get('connection')}{at}"


@dataclass(slots=True)
class _Kind:
    """One kind of outcome of a producer's batches: how many, the first."""

    batches: int = 0
    records: int = 0
    first: tuple[Batch, list[Attempt]] | None = None


@dataclass(slots=True)
class _Producer:
    view: ProducerView
    kinds: dict[str, _Kind] = field(default_factory=dict)


@dataclass(slots=True)
class _Failed:
    count: int = 0
    first: Transaction | None = None


@dataclass(frozen=True, slots=True)
class ProducerFinding:
    rule: str
    severity: Severity
    message: str
    evidence: Mark | None


@dataclass(slots=True)
class Bounds:
    """The rules' settings (``[pack]``): None for a bound not set; rule ids and severities by judge."""

    retry_share: float | None = None
    e2e_ms: float | None = None
    rules: dict[str, str] = field(default_factory=dict)  # judge -> rule id
    severities: dict[str, Severity] = field(default_factory=dict)  # judge -> the rule's severity


class ProducerJudge:
    def __init__(self, insights: ProducerInsights, bounds: Bounds) -> None:
        self.insights = insights
        self.bounds = bounds
        self.producers: dict[int, _Producer] = {}
        self.failed: dict[str, _Failed] = {}  # transactional id -> transactions ended by an error
        insights.producers.on_outcome = self._outcome
        insights.txns.on_finish = self._finished

    def _outcome(self, kind: str, pv: ProducerView, b: Batch, run: list[Attempt]) -> None:
        if kind == UNANSWERED and isinstance(run[-1].mark, Mark) and run[-1].mark.cut:
            kind = "cut"  # still in flight when the capture ended: no finding
        p = self.producers.get(id(pv))
        if p is None:
            p = self.producers[id(pv)] = _Producer(pv)
        k = p.kinds.get(kind)
        if k is None:
            k = p.kinds[kind] = _Kind()
        k.batches += 1
        k.records += b.records
        if k.first is None or run[0].time < k.first[1][0].time:
            k.first = (b, list(run))

    def _finished(self, x: Transaction) -> None:
        if x.error is None:
            return
        f = self.failed.get(x.transactional_id)
        if f is None:
            f = self.failed[x.transactional_id] = _Failed()
        f.count += 1
        if f.first is None:
            f.first = x

    # -- judging --------------------------------------------------------------------------------------
    def findings(
        self,
        first: float | None,
        now: float | None,
        clients: set[str | None] | None,
        txn_ids: set[str] | None,
    ) -> list[ProducerFinding]:
        """The findings at the capture's end (``now``; ``first``: the zero of the times said);
        ``clients``, ``txn_ids``: only the producers of those client ids and the transactions of
        those transactional ids (``check -Y``), None for all."""
        t0 = first or 0.0
        self.insights.done()
        rules = self.bounds.rules
        out: list[ProducerFinding] = []
        views = sorted(
            self.insights.producers.producers.values(), key=lambda v: (v.first, v.client, v.producer_id)
        )
        for pv in views:
            if clients is not None and pv.client_id not in clients:
                continue
            p = self.producers.get(id(pv))
            kinds = p.kinds if p is not None else {}
            if DUPLICATES in rules:
                out += self._kind(DUPLICATES, pv, kinds.get(DUPLICATED), "written twice", t0)
            if LOST in rules:
                out += self._kind(LOST, pv, kinds.get(FAILED), "lost", t0)
                out += self._kind(LOST, pv, kinds.get(UNANSWERED), "unanswered", t0)
            if RETRIES in rules:
                out += self._retries(pv, kinds.get(RETRIED), t0)
        if HANGING in rules:
            out += self._transactions(t0, now, txn_ids)
        if E2E in rules:
            out += self._e2e(t0, clients)
        return out

    def _severity(self, judge: str, lesser: bool = False) -> Severity:
        sev = self.bounds.severities.get(judge, Severity.ERROR)
        return min(sev, Severity.WARNING) if lesser else sev

    def _kind(
        self, judge: str, pv: ProducerView, k: _Kind | None, what: str, t0: float
    ) -> list[ProducerFinding]:
        if k is None or k.first is None:
            return []
        b, run = k.first
        mark = _mark(run[0])
        if what == "written twice":
            n = pv.duplicates_written
            head = (
                f"{n} record{_s(n)} written twice ({k.batches} batch{_es(k.batches)} at two offsets or "
                "more in Produce or Fetch answers)"
            )
            written = [a for a in run if a.error == 0 and a.base_offset is not None]
            ev = ", ".join(f"{_attempt(a, t0)} written at offset {a.base_offset}" for a in written[:3])
        elif what == "lost":
            head = (
                f"{k.records} record{_s(k.records)} lost ({k.batches} batch{_es(k.batches)} whose last "
                "attempt failed and none was written)"
            )
            ev = _attempts(run, t0)
        else:
            head = (
                f"{k.records} record{_s(k.records)} unanswered ({k.batches} batch{_es(k.batches)} whose last "
                "attempt got no answer in the capture: written or not, the capture cannot tell)"
            )
            ev = _attempts(run, t0)
        msg = (
            f"{_producer(pv)}: {head}; first: {b.records} record{_s(b.records)} to {b.topic}[{b.partition}], "
            f"{ev}{_extra(pv)}; {_coverage(pv)}"
        )
        return [
            ProducerFinding(self.bounds.rules[judge], self._severity(judge, what == "unanswered"), msg, mark)
        ]

    def _retries(self, pv: ProducerView, k: _Kind | None, t0: float) -> list[ProducerFinding]:
        bound = self.bounds.retry_share
        if bound is None or not pv.records or k is None or k.first is None:
            return []
        share = pv.retried_records / pv.records
        if share <= bound:
            return []
        b, run = k.first
        msg = (
            f"{_producer(pv)}: {pv.retried_records} of {pv.records} records sent again ({share:.1%} > "
            f"{bound:.1%}; {k.batches} batch{_es(k.batches)} retried); first: {b.records} "
            f"record{_s(b.records)} to {b.topic}[{b.partition}], {_attempts(run, t0)}{_extra(pv)}; "
            f"{_coverage(pv)}"
        )
        return [ProducerFinding(self.bounds.rules[RETRIES], self._severity(RETRIES), msg, _mark(run[0]))]

    def _transactions(self, t0: float, now: float | None, txn_ids: set[str] | None) -> list[ProducerFinding]:
        txns = self.insights.txns
        rid = self.bounds.rules[HANGING]
        end = txns.last_ts if now is None else now
        out = []
        for x in sorted(txns.open.values(), key=lambda x: (x.start, x.transactional_id)):
            if txn_ids is not None and x.transactional_id not in txn_ids:
                continue
            limit = x.timeout_ms or DEFAULT_TIMEOUT_MS
            open_ms = (end - x.start) * 1000
            if open_ms <= limit:
                continue
            timeout = (
                f"its timeout {limit} ms (InitProducerId)"
                if x.timeout_ms
                else f"the default timeout {DEFAULT_TIMEOUT_MS} ms (its InitProducerId is not in the capture)"
            )
            mark = x.first_mark if isinstance(x.first_mark, Mark) else None
            start = mark.names(t0) if mark is not None else f"{x.start - t0:.3f} s"
            out.append(
                ProducerFinding(
                    rid,
                    self._severity(HANGING),
                    f"transaction {x.transactional_id}{_pid(x)}: open for {open_ms / 1000:.3f} s at the "
                    f"capture's end, past {timeout}; started at {start}; {len(x.partitions)} partition"
                    f"{_s(len(x.partitions))}, {x.records} record{_s(x.records)} written; no EndTxn in the "
                    "capture (coverage: from its first exchange in the capture)",
                    mark,
                )
            )
        for tid in sorted(self.failed):
            f = self.failed[tid]
            failed = f.first
            if failed is None or (txn_ids is not None and tid not in txn_ids):
                continue
            x = failed
            mark = x.end_mark if isinstance(x.end_mark, Mark) else None
            first = x.first_mark if isinstance(x.first_mark, Mark) else None
            more = f"; {f.count} transactions of it ended so" if f.count > 1 else ""
            out.append(
                ProducerFinding(
                    rid,
                    self._severity(HANGING, lesser=True),
                    f"transaction {tid}{_pid(x)}: EndTxn ({'commit' if x.outcome == 'commit' else 'abort'}) "
                    f"answered {x.error} at {mark.names(t0) if mark else f'{(x.end or 0.0) - t0:.3f} s'} "
                    f"(started at {first.names(t0) if first else f'{x.start - t0:.3f} s'}; {x.records} "
                    f"record{_s(x.records)} written){more}",
                    mark or first,
                )
            )
        return out

    def _e2e(self, t0: float, clients: set[str | None] | None) -> list[ProducerFinding]:
        bound = self.bounds.e2e_ms
        e2e = self.insights.e2e
        if bound is None:
            return []
        over: list[tuple[tuple, Latencies, float]] = []
        for k, lat in e2e.by_capture.items():
            if clients is not None and k[2][1] not in clients and k[3][1] not in clients:
                continue
            p99 = lat.quantile(0.99)
            if p99 is not None and p99 > bound:
                over.append((k, lat, p99))
        if not over:
            return []
        over.sort(key=lambda o: (-o[2], o[0][0], o[0][1], _who(o[0][2]), _who(o[0][3]), o[0][4] or ""))
        parts = []
        for k, lat, p99 in over[:SHOWN]:
            mark = lat.slowest if isinstance(lat.slowest, Mark) else None
            slowest = f" at {mark.names(t0)}" if mark is not None else ""
            parts.append(
                f"{k[0]}[{k[1]}] from {_who(k[2])} to {_who(k[3])} (group {k[4] or '-'}): p99 {p99:.3f} ms > "
                f"{bound:g} ms over {lat.count} record{_s(lat.count)}, max {lat.largest:.3f} ms{slowest}"
            )
        more = f"; and {len(over) - SHOWN} more" if len(over) > SHOWN else ""
        worst = over[0][1].slowest
        return [
            ProducerFinding(
                self.bounds.rules[E2E],
                self._severity(E2E),
                f"end-to-end latency (Produce request to the Fetch answer returning the record): "
                f"{'; '.join(parts)}{more}; coverage: {e2e.coverage()}",
                worst if isinstance(worst, Mark) else None,
            )
        ]


def mark_of(ex: Exchange, n: int, loc: dict, waived: dict[str, str]) -> Mark:
    """The :class:`Mark` of the ``n``-th exchange (``loc``: the engine's location of it)."""
    c = ex.conn
    cut = ex.response is None and (c.closed in ("end of capture", "idle") or c.closed_by == "client")
    return Mark(n, loc, waived, cut)


def _mark(a: Attempt) -> Mark | None:
    return a.mark if isinstance(a.mark, Mark) else None


def _attempt(a: Attempt, t0: float) -> str:
    m = _mark(a)
    if m is not None:
        return m.names(t0)
    return f"Produce corr={a.correlation_id} on {a.connection} at {a.time - t0:.3f} s"


def _answer(a: Attempt) -> str:
    if a.error == NO_ANSWER:
        return "no answer"
    if a.error == ACKS0:
        return "acks=0"
    if a.error == 0:
        return (
            f"written at offset {a.base_offset}"
            if a.base_offset is not None and a.base_offset >= 0
            else "written"
        )
    return error_name(a.error) or f"error {a.error}"


def _attempts(run: list[Attempt], t0: float) -> str:
    """The first attempt and the later ones (the last two when there are many)."""
    text = [f"first attempt {_attempt(run[0], t0)} ({_answer(run[0])})"]
    if len(run) > 3:
        text.append(f"{len(run) - 3} more attempt{_s(len(run) - 3)}")
    later = run[1:] if len(run) <= 3 else run[-2:]
    for a in later:
        which = "last attempt" if a is run[-1] else "attempt"
        text.append(f"{which} {_attempt(a, t0)} ({_answer(a)})")
    return ", ".join(text)


def _producer(pv: ProducerView) -> str:
    ids = [f"producer id {pv.producer_id}" if pv.producer_id >= 0 else "not idempotent"]
    if pv.transactional_id:
        ids.append(f"transactional id {pv.transactional_id}")
    return f"producer {pv.client_id or '-'}@{pv.client} ({', '.join(ids)})"


def _extra(pv: ProducerView) -> str:
    said = []
    if pv.sequence_gaps:
        said.append(f"{pv.sequence_gaps} sequence gap{_s(pv.sequence_gaps)}")
    if pv.fenced:
        said.append(f"fenced {pv.fenced} time{_s(pv.fenced)} (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH)")
    if pv.epoch_bumps:
        said.append(f"{pv.epoch_bumps} epoch bump{_s(pv.epoch_bumps)}")
    return f"; {', '.join(said)}" if said else ""


def _coverage(pv: ProducerView) -> str:
    return (
        f"coverage: {pv.batches} batch{_es(pv.batches)} of it in the capture (attempts before the capture "
        "started or on connections it does not hold are not seen)"
    )


def _pid(x: Transaction) -> str:
    if x.producer_id is None:
        return ""
    return (
        f" (producer id {x.producer_id}, epoch {x.producer_epoch if x.producer_epoch is not None else '?'})"
    )


def _who(w: tuple) -> str:
    host, client_id = w
    return f"{client_id or '-'}@{host}"


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def _es(n: int) -> str:
    return "" if n == 1 else "es"
