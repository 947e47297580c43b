"""Live members of classic groups (analyzer.session.groups.GroupMembers) on a real capture."""

from __future__ import annotations

from analyzer.dissect.constants import ApiKey
from analyzer.model import Exchange
from analyzer.pipeline import Analysis
from analyzer.session.groups import GroupMembers
from tests.helpers.captures import CAPTURES


def test_the_admin_captures_group_is_live_until_its_consumer_leaves():
    members = GroupMembers()
    states = []
    for ev in Analysis(CAPTURES / "librdkafka-admin.pcap").events():
        if type(ev) is not Exchange:
            continue
        members.learn(ev)
        if ev.api_key in (ApiKey.JOIN_GROUP, ApiKey.LEAVE_GROUP):
            states.append((ApiKey(ev.api_key).name, members.empty("g-librdkafka-admin")))
    assert states[0] == ("JOIN_GROUP", False) and states[-1] == ("LEAVE_GROUP", True)
    assert members.empty("a-group-never-seen")
