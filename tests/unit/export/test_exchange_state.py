"""An exchange stored as plain data (what `spark` writes for `check --parquet`) and rebuilt gives
the check engine, the display filters and the baseline profiler what the original gives: the
same engine state and profile over every bundled capture, with the built-in pack and rules over
decoded fields, records and record bodies."""

from __future__ import annotations

import argparse

import orjson
import pytest

from analyzer.check import baseline
from analyzer.check.engine import Engine
from analyzer.check.rules import build_rule
from analyzer.check.run import config
from analyzer.dissect.message import Options
from analyzer.export.exchange_state import (
    exchange_from_state,
    exchange_state,
    issue_state,
    joined_state,
    state_parts,
)
from analyzer.model import Exchange
from analyzer.pipeline import Analysis
from tests.helpers.captures import CAPTURES as DIR
from tests.helpers.captures import project_captures, public_captures
from tests.helpers.secrets import SASL, secrets, shows

# user rules over decoded fields, records, record bodies, software and groups
EXTRA = [
    {"id": "x-fields", "assert": 'not throttle_time_ms > 0 and not metadata.topics.name contains "zz"'},
    {"id": "x-keys", "where": "records", "assert": 'not records.key contains "k" and not records.offset > 5'},
    {"id": "x-headers", "where": "api == Produce", "assert": 'not records.headers.key == "a"'},
    {"id": "x-values", "where": "api == Fetch", "assert": 'not records.value matches "^[a-m]"'},
    {"id": "x-software", "assert": 'not software contains "lib" and not group contains "g"'},
    {"id": "x-bytes", "where": "api == Metadata", "aggregate": "sum(response_bytes)", "max": 10},
    {"id": "x-count", "aggregate": "sum(records.count)", "max": 1, "per": "client_id"},
    {"id": "x-latency", "aggregate": "p99(latency)", "max": "1ms", "per": "api"},
    {"id": "x-address", "assert": "not client == 127.0.0.0/8 and not unanswered and not severity >= note"},
    {"id": "x-ts", "where": "records", "assert": "not records.timestamp > 0 and not records.codec == gzip"},
]


def _args() -> argparse.Namespace:
    return argparse.Namespace(
        rules=None,
        fail_on="warning",
        allow=None,
        latency=None,
        forbid_error=None,
        max_kafka_errors=None,
        max_unanswered=None,
        expect_api=None,
        assert_=None,
    )


def _run(path, rebuild: bool) -> tuple[dict, dict]:
    cfg = config(_args())
    cfg.rules += [build_rule(dict(r), "test") for r in EXTRA]
    engine = Engine(cfg)
    prof = baseline.Profiler()
    a = Analysis(str(path), Options(records_bodies=True))
    known = a.knowledge
    if rebuild:

        class Known:
            clients: dict = {}
            topic_ids: dict = {}

        known = Known()
        known.clients = {}
        # the topic names the run learns from Metadata (a Fetch names topics by id since v13:
        # a batch fetched again is matched with its Produce by name)
        known.topic_ids = a.knowledge.topic_ids
    engine.begin(str(path), known)
    prof.begin(str(path), known)
    for ev in a.events():
        if type(ev) is Exchange and rebuild:
            sw = a.knowledge.clients.get(ev.client_id) if ev.client_id is not None else None
            ev, sw = exchange_from_state(orjson.loads(orjson.dumps(exchange_state(ev, sw))))
            if ev.client_id is not None:
                if sw is None:
                    known.clients.pop(ev.client_id, None)
                else:
                    known.clients[ev.client_id] = sw
        engine.event(ev)
        prof.event(ev)
    engine.done(a.outcome())
    return engine.state(), prof.state()


CAPTURES = project_captures() + public_captures()[:12]


@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_rebuilt_exchanges_give_the_same_engine_state(path):
    assert _run(path, False) == _run(path, True)


@pytest.mark.parametrize("entry", SASL, ids=[e["file"] for e in SASL])
def test_the_state_keeps_secrets_masked(entry):
    a = Analysis(str(DIR / entry["file"]), Options())
    out = b"\n".join(orjson.dumps(exchange_state(ev)) for ev in a.events() if type(ev) is Exchange)
    assert b"auth_bytes" in out or b"sasl" in out.lower()
    for secret in secrets(entry):
        assert not shows(out, secret, True), secret


@pytest.mark.parametrize("path", project_captures(), ids=[p.name for p in project_captures()])
def test_joined_parts_are_the_completed_state_byte_for_byte(path):
    """Spark's stitching completes each exchange's state from its parts (the connection id of
    the whole piece, a commit's issues judged again, topics, software): the same bytes as
    dumping the state so completed."""
    a = Analysis(str(path), Options(records_bodies=True))
    seen = 0
    for ev in a.events():
        if type(ev) is not Exchange:
            continue
        seen += 1
        parts = state_parts(ev)
        conn = ev.conn.id + 1000 * seen
        topics = {"t\u00e9": [seen, 0], str(seen): []}
        issues = ev.all_issues()[:2] if seen % 2 else None
        software = ("librdkafka", "2.6.0") if seen % 3 else None
        whole = exchange_state(ev)
        whole["conn"]["id"] = conn
        for m in (whole["request"], whole["response"]):
            if m is not None:
                m["frame"][0] = conn
        if issues is not None:
            whole["issues"] = [issue_state(i) for i in issues]
        whole["topics"] = topics
        whole["software"] = None if software is None else list(software)
        want = orjson.dumps(whole, option=orjson.OPT_NON_STR_KEYS)
        assert joined_state(parts, conn, issues, topics, software) == want
        assert joined_state(parts, ev.conn.id, None, ev.topics, None) == orjson.dumps(
            exchange_state(ev), option=orjson.OPT_NON_STR_KEYS
        )
    assert seen or path.stat().st_size < 2000
