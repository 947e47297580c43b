"""How consumers fetch: idle long-polls told apart from slow answers, busy polling, fetch sessions.

A Fetch answered with no record after waiting its ``max_wait_ms`` is a consumer waiting for data
(a long-poll), not a slow broker: :class:`FetchTracker` counts such **idle long-polls** apart and
gives the latency percentiles of the other fetches. A client that asks with ``max_wait_ms`` under
:data:`BUSY_WAIT_MS` and gets mostly empty answers is **busy polling** (it spins the broker).

**Fetch sessions** (KIP-227): a full fetch with session id 0 and epoch 0 asks for a session, the
answer's non-zero session id creates it; epoch -1 closes it (or asks for none). An answer
FETCH_SESSION_ID_NOT_FOUND or INVALID_FETCH_SESSION_EPOCH means the broker dropped the session:
usually its session cache was full and a newer session evicted it, so each such error names the
sessions other connections created since the victim's last good fetch.

A consumer of :meth:`~analyzer.pipeline.Analysis.run` (``event`` per event).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from analyzer.dissect.constants import ApiKey, ErrorCode
from analyzer.model import Exchange

BUSY_WAIT_MS = 10  # a max_wait_ms below this, with mostly empty answers, is busy polling
IDLE_SLACK = 0.95  # an empty answer after at least this share of max_wait_ms is a long-poll
_SESSION_ERRORS = {
    ErrorCode.FETCH_SESSION_ID_NOT_FOUND: "FETCH_SESSION_ID_NOT_FOUND",
    ErrorCode.INVALID_FETCH_SESSION_EPOCH: "INVALID_FETCH_SESSION_EPOCH",
}


@dataclass(slots=True)
class FetchClient:
    """One fetching connection (client id and address): what its fetches were."""

    client_id: str | None
    client: str
    broker: str
    fetches: int = 0
    empty: int = 0
    idle: int = 0  # empty answers that waited max_wait_ms: long-polls
    short_waits: int = 0  # fetches asking max_wait_ms < BUSY_WAIT_MS
    latencies_ms: list[float] = field(default_factory=list)  # of the fetches that are not idle
    sessions_created: int = 0
    sessions_closed: int = 0
    session: int = 0  # the fetch session in use (0: none)
    last_good: float = 0.0
    session_errors: list[dict] = field(default_factory=list)

    @property
    def busy(self) -> bool:
        return self.fetches >= 20 and self.short_waits * 2 > self.fetches and self.empty * 2 > self.fetches

    def row(self) -> dict:
        from statistics import quantiles  # (groups' report only: not loaded at start-up)

        lat = sorted(self.latencies_ms)
        cuts = quantiles(lat, n=100, method="inclusive") if len(lat) > 1 else lat * 99
        return {
            "client_id": self.client_id,
            "client": self.client,
            "broker": self.broker,
            "fetches": self.fetches,
            "empty": self.empty,
            "idle_long_polls": self.idle,
            "empty_ratio": round(self.empty / self.fetches, 4) if self.fetches else None,
            "busy_polling": self.busy,
            "p50_ms": round(cuts[49], 3) if cuts else None,
            "p99_ms": round(cuts[98], 3) if cuts else None,
            "max_ms": round(lat[-1], 3) if lat else None,
            "sessions_created": self.sessions_created,
            "sessions_closed": self.sessions_closed,
            "session_errors": self.session_errors,
        }


class FetchTracker:
    """The consumer: per fetching connection, its long-polls, latencies and fetch sessions."""

    def __init__(self) -> None:
        self.clients: dict[int, FetchClient] = {}  # by connection id
        self.created: list[tuple[float, int, int]] = []  # (time, connection, session id)

    def event(self, ev) -> None:
        if type(ev) is not Exchange or ev.api_key != ApiKey.FETCH or ev.request is None:
            return
        req = ev.request.body
        resp = ev.response.body if ev.response is not None else None
        if req is None or resp is None or ev.latency is None:
            return
        conn = ev.conn
        c = self.clients.get(conn.id)
        if c is None:
            known = conn.client_direction is not None
            c = self.clients[conn.id] = FetchClient(
                ev.client_id, str(conn.client if known else conn.a), str(conn.broker if known else conn.b)
            )
        c.fetches += 1
        wait = req.get("max_wait_ms")
        if isinstance(wait, int) and 0 <= wait < BUSY_WAIT_MS:
            c.short_waits += 1
        latency_ms = ev.latency * 1000
        if not _has_records(resp):
            c.empty += 1
            if isinstance(wait, int) and wait > 0 and latency_ms >= wait * IDLE_SLACK:
                c.idle += 1
            else:
                c.latencies_ms.append(latency_ms)
        else:
            c.latencies_ms.append(latency_ms)
        self._session(c, ev, req, resp)

    def _session(self, c: FetchClient, ev: Exchange, req, resp) -> None:
        t = ev.ts
        err = resp.get("error_code")
        if err in _SESSION_ERRORS:
            since = c.last_good
            others = [
                {"connection": conn, "session_id": sid, "time": ts}
                for ts, conn, sid in self.created
                if ts >= since and conn != ev.conn.id
            ]
            c.session_errors.append({"time": t, "error": _SESSION_ERRORS[err], "evicted_by": others})
            c.session = 0
            return
        if err not in (None, ErrorCode.NONE):
            return
        c.last_good = t
        sid, epoch = req.get("session_id"), req.get("session_epoch")
        if epoch == -1 and c.session:
            c.sessions_closed += 1
            c.session = 0
        new = resp.get("session_id")
        if epoch == 0 and isinstance(new, int) and new and new != c.session:
            c.sessions_created += 1
            c.session = new
            self.created.append((t, ev.conn.id, new))
        elif isinstance(sid, int) and sid:
            c.session = sid

    def rows(self) -> list[dict]:
        return [c.row() for _, c in sorted(self.clients.items())]


def _has_records(resp) -> bool:
    """Whether a Fetch answer carries any record batch (or legacy message)."""
    topics = resp.child("responses")
    for t in topics.children or () if topics is not None else ():
        parts = t.child("partitions")
        for p in parts.children or () if parts is not None else ():
            for x in p.children or ():
                if x.type == "records" and x.children:
                    return True
    return False
