"""What the producers and transactions views show (of
:meth:`~analyzer.tui.session.Session.producer_report` and
:meth:`~analyzer.tui.session.Session.transaction_report`), as table rows and texts: one row per
producer, its retries, one row per transaction, the read_committed consumers held back. The
sentences are the ``producers`` and ``transactions`` commands'
(:mod:`analyzer.session.producer_text`). No Textual here."""

from __future__ import annotations

from rich.text import Text

from analyzer.session.producer_text import (
    batching_text,
    held_back_text,
    offsets_text,
    producer_counts,
    producer_head,
    producer_problems,
    retry_text,
    transaction_text,
)
from analyzer.tui.group_text import since

# (the figures first: at 80 columns the long names would push them out of sight)
PRODUCER_COLUMNS = [
    "pid/epoch",
    "records",
    "retried",
    "failed",
    "dup",
    "unanswered",
    "gaps",
    "fenced",
    "batches",
    "idem",
    "client_id",
    "transactional_id",
    "rec/batch",
    "linger_ms",
    "req/s",
    "codecs",
    "ratio",
    "client",
]
RETRY_COLUMNS = ["time", "first #", "later #", "attempt", "error", "partition", "records", "first at"]
TRANSACTION_COLUMNS = [
    "start",
    "outcome",
    "ms",
    "records",
    "first #",
    "end #",
    "transactional_id",
    "pid/epoch",
    "partitions",
    "offsets",
]
OUTCOME_STYLE = {"commit": "green", "abort": "yellow", "hanging": "bold red", "open": "cyan"}


def when_text(origin: float | None):
    """A time as the views say it in sentences: seconds from the capture's start."""

    def when(ts: float | None) -> str:
        s = since(ts, origin)
        return "-" if s is None else f"{s:.3f}"

    return when


def _pid(pid: int | None, epoch: int | None) -> str:
    if pid is None or pid < 0:
        return "-"
    return f"{pid}/{'?' if epoch is None else epoch}"


def _number(row: int | None) -> int | str:
    """An exchange's number in the list (``#``), or ``-`` when the list does not keep it."""
    return "-" if row is None else row + 1


def producer_rows(producers: list[dict]) -> list[dict]:
    """One row per producer (the ``producer`` objects, in their order)."""
    out = []
    for p in producers:
        out.append(
            {
                "client_id": p["client_id"] or "-",
                "pid/epoch": _pid(p["producer_id"], p["producer_epoch"]),
                "transactional_id": p["transactional_id"],
                "idem": "yes" if p["idempotent"] else "no",
                "batches": p["batches"],
                "records": p["records"],
                "retried": p["retried_records"],
                "failed": p["failed_records"],
                "unanswered": p["unanswered_records"],
                "dup": p["duplicates_written"],
                "gaps": p["sequence_gaps"],
                "fenced": p["fenced"],
                "rec/batch": p["records_per_batch"],
                "linger_ms": p["linger_ms"],
                "req/s": p["requests_per_s"],
                "codecs": ",".join(p["codecs"]),
                "ratio": p["compression_ratio"],
                "client": p["client"],
            }
        )
    return out


def retries_of(report: dict, p: dict) -> list[dict]:
    """The ``retry`` rows of producer ``p`` (in the order of their later attempt)."""
    return [r for r in report["retries"] if r["client_id"] == p["client_id"] and r["client"] == p["client"]]


def retry_rows(retries: list[dict], sent: list[int | None], origin: float | None) -> list[dict]:
    """One row per retry; ``sent``: the rows of each one's first and later attempt, in turn."""
    out = []
    for i, r in enumerate(retries):
        first, later = sent[2 * i], sent[2 * i + 1]
        out.append(
            {
                "time": since(r["later"]["time"], origin),
                "partition": f"{r['topic']}[{r['partition']}]",
                "records": r["records"],
                "attempt": r["attempt"],
                "error": r["error"],
                "first #": _number(first),
                "first at": since(r["first"]["time"], origin),
                "later #": _number(later),
            }
        )
    return out


def producer_detail(p: dict, origin: float | None) -> Text:
    """A producer in the ``producers`` command's words: its head, counts, what became of its
    records, its batching."""
    when = when_text(origin)
    t = Text(producer_head(p), style="bold")
    t.append("\n" + producer_counts(p, when))
    problems = producer_problems(p)
    bad = any(p[k] for k in ("failed_records", "duplicates_written", "fenced", "sequence_gaps"))
    t.append("\n" + problems, style="red" if bad else ("yellow" if p["retried_records"] else ""))
    t.append("\n" + batching_text(p), style="yellow" if p["under_batched"] else "")
    return t


def retry_detail(r: dict, origin: float | None) -> Text:
    """A retry as ``producers`` says it, and what enter and ``l`` do."""
    t = Text(retry_text(r, when_text(origin)))
    t.append("   enter: its first attempt, l: this later attempt", style="dim")
    return t


def transaction_rows(report: dict, origin: float | None) -> list[dict]:
    """One row per transaction (in the order they began)."""
    out = []
    for x, (first, end) in zip(report["transactions"], report["rows"], strict=True):
        out.append(
            {
                "start": since(x["start"], origin),
                "transactional_id": x["transactional_id"],
                "pid/epoch": _pid(x["producer_id"], x["producer_epoch"]),
                "outcome": x["outcome"] + (f" ({x['error']})" if x["error"] else ""),
                "ms": x["duration_ms"],
                "records": x["records"],
                "partitions": " ".join(f"{p['topic']}[{p['partition']}]" for p in x["partitions"]) or "-",
                "offsets": len(x["offsets_committed"]),
                "first #": _number(first),
                "end #": _number(end),
            }
        )
    return out


def transaction_detail(x: dict, origin: float | None) -> Text:
    """A transaction as ``transactions`` says it, with the offsets it committed."""
    t = Text(transaction_text(x, when_text(origin)), style=OUTCOME_STYLE.get(x["outcome"], ""))
    for o in x["offsets_committed"]:
        t.append("\n  offsets: " + offsets_text(o))
    t.append("\nenter: its first exchange, e: its EndTxn", style="dim")
    return t


def held_back_lines(held: list[dict]) -> list[str]:
    return [held_back_text(h) for h in held]
