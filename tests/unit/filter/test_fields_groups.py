"""The group.* display-filter fields (group.id, group.member_id, group.instance_id,
group.generation) on the generated group scenarios: each against the decoded requests and answers
read another way, through `read -Y` (one code path with check --assert, the TUI and Spark's
where=), the same with -j 2 over several captures, and listed by `filters`."""

import io
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout

import pytest

from analyzer import cli
from analyzer.dissect.constants import ApiKey
from analyzer.filter import compile_filter
from analyzer.session.rebalances import GroupTracker
from tests.helpers.capture_patch import exchanges
from tests.helpers.captures import CAPTURES

NAMES = ("joins", "cooperative", "kip848", "static", "lag")
CAPS = [CAPTURES / f"group-{n}.pcap" for n in NAMES]


def matching(path, text: str) -> list[int]:
    flt = compile_filter(text)
    return [n for n, ex in enumerate(exchanges(path), 1) if flt(ex)]


def read_lines(*args) -> list[str]:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        assert cli.main(["read", *map(str, args)]) == 0
    return out.getvalue().splitlines()


def req(ex, name):
    return ex.request.body.get(name) if ex.request is not None and ex.request.body is not None else None


@pytest.mark.parametrize("path", CAPS, ids=NAMES)
def test_group_id_is_group_and_the_coordinator_lookups(path):
    exs = list(enumerate(exchanges(path), 1))
    gids = {req(ex, "group_id") for _, ex in exs} - {None}
    assert gids
    for g in gids:
        both = set(matching(path, f'group.id == "{g}"'))
        plain = set(matching(path, f'group == "{g}"'))
        lookups = {n for n, ex in exs if ex.api_key == ApiKey.FIND_COORDINATOR and req(ex, "key") == g}
        assert lookups and both == plain | lookups
        assert len(read_lines(path, "-Y", f'group.id == "{g}"')) == len(both)


def test_generation_and_member_follow_the_timeline():
    path = CAPTURES / "group-joins.pcap"
    t = GroupTracker()
    exs = list(enumerate(exchanges(path), 1))
    for _, ex in exs:
        t.event(ex)
    t.done()
    [g] = t.groups.values()
    for gen in g.generations:
        got = matching(path, f"group.generation == {gen.generation}")
        expected = [
            n
            for n, ex in exs
            if gen.generation in (req(ex, "generation_id"), req(ex, "generation_id_or_member_epoch"))
            or (
                ex.api_key == ApiKey.JOIN_GROUP
                and ex.response is not None
                and ex.response.body.get("generation_id") == gen.generation
            )
        ]
        assert got == expected and got
        for m in gen.members:
            mine = matching(path, f'group.member_id == "{m.member_id}"')
            # its heartbeats, syncs and commits; the leader's SyncGroup naming everyone's
            # assignment is not about the others
            assert mine
            for n in mine:
                ex = exs[n - 1][1]
                ids = {req(ex, "member_id")}
                ids |= {x.get("member_id") for x in ex.request.body.elements("members")}
                if ex.response is not None and ex.response.body is not None:
                    ids.add(ex.response.body.get("member_id"))
                assert m.member_id in ids, (n, ex.api_key)


def test_kip848_member_epochs():
    path = CAPTURES / "group-kip848.pcap"
    exs = list(enumerate(exchanges(path), 1))
    for epoch in (2, 3, 4, 5):
        got = matching(path, f"group.generation == {epoch}")
        expected = [
            n
            for n, ex in exs
            if ex.api_key == ApiKey.CONSUMER_GROUP_HEARTBEAT
            and epoch
            in (req(ex, "member_epoch"), ex.response.body.get("member_epoch") if ex.response else None)
        ] + [
            n
            for n, ex in exs
            if ex.api_key == ApiKey.OFFSET_COMMIT and req(ex, "generation_id_or_member_epoch") == epoch
        ]
        assert sorted(got) == sorted(expected) and got


def test_instance_ids_of_the_static_members():
    path = CAPTURES / "group-static.pcap"
    exs = list(enumerate(exchanges(path), 1))
    ids = {req(ex, "instance_id") or req(ex, "group_instance_id") for _, ex in exs} - {None}
    assert ids
    for i in ids:
        got = matching(path, f'group.instance_id == "{i}"')
        assert got == [n for n, ex in exs if i in (req(ex, "instance_id"), req(ex, "group_instance_id"))]
    assert matching(CAPTURES / "group-joins.pcap", "group.instance_id") == []  # dynamic members


def test_the_same_with_two_processes():
    expr = 'group.generation >= 2 and group.member_id and group.id matches "^g-"'
    outs = []
    for j in ("1", "2"):
        r = subprocess.run(
            [sys.executable, "-m", "analyzer", "read", *map(str, CAPS), "-Y", expr, "-j", j],
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
    assert outs[0] == outs[1] and outs[0].count("==> ") == len(CAPS)


def test_filters_lists_them():
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        cli.main(["filters"])
    for name in ("group.id", "group.member_id", "group.instance_id", "group.generation"):
        assert name in out.getvalue()
