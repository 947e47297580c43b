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
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


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


def _moved(produced: tuple[int, int], fetched: tuple[int, int]) -> str:
    out = []
    if produced[0]:
        out.append(f"produced {produced[0]} records, {produced[1]} B")
    if fetched[0]:
        out.append(f"fetched {fetched[0]} records, {fetched[1]} B")
    return "; ".join(out)


def topology_tree(flows: list[dict], clients: list[dict]) -> list[Node]:
    """The clients that produced or fetched records, each with its brokers, each with the topics
    (``flows``: :meth:`ClientTracker.flows_rows`; ``clients``: its rows, for the software)."""
    software = {(r["client"], r["client_id"]): r["software"] for r in clients}
    tops: dict[tuple, Node] = {}
    sums: dict[tuple, list[int]] = {}  # node key -> produced records, bytes, fetched records, bytes
    for f in flows:
        host, cid, broker = f["client"], f["client_id"], f["broker"]
        ck = ("client", host, cid)
        top = tops.get(ck)
        if top is None:
            group = f" group {f['group']}" if f["group"] else ""
            sw = software.get((host, cid), "?")
            top = tops[ck] = Node(
                ck,
                f"{cid or '-'} @ {host}{group}",
                f"client {cid or '-'} on {host}{group}: {sw}",
                client_filter(host, cid),
            )
            sums[ck] = [0, 0, 0, 0]
        bk = ("broker", host, cid, broker)
        bnode = next((n for n in top.children if n.key == bk), None)
        if bnode is None:
            bnode = Node(bk, f"broker {broker}", "", flow_filter(host, cid, broker, None, None))
            top.children.append(bnode)
            sums[bk] = [0, 0, 0, 0]
        arrow = "→ produce" if f["kind"] == "produce" else "← fetch"
        bnode.children.append(
            Node(
                ("edge", host, cid, broker, f["kind"], f["topic"]),
                f"{arrow} {f['topic']}: {edge_label(f)}",
                f"{cid or '-'} {'produced to' if f['kind'] == 'produce' else 'fetched from'} "
                f"{f['topic']} through broker {broker}: {edge_label(f)}",
                flow_filter(host, cid, broker, f["kind"], f["topic"]),
                f["records"],
                f["bytes"],
                kind=f["kind"],
                topic=f["topic"],
            )
        )
        at = 0 if f["kind"] == "produce" else 2
        for k in (ck, bk):
            sums[k][at] += f["records"]
            sums[k][at + 1] += f["bytes"]
    out = []
    for top in tops.values():
        s = sums[top.key]
        top.records, top.bytes = s[0] + s[2], s[1] + s[3]
        top.label += f"  ({_moved((s[0], s[1]), (s[2], s[3]))})"
        top.detail += f"; {_moved((s[0], s[1]), (s[2], s[3]))}"
        for b in top.children:
            s = sums[b.key]
            b.records, b.bytes = s[0] + s[2], s[1] + s[3]
            b.detail = (
                f"{top.label.split('  (')[0]} through broker {b.key[3]}: {_moved((s[0], s[1]), (s[2], s[3]))}"
            )
        out.append(top)
    return out
