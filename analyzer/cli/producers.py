"""``producers`` and ``transactions``: what the producers of a capture sent and what became of it.

``producers``: each producer (client, producer id) with its batches, retries (each later attempt
and what the one before got), records failed, unanswered or written twice, sequence gaps, epoch
bumps, fencing, batching, and the end-to-end latency of what it wrote. ``transactions``: each
transaction with its outcome, partitions, records and offsets committed, the hanging ones, and
the read_committed consumers held back."""

from __future__ import annotations

import argparse

from analyzer.cli.args import add_capture_args, add_state_args, evictions_text, state_bounds, with_evictions
from analyzer.cli.common import EXIT_USAGE, analysis, finish, fmt_ts, print_json
from analyzer.pipeline import Outcome
from analyzer.session.producer_insights import ProducerInsights, producers_report, transactions_report
from analyzer.session.producer_text import (
    HELD_BACK_TITLE,
    batching_text,
    e2e_text,
    held_back_text,
    offsets_text,
    producer_counts,
    producer_head,
    producer_problems,
    producers_coverage,
    retry_text,
    transaction_text,
    transactions_coverage,
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "producers",
        help="producers: batches, retries, failed and duplicated records, batching, end-to-end latency",
    )
    _common(p)
    p.add_argument("--client", action="append", metavar="CLIENT_ID", help="only this client id (repeatable)")
    p.set_defaults(func=run_producers)
    t = sub.add_parser(
        "transactions", help="transactions: outcome, partitions, records, offsets; hanging ones"
    )
    _common(t)
    t.add_argument(
        "--transactional-id", action="append", metavar="ID", help="only this transactional id (repeatable)"
    )
    t.set_defaults(func=run_transactions)


def _common(p: argparse.ArgumentParser) -> None:
    add_capture_args(p)
    add_state_args(p)
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("-t", "--absolute", action="store_true", help="absolute times (UTC), not from the start")


def _run(args) -> tuple[ProducerInsights, Outcome] | None:
    bounds = state_bounds(args)
    if bounds is None:
        return None
    with analysis(args) as a:
        insights = ProducerInsights(a.knowledge.topic_ids, bounds)
        outcome = a.run(insights)
    return insights, outcome


def run_producers(args) -> int:
    done = _run(args)
    if done is None:
        return EXIT_USAGE
    insights, outcome = done
    report = with_evictions(
        producers_report(insights, set(args.client or ())), insights.evictions(), insights.bounds
    )
    if args.format == "json":
        print_json(report)
        return finish(outcome)
    origin = outcome.first_ts

    def when(ts: float | None) -> str:
        return "-" if ts is None else fmt_ts(ts, origin, args.absolute).strip()

    out = []
    if not report["producers"]:
        named = ", ".join(sorted(args.client or ()))
        out.append(
            f"no producer with client id {named} in the capture" if named else "no producer in the capture"
        )
    for p in report["producers"]:
        out.append(producer_head(p))
        out.append("  " + producer_counts(p, when))
        out.append("  " + producer_problems(p))
        out.append("  " + batching_text(p))
    if report["retries"]:
        out.append("")
        out.append(f"retries ({report['retries_seen']}):")
        for r in report["retries"]:
            out.append("  " + retry_text(r, when))
    if report["e2e"]:
        out.append("")
        out.append("end-to-end latency (Produce request to Fetch answer):")
        for e in report["e2e"]:
            out.append("  " + e2e_text(e))
    if report["producers"]:
        out.append("")
        out.append(f"coverage: {producers_coverage(report)}")
    out.extend(evictions_text(report))
    print("\n".join(out))
    return finish(outcome)


def run_transactions(args) -> int:
    done = _run(args)
    if done is None:
        return EXIT_USAGE
    insights, outcome = done
    now = outcome.last_ts if outcome.packets else None
    report = transactions_report(insights, now, set(args.transactional_id or ()))
    with_evictions(report, insights.evictions(), insights.bounds)
    if args.format == "json":
        print_json(report)
        return finish(outcome)
    origin = outcome.first_ts

    def when(ts: float | None) -> str:
        return "-" if ts is None else fmt_ts(ts, origin, args.absolute).strip()

    out = []
    if not report["transactions"]:
        out.append("no transaction in the capture")
    for x in report["transactions"]:
        out.append(transaction_text(x, when))
        for o in x["offsets_committed"]:
            out.append(f"      offsets: {offsets_text(o)}")
    if report["held_back"]:
        out.append("")
        out.append(f"{HELD_BACK_TITLE}:")
        for h in report["held_back"]:
            out.append("  " + held_back_text(h))
    if report["transactions"]:
        out.append("")
        out.append(f"coverage: {transactions_coverage(report)}")
    out.extend(evictions_text(report))
    print("\n".join(out))
    return finish(outcome)
