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

Limitation: ``export -j`` decides it in the process that owns the commit's connection, which does
not see the members' connections another process owns, so it can name a commit that one run,
seeing a live member there, leaves a plain error (the merge does not replay group liveness).
"""

from __future__ import annotations

from analyzer.dissect.constants import ApiKey, ErrorCode
from analyzer.dissect.error_versions import error_field
from analyzer.issues import QUIRK_SIMPLE_COMMIT_REJECTED
from analyzer.model import Exchange, Field, Issue


class GroupMembers:
    """Live members per classic group id, learnt from the exchanges in capture order."""

    __slots__ = ("live",)

    def __init__(self) -> None:
        self.live: dict[str, set[str]] = {}

    def learn(self, ex: Exchange) -> None:
        key = ex.api_key
        if key not in MEMBER_APIS or ex.request is None or ex.request.body is None:
            return
        req = ex.request.body
        gid = req.get("group_id")
        if not isinstance(gid, str):
            return
        resp = ex.response.body if ex.response is not None else None
        members = self.live.setdefault(gid, set())
        if key == ApiKey.LEAVE_GROUP:
            members.discard(req.get("member_id"))
            for m in _elements(req, "members"):
                members.discard(m.get("member_id"))
            return
        if resp is None or resp.get("error_code") != ErrorCode.NONE:
            return
        mid = resp.get("member_id") if key == ApiKey.JOIN_GROUP else req.get("member_id")
        if mid:
            members.add(mid)

    def empty(self, group_id: str) -> bool:
        """No live member of ``group_id`` is known at this point of the capture."""
        return not self.live.get(group_id)


MEMBER_APIS = frozenset((ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP))


def _elements(f: Field, name: str) -> list[Field]:
    c = f.child(name)
    return c.children or [] if c is not None else []


def simple_commit_rejected(ex: Exchange, groups: GroupMembers, broker: str) -> Issue | None:
    """``quirk.simple_commit_rejected`` for an OffsetCommit v1+ with generation -1 and an empty
    member id answered UNKNOWN_MEMBER_ID (at the top or for a partition) while ``groups`` knows
    no live member of its group; None otherwise."""
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
    if gen != -1 or body.get("member_id") != "" or not isinstance(gid, str) or not groups.empty(gid):
        return None
    at = error_field(resp.body, ErrorCode.UNKNOWN_MEMBER_ID)
    # the message says no more than "empty" (not whether members left or none was seen): export -j
    # decides it in the process that owns the commit's connection, which may not see the members'
    return QUIRK_SIMPLE_COMMIT_REJECTED(
        f"{broker} answered UNKNOWN_MEMBER_ID to OffsetCommit v{req.api_version} of group {gid!r} "
        "with generation -1 and an empty member id, while the capture shows no live member of it: "
        "Kafka accepts such a simple commit for an empty group",
        at.offset if at is not None else None,
        f"response.{at.name}" if at is not None else None,
    )
