"""What a group's members fetched: each partition's pause across a rebalance, and each consumer's
position lag between its commits.

A consumer fetches its partitions from their leaders, over connections other than the one to its
group's coordinator: a fetcher is known by its client host and client id (:data:`Fetcher`), the
same as the member's (:attr:`~analyzer.session.rebalances.Member.client` and ``client_id``).

* **Fetch sessions** (KIP-227) are followed per connection: a full fetch names every partition it
  wants; an incremental one (epoch above 0) only those that changed, the others staying in the
  session, and ``forgotten_topics_data`` drops some. Each Fetch *names* the partitions of its
  session after it, so a consumer whose fetches are incremental is seen fetching each of them.
* **Pause per partition**: when a member is given its assignment (its SyncGroup answer; KIP-848:
  the heartbeat answer with a new target), each partition of it waits for that member's first
  Fetch naming it; the pause runs from the end (the answer) of the last Fetch naming the
  partition by any member of the group before the assignment to that first Fetch's request (0
  when a Fetch was outstanding across). A partition the member kept (cooperative, KIP-848)
  barely pauses; one moved, or every one of an eager rebalance, for as long as the group could
  not read it. Kept per rebalance and partition, the longest.
* **Position lag**: each Fetch's offset for a partition (the consumer's position) against the
  high watermark its answer gave; the largest since the consumer's previous commit of the
  partition is given with each commit (:meth:`ConsumptionTracker.take`).

Processes that share the work send :meth:`ConsumptionTracker.facts` of each Fetch (the session
followed where its connection is) and the merge applies them in capture order, as one run does.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from analyzer.dissect.constants import ApiKey, ErrorCode
from analyzer.model import ConnInfo, Exchange
from analyzer.plain import record
from analyzer.session.walks import fetched, topic_of

Fetcher = tuple[str, str | None]  # (client host, client id)
TP = tuple[str, int]
Ref = tuple[str | None, str | None, int]  # (topic name, topic id, partition)
_DROPPED_SESSION = frozenset((ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH))


@lru_cache(maxsize=4096)
def host_of(address: str | None) -> str:
    """The host of "host:port" ("[v6]:port" too)."""
    if not address:
        return ""
    return address.rsplit(":", 1)[0] if address.count(":") == 1 or address.startswith("[") else address


_ADDRESSES: dict[tuple, tuple[str, str]] = {}  # (a, b, client direction) -> addresses()
_ADDRESSES_KEPT = 4096


def addresses(conn: ConnInfo) -> tuple[str, str]:
    """A connection's client address as text (its first sender's when the roles are not known)
    and "client -> broker", formatted once per connection (a bounded table)."""
    k = (conn.a, conn.b, conn.client_direction)
    got = _ADDRESSES.get(k)
    if got is None:
        if len(_ADDRESSES) >= _ADDRESSES_KEPT:
            _ADDRESSES.clear()
        known = conn.client_direction is not None
        client = str(conn.client if known else conn.a)
        got = _ADDRESSES[k] = (client, f"{client} -> {conn.broker if known else conn.b}")
    return got


def fetcher_of(ev: Exchange) -> Fetcher:
    """The client host and client id of an exchange's sender: who fetches, commits or joins."""
    return host_of(addresses(ev.conn)[0]), ev.client_id


@record
class Pause:
    """A partition's pause across a rebalance: from the group's last Fetch naming it before its
    new owner was given it to the owner's first Fetch naming it after."""

    topic: str
    partition: int
    member: str
    assigned: float  # when the member was given the partition
    last_fetch: float | None  # the answer; None: no Fetch of it by the group before, in the capture
    first_fetch: float | None = None  # the request; None: not fetched again in the capture

    @property
    def pause_ms(self) -> float | None:
        if self.last_fetch is None or self.first_fetch is None:
            return None
        return round(max(0.0, self.first_fetch - self.last_fetch) * 1000, 3)

    def row(self) -> dict:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "member": self.member,
            "last_fetch": self.last_fetch,
            "first_fetch": self.first_fetch,
            "pause_ms": self.pause_ms,
        }


class ConsumptionTracker:
    """Fetch sessions, the last Fetch of each partition per fetcher, pauses, positions."""

    def __init__(self, topic_ids: dict[str, str] | None = None) -> None:
        self.topic_ids = topic_ids
        self.sessions: dict[int, dict[Ref, None]] = {}  # connection id -> its session's partitions
        self.last: dict[TP, dict[Fetcher, float]] = {}  # the last Fetch's answer naming it, per fetcher
        self.waiting: dict[tuple[Fetcher, TP], list[Pause]] = {}
        # (group, rebalance index) -> (topic, partition) -> its pauses there
        self.pauses: dict[tuple[str, int], dict[TP, list[Pause]]] = {}
        # (fetcher, partition) -> [position, its lag then, the largest lag since the last take]
        self.positions: dict[tuple[Fetcher, TP], list] = {}
        # (bounded by its owner) each fetcher's partitions, told of each fetch at its time
        self.fetched_by: dict[Fetcher, set[TP]] = {}
        self.on_fetcher: Callable[[Fetcher, float], None] | None = None

    def closed(self, conn_id: int) -> None:
        """A connection ended: its fetch session with it (where :meth:`facts` runs)."""
        self.sessions.pop(conn_id, None)

    # -- what a Fetch tells ---------------------------------------------------------------------------
    def facts(self, ev) -> tuple | None:
        """(request time, answer time or None, fetcher, [(partition ref, fetch offset or None, high
        watermark or None)]) of a Fetch: every partition its session names after it (the offset
        only for those the request itself names); None for another exchange."""
        if type(ev) is not Exchange or ev.api_key != ApiKey.FETCH or ev.request is None:
            return None
        req = ev.request.body
        if req is None:
            return None
        conn = ev.conn
        state = req.child("replica_state")
        replica = (state if state is not None else req).get("replica_id")
        if isinstance(replica, int) and replica >= 0:
            return None  # a follower replicating, not a consumer
        walk = fetched(ev)
        named, forgotten = walk.named, walk.forgotten
        resp = ev.response.body if ev.response is not None else None
        epoch = req.get("session_epoch")
        if isinstance(epoch, int) and epoch > 0 and conn.id in self.sessions:
            session = self.sessions[conn.id]
            for ref in forgotten:
                session.pop(ref, None)
            session.update(dict.fromkeys(named))
            parts = list(session)
        else:
            parts = list(named)
            if resp is not None and resp.get("session_id") and epoch == 0:
                self.sessions[conn.id] = dict.fromkeys(named)
            else:
                self.sessions.pop(conn.id, None)
        if resp is not None and resp.get("error_code") in _DROPPED_SESSION:
            self.sessions.pop(conn.id, None)
        hws: dict[Ref, int] = {}
        if resp is not None and resp.get("error_code") in (None, ErrorCode.NONE):
            for fp in walk.answered:
                if fp.error == ErrorCode.NONE and fp.high_watermark is not None and fp.high_watermark >= 0:
                    hws[fp.ref] = fp.high_watermark
        if not parts:
            return None
        fetcher = fetcher_of(ev)
        answered = ev.response.frame.ts_first if ev.response is not None else None
        return (
            ev.request.frame.ts_first,
            answered,
            fetcher,
            [(ref, named.get(ref), hws.get(ref)) for ref in parts],
        )

    def forget_fetcher(self, fetcher: Fetcher) -> None:
        """Let go of a fetcher's last fetches and positions (its owner's bound)."""
        for tp in self.fetched_by.pop(fetcher, ()):
            last = self.last.get(tp)
            if last is not None:
                last.pop(fetcher, None)
                if not last:
                    del self.last[tp]
            self.positions.pop((fetcher, tp), None)

    def apply(self, facts: tuple) -> None:
        t, answered, fetcher, parts = facts
        end = t if answered is None else answered
        if self.on_fetcher is not None:
            self.on_fetcher(fetcher, end)
        mine = self.fetched_by.get(fetcher)
        if mine is None:
            mine = self.fetched_by[fetcher] = set()
        for ref, offset, hw in parts:
            tp = topic_of(ref, self.topic_ids)
            mine.add(tp)
            self.last.setdefault(tp, {})[fetcher] = end
            key = (fetcher, tp)
            waiting = self.waiting.get(key)
            if waiting:
                for p in waiting:
                    p.first_fetch = t
                del self.waiting[key]
            if offset is not None:
                lag = hw - offset if hw is not None and hw >= offset else None
                pos = self.positions.get(key)
                if pos is None:
                    self.positions[key] = [offset, lag, lag]
                else:
                    pos[0], pos[1] = offset, lag
                    if lag is not None and (pos[2] is None or lag > pos[2]):
                        pos[2] = lag

    # -- what the group timeline tells ----------------------------------------------------------------
    def assigned(
        self,
        group: str,
        rebalance: int,
        member: str,
        fetcher: Fetcher,
        fetchers: set[Fetcher],
        assignment: dict[str, list[int]],
        t: float,
    ) -> None:
        """``member`` (fetching as ``fetcher``) was given ``assignment`` at ``t`` in the group's
        ``rebalance`` (its index); ``fetchers``: the group's members' fetchers."""
        kept = self.pauses.setdefault((group, rebalance), {})
        for topic, partitions in assignment.items():
            for p in partitions:
                tp = (topic, p)
                seen = self.last.get(tp, {})
                before = max((x for f, x in seen.items() if f in fetchers), default=None)
                pause = Pause(topic, p, member, t, before)
                tried = kept.setdefault(tp, [])
                waiting = self.waiting.setdefault((fetcher, tp), [])
                for old in [x for x in tried if x.first_fetch is None and x in waiting]:
                    # given again before fetching it: one wait, from the earlier last Fetch
                    tried.remove(old)
                    waiting.remove(old)
                    if old.last_fetch is not None and (before is None or old.last_fetch < before):
                        pause.last_fetch = old.last_fetch
                tried.append(pause)
                waiting.append(pause)

    def rebalance_pauses(self, group: str, rebalance: int) -> list[Pause]:
        """The pauses of a group's rebalance (by its index), a partition's longest (one given
        twice, as a kept partition in a cooperative or KIP-848 rebalance, waited twice), by topic
        and partition; a pause not over at the capture's end has no ``first_fetch``."""
        kept = self.pauses.get((group, rebalance), {})
        out = []
        for tp in sorted(kept):
            tried = kept[tp]
            over = [x for x in tried if x.pause_ms is not None]
            out.append(max(over, key=lambda x: x.pause_ms or 0.0) if over else tried[-1])
        return out

    def take(self, fetcher: Fetcher, tp: TP) -> tuple[int | None, int | None]:
        """(the position, the largest position lag since the last take) of a fetcher's partition,
        at its commit; the next take starts from its lag now."""
        pos = self.positions.get((fetcher, tp))
        if pos is None:
            return None, None
        largest = pos[2]
        pos[2] = pos[1]
        return pos[0], largest
