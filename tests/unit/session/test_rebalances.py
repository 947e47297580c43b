"""The group timeline (analyzer.session.rebalances) on the bundled recordings, against what their
clients recorded (captures/manifest.json: the records each consumer received): every partition a
consumer read from was assigned to a member of the group's last generation, that generation was
seen forming (a rebalance from no member to its members, ended by the SyncGroup answers or, for
KIP-848, the member's reconciliation), and its member is named by client id and address."""

import json
from collections import defaultdict

import pytest

from analyzer.pipeline import Analysis
from analyzer.session.rebalances import GroupTracker
from tests.helpers.captures import CAPTURES, is_tls_capture

MANIFEST = {e["file"]: e for e in json.loads((CAPTURES / "manifest.json").read_text())}
KEYS = "\n".join(p.read_text() for p in sorted(CAPTURES.glob("*.keys")))
# recordings whose consumers read without joining a group: assign() (acks0, the transactional
# scenario's reader, kafka-python at api_version 0.8.2, which has no group API); sarama against
# Tansu only heartbeats a group it never joins in the recording (see the test below)
NO_GROUP = {
    "librdkafka-acks0.pcap",
    "tansu-librdkafka-acks0.pcap",
    "librdkafka-txn.pcap",
    "kafka-python-0.8.2-none.pcap",
    "tansu-sarama-zstd.pcap",
    "producer-idempotent.pcap",
    "producer-plain.pcap",
}
# (the group-* scenarios, several members and groups each, are tests/captures/test_group_insights.py's;
# producer-txn has a group member beside assign() readers: tests/captures/test_producer_truth.py's)
GROUPED = sorted(
    name
    for name, e in MANIFEST.items()
    if e["consumed"]
    and name not in NO_GROUP
    and not name.startswith("group-")
    and name != "producer-txn.pcap"
)


def track(name: str, tmp_path) -> GroupTracker:
    keys = tmp_path / "keys"
    keys.write_text(KEYS)
    a = Analysis(str(CAPTURES / name), tls_keylog=str(keys) if is_tls_capture(CAPTURES / name) else None)
    t = GroupTracker(a.knowledge.topic_ids)
    a.run(t)
    return t


def consumed_partitions(name: str) -> set[tuple[str, int]]:
    return {(r["topic"], r["partition"]) for r in MANIFEST[name]["consumed"]}


@pytest.mark.parametrize("name", GROUPED)
def test_the_consumers_partitions_were_assigned_in_a_generation_seen_forming(name, tmp_path):
    (g,) = [g for g in track(name, tmp_path).groups.values() if g.generations]
    gen = g.generations[-1]
    assigned = {(topic, p) for m in gen.members for topic, ps in m.assignment.items() for p in ps}
    assert consumed_partitions(name) <= assigned
    first = g.rebalances[0]
    assert first.generation_before is None and first.members_before == []
    assert first.generation_after == gen.generation
    assert first.joined == sorted(m.member_id for m in gen.members) == first.members_after
    assert first.start <= first.join_end <= first.end
    assert first.cause.startswith("member joining (")
    assert not first.evicted and not first.left
    assert g.coverage.startswith("complete")
    assert all(m.client_id and m.client and m.client.startswith("127.0.0.1:") for m in gen.members)


def test_kip848_generation_is_the_member_epoch_and_its_assignment_by_topic_name(tmp_path):
    """librdkafka's KIP-848 consumer on the mock cluster: the heartbeat answer's member epoch is
    the generation, the target assignment named by the topic ids' names, reconciled when the next
    heartbeat reports owning it."""
    name = "librdkafka-kip848.pcap"
    (g,) = track(name, tmp_path).groups.values()
    assert g.protocol == "consumer"
    (reb,) = g.rebalances
    assert reb.protocol == "consumer" and reb.generation_after == g.generations[-1].generation
    (member,) = g.generations[-1].members
    assert {(t, p) for t, ps in member.assignment.items() for p in ps} == consumed_partitions(name)
    assert reb.end is not None and reb.end >= reb.start


@pytest.mark.parametrize("name", sorted(NO_GROUP - {"tansu-sarama-zstd.pcap"}))
def test_consumers_without_a_group_make_no_generation(name, tmp_path):
    assert not any(g.generations or g.rebalances for g in track(name, tmp_path).groups.values())


def test_a_group_never_seen_forming_says_so(tmp_path):
    (g,) = track("tansu-sarama-zstd.pcap", tmp_path).groups.values()
    assert not g.generations and g.coverage.startswith("partial: no generation formed")


def test_the_manifest_names_every_recording_with_a_group():
    assert GROUPED and all(n in MANIFEST for n in GROUPED)
    by_client = defaultdict(int)
    for n in GROUPED:
        by_client[MANIFEST[n]["client"]] += 1
    assert len(by_client) >= 5  # librdkafka, kafka-python, aiokafka, kafkajs, sarama, kafka-go...


def test_a_capture_cut_in_a_rebalance_evicts_no_one_and_says_it_is_partial(tmp_path):
    """group-joins cut 8 s in: the third member's rebalance began (6.5 s: it and both members
    sent their JoinGroup) and its answers (9.5 s) are past the cut. The old members were not
    evicted; who the rebalance keeps is not in the capture, and the coverage says so (before: both
    "evicted", coverage "complete")."""
    from analyzer.capture.files import CaptureFile
    from tests.helpers.captures import cut

    src = CAPTURES / "group-joins.pcap"
    times = [p[1] for p in CaptureFile(src)]
    first = cut(src, sum(1 for t in times if t < times[0] + 8.0), tmp_path)[0]
    a = Analysis(str(first))
    t = GroupTracker(a.knowledge.topic_ids)
    a.run(t)
    (g,) = t.groups.values()
    last = g.rebalances[-1]
    assert last.generation_before == 3 and last.generation_after is None and last.end is None
    assert last.evicted == [] and last.expired == []
    assert "member joining" in last.cause
    assert g.coverage.startswith("partial: the last rebalance (from generation 3) does not finish")
    # the whole recording: every rebalance finished, the coverage complete
    whole = track("group-joins.pcap", tmp_path)
    (g,) = whole.groups.values()
    assert all(r.end is not None for r in g.rebalances)
    assert g.coverage.startswith("complete")
