"""Checks over an analysis, for CI regression runs on recorded traffic (pure, no I/O).

A :class:`Checker` is fed every pipeline event and evaluates rules at the end:

* ``problems``: no issue of error severity (decode faults, CRC mismatches, capture damage),
  except the codes in ``allow``;
* ``kafka_errors``: at most ``max_kafka_errors`` responses carry a Kafka error code, and none
  of the names in ``forbid_errors``;
* ``unanswered``: at most ``max_unanswered`` requests stayed without a response;
* ``latency``: for each ``API=MS`` (or ``API=pNN:MS``) rule, that percentile of the API's
  latency is at most MS milliseconds;
* ``expect_apis``: every named API occurs at least once;
* ``asserts``: display filters (:mod:`analyzer.filter`) every selected exchange must satisfy.

``select`` (a compiled display filter) chooses the exchanges the rules look at; connection and
capture issues are always checked.

Each rule yields a :class:`CheckResult` with the offending exchanges as examples; :func:`junit_xml`
renders them as a JUnit report (one test case per rule).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from xml.sax.saxutils import escape, quoteattr

from analyzer.dissect import schema
from analyzer.events import CaptureIssue, ConnIssue, Event
from analyzer.model import ConnInfo, Exchange, Severity
from analyzer.session.stats import error_names, percentile

MAX_EXAMPLES = 20


@dataclass(slots=True)
class CheckResult:
    name: str
    passed: bool
    summary: str
    examples: list[str] = field(default_factory=list)


@dataclass(slots=True)
class LatencyRule:
    api: str
    percentile: float
    limit_ms: float

    @classmethod
    def parse(cls, text: str) -> LatencyRule:
        """``Produce=50`` (p99 by default), ``Fetch=p95:600``, ``Metadata=max:10``."""
        if "=" not in text:
            raise ValueError(f"latency rule {text!r}: expected API=MS or API=pNN:MS")
        api, rest = text.split("=", 1)
        q = 99.0
        if ":" in rest:
            qs, rest = rest.split(":", 1)
            qs = qs.strip().lower()
            if qs == "max":
                q = 100.0
            elif qs.startswith("p") and qs[1:].replace(".", "", 1).isdigit():
                q = float(qs[1:])
            else:
                raise ValueError(f"latency rule {text!r}: percentile must be pNN or max")
        try:
            limit = float(rest)
        except ValueError:
            raise ValueError(f"latency rule {text!r}: {rest!r} is not a number of milliseconds") from None
        name = _api_name(api.strip())
        if name is None:
            raise ValueError(f"latency rule {text!r}: unknown API {api!r}")
        return cls(name, q, limit)


def _api_name(text: str) -> str | None:
    if text.lstrip("-").isdigit():
        return schema.api_name(int(text))
    for key in range(256):
        n = schema.api_name(key)
        if n is not None and n.lower() == text.lower():
            return n
    return None


def _where(ex: Exchange) -> str:
    c: ConnInfo = ex.conn
    ends = f"{c.client} -> {c.broker}" if c.client_direction is not None else f"{c.a} <-> {c.b}"
    name = schema.api_name(ex.api_key) if ex.api_key is not None else "?"
    frames = (ex.request or ex.response).frame.packet_indexes if (ex.request or ex.response) else ()
    pk = (
        ""
        if not frames
        else f" packet {frames[0]}"
        if len(frames) == 1
        else f" packets {frames[0]}-{frames[-1]}"
    )
    return f"{name} v{ex.api_version} corr={ex.correlation_id} {ends}{pk}"


class Checker:
    def __init__(
        self,
        allow: tuple[str, ...] = (),
        max_kafka_errors: int | None = None,
        forbid_errors: tuple[str, ...] = (),
        max_unanswered: int | None = None,
        latency: tuple[LatencyRule, ...] = (),
        expect_apis: tuple[str, ...] = (),
        select=None,
        asserts: tuple = (),
    ):
        self.select = select
        self.asserts = tuple(asserts)
        self.failed_asserts: list[list[str]] = [[] for _ in self.asserts]
        self.selected = 0
        self.allow = frozenset(allow)
        self.max_kafka_errors = max_kafka_errors
        self.forbid = frozenset(e.upper() for e in forbid_errors)
        self.max_unanswered = max_unanswered
        self.latency = latency
        self.expect = tuple(expect_apis)
        self.problems: list[str] = []
        self.kafka_errors: list[str] = []
        self.forbidden: list[str] = []
        self.unanswered: list[str] = []
        self.latencies: dict[str, list[tuple[float, str]]] = {}
        self.seen_apis: set[str] = set()
        self.exchanges = 0

    def add(self, ev: Event) -> None:
        t = type(ev)
        if t is Exchange:
            self._exchange(ev)  # type: ignore[arg-type]
            return
        if t is ConnIssue or t is CaptureIssue:
            issue = ev.issue  # type: ignore[union-attr]
            if issue.severity == Severity.ERROR and issue.code not in self.allow:
                where = f"connection {ev.conn.id}" if t is ConnIssue else "capture"  # type: ignore[union-attr]
                self.problems.append(f"{issue.code}: {issue.message} ({where})")

    def _exchange(self, ex: Exchange) -> None:
        self.exchanges += 1
        if self.select is not None and not self.select(ex):
            return
        self.selected += 1
        for i, a in enumerate(self.asserts):
            if not a(ex):
                self.failed_asserts[i].append(_where(ex))
        name = schema.api_name(ex.api_key) if ex.api_key is not None else None
        if name:
            self.seen_apis.add(name)
        for i in ex.all_issues():
            if i.severity == Severity.ERROR and i.code not in self.allow:
                self.problems.append(f"{i.code}: {i.message} in {_where(ex)}")
            if i.code == "pairing.no_response":
                self.unanswered.append(_where(ex))
        errs = error_names(ex.response)
        if errs:
            self.kafka_errors.append(f"{','.join(sorted(set(errs)))} in {_where(ex)}")
            bad = self.forbid.intersection(errs)
            if bad:
                self.forbidden.append(f"{','.join(sorted(bad))} in {_where(ex)}")
        lat = ex.latency
        if lat is not None and name:
            self.latencies.setdefault(name, []).append((lat * 1000.0, _where(ex)))

    def results(self) -> list[CheckResult]:
        out = [
            _result("problems", self.problems, 0, "error-severity issues (decode, CRC, capture damage)"),
        ]
        if self.max_kafka_errors is not None:
            out.append(
                _result(
                    "kafka_errors",
                    self.kafka_errors,
                    self.max_kafka_errors,
                    "responses with Kafka error codes",
                )
            )
        if self.forbid:
            out.append(
                _result(
                    "forbidden_errors", self.forbidden, 0, f"responses with {', '.join(sorted(self.forbid))}"
                )
            )
        if self.max_unanswered is not None:
            out.append(_result("unanswered", self.unanswered, self.max_unanswered, "unanswered requests"))
        for rule in self.latency:
            vals = sorted(self.latencies.get(rule.api, []))
            label = "max" if rule.percentile >= 100 else f"p{rule.percentile:g}"
            name = f"latency.{rule.api}.{label}"
            if not vals:
                out.append(CheckResult(name, False, f"no {rule.api} exchange with a latency in the capture"))
                continue
            got = vals[-1][0] if rule.percentile >= 100 else percentile([v for v, _ in vals], rule.percentile)
            slow = [f"{v:.3f} ms: {w}" for v, w in reversed(vals) if v > rule.limit_ms][:MAX_EXAMPLES]
            ok = got <= rule.limit_ms
            out.append(
                CheckResult(
                    name,
                    ok,
                    f"{rule.api} {label} latency {got:.3f} ms "
                    f"({'<=' if ok else '>'} {rule.limit_ms:g} ms) over {len(vals)} exchanges",
                    slow if not ok else [],
                )
            )
        for a, failed in zip(self.asserts, self.failed_asserts, strict=True):
            ok = not failed
            out.append(
                CheckResult(
                    f"assert: {a.text}",
                    ok,
                    f"{len(failed)} of {self.selected} exchanges do not satisfy {a.text}",
                    failed[:MAX_EXAMPLES],
                )
            )
        for api in self.expect:
            name = _api_name(api) or api
            ok = name in self.seen_apis
            out.append(
                CheckResult(
                    f"expect.{name}", ok, f"{name} {'occurs' if ok else 'never occurs'} in the capture"
                )
            )
        return out


def _result(name: str, found: list[str], limit: int, what: str) -> CheckResult:
    ok = len(found) <= limit
    return CheckResult(
        name, ok, f"{len(found)} {what} (limit {limit})", found[:MAX_EXAMPLES] if not ok else []
    )


def junit_xml(results: list[CheckResult], suite: str, seconds: float) -> str:
    failures = sum(1 for r in results if not r.passed)
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<testsuites tests="{len(results)}" failures="{failures}" time="{seconds:.3f}">',
        f'  <testsuite name={quoteattr(suite)} tests="{len(results)}" failures="{failures}" '
        f'errors="0" time="{seconds:.3f}">',
    ]
    for r in results:
        lines.append(f"    <testcase classname={quoteattr(suite)} name={quoteattr(r.name)}>")
        if not r.passed:
            body = "\n".join([r.summary, *r.examples])
            lines.append(f"      <failure message={quoteattr(r.summary)}>{escape(body)}</failure>")
        else:
            lines.append(f"      <system-out>{escape(r.summary)}</system-out>")
        lines.append("    </testcase>")
    lines += ["  </testsuite>", "</testsuites>", ""]
    return "\n".join(lines)
