"""The producers and the clients however the work is split: the producer scenarios, librdkafka's
transactions and an old kafka-python, whole and cut into rotated pieces every few packets
(connections, exchanges and frames cut between files), read by one process and by ``-j 2``
(the default sharing of connections, and one that puts every other connection on the other
process, so that a producer's connections, its transaction coordinator's and the consumers'
are on different processes): ``export``'s producer, retry, transaction, held_back, e2e, client
and edge objects and ``stats``' producers, transactions, e2e and readiness sections are those of
the whole file read by one process."""

import io
import json
from contextlib import redirect_stdout

import pytest

from analyzer import cli
from analyzer.export import parallel
from analyzer.session.insights import CLIENT_TYPES
from analyzer.session.producer_insights import OBJECT_TYPES as PRODUCER_TYPES
from tests.helpers.captures import CAPTURES, connection_keys, cut

SCENARIOS = [
    "producer-idempotent",
    "producer-plain",
    "producer-txn",
    "producer-mix",
    "librdkafka-txn",
    "kafka-python-0.9-gzip",
]
TYPES = (*PRODUCER_TYPES, *CLIENT_TYPES)
SECTIONS = ("producers", "transactions", "e2e", "readiness")


def _run(*args: str) -> tuple[int, bytes]:
    buf = io.BytesIO()
    out = io.TextIOWrapper(buf, encoding="utf-8")
    with redirect_stdout(out):
        rc = cli.main(list(args))
        out.flush()
    return rc, buf.getvalue()


def views(*inputs: str) -> dict:
    """What ``export`` and ``stats`` say of the producers and the clients (with exit codes)."""
    rc_s, stats = _run("stats", "--format", "json", *inputs)
    rc_e, export = _run("export", *inputs)
    tables = json.loads(stats)
    return {
        "exit": (rc_s, rc_e),
        "sections": {k: tables[k] for k in SECTIONS},
        "export": [d for d in map(json.loads, export.splitlines()) if d.get("type") in TYPES],
    }


@pytest.fixture(scope="module")
def whole() -> dict:
    return {name: views(str(CAPTURES / f"{name}.pcap")) for name in SCENARIOS}


def test_the_scenarios_have_producers_and_clients(whole):
    for name, v in whole.items():
        kinds = {o["type"] for o in v["export"]}
        assert {"producer", "client"} <= kinds, name  # (kafka-python 0.9's records refused: no edge)
        assert v["sections"]["producers"] and v["sections"]["readiness"], name
    kinds = {o["type"] for v in whole.values() for o in v["export"]}
    assert kinds == set(TYPES) - {"held_back"}  # (no capture has a read_committed consumer held back)


def _count_shared(monkeypatch) -> list:
    """The runs that shared their work among processes (appended to as they start)."""
    runs: list = []
    real = parallel.run

    def run(*args, **kwargs):
        runs.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(parallel, "run", run)
    return runs


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("name", SCENARIOS)
def test_rotated_pieces_give_the_whole_file(whole, name, jobs, tmp_path, monkeypatch, capsys):
    every = 3 if name == "kafka-python-0.9-gzip" else 29
    pieces = [str(p) for p in cut(CAPTURES / f"{name}.pcap", every, tmp_path)]
    assert len(pieces) > 5
    shared = _count_shared(monkeypatch)
    assert views("-j", jobs, *pieces) == whole[name]
    assert len(shared) == (2 if jobs == "2" else 0)  # export and stats shared the work
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("name", SCENARIOS)
def test_connections_shared_alternately_between_two_processes(whole, name, tmp_path, monkeypatch, capsys):
    """Every other connection (in the order they open) on the other process."""
    src = CAPTURES / f"{name}.pcap"
    owners = {k: i % 2 for i, k in enumerate(connection_keys(src))}
    assert len(owners) > 1
    planned: list = []
    monkeypatch.setattr(parallel, "plan_owners", lambda _path, parts: planned.append(parts) or owners)
    shared = _count_shared(monkeypatch)
    assert views("-j", "2", str(src)) == whole[name]
    pieces = [str(p) for p in cut(src, 11, tmp_path)]
    assert views("-j", "2", *pieces) == whole[name]
    assert shared == [2, 2, 2, 2] and planned == [2, 2, 2, 2] and capsys.readouterr().err == ""
