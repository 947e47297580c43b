"""The built-in pack's producer rules (analyzer.check.producers) on bundled captures and on
captures patched to break them: kafka.producer-lost on the kafka-python recordings whose legacy
message sets the mock refuses, on Tansu's refusals and on a Produce answer patched to an error;
kafka.producer-duplicates and kafka.producer-retries on librdkafka-txn with a batch's base
sequence patched to the one before (the same batch sent again, written at two offsets; or,
with the first answer patched to an error, a retry written once); kafka.transaction-hanging with
the timeout patched down and the last EndTxn patched away, and an EndTxn answered
PRODUCER_FENCED; kafka.e2e-latency tuned under [pack]; the evidence (exchanges, times, coverage)
in text, JSON, JUnit and SARIF; waivers, -Y and -j 2."""

import io
import json
from contextlib import redirect_stderr, redirect_stdout

import pytest

from analyzer import cli
from analyzer.dissect.constants import ApiKey
from tests.helpers.capture_patch import patch_field
from tests.helpers.captures import CAPTURES
from tests.helpers.producer_patch import resend_batch

TXN = CAPTURES / "librdkafka-txn.pcap"
LEGACY = CAPTURES / "kafka-python-0.9-gzip.pcap"
TANSU = CAPTURES / "tansu-kafka-python-0.10.1-none.pcap"
PLAIN = CAPTURES / "librdkafka-produce-consume-none.pcap"
LAG = CAPTURES / "group-lag.pcap"
IDS = (
    "kafka.producer-duplicates",
    "kafka.producer-lost",
    "kafka.producer-retries",
    "kafka.transaction-hanging",
    "kafka.e2e-latency",
)


def check(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = cli.main(["check", *map(str, args)])
    return rc, out.getvalue(), err.getvalue()


def check_json(*args) -> tuple[int, dict]:
    rc, out, err = check(*args, "--format", "json")
    assert out, err
    return rc, json.loads(out)


def rule(doc: dict, rid: str) -> dict:
    return next(r for r in doc["rules"] if r["id"] == rid)


def rules_file(tmp_path, text: str):
    p = tmp_path / "rules.toml"
    p.write_text(text)
    return p


def is_produce(ex) -> bool:
    return ex.api_key == ApiKey.PRODUCE


@pytest.fixture(scope="module")
def resent(tmp_path_factory):
    return resend_batch(TXN, tmp_path_factory.mktemp("resent") / "resent.pcap")


def test_the_producer_rules_are_in_the_pack_and_pass_healthy_captures():
    rc, doc = check_json(
        TXN, CAPTURES / "librdkafka-produce-consume-gzip.pcap", CAPTURES / "kafkajs-gzip.pcap"
    )
    for rid in IDS:
        r = rule(doc, rid)
        assert r["status"] == "passed" and r["source"] == "built-in", r
    sev = {rid: rule(doc, rid)["severity"] for rid in IDS}
    assert sev == {
        "kafka.producer-duplicates": "error",
        "kafka.producer-lost": "error",
        "kafka.producer-retries": "warning",
        "kafka.transaction-hanging": "error",
        "kafka.e2e-latency": "warning",
    }


@pytest.mark.parametrize(
    "path, client, error, batches",
    [
        (LEGACY, "gen-kafka-python-0.9-gzip", "UNSUPPORTED_VERSION", 3),
        (TANSU, "gen-tansu-kafka-python-0.10.1-none", "UNKNOWN_PRODUCER_ID", 6),
    ],
)
def test_refused_records_are_lost(path, client, error, batches):
    rc, doc = check_json(path)
    r = rule(doc, "kafka.producer-lost")
    assert rc == 1 and r["status"] == "failed" and r["count"] == 1
    f = r["findings"][0]
    m = f["message"]
    assert m.startswith(f"producer {client}@127.0.0.1:") and "(not idempotent): 6 records lost " in m
    assert f"({batches} batches whose last attempt failed and none was written)" in m
    assert f"first attempt exchange {f['exchange']} Produce corr={f['correlation_id']} on connection " in m
    assert f"({error})" in m and "coverage: " in m
    assert f["api"] == "Produce" and f["packets"] and f["connection"]
    assert rule(doc, "kafka.producer-duplicates")["status"] == "passed"


def test_a_produce_answer_patched_to_an_error_loses_its_records(tmp_path):
    p = tmp_path / "refused.pcap"
    # MESSAGE_TOO_LARGE (10): not retriable, the client gives the batch up
    assert patch_field(PLAIN, p, is_produce, "response", "error_code", b"\x00\x0a") == 1
    rc, doc = check_json(p)
    r = rule(doc, "kafka.producer-lost")
    assert rc == 1 and r["status"] == "failed"
    [f] = r["findings"]
    assert "(1 batch whose last attempt failed" in f["message"] and "(MESSAGE_TOO_LARGE)" in f["message"]
    assert f["api"] == "Produce" and f["exchange"] == 7  # the first Produce (the text's exchange 7)
    _, doc = check_json(PLAIN)
    assert rule(doc, "kafka.producer-lost")["status"] == "passed"


def test_a_batch_sent_again_and_written_twice(resent):
    rc, doc = check_json(resent)
    dup = rule(doc, "kafka.producer-duplicates")
    assert rc == 1 and dup["status"] == "failed" and dup["count"] == 1
    m = dup["findings"][0]["message"]
    assert "(producer id 327974000, transactional id txn-librdkafka-txn): 1 record written twice" in m
    assert "to txn-in[1]" in m or "[1]," in m
    assert "exchange 20 Produce corr=4 on connection 4 at " in m and "written at offset 0" in m
    assert "exchange 24 Produce corr=5 on connection 4 at " in m and "written at offset 2" in m
    assert dup["findings"][0]["exchange"] == 20
    retries = rule(doc, "kafka.producer-retries")
    assert retries["status"] == "warned"
    m = retries["findings"][0]["message"]
    assert "1 of 8 records sent again (12.5% > 5.0%; 1 batch retried)" in m
    assert "first attempt exchange 20 Produce corr=4" in m and "last attempt exchange 24 Produce corr=5" in m
    assert "1 sequence gap" in m  # the batch after it skips sequence 1


def test_a_retry_is_a_retry_and_its_two_offsets_in_fetches_a_duplicate(tmp_path, resent):
    p = tmp_path / "retried.pcap"
    # the first attempt (exchange 20) answered NOT_LEADER_OR_FOLLOWER (6): a retry; the reader's
    # Fetch answers (not patched) still hold the batch at offsets 0 and 2: written twice, as a
    # plain producer's resend whose first answer never came shows on the wire
    sel = {"n": 0}

    def twentieth(ex) -> bool:
        if ex.api_key != ApiKey.PRODUCE:
            return False
        sel["n"] += 1
        return sel["n"] == 2  # the Produce exchanges in order: 19, 20, ...

    assert patch_field(resent, p, twentieth, "response", "error_code", b"\x00\x06") == 1
    rc, doc = check_json(p)
    assert rule(doc, "kafka.producer-duplicates")["status"] == "failed"
    r = rule(doc, "kafka.producer-retries")
    assert r["status"] == "warned" and "(NOT_LEADER_OR_FOLLOWER)" in r["findings"][0]["message"]
    # the share tuned up: no finding
    cfg = rules_file(tmp_path, '[pack]\n"kafka.producer-retries" = { max_share = 0.2 }\n')
    _, doc = check_json(p, "--rules", cfg)
    assert rule(doc, "kafka.producer-retries")["status"] == "passed"


def test_a_hanging_transaction_and_a_fenced_end(tmp_path):
    short = tmp_path / "short.pcap"
    init = lambda ex: ex.api_key == ApiKey.INIT_PRODUCER_ID  # noqa: E731
    assert patch_field(TXN, short, init, "request", "transaction_timeout_ms", (1).to_bytes(4, "big")) == 1
    hanging = tmp_path / "hanging.pcap"
    ends = {"n": 0}

    def last_end(ex) -> bool:
        if ex.api_key != ApiKey.END_TXN:
            return False
        ends["n"] += 1
        return ends["n"] == 3

    # the last EndTxn names another transactional id: its transaction never ends
    tid = b"\x00\x12txn-librdkafka-txX"  # (an int16 length, then the id's last character changed)
    assert patch_field(short, hanging, last_end, "request", "transactional_id", tid) == 1
    rc, doc = check_json(hanging)
    r = rule(doc, "kafka.transaction-hanging")
    assert rc == 1 and r["status"] == "failed" and r["count"] == 1
    f = r["findings"][0]
    m = f["message"]
    assert m.startswith("transaction txn-librdkafka-txn (producer id 327974000, epoch 0): open for ")
    assert "past its timeout 1 ms (InitProducerId)" in m and f"started at exchange {f['exchange']} " in m
    assert "no EndTxn in the capture" in m and f["api"] in ("AddPartitionsToTxn", "Produce")
    _, doc = check_json(short)  # every transaction ended: none hangs, however short the timeout
    assert rule(doc, "kafka.transaction-hanging")["status"] == "passed"
    fenced = tmp_path / "fenced.pcap"
    end = lambda ex: ex.api_key == ApiKey.END_TXN  # noqa: E731
    assert patch_field(TXN, fenced, end, "response", "error_code", (90).to_bytes(2, "big")) == 1
    rc, doc = check_json(fenced)
    r = rule(doc, "kafka.transaction-hanging")
    assert r["status"] == "warned"  # a warning (the answer itself is kafka.error-responses' error)
    assert rule(doc, "kafka.error-responses")["status"] == "failed"
    f = r["findings"][0]
    assert f["api"] == "EndTxn" and "answered PRODUCER_FENCED at exchange " in f["message"]


def test_e2e_latency_bound(tmp_path):
    _, doc = check_json(LAG)
    assert rule(doc, "kafka.e2e-latency")["status"] == "passed"  # 60 s by default
    p = rules_file(tmp_path, '[pack]\n"kafka.e2e-latency" = { max = "10s" }\n')
    _, doc = check_json(LAG, "--rules", p)
    r = rule(doc, "kafka.e2e-latency")
    assert r["status"] == "warned" and r["count"] == 1
    f = r["findings"][0]
    assert "grp-lag[" in f["message"] and "> 10000 ms" in f["message"] and "coverage: " in f["message"]
    assert f["api"] == "Fetch" and f"at exchange {f['exchange']} Fetch" in f["message"]
    p = rules_file(tmp_path, '[pack]\n"kafka.e2e-latency" = false\n')
    _, doc = check_json(LAG, "--rules", p)
    assert "kafka.e2e-latency" not in {r["id"] for r in doc["rules"]}


def test_junit_sarif_and_text_carry_the_evidence(tmp_path, resent):
    junit, sarif = tmp_path / "c.xml", tmp_path / "c.sarif"
    rc, out, _ = check(resent, "--junit", junit, "--sarif", sarif)
    assert rc == 1
    line = next(x for x in out.splitlines() if "written twice" in x)
    assert line.lstrip().startswith(f"{resent}, exchange 20 Produce corr=4, connection 4")
    assert "1 record written twice" in junit.read_text()
    doc = json.loads(sarif.read_text())
    res = [x for x in doc["runs"][0]["results"] if x["ruleId"] == "kafka.producer-duplicates"]
    assert len(res) == 1 and res[0]["level"] == "error" and res[0]["properties"]["exchange"] == 20
    names = {x["id"] for x in doc["runs"][0]["tool"]["driver"]["rules"]}
    assert set(IDS) <= names


def test_waivers_and_select(tmp_path):
    p = rules_file(
        tmp_path,
        '[[waiver]]\nrule = "kafka.producer-lost"\nwhere = \'issue == "quirk.legacy_format_rejected"\'\n'
        'until = 2099-01-01\nreason = "the mock"\n',
    )
    rc, doc = check_json(LEGACY, "--rules", p)
    assert rule(doc, "kafka.producer-lost")["status"] == "waived" and rc == 0
    p = rules_file(
        tmp_path,
        '[[waiver]]\nrule = "kafka.producer-lost"\nwhere = \'client_id == "someone else"\'\n'
        'until = 2099-01-01\nreason = "another client"\n',
    )
    assert check_json(LEGACY, "--rules", p)[0] == 1
    # -Y: the producer rules judge the producers whose exchanges are selected
    rc, doc = check_json(LEGACY, "-Y", 'client_id == "nobody"')
    assert rule(doc, "kafka.producer-lost")["status"] == "passed"
    rc, doc = check_json(LEGACY, "-Y", "api == Produce")
    assert rule(doc, "kafka.producer-lost")["count"] == 1


def test_same_findings_with_two_processes(resent):
    docs = []
    for j in ("1", "2"):
        _, out, _ = check(LEGACY, TANSU, TXN, resent, LAG, "-j", j, "--format", "json")
        docs.append(out)
    assert docs[0] == docs[1]
    assert "written twice" in docs[0] and "records lost" in docs[0]


@pytest.mark.parametrize(
    "text, says",
    [
        ('"kafka.producer-retries" = { max = 3 }', "unknown key 'max'"),
        ('"kafka.producer-retries" = { max_share = "many" }', "max_share: 'many': expected a number >= 0"),
        ('"kafka.producer-retries" = { max_share = false }', "every bound is off"),
        ('"kafka.e2e-latency" = { max = "3 weeks" }', "max: '3 weeks': expected a duration"),
        ('"kafka.producer-lost" = { max = 1 }', "unknown key 'max'"),
        ('"kafka.transaction-hanging" = { where = "api == EndTxn" }', "unknown key 'where'"),
    ],
)
def test_bad_pack_settings_are_usage_errors(tmp_path, text, says):
    p = rules_file(tmp_path, "[pack]\n" + text + "\n")
    rc, out, err = check(TXN, "--rules", p)
    assert rc == 2 and says in err and "Traceback" not in err, err
