"""Which classic consumer groups have live members, as the capture shows them, and the broker
quirk that depends on it: a simple commit to an empty group answered UNKNOWN_MEMBER_ID.

A member is live from the answer that names it (a JoinGroup response's member id, a SyncGroup or
Heartbeat request answered without error) until a LeaveGroup request names it. A group no
JoinGroup, SyncGroup or Heartbeat of which was seen has no live member the capture knows of.

Kafka's GroupCoordinator accepts an OffsetCommit with generation -1 and an empty member id (a
"simple" commit: AdminClient.alterConsumerGroupOffsets, a consumer with manual assignment) when
the group is Empty, and answers UNKNOWN_MEMBER_ID only while the group has members. The
librdkafka mock cluster (rdkafka_mock_handlers.c) answers UNKNOWN_MEMBER_ID whenever the member
id is not a member of the group, so it rejects the simple commit to an empty group:
:func:`simple_commit_rejected` names that.

``export -j`` and Spark's splits decide it in the part that owns the commit's connection, which
does not see the members' connections another part owns: their merges judge every such commit
(:func:`simple_commit`) again against the members learnt over all the connections in capture
order, as one run does.
"""

from __future__ import annotations

from analyzer.dissect.constants import ApiKey, ErrorCode
from analyzer.dissect.error_versions import error_field
from analyzer.issues import QUIRK_SIMPLE_COMMIT_REJECTED
from analyzer.model import Exchange, Issue


class GroupMembers:
    """Live members per classic group id, learnt from the exchanges in capture order."""

    __slots__ = ("live",)

    def __init__(self) -> None:
        self.live: dict[str, set[str]] = {}

    def learn(self, ex: Exchange) -> None:
        c = member_change(ex)
        if c is not None:
            self.apply(*c)

    def apply(self, group_id: str, added: tuple[str, ...], removed: tuple[str, ...]) -> None:
        """A :func:`member_change` (learnt elsewhere: Spark's stitching replays them in order)."""
        members = self.live.setdefault(group_id, set())
        members.difference_update(removed)
        members.update(added)

    def empty(self, group_id: str) -> bool:
        """No live member of ``group_id`` is known at this point of the capture."""
        return not self.live.get(group_id)


MEMBER_APIS = frozenset((ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP))


def member_change(ex: Exchange) -> tuple[str, tuple[str, ...], tuple[str, ...]] | None:
    """(group id, members it makes live, members it removes) of a JoinGroup, SyncGroup, Heartbeat
    or LeaveGroup exchange, whatever was known before; None for any other exchange."""
    key = ex.api_key
    if key not in MEMBER_APIS or ex.request is None or ex.request.body is None:
        return None
    req = ex.request.body
    gid = req.get("group_id")
    if not isinstance(gid, str):
        return None
    if key == ApiKey.LEAVE_GROUP:
        removed = [req.get("member_id")] + [m.get("member_id") for m in req.elements("members")]
        return gid, (), tuple(m for m in removed if m is not None)
    resp = ex.response.body if ex.response is not None else None
    if resp is None or resp.get("error_code") != ErrorCode.NONE:
        return gid, (), ()
    mid = resp.get("member_id") if key == ApiKey.JOIN_GROUP else req.get("member_id")
    return gid, (mid,) if mid else (), ()


def simple_commit(ex: Exchange) -> str | None:
    """The group of an OffsetCommit v1+ with generation -1 and an empty member id answered
    UNKNOWN_MEMBER_ID (at the top or for a partition): whether that is the quirk depends on the
    group's members only; None for any other exchange."""
    req, resp = ex.request, ex.response
    if (
        ex.api_key != ApiKey.OFFSET_COMMIT
        or req is None
        or resp is None
        or req.body is None
        or not req.api_version
        or ErrorCode.UNKNOWN_MEMBER_ID not in resp.errors
    ):
        return None
    body = req.body
    gen = body.get("generation_id_or_member_epoch", body.get("generation_id"))
    gid = body.get("group_id")
    if gen != -1 or body.get("member_id") != "" or not isinstance(gid, str):
        return None
    return gid


def simple_commit_rejected(ex: Exchange, groups: GroupMembers, broker: str) -> Issue | None:
    """``quirk.simple_commit_rejected`` for a :func:`simple_commit` while ``groups`` knows no
    live member of its group; None otherwise."""
    gid = simple_commit(ex)
    if gid is None or not groups.empty(gid):
        return None
    req, resp = ex.request, ex.response
    assert req is not None and resp is not None  # simple_commit() checked them
    at = error_field(resp.body, ErrorCode.UNKNOWN_MEMBER_ID)
    # the message says no more than "empty" (not whether members left or none was seen)
    return QUIRK_SIMPLE_COMMIT_REJECTED(
        f"{broker} answered UNKNOWN_MEMBER_ID to OffsetCommit v{req.api_version} of group {gid!r} "
        "with generation -1 and an empty member id, while the capture shows no live member of it: "
        "Kafka accepts such a simple commit for an empty group",
        at.offset if at is not None else None,
        f"response.{at.name}" if at is not None else None,
    )
