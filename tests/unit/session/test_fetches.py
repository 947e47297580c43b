"""Fetch behaviour (analyzer.session.fetches) on the bundled recordings: every consumer there
lingers after its last record, so its empty answers are long-polls that waited max_wait_ms; they
are counted apart and left out of the latency figures, which then hold only the fetches that
returned records (answered at once on the loopback)."""

import pytest

from analyzer.model import Exchange
from analyzer.pipeline import Analysis
from analyzer.session.fetches import FetchTracker
from tests.helpers.captures import project_captures


class Fetches:
    def __init__(self) -> None:
        self.exchanges: list[Exchange] = []

    def event(self, ev) -> None:
        if type(ev) is Exchange and ev.api_key == 1 and ev.response is not None:
            self.exchanges.append(ev)


@pytest.mark.parametrize("path", project_captures(), ids=lambda p: p.name)
def test_idle_long_polls_are_the_empty_answers_that_waited(path):
    f, seen = FetchTracker(), Fetches()
    Analysis(str(path)).run(f, seen)
    rows = f.rows()
    assert sum(r["fetches"] for r in rows) == len(seen.exchanges)
    waited = 0
    for ex in seen.exchanges:
        wait = ex.request.body.get("max_wait_ms")
        waited += ex.latency * 1000 >= wait * 0.95
    assert sum(r["idle_long_polls"] for r in rows) == waited
    for r in rows:
        assert r["idle_long_polls"] <= r["empty"] <= r["fetches"]
        assert not r["busy_polling"]  # every client here waits (100 ms or more) for data
        assert r["sessions_created"] == 0  # none of these clients asks for a KIP-227 session
        if r["max_ms"] is not None:
            assert r["max_ms"] < 400  # what is left: answers that did not wait


def test_a_consumer_that_lingers_waits_in_long_polls():
    f = FetchTracker()
    Analysis("captures/librdkafka-produce-consume-zstd.pcap").run(f)
    rows = f.rows()
    total = [sum(r[k] for r in rows) for k in ("fetches", "empty", "idle_long_polls")]
    assert total == [8, 6, 6]
    assert all(r["p99_ms"] is None or r["p99_ms"] < 5 for r in rows)
