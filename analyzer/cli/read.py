"""``read``: one line per request/response exchange (and per TLS connection at its end)."""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from analyzer.cli.args import add_capture_args, add_filter_args
from analyzer.cli.common import analysis, display_filter, exchange_line, finish, tls_line
from analyzer.dissect.constants import ApiKey
from analyzer.events import ConnectionEnd, ConnIssue
from analyzer.model import Exchange, Field, Severity
from analyzer.pipeline import Analysis, Outcome
from analyzer.session.internal import InternalRecord, exchange_internal_records
from analyzer.session.records import FETCH_APIS

_CARRIERS = FETCH_APIS | {ApiKey.PRODUCE}  # the exchanges whose records read -v may decode


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("read", help="one line per request/response exchange")
    add_capture_args(p)
    add_filter_args(p)
    p.set_defaults(func=run)


class ReadPrinter:
    """``read``'s consumer: a line per exchange (and per TLS connection at its end); connection
    issues listed with ``-v``, else counted and said once at the end on stderr."""

    def __init__(self, a: Analysis, out, verbose: bool, absolute: bool) -> None:
        self.a, self.out, self.verbose, self.absolute = a, out, verbose, absolute
        self.origin: float | None = None
        self.unlisted: Counter[str] = Counter()  # connection issues without -v: said once, counted

    def event(self, ev) -> None:
        t = type(ev)
        if t is Exchange:
            if self.origin is None:
                self.origin = self.a.first_ts
            self.out.write(exchange_line(ev, self.origin, self.absolute) + "\n")
            if self.verbose and ev.api_key in _CARRIERS:
                for r in exchange_internal_records(ev, self.a.knowledge.topic_ids):
                    self.out.write(internal_lines(r))
        elif t is ConnIssue:
            if self.verbose:
                print(f"# {ev.issue.severity}: {ev.issue.code}: {ev.issue.message}", file=self.out)
            elif ev.issue.severity >= Severity.WARNING:
                self.unlisted[ev.issue.code] += 1
        elif t is ConnectionEnd and ev.conn.tls is not None:
            if self.origin is None:
                self.origin = self.a.first_ts
            self.out.write(tls_line(ev.conn, self.origin, self.absolute) + "\n")

    def done(self, outcome: Outcome) -> None:
        if self.unlisted:
            n = sum(self.unlisted.values())
            codes = ", ".join(f"{code} ({k})" for code, k in sorted(self.unlisted.items()))
            print(
                f"kafka-analyzer: warning: {n} connection issue{'s' if n != 1 else ''} between the "
                f"exchanges: {codes}; read -v lists them",
                file=sys.stderr,
            )


def internal_lines(r: InternalRecord) -> str:
    """``read -v``'s lines for a record of an internal topic, under its exchange: where it is and
    its summary, then its key's and value's fields (:class:`~analyzer.dissect.coordinator.\
    CoordinatorRecord`), a tombstone's value named."""
    rec = r.record
    at = f"offset {r.offset}" if r.offset is not None else "offset -"
    out = [f"    {r.topic}[{r.partition}] {at}: {rec.summary}"]
    if rec.key is not None:
        out += _field_lines("key", rec.key, 6)
    if rec.tombstone:
        out.append("      value: null (tombstone)")
    elif rec.value is not None:
        out += _field_lines("value", rec.value, 6)
    out += [f"      # {i.severity}: {i.code}: {i.message}" for i in rec.issues]
    return "\n".join(out) + "\n"


def _field_lines(name: str, f: Field, indent: int) -> list[str]:
    pad = " " * indent
    if f.children is None or (f.type == "bytes" and not f.children):
        v = f.value
        text = v.hex() if isinstance(v, bytes | bytearray | memoryview) else repr(v)
        shown = f" ({f.display})" if f.display is not None and f.display != v else ""
        return [f"{pad}{name}: {text}{shown}"]
    head = f"{pad}{name}:"
    if f.type.startswith("[]"):
        head += f" {f.value} element{'s' if f.value != 1 else ''}" if isinstance(f.value, int) else " null"
    elif f.type == "bytes":
        head += f" {len(f.value or b'')} bytes: {f.display}"
    out = [head]
    for i, c in enumerate(f.children):
        out += _field_lines(f"[{i}]" if f.type.startswith("[]") else c.name, c, indent + 2)
    return out


def run(args) -> int:
    with analysis(args, flt=display_filter(args)) as a:
        outcome = a.run(ReadPrinter(a, sys.stdout, args.verbose, args.absolute))
    return finish(outcome)
