"""The producers and the transactions in words, as the ``producers`` and ``transactions``
commands print them, the live feed tells them and the TUI's producers and transactions views
show them (one text for all): a producer's head, what became of its records, its batching; a
retry; a transaction; a read_committed consumer held back; an end-to-end latency row; and what
the capture could not see (coverage). Rows are the export's objects
(:meth:`~analyzer.session.producer_insights.ProducerInsights.objects`); ``when`` makes a time
text (the command's ``-t``, the view's offset from the first packet)."""

from __future__ import annotations

from collections.abc import Callable

from analyzer.session.transactions import DEFAULT_TIMEOUT_MS

When = Callable[[float | None], str]


def producer_head(p: dict) -> str:
    """``producer CLIENT_ID ADDRESS (producer id N epoch E, transactional id T)``."""
    ident = (
        f"producer id {p['producer_id']} epoch {p['producer_epoch']}" if p["idempotent"] else "not idempotent"
    )
    txn = f", transactional id {p['transactional_id']}" if p["transactional_id"] else ""
    return f"producer {p['client_id'] or '-'} {p['client']} ({ident}{txn})"


def producer_counts(p: dict, when: When) -> str:
    """Its batches, records, bytes and requests, first to last."""
    return (
        f"{p['batches']} batches, {p['records']} records, {p['bytes']} bytes in {p['requests']} "
        f"requests ({when(p['first'])} to {when(p['last'])})"
    )


def producer_problems(p: dict) -> str:
    """What became of its records: sent again, failed, unanswered, written twice; sequence
    gaps, epoch bumps, fencing (or that every batch was written once)."""
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
    return "; ".join(said) if said else "every batch written once, at the first attempt"


def batching_text(p: dict) -> str:
    """``batching: ...``: records per batch, linger, requests/s, codecs and compression ratio,
    and the under-batched flag."""
    codecs = ", ".join(f"{c} {n}" for c, n in p["codecs"].items())
    per = "-" if p["records_per_batch"] is None else f"{p['records_per_batch']:g}"
    linger = "-" if p["linger_ms"] is None else f"{p['linger_ms']:.1f} ms"
    rate = "-" if p["requests_per_s"] is None else f"{p['requests_per_s']:.1f}"
    return (
        f"batching: {per} records per batch (median), {linger} between a partition's batches, "
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


def retry_text(r: dict, when: When) -> str:
    """A ``retry`` row as ``producers`` says it."""
    f, later = r["first"], r["later"]
    return (
        f"{when(later['time'])}  {r['client_id'] or '-'} {r['topic']}[{r['partition']}] "
        f"{r['records']} records, attempt {r['attempt']} after {r['error']}; first sent "
        f"{when(f['time'])} ({f['connection']} corr {f['correlation_id']}), again on "
        f"{later['connection']} corr {later['correlation_id']}"
    )


def e2e_text(e: dict) -> str:
    """An ``e2e`` row: a partition's producer -> consumer latency percentiles."""
    ts = e["timestamp"]
    extra = (
        "" if ts is None else f"; from record timestamps p50 {ts['p50_ms']:.1f} ms, max {ts['max_ms']:.1f} ms"
    )
    return (
        f"{e['topic']}[{e['partition']}] {e['producer_client']} -> {e['consumer_client']}"
        f" ({e['group'] or 'no group'}): {e['count']} records, p50 {e['p50_ms']:.1f} ms, "
        f"p99 {e['p99_ms']:.1f} ms, max {e['max_ms']:.1f} ms{extra}"
    )


def transaction_text(x: dict, when: When) -> str:
    """A ``transaction`` row as ``transactions`` says it, without its offsets."""
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


def offsets_text(o: dict) -> str:
    """One offset a transaction committed (TxnOffsetCommit)."""
    return f"group {o['group']} {o['topic']}[{o['partition']}] -> {o['offset']}"


def held_back_text(h: dict) -> str:
    """A ``held_back`` row: a read_committed consumer's partition behind its high watermark."""
    grow = ", growing" if h["growing"] else ""
    return (
        f"{h['client_id'] or '-'} {h['client']} {h['topic']}[{h['partition']}]: up to "
        f"{h['max_held_back']} records, {h['last_held_back']} at the last of {h['fetches']} "
        f"fetches{grow}"
    )


HELD_BACK_TITLE = "read_committed consumers held back (last stable offset behind the high watermark)"


# -- what the capture could not see --------------------------------------------------------------------


def producers_coverage(report: dict) -> str:
    """What the producers' figures could not see (``report``:
    :func:`~analyzer.session.producer_insights.producers_report`'s): a
    batch first sent before the capture counts its first attempt seen as its first, records
    whose last attempt got no answer in the capture (their outcome unknown), retries let go to
    stay bounded, and the end-to-end latencies' own coverage."""
    parts = ["a batch first sent before the capture starts at its first attempt seen"]
    unanswered = sum(p["unanswered_records"] for p in report["producers"])
    if unanswered:
        parts.append(
            f"{unanswered} records whose last attempt had no answer in the capture (outcome unknown)"
        )
    if report["retries_dropped"]:
        parts.append(f"{report['retries_dropped']} older retries let go to stay bounded")
    if report["e2e"]:
        parts.append(f"end-to-end: {report['e2e_coverage']}")
    return "; ".join(parts)


def transactions_coverage(report: dict) -> str:
    """What the transactions could not see (``report``:
    :func:`~analyzer.session.producer_insights.transactions_report`'s): one
    begun before the capture is not listed (its EndTxn alone says nothing of it), a timeout
    the capture did not show (no InitProducerId) is taken as the clients' default, and the
    transactions let go to stay bounded."""
    parts = ["a transaction begun before the capture is not listed"]
    guessed = sum(1 for x in report["transactions"] if x["timeout_ms"] is None)
    if guessed:
        parts.append(
            f"{guessed} without their InitProducerId in the capture: hanging judged on the clients' "
            f"default timeout ({DEFAULT_TIMEOUT_MS // 1000} s)"
        )
    if report["finished_dropped"]:
        parts.append(f"{report['finished_dropped']} older finished transactions let go to stay bounded")
    if report["open_dropped"]:
        parts.append(f"{report['open_dropped']} open transactions let go")
    return "; ".join(parts)
