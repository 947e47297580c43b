"""``read``: one line per request/response exchange (and per TLS connection at its end)."""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from analyzer.cli.args import add_capture_args, add_filter_args
from analyzer.cli.common import analysis, display_filter, exchange_line, finish, tls_line
from analyzer.events import ConnectionEnd, ConnIssue
from analyzer.model import Exchange, Severity
from analyzer.pipeline import Analysis, Outcome


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


def run(args) -> int:
    with analysis(args, flt=display_filter(args)) as a:
        outcome = a.run(ReadPrinter(a, sys.stdout, args.verbose, args.absolute))
    return finish(outcome)
