"""Rules: what a ``check`` run asserts over recorded traffic, and the TOML file that declares them.

A rule selects exchanges with ``where`` (a display filter, :mod:`analyzer.filter`) and then either
asserts a filter on each (``assert``: every selected exchange must satisfy it) or bounds an
aggregate over them (``count``, ``rate``, ``p50(latency)``, ``max(response_bytes)``,
``sum(records.count)``... with ``max``/``min``, optionally ``per`` a grouping field and
``min_samples``). Built-in rules (:mod:`analyzer.check.pack`) can also look at issues. Everything is
validated when loaded: a typo is a :class:`ConfigError` naming the file, the rule and the key, never
a rule that silently passes.

The file::

    [check]
    fail_on = "error"                 # or "warning"
    allow = []          # issue codes the pack does not count (decode.bad_utf8...)

    [pack]
    "kafka.acks-all" = false                        # switch a built-in rule off
    "kafka.metadata-storm" = { max_rate = 5, severity = "error" }

    [[rule]]
    id = "produce-latency"
    where = "api == Produce"
    aggregate = "p99(latency)"
    max = "50ms"
    min_samples = 20

    [[waiver]]
    rule = "kafka.acks-all"
    where = 'client_id == "legacy-loader"'
    until = 2027-03-31
    reason = "the loader moves to acks=all with the Q1 release"
"""

from __future__ import annotations

import datetime as dt
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from analyzer.filter import Filter, FilterError, Values, compile_filter, field_values
from analyzer.model import Exchange, Issue, Severity
from analyzer.session.clients import TARGETS

SEVERITIES = {"error": Severity.ERROR, "warning": Severity.WARNING, "note": Severity.NOTE}
_AGG = re.compile(r"^\s*(count|rate|(p\d{1,2}(?:\.\d+)?|max|min|avg|sum)\(\s*([A-Za-z0-9_.]+)\s*\))\s*$")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|ms|s|m)\s*$")
_UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}
GROUPS = ("client_id", "software", "client", "broker", "conn", "api", "topic", "group")


class ConfigError(ValueError):
    """A rules file or rule flag that cannot be used: where, and what is wrong."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message


@dataclass(frozen=True, slots=True)
class Aggregate:
    """``count``, ``rate`` (per second), or ``fn(field)`` with fn one of pNN, max, min, avg, sum."""

    text: str
    fn: str  # "count", "rate", "p", "max", "min", "avg", "sum"
    q: float | None  # the percentile for "p"
    values: Values | None  # the field's getter (None for count and rate)

    @property
    def unit(self) -> str:
        if self.values is not None and self.values.type == "duration":
            return "ms"
        return "/s" if self.fn == "rate" else ""


def parse_aggregate(text: str, where: str) -> Aggregate:
    m = _AGG.match(text)
    if not m:
        raise ConfigError(
            where,
            f"aggregate {text!r}: expected count, rate, or pNN/max/min/avg/sum(field), e.g. p99(latency)",
        )
    if m.group(1) in ("count", "rate"):
        return Aggregate(text.strip(), m.group(1), None, None)
    fn, name = m.group(2), m.group(3)
    try:
        values = field_values(name)
    except FilterError as exc:
        raise ConfigError(where, f"aggregate {text!r}: {exc.message}") from None
    if values.type not in ("int", "duration", "float"):
        raise ConfigError(where, f"aggregate {text!r}: {name} is {values.type}, not a number")
    q = None
    if fn.startswith("p"):
        q = float(fn[1:])
        if not 0 < q <= 100:
            raise ConfigError(where, f"aggregate {text!r}: percentile {q} is not in 0..100")
        fn = "p"
    return Aggregate(text.strip(), fn, q, values)


def parse_bound(value: Any, agg: Aggregate, where: str) -> float:
    """A bound: a number (milliseconds for durations), or a duration text for durations."""
    if isinstance(value, bool):
        raise ConfigError(where, f"bound {value!r} is not a number")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        m = _DURATION.match(value)
        if m and agg.unit == "ms":
            return float(m.group(1)) * _UNIT_MS[m.group(2)]
        if m:
            raise ConfigError(where, f"bound {value!r} is a duration, but {agg.text} is not")
    raise ConfigError(
        where, f"bound {value!r}: expected a number" + (" or a duration" if agg.unit == "ms" else "")
    )


def compile_expr(text: Any, where: str, key: str) -> Filter:
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(where, f"{key} must be a display filter (a non-empty string)")
    try:
        return compile_filter(text)
    except FilterError as exc:
        caret = exc.caret(text).replace("\n", "\n    ")
        raise ConfigError(where, f"{key}: {exc.message}\n    {caret}") from None


@dataclass(slots=True)
class Rule:
    """One rule. Exactly one of ``check`` (per exchange: a violation message or None),
    ``aggregate`` or ``issues`` (which issues are findings) says what it tests."""

    id: str
    severity: Severity
    message: str
    source: str  # "built-in" or "FILE: [[rule]] N"
    where: Filter | None = None
    check: Callable[[Exchange], str | None] | None = None
    aggregate: Aggregate | None = None
    max: float | None = None
    min: float | None = None
    min_samples: int = 0
    per: str | None = None
    issues: Callable[[Issue], bool] | None = None
    help: str = ""  # what the rule is for (SARIF, docs)
    texts: dict[str, str] = field(default_factory=dict)  # the filters as written, for reports
    records: bool = False  # its findings are only seen with record bodies decoded
    # judged on the consumer groups at the end of each capture (:mod:`analyzer.check.groups`)
    judge: str | None = None
    # a built-in rule's own bounds, tuned under [pack] (None: off), and their units ("ms": a
    # duration, "s" or "ms" text or a bare number of milliseconds; "": a number)
    settings: dict[str, float | None] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)

    @property
    def needs_records(self) -> bool:
        if self.records:
            return True
        fs = [self.where] + [getattr(self.check, "filter", None)]
        needs = any(f is not None and f.needs_records for f in fs)
        return needs or bool(self.aggregate and self.aggregate.values and self.aggregate.values.needs_records)


def assert_check(flt: Filter, message: str) -> Callable[[Exchange], str | None]:
    def check(ex: Exchange) -> str | None:
        return None if flt(ex) else message

    check.filter = flt  # type: ignore[attr-defined]
    return check


@dataclass(frozen=True, slots=True)
class Waiver:
    rule: str
    reason: str
    until: dt.date
    where: Filter | None
    source: str

    def active(self, today: dt.date) -> bool:
        return today <= self.until


@dataclass(slots=True)
class Config:
    rules: list[Rule] = field(default_factory=list)
    waivers: list[Waiver] = field(default_factory=list)
    fail_on: Severity = Severity.ERROR
    allow: frozenset[str] = frozenset()
    pack: dict[str, Any] = field(default_factory=dict)  # built-in id -> False or tuning table


_RULE_KEYS = {"id", "where", "assert", "aggregate", "max", "min", "min_samples", "per", "severity", "message"}
_WAIVER_KEYS = {"rule", "reason", "until", "where"}
_TOP_KEYS = {"check", "pack", "rule", "waiver"}
_CHECK_KEYS = {"fail_on", "allow"}
TUNABLE = {"max", "min", "min_samples", "severity", "per", "where", "message"}


def severity_of(value: Any, where: str) -> Severity:
    if not isinstance(value, str) or value.lower() not in SEVERITIES:
        raise ConfigError(where, f"severity {value!r}: expected error, warning or note")
    return SEVERITIES[value.lower()]


def _unknown(keys, allowed: set[str], where: str) -> None:
    extra = sorted(set(keys) - allowed)
    if extra:
        import difflib

        hints = []
        for k in extra:
            close = difflib.get_close_matches(k, sorted(allowed), n=1)
            hints.append(f"{k!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise ConfigError(where, f"unknown key {', '.join(hints)}; allowed: {', '.join(sorted(allowed))}")


def build_rule(d: dict, where: str) -> Rule:
    """A user rule from its table (TOML or the command line's shorthands)."""
    _unknown(d, _RULE_KEYS, where)
    rid = d.get("id")
    if not isinstance(rid, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", rid or ""):
        raise ConfigError(where, f"id {rid!r}: a rule needs an id of letters, digits, '.', '_' or '-'")
    where = f"{where} (id {rid})"
    if rid.startswith("kafka."):
        raise ConfigError(
            where, "ids starting with 'kafka.' are the built-in pack's; tune those under [pack]"
        )
    sev = severity_of(d.get("severity", "error"), where)
    texts: dict[str, str] = {}
    sel = None
    if "where" in d:
        sel = compile_expr(d["where"], where, "where")
        texts["where"] = d["where"]
    has_assert, has_agg = "assert" in d, "aggregate" in d
    if has_assert == has_agg:
        raise ConfigError(
            where, "a rule has either assert (a filter) or aggregate (count, rate, p99(latency)...)"
        )
    message = d.get("message")
    if message is not None and not isinstance(message, str):
        raise ConfigError(where, "message must be a string")
    rule = Rule(rid, sev, message or "", where, where=sel, texts=texts)
    if has_assert:
        for k in ("max", "min", "min_samples", "per"):
            if k in d:
                raise ConfigError(where, f"{k} applies to aggregate rules, not to assert")
        flt = compile_expr(d["assert"], where, "assert")
        texts["assert"] = d["assert"]
        rule.message = message or f"not {d['assert']}"
        rule.check = assert_check(flt, rule.message)
        return rule
    agg = parse_aggregate(str(d["aggregate"]), where)
    rule.aggregate = agg
    texts["aggregate"] = agg.text
    _bounds(rule, d, where)
    return rule


def _bounds(rule: Rule, d: dict, where: str) -> None:
    agg = rule.aggregate
    assert agg is not None
    if "max" in d:
        rule.max = parse_bound(d["max"], agg, where)
    if "min" in d:
        rule.min = parse_bound(d["min"], agg, where)
    if rule.max is None and rule.min is None:
        raise ConfigError(where, "an aggregate rule needs max or min")
    if "min_samples" in d:
        n = d["min_samples"]
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ConfigError(where, f"min_samples {n!r}: expected a whole number >= 0")
        rule.min_samples = n
    if "per" in d:
        if d["per"] not in GROUPS:
            raise ConfigError(where, f"per {d['per']!r}: expected one of {', '.join(GROUPS)}")
        rule.per = d["per"]
    if not rule.message:
        bound = " and ".join(
            x
            for x in (
                f"<= {rule.max:g}{agg.unit}" if rule.max is not None else "",
                f">= {rule.min:g}{agg.unit}" if rule.min is not None else "",
            )
            if x
        )
        rule.message = f"{agg.text} must be {bound}"


# built-in rules folded into another (issue 29: one way to do each thing): old id -> the new
FOLDED = {
    "kafka.removed-api-versions": "kafka.client-readiness (its target, default the newest release)",
    "kafka.metadata-rate": "kafka.metadata-storm (max_rate)",
}


def parse_setting(value: Any, unit: str, where: str) -> float | None:
    """A built-in rule's bound: false (off), a number (milliseconds for durations) or, for a
    duration, a text such as "30s"."""
    if value is False:
        return None
    if isinstance(value, bool):
        raise ConfigError(where, "expected a bound or false (off)")
    if isinstance(value, int | float) and value >= 0:
        return float(value)
    if isinstance(value, str) and unit == "ms":
        m = _DURATION.match(value)
        if m:
            return float(m.group(1)) * _UNIT_MS[m.group(2)]
    what = 'a duration ("30s", "500ms"; a bare number is milliseconds)' if unit == "ms" else "a number >= 0"
    raise ConfigError(where, f"{value!r}: expected {what}, or false (off)")


def tune(rule: Rule, tuning: dict, where: str) -> None:
    """Apply a [pack] table to a built-in rule."""
    if rule.judge is not None:
        _unknown(tuning, {"severity", "message"} | set(rule.settings), where)
        for k in rule.settings:
            if k in tuning:
                rule.settings[k] = parse_setting(tuning[k], rule.units.get(k, ""), f"{where} {k}")
        target = rule.settings.get("target")
        if "target" in tuning and (target is None or f"{target:.1f}" not in TARGETS):
            known = ", ".join(TARGETS)
            raise ConfigError(f"{where} target", f"{tuning['target']!r}: expected a Kafka release ({known})")
        if rule.settings and all(v is None for v in rule.settings.values()):
            raise ConfigError(where, "every bound is off: switch the rule off instead (= false)")
    else:
        _unknown(tuning, TUNABLE, where)
    if "severity" in tuning:
        rule.severity = severity_of(tuning["severity"], where)
    if "message" in tuning:
        rule.message = str(tuning["message"])
    if rule.judge is not None:
        return  # it judges groups, not exchanges: no where, no aggregate bounds
    if "where" in tuning:
        rule.where = compile_expr(tuning["where"], where, "where")
        rule.texts["where"] = tuning["where"]
    bounds = {k: v for k, v in tuning.items() if k in ("max", "min", "min_samples", "per")}
    if bounds:
        if rule.aggregate is None:
            raise ConfigError(where, f"{', '.join(bounds)}: {rule.id} is not an aggregate rule")
        merged = {"max": rule.max, "min": rule.min, "min_samples": rule.min_samples, **bounds}
        rule.max = rule.min = None
        _bounds(rule, {k: v for k, v in merged.items() if v is not None}, where)


def load(path: str, builtin_ids: set[str]) -> Config:
    """Read and validate a rules file."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as exc:
        raise ConfigError(path, f"cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(path, f"not valid TOML: {exc}") from None
    return from_dict(data, path, builtin_ids)


def from_dict(data: dict, path: str, builtin_ids: set[str]) -> Config:
    _unknown(data, _TOP_KEYS, path)
    cfg = Config()
    check = data.get("check", {})
    if not isinstance(check, dict):
        raise ConfigError(f"{path}: [check]", "must be a table")
    _unknown(check, _CHECK_KEYS, f"{path}: [check]")
    if "fail_on" in check:
        cfg.fail_on = severity_of(check["fail_on"], f"{path}: [check] fail_on")
    allow = check.get("allow", [])
    if not isinstance(allow, list) or not all(isinstance(x, str) for x in allow):
        raise ConfigError(f"{path}: [check] allow", "must be a list of issue codes")
    cfg.allow = frozenset(allow)
    pack = data.get("pack", {})
    if not isinstance(pack, dict):
        raise ConfigError(f"{path}: [pack]", "must be a table of built-in rule ids")
    for rid, v in pack.items():
        w = f"{path}: [pack] {rid}"
        if rid not in builtin_ids:
            import difflib

            if rid in FOLDED:
                raise ConfigError(w, f"this rule was folded into {FOLDED[rid]}: tune that one")
            close = difflib.get_close_matches(rid, sorted(builtin_ids), n=1)
            raise ConfigError(
                w, "no built-in rule has this id" + (f"; did you mean {close[0]}?" if close else "")
            )
        if not (v is False or v is True or isinstance(v, dict)):
            raise ConfigError(w, "expected false (off), true (on) or a table of settings")
    cfg.pack = dict(pack)
    rules = data.get("rule", [])
    if not isinstance(rules, list):
        raise ConfigError(f"{path}: rule", "use [[rule]] tables")
    ids = set(builtin_ids)
    for n, d in enumerate(rules, 1):
        r = build_rule(d, f"{path}: [[rule]] {n}")
        if r.id in ids:
            raise ConfigError(r.source, f"id {r.id!r} is used twice")
        ids.add(r.id)
        cfg.rules.append(r)
    for n, d in enumerate(data.get("waiver", []), 1):
        w = f"{path}: [[waiver]] {n}"
        _unknown(d, _WAIVER_KEYS, w)
        rid = d.get("rule")
        if rid not in ids:
            raise ConfigError(w, f"rule {rid!r} is neither a built-in nor a rule of this file")
        reason = d.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise ConfigError(w, "a waiver needs a reason")
        until = d.get("until")
        if isinstance(until, dt.datetime):
            until = until.date()
        if not isinstance(until, dt.date):
            raise ConfigError(w, f"until {until!r}: expected a date (until = 2027-03-31)")
        sel = compile_expr(d["where"], w, "where") if "where" in d else None
        cfg.waivers.append(Waiver(rid, reason.strip(), until, sel, w))
    return cfg
