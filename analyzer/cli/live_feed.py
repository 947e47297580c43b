"""``live``'s insights (:class:`~analyzer.session.live_feed.InsightFeed`): a line (``--mode
read``) when a rebalance starts, when it ends and when a group's Burrow status changes; when a
producer's batch is retried, its records lost or written twice; when a transaction ends or goes
past its timeout; when a client first shows a readiness problem or a hygiene finding. The
export's objects (``--mode export``)."""

from __future__ import annotations

import sys
from collections.abc import Callable

from analyzer.cli.common import fmt_ts
from analyzer.session.bounded import DEFAULT_BOUNDS, Bounds
from analyzer.session.insights import OBJECT_TYPES
from analyzer.session.live_feed import InsightFeed
from analyzer.session.producer_text import retry_text, transaction_text

LINE_KINDS = (
    "rebalance_start",
    "rebalance_end",
    "consumer_status",
    "retry",
    "lost",
    "duplicated",
    "transaction",
    "hanging",
    "client_problem",
)


def rebalance_line(r: dict, origin: float | None, absolute: bool) -> str:
    """A rebalance's end: ``r`` is a ``rebalance`` row (the export's, ``groups --format json``'s)."""
    when = fmt_ts(r["end"] if r["end"] is not None else r["start"], origin, absolute)
    before = "-" if r["generation_before"] is None else r["generation_before"]
    if r["generation_after"] is None:
        head = f"rebalance unfinished ({r['protocol']}): generation {before} -> -"
    else:
        head = (
            f"rebalance ended ({r['protocol']}): generation {before} -> {r['generation_after']}  "
            f"{r['duration_ms']:.1f} ms (join {r['join_ms']:.1f}, sync {r['sync_ms']:.1f})"
        )
    parts = [f"{when}  group {r['group']}  {head}", f"cause: {r['cause']}"]
    parts += [f"{k}: {', '.join(r[k])}" for k in ("joined", "left", "evicted") if r[k]]
    if r["straggler"] and len(r["members_after"]) > 1:
        parts.append(f"last to join: {r['straggler']}")
    return "  ".join(parts)


def start_line(s: dict, origin: float | None, absolute: bool) -> str:
    before = "-" if s["generation_before"] is None else s["generation_before"]
    return (
        f"{fmt_ts(s['start'], origin, absolute)}  group {s['group']}  rebalance started "
        f"({s['protocol']}): generation {before} -> ?  cause so far: {s['cause']}"
    )


def status_line(s: dict, origin: float | None, absolute: bool) -> str:
    """A ``consumer_status`` object: the group's status and each partition's, lag, lag in seconds."""
    parts = []
    for p in s["partitions"]:
        lag = "-" if p["lag"] is None else p["lag"]
        secs = "-" if p["lag_seconds"] is None else f"{p['lag_seconds']:.3f} s"
        parts.append(f"{p['topic']}[{p['partition']}] {p['status']} lag {lag} {secs}")
    return (
        f"{fmt_ts(s['time'], origin, absolute)}  group {s['group']}  status {s['status']} "
        f"(windows complete {s['complete']:.0%}): {', '.join(parts)}"
    )


def producer_line(kind: str, obj: dict, origin: float | None, absolute: bool) -> str | None:
    """A producer's or a transaction's news as a line."""

    def when(ts: float | None) -> str:
        return "-" if ts is None else fmt_ts(ts, origin, absolute).strip()

    if kind == "retry":
        at, rest = retry_text(obj, when).split("  ", 1)
        return f"{at}  producer retry  {rest}"
    if kind == "transaction" and obj["outcome"] in ("commit", "abort"):
        offsets = ", ".join(
            f"group {o['group']} {o['topic']}[{o['partition']}] -> {o['offset']}"
            for o in obj["offsets_committed"]
        )
        tail = f"; offsets: {offsets}" if offsets else ""
        return f"{when(obj['end'])}  transaction ended  {transaction_text(obj, when)}{tail}"
    if kind == "hanging":
        return f"{when(obj['time'])}  transaction HANGING  {transaction_text(obj, when)}"
    who = f"producer {obj.get('client_id') or '-'} {obj.get('client')}"
    where = f"{obj.get('topic')}[{obj.get('partition')}]"
    if kind == "lost":
        return (
            f"{when(obj['time'])}  {who} {where}: {obj['records']} records LOST (the last of "
            f"{obj['attempts']} attempts got {obj['error']}; none written: lost unless the application "
            "resent them)"
        )
    if kind == "duplicated":
        offsets = ", ".join(str(o) for o in obj["offsets"])
        return (
            f"{when(obj['time'])}  {who} {where}: {obj['records']} records WRITTEN TWICE "
            f"(at offsets {offsets})"
        )
    return None


def client_line(obj: dict, origin: float | None, absolute: bool) -> str:
    return (
        f"{fmt_ts(obj['time'], origin, absolute)}  client {obj['client_id'] or '-'} {obj['client']} "
        f"({obj['software']}) {obj['kind']}: {obj['problem']}"
    )


def feed_line(kind: str, obj: dict, origin: float | None, absolute: bool) -> str | None:
    """What ``--mode read`` prints of what the feed tells (None: nothing)."""
    if kind == "rebalance_start":
        return start_line(obj, origin, absolute)
    if kind == "rebalance_end":
        return rebalance_line(obj, origin, absolute)
    if kind == "consumer_status":
        return status_line(obj, origin, absolute)
    if kind == "client_problem":
        return client_line(obj, origin, absolute)
    return producer_line(kind, obj, origin, absolute)


def insight_feed(
    mode: str,
    writer,
    origin: Callable[[], float | None],
    absolute: bool,
    topic_ids=None,
    bounds: Bounds = DEFAULT_BOUNDS,
) -> InsightFeed | None:
    """The feed of ``live``'s mode: lines printed (``read``; ``origin()``: the zero of relative
    times), objects written (``export``); None for ``stats``. ``bounds``: its tables'."""
    if mode == "read":

        def say(kind: str, obj: dict) -> None:
            if kind in LINE_KINDS:
                line = feed_line(kind, obj, origin(), absolute)
                if line is not None:
                    print(line, flush=True)

        return InsightFeed(say, topic_ids, final_all=False, bounds=bounds)
    if mode == "export" and writer is not None:

        def write(kind: str, obj: dict) -> None:
            if kind in OBJECT_TYPES:
                writer.objects([obj])
                sys.stdout.buffer.flush()

        return InsightFeed(write, topic_ids, final_all=True, bounds=bounds)
    return None


def say_evictions(rows: list[dict]) -> None:
    """Tell on stderr what the long-lived tables let go (the report's ``evictions`` rows)."""
    for r in rows:
        print(f"kafka-analyzer: bounded: {r['said']}", file=sys.stderr)


def say_bounds(feed: InsightFeed, late: int = 0, delay: float | None = None) -> None:
    """Tell on stderr what the insights' tables let go (to stay bounded) and what came too late."""
    dropped = {k: v for k, v in feed.dropped().items() if v}
    if dropped:
        what = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in dropped.items())
        print(
            f"kafka-analyzer: insights: the oldest let go to stay bounded (each group keeps its last "
            f"{feed.keep} rebalances, generations and lag rows; {feed.keep} transactions, clients and "
            f"edges are kept): {what}",
            file=sys.stderr,
        )
    if late:
        print(
            f"kafka-analyzer: insights: {late} exchanges reached the insights more than "
            f"{delay} s of capture time after later ones (a worker behind): taken out of capture order",
            file=sys.stderr,
        )
