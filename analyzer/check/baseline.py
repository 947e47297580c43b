"""Baselines: what each client did in a known-good recording, to compare a new one against.

A profile is kept per client (client id and client software from ApiVersions): the API versions
it used; the shape of its requests (Produce acks, codecs, idempotence, transactions; Fetch
isolation level); the handshake each connection starts with; errors by API; latency percentiles
by API; request counts by API. Addresses, ports, ids, offsets, timestamps and payloads are left
out, so a re-recording of the same client gives the same file. The file is sorted, indented JSON
meant to be committed and diffed.

:func:`compare` turns the differences into findings: a new API or version, a codec no longer
used, a change of acks, idempotence, transactions or isolation, a new error code, latency beyond
both ``latency_factor`` x and ``latency_margin_ms`` over the baseline, request counts beyond
+-``count_tolerance`` fail; improvements and unchanged clients are notes.

Per consumer group (:meth:`Profiler.add_groups`, from :class:`~analyzer.session.insights.GroupInsights`
at each capture's end, summed over the capture set): its rebalances, the longest, its max lag
(records and seconds) and its worst Burrow status. A new group, more rebalances beyond
``count_tolerance``, a longest rebalance beyond ``latency_factor`` x and ``rebalance_margin_ms``,
a max lag beyond ``latency_factor`` x and ``lag_margin`` records (or ``lag_margin_s``), a worse
status fail. A baseline written before groups were recorded has none: each group dimension says
so (a note) until ``--update-baseline`` records them.

Per producer (:meth:`Profiler.add_producers`, from
:class:`~analyzer.session.producer_insights.ProducerInsights`, summed over its producer ids and the
capture set), named by its client id and transactional id (producer ids change from run to run):
its records, retried, failed and duplicated records; per transactional id, its transactions by
outcome (commit, abort, hanging, open, failed: ended by an error); per (topic, consumer group), the
end-to-end p99 (the worst of its partitions, producers and consumers). A new producer or
transactional id, records beyond +-``count_tolerance``, retried records beyond +``count_tolerance``
and ``retry_margin``, any more failed or duplicated records, more hanging or failed transactions,
commits or aborts beyond +-``count_tolerance``, an e2e p99 beyond ``latency_factor`` x and
``e2e_margin_ms`` fail. A baseline written before producers were recorded says so (a note).

Per client's health (:meth:`Profiler.add_clients`, from
:class:`~analyzer.session.clients.ClientTracker`'s rows, summed over its hosts and the capture
set), named as the profiles above (client id and software, no address nor port): its readiness
for the target release (the API versions it used that the target refuses, its record batches in
the old formats), its Metadata requests per second (the highest of its hosts and captures), its
connections and its reconnections without backoff, the time its answers were throttled. A
version the target refuses that the client did not use before, old formats where it had none, a
Metadata rate beyond ``latency_factor`` x and ``metadata_rate_margin``, connections beyond
+``count_tolerance`` and ``connection_margin`` (or fast reconnections beyond
``reconnect_margin`` more), throttling beyond ``latency_factor`` x and ``throttle_margin_ms``
fail. A baseline written before client health was recorded says so (a note).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass

from analyzer.dissect import schema
from analyzer.filter import field_values
from analyzer.model import Exchange
from analyzer.session.clients import BEFORE_KIP511, NOT_NAMED
from analyzer.session.stats import error_names, percentile

VERSION = 1
HANDSHAKE_LEN = 4  # the first requests of a connection
_CODECS = field_values("records.codec")
_PRODUCER_IDS = field_values("records.producer_id")
PRODUCER_KEYS = ("records", "retried", "failed", "duplicated")
# a client's health: the sums over its hosts and captures (metadata_rate: the highest)
HEALTH_SUMS = ("old_formats", "connections", "fast_reconnects", "throttle_ms")
TXN_OUTCOMES = ("commit", "abort", "hanging", "open", "failed")


def producer_key(client_id: str | None, transactional_id: str | None) -> str:
    """A producer's name in the baseline: its client id and transactional id, not its producer
    id (a new one each run)."""
    cid = client_id if client_id is not None else "(no client id)"
    return f"{cid} | transactional id {transactional_id}" if transactional_id else cid


@dataclass(frozen=True, slots=True)
class Tolerances:
    latency_factor: float = 2.0
    latency_margin_ms: float = 50.0
    count_tolerance: float = 0.5
    rebalance_margin_ms: float = 1000.0
    lag_margin: int = 1000  # records
    lag_margin_s: float = 10.0
    retry_margin: int = 10  # records
    e2e_margin_ms: float = 100.0
    metadata_rate_margin: float = 5.0  # requests/s
    connection_margin: int = 10  # connections, and fast reconnections
    throttle_margin_ms: float = 100.0


class Profiler:
    """Fed every event of the capture set (the exchanges ``select`` keeps count);
    :meth:`profile` gives the baseline document."""

    def __init__(self, select=None) -> None:
        self.select = select
        self.clients: dict[str, dict] = {}
        self.conn_first: dict[tuple[str, int], tuple[str, list[str]]] = {}
        self._knowledge = None
        self._capture = ""
        self.groups: dict[str, dict] = {}
        self.producers: dict[str, dict] = {}
        self.transactions: dict[str, dict] = {}
        self.e2e: dict[str, dict] = {}
        self.health: dict[str, dict] = {}

    def begin(self, name: str, knowledge) -> None:
        self._capture = name
        self._knowledge = knowledge

    def _client(self, ex: Exchange) -> str:
        cid = ex.client_id if ex.client_id is not None else "(no client id)"
        k = self._knowledge
        sw = k.clients.get(ex.client_id) if k is not None and ex.client_id is not None else None
        software = " ".join(x for x in sw if x) if sw else ""
        return f"{cid} | {software}" if software else cid

    def event(self, ev) -> None:
        if type(ev) is not Exchange or (self.select is not None and not self.select(ev)):
            return
        ex: Exchange = ev
        if ex.api_key is None or ex.request is None:
            return
        key = self._client(ex)
        c = self.clients.get(key)
        if c is None:
            c = self.clients[key] = {
                "apis": defaultdict(set),
                "shape": defaultdict(set),
                "handshakes": defaultdict(int),
                "errors": defaultdict(lambda: defaultdict(int)),
                "latency": defaultdict(list),
                "requests": defaultdict(int),
            }
        api = schema.api_name(ex.api_key) or f"Api{ex.api_key}"
        c["apis"][api].add(ex.api_version)
        c["requests"][api] += 1
        if ex.latency is not None:
            c["latency"][api].append(ex.latency * 1000.0)
        for n in error_names(ex.response):
            c["errors"][api][n] += 1
        self._shape(c["shape"], api, ex)
        _, first = self.conn_first.setdefault((self._capture, ex.conn.id), (key, []))
        if len(first) < HANDSHAKE_LEN:
            first.append(api)

    def _count_handshakes(self) -> None:
        """Move the first requests of every connection seen so far into the clients' counts."""
        for client, first in self.conn_first.values():
            self.clients[client]["handshakes"][" > ".join(first)] += 1
        self.conn_first.clear()

    @staticmethod
    def _shape(shape: dict, api: str, ex: Exchange) -> None:
        body = ex.request.body if ex.request is not None else None
        if body is None:
            return
        if api == "Produce":
            shape["produce.acks"].add(body.get("acks"))
            shape["produce.transactional"].add(body.get("transactional_id") is not None)
        elif api == "Fetch" and body.child("isolation_level") is not None:
            shape["fetch.isolation_level"].add(body.get("isolation_level"))
        if api == "Produce":
            shape["produce.codec"].update(_CODECS(ex))
            shape["produce.idempotent"].update(pid >= 0 for pid in _PRODUCER_IDS(ex))

    def add_groups(self, rows: list[dict]) -> None:
        """One capture's consumer groups (:meth:`GroupInsights.table` rows at its end)."""
        for r in rows:
            self._add_group(
                r["group_id"],
                {
                    "rebalances": r["rebalances"],
                    "longest_rebalance_ms": r["longest_rebalance_ms"],
                    "max_lag": r["max_lag"],
                    "max_lag_s": r["max_lag_s"],
                    "status": r["status"],
                },
            )

    def add_producers(self, tables: dict[str, list[dict]]) -> None:
        """One capture's producers, transactions and e2e latencies (the engine's
        :attr:`~analyzer.check.engine.Engine.producer_rows` at its end)."""
        for r in tables.get("producers", ()):
            self._add_producer(
                producer_key(r["client_id"], r["transactional_id"]),
                {
                    "records": r["records"],
                    "retried": r["retried_records"],
                    "failed": r["failed_records"],
                    "duplicated": r["duplicates_written"],
                },
            )
        for r in tables.get("transactions", ()):
            self._add_txn(r["transactional_id"], {k: r[k] for k in TXN_OUTCOMES})
        for r in tables.get("e2e", ()):
            if r["p99_ms"] is not None:
                self._add_e2e(f"{r['topic']} | {r['group'] or '(no group)'}", {"p99_ms": r["p99_ms"]})

    def add_clients(self, rows: list[dict]) -> None:
        """One capture's clients (the engine's :attr:`~analyzer.check.engine.Engine.client_rows`,
        :meth:`ClientTracker.rows` at its end), named by client id and software."""
        for r in rows:
            removed: dict[str, list[int]] = {}
            for x in r["removed_versions"]:
                removed.setdefault(x["api_name"] or f"Api{x['api_key']}", []).append(x["version"])
            self._add_health(
                client_key(r["client_id"], r["software"]),
                {
                    "target": r["target"],
                    "removed_versions": removed,
                    "old_formats": r["old_formats"],
                    "metadata_rate": r["metadata_rate"],
                    "connections": r["connections"],
                    "fast_reconnects": r["fast_reconnects"],
                    "throttle_ms": r["throttle_ms"],
                },
            )

    def _add_health(self, key: str, h: dict) -> None:
        old = self.health.get(key)
        if old is None:
            self.health[key] = {
                **h,
                "removed_versions": {a: sorted(v) for a, v in h["removed_versions"].items()},
            }
            return
        for api, vers in h["removed_versions"].items():
            old["removed_versions"][api] = sorted(set(old["removed_versions"].get(api, ())) | set(vers))
        for k in HEALTH_SUMS:
            old[k] += h[k]
        rates = [v for v in (old["metadata_rate"], h["metadata_rate"]) if v is not None]
        old["metadata_rate"] = max(rates) if rates else None
        old["target"] = max(old["target"], h["target"])

    def _add_producer(self, key: str, p: dict) -> None:
        old = self.producers.setdefault(key, dict.fromkeys(PRODUCER_KEYS, 0))
        for k in PRODUCER_KEYS:
            old[k] += p[k]

    def _add_txn(self, key: str, t: dict) -> None:
        old = self.transactions.setdefault(key, dict.fromkeys(TXN_OUTCOMES, 0))
        for k in TXN_OUTCOMES:
            old[k] += t[k]

    def _add_e2e(self, key: str, e: dict) -> None:
        old = self.e2e.get(key)
        if old is None or e["p99_ms"] > old["p99_ms"]:
            self.e2e[key] = dict(e)

    def _add_group(self, gid: str, g: dict) -> None:
        old = self.groups.get(gid)
        if old is None:
            self.groups[gid] = dict(g)
            return
        old["rebalances"] += g["rebalances"]
        for k in ("longest_rebalance_ms", "max_lag", "max_lag_s"):
            vs = [v for v in (old[k], g[k]) if v is not None]
            old[k] = max(vs) if vs else None
        if _rank(g["status"]) > _rank(old["status"]):
            old["status"] = g["status"]

    def profile(self) -> dict:
        self._count_handshakes()
        out = {}
        for key, c in sorted(self.clients.items()):
            lat = {}
            for api, vals in sorted(c["latency"].items()):
                s = sorted(vals)
                lat[api] = {
                    "p50": round(percentile(s, 50) or 0.0, 3),
                    "p99": round(percentile(s, 99) or 0.0, 3),
                    "count": len(s),
                }
            out[key] = {
                "apis": {a: sorted(v for v in vs if v is not None) for a, vs in sorted(c["apis"].items())},
                "request_shape": {
                    k: sorted(vs, key=lambda x: (x is None, str(x))) for k, vs in sorted(c["shape"].items())
                },
                "handshakes": sorted(c["handshakes"]),
                "errors": {a: dict(sorted(e.items())) for a, e in sorted(c["errors"].items())},
                "latency_ms": lat,
                "requests": dict(sorted(c["requests"].items())),
            }
        groups = {gid: dict(sorted(g.items())) for gid, g in sorted(self.groups.items())}
        return {
            "kafka-analyzer-baseline": VERSION,
            "clients": out,
            "groups": groups,
            "producers": {k: dict(sorted(v.items())) for k, v in sorted(self.producers.items())},
            "transactions": {k: dict(sorted(v.items())) for k, v in sorted(self.transactions.items())},
            "e2e": {k: dict(v) for k, v in sorted(self.e2e.items())},
            "client_health": {k: _sorted_health(v) for k, v in sorted(self.health.items())},
        }

    # parallel captures: the raw material is plain data
    def state(self) -> dict:
        self._count_handshakes()
        return {
            "clients": {
                k: {
                    "apis": {a: sorted(v, key=str) for a, v in c["apis"].items()},
                    "shape": {a: list(v) for a, v in c["shape"].items()},
                    "handshakes": dict(c["handshakes"]),
                    "errors": {a: dict(e) for a, e in c["errors"].items()},
                    "latency": dict(c["latency"]),
                    "requests": dict(c["requests"]),
                }
                for k, c in self.clients.items()
            },
            "groups": {k: dict(g) for k, g in self.groups.items()},
            "producers": {k: dict(v) for k, v in self.producers.items()},
            "transactions": {k: dict(v) for k, v in self.transactions.items()},
            "e2e": {k: dict(v) for k, v in self.e2e.items()},
            "client_health": {k: _sorted_health(v) for k, v in self.health.items()},
        }

    def merge(self, state: dict) -> None:
        for k, v in state.get("client_health", {}).items():
            self._add_health(k, v)
        for gid, g in state.get("groups", {}).items():
            self._add_group(gid, g)
        for k, v in state.get("producers", {}).items():
            self._add_producer(k, v)
        for k, v in state.get("transactions", {}).items():
            self._add_txn(k, v)
        for k, v in state.get("e2e", {}).items():
            self._add_e2e(k, v)
        for k, s in state["clients"].items():
            c = self.clients.setdefault(
                k,
                {
                    "apis": defaultdict(set),
                    "shape": defaultdict(set),
                    "handshakes": defaultdict(int),
                    "errors": defaultdict(lambda: defaultdict(int)),
                    "latency": defaultdict(list),
                    "requests": defaultdict(int),
                },
            )
            for a, v in s["apis"].items():
                c["apis"][a].update(v)
            for a, v in s["shape"].items():
                c["shape"][a].update(v)
            for h, n in s["handshakes"].items():
                c["handshakes"][h] += n
            for a, e in s["errors"].items():
                for n, cnt in e.items():
                    c["errors"][a][n] += cnt
            for a, v in s["latency"].items():
                c["latency"][a].extend(v)
            for a, n in s["requests"].items():
                c["requests"][a] += n


def client_key(client_id: str | None, software: str | None) -> str:
    """A client's name in the baseline, as :meth:`Profiler._client` names its profile: its client
    id and the software it names (ApiVersions v3+), never its address."""
    cid = client_id if client_id is not None else "(no client id)"
    named = software and software not in (BEFORE_KIP511, NOT_NAMED)
    return f"{cid} | {software}" if named else cid


def _sorted_health(h: dict) -> dict:
    out = dict(sorted(h.items()))
    out["removed_versions"] = {a: sorted(v) for a, v in sorted(h["removed_versions"].items())}
    return out


def dumps(profile: dict) -> str:
    return json.dumps(profile, indent=2, sort_keys=True) + "\n"


def load(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, dict) or data.get("kafka-analyzer-baseline") != VERSION or "clients" not in data:
        raise ValueError(f"{path}: not a kafka-analyzer baseline (version {VERSION})")
    groups = data.get("groups", {})
    keys = {"rebalances", "longest_rebalance_ms", "max_lag", "max_lag_s", "status"}
    if not isinstance(groups, dict) or not all(
        isinstance(g, dict) and keys <= set(g) for g in groups.values()
    ):
        raise ValueError(
            f"{path}: its groups are not a kafka-analyzer baseline's (each needs {', '.join(sorted(keys))})"
        )
    health = data.get("client_health", {})
    if not isinstance(health, dict) or not all(_health_ok(v) for v in health.values()):
        raise ValueError(
            f"{path}: its client_health is not a kafka-analyzer baseline's (each needs target, "
            f"removed_versions (API -> versions), metadata_rate, {', '.join(HEALTH_SUMS)}: numbers)"
        )
    for section, need in (
        ("producers", set(PRODUCER_KEYS)),
        ("transactions", set(TXN_OUTCOMES)),
        ("e2e", {"p99_ms"}),
    ):
        part = data.get(section, {})
        if not isinstance(part, dict) or not all(
            isinstance(v, dict) and need <= set(v) and all(isinstance(v[k], int | float) for k in need)
            for v in part.values()
        ):
            raise ValueError(
                f"{path}: its {section} are not a kafka-analyzer baseline's "
                f"(each needs {', '.join(sorted(need))}, numbers)"
            )
    return data


def _health_ok(h) -> bool:
    num = (int, float)
    return (
        isinstance(h, dict)
        and isinstance(h.get("target"), str)
        and isinstance(h.get("removed_versions"), dict)
        and all(
            isinstance(v, list) and all(isinstance(x, int) for x in v) for v in h["removed_versions"].values()
        )
        and (h.get("metadata_rate") is None or isinstance(h["metadata_rate"], num))
        and "metadata_rate" in h
        and all(isinstance(h.get(k), num) and not isinstance(h.get(k), bool) for k in HEALTH_SUMS)
    )


# -- comparing ------------------------------------------------------------------------------------------


DIMENSIONS = {
    "baseline.clients": "The same clients (client id and software) as in the baseline.",
    "baseline.api-versions": "No API or API version the baseline's client did not use.",
    "baseline.request-shape": "Produce acks, codecs, idempotence and transactions, and the Fetch "
    "isolation level, as in the baseline.",
    "baseline.handshake": "Connections start with the same requests as in the baseline.",
    "baseline.errors": "No error code the baseline did not have.",
    "baseline.latency": "Latency (p50, p99 per API) within 2x and +50 ms of the baseline.",
    "baseline.requests": "Requests per API within +-50% of the baseline.",
    "baseline.groups": "The same consumer groups as in the baseline.",
    "baseline.group-rebalances": "Rebalances per consumer group within +50% of the baseline.",
    "baseline.group-rebalance-time": "Each group's longest rebalance within 2x and +1 s of the baseline.",
    "baseline.group-lag": "Each group's max lag within 2x and +1000 records (+10 s) of the baseline.",
    "baseline.group-status": "No consumer group at a worse Burrow status (OK < WARN < ERR) than "
    "in the baseline.",
    "baseline.producers": "The same producers (client id and transactional id) as in the baseline.",
    "baseline.producer-records": "Records per producer within +-50% of the baseline.",
    "baseline.producer-retries": "Retried records per producer within +50% and +10 records of the baseline.",
    "baseline.producer-lost": "No more failed (lost) records per producer than in the baseline.",
    "baseline.producer-duplicates": "No more records written twice per producer than in the baseline.",
    "baseline.transactions": "The same transactional ids, no more hanging or failed transactions, "
    "commits and aborts within +-50% of the baseline.",
    "baseline.e2e-latency": "Each (topic, consumer group)'s end-to-end p99 within 2x and +100 ms "
    "of the baseline.",
    "baseline.client-readiness": "No client uses an API version the target Kafka release refuses "
    "(KIP-896) or old record formats that it did not use in the baseline.",
    "baseline.client-metadata-rate": "Each client's Metadata requests per second within 2x and "
    "+5/s of the baseline.",
    "baseline.client-connections": "Each client's connections within +50% and +10 of the baseline, "
    "its reconnections without backoff within +10.",
    "baseline.client-throttle": "Each client's throttled time within 2x and +100 ms of the baseline.",
}
_STATUS_RANK = {"OK": 1, "WARN": 2, "ERR": 3}


def _rank(status: str | None) -> int:
    return _STATUS_RANK.get(status or "", 0)


@dataclass(frozen=True, slots=True)
class Difference:
    rule: str  # baseline.<dimension>
    severity: str  # "error" (a regression) or "note" (an improvement, a fact)
    client: str
    message: str


def compare(base: dict, cur: dict, tol: Tolerances = Tolerances()) -> list[Difference]:
    out: list[Difference] = []
    b_clients, c_clients = base["clients"], cur["clients"]
    for key in sorted(set(b_clients) | set(c_clients)):
        b, c = b_clients.get(key), c_clients.get(key)
        if b is None:
            out.append(Difference("baseline.clients", "error", key, "a client the baseline does not have"))
            continue
        if c is None:
            out.append(
                Difference("baseline.clients", "note", key, "a client of the baseline is not in the capture")
            )
            continue
        out += _apis(key, b, c)
        out += _shape(key, b, c)
        out += _handshakes(key, b, c)
        out += _errors(key, b, c)
        out += _latency(key, b, c, tol)
        out += _counts(key, b, c, tol)
    return out + _groups(base, cur, tol) + _producers(base, cur, tol) + _health(base, cur, tol)


def _health(base: dict, cur: dict, tol: Tolerances) -> list[Difference]:
    """The clients' readiness, Metadata rate, connections and throttling."""
    if "client_health" not in base:
        if not cur.get("client_health"):
            return []
        why = "records no client health (written before it was): --update-baseline records it"
        return [Difference("baseline.client-readiness", "note", "the baseline", why)]
    out = []
    bh, ch = base["client_health"], cur.get("client_health", {})
    for key in sorted(ch):
        b, c = bh.get(key), ch[key]
        if b is None:  # (baseline.clients says it is new; its readiness is said here)
            if c["removed_versions"] or c["old_formats"]:
                what = _refused(c["removed_versions"], c["old_formats"])
                out.append(
                    Difference(
                        "baseline.client-readiness",
                        "error",
                        key,
                        f"a client the baseline does not have uses what Kafka {c['target']} refuses: {what}",
                    )
                )
            continue
        out += _readiness(key, b, c)
        x, y = b["metadata_rate"] or 0.0, c["metadata_rate"] or 0.0
        rid = "baseline.client-metadata-rate"
        if y > x * tol.latency_factor and y > x + tol.metadata_rate_margin:
            out.append(Difference(rid, "error", key, f"{y:g} Metadata requests/s (baseline {x:g}/s)"))
        elif x > y * tol.latency_factor and x > y + tol.metadata_rate_margin:
            out.append(Difference(rid, "note", key, f"{y:g} Metadata requests/s (baseline {x:g}/s)"))
        rid = "baseline.client-connections"
        x, y = b["connections"], c["connections"]
        if y > x + tol.count_tolerance * x and y > x + tol.connection_margin:
            out.append(
                Difference(
                    rid, "error", key, f"{y} connections (baseline {x}, beyond +{tol.count_tolerance:.0%})"
                )
            )
        elif x > y + tol.count_tolerance * y and x > y + tol.connection_margin:
            out.append(Difference(rid, "note", key, f"{y} connections (baseline {x})"))
        x, y = b["fast_reconnects"], c["fast_reconnects"]
        if y > x + tol.connection_margin:
            out.append(Difference(rid, "error", key, f"{y} reconnections without backoff (baseline {x})"))
        elif x > y + tol.connection_margin:
            out.append(Difference(rid, "note", key, f"{y} reconnections without backoff (baseline {x})"))
        x, y = b["throttle_ms"], c["throttle_ms"]
        rid = "baseline.client-throttle"
        if y > x * tol.latency_factor and y > x + tol.throttle_margin_ms:
            out.append(Difference(rid, "error", key, f"throttled {y:g} ms (baseline {x:g} ms)"))
        elif x > y * tol.latency_factor and x > y + tol.throttle_margin_ms:
            out.append(Difference(rid, "note", key, f"throttled {y:g} ms (baseline {x:g} ms)"))
    return out


def _refused(removed: dict[str, list[int]], old: int) -> str:
    parts = [f"{api} v{','.join(map(str, vers))}" for api, vers in sorted(removed.items())]
    if old:
        parts.append(f"{old} record batches in the old formats (magic 0/1)")
    return "; ".join(parts)


def _readiness(key: str, b: dict, c: dict) -> list[Difference]:
    rid = "baseline.client-readiness"
    if b["target"] != c["target"]:
        why = f"readiness judged for Kafka {c['target']}, the baseline for Kafka {b['target']}: not compared"
        return [Difference(rid, "note", key, why)]
    out = []
    bv, cv = b["removed_versions"], c["removed_versions"]
    new = {a: sorted(set(v) - set(bv.get(a, ()))) for a, v in cv.items()}
    new = {a: v for a, v in new.items() if v}
    gone = {a: sorted(set(v) - set(cv.get(a, ()))) for a, v in bv.items()}
    gone = {a: v for a, v in gone.items() if v}
    target = f"Kafka {c['target']} refuses (KIP-896)"
    if new:
        out.append(Difference(rid, "error", key, f"now uses what {target}: {_refused(new, 0)}"))
    if c["old_formats"] and not b["old_formats"]:
        out.append(
            Difference(
                rid,
                "error",
                key,
                f"now sends or is sent {c['old_formats']} record batches in the old formats",
            )
        )
    if gone:
        out.append(Difference(rid, "note", key, f"no longer uses what {target}: {_refused(gone, 0)}"))
    if b["old_formats"] and not c["old_formats"]:
        out.append(Difference(rid, "note", key, "no longer uses the old record formats"))
    return out


def _producers(base: dict, cur: dict, tol: Tolerances) -> list[Difference]:
    """The producer, transaction and e2e dimensions."""
    if "producers" not in base:
        if not (cur.get("producers") or cur.get("transactions") or cur.get("e2e")):
            return []
        why = "records no producers (written before they were): --update-baseline records them"
        return [Difference("baseline.producers", "note", "the baseline", why)]
    out = []
    bp, cp = base["producers"], cur.get("producers", {})
    for key in sorted(set(bp) | set(cp)):
        b, c = bp.get(key), cp.get(key)
        who = f"producer {key}"
        if b is None:
            out.append(
                Difference("baseline.producers", "error", who, "a producer the baseline does not have")
            )
            continue
        if c is None:
            out.append(
                Difference(
                    "baseline.producers", "note", who, "a producer of the baseline is not in the capture"
                )
            )
            continue
        x, y = b["records"], c["records"]
        if abs(y - x) > tol.count_tolerance * x:
            out.append(
                Difference(
                    "baseline.producer-records",
                    "error",
                    who,
                    f"{y} records (baseline {x}, beyond +-{tol.count_tolerance:.0%})",
                )
            )
        x, y = b["retried"], c["retried"]
        if y > x + tol.count_tolerance * x and y > x + tol.retry_margin:
            out.append(
                Difference("baseline.producer-retries", "error", who, f"{y} records retried (baseline {x})")
            )
        elif y < x:
            out.append(
                Difference("baseline.producer-retries", "note", who, f"{y} records retried (baseline {x})")
            )
        for k, rid, what in (
            ("failed", "baseline.producer-lost", "records lost (last attempt failed)"),
            ("duplicated", "baseline.producer-duplicates", "records written twice"),
        ):
            x, y = b[k], c[k]
            if y != x:
                out.append(Difference(rid, "error" if y > x else "note", who, f"{y} {what} (baseline {x})"))
    out += _transactions(base.get("transactions", {}), cur.get("transactions", {}), tol)
    be, ce = base.get("e2e", {}), cur.get("e2e", {})
    for key in sorted(set(be) & set(ce)):
        x, y = be[key]["p99_ms"], ce[key]["p99_ms"]
        who = f"topic | group {key}"
        if y > x * tol.latency_factor and y > x + tol.e2e_margin_ms:
            out.append(
                Difference("baseline.e2e-latency", "error", who, f"e2e p99 {y:.3f} ms (baseline {x:.3f} ms)")
            )
        elif x > y * tol.latency_factor and x > y + tol.e2e_margin_ms:
            out.append(
                Difference(
                    "baseline.e2e-latency",
                    "note",
                    who,
                    f"e2e p99 improved to {y:.3f} ms (baseline {x:.3f} ms)",
                )
            )
    return out


def _transactions(bt: dict, ct: dict, tol: Tolerances) -> list[Difference]:
    out = []
    for key in sorted(set(bt) | set(ct)):
        b, c = bt.get(key), ct.get(key)
        who = f"transactional id {key}"
        if b is None:
            out.append(
                Difference(
                    "baseline.transactions", "error", who, "a transactional id the baseline does not have"
                )
            )
            continue
        if c is None:
            out.append(
                Difference(
                    "baseline.transactions",
                    "note",
                    who,
                    "a transactional id of the baseline is not in the capture",
                )
            )
            continue
        for k in ("hanging", "failed"):
            if c[k] > b[k]:
                what = "hanging" if k == "hanging" else "ended by an error"
                out.append(
                    Difference(
                        "baseline.transactions", "error", who, f"{c[k]} transactions {what} (baseline {b[k]})"
                    )
                )
        for k in ("commit", "abort"):
            x, y = b[k], c[k]
            if abs(y - x) > tol.count_tolerance * x:
                out.append(
                    Difference(
                        "baseline.transactions",
                        "error",
                        who,
                        f"{y} {k}s (baseline {x}, beyond +-{tol.count_tolerance:.0%})",
                    )
                )
    return out


def _groups(base: dict, cur: dict, tol: Tolerances) -> list[Difference]:  # noqa: C901 - one per dimension
    if "groups" not in base:
        if not cur.get("groups"):
            return []  # nothing to compare, nothing missed
        why = "records no consumer groups (written before they were): --update-baseline records them"
        return [Difference("baseline.groups", "note", "the baseline", why)]
    out = []
    bg, cg = base["groups"], cur.get("groups", {})
    for gid in sorted(set(bg) | set(cg)):
        b, c = bg.get(gid), cg.get(gid)
        who = f"group {gid}"
        if b is None:
            out.append(
                Difference("baseline.groups", "error", who, "a consumer group the baseline does not have")
            )
            continue
        if c is None:
            out.append(
                Difference("baseline.groups", "note", who, "a group of the baseline is not in the capture")
            )
            continue
        x, y = b["rebalances"], c["rebalances"]
        if y > x and y - x > tol.count_tolerance * x:
            out.append(
                Difference(
                    "baseline.group-rebalances",
                    "error",
                    who,
                    f"{y} rebalances (baseline {x}, beyond +{tol.count_tolerance:.0%})",
                )
            )
        elif y < x:
            out.append(Difference("baseline.group-rebalances", "note", who, f"{y} rebalances (baseline {x})"))
        x, y = b["longest_rebalance_ms"] or 0.0, c["longest_rebalance_ms"] or 0.0
        if y > x * tol.latency_factor and y > x + tol.rebalance_margin_ms:
            out.append(
                Difference(
                    "baseline.group-rebalance-time",
                    "error",
                    who,
                    f"longest rebalance {y / 1000:.3f} s (baseline {x / 1000:.3f} s)",
                )
            )
        for k, unit, margin in (
            ("max_lag", " records", tol.lag_margin),
            ("max_lag_s", " s", tol.lag_margin_s),
        ):
            x, y = b.get(k) or 0, c.get(k) or 0
            if y > x * tol.latency_factor and y > x + margin:
                out.append(
                    Difference(
                        "baseline.group-lag", "error", who, f"max lag {y:g}{unit} (baseline {x:g}{unit})"
                    )
                )
        if _rank(c["status"]) > max(_rank(b["status"]), 1):  # no status then: no commit seen, as OK
            out.append(
                Difference(
                    "baseline.group-status",
                    "error",
                    who,
                    f"Burrow status {c['status']} (baseline {b['status']})",
                )
            )
        elif _rank(c["status"]) < _rank(b["status"]) and _rank(c["status"]):
            out.append(
                Difference(
                    "baseline.group-status",
                    "note",
                    who,
                    f"Burrow status {c['status']} (baseline {b['status']})",
                )
            )
    return out


def _apis(key: str, b: dict, c: dict) -> list[Difference]:
    out = []
    for api, vers in sorted(c["apis"].items()):
        old = set(b["apis"].get(api, ()))
        if not old:
            out.append(
                Difference(
                    "baseline.api-versions", "error", key, f"new API {api} v{','.join(map(str, vers))}"
                )
            )
            continue
        new = sorted(set(vers) - old)
        if new:
            out.append(
                Difference(
                    "baseline.api-versions",
                    "error",
                    key,
                    f"{api} v{','.join(map(str, new))} (baseline: v{','.join(map(str, sorted(old)))})",
                )
            )
    for api in sorted(set(b["apis"]) - set(c["apis"])):
        out.append(Difference("baseline.api-versions", "note", key, f"{api} is no longer used"))
    return out


def _shape(key: str, b: dict, c: dict) -> list[Difference]:
    out = []
    bs, cs = b["request_shape"], c["request_shape"]
    for dim in sorted(set(bs) | set(cs)):
        old, new = bs.get(dim, []), cs.get(dim, [])
        if not new or not old:
            continue  # the request kind is not in one of them: counted by api-versions/requests
        if dim == "produce.codec":
            lost = sorted(set(map(str, old)) - set(map(str, new)))
            gained = sorted(set(map(str, new)) - set(map(str, old)))
            if lost:
                out.append(
                    Difference(
                        "baseline.request-shape",
                        "error",
                        key,
                        f"produce codec {', '.join(lost)} no longer used (now {', '.join(map(str, new))})",
                    )
                )
            elif gained:
                out.append(
                    Difference(
                        "baseline.request-shape",
                        "error",
                        key,
                        f"produce codec {', '.join(gained)} is new (baseline {', '.join(map(str, old))})",
                    )
                )
        elif sorted(map(str, old)) != sorted(map(str, new)):
            out.append(
                Difference(
                    "baseline.request-shape",
                    "error",
                    key,
                    f"{dim}: {', '.join(map(str, new))} (baseline: {', '.join(map(str, old))})",
                )
            )
    return out


def _handshakes(key: str, b: dict, c: dict) -> list[Difference]:
    new = sorted(set(c["handshakes"]) - set(b["handshakes"]))
    return [Difference("baseline.handshake", "error", key, f"connections start with {h}") for h in new]


def _errors(key: str, b: dict, c: dict) -> list[Difference]:
    out = []
    for api, errs in sorted(c["errors"].items()):
        old = b["errors"].get(api, {})
        for name, n in sorted(errs.items()):
            if name not in old:
                out.append(Difference("baseline.errors", "error", key, f"{api} answered {name} ({n}x), new"))
    for api, errs in sorted(b["errors"].items()):
        for name in sorted(set(errs) - set(c["errors"].get(api, {}))):
            out.append(Difference("baseline.errors", "note", key, f"{api} no longer answered {name}"))
    return out


def _latency(key: str, b: dict, c: dict, tol: Tolerances) -> list[Difference]:
    out = []
    for api, now in sorted(c["latency_ms"].items()):
        old = b["latency_ms"].get(api)
        if old is None:
            continue
        for q in ("p50", "p99"):
            x, y = old[q], now[q]
            if y > x * tol.latency_factor and y > x + tol.latency_margin_ms:
                out.append(
                    Difference(
                        "baseline.latency",
                        "error",
                        key,
                        f"{api} {q} latency {y:.3f} ms (baseline {x:.3f} ms)",
                    )
                )
            elif x > y * tol.latency_factor and x > y + tol.latency_margin_ms:
                out.append(
                    Difference(
                        "baseline.latency",
                        "note",
                        key,
                        f"{api} {q} latency improved to {y:.3f} ms (baseline {x:.3f} ms)",
                    )
                )
    return out


def _counts(key: str, b: dict, c: dict, tol: Tolerances) -> list[Difference]:
    out = []
    for api in sorted(set(b["requests"]) & set(c["requests"])):
        x, y = b["requests"][api], c["requests"][api]
        if abs(y - x) > tol.count_tolerance * x:
            out.append(
                Difference(
                    "baseline.requests",
                    "error",
                    key,
                    f"{api}: {y} requests (baseline {x}, beyond +-{tol.count_tolerance:.0%})",
                )
            )
    return out
