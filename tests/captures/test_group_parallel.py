"""The consumer groups however the work is split: each generated group scenario, whole and cut
into rotated pieces every few packets (connections, exchanges and frames cut between files),
read by one process and by ``-j 2`` (the default sharing of connections, and one that puts
every other connection on the other process, so that a group's members, its coordinator's
answers and the fetches are on different processes): ``groups --format json``, ``stats``'
group_health and ``export``'s group objects are those of the whole file read by one process."""

import io
import json
from contextlib import redirect_stdout

import pytest

from analyzer import cli
from analyzer.export import parallel
from analyzer.session.insights import GROUP_TYPES
from tests.helpers.captures import CAPTURES, connection_keys, cut

SCENARIOS = ["group-joins", "group-kip848", "group-lag", "group-cooperative", "group-static"]


def _run(*args: str) -> tuple[int, bytes]:
    buf = io.BytesIO()
    out = io.TextIOWrapper(buf, encoding="utf-8")
    with redirect_stdout(out):
        rc = cli.main(list(args))
        out.flush()
    return rc, buf.getvalue()


def group_views(*inputs: str) -> dict:
    """What the three commands say of the groups (with their exit codes)."""
    rc_g, groups = _run("groups", "--format", "json", *inputs)
    rc_s, stats = _run("stats", "--format", "json", *inputs)
    rc_e, export = _run("export", *inputs)
    objects = [d for d in map(json.loads, export.splitlines()) if d.get("type") in GROUP_TYPES]
    return {
        "exit": (rc_g, rc_s, rc_e),
        "groups": json.loads(groups),
        "group_health": json.loads(stats)["group_health"],
        "export": objects,
    }


@pytest.fixture(scope="module")
def whole() -> dict:
    return {name: group_views(str(CAPTURES / f"{name}.pcap")) for name in SCENARIOS}


def test_the_scenarios_have_groups(whole):
    for name, views in whole.items():
        kinds = {o["type"] for o in views["export"]}
        assert {"generation", "rebalance", "lag", "consumer_status"} <= kinds, name
        assert views["group_health"] and views["groups"]["groups"], name
        assert views["exit"] == (0, 0, 0), name


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("every", [5, 37])
@pytest.mark.parametrize("name", SCENARIOS)
def test_rotated_pieces_give_the_whole_file(whole, name, every, jobs, tmp_path, monkeypatch, capsys):
    pieces = [str(p) for p in cut(CAPTURES / f"{name}.pcap", every, tmp_path)]
    assert len(pieces) > 10
    shared = _count_shared(monkeypatch)
    assert group_views("-j", jobs, *pieces) == whole[name]
    # -j 2: export and stats shared the work (groups runs in one process), nothing said why not
    assert len(shared) == (2 if jobs == "2" else 0)
    assert capsys.readouterr().err == ""


def _count_shared(monkeypatch) -> list:
    """The runs that shared their work among processes (appended to as they start)."""
    runs: list = []
    real = parallel.run

    def run(*args, **kwargs):
        runs.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(parallel, "run", run)
    return runs


@pytest.mark.parametrize("name", SCENARIOS)
def test_connections_shared_alternately_between_two_processes(whole, name, tmp_path, monkeypatch, capsys):
    """Every other connection (in the order they open) on the other process: a group's members,
    its coordinator and the fetchers' connections are split between the two."""
    src = CAPTURES / f"{name}.pcap"
    owners = {k: i % 2 for i, k in enumerate(connection_keys(src))}
    assert len(owners) > 3
    planned: list = []
    monkeypatch.setattr(parallel, "plan_owners", lambda _path, parts: planned.append(parts) or owners)
    shared = _count_shared(monkeypatch)
    assert group_views("-j", "2", str(src)) == whole[name]
    pieces = [str(p) for p in cut(src, 11, tmp_path)]
    assert group_views("-j", "2", *pieces) == whole[name]
    assert shared == [2, 2, 2, 2] and planned == [2, 2, 2, 2] and capsys.readouterr().err == ""
