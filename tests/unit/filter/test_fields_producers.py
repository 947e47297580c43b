"""The producer.* and txn.* display-filter fields (producer.id, producer.epoch, producer.sequence,
producer.transactional_id, txn.id, txn.committed) on bundled captures: each against the decoded
requests and answers read another way (the batch summaries, the transaction APIs' fields, the
transactions TxnTracker followed), through `read -Y` (one code path with check, the TUI and
Spark's where=), the same with -j 2 over several captures, and listed by `filters`."""

import io
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout

from analyzer import cli
from analyzer.dissect.constants import ApiKey
from analyzer.filter import compile_filter
from analyzer.session.transactions import TxnTracker
from tests.helpers.capture_patch import exchanges
from tests.helpers.captures import CAPTURES

TXN = CAPTURES / "librdkafka-txn.pcap"
PLAIN = CAPTURES / "librdkafka-produce-consume-none.pcap"
CAPS = [TXN, PLAIN, CAPTURES / "kafka-python-0.11-none.pcap", CAPTURES / "group-static.pcap"]
TXN_APIS = {
    ApiKey.INIT_PRODUCER_ID,
    ApiKey.ADD_PARTITIONS_TO_TXN,
    ApiKey.ADD_OFFSETS_TO_TXN,
    ApiKey.TXN_OFFSET_COMMIT,
    ApiKey.END_TXN,
}


def matching(exs, text: str) -> list[int]:
    flt = compile_filter(text)
    return [n for n, ex in enumerate(exs, 1) if flt(ex)]


def read_lines(*args) -> list[str]:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        assert cli.main(["read", *map(str, args)]) == 0
    return out.getvalue().splitlines()


def batches(ex) -> list[dict]:
    if ex.api_key != ApiKey.PRODUCE:
        return []
    return [f.value for f in ex.request.body.walk() if f.name == "record_batch"]


def req(ex, name):
    return ex.request.body.get(name) if ex.request is not None and ex.request.body is not None else None


def test_producer_id_epoch_and_sequence_of_a_transactional_producer():
    exs = exchanges(TXN)
    pids = {b["producer_id"] for ex in exs for b in batches(ex)}
    assert pids == {327974000}
    got = matching(exs, "producer.id == 327974000")
    names = ("producer_id", "v3_and_below_producer_id")  # (AddPartitionsToTxn v4+: per transaction)
    expected = [
        n
        for n, ex in enumerate(exs, 1)
        if batches(ex)
        or (
            ex.api_key in TXN_APIS
            and (
                any(f.name in names and f.value == 327974000 for f in ex.request.body.walk())
                or ex.response.body.get("producer_id") == 327974000
            )
        )
    ]
    assert got == expected and got
    assert {ex.api_key for n, ex in enumerate(exs, 1) if n in got} == TXN_APIS | {ApiKey.PRODUCE}
    assert matching(exs, "producer.epoch == 0") == got  # one epoch all along
    for seq in (0, 1, 2):
        assert matching(exs, f"producer.sequence == {seq}") == [
            n for n, ex in enumerate(exs, 1) if any(b["base_sequence"] == seq for b in batches(ex))
        ]
    assert matching(exs, "producer.sequence > 2") == []
    assert len(read_lines(TXN, "-Y", "producer.id == 327974000")) == len(got)


def test_a_producer_that_is_not_idempotent_has_no_producer_id():
    exs = exchanges(PLAIN)
    assert matching(exs, "records.producer_id == -1")  # its batches say -1: none
    assert matching(exs, "producer.id") == matching(exs, "producer.sequence") == []
    assert matching(exs, "producer.epoch or producer.transactional_id or txn.id") == []


def test_transactional_ids_and_the_coordinator_lookups():
    exs = exchanges(TXN)
    producer = set(matching(exs, 'producer.transactional_id == "txn-librdkafka-txn"'))
    txn = set(matching(exs, 'txn.id == "txn-librdkafka-txn"'))
    lookups = {
        n
        for n, ex in enumerate(exs, 1)
        if ex.api_key == ApiKey.FIND_COORDINATOR
        and req(ex, "key_type") == 1
        and req(ex, "key") == "txn-librdkafka-txn"
    }
    assert lookups and producer and txn == producer | lookups and not producer & lookups
    named = {
        n
        for n, ex in enumerate(exs, 1)
        if (ex.api_key in TXN_APIS and req(ex, "transactional_id") == "txn-librdkafka-txn")
        or (ex.api_key == ApiKey.ADD_PARTITIONS_TO_TXN and req(ex, "v3_and_below_transactional_id"))
        or (ex.api_key == ApiKey.PRODUCE and req(ex, "transactional_id") == "txn-librdkafka-txn")
    }
    assert producer == named


def test_txn_committed_follows_the_transactions_outcomes():
    exs = exchanges(TXN)
    t = TxnTracker()
    for ex in exs:
        t.event(ex)
    outcomes = [x["outcome"] for x in t.transactions()]
    assert outcomes == ["commit", "abort", "commit"]
    ends = [n for n, ex in enumerate(exs, 1) if ex.api_key == ApiKey.END_TXN]
    committed = matching(exs, "txn.committed")
    aborted = matching(exs, "api == EndTxn and not txn.committed")
    assert committed == [ends[0], ends[2]] and aborted == [ends[1]]
    assert matching(exs, "txn.committed == false") == aborted


def test_the_same_with_two_processes():
    expr = 'producer.id >= 0 or txn.id matches "^txn-" or producer.sequence == 0'
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
    assert "EndTxn" in outs[0]


def test_filters_lists_them():
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        cli.main(["filters"])
    for name in (
        "producer.id",
        "producer.epoch",
        "producer.sequence",
        "producer.transactional_id",
        "txn.id",
        "txn.committed",
    ):
        assert name in out.getvalue()
