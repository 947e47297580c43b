"""``groups``: the consumer groups of a capture over time: generations and their members'
assignments, rebalances (phases, straggler, joined/left/evicted, cause), lag at each commit and
Burrow's status, how the consumers fetch; each group says what the capture could not see."""

from __future__ import annotations

import argparse
import sys

from analyzer.cli.args import add_capture_args, add_state_args, evictions_text, state_bounds, with_evictions
from analyzer.cli.common import analysis, finish, fmt_ts, print_json
from analyzer.session.burrow import Params
from analyzer.session.fetches import FetchTracker
from analyzer.session.insights import GroupInsights


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "groups", help="consumer groups over time: generations, rebalances, lag, Burrow's status"
    )
    add_capture_args(p)
    add_state_args(p)
    p.add_argument("--group", action="append", metavar="GROUP", help="only this group (repeatable)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("-t", "--absolute", action="store_true", help="absolute times (UTC), not from the start")
    b = p.add_argument_group("Burrow's lag rules (its storage and evaluator settings)")
    b.add_argument("--intervals", type=int, default=10, metavar="N", help="commits per window (default 10)")
    b.add_argument(
        "--min-distance",
        type=float,
        default=0.0,
        metavar="S",
        help="commits closer than S seconds replace the last (default 0)",
    )
    b.add_argument(
        "--minimum-complete",
        type=float,
        default=0.0,
        metavar="F",
        help="windows less complete than F (0-1) are OK (default 0)",
    )
    p.set_defaults(func=run)


def run(args) -> int:
    if args.intervals < 1 or not 0 <= args.minimum_complete <= 1 or args.min_distance < 0:
        print(
            "kafka-analyzer: --intervals is at least 1, --minimum-complete within 0-1, --min-distance >= 0",
            file=sys.stderr,
        )
        return 2
    params = Params(args.intervals, args.min_distance, args.minimum_complete)
    bounds = state_bounds(args)
    if bounds is None:
        return 2
    with analysis(args) as a:
        insights, fetches = GroupInsights(a.knowledge.topic_ids, params, bounds=bounds), FetchTracker()
        outcome = a.run(insights, fetches)
    wanted = set(args.group or ())
    report = groups_report(insights, fetches, outcome.last_ts if outcome.packets else None, wanted)
    with_evictions(report, insights.evictions, bounds)
    if args.format == "json":
        print_json(report)
    else:
        render(report, sys.stdout, outcome.first_ts, args.absolute)
        for line in evictions_text(report):
            print(line)
    return finish(outcome)


def groups_report(
    insights: GroupInsights, fetches: FetchTracker, now: float | None, wanted: set[str]
) -> dict:
    """Plain data: per group its timeline, its lag rows and status; the fetching clients (with
    ``wanted`` groups: the clients whose ids their members had)."""
    groups = insights.report(now, wanted)
    fetchers = fetches.rows()
    if wanted:
        ids = {m["client_id"] for g in groups for gen in g["generations"] for m in gen["members"]}
        fetchers = [f for f in fetchers if f["client_id"] in ids]
    report: dict[str, object] = {"groups": groups, "fetch_clients": fetchers}
    if wanted:
        report["wanted"] = sorted(wanted)
    return report


def _members(out, gen: dict) -> None:
    out.write(f"      leader {gen['leader'] or '-'}; members:\n")
    for m in gen["members"]:
        parts = " ".join(f"{t}{ps}" for t, ps in m["assignment"].items()).replace(" ", "")
        who = " ".join(x for x in (m["client_id"], m["client"], m["instance_id"]) if x)
        out.write(f"        {m['member_id']}  {who}  {parts or '(nothing assigned)'}\n")


def render(report: dict, out, origin: float | None, absolute: bool) -> None:  # noqa: C901 - one text layout
    def when(ts: float | None) -> str:
        return "-" if ts is None else fmt_ts(ts, origin, absolute).strip()

    if not report["groups"]:
        named = report.get("wanted")
        out.write(
            f"no consumer group {', '.join(named)} in the capture\n"
            if named
            else "no consumer group in the capture\n"
        )
    for g in report["groups"]:
        proto = ", ".join(x for x in (g["protocol_type"], g["protocol_name"]) if x)
        head = f"group {g['group']}" + (f" ({proto}; {g['protocol']} protocol)" if g["protocol"] else "")
        out.write(f"{head}\n  coverage: {g['coverage']}\n")
        rebs = [r for r in g["rebalances"] if r["duration_ms"] is not None]
        if g["rebalances"] or g["generations"]:
            longest = max((r["duration_ms"] for r in rebs), default=None)
            total = sum(r["duration_ms"] for r in rebs)
            out.write(
                f"  {_n(len(g['generations']), 'generation')}, {_n(len(g['rebalances']), 'rebalance')}"
                + (f" (longest {longest:.1f} ms, {total:.1f} ms in all)" if rebs else "")
                + (f", {g['avoided_rebalances']} avoided (static members)" if g["avoided_rebalances"] else "")
                + "\n"
            )
        gens = {x["generation"]: x for x in g["generations"]}
        for r in g["rebalances"]:
            after = r["generation_after"]
            to = f"generation {after}" if after is not None else "unfinished in the capture"
            out.write(f"  {when(r['start'])}  rebalance -> {to}")
            if r["duration_ms"] is not None:
                out.write(f"  {r['duration_ms']:.1f} ms (join {r['join_ms']:.1f}, sync {r['sync_ms']:.1f})")
            out.write(f"\n      cause: {r['cause']}\n")
            moves = [(k, r[k]) for k in ("joined", "left", "evicted") if r[k]]
            if moves:
                out.write("      " + "; ".join(f"{k}: {', '.join(v)}" for k, v in moves) + "\n")
            if r["straggler"] and len(r["members_after"]) > 1:
                out.write(f"      last to join: {r['straggler']}\n")
            paused = [
                f"{p['topic']}[{p['partition']}] "
                + (
                    f"{p['pause_ms']:.1f} ms"
                    if p["pause_ms"] is not None
                    else "not fetched again in the capture"
                )
                for p in r["pauses"]
                if p["last_fetch"] is not None
            ]
            if paused:
                out.write(f"      paused: {', '.join(paused)}\n")
            gen = gens.get(after)
            if gen is not None:
                _members(out, gen)
        for gen in g["generations"]:
            if gen.get("source"):
                out.write(
                    f"  {when(gen['time'])}  generation {gen['generation']} (read from {gen['source']})\n"
                )
                _members(out, gen)
        st = g["status"]
        if st is not None:
            judged = (
                st["status"]
                if st["status"] != "NOTFOUND"
                else "no judgement: no commit with a known end offset"
            )
            out.write(f"  lag (Burrow: {judged}, windows complete {st['complete']:.0%}):\n")
            for p in st["partitions"]:
                lag_s = "-" if p["lag_seconds"] is None else f"{p['lag_seconds']:.3f} s"
                lag_n = "-" if p["lag"] is None else str(p["lag"])
                ahead = [
                    x["position_lag"]
                    for x in g["lag"]
                    if (x["topic"], x["partition"]) == (p["topic"], p["partition"])
                    and x["position_lag"] is not None
                ]
                between = f"  position lag up to {max(ahead)} between commits" if ahead else ""
                out.write(
                    f"    {p['topic']}[{p['partition']}]  lag {lag_n}  {lag_s}  {p['status']}{between}\n"
                )
            if not st["coverage"].startswith("end offsets seen for every"):
                out.write(f"    coverage: {st['coverage']}\n")
        out.write("\n")
    fetchers = report["fetch_clients"]
    if fetchers:
        out.write("fetching clients:\n")
        for c in fetchers:
            lat = "-" if c["p99_ms"] is None else f"p50 {c['p50_ms']:.1f} ms, p99 {c['p99_ms']:.1f} ms"
            busy = "  BUSY POLLING" if c["busy_polling"] else ""
            out.write(
                f"  {c['client_id'] or '-'} {c['client']} -> {c['broker']}: {c['fetches']} fetches, "
                f"{c['idle_long_polls']} idle long-polls, {c['empty']} empty; answers with data or "
                f"cut short: {lat}{busy}\n"
            )
            for e in c["session_errors"]:
                by = ", ".join(f"conn {x['connection']} (session {x['session_id']})" for x in e["evicted_by"])
                out.write(
                    f"    {when(e['time'])} {e['error']}"
                    + (f"; sessions created since: {by}" if by else "")
                    + "\n"
                )


def _n(k: int, what: str) -> str:
    return f"{k} {what}{'s' if k != 1 else ''}"
