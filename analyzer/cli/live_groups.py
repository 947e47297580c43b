"""``live``'s consumer groups (:class:`~analyzer.session.live_groups.GroupFeed`): a line when a
rebalance starts, when it ends and when a group's Burrow status changes (``--mode read``), the
export's objects (``--mode export``)."""

from __future__ import annotations

import sys
from collections.abc import Callable

from analyzer.cli.common import fmt_ts
from analyzer.session.insights import GROUP_TYPES
from analyzer.session.live_groups import GroupFeed

LINE_KINDS = ("rebalance_start", "rebalance_end", "consumer_status")


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


def group_line(kind: str, obj: dict, origin: float | None, absolute: bool) -> str | None:
    if kind == "rebalance_start":
        return start_line(obj, origin, absolute)
    if kind == "rebalance_end":
        return rebalance_line(obj, origin, absolute)
    if kind == "consumer_status":
        return status_line(obj, origin, absolute)
    return None


def group_feed(
    mode: str, writer, origin: Callable[[], float | None], absolute: bool, topic_ids=None
) -> GroupFeed | None:
    """The feed of ``live``'s mode: lines printed (``read``; ``origin()``: the zero of relative
    times), objects written (``export``); None for ``stats``."""
    if mode == "read":

        def say(kind: str, obj: dict) -> None:
            line = group_line(kind, obj, origin(), absolute)
            if line is not None:
                print(line, flush=True)

        return GroupFeed(say, topic_ids, final_all=False)
    if mode == "export" and writer is not None:

        def write(kind: str, obj: dict) -> None:
            if kind in GROUP_TYPES:
                writer.objects([obj])
                sys.stdout.buffer.flush()

        return GroupFeed(write, topic_ids, final_all=True)
    return None


def say_bounds(feed: GroupFeed, late: int = 0, delay: float | None = None) -> None:
    """Tell on stderr what the groups' tables let go (to stay bounded) and what came too late."""
    dropped = {k: v for k, v in feed.dropped().items() if v}
    if dropped:
        what = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in dropped.items())
        print(
            f"kafka-analyzer: consumer groups: the oldest let go (each group keeps its last "
            f"{feed.insights.groups.keep}): {what}",
            file=sys.stderr,
        )
    if late:
        print(
            f"kafka-analyzer: consumer groups: {late} exchanges reached the groups more than "
            f"{delay} s of capture time after later ones (a worker behind): taken out of capture order",
            file=sys.stderr,
        )
