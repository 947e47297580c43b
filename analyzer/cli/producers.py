"""``producers`` and ``transactions``: what the producers of a capture sent and what became of it.

``producers``: each producer (client, producer id) with its batches, retries (each later attempt
and what the one before got), records failed, unanswered or written twice, sequence gaps, epoch
bumps, fencing, batching, and the end-to-end latency of what it wrote. ``transactions``: each
transaction with its outcome, partitions, records and offsets committed, the hanging ones, and
the read_committed consumers held back."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from analyzer.cli.args import add_capture_args
from analyzer.cli.common import analysis, finish, fmt_ts, print_json
from analyzer.pipeline import Outcome
from analyzer.session.producer_insights import ProducerInsights


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
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("-t", "--absolute", action="store_true", help="absolute times (UTC), not from the start")


def _run(args) -> tuple[ProducerInsights, Outcome]:
    with analysis(args) as a:
        insights = ProducerInsights(a.knowledge.topic_ids)
        outcome = a.run(insights)
    return insights, outcome


def producers_report(insights: ProducerInsights, wanted: set[str]) -> dict:
    rows = [r for r in insights.producers.rows() if not wanted or r["client_id"] in wanted]
    clients = {(r["client_id"], r["client"]) for r in rows}
    retries = sorted(insights.producers.retries, key=lambda r: (r["later"]["time"], r["first"]["time"]))
    e2e = [r for r in insights.e2e.rows() if not wanted or r["producer_client"].split("@")[0] in wanted]
    return {
        "producers": rows,
        "retries": [r for r in retries if (r["client_id"], r["client"]) in clients],
        "retries_seen": insights.producers.retry_count,
        "e2e": e2e,
        "e2e_coverage": insights.coverage(),
    }


def run_producers(args) -> int:
    insights, outcome = _run(args)
    report = producers_report(insights, set(args.client or ()))
    if args.format == "json":
        print_json(report)
        return finish(outcome)
    origin = outcome.first_ts

    def when(ts: float | None) -> str:
        return "-" if ts is None else fmt_ts(ts, origin, args.absolute).strip()

    out = []
    if not report["producers"]:
        out.append("no producer in the capture")
    for p in report["producers"]:
        ident = (
            f"producer id {p['producer_id']} epoch {p['producer_epoch']}"
            if p["idempotent"]
            else "not idempotent"
        )
        txn = f", transactional id {p['transactional_id']}" if p["transactional_id"] else ""
        out.append(f"producer {p['client_id'] or '-'} {p['client']} ({ident}{txn})")
        out.append(
            f"  {p['batches']} batches, {p['records']} records, {p['bytes']} bytes in {p['requests']} "
            f"requests ({when(p['first'])} to {when(p['last'])})"
        )
        problems = [
            (p["retried_records"], "records sent again"),
            (p["failed_records"], "records failed (last attempt refused, none written: lost unless resent)"),
            (p["unanswered_records"], "records without an answer in the capture"),
            (p["duplicates_written"], "records written twice"),
            (p["sequence_gaps"], "sequence gaps"),
            (p["epoch_bumps"], "epoch bumps"),
            (p["fenced"], "answers fencing it"),
        ]
        said = [f"{n} {what}" for n, what in problems if n]
        out.append("  " + ("; ".join(said) if said else "every batch written once, at the first attempt"))
        codecs = ", ".join(f"{c} {n}" for c, n in p["codecs"].items())
        per = "-" if p["records_per_batch"] is None else f"{p['records_per_batch']:g}"
        linger = "-" if p["linger_ms"] is None else f"{p['linger_ms']:.1f} ms"
        rate = "-" if p["requests_per_s"] is None else f"{p['requests_per_s']:.1f}"
        out.append(
            f"  batching: {per} records per batch (median), {linger} between a partition's batches, "
            f"{rate} requests/s; codecs {codecs or '-'}"
            + (
                f" (records x{p['compression_ratio']:g} decompressed, measured on"
                f" {p['compression_batches']} of {sum(n for c, n in p['codecs'].items() if c != 'none')}"
                " compressed batches)"
                if p["compression_ratio"]
                else ""
            )
            + (
                "; UNDER-BATCHED (many one-record batches at a steady rate: raise linger.ms)"
                if p["under_batched"]
                else ""
            )
        )
    if report["retries"]:
        out.append("")
        out.append(f"retries ({report['retries_seen']}):")
        for r in report["retries"]:
            out.append("  " + retry_text(r, when))
    if report["e2e"]:
        out.append("")
        out.append("end-to-end latency (Produce request to Fetch answer):")
        for e in report["e2e"]:
            ts = e["timestamp"]
            extra = (
                ""
                if ts is None
                else f"; from record timestamps p50 {ts['p50_ms']:.1f} ms, max {ts['max_ms']:.1f} ms"
            )
            out.append(
                f"  {e['topic']}[{e['partition']}] {e['producer_client']} -> {e['consumer_client']}"
                f" ({e['group'] or 'no group'}): {e['count']} records, p50 {e['p50_ms']:.1f} ms, "
                f"p99 {e['p99_ms']:.1f} ms, max {e['max_ms']:.1f} ms{extra}"
            )
        out.append(f"  coverage: {report['e2e_coverage']}")
    print("\n".join(out))
    return finish(outcome)


def retry_text(r: dict, when: Callable[[float | None], str]) -> str:
    """A ``retry`` row (the export's) as ``producers`` says it (``when``: a time as text)."""
    f, later = r["first"], r["later"]
    return (
        f"{when(later['time'])}  {r['client_id'] or '-'} {r['topic']}[{r['partition']}] "
        f"{r['records']} records, attempt {r['attempt']} after {r['error']}; first sent "
        f"{when(f['time'])} ({f['connection']} corr {f['correlation_id']}), again on "
        f"{later['connection']} corr {later['correlation_id']}"
    )


def transaction_text(x: dict, when: Callable[[float | None], str]) -> str:
    """A ``transaction`` row (the export's) as ``transactions`` says it, without its offsets."""
    dur = "" if x["duration_ms"] is None else f" {x['duration_ms']:.1f} ms"
    err = f" ({x['error']})" if x["error"] else ""
    state = x["outcome"].upper() if x["outcome"] in ("hanging", "open") else x["outcome"]
    limit = (
        f" (timeout {x['timeout_ms']} ms)" if x["outcome"] in ("hanging", "open") and x["timeout_ms"] else ""
    )
    parts = " ".join(f"{p['topic']}[{p['partition']}]" for p in x["partitions"]) or "-"
    return (
        f"{when(x['start'])}  {x['transactional_id']} pid {x['producer_id']} epoch "
        f"{x['producer_epoch']}: {state}{err}{dur}{limit}; {x['records']} records to {parts}"
    )


def transactions_report(insights: ProducerInsights, now: float | None, wanted: set[str]) -> dict:
    txns = [x for x in insights.txns.transactions(now) if not wanted or x["transactional_id"] in wanted]
    return {
        "transactions": txns,
        "finished_seen": insights.txns.finished,
        "held_back": insights.txns.held_back(),
    }


def run_transactions(args) -> int:
    insights, outcome = _run(args)
    now = outcome.last_ts if outcome.packets else None
    report = transactions_report(insights, now, set(args.transactional_id or ()))
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
            out.append(f"      offsets: group {o['group']} {o['topic']}[{o['partition']}] -> {o['offset']}")
    if report["held_back"]:
        out.append("")
        out.append("read_committed consumers held back (last stable offset behind the high watermark):")
        for h in report["held_back"]:
            grow = ", growing" if h["growing"] else ""
            out.append(
                f"  {h['client_id'] or '-'} {h['client']} {h['topic']}[{h['partition']}]: up to "
                f"{h['max_held_back']} records, {h['last_held_back']} at the last of {h['fetches']} "
                f"fetches{grow}"
            )
    print("\n".join(out))
    return finish(outcome)
