"""The built-in pack's client rules, judged on :class:`~analyzer.session.clients.ClientTracker`
(the inventory, readiness and hygiene that ``clients``, ``stats`` and ``export`` show).

:class:`ClientJudge` takes each exchange's facts after the tracker has (the engine feeds both in
its one pass over the events) and keeps, per client (a client id on a host) and bounded by the
APIs and versions it used, the exchanges its findings name: the first request of each (API,
version) the target release refuses, the first exchange carrying old record formats, the first
Metadata answer of its longest loop of missing-topic answers, its first throttled answer. At the
end of the capture (:meth:`ClientJudge.findings`):

* ``kafka.client-readiness``: a client that used a version the ``target`` release no longer
  accepts (KIP-896) or sent or was sent record batches in the old formats (magic 0/1);
* ``kafka.metadata-storm``: a client whose Metadata answers named a topic missing or leaderless
  more than ``max_answers`` times in a row, or that sent more than ``max_rate`` Metadata
  requests per second (over the span of its Metadata requests, a second at least);
* ``kafka.connection-churn``: a client that reconnected to a broker within 100 ms of its last
  connection's end more than ``max_fast_reconnects`` times (a reconnect loop without backoff;
  connections refused or closed before a request included), or opened more than
  ``max_per_min`` connections a minute (over a minute or more);
* ``kafka.throttling``: a client whose answers were throttled more than ``max`` ms in all.

Every message names the client (id, host, software), the evidence, and its coverage: what the
capture saw of it (exchanges, connections, first and last seen): a capture on one broker sees
part of a client.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from analyzer.check.groups import Evidence
from analyzer.dissect.constants import ApiKey
from analyzer.model import Exchange
from analyzer.session.clients import EXCHANGE, NO_BACKOFF_S, TARGETS, ClientTracker, ClientView

READINESS, STORM, CHURN, THROTTLE = "readiness", "storm", "churn", "throttle"  # Rule.judge
JUDGES = (READINESS, STORM, CHURN, THROTTLE)
SHOWN = 6  # removed versions named in one finding (the others counted)


def target_of(value: float) -> str:
    """A release given as a number in [pack] (4.0 -> "4.0"); ValueError for an unknown one."""
    text = f"{value:.1f}"
    if text not in TARGETS:
        raise ValueError(f"unknown target {value:g} (known: {', '.join(TARGETS)})")
    return text


@dataclass(slots=True)
class _Seen:
    exchanges: int = 0
    first: Evidence | None = None  # its first exchange
    versions: dict[tuple[int, int], Evidence] = field(default_factory=dict)  # first of each
    old: Evidence | None = None  # the first exchange with old record formats
    loop: dict[str, Evidence] = field(default_factory=dict)  # topic -> first answer of the run
    longest: dict[str, Evidence] = field(default_factory=dict)  # topic -> start of the longest run
    throttled: Evidence | None = None


@dataclass(frozen=True, slots=True)
class ClientFinding:
    rule: str
    message: str
    evidence: Evidence | None


@dataclass(slots=True)
class Bounds:
    """The rules' settings (``[pack]``): None for a bound not set; rule ids by judge."""

    target: str = TARGETS[-1]
    max_answers: float | None = None
    max_rate: float | None = None
    max_fast: float | None = None
    max_per_min: float | None = None
    throttle_ms: float | None = None
    rules: dict[str, str] = field(default_factory=dict)  # judge -> rule id


class ClientJudge:
    def __init__(self, tracker: ClientTracker, bounds: Bounds) -> None:
        self.tracker = tracker
        self.bounds = bounds
        self.seen: dict[tuple[str, str | None], _Seen] = {}
        # the clients the tracker let go before the capture's end (--state-idle, --state-max)
        # that a rule finds something on, judged as they go: kept for the findings
        self.gone: list[tuple[ClientView, _Seen]] = []
        tracker.on_evict = self._let_go

    def _let_go(self, ck: tuple[str, str | None], c: ClientView) -> None:
        s = self.seen.pop(ck, None) or _Seen()
        if self._judge(c, s, c.first, False):
            self.gone.append((c, s))

    def exchange(self, ex: Exchange, facts: tuple | None, n: int, loc: Callable[[], dict]) -> None:
        """After the tracker applied ``facts`` of ``ex`` (the ``n``-th exchange of the capture)."""
        if facts is None or facts[0] != EXCHANGE:
            return
        _, t, _label, host, client_id, key, version, _sw, meta, _g, throttle, _size, old, _moved = facts
        ck = (host, client_id)
        s = self.seen.get(ck)
        if s is None:
            s = self.seen[ck] = _Seen()
        s.exchanges += 1
        ev: Evidence | None = None

        def evidence() -> Evidence:
            nonlocal ev
            if ev is None:
                resp = ex.response
                ev = Evidence(n, loc(), ex, t, resp.frame.ts_first if resp is not None else None)
            return ev

        if s.first is None:
            s.first = evidence()
        if (key, version) not in s.versions:
            s.versions[(key, version)] = evidence()
        if old and s.old is None:
            s.old = evidence()
        if throttle and s.throttled is None:
            s.throttled = evidence()
        if meta is not None and meta[2]:
            c = self.tracker.clients.get(ck)
            missing = {topic for topic, _ in meta[1]}
            for topic in missing:
                run = c.missing_run.get(topic) if c is not None else None
                if run is not None and run[1] == 1:
                    s.loop[topic] = evidence()
                if c is not None and run is not None and c.longest_runs[topic][1] == run[1]:
                    s.longest[topic] = s.loop.get(topic) or evidence()  # this run is the longest

    # -- judging --------------------------------------------------------------------------------------
    def findings(self, first: float | None, clients: set[str | None] | None) -> list[ClientFinding]:
        """The findings at the capture's end (``first``: the zero of the times said); ``clients``:
        only those client ids (``check -Y``), None for all."""
        t0 = first or 0.0
        out: list[ClientFinding] = []
        every = [(c, self.seen.get(ck) or _Seen(), True) for ck, c in self.tracker.clients.items()]
        every += [(c, s, False) for c, s in self.gone]
        for c, s, kept in sorted(every, key=lambda x: (x[0].first, str((x[0].host, x[0].client_id)))):
            if clients is None or c.client_id in clients:
                out += self._judge(c, s, t0, kept)
        return out

    def _judge(self, c: ClientView, s: _Seen, t0: float, kept: bool = True) -> list[ClientFinding]:
        """The findings on one client (``kept``: False for a client let go before the end)."""
        b = self.bounds
        rules = b.rules
        out: list[ClientFinding] = []
        row = c.row(b.target)
        who = f"client {c.client_id or '-'} on {c.host} ({row['software']})"
        gone = "" if kept else "; let go before the capture's end (--state-idle, --state-max)"
        cover = (
            f"coverage: {s.exchanges} exchanges on {len(c.connections)} connections from "
            f"{c.first - t0:.3f} s to {c.last - t0:.3f} s{gone}"
        )
        if READINESS in rules:
            out += self._readiness(rules[READINESS], who, row, s, t0, cover)
        if STORM in rules:
            out += self._storm(rules[STORM], who, c, row, s, t0, cover)
        if CHURN in rules:
            out += self._churn(rules[CHURN], who, c, row, s, t0, cover)
        if THROTTLE in rules and b.throttle_ms is not None and row["throttle_ms"] > b.throttle_ms:
            by_api = ", ".join(f"{k} {v} ms" for k, v in row["throttle_by_api"].items())
            first_at = f"; first at {s.throttled.names(t0)}" if s.throttled else ""
            out.append(
                ClientFinding(
                    rules[THROTTLE],
                    f"{who}: throttled {row['throttle_ms']} ms > {b.throttle_ms:g} ms by the brokers' "
                    f"quotas ({by_api}{first_at}); {cover}",
                    s.throttled,
                )
            )
        return out

    def _readiness(
        self, rid: str, who: str, row: dict, s: _Seen, t0: float, cover: str
    ) -> list[ClientFinding]:
        if row["ready"]:
            return []
        removed, old = row["removed_versions"], row["old_formats"]
        counts = {(a["api_key"], a["version"]): a["count"] for a in row["apis"]}
        parts = []
        first: Evidence | None = None
        for x in removed[:SHOWN]:
            ev = s.versions.get((x["api_key"], x["version"]))
            first = first or ev
            accepted = f"accepts v{x['accepted']}" if x["accepted"] else "removed the API"
            at = f", first {ev.names(t0)}" if ev is not None else ""
            n = counts.get((x["api_key"], x["version"]), 0)
            parts.append(f"{x['api_name']} v{x['version']} x{n} ({accepted}{at})")
        if len(removed) > SHOWN:
            parts.append(f"and {len(removed) - SHOWN} more versions")
        if old:
            at = f", first {s.old.names(t0)}" if s.old is not None else ""
            parts.append(f"{old} record batches in the old formats (magic 0/1, KIP-724{at})")
            first = first or s.old
        return [
            ClientFinding(
                rid,
                f"{who}: not ready for Kafka {row['target']} (KIP-896): {'; '.join(parts)}; {cover}",
                first,
            )
        ]

    def _storm(
        self, rid: str, who: str, c: ClientView, row: dict, s: _Seen, t0: float, cover: str
    ) -> list[ClientFinding]:
        b = self.bounds
        out = []
        if b.max_answers is not None:
            for topic, (err, n) in sorted(c.longest_runs.items()):
                if n <= b.max_answers:
                    continue
                ev = s.longest.get(topic)
                at = f", from {ev.names(t0)}" if ev is not None else ""
                out.append(
                    ClientFinding(
                        rid,
                        f"{who}: Metadata loop: {n} answers {err} for {topic} in a row > "
                        f"{b.max_answers:g} ({row['metadata_requests']} Metadata requests{at}); {cover}",
                        ev,
                    )
                )
        rate = row["metadata_rate"]
        if b.max_rate is not None and rate is not None and rate > b.max_rate:
            first = s.versions.get(next((k for k in c.apis if k[0] == ApiKey.METADATA), (-1, -1)))
            share = row["metadata_all_topics"]
            every = f", {share:.0%} for all topics" if share else ""
            span = f"{(c.metadata_first or 0.0) - t0:.3f} s to {c.metadata_last - t0:.3f} s"
            out.append(
                ClientFinding(
                    rid,
                    f"{who}: Metadata storm: {rate:.1f} requests/s > {b.max_rate:g}/s "
                    f"({row['metadata_requests']} Metadata requests from "
                    f"{span}{every}); {cover}",
                    first,
                )
            )
        return out

    def _churn(
        self, rid: str, who: str, c: ClientView, row: dict, s: _Seen, t0: float, cover: str
    ) -> list[ClientFinding]:
        b = self.bounds
        said = []
        if b.max_fast is not None and c.fast_reconnects > b.max_fast:
            empty = f", {c.empty} refused or closed before a request" if c.empty else ""
            said.append(
                f"{c.fast_reconnects} reconnections within {NO_BACKOFF_S * 1000:.0f} ms of the last "
                f"connection's end > {b.max_fast:g} (no backoff{empty})"
            )
        per_min = row["connections_per_min"]
        if b.max_per_min is not None and per_min is not None and per_min > b.max_per_min:
            said.append(f"{per_min:.1f} connections/min > {b.max_per_min:g}")
        if not said:
            return []
        life = row["median_lifetime_s"]
        median = f", median lifetime {life:.3f} s" if life is not None else ""
        # no exchange is the churn: its first exchange names the client (for waivers' where)
        at = f", first {s.first.names(t0)}" if s.first is not None else ""
        return [
            ClientFinding(
                rid,
                f"{who}: connection churn: {'; '.join(said)} ({row['connections']} connections{median}{at}); "
                f"{cover}",
                s.first,
            )
        ]
