"""The consumer groups' insights in ``stats`` and ``export`` (analyzer.session.insights): the
objects and the health table come from the timeline and the lag, and processes sharing the work
(``-j 2``: each exchange's part replayed in capture order by the merge) give what one gives."""

import json

import pytest

from analyzer.cli import main
from analyzer.pipeline import Analysis
from analyzer.session.insights import OBJECT_TYPES, GroupInsights
from tests.helpers.captures import CAPTURES

SCENARIOS = ["group-joins", "group-cooperative", "group-kip848", "group-static", "group-lag"]


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_objects_are_the_timeline_and_the_lag(name):
    a = Analysis(str(CAPTURES / f"{name}.pcap"))
    ins = GroupInsights(a.knowledge.topic_ids)
    outcome = a.run(ins)
    objs = ins.objects(outcome.last_ts)
    kinds = [o["type"] for o in objs]
    assert set(kinds) <= set(OBJECT_TYPES)
    gens = sum(len(g.generations) for g in ins.groups.groups.values())
    rebs = sum(len(g.rebalances) for g in ins.groups.groups.values())
    assert kinds.count("generation") == gens > 0 and kinds.count("rebalance") == rebs > 0
    assert kinds.count("lag") == len(ins.lag.rows) > 0
    table = {r["group_id"]: r for r in ins.table(outcome.last_ts)}
    for s in (o for o in objs if o["type"] == "consumer_status"):
        assert table[s["group"]]["status"] == s["status"]
        lags = [p["lag"] for p in s["partitions"] if p["lag"] is not None]
        assert table[s["group"]]["max_lag"] == (max(lags) if lags else None)


@pytest.mark.parametrize("name", ["group-joins", "group-kip848", "group-lag"])
@pytest.mark.parametrize("command", [["stats", "--format", "json"], ["export", "--records"]])
def test_two_processes_give_what_one_gives(name, command, capsys):
    outputs = []
    for jobs in ("1", "2"):
        assert main([command[0], str(CAPTURES / f"{name}.pcap"), "-j", jobs, *command[1:]]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    if command[0] == "stats":
        health = json.loads(outputs[0])["group_health"]
        assert health and all(r["rebalances"] >= 1 for r in health)
