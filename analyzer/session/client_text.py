"""The clients and the topology in words, as the ``clients`` and ``topology`` commands print them
and the TUI's clients and topology views show them (one text for both): the readiness head, what
the inventory could not see (coverage), each client's lines (the versions a release refuses with
their counts, old formats, APIs, connections, hygiene findings), an edge's records and bytes."""

from __future__ import annotations


def readiness_head(rows: list[dict], target: str, ready_gone: int = 0, unlisted: int = 0) -> str:
    """``N of M clients ready for Kafka T`` (rows: :meth:`ClientTracker.rows`', and the rows of
    the clients let go that were not ready); ``ready_gone``: clients let go that were ready (no
    row), ``unlisted``: clients let go not ready, past the rows kept."""
    total = len(rows) + ready_gone + unlisted
    if not total:
        return "no client in the capture"
    return f"{sum(r['ready'] for r in rows) + ready_gone} of {total} clients ready for Kafka {target}"


def coverage_text(rows: list[dict], dropped: dict[str, int] | None = None, let_go: int = 0) -> str:
    """What the inventory could not see: the clients whose software no ApiVersions v3+ named
    (older clients, or connections opened before the capture), that readiness is judged on the
    versions used during the capture only, the clients let go before its end (``let_go``: judged
    as they went) and (live) the clients and edges let go."""
    if not rows and not let_go:
        return ""
    named = sum(1 for r in rows if r["software"] not in ("before KIP-511", "not named"))
    before = sum(1 for r in rows if r["software"] == "before KIP-511")
    parts = [f"software named by {named} of {len(rows)} clients (ApiVersions v3+)"]
    if before:
        why = "older clients, or connected before the capture"
        parts.append(f"{before} sent none ({why})")
    parts.append("readiness judged on the versions used while capturing")
    if let_go:
        parts.append(
            f"{let_go} clients let go before the capture's end (--state-idle, --state-max) judged as "
            "they went: counted above, those not ready listed"
        )
    gone = {k: v for k, v in (dropped or {}).items() if v}
    if gone:
        parts.append("let go to stay bounded: " + ", ".join(f"{v} {k}" for k, v in gone.items()))
    return "; ".join(parts)


def refused_text(r: dict) -> str:
    """The versions a client used that its target refuses, as ``Produce v2, Fetch v3`` ("" none)."""
    return ", ".join(f"{x['api_name']} v{x['version']}" for x in r["removed_versions"])


def apis_text(r: dict) -> str:
    """Every API version a client used with its count: ``Produce v7 x3, Fetch v11 x12``."""
    return ", ".join(f"{a['api_name']} v{a['version']} x{a['count']}" for a in r["apis"])


def client_lines(r: dict) -> list[str]:
    """A client as ``clients`` prints it: its verdict for ``r["target"]``, each version that
    release refuses with its request count, old record formats, its APIs, connections and
    Metadata rate, its hygiene findings (``! ``)."""
    target = r["target"]
    verdict = "ready" if r["ready"] else "NOT READY"
    out = [f"{r['client_id'] or '-'} on {r['client']}: {r['software']}; {verdict} for Kafka {target}"]
    counts = {(a["api_key"], a["version"]): a["count"] for a in r["apis"]}
    for x in r["removed_versions"]:
        accepted = f"accepts v{x['accepted']}" if x["accepted"] else "removed the API"
        n = counts.get((x["api_key"], x["version"]), 0)
        out.append(f"  {x['api_name']} v{x['version']}: {n} requests; Kafka {target} {accepted}")
    if r["old_formats"]:
        out.append(
            f"  {r['old_formats']} record batches in the old formats (magic 0/1, removed in Kafka 4.0)"
        )
    out.append(f"  APIs: {apis_text(r)}")
    out.append(
        f"  {r['connections']} connections"
        + (f", median lifetime {r['median_lifetime_s']:.1f} s" if r["median_lifetime_s"] is not None else "")
        + (f", {r['metadata_requests']} Metadata requests" if r["metadata_requests"] else "")
        + (f" ({r['metadata_rate']:.1f}/s)" if r["metadata_rate"] is not None else "")
    )
    out.extend(f"  ! {f}" for f in r["findings"])
    return out


def edge_label(e: dict) -> str:
    """An edge's (or a flow's) records and bytes: ``12 records, 3400 B``."""
    return f"{e['records']} records, {e['bytes']} B"
