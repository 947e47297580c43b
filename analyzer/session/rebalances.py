"""Consumer groups over time, as the wire shows them: generations, members, assignments and
rebalances (start, join and sync phases, end, straggler, who joined, left or was evicted, why).

A consumer (:meth:`event` per event, in capture order) of the classic group protocol
(JoinGroup, SyncGroup, Heartbeat, LeaveGroup, and the answers to OffsetCommit):

* a **rebalance** starts at the first of: a JoinGroup request after a stable generation, an answer
  REBALANCE_IN_PROGRESS (to a Heartbeat, SyncGroup or OffsetCommit), a LeaveGroup request while
  other members remain; its **join phase** ends with the first JoinGroup answer of the new
  generation, its **sync phase** (and the rebalance) with the last successful SyncGroup answer
  of that generation;
* the **straggler** is the member whose JoinGroup came last, with its delay from the start
  against its rebalance_timeout_ms;
* members **joined** (in the new generation, not the old), **left** (a LeaveGroup named them) and
  **evicted** (in the old generation, not the new, without a LeaveGroup): by **session expiry**
  when nothing was heard from them for longer than their session_timeout_ms before the start,
  else for not rejoining in time;
* the **cause**: the KIP-800 reason a JoinGroup or LeaveGroup gave, else a member leaving, a
  session expiry, a member joining or rejoining, FENCED_INSTANCE_ID (two consumers with one
  static group.instance.id), UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION answers, or an unseen trigger;
* a static member (group.instance.id) rejoining and answered with the generation it had is a
  rebalance **avoided**, counted apart.

**Coverage**: a capture sees the coordinator's connections it holds. A group whose generation
numbers jump, or whose members heartbeat in generations never seen formed, was partly outside
the capture; :attr:`GroupView.coverage` says what was and was not seen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from analyzer.dissect.constants import ApiKey, ErrorCode
from analyzer.model import Exchange, Field
from analyzer.plain import field, record, replace
from analyzer.session.internal import GroupMetadataFact

RECORDS_SOURCE = "__consumer_offsets"  # a generation read from a GroupMetadata record
GROUP_APIS = frozenset(
    (
        ApiKey.JOIN_GROUP,
        ApiKey.SYNC_GROUP,
        ApiKey.HEARTBEAT,
        ApiKey.LEAVE_GROUP,
        ApiKey.OFFSET_COMMIT,
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
    )
)
_EVICTING = {
    ErrorCode.UNKNOWN_MEMBER_ID: "UNKNOWN_MEMBER_ID",
    ErrorCode.ILLEGAL_GENERATION: "ILLEGAL_GENERATION",
    ErrorCode.FENCED_INSTANCE_ID: "FENCED_INSTANCE_ID (two consumers with one group.instance.id)",
    ErrorCode.FENCED_MEMBER_EPOCH: "FENCED_MEMBER_EPOCH",
}


@record
class Member:
    """A member of a generation: ids, who it is, what it was assigned."""

    member_id: str
    instance_id: str | None = None
    client_id: str | None = None
    client: str | None = None  # its address (host:port)
    assignment: dict[str, list[int]] = field(default_factory=dict)

    def row(self) -> dict:
        return {
            "member_id": self.member_id,
            "instance_id": self.instance_id,
            "client_id": self.client_id,
            "client": self.client,
            "assignment": {t: sorted(ps) for t, ps in sorted(self.assignment.items())},
        }


@record
class Generation:
    group: str
    generation: int
    time: float  # the first JoinGroup answer that announced it
    protocol_type: str | None
    protocol_name: str | None
    leader: str | None
    members: list[Member]
    source: str | None = None  # None: the group protocol's exchanges; else where it was read

    def row(self) -> dict:
        out = {
            "group": self.group,
            "generation": self.generation,
            "time": self.time,
            "protocol_type": self.protocol_type,
            "protocol_name": self.protocol_name,
            "leader": self.leader,
            "members": [m.row() for m in sorted(self.members, key=lambda m: m.member_id)],
        }
        if self.source is not None:
            out["source"] = self.source
        return out


@record
class Rebalance:
    group: str
    protocol: str  # "classic" or "consumer" (KIP-848)
    generation_before: int | None
    generation_after: int | None  # None: it did not finish in the capture
    start: float
    end: float | None
    join_end: float | None
    members_before: list[str]
    members_after: list[str]
    joined: list[str]
    left: list[str]
    evicted: list[str]
    expired: list[str]  # the evicted whose session timed out
    straggler: str | None
    straggler_delay_ms: float | None
    straggler_timeout_ms: int | None
    cause: str

    @property
    def duration_ms(self) -> float | None:
        return None if self.end is None else (self.end - self.start) * 1000

    def row(self) -> dict:
        join_ms = None if self.join_end is None else (self.join_end - self.start) * 1000
        sync_ms = None if self.end is None or self.join_end is None else (self.end - self.join_end) * 1000
        return {
            "group": self.group,
            "protocol": self.protocol,
            "generation_before": self.generation_before,
            "generation_after": self.generation_after,
            "start": self.start,
            "end": self.end,
            "duration_ms": _ms(self.duration_ms),
            "join_ms": _ms(join_ms),
            "sync_ms": _ms(sync_ms),
            "members_before": self.members_before,
            "members_after": self.members_after,
            "joined": self.joined,
            "left": self.left,
            "evicted": self.evicted,
            "straggler": self.straggler,
            "cause": self.cause,
        }


# what a rebalance is put down to when several things were seen, most telling first
REASON, LEAVING, EXPIRY, JOINING, ANSWERED, SECOND_ROUND, UNSEEN, REJOINING = range(8)


def _ms(v: float | None) -> float | None:
    return None if v is None else round(v, 3)


@record
class _Open:
    """A rebalance in progress."""

    start: float
    generation_before: int | None
    members_before: set[str]
    causes: list[tuple[int, str]]  # (priority, text): the lowest wins (see CAUSE_ORDER)
    joins: dict[str, float] = field(default_factory=dict)  # member -> its JoinGroup request time
    timeouts: dict[str, int] = field(default_factory=dict)  # member -> rebalance_timeout_ms
    generation: int | None = None
    join_end: float | None = None
    members: dict[str, Member] = field(default_factory=dict)
    leader_listed: bool = False  # the leader's JoinGroup answer listed every member
    synced: set[str] = field(default_factory=set)
    end: float | None = None
    tentative_static: str | None = None  # a static member's rejoin that may not rebalance
    pending: set[str] = field(default_factory=set)  # KIP-848: members still reconciling


@record
class GroupView:
    """One group's state and history."""

    group_id: str
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation: int | None = None
    leader: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    last_heard: dict[str, float] = field(default_factory=dict)  # member -> its last request
    session_ms: dict[str, int] = field(default_factory=dict)
    left: set[str] = field(default_factory=set)  # LeaveGroup seen since the last generation
    open: _Open | None = None
    generations: list[Generation] = field(default_factory=list)
    rebalances: list[Rebalance] = field(default_factory=list)
    avoided: int = 0  # static members rejoining without a rebalance
    unseen_generations: set[int] = field(default_factory=set)  # heard of, never seen formed
    coordinators: set[str] = field(default_factory=set)
    protocol: str = "classic"  # "consumer": KIP-848's ConsumerGroupHeartbeat
    heartbeat_ms: dict[str, int] = field(default_factory=dict)  # KIP-848: the interval asked for
    away: dict[str, str] = field(default_factory=dict)  # KIP-848 static members gone for now: id -> member
    targets: dict[str, dict[str, list[int]]] = field(default_factory=dict)  # KIP-848: the last target
    epochs: dict[str, int] = field(default_factory=dict)  # KIP-848: each member's epoch
    owned: dict[str, dict[str, list[int]]] = field(default_factory=dict)  # KIP-848: as reported
    deleted: float | None = None  # a GroupMetadata tombstone read: the group was deleted then
    dropped: int = 0  # the oldest rebalances let go (GroupTracker.keep): the index of rebalances[0]
    dropped_generations: int = 0  # ... generations

    @property
    def coverage(self) -> str:
        seen = (
            f"coordinator {', '.join(sorted(self.coordinators))}" if self.coordinators else "no coordinator"
        )
        gone = (
            f"deleted (a GroupMetadata tombstone in {RECORDS_SOURCE}); " if self.deleted is not None else ""
        )
        read = sorted(x.generation for x in self.generations if x.source is not None)
        if read:
            gens = ", ".join(map(str, read))
            wire = len(self.generations) - len(read)
            return (
                f"{gone}partial: generation{'s' if len(read) > 1 else ''} {gens} read from {RECORDS_SOURCE} "
                f"records only (no JoinGroup/SyncGroup seen: no rebalance times), {wire} formed in the "
                f"capture ({seen} seen)"
            )
        if gone and not self.generations:
            return f"{gone}partial: no generation formed in the capture ({seen} seen)"
        if self.unseen_generations:
            gens = ", ".join(map(str, sorted(self.unseen_generations)))
            return f"partial: generation {gens} formed outside the capture ({seen} seen)"
        if not self.generations:
            return f"partial: no generation formed in the capture ({seen} seen)"
        last = self.rebalances[-1] if self.rebalances else None
        if last is not None and last.end is None:  # (closed unfinished: the capture ended in it)
            before = "-" if last.generation_before is None else last.generation_before
            return (
                f"{gone}partial: the last rebalance (from generation {before}) does not finish in "
                f"the capture: who it keeps and who it evicts is not seen ({seen} seen)"
            )
        return f"{gone}complete for the generations seen ({seen})"


class Started(NamedTuple):
    """A rebalance begun (:meth:`GroupTracker.news`): sure to be one (a member joined in it)."""

    group: str
    protocol: str
    generation_before: int | None
    start: float
    cause: str  # what started it, as far as seen yet


class GroupNews(NamedTuple):
    """What :meth:`GroupTracker.news` found new since its last call."""

    started: list[Started]
    rebalances: list[tuple[int, Rebalance]]  # closed: (its index over the group's history, it)
    generations: list[Generation]  # formed


class GroupTracker:
    """The consumer: every classic group's generations and rebalances (:class:`GroupView`).

    ``keep`` (a run that lasts, ``live``): each group keeps its last ``keep`` rebalances and
    generations, counting the ones let go (:attr:`GroupView.dropped`); :meth:`news` says what is
    new since its last call."""

    def __init__(self, topic_ids: dict[str, str] | None = None, keep: int | None = None) -> None:
        self.groups: dict[str, GroupView] = {}
        self.topic_ids = topic_ids if topic_ids is not None else {}  # KIP-848 names topics by id
        # told of each member given its assignment in a rebalance: (group, the rebalance's index
        # over the group's history (GroupView.dropped + its place in rebalances), the member, the
        # time of the answer that gave it)
        self.on_assigned: Callable[[GroupView, int, Member, float], None] | None = None
        self.keep = keep
        self.touched: set[str] = set()  # groups changed since the last news()
        self.told: dict[str, tuple[int, int, object]] = {}  # group -> rebalances, generations, open told
        # told of each (group, member id) heard from, at its time (the member's bounded tables)
        self.on_member: Callable[[tuple[str, str], float], None] | None = None

    def forget_member(self, key: tuple[str, str]) -> None:
        """Let go of what a group keeps of a member id not heard from (:attr:`on_member`'s
        bound): its last request, timeouts, KIP-848 epoch, target and owned partitions."""
        g = self.groups.get(key[0])
        if g is None:
            return
        mid = key[1]
        for table in (g.last_heard, g.session_ms, g.heartbeat_ms, g.epochs, g.targets, g.owned):
            table.pop(mid, None)

    # -- feeding ------------------------------------------------------------------------------------
    def event(self, ev) -> None:
        if type(ev) is not Exchange:
            return
        key = ev.api_key
        if key not in GROUP_APIS or ev.request is None or ev.request.body is None:
            return
        req = ev.request.body
        gid = req.get("group_id")
        if not isinstance(gid, str):
            return
        g = self.groups.get(gid)
        if g is None:
            g = self.groups[gid] = GroupView(gid)
        self.touched.add(gid)
        g.coordinators.add(str(ev.conn.broker if ev.conn.client_direction is not None else ev.conn.b))
        resp = ev.response.body if ev.response is not None and ev.response.body is not None else None
        t = ev.request.frame.ts_first
        rt = ev.response.frame.ts_first if ev.response is not None else None
        mid = req.get("member_id")
        if isinstance(mid, str) and mid:
            g.last_heard[mid] = t
            if self.on_member is not None:
                self.on_member((gid, mid), t)
        if key == ApiKey.JOIN_GROUP:
            self._join(g, ev, req, resp, t, rt)
        elif key == ApiKey.SYNC_GROUP:
            self._sync(g, req, resp, t, rt)
        elif key == ApiKey.LEAVE_GROUP:
            self._leave(g, req, t)
        elif key == ApiKey.CONSUMER_GROUP_HEARTBEAT:
            self._heartbeat848(g, ev, req, resp, t)
            return
        if resp is not None and key != ApiKey.JOIN_GROUP:
            self._answer(g, key, req, resp, t)

    def done(self, outcome=None) -> None:
        """The end of the capture: a rebalance whose sync was seen is closed; one still in its join
        phase stays unfinished (end None)."""
        for g in self.groups.values():
            if g.open is not None:
                self._close(g)

    def metadata(self, m: GroupMetadataFact, t: float) -> None:
        """A GroupMetadata record of ``__consumer_offsets`` (``t``: its time): a generation the
        capture has no JoinGroup/SyncGroup for is added, marked as read from the records (one
        formed on the wire is kept as the wire showed it); a tombstone marks the group deleted."""
        g = self.groups.get(m.group)
        if g is None:
            g = self.groups[m.group] = GroupView(m.group)
        if m.deleted or m.generation is None:
            g.deleted = t
            return
        o = g.open
        if any(x.generation == m.generation for x in g.generations) or (
            o is not None and o.generation == m.generation
        ):
            return
        members = [
            Member(x.member_id, x.instance_id, x.client_id, x.client_host, dict(x.assignment or {}))
            for x in m.members
        ]
        gen = Generation(
            m.group, m.generation, t, m.protocol_type, m.protocol, m.leader, members, RECORDS_SOURCE
        )
        g.generations.append(gen)
        g.generations.sort(key=lambda x: x.generation)
        g.unseen_generations.discard(m.generation)
        if o is None and (g.generation is None or m.generation > g.generation):
            g.generation, g.leader = m.generation, m.leader
            g.protocol_type, g.protocol_name = m.protocol_type, m.protocol
            g.members = {x.member_id: _copy(x) or x for x in members}
            g.left = set()

    def news(self) -> GroupNews:
        """The rebalances begun and closed and the generations formed since the last call (the
        ones let go by ``keep`` before they were told are not: :attr:`GroupView.dropped`)."""
        out = GroupNews([], [], [])
        for gid in sorted(self.touched):
            g = self.groups[gid]
            rebs, gens, began = self.told.get(gid, (0, 0, None))
            end = g.dropped + len(g.rebalances)
            out.rebalances.extend((i, g.rebalances[i - g.dropped]) for i in range(max(rebs, g.dropped), end))
            out.generations.extend(g.generations[max(0, gens - g.dropped_generations) :])
            o = g.open
            if o is not None and o is not began and self._sure(g, o):
                cause = min(o.causes)[1] if o.causes else "not seen yet"
                out.started.append(Started(gid, g.protocol, o.generation_before, o.start, cause))
                began = o
            self.told[gid] = (end, g.dropped_generations + len(g.generations), began)
        self.touched.clear()
        return out

    @staticmethod
    def _sure(g: GroupView, o: _Open) -> bool:
        """The open rebalance will be one :meth:`_close` keeps: a member joined in it (not a static
        member's rejoin, which may keep the generation), or KIP-848's assignment changed (a
        member leaving alone may end nothing)."""
        if o.tentative_static is not None:
            return False
        if o.joins or o.generation is not None:
            return True
        return g.protocol == "consumer" and all(c[0] != LEAVING for c in o.causes)

    # -- the protocol ---------------------------------------------------------------------------------
    def _start(self, g: GroupView, t: float, cause: tuple[int, str] | None) -> _Open:
        """The open rebalance (a new one when none is open or the open one has synced); its start
        moves back to ``t`` when an exchange answered later shows it began earlier (answers come
        in the order the broker sends them: a JoinGroup is held until the join phase ends)."""
        if g.open is not None and g.open.end is not None:  # synced, not closed: a new one begins
            self._close(g)
        if g.open is None:
            g.open = _Open(t, g.generation, set(g.members), [])
        elif t < g.open.start:
            g.open.start = t
        if cause:
            g.open.causes.append(cause)
        return g.open

    def _join(self, g: GroupView, ev: Exchange, req: Field, resp: Field | None, t: float, rt) -> None:
        g.protocol_type = req.get("protocol_type") or g.protocol_type
        mid = req.get("member_id") or ""
        instance = req.get("group_instance_id")
        reason = req.get("reason")
        if resp is not None and resp.get("error_code") == ErrorCode.MEMBER_ID_REQUIRED:
            return  # KIP-394: the member joins again at once with the id it was given
        if resp is not None and resp.get("error_code") != ErrorCode.NONE:
            resp = None  # refused: the member asked to join, nothing more
        member = (resp.get("member_id") if resp is not None else None) or mid
        if reason:
            cause = (REASON, f"reason: {reason}")
        elif not mid or mid not in g.members:
            cause = (JOINING, f"member joining ({ev.client_id or member or '?'})")
        else:
            cause = (REJOINING, f"member rejoining ({member})")
        fresh = g.open is None or g.open.end is not None
        o = self._start(g, t, cause)
        if fresh and instance and g.generation is not None:
            o.tentative_static = member
        if member:
            o.joins.setdefault(member, t)
            o.timeouts[member] = req.get("rebalance_timeout_ms", req.get("session_timeout_ms"))
            g.session_ms[member] = req.get("session_timeout_ms") or g.session_ms.get(member, 0)
            g.last_heard[member] = t
            if self.on_member is not None:
                self.on_member((g.group_id, member), t)
        if resp is None:
            return
        gen = resp.get("generation_id")
        if o.tentative_static == member and gen == g.generation and len(o.joins) == 1:
            # a static member back within its session: the coordinator kept the generation
            g.avoided += 1
            old = next((m for m, x in g.members.items() if x.instance_id == instance), None)
            if old is not None and old != member:
                g.members[member] = g.members.pop(old)
                g.members[member].member_id = member
            g.open = None
            return
        o.tentative_static = None
        if o.generation != gen:
            o.generation, o.join_end, o.synced, o.end = gen, rt, set(), None
        g.protocol_name = resp.get("protocol_name") or g.protocol_name
        g.leader = resp.get("leader") or g.leader
        conn = ev.conn
        client = str(conn.client if conn.client_direction is not None else conn.a)
        m = o.members.setdefault(member, Member(member))
        m.instance_id, m.client_id, m.client = instance, ev.client_id, client
        listed = resp.elements("members")
        if listed:
            o.leader_listed = True
            for x in listed:
                xid = x.get("member_id")
                if xid:
                    o.members.setdefault(xid, Member(xid, x.get("group_instance_id")))

    def _sync(self, g: GroupView, req: Field, resp: Field | None, t: float, rt) -> None:
        o = g.open
        gen = req.get("generation_id")
        mid = req.get("member_id")
        for a in req.elements("assignments"):  # the leader's: everyone's assignment
            if o is not None and o.generation == gen and a.get("member_id"):
                m = o.members.setdefault(a.get("member_id"), Member(a.get("member_id")))
                m.assignment = _assignment(a.child("assignment"))
        if resp is None or resp.get("error_code") != ErrorCode.NONE or o is None or o.generation != gen:
            return
        if mid:
            m = o.members.setdefault(mid, Member(mid))
            own = _assignment(resp.child("assignment"))
            if own or not m.assignment:
                m.assignment = own
            o.synced.add(mid)
            if self.on_assigned is not None and rt is not None:
                self.on_assigned(g, g.dropped + len(g.rebalances), m, rt)
        o.end = rt
        if o.leader_listed and o.synced >= set(o.members):
            self._close(g)

    def _leave(self, g: GroupView, req: Field, t: float) -> None:
        leaving = [req.get("member_id")] + [m.get("member_id") for m in req.elements("members")]
        leaving = [m for m in leaving if m]
        if not leaving:
            return
        reasons = [m.get("reason") for m in req.elements("members") if m.get("reason")]
        g.left.update(leaving)
        if set(g.members) - set(leaving) or g.open is not None:
            why = (
                (REASON, f"reason: {reasons[0]}")
                if reasons
                else (LEAVING, f"member leaving ({', '.join(leaving)})")
            )
            self._start(g, t, why)

    def _answer(self, g: GroupView, key: int, req: Field, resp: Field, t: float) -> None:
        err = resp.get("error_code")
        if err is None:  # OffsetCommit: per partition
            errs = {p.get("error_code") for tp in resp.elements("topics") for p in tp.elements("partitions")}
            err = next((e for e in errs if e), ErrorCode.NONE)
        gen = req.get("generation_id", req.get("generation_id_or_member_epoch"))
        if (
            isinstance(gen, int)
            and gen >= 0
            and err == ErrorCode.NONE
            and gen not in {x.generation for x in g.generations}
            and (g.open is None or g.open.generation != gen)
        ):
            g.unseen_generations.add(gen)
        if err == ErrorCode.REBALANCE_IN_PROGRESS:
            self._start(
                g,
                t,
                (UNSEEN, "not seen (REBALANCE_IN_PROGRESS answered; its trigger is outside the capture)"),
            )
        elif err in _EVICTING and key != ApiKey.OFFSET_COMMIT:
            mid = req.get("member_id")
            self._start(g, t, (ANSWERED, f"{_EVICTING[err]} answered to {mid}"))

    def _heartbeat848(self, g: GroupView, ev: Exchange, req: Field, resp: Field | None, t: float) -> None:  # noqa: C901 - one state machine
        """KIP-848: a member's epoch and target assignment come in heartbeat answers (revocations
        first, at the epoch it has; then the new epoch with what it gains), what it owns in its
        requests. A rebalance runs from the first change (a member joining or leaving, a new
        target, a higher epoch) until every member owns its target at the group's epoch, which is
        the generation. A static member leaving for now (epoch -2) and back with its instance id
        at the group's epoch avoided one."""
        g.protocol, g.protocol_type = "consumer", "consumer"
        g.protocol_name = req.get("server_assignor") or g.protocol_name
        epoch = req.get("member_epoch")
        mid = req.get("member_id") or ""
        instance = req.get("instance_id")
        if epoch == -2 and instance:  # a static member away for now: its place is kept
            g.away[instance] = mid
            return
        if epoch == -1:
            g.left.add(mid)
            for table in (g.owned, g.targets, g.epochs):
                table.pop(mid, None)
            if g.epochs or g.open is not None:
                self._start(g, t, (LEAVING, f"member leaving ({mid})"))
                self._converged(g, t)
            return
        if resp is None:
            return
        err = resp.get("error_code")
        if err != ErrorCode.NONE:
            if err in _EVICTING:
                self._start(g, t, (ANSWERED, f"{_EVICTING[err]} answered to {mid}"))
            return
        mid = resp.get("member_id") or mid
        conn = ev.conn
        client = str(conn.client if conn.client_direction is not None else conn.a)
        if isinstance(resp.get("heartbeat_interval_ms"), int):
            g.heartbeat_ms[mid] = resp.get("heartbeat_interval_ms")
        owned = req.child("topic_partitions")
        if owned is not None and owned.children is not None:
            g.owned[mid] = self._by_name(owned)
        new = resp.get("member_epoch")
        asg = resp.child("assignment")
        target = self._by_name(asg.child("topic_partitions")) if asg is not None and asg.children else None
        given = target is not None and target != g.targets.get(mid)
        answered = ev.response.frame.ts_first if ev.response is not None else t
        if epoch == 0 and instance in g.away and new == g.generation and g.open is None:
            old = g.away.pop(instance)  # the static member is back: no rebalance
            for assigned in (g.owned, g.targets):
                if old in assigned:
                    assigned[mid] = assigned.pop(old)
            g.epochs.pop(old, None)
            if old in g.members:
                g.members[mid] = g.members.pop(old)
            member = g.members.get(mid) or Member(mid, instance)
            member.member_id, member.client_id, member.client = mid, ev.client_id, client
            g.members[mid] = member
            g.epochs[mid] = new
            if target is not None:
                g.targets[mid] = member.assignment = target
            g.avoided += 1
            return
        if epoch == 0 and new == g.generation and g.open is None and g.rebalances:
            g.epochs[mid] = new
            if target is not None:
                g.targets[mid] = target
            member = Member(mid, instance, ev.client_id, client, target or {})
            self._late_joiner(g, mid, member, t)
            if given and self.on_assigned is not None:
                self.on_assigned(g, g.dropped + len(g.rebalances) - 1, member, answered)
            return
        changed = epoch == 0 or (target is not None and target != g.targets.get(mid))
        if isinstance(new, int):
            changed = changed or new > (g.generation if g.generation is not None else -1)
            g.epochs[mid] = new
        if target is not None:
            g.targets[mid] = target
        if changed and g.open is None:
            self._start(g, t, None)
        o = g.open
        if o is None:
            return
        if epoch == 0:
            o.start = min(o.start, t)
            o.joins.setdefault(mid, t)
            o.timeouts[mid] = req.get("rebalance_timeout_ms")
        m = o.members.get(mid) or _copy(g.members.get(mid)) or Member(mid)
        m.instance_id = instance or m.instance_id
        m.client_id = ev.client_id or m.client_id
        m.client = client
        o.members[mid] = m
        o.leader_listed = True
        if given and target is not None and self.on_assigned is not None:
            self.on_assigned(g, g.dropped + len(g.rebalances), replace(m, assignment=target), answered)
        self._converged(g, t)

    def _converged(self, g: GroupView, t: float) -> None:
        """Close the open KIP-848 rebalance once every member still there (not left, away or
        silent past its session) owns its target at the group's highest epoch."""
        o = g.open
        if o is None:
            return
        away = set(g.away.values())
        active = [m for m in g.epochs if m not in g.left and m not in away and not self._silent(g, m, t)]
        if not active:
            return
        top = max(g.epochs[m] for m in active)
        if o.generation_before is not None and top <= o.generation_before:
            return  # the coordinator has not bumped the group's epoch yet
        if any(g.epochs[m] != top or g.owned.get(m) != g.targets.get(m) for m in active):
            return
        o.generation, o.end = top, t
        if o.join_end is None:
            o.join_end = o.start
        members = {}
        for m in active:
            x = o.members.get(m) or _copy(g.members.get(m)) or Member(m)
            x.assignment = g.targets.get(m, {})
            members[m] = x
        o.members = members
        self._close(g)

    def _late_joiner(self, g: GroupView, mid: str, member: Member, t: float) -> None:
        """A KIP-848 member whose joining heartbeat is answered after the rebalance its join
        caused was closed (the other members reconciled first): it belongs to that rebalance."""
        reb, gen = g.rebalances[-1], g.generations[-1] if g.generations else None
        g.members[mid] = member
        if gen is None or reb.generation_after != gen.generation or mid in reb.members_after:
            return
        gen.members.append(member)
        reb.members_after = sorted({*reb.members_after, mid})
        reb.joined = sorted({*reb.joined, mid})
        reb.start = min(reb.start, t)
        if reb.cause.startswith(("not seen", "member joining")):
            who = ", ".join(
                next((m.client_id or m.member_id for m in gen.members if m.member_id == j), j)
                for j in reb.joined
            )
            reb.cause = f"member joining ({who})"

    @staticmethod
    def _silent(g: GroupView, m: str, at: float) -> bool:
        """Nothing heard from member ``m`` for longer than its session timeout before ``at`` (KIP-848
        members do not send it: longer than two heartbeat intervals the coordinator asked for)."""
        quiet = at - g.last_heard.get(m, at)
        if g.session_ms.get(m):
            return quiet > g.session_ms[m] / 1000
        beat = g.heartbeat_ms.get(m, 0)
        return beat > 0 and quiet > 2 * beat / 1000

    def _by_name(self, f: Field | None) -> dict[str, list[int]]:
        """KIP-848's topic partitions (by topic id) as topic name -> partitions."""
        out: dict[str, list[int]] = {}
        for x in f.children or () if f is not None else ():
            tid = x.get("topic_id")
            name = self.topic_ids.get(tid, tid) if isinstance(tid, str) else str(tid)
            out.setdefault(name, []).extend(sorted(p.value for p in x.elements("partitions")))
        return out

    def _close(self, g: GroupView) -> None:
        o = g.open
        assert o is not None
        g.open = None
        self.touched.add(g.group_id)
        if o.generation is None and not o.joins:
            return  # only an answer said so: the rebalance was not seen forming
        after = set(o.members)
        before = o.members_before
        finished = o.generation is not None and o.end is not None
        left = sorted((before & g.left) - after)
        # who the new generation left out is known only once it formed: a rebalance the capture
        # ends in (or one never answered) evicted no one that it shows
        evicted = sorted(before - after - g.left) if finished else []
        expired = [m for m in evicted if self._silent(g, m, o.start)]
        joined_now = {m: ts for m, ts in o.joins.items() if m in after} or o.joins
        straggler = max(joined_now, key=lambda m: joined_now[m]) if joined_now else None
        causes = list(o.causes)
        if expired:
            causes.append((EXPIRY, f"session expiry of {', '.join(expired)}"))
        joined = sorted(after - before)
        if joined:
            who = ", ".join(o.members[m].client_id or m for m in joined)
            causes.append((JOINING, f"member joining ({who})"))
        prev = g.rebalances[-1] if g.rebalances else None
        if (
            not joined
            and not evicted
            and not left
            and prev is not None
            and prev.end is not None
            and o.start - prev.end < 2.0
            and "cooperative" in (g.protocol_name or "")
        ):
            causes.append(
                (
                    SECOND_ROUND,
                    f"second round of the rebalance to generation {prev.generation_after} "
                    "(cooperative, KIP-429: the partitions revoked in it are assigned)",
                )
            )
        cause = min(causes or [(UNSEEN, "not seen in the capture")])[1]
        g.rebalances.append(
            Rebalance(
                g.group_id,
                g.protocol,
                o.generation_before,
                o.generation if finished else None,
                o.start,
                o.end if finished else None,
                o.join_end,
                sorted(before),
                sorted(after),
                joined,
                left,
                evicted,
                expired,
                straggler,
                (o.joins[straggler] - o.start) * 1000 if straggler is not None else None,
                o.timeouts.get(straggler) if straggler is not None else None,
                cause,
            )
        )
        if finished and o.generation is not None:
            g.generation = o.generation
            g.members = o.members
            g.left = set()
            first = o.join_end if o.join_end is not None else o.start
            gen = Generation(
                g.group_id,
                o.generation,
                first,
                g.protocol_type,
                g.protocol_name,
                g.leader,
                [_copy(m) or m for m in o.members.values()],
            )
            # one read from a GroupMetadata record first gives way to the wire's
            g.generations = [x for x in g.generations if x.generation != o.generation or x.source is None]
            g.generations.append(gen)
            g.unseen_generations.discard(o.generation)
        if self.keep is not None:  # the oldest go, counted
            for name, count in (("rebalances", "dropped"), ("generations", "dropped_generations")):
                kept = getattr(g, name)
                if len(kept) > self.keep:
                    n = len(kept) - self.keep
                    del kept[:n]
                    setattr(g, count, getattr(g, count) + n)


def _copy(m: Member | None) -> Member | None:
    """A member as it is now (a generation keeps its own: later ones change theirs)."""
    return None if m is None else replace(m, assignment={t: list(ps) for t, ps in m.assignment.items()})


def _assignment(f: Field | None) -> dict[str, list[int]]:
    """A decoded ConsumerProtocolAssignment (the bytes a SyncGroup carries): topic -> partitions."""
    if f is None:
        return {}
    inner = f.child("assignment")
    out: dict[str, list[int]] = {}
    for tp in inner.elements("assigned_partitions") if inner is not None else []:
        topic = tp.get("topic")
        if isinstance(topic, str):
            out.setdefault(topic, []).extend(p.value for p in tp.elements("partitions"))
    return out
