"""The group timeline, lag and Burrow's status (analyzer.session.rebalances, lag, burrow) on the
generated group scenarios, against what each scenario's clients saw (captures/<name>.truth.json:
rebalance callbacks with generation and member id, commits, deliveries; tools/gen/groups.py):
the rebalances and their causes in the scenario's order, every assignment a client received
equal to its generation's on the wire (and handed to it after that rebalance ended), the static
rejoin that avoided a rebalance, each commit a lag row whose lag in seconds is the age of the
first record not committed, and Burrow's status of each lag behaviour."""

import json

import pytest

from analyzer.pipeline import Analysis
from analyzer.session.insights import GroupInsights
from analyzer.session.lag import LagTracker
from analyzer.session.rebalances import GroupTracker
from tests.helpers.captures import CAPTURES

TIMELINES = ["group-joins", "group-cooperative", "group-kip848"]


def analyse(name: str):
    truth = json.loads((CAPTURES / f"{name}.truth.json").read_text())
    a = Analysis(str(CAPTURES / f"{name}.pcap"))
    groups, lag = GroupTracker(a.knowledge.topic_ids), LagTracker(a.knowledge.topic_ids)
    a.run(groups, lag)
    return truth, groups, lag


def events(client: dict, kind: str) -> list[dict]:
    return [e for e in client["events"] if e["event"] == kind]


@pytest.mark.parametrize("name", TIMELINES)
def test_rebalances_and_their_causes_follow_the_scenario(name):
    truth, groups, _ = analyse(name)
    g = groups.groups[truth["expect"]["group"]]
    assert g.protocol == truth["expect"]["protocol"]
    first_rounds = [r for r in g.rebalances if not r.cause.startswith("second round")]
    assert len(first_rounds) == len(truth["expect"]["rebalance_causes"])
    for r, expected in zip(first_rounds, truth["expect"]["rebalance_causes"], strict=True):
        who, what = expected.split()
        client = truth["clients"][who]
        (mid,) = client["member_ids"]
        assert r.generation_after is not None and r.end is not None and r.start <= r.end
        if what == "joins":
            assert r.cause == f"member joining ({client['config']['client.id']})", r
            assert r.joined == [mid]
        elif what == "leaves":
            assert r.cause == f"member leaving ({mid})" and r.left == [mid]
        else:
            assert what == "expires"
            assert r.cause == f"session expiry of {mid}" and r.evicted == r.expired == [mid]
            (killed,) = events(client, "killed")
            assert r.start > killed["t"]  # expired after the kill, not before
    second = [r for r in g.rebalances if r.cause.startswith("second round")]
    # cooperative-sticky: the joins that move partitions take a second round (KIP-429)
    assert len(second) == (2 if name == "group-cooperative" else 0)


@pytest.mark.parametrize("name", ["group-joins", "group-cooperative"])
def test_each_assignment_a_member_received_is_its_generation_on_the_wire(name):
    truth, groups, _ = analyse(name)
    g = groups.groups[truth["expect"]["group"]]
    gens = {x.generation: x for x in g.generations}
    ends = {r.generation_after: r.end for r in g.rebalances}
    checked = 0
    for client in truth["clients"].values():
        for e in events(client, "assign"):
            gen = gens[e["generation"]]
            (m,) = [m for m in gen.members if m.member_id == e["member_id"]]
            assert {(t, p) for t, ps in m.assignment.items() for p in ps} == {
                tuple(x) for x in e["assignment"]
            }
            assert 0 <= e["t"] - ends[e["generation"]] < 1.0  # handed over once the rebalance ended
            checked += 1
    assert checked >= 5


def test_kip848_assignments_are_the_member_targets_on_the_wire():
    truth, groups, _ = analyse("group-kip848")
    g = groups.groups[truth["expect"]["group"]]
    targets = {
        (m.member_id, frozenset((t, p) for t, ps in m.assignment.items() for p in ps))
        for x in g.generations
        for m in x.members
    }
    checked = 0
    for client in truth["clients"].values():
        for e in events(client, "assign"):
            if not e["assignment"]:
                continue  # between a revocation and what the new epoch brings, it holds nothing
            assert (e["member_id"], frozenset(tuple(x) for x in e["assignment"])) in targets
            checked += 1
    assert checked >= 5


def test_a_static_member_back_with_its_instance_id_avoids_a_rebalance():
    truth, groups, _ = analyse("group-static")
    g = groups.groups[truth["expect"]["group"]]
    assert truth["expect"]["static_rejoin_no_rebalance"] and g.avoided == 1
    assert [r.cause for r in g.rebalances] == [
        f"member joining ({truth['clients'][who]['config']['client.id']})" for who in ("s1", "s2")
    ]
    (back,) = truth["clients"]["s2-restarted"]["member_ids"]
    (assign,) = events(truth["clients"]["s2-restarted"], "assign")
    member = g.members[back]
    assert member.instance_id == truth["expect"]["static_members"]["s2"]
    assert {(t, p) for t, ps in member.assignment.items() for p in ps} == {
        tuple(x) for x in assign["assignment"]
    }


def test_burrow_status_of_each_consumer_behaviour():
    truth, _, lag = analyse("group-lag")
    assert {s["group"]: s["status"] for s in lag.status()} == {
        g: ("ERR" if s in ("STOP", "STALL", "REWIND") else s) for g, s in truth["expect"]["burrow"].items()
    }
    for s in lag.status():
        expected = truth["expect"]["burrow"][s["group"]]
        assert {p["status"] for p in s["partitions"]} == {expected}


def test_every_commit_is_a_lag_row_and_its_seconds_the_age_of_the_first_record_behind():
    truth, _, lag = analyse("group-lag")
    born = {
        (e["topic"], e["partition"], e["offset"]): e["timestamp"] / 1000
        for e in events(truth["clients"]["producer"], "delivery")
    }
    rows: dict[tuple, list] = {}
    for r in lag.rows:  # a consumer may commit the same offset again (nothing consumed since)
        rows.setdefault((r.group, r.topic, r.partition, r.committed_offset), []).append(r)
    seen = behind = 0
    for client in truth["clients"].values():
        if client["role"] != "consumer":
            continue
        for e in events(client, "commit"):
            if e["error"] is not None:
                continue
            for topic, p, off, _err in e["offsets"]:
                r = min(rows[(client["group"], topic, p, off)], key=lambda r: abs(e["t"] - r.time))
                assert 0 <= e["t"] - r.time < 0.1  # the client's callback comes after the answer
                assert r.lag == r.end_offset - off
                if r.lag:
                    assert r.lag_seconds == pytest.approx(r.time - born[(topic, p, off)], abs=0.005)
                    behind += 1
                seen += 1
    assert seen >= 20 and behind >= 10


def _clients_by_member(truth: dict) -> dict[str, str]:
    return {
        e["member_id"]: name
        for name, c in truth["clients"].items()
        for e in c["events"]
        if e["event"] in ("assign", "revoke") and e.get("member_id")
    }


@pytest.mark.parametrize("name", TIMELINES)
def test_each_partitions_pause_spans_its_owners_callbacks(name):
    """A partition moved in a rebalance resumes with its new owner's first Fetch after the
    client's assign callback gave it (librdkafka starts fetching it then: within a second), and
    paused from around the old owner's revoke callback (its last Fetch answered within a long
    poll of it) or, for a killed member, its kill; a partition kept by its owner (no callback
    named it) barely pauses."""
    truth = json.loads((CAPTURES / f"{name}.truth.json").read_text())
    a = Analysis(str(CAPTURES / f"{name}.pcap"))
    ins = GroupInsights(a.knowledge.topic_ids)
    outcome = a.run(ins)
    owner_of = _clients_by_member(truth)
    killed = {p["t"] for p in truth["phases"] if "killed" in p["text"]}
    moved = kept = 0
    rebalances = [o for o in ins.objects(outcome.last_ts) if o["type"] == "rebalance"]
    for r in rebalances[1:]:  # the first assigns what nobody fetched before
        assert r["pauses"], r
        for p in r["pauses"]:
            assert p["pause_ms"] is not None and p["last_fetch"] is not None, (r, p)
            client = truth["clients"][owner_of[p["member"]]]
            given = [
                e["t"]
                for e in client["events"]
                if e["event"] == "assign"
                and [p["topic"], p["partition"]] in [x[:2] for x in e["partitions"]]
                and r["start"] - 1 <= e["t"] <= p["first_fetch"] + 0.005
            ]
            if not given:  # kept: no callback gave it again
                kept += 1
                assert p["pause_ms"] < 100, (r, p)
                continue
            moved += 1
            assert 0 <= p["first_fetch"] - given[-1] < 1.0, (r, p, given)
            taken = [
                e["t"]
                for c in truth["clients"].values()
                for e in c["events"]
                if e["event"] == "revoke"
                and [p["topic"], p["partition"]] in [x[:2] for x in e["partitions"]]
                and r["start"] - 1 <= e["t"] <= given[-1]
            ] + [t for t in killed if t <= given[-1] and t >= p["last_fetch"] - 1]
            assert taken, (r, p)
            assert abs(p["last_fetch"] - max(taken)) < 1.0, (r, p, taken)
            assert p["pause_ms"] / 1000 >= given[-1] - max(taken) - 1.0
    assert moved >= 4
    if name != "group-joins":  # eager: every partition moves (is revoked and assigned again)
        assert kept >= 4
