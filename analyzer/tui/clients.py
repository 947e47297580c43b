"""What the clients and topology views show (no Textual here): a row per client of
:meth:`~analyzer.session.clients.ClientTracker.rows` (its readiness, the versions its target
refuses, its hygiene in short), the topology through the brokers as a tree (client -> broker ->
topic, from :meth:`~analyzer.session.clients.ClientTracker.flows_rows`), and the display filters
that show a client's, a broker's or an edge's exchanges in the list. The texts of a client and of
the coverage are the ``clients`` command's (:mod:`analyzer.session.client_text`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from analyzer.filter import quote
from analyzer.session.client_text import apis_text, edge_label, refused_text

CLIENT_COLUMNS = ["client_id", "ready", "refused", "hygiene", "throttle_ms", "software", "client", "APIs"]


def short_finding(f: str) -> str:
    """A hygiene finding in a few words (the table's cell; the whole sentence is in the detail)."""
    head = f.split(":", 1)[0] if ":" in f else f.split(" (", 1)[0]
    return head if len(head) <= 32 else head[:31] + "…"


def client_rows(clients: list[dict]) -> list[dict]:
    """One table row per client (``clients``: :meth:`ClientTracker.rows`' for one target)."""
    return [
        {
            "client_id": r["client_id"] or "-",
            "ready": "ready" if r["ready"] else "NOT READY",
            "refused": refused_text(r)
            + (
                f"{', ' if r['removed_versions'] else ''}{r['old_formats']} old batches"
                if r["old_formats"]
                else ""
            ),
            "hygiene": ", ".join(short_finding(f) for f in r["findings"]),
            "throttle_ms": r["throttle_ms"],
            "software": r["software"],
            "client": r["client"],
            "APIs": apis_text(r),
        }
        for r in clients
    ]


# -- the display filters of a client, a broker, an edge ----------------------------------------------------


def _host(host: str) -> str:
    """An address as the filter language writes it (IPv6 in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def client_filter(host: str, client_id: str | None) -> str:
    """The exchanges of a client (a client id on a host)."""
    cid = f"client_id == {quote(client_id)}" if client_id is not None else "not client_id"
    return f"client == {_host(host)} and {cid}"


def refused_filter(r: dict) -> str | None:
    """A client's exchanges in the versions its target refuses (None: it used none)."""
    versions = [f"(api == {x['api_key']} and version == {x['version']})" for x in r["removed_versions"]]
    if not versions:
        return None
    either = versions[0] if len(versions) == 1 else "(" + " or ".join(versions) + ")"
    return f"{client_filter(r['client'], r['client_id'])} and {either}"


def flow_filter(
    host: str, client_id: str | None, broker: str | None, kind: str | None, topic: str | None
) -> str:
    """A client's exchanges with one broker (``broker``), of one edge (``kind`` and ``topic``)."""
    parts = [client_filter(host, client_id)]
    if broker is not None:
        parts.append(f"broker == {broker}")
    if kind is not None:
        parts.append("api == Produce" if kind == "produce" else "api == Fetch")
    if topic is not None:
        parts.append(f"topic == {quote(topic)}")
    return " and ".join(parts)


# -- the topology tree -----------------------------------------------------------------------------------


@dataclass(slots=True)
class Node:
    """A node of the topology tree: a client, one of its brokers, or an edge (a topic it
    produced to or fetched from through that broker). ``key`` names it across reloads."""

    key: tuple
    label: str
    detail: str
    filter: str
    records: int = 0
    bytes: int = 0
    children: list[Node] = field(default_factory=list)
    kind: str | None = None  # an edge's: produce, fetch
    topic: str | None = None
    group: str | None = None  # the client's consumer group


def _moved(produced: tuple[int, int], fetched: tuple[int, int], short: bool = False) -> str:
    """What a client (or a client through one broker) produced and fetched: records and bytes."""
    out = []
    for what, (n, b) in (("produced", produced), ("fetched", fetched)):
        if n:
            out.append(f"{what} {n} ({b} B)" if short else f"{what} {n} records, {b} B")
    return ", ".join(out) if short else "; ".join(out)


def topology_tree(flows: list[dict], clients: list[dict]) -> list[Node]:
    """The clients that produced or fetched records, each with its brokers, each with the topics
    (``flows``: :meth:`ClientTracker.flows_rows`; ``clients``: its rows, for the software)."""
    software = {(r["client"], r["client_id"]): r["software"] for r in clients}
    tops: dict[tuple, Node] = {}
    brokers: dict[tuple, Node] = {}
    sums: dict[tuple, list[int]] = {}  # node key -> produced records, bytes, fetched records, bytes
    for f in flows:
        host, cid, broker, group = f["client"], f["client_id"], f["broker"], f["group"]
        ck = ("client", host, cid)
        top = tops.get(ck)
        if top is None:
            name = f"{cid or '-'} @ {host}" + (f"  group {group}" if group else "")
            top = tops[ck] = Node(ck, name, "", client_filter(host, cid), group=group)
            top.detail = f"{name}: {software.get((host, cid), '?')}"
            sums[ck] = [0, 0, 0, 0]
        bk = ("broker", host, cid, broker)
        bnode = brokers.get(bk)
        if bnode is None:
            bnode = brokers[bk] = Node(bk, f"broker {broker}", "", flow_filter(host, cid, broker, None, None))
            top.children.append(bnode)
            sums[bk] = [0, 0, 0, 0]
        kind, topic = f["kind"], f["topic"]
        did = "produced to" if kind == "produce" else "fetched from"
        bnode.children.append(
            Node(
                ("edge", host, cid, broker, kind, topic),
                f"{'→ produce' if kind == 'produce' else '← fetch'} {topic}: {edge_label(f)}",
                f"{cid or '-'} {did} {topic} through broker {broker}: {edge_label(f)}",
                flow_filter(host, cid, broker, kind, topic),
                f["records"],
                f["bytes"],
                kind=kind,
                topic=topic,
                group=group,
            )
        )
        at = 0 if kind == "produce" else 2
        for k in (ck, bk):
            sums[k][at] += f["records"]
            sums[k][at + 1] += f["bytes"]
    for node in (*tops.values(), *brokers.values()):
        p, b, fr, fb = sums[node.key]
        node.records, node.bytes = p + fr, b + fb
        if node.key[0] == "broker":
            node.label += f"  {_moved((p, b), (fr, fb), short=True)}"
            node.detail = f"{tops[('client', *node.key[1:3])].label} through broker {node.key[3]}: "
            node.detail += _moved((p, b), (fr, fb))
        else:
            node.detail += f"; {_moved((p, b), (fr, fb))}"
    return list(tops.values())
