"""The group scenarios' ground truth (``captures/<scenario>.truth.json``, what each client saw) is
consistent with their captures as decoded today: the clients' clock is the capture's, every commit
a client saw acknowledged is an OffsetCommit on the wire with those offsets, every generation a
member was assigned in is a SyncGroup (or ConsumerGroupHeartbeat) answer to that member, the
members that left sent a leave and the killed ones did not, a static member's restart moved no
other member, and Burrow's rules applied to the wire's commits and end offsets give the statuses
the lag scenario intends (captures/README.md, "Group ground truth")."""

from __future__ import annotations

import json
from collections import defaultdict
from functools import cache

import pytest

from analyzer.dissect.constants import ApiKey
from analyzer.model import Exchange
from analyzer.pipeline import Analysis
from tests.helpers.captures import CAPTURES

MANIFEST = (
    json.loads((CAPTURES / "manifest.json").read_text()) if (CAPTURES / "manifest.json").exists() else []
)
# the group scenarios' (group-internal's truth lists the records it wrote: test_internal_capture.py)
ENTRIES = [
    e
    for e in MANIFEST
    if e.get("truth") and e["scenario"].startswith("group-") and e["scenario"] != "group-internal"
]
CLIENT_DELAY_S = 0.5  # a callback follows the answer it reports by less than this
INVALID = -1001  # librdkafka's OFFSET_INVALID


def truth(entry) -> dict:
    return json.loads((CAPTURES / entry["truth"]).read_text())


def items(field, name):
    """The elements of array ``name`` under ``field``."""
    arr = field.child(name) if field is not None else None
    return list(arr.children or ()) if arr is not None else []


@cache
def wire(file: str) -> tuple[list[Exchange], float, float]:
    """The capture's exchanges and its first and last packet times."""
    a = Analysis(CAPTURES / file)
    out = [ev for ev in a.events() if type(ev) is Exchange]
    times = [m.frame.ts_first for ev in out for m in (ev.request, ev.response) if m is not None]
    times += [m.frame.ts_last for ev in out for m in (ev.request, ev.response) if m is not None]
    return out, min(times), max(times)


def of(file: str, api: ApiKey) -> list[Exchange]:
    return [ev for ev in wire(file)[0] if ev.api_key == api and ev.request is not None]


def consumers(doc):
    return {n: c for n, c in doc["clients"].items() if c["role"] == "consumer"}


def events(c, *kinds):
    return [e for e in c["events"] if e["event"] in kinds]


def test_every_group_scenario_has_its_truth():
    names = {e["scenario"] for e in ENTRIES}
    assert {"group-joins", "group-cooperative", "group-kip848", "group-static", "group-lag"} <= names
    for e in ENTRIES:
        doc = truth(e)
        assert doc["scenario"] == e["scenario"] and doc["file"] == e["file"]
        assert doc["expect"] and consumers(doc)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["scenario"])
def test_client_times_fall_within_the_capture(entry):
    doc = truth(entry)
    _, first, last = wire(entry["file"])
    for name, c in doc["clients"].items():
        ts = [e["t"] for e in c["events"] if e["event"] not in ("created", "subscribe")]
        assert ts, name
        # a client is created before its first connection; everything after lies inside the capture
        assert first - CLIENT_DELAY_S <= min(ts) and max(ts) <= last + CLIENT_DELAY_S, name
    for p in doc["phases"]:
        assert first - 1.0 <= p["t"] <= last


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["scenario"])
def test_every_acknowledged_commit_is_an_offset_commit_on_the_wire(entry):
    """... from that client, with those offsets, answered without error shortly before the client
    saw it: the clients' clock and tcpdump's agree."""
    doc = truth(entry)
    commits = of(entry["file"], ApiKey.OFFSET_COMMIT)
    checked = 0
    deltas = []
    for name, c in consumers(doc).items():
        client_id = c["config"]["client.id"]
        for e in events(c, "commit"):
            ok = [(t, p, o) for t, p, o, err in e["offsets"] if err is None and o != INVALID]
            if e["error"] is not None or not ok:
                continue
            found = None
            for ex in commits:
                if ex.client_id != client_id or ex.response is None:
                    continue
                sent = {
                    (topic.get("name"), part.get("partition_index"), part.get("committed_offset"))
                    for topic in items(ex.request.body, "topics")
                    for part in items(topic, "partitions")
                }
                errors = {
                    part.get("error_code")
                    for topic in items(ex.response.body, "topics")
                    for part in items(topic, "partitions")
                }
                at = ex.response.frame.ts_last
                if (
                    set(ok) <= sent
                    and errors == {0}
                    and at <= e["t"] + 0.002
                    and e["t"] - at < CLIENT_DELAY_S
                ):
                    found = ex
            assert found is not None, (name, e)
            deltas.append(e["t"] - found.response.frame.ts_last)
            checked += 1
    assert checked >= 3
    # the callback comes after the answer that carried it (within 2 ms of clock resolution)
    assert min(deltas) > -0.002, min(deltas)


def classic_generations(file):
    """{(member id, generation): time} of the SyncGroup answers without error."""
    out = {}
    for ex in of(file, ApiKey.SYNC_GROUP):
        if ex.response is not None and ex.response.body.get("error_code") == 0:
            b = ex.request.body
            out[(b.get("member_id"), b.get("generation_id"))] = ex.response.frame.ts_last
    return out


def kip848_epochs(file):
    """{(member id, member epoch): first time} of the ConsumerGroupHeartbeat answers."""
    out = {}
    for ex in of(file, ApiKey.CONSUMER_GROUP_HEARTBEAT):
        if ex.response is not None and ex.response.body.get("error_code") == 0:
            key = (ex.request.body.get("member_id"), ex.response.body.get("member_epoch"))
            out.setdefault(key, ex.response.frame.ts_last)
    return out


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["scenario"])
def test_every_assignment_follows_its_generation_on_the_wire(entry):
    doc = truth(entry)
    kip848 = doc["expect"].get("protocol") == "consumer" or any(
        c["config"].get("group.protocol") == "consumer" for c in consumers(doc).values()
    )
    seen = kip848_epochs(entry["file"]) if kip848 else classic_generations(entry["file"])
    n = 0
    for name, c in consumers(doc).items():
        for e in events(c, "assign"):
            key = (e["member_id"], e["generation"])
            assert key in seen, (name, e)
            assert seen[key] <= e["t"] + 0.002, (name, e, seen[key])
            n += 1
    assert n >= len(consumers(doc))


def leaves(file):
    """Member ids that left: LeaveGroup (v0-v2 member_id, v3+ members[]) or a KIP-848 heartbeat
    with member epoch -1 (leave) or -2 (static leave)."""
    out = set()
    for ex in of(file, ApiKey.LEAVE_GROUP):
        b = ex.request.body
        if b.get("member_id"):
            out.add(b.get("member_id"))
        out |= {m.get("member_id") for m in items(b, "members")}
    for ex in of(file, ApiKey.CONSUMER_GROUP_HEARTBEAT):
        if ex.request.body.get("member_epoch") in (-1, -2):
            out.add(ex.request.body.get("member_id"))
    return out


def last_sent(file, member_id) -> float:
    """The last group request (Heartbeat, OffsetCommit, JoinGroup, ...) naming this member."""
    at = 0.0
    for ex in wire(file)[0]:
        if ex.request is None or ex.request.body is None:
            continue
        if ex.request.body.get("member_id") == member_id:
            at = max(at, ex.request.frame.ts_first)
    return at


JOIN_FLOWS = [e for e in ENTRIES if "killed" in truth(e)["expect"]]


@pytest.mark.parametrize("entry", JOIN_FLOWS, ids=lambda e: e["scenario"])
def test_left_members_left_and_killed_members_went_silent(entry):
    doc = truth(entry)
    exp = doc["expect"]
    gone = leaves(entry["file"])
    for name in exp["left"]:
        ids = doc["clients"][name]["member_ids"]
        assert ids and set(ids) & gone, name
        closed = events(doc["clients"][name], "closed")
        assert closed
    for name in exp["killed"]:
        c = doc["clients"][name]
        (killed,) = events(c, "killed")
        assert not set(c["member_ids"]) & gone, name
        (mid,) = c["member_ids"]
        # nothing from it after the kill, and the group moved on without it: a later generation
        # (a JoinGroup answer or a heartbeat epoch) that the survivors were assigned in
        assert last_sent(entry["file"], mid) <= killed["t"] + 0.002
        later = [
            e
            for n, other in consumers(doc).items()
            if n != name
            for e in events(other, "assign")
            if e["t"] > killed["t"]
        ]
        assert later, name
        # no sooner than the session timeout after its last request
        assert min(e["t"] for e in later) - last_sent(entry["file"], mid) >= exp["session_timeout_ms"] / 1000


@pytest.mark.parametrize("entry", JOIN_FLOWS, ids=lambda e: e["scenario"])
def test_each_member_joined_in_its_order_with_one_member_id(entry):
    doc = truth(entry)
    first = {}
    for name in doc["expect"]["join_order"]:
        c = doc["clients"][name]
        assert len(c["member_ids"]) == 1, (name, c["member_ids"])
        first[name] = min(e["t"] for e in events(c, "assign"))
    order = doc["expect"]["join_order"]
    assert [first[n] for n in order] == sorted(first.values())


def test_static_rejoin_moves_no_other_member():
    (entry,) = [e for e in ENTRIES if e["scenario"] == "group-static"]
    doc = truth(entry)
    assert doc["expect"]["static_rejoin_no_rebalance"] is True
    s1, s2, s2b = (doc["clients"][n] for n in ("s1", "s2", "s2-restarted"))
    stopped = events(s2, "close_begin")[0]["t"]
    back = min(e["t"] for e in events(s2b, "assign"))
    # the restarted member got the partitions the first one had, in the same member epoch
    assign2 = [e for e in events(s2, "assign") if e["partitions"]][-1]
    assign2b = [e for e in events(s2b, "assign") if e["partitions"]][0]
    assert assign2b["assignment"] == assign2["assignment"]
    assert assign2b["generation"] == assign2["generation"]
    assert assign2b["instance_id"] == assign2["instance_id"] == "static-2"
    # s1 saw no rebalance between s2 stopping and the end
    s1_close = events(s1, "close_begin")[0]["t"]
    assert not [e for e in events(s1, "assign", "revoke", "lost") if stopped <= e["t"] < s1_close]
    # on the wire: s2's static leave (epoch -2), and s1's epoch unchanged from before to after
    (s1_id,) = s1["member_ids"]
    (s2_id,) = s2["member_ids"]
    hb = of(entry["file"], ApiKey.CONSUMER_GROUP_HEARTBEAT)
    assert [
        ex
        for ex in hb
        if ex.request.body.get("member_id") == s2_id and ex.request.body.get("member_epoch") == -2
    ]
    epochs = {
        ex.response.body.get("member_epoch")
        for ex in hb
        if ex.request.body.get("member_id") == s1_id
        and ex.response is not None
        and stopped - 1.0 <= ex.request.frame.ts_first <= back + 1.0
    }
    assert epochs == {assign2["generation"]}


def burrow(commits, end_at, now):
    """Burrow's partition evaluator (issue 27) over one partition's commits [(time, offset)]."""
    lags = [end_at(t) - o for t, o in commits]
    current = end_at(now) - commits[-1][1]
    if current <= 0:
        return "OK"
    span = commits[-1][0] - commits[0][0]
    if now - commits[-1][0] > span and end_at(now) > commits[-1][1]:
        return "STOP"
    if any(lag <= 0 for lag in lags):
        return "OK"
    offsets = [o for _, o in commits]
    if any(b < a for a, b in zip(offsets, offsets[1:], strict=False)):
        return "REWIND"
    if len(set(offsets)) == 1:
        return "STALL"
    if all(b >= a for a, b in zip(lags, lags[1:], strict=False)):
        return "WARN"
    return "OK"


def test_burrow_statuses_from_the_wire_are_the_intended_ones():
    """End offsets from the Produce answers (base offset + records), commits from the OffsetCommit
    requests answered without error, Burrow's window of 10 commits per partition."""
    (entry,) = [e for e in ENTRIES if e["scenario"] == "group-lag"]
    doc = truth(entry)
    file = entry["file"]
    appended = defaultdict(list)  # (topic, partition) -> [(time, end offset)]
    for ex in of(file, ApiKey.PRODUCE):
        counts = {}
        for td in items(ex.request.body, "topic_data"):
            for pd in items(td, "partition_data"):
                n = sum(b.get("last_offset_delta") + 1 for b in pd.child("records").children or ())
                counts[(td.get("name"), pd.get("index"))] = n
        for tr in items(ex.response.body, "responses"):
            for pr in items(tr, "partition_responses"):
                key = (tr.get("name"), pr.get("index"))
                appended[key].append((ex.response.frame.ts_last, pr.get("base_offset") + counts[key]))
    commits = defaultdict(list)  # (group, topic, partition) -> [(time, offset)]
    for ex in of(file, ApiKey.OFFSET_COMMIT):
        if ex.response is None:
            continue
        ok = {
            (t.get("name"), p.get("partition_index"))
            for t in items(ex.response.body, "topics")
            for p in items(t, "partitions")
            if p.get("error_code") == 0
        }
        for t in items(ex.request.body, "topics"):
            for p in items(t, "partitions"):
                if (t.get("name"), p.get("partition_index")) in ok:
                    key = (ex.request.body.get("group_id"), t.get("name"), p.get("partition_index"))
                    commits[key].append((ex.response.frame.ts_last, p.get("committed_offset")))
    _, _, last = wire(file)
    got = defaultdict(set)
    for (group, topic, part), cs in commits.items():
        ends = sorted(appended[(topic, part)])

        def end_at(t, ends=ends):
            return max([e for at, e in ends if at <= t], default=0)

        got[group].add(burrow(cs[-10:], end_at, last))
    assert {g: s for g, (s,) in ((g, tuple(v)) for g, v in got.items())} == doc["expect"]["burrow"]


def test_lag_members_saw_what_the_wire_shows():
    """The stopped member paused and never committed again; the rewinding one committed the lower
    offsets it sought to."""
    (entry,) = [e for e in ENTRIES if e["scenario"] == "group-lag"]
    doc = truth(entry)
    stop = doc["clients"]["stop"]
    (paused,) = events(stop, "pause")
    assert not [e for e in events(stop, "commit") if e["t"] > paused["t"]]
    assert not [
        ex
        for ex in of(entry["file"], ApiKey.OFFSET_COMMIT)
        if ex.request.body.get("group_id") == stop["group"] and ex.request.frame.ts_first > paused["t"]
    ]
    rewind = doc["clients"]["rewind"]
    (r,) = events(rewind, "rewind")
    after = [e for e in events(rewind, "commit") if e["t"] >= r["t"]][0]
    assert sorted([t, p, o] for t, p, o, _ in after["offsets"]) == sorted(r["offsets"])
