"""``clients`` and ``topology``: who talks to the cluster, and how well.

``clients``: each client (client id on a host) with its software, the APIs and versions it used,
whether it is ready for a Kafka release (``--target``: the versions that release no longer
accepts, old record formats, with the count of exchanges as evidence) and its hygiene (Metadata
storms and loops, connection churn, throttling, large messages, idle connections).
``topology``: producer client -> topic -> consumer group, with records and bytes per edge, as
text, JSON, Graphviz DOT or Mermaid."""

from __future__ import annotations

import argparse
import re

from analyzer.cli.args import add_capture_args, add_state_args, evictions_text, state_bounds, with_evictions
from analyzer.cli.common import EXIT_USAGE, analysis, finish, print_json
from analyzer.dissect.protocol_table import CURRENT_RELEASE
from analyzer.pipeline import Outcome
from analyzer.session.client_text import client_lines, coverage_text, edge_label, readiness_head
from analyzer.session.clients import TARGETS, ClientTracker, LetGoVerdicts

# rows kept of the clients let go not ready, without a --state-max to bound them
LET_GO_ROWS = 10_000


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "clients", help="client inventory: software, API versions, readiness for a Kafka release, hygiene"
    )
    add_capture_args(p)
    add_state_args(p)
    p.add_argument(
        "--target",
        choices=TARGETS,
        default=CURRENT_RELEASE,
        help=f"the Kafka release to judge readiness for (default {CURRENT_RELEASE}, the newest known)",
    )
    p.add_argument("--client", action="append", metavar="CLIENT_ID", help="only this client id (repeatable)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=run_clients)
    t = sub.add_parser(
        "topology", help="producer client -> topic -> consumer group, records and bytes per edge"
    )
    add_capture_args(t)
    add_state_args(t)
    t.add_argument("--format", choices=("text", "json", "dot", "mermaid"), default="text")
    t.set_defaults(func=run_topology)


def _run(
    args, target: str | None = None, wanted: set[str | None] | None = None
) -> tuple[ClientTracker, LetGoVerdicts | None, Outcome] | None:
    """The clients of the capture; with a ``target``, the verdicts on the clients let go before
    its end (only the ``wanted`` client ids, when given)."""
    bounds = state_bounds(args)
    if bounds is None:
        return None
    with analysis(args) as a:
        tracker = ClientTracker(a.knowledge.topic_ids, bounds)
        gone = (
            None
            if target is None
            else LetGoVerdicts(tracker, target, bounds.max_entries or LET_GO_ROWS, wanted)
        )
        outcome = a.run(tracker)
    return tracker, gone, outcome


def run_clients(args) -> int:
    wanted: set[str | None] = set(args.client or ())
    done = _run(args, args.target, wanted or None)
    if done is None:
        return EXIT_USAGE
    tracker, gone, outcome = done
    assert gone is not None
    rows = [r for r in tracker.rows(args.target) if not wanted or r["client_id"] in wanted]
    if gone.not_ready:  # in the order of ClientTracker.rows
        rows = sorted(rows + gone.not_ready, key=lambda r: (r["first"], str((r["client"], r["client_id"]))))
    report = with_evictions(
        {
            "target": args.target,
            "clients": rows,
            "let_go": {
                "ready": gone.ready,
                "not_ready": len(gone.not_ready),
                "not_listed": gone.not_ready_unkept,
            },
        },
        tracker.evictions,
        tracker.expiry.bounds,
    )
    if args.format == "json":
        print_json(report)
        return finish(outcome)
    out = [readiness_head(rows, args.target, gone.ready, gone.not_ready_unkept)]
    if rows or gone:
        out.append(f"coverage: {coverage_text(rows, let_go=len(gone))}")
        out.append("")
    for r in rows:
        out.extend(client_lines(r))
    out.extend(evictions_text(report))
    print("\n".join(out))
    return finish(outcome)


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _mermaid_id(kind: str, name: str, ids: dict) -> str:
    key = (kind, name)
    if key not in ids:
        ids[key] = f"{kind}{len(ids)}"
    return ids[key]


def topology_text(edges: list[dict], fmt: str) -> str:
    """The topology as DOT, Mermaid or plain text."""
    if fmt == "dot":
        lines = ["digraph kafka {", "  rankdir=LR;", "  node [fontname=Helvetica];"]
        nodes: dict[tuple[str, str], None] = {}
        for e in edges:
            src = ("client", e["from"]) if e["kind"] == "produce" else ("topic", e["from"])
            dst = ("topic", e["to"]) if e["kind"] == "produce" else ("consumer", e["to"])
            nodes.setdefault(src)
            nodes.setdefault(dst)
        shapes = {"client": "box", "topic": "cylinder", "consumer": "box"}
        for kind, name in nodes:
            lines.append(f"  {_quote(kind + ':' + name)} [label={_quote(name)}, shape={shapes[kind]}];")
        for e in edges:
            src = ("client:" if e["kind"] == "produce" else "topic:") + e["from"]
            dst = ("topic:" if e["kind"] == "produce" else "consumer:") + e["to"]
            lines.append(f"  {_quote(src)} -> {_quote(dst)} [label={_quote(edge_label(e))}];")
        lines.append("}")
        return "\n".join(lines)
    if fmt == "mermaid":
        ids: dict = {}
        lines = ["flowchart LR"]
        for e in edges:
            if e["kind"] == "produce":
                a, b = _mermaid_id("c", e["from"], ids), _mermaid_id("t", e["to"], ids)
                a_node, b_node = f'{a}["{_safe(e["from"])}"]', f'{b}[("{_safe(e["to"])}")]'
            else:
                a, b = _mermaid_id("t", e["from"], ids), _mermaid_id("g", e["to"], ids)
                a_node, b_node = f'{a}[("{_safe(e["from"])}")]', f'{b}["{_safe(e["to"])}"]'
            lines.append(f'  {a_node} -->|"{edge_label(e)}"| {b_node}')
        return "\n".join(lines)
    if not edges:
        return "no Produce or Fetch with records in the capture"
    return "\n".join(
        f"{e['from']} -> {e['to']}  ({e['kind']}: {e['records']} records, {e['bytes']} bytes)" for e in edges
    )


def _safe(s: str) -> str:
    """A name inside Mermaid quotes (which allow no double quote)."""
    return re.sub(r'["\n]', "'", s)


def run_topology(args) -> int:
    done = _run(args)
    if done is None:
        return EXIT_USAGE
    tracker, _, outcome = done
    edges = tracker.edges()
    if args.format == "json":
        print_json({"edges": edges})
    else:
        print(topology_text(edges, args.format))
    return finish(outcome)
