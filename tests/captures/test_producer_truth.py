"""The producer scenarios' ground truth (``captures/producer-*.truth.json``, what each client saw and
what was injected into the mock) is consistent with their captures as decoded today: the clients'
clock is the capture's, every delivered record is in a Produce request of its producer and its
offset in that request's answer, every failed record's last attempt was answered with its error,
the injected errors and delays are on the wire, the records sent again and written twice are the
ones the truth counts, each transaction's EndTxn matches the commit or abort the producer saw (the
hanging one has none), and every record a consumer got came in a Fetch answer before it got it
(captures/README.md, "Producer ground truth")."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from functools import cache

import pytest

from analyzer.dissect.constants import ApiKey, ErrorCode
from analyzer.dissect.message import Options
from analyzer.model import Exchange
from analyzer.pipeline import Analysis
from analyzer.session.records import iter_records
from tests.helpers.captures import CAPTURES

MANIFEST = (
    json.loads((CAPTURES / "manifest.json").read_text()) if (CAPTURES / "manifest.json").exists() else []
)
ENTRIES = [e for e in MANIFEST if e.get("truth") and e["scenario"].startswith("producer-")]
CLIENT_DELAY_S = 0.5  # a callback follows the answer it reports by less than this
SLACK_S = 0.002  # clock resolution between tcpdump and the clients


def truth(entry) -> dict:
    return json.loads((CAPTURES / entry["truth"]).read_text())


def by_name(name: str) -> dict:
    (entry,) = [e for e in ENTRIES if e["scenario"] == name]
    return entry


def items(field, name):
    arr = field.child(name) if field is not None else None
    return list(arr.children or ()) if arr is not None else []


def text(b):
    return None if b is None else b.decode()


@cache
def wire(file: str):
    """The capture's exchanges, the records of each Produce request and Fetch answer, and the
    first and last packet times."""
    a = Analysis(CAPTURES / file, Options(records_bodies=True))
    exchanges = [ev for ev in a.events() if type(ev) is Exchange]
    produced = {}  # id(exchange) -> [(topic, partition, index in batch, key)]
    fetched = {}  # id(exchange) -> [(topic, partition, offset, key)]
    for ev in exchanges:
        if ev.api_key == ApiKey.PRODUCE and ev.request is not None:
            produced[id(ev)] = [
                (r.topic, r.partition, r.offset, text(r.key))
                for r in iter_records(ev.request, a.knowledge.topic_ids)
            ]
        if ev.api_key == ApiKey.FETCH and ev.response is not None:
            fetched[id(ev)] = [
                (r.topic, r.partition, r.offset, text(r.key))
                for r in iter_records(ev.response, a.knowledge.topic_ids)
                if not r.control
            ]
    times = [m.frame.ts_first for ev in exchanges for m in (ev.request, ev.response) if m is not None]
    times += [m.frame.ts_last for ev in exchanges for m in (ev.request, ev.response) if m is not None]
    return exchanges, produced, fetched, min(times), max(times)


def of(file: str, api: ApiKey, client_id: str | None = None) -> list[Exchange]:
    return [
        ev
        for ev in wire(file)[0]
        if ev.api_key == api and ev.request is not None and (client_id is None or ev.client_id == client_id)
    ]


def answers(ex: Exchange) -> dict[tuple[str, int], tuple[int, int]]:
    """A Produce answer's (topic, partition) -> (error code, base offset)."""
    out = {}
    if ex.response is None or ex.response.body is None:
        return out
    for tr in items(ex.response.body, "responses"):
        for pr in items(tr, "partition_responses"):
            out[(tr.get("name"), pr.get("index"))] = (pr.get("error_code"), pr.get("base_offset"))
    return out


def broker_port(ex: Exchange) -> int:
    c = ex.conn
    return (c.b if c.client_direction == 0 else c.a).port


def events(c, *kinds):
    return [e for e in c["events"] if e["event"] in kinds]


def producers(doc):
    return {n: c for n, c in doc["clients"].items() if c["role"] == "producer"}


def consumers(doc):
    return {n: c for n, c in doc["clients"].items() if c["role"] == "consumer"}


def attempts(file, client_id, key):
    """The Produce exchanges of ``client_id`` whose request carried ``key``, in capture order, each
    with the record's (topic, partition, index in its batch)."""
    _, produced, *_ = wire(file)
    out = []
    for ex in of(file, ApiKey.PRODUCE, client_id):
        for t, p, idx, k in produced.get(id(ex), ()):
            if k == key:
                out.append((ex, t, p, idx))
    return out


def test_every_producer_scenario_has_its_truth():
    names = {e["scenario"] for e in ENTRIES}
    assert {"producer-idempotent", "producer-plain", "producer-txn", "producer-mix"} <= names
    for e in ENTRIES:
        doc = truth(e)
        assert doc["scenario"] == e["scenario"] and doc["file"] == e["file"]
        assert doc["expect"] and producers(doc) and consumers(doc)
        assert e["size_bytes"] < 300_000


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["scenario"])
def test_client_times_fall_within_the_capture(entry):
    doc = truth(entry)
    *_, first, last = wire(entry["file"])
    for name, c in doc["clients"].items():
        ts = [e["t"] for e in c["events"] if e["event"] not in ("created", "subscribe", "assign")]
        assert ts, name
        assert first - CLIENT_DELAY_S <= min(ts) and max(ts) <= last + CLIENT_DELAY_S, name
    for p in doc["phases"]:
        assert first - 1.0 <= p["t"] <= last


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["scenario"])
def test_every_delivery_report_follows_its_produce_answer(entry):
    """A delivered record is in a Produce request of its producer whose answer (no error) puts it
    at the reported offset, shortly before the report; acks=0 answers count too (the mock answers
    them). The one exception is the mock's answer to a transactional resend it recognises as a
    duplicate: base offset -1 and no error, which librdkafka reports as offsets -1 + index."""
    doc = truth(entry)
    file = entry["file"]
    deltas, checked, dedup = [], 0, 0
    for name, c in producers(doc).items():
        cid = c["config"]["client.id"]
        for d in events(c, "delivery"):
            if d["error"] is not None:
                continue
            tries = attempts(file, cid, d["key"])
            assert tries, (name, d["key"])
            found = None
            for ex, t, p, idx in tries:
                err, base = answers(ex).get((t, p), (None, None))
                if err != 0 or ex.response.frame.ts_last > d["t"] + SLACK_S:
                    continue
                dr_offset = -1 if d["dr_offset"] is None else d["dr_offset"]  # confluent-kafka: None for -1
                if base == -1 and dr_offset == -1 + idx:
                    found = ex  # the mock's duplicate answer
                    dedup += 1
                elif (d["offset"] is not None and base + idx == d["offset"]) or (
                    d["offset"] is None and c["config"].get("acks") == "0"  # acks=0: no offset
                ):
                    found = ex
            assert found is not None, (name, d)
            assert found.request.frame.ts_first >= d["produce_t"] - SLACK_S, (name, d)
            deltas.append(d["t"] - found.response.frame.ts_last)
            checked += 1
    assert checked >= 15
    assert min(deltas) > -SLACK_S and max(deltas) < CLIENT_DELAY_S, (min(deltas), max(deltas))
    if dedup:
        assert "duplicate with base offset -1" in doc["expect"]["mock_limitation"]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["scenario"])
def test_failed_records_last_attempt_carries_their_error(entry):
    doc = truth(entry)
    failed = 0
    for c in producers(doc).values():
        cid = c["config"]["client.id"]
        for d in events(c, "delivery"):
            if d["error"] is None:
                continue
            failed += 1
            ex, t, p, _ = attempts(entry["file"], cid, d["key"])[-1]
            err, _ = answers(ex)[(t, p)]
            assert ErrorCode(err).name == d["error"], d
    assert failed == doc["expect"].get("failed_records", 0)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["scenario"])
def test_records_sent_again_are_the_statistics_and_the_wire(entry):
    """librdkafka's txmsgs (messages transmitted, the last statistics) minus the records produced
    is the number of records sent again; the Produce requests of that client carry txmsgs records."""
    doc = truth(entry)
    _, produced, *_ = wire(entry["file"])
    for name, c in producers(doc).items():
        stats = events(c, "stats")
        assert stats, name
        txmsgs = stats[-1]["txmsgs"]
        records = len(events(c, "delivery"))
        on_wire = sum(
            len(produced.get(id(ex), ()))
            for ex in of(entry["file"], ApiKey.PRODUCE, c["config"]["client.id"])
        )
        assert on_wire == txmsgs, (name, on_wire, txmsgs)
        if doc["expect"].get("producer") == name:
            assert txmsgs - records == doc["expect"]["retried_records"], name
        elif "retried_records" in doc["expect"] and name in doc["expect"].get("producers", {}):
            assert txmsgs == records
        # the eos block: an idempotent or transactional producer got its producer id
        eos = stats[-1]["eos"]
        if c["config"].get("enable.idempotence") or c["config"].get("transactional.id"):
            assert eos["producer_id"] >= 0 and eos["idemp_state"] == "Assigned", (name, eos)


@pytest.mark.parametrize("name", ["producer-idempotent", "producer-plain"], ids=lambda n: n)
def test_retries_timeouts_and_duplicates_on_the_wire(name):
    """Batches sent again: the same batch (topic, partition, CRC) in several Produce requests; those
    answered without error at two base offsets were written twice (the readers read those keys
    twice); the injected errors are Produce answers after the injection; each delayed answer is a
    request the client timed out (no answer, or one later than the client's timeout)."""
    entry = by_name(name)
    doc = truth(entry)
    exp = doc["expect"]
    file = entry["file"]
    cid = doc["clients"][exp["producer"]]["config"]["client.id"]
    sends = defaultdict(list)  # (topic, partition, crc) -> [(exchange, records)]
    for ex in of(file, ApiKey.PRODUCE, cid):
        for td in items(ex.request.body, "topic_data"):
            for pd in items(td, "partition_data"):
                for b in items(pd, "records"):
                    sends[(td.get("name"), pd.get("index"), b.get("crc"))].append((ex, b.get("record_count")))
    again = sum(n for tries in sends.values() for _, n in tries[1:])
    assert again == exp["retried_records"]
    assert sum(len(t) - 1 for t in sends.values()) == exp["retries"]
    # the first attempt's answer never reaches the wire (the client closed the connection at its
    # timeout): a batch written twice shows as its records fetched at two offsets
    _, _, fetched, *_ = wire(file)
    at = defaultdict(set)  # key -> {(topic, partition, offset)}
    for recs in fetched.values():
        for t, p, o, k in recs:
            at[k].add((t, p, o))
    assert sum(len(v) - 1 for v in at.values()) == exp["duplicates_written"]
    read = Counter(e["key"] for c in consumers(doc).values() for e in events(c, "consumed"))
    assert sum(n - 1 for n in read.values() if n > 1) == exp["duplicates_written"]
    # injections
    ports = entry["broker_ports"]  # broker id i at ports[i - 1]
    produces = of(file, ApiKey.PRODUCE, cid)
    timeout = doc["clients"][exp["producer"]]["config"]["socket.timeout.ms"] / 1000
    timed_out = 0
    for inj in events(doc["clients"]["mock"], "inject"):
        later = [ex for ex in produces if ex.request.frame.ts_first >= inj["start"]]
        if inj["broker"] is not None:
            later = [ex for ex in later if broker_port(ex) == ports[inj["broker"] - 1]]
        for code, _name, delay_ms in inj["errors"]:
            if delay_ms == 0:
                assert any(code in {e for e, _ in answers(ex).values()} for ex in later), (inj, code)
                continue
            # the first request after it: never answered, or answered after the client's timeout
            ex = later[0]
            late = ex.response is None or ex.response.frame.ts_last - ex.request.frame.ts_first >= timeout
            assert late, inj
            timed_out += 1
            # and the same batch went again
            assert any(len(tries) > 1 and tries[0][0] is ex for tries in sends.values()), inj
    assert timed_out == exp["timed_out_requests"]
    stats = events(doc["clients"][exp["producer"]], "stats")[-1]
    assert sum(b["req_timeouts"] for b in stats["brokers"].values()) == exp["timed_out_requests"]


def test_transactions_end_on_the_wire_as_the_producer_saw_them():
    entry = by_name("producer-txn")
    doc = truth(entry)
    exp = doc["expect"]
    file = entry["file"]
    tx = doc["clients"]["transactional"]
    calls = [e for e in events(tx, "commit_transaction", "abort_transaction") if e["ok"]]
    assert [e["event"] == "commit_transaction" for e in calls] == [
        t["outcome"] == "commit" for t in exp["transactions"] if t["producer"] == "transactional"
    ]
    ends = [
        ex
        for ex in of(file, ApiKey.END_TXN)
        if ex.request.body.get("transactional_id") == exp["transactional_ids"]["transactional"]
    ]
    assert [ex.request.body.get("committed") for ex in ends] == [
        e["event"] == "commit_transaction" for e in calls
    ]
    for ex, e in zip(ends, calls, strict=True):
        assert ex.response.body.get("error_code") == 0
        assert (
            e["start"] - SLACK_S <= ex.request.frame.ts_first
            and ex.response.frame.ts_last <= e["t"] + SLACK_S
        )
    assert Counter(t["outcome"] for t in exp["transactions"]) == Counter(exp["outcomes"])
    # the hanging transaction: InitProducerId with its timeout, records, and no EndTxn to the end
    hang_id = exp["transactional_ids"]["hanging"]
    (init,) = [
        ex for ex in of(file, ApiKey.INIT_PRODUCER_ID) if ex.request.body.get("transactional_id") == hang_id
    ]
    assert init.request.body.get("transaction_timeout_ms") == exp["transaction_timeout_ms"]["hanging"]
    assert not [ex for ex in of(file, ApiKey.END_TXN) if ex.request.body.get("transactional_id") == hang_id]
    hang = doc["clients"]["hanging"]
    hang_cid = hang["config"]["client.id"]
    first = min(ex.request.frame.ts_first for ex in of(file, ApiKey.PRODUCE, hang_cid))
    *_, last = wire(file)
    assert last - first > exp["transaction_timeout_ms"]["hanging"] / 1000
    assert len([d for d in events(hang, "delivery") if d["error"] is None]) == exp["hanging_records"]
    # consume-transform-produce: each send_offsets_to_transaction is a TxnOffsetCommit with those offsets
    commits = of(file, ApiKey.TXN_OFFSET_COMMIT)
    for e in events(tx, "send_offsets_to_transaction"):
        want = {tuple(o) for o in e["offsets"]}
        assert any(
            ex.request.body.get("group_id") == e["group"]
            and want
            == {
                (t.get("name"), p.get("partition_index"), p.get("committed_offset"))
                for t in items(ex.request.body, "topics")
                for p in items(t, "partitions")
            }
            and e["start"] - SLACK_S <= ex.request.frame.ts_first <= e["t"] + SLACK_S
            for ex in commits
        ), e
    # every input record went out in a committed transaction
    committed_rounds = {t["round"] for t in exp["transactions"] if t["outcome"] == "commit"}
    outs = {
        d["key"]
        for d in events(tx, "delivery")
        if d.get("txn", "").removeprefix("round ").isdigit() and int(d["txn"].split()[1]) in committed_rounds
    }
    assert len(outs) == exp["input_records"] == exp["inputs_committed"]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["scenario"])
def test_every_consumed_record_came_in_a_fetch_answer_before(entry):
    """... to that consumer, and the end-to-end latency the clients saw (consumed t minus
    produce_t) holds the wire's (Fetch answer minus the Produce request that first carried it)."""
    doc = truth(entry)
    file = entry["file"]
    exchanges, produced, fetched, *_ = wire(file)
    fetches = defaultdict(list)  # client id -> [(exchange, records)]
    for ex in of(file, ApiKey.FETCH):
        fetches[ex.client_id].append((ex, set(fetched.get(id(ex), ()))))
    sent = defaultdict(list)  # key -> the times of the Produce requests carrying it
    for ex in of(file, ApiKey.PRODUCE):
        for *_, k in produced.get(id(ex), ()):
            sent[k].append(ex.request.frame.ts_first)
    produce_t = {
        (d["topic"], d["partition"], d["offset"], d["key"]): d["produce_t"]
        for c in producers(doc).values()
        for d in events(c, "delivery")
        if d["offset"] is not None
    }
    n = 0
    for name, c in consumers(doc).items():
        cid = c["config"]["client.id"]
        for e in events(c, "consumed"):
            rec = (e["topic"], e["partition"], e["offset"], e["key"])
            hits = [
                ex
                for ex, recs in fetches[cid]
                if rec in recs and ex.response.frame.ts_last <= e["t"] + SLACK_S
            ]
            assert hits, (name, e)
            if rec in produce_t:
                t0 = produce_t[rec]
                first_sent = min(t for t in sent[e["key"]] if t >= t0 - SLACK_S)
                wire_e2e = hits[0].response.frame.ts_last - first_sent
                assert e["t"] - t0 >= wire_e2e - 2 * SLACK_S, (name, e)
            n += 1
    assert n >= 15


def test_mix_latency_and_codecs():
    """Every producer's records reached the group, each once, with the codec and acks it was
    configured with on the wire."""
    entry = by_name("producer-mix")
    doc = truth(entry)
    exp = doc["expect"]
    file = entry["file"]
    (reader,) = consumers(doc).values()
    got = Counter(e["key"] for e in events(reader, "consumed"))
    assert sum(got.values()) == exp["records"] and set(got.values()) == {1}
    exchanges, *_ = wire(file)
    for name, conf in exp["producers"].items():
        cid = doc["clients"][name]["config"]["client.id"]
        reqs = of(file, ApiKey.PRODUCE, cid)
        assert {ex.request.body.get("acks") for ex in reqs} == {
            -1 if conf["acks"] == "all" else int(conf["acks"])
        }
        codecs = {
            b.value["codec"]
            for ex in reqs
            for td in items(ex.request.body, "topic_data")
            for pd in items(td, "partition_data")
            for b in items(pd, "records")
        }
        assert codecs == {conf["compression.type"]}, (name, codecs)
        assert (
            len([d for d in events(doc["clients"][name], "delivery") if d["error"] is None])
            == exp["records_per_producer"]
        )
