"""What the groups view shows of one group (a group of
:meth:`~analyzer.session.insights.GroupInsights.report`), as table rows and texts: its
rebalances, generations and members, its partitions' Burrow status and lag, their lag over
time. No Textual here."""

from __future__ import annotations

from rich.text import Text

REBALANCE_COLUMNS = ["#", "start", "ms", "gen", "joined", "left", "evicted", "cause"]
GENERATION_COLUMNS = ["generation", "time", "protocol", "members", "leader"]
MEMBER_COLUMNS = ["member_id", "assignment", "client_id", "client", "instance_id"]
PARTITION_COLUMNS = ["topic", "partition", "status", "lag", "lag_s", "commits", "last_commit"]

STATUS_STYLE = {"OK": "green", "WARN": "yellow", "ERR": "bold red", "STOP": "bold red"}


def since(ts: float | None, origin: float | None) -> float | None:
    """A time as the view shows it: seconds from the capture's start."""
    if ts is None:
        return None
    return round(ts - origin, 3) if origin is not None else ts


def _gens(before: int | None, after: int | None) -> str:
    b = "?" if before is None else str(before)
    return f"{b}->{'…' if after is None else after}"


def assignment_text(assignment: dict[str, list[int]]) -> str:
    return " ".join(f"{t}{ps}".replace(" ", "") for t, ps in assignment.items()) or "(nothing)"


def rebalance_rows(group: dict, origin: float | None) -> list[dict]:
    """One row per rebalance, in time order."""
    return [
        {
            "#": i + 1,
            "start": since(r["start"], origin),
            "ms": r["duration_ms"],
            "gen": _gens(r["generation_before"], r["generation_after"]),
            "cause": r["cause"],
            "joined": len(r["joined"]),
            "left": len(r["left"]),
            "evicted": len(r["evicted"]),
        }
        for i, r in enumerate(group["rebalances"])
    ]


def rebalance_detail(group: dict, i: int, origin: float | None) -> Text:
    """Everything about rebalance ``i``: phases, cause, who joined, left or was evicted, the
    straggler, the pauses."""
    r = group["rebalances"][i]
    t = Text()
    after = r["generation_after"]
    t.append(
        f"rebalance {i + 1}: generation {_gens(r['generation_before'], after)} ({r['protocol']})",
        style="bold",
    )
    t.append(f" at {since(r['start'], origin):.3f}s")
    if r["duration_ms"] is not None:
        t.append(f", {r['duration_ms']:.1f} ms")
        if r["join_ms"] is not None and r["sync_ms"] is not None:
            t.append(f" (join {r['join_ms']:.1f}, sync {r['sync_ms']:.1f})")
    else:
        t.append(", unfinished in the capture", style="yellow")
    t.append(f"\ncause: {r['cause']}")
    for key in ("joined", "left", "evicted"):
        if r[key]:
            t.append(f"\n{key}: {', '.join(r[key])}", style="red" if key == "evicted" else "")
    if r["straggler"]:
        t.append(f"\nlast to join: {r['straggler']}")
    t.append(f"\nmembers {len(r['members_before'])} -> {len(r['members_after'])}")
    if r.get("pause_ms") is not None:
        t.append(f", longest partition pause {r['pause_ms']:.1f} ms")
    t.append("   enter: its exchanges", style="dim")
    return t


def generation_rows(group: dict, origin: float | None) -> list[dict]:
    return [
        {
            "generation": g["generation"],
            "time": since(g["time"], origin),
            "protocol": ", ".join(x for x in (g["protocol_type"], g["protocol_name"]) if x) or None,
            "members": len(g["members"]),
            "leader": g["leader"],
        }
        for g in group["generations"]
    ]


def member_rows(generation: dict) -> list[dict]:
    return [
        {
            "member_id": m["member_id"],
            "client_id": m["client_id"],
            "client": m["client"],
            "instance_id": m["instance_id"],
            "assignment": assignment_text(m["assignment"]),
        }
        for m in generation["members"]
    ]


def partition_rows(group: dict, origin: float | None) -> list[dict]:
    """Burrow's status, lag and lag in seconds per partition (at the capture's end), with its
    commits seen."""
    st = group["status"]
    commits: dict[tuple[str, int], list[dict]] = {}
    for r in group["lag"]:
        commits.setdefault((r["topic"], r["partition"]), []).append(r)
    rows = []
    for p in st["partitions"] if st is not None else []:
        seen = commits.get((p["topic"], p["partition"]), [])
        rows.append(
            {
                "topic": p["topic"],
                "partition": p["partition"],
                "status": p["status"],
                "lag": p["lag"],
                "lag_s": None if p["lag_seconds"] is None else round(p["lag_seconds"], 3),
                "commits": len(seen),
                "last_commit": since(seen[-1]["time"], origin) if seen else None,
            }
        )
    return rows


def lag_points(group: dict, topic: str, partition: int, seconds: bool = False) -> list[tuple[float, float]]:
    """A partition's lag (or lag in seconds) at each of its group's commits with a known end."""
    key = "lag_seconds" if seconds else "lag"
    return [
        (r["time"], r[key])
        for r in group["lag"]
        if r["topic"] == topic and r["partition"] == partition and r[key] is not None
    ]


def status_text(group: dict) -> Text:
    """The group's Burrow status line."""
    st = group["status"]
    t = Text()
    if st is None:
        t.append("no commit seen: no lag, no status", style="dim")
        return t
    t.append("Burrow: ")
    judged = (
        st["status"] if st["status"] != "NOTFOUND" else "no judgement (no commit with a known end offset)"
    )
    t.append(judged, style=STATUS_STYLE.get(st["status"], "bold"))
    t.append(f", windows complete {st['complete']:.0%}")
    return t


def coverage_text(group: dict) -> Text:
    """What the capture saw of the group: its generations, its partitions' end offsets."""
    parts = [group["coverage"]]
    if group["status"] is not None:
        parts.append(group["status"]["coverage"])
    t = Text("coverage: ", style="dim")
    t.append("; ".join(parts), style="yellow" if any(p.startswith(("partial", "no ")) for p in parts) else "")
    return t


def head_text(group: dict, n: int, of: int) -> Text:
    """``group 1/3 NAME (consumer, range; classic protocol)  OK  max lag 5``."""
    t = Text()
    t.append(f"group {n}/{of} ", style="dim")
    t.append(group["group"], style="bold")
    proto = ", ".join(x for x in (group["protocol_type"], group["protocol_name"]) if x)
    if group["protocol"]:
        t.append(f" ({group['protocol']}: {proto})" if proto else f" ({group['protocol']})")
    st = group["status"]
    if st is not None:
        t.append("  ")
        t.append(st["status"], style=STATUS_STYLE.get(st["status"], "bold"))
        lags = [p["lag"] for p in st["partitions"] if p["lag"] is not None]
        if lags:
            t.append(f" max lag {max(lags)}")
    rebs = len(group["rebalances"])
    t.append(f"  {rebs} rebalance{'s' if rebs != 1 else ''}")
    if group["avoided_rebalances"]:
        t.append(f" ({group['avoided_rebalances']} avoided)")
    return t
