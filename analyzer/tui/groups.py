"""The consumer groups over time: one event per group-protocol exchange (JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, ConsumerGroupHeartbeat), each group's generation and members as the
exchanges say (the groups view)."""

from __future__ import annotations

from dataclasses import dataclass

from analyzer.dissect.protocol_table import ApiKey
from analyzer.model import Exchange, Field
from analyzer.session.stats import error_names
from analyzer.tui.rows import Row, intern, istr


@dataclass(slots=True)
class GroupEvent:
    """One exchange of a consumer group's protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
    ConsumerGroupHeartbeat): the group's generation and members as they were after it."""

    row: int  # the exchange's row index
    ts: float
    group: str
    api: str
    key: int | None  # the API key
    member: str | None
    generation: int | None
    members: int  # members known after this exchange
    leader: str | None
    error: str | None

    def as_dict(self, origin: float | None) -> dict:
        return {
            "#": self.row + 1,
            "time": round(self.ts - origin, 6) if origin is not None else None,
            "group": self.group,
            "API": self.api,
            "member": self.member,
            "generation": self.generation,
            "members": self.members,
            "leader": self.leader,
            "error": self.error,
        }


GROUP_APIS = frozenset(
    (
        ApiKey.JOIN_GROUP,
        ApiKey.SYNC_GROUP,
        ApiKey.HEARTBEAT,
        ApiKey.LEAVE_GROUP,
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
    )
)


def _children(f: Field | None, name: str) -> list[Field]:
    c = f.child(name) if f is not None else None
    return c.children or [] if c is not None else []


class GroupTimeline:
    """The consumer groups over time: one :class:`GroupEvent` per group-protocol exchange, with
    each group's members followed as the exchanges say (joins add, the leader's JoinGroup
    answer lists them all, leaves remove)."""

    def __init__(self) -> None:
        self.events: list[GroupEvent] = []
        # OffsetCommits (row, request time, group): a rebalance may begin with one's answer
        self.commits: list[tuple[int, float, str]] = []
        self.members: dict[str, set[str]] = {}
        self.leaders: dict[str, str] = {}

    def add(self, row: Row, ex: Exchange) -> None:
        req, resp = ex.request, ex.response
        if req is None or req.body is None:
            return
        body = req.body
        gid = body.get("group_id")
        if not isinstance(gid, str):
            return
        rb = resp.body if resp is not None else None
        members = self.members.setdefault(gid, set())
        key = row.api_key
        member = body.get("member_id") or None
        ok = resp is not None and not resp.errors
        if rb is not None and ok:
            if key == ApiKey.JOIN_GROUP:
                listed = [m.get("member_id") for m in _children(rb, "members") if m.get("member_id")]
                if listed:  # the leader's answer: every member of the new generation
                    members.clear()
                    members.update(listed)
                member = rb.get("member_id") or member
                if member:
                    members.add(member)
                if rb.get("leader"):
                    self.leaders[gid] = istr(rb.get("leader"))
            elif key == ApiKey.CONSUMER_GROUP_HEARTBEAT:
                member = rb.get("member_id") or member
                if member and body.get("member_epoch") != -1:
                    members.add(member)
            elif key in (ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT) and member:
                members.add(member)
        if key == ApiKey.LEAVE_GROUP or (
            key == ApiKey.CONSUMER_GROUP_HEARTBEAT and body.get("member_epoch") == -1
        ):
            for m in [member, *(f.get("member_id") for f in _children(body, "members"))]:
                members.discard(m)
        gen = None
        if rb is not None:
            gen = rb.get("generation_id", rb.get("member_epoch"))
        if gen is None or gen < 0:
            gen = body.get("generation_id", body.get("member_epoch"))
        errors = error_names(resp)
        self.events.append(
            GroupEvent(  # one per heartbeat too: the strings interned, shared by the events
                row.index,
                row.ts,
                istr(gid),
                istr(row.api),
                row.api_key,
                istr(member),
                gen if isinstance(gen, int) and gen >= 0 else None,
                len(members),
                self.leaders.get(gid),
                intern(", ".join(dict.fromkeys(errors))) if errors else None,
            )
        )

    def commit(self, row: Row, ex: Exchange) -> None:
        body = ex.request.body if ex.request is not None else None
        gid = body.get("group_id") if body is not None else None
        if isinstance(gid, str):
            self.commits.append((row.index, row.ts, istr(gid)))

    def between(self, group: str, start: float, end: float | None) -> list[int]:
        """The row indexes of ``group``'s exchanges (group protocol and OffsetCommit) sent from
        ``start`` to ``end`` (None: the end of the capture), in time order: a rebalance's."""
        hi = end if end is not None else float("inf")
        found = [(e.ts, e.row) for e in self.events if e.group == group and start <= e.ts <= hi]
        found += [(ts, r) for r, ts, g in self.commits if g == group and start <= ts <= hi]
        return [r for _, r in sorted(found)]

    def formed(self, group: str, generation: int) -> list[int]:
        """The row indexes of the exchanges that formed ``group``'s ``generation``: its JoinGroup
        and SyncGroup exchanges (KIP-848: the ConsumerGroupHeartbeats at that epoch), in time
        order."""
        apis = (ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.CONSUMER_GROUP_HEARTBEAT)
        found = [
            (e.ts, e.row)
            for e in self.events
            if e.group == group and e.generation == generation and e.key in apis
        ]
        return [r for _, r in sorted(found)]

    def rows(self, origin: float | None) -> list[dict]:
        """The events in time order, as the groups view lists them."""
        return [e.as_dict(origin) for e in sorted(self.events, key=lambda e: (e.ts, e.row))]
