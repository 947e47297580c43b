"""kafka-analyzer check: the built-in pack on real captures, each rule broken by a patched copy,
rules files and their validation, waivers, baselines, outputs and exit codes."""

import io
import json
import struct
from contextlib import redirect_stderr, redirect_stdout

import pytest

from analyzer import cli
from analyzer.check import baseline
from tests.helpers.capture_patch import delay_responses, patch_field
from tests.helpers.captures import CAPTURES

GZIP = CAPTURES / "librdkafka-produce-consume-gzip.pcap"
ZSTD = CAPTURES / "librdkafka-produce-consume-zstd.pcap"


def check(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = cli.main(["check", *map(str, args)])
    return rc, out.getvalue(), err.getvalue()


def check_json(*args) -> tuple[int, dict]:
    rc, out, err = check(*args, "--format", "json")
    return rc, json.loads(out)


def rule(doc: dict, rid: str) -> dict:
    return next(r for r in doc["rules"] if r["id"] == rid)


def is_produce(ex) -> bool:
    return ex.api_key == 0 and ex.request is not None and ex.response is not None


# -- the built-in pack ---------------------------------------------------------------------------------


def test_pack_passes_a_healthy_capture_and_lists_every_rule():
    rc, doc = check_json(ZSTD)
    ids = [r["id"] for r in doc["rules"]]
    assert {"kafka.protocol-errors", "kafka.acks-all", "kafka.unanswered", "kafka.error-responses"} <= set(
        ids
    )
    failed = [r for r in doc["rules"] if r["status"] == "failed"]
    assert rc == 0, failed
    assert doc["exit_code"] == 0


def test_acks_1_is_found_with_its_exchange(tmp_path):
    p = tmp_path / "acks1.pcap"
    assert patch_field(GZIP, p, is_produce, "request", "acks", struct.pack(">h", 1)) == 1
    rc, doc = check_json(p)
    r = rule(doc, "kafka.acks-all")
    assert r["status"] == "warned" and r["severity"] == "warning" and r["count"] == 1
    f = r["findings"][0]
    assert f["api"] == "Produce" and f["exchange"] >= 1 and f["connection"] >= 1 and f["packets"]
    assert rc == 0  # a warning does not fail by default
    rc, doc = check_json(p, "--fail-on", "warning")
    assert rc == 1 and rule(doc, "kafka.acks-all")["status"] == "failed"


def test_a_non_retriable_error_fails(tmp_path):
    p = tmp_path / "err.pcap"
    assert patch_field(GZIP, p, is_produce, "response", "error_code", struct.pack(">h", 10)) == 1
    rc, doc = check_json(p)
    r = rule(doc, "kafka.error-responses")
    assert rc == 1 and r["status"] == "failed" and r["severity"] == "error"
    assert "MESSAGE_TOO_LARGE" in r["findings"][0]["message"]


def test_a_retriable_error_is_not_a_finding(tmp_path):
    p = tmp_path / "retriable.pcap"
    assert patch_field(GZIP, p, is_produce, "response", "error_code", struct.pack(">h", 6)) == 1
    _, doc = check_json(p)
    assert rule(doc, "kafka.error-responses")["status"] == "passed"


def test_throttled_response_is_a_warning(tmp_path):
    p = tmp_path / "throttled.pcap"
    assert patch_field(GZIP, p, is_produce, "response", "throttle_time_ms", struct.pack(">i", 250)) == 1
    _, doc = check_json(p)
    r = rule(doc, "kafka.throttling")
    assert r["status"] == "warned" and r["count"] == 1


def test_uncompressed_produce_is_a_warning():
    _, doc = check_json(CAPTURES / "librdkafka-produce-consume-none.pcap")
    assert rule(doc, "kafka.compression")["status"] == "warned"
    _, doc = check_json(GZIP)
    assert rule(doc, "kafka.compression")["status"] == "passed"


def test_client_readiness_names_the_kip_and_the_versions_per_client():
    _, doc = check_json(CAPTURES / "kafka-python-0.8.2-none.pcap")
    r = rule(doc, "kafka.client-readiness")
    assert r["status"] == "warned" and r["count"] == 2  # the producer and the consumer
    producer, consumer = r["findings"]
    assert "KIP-896" in producer["message"] and producer["api"] == "Produce"
    assert "Produce v0 x2 (accepts v3-13" in producer["message"]
    assert "Fetch v0 x2" in consumer["message"] and "ListOffsets v0 x2" in consumer["message"]
    assert "old formats" in producer["message"] and "coverage:" in producer["message"]


def test_client_readiness_for_kafka_3_9_passes_and_an_unknown_target_is_refused(tmp_path):
    rules = tmp_path / "r.toml"
    rules.write_text('[pack]\n"kafka.client-readiness" = { target = 3.9 }\n')
    _, doc = check_json(CAPTURES / "kafka-python-0.8.2-none.pcap", "--rules", rules)
    assert rule(doc, "kafka.client-readiness")["status"] == "passed"
    rules.write_text('[pack]\n"kafka.client-readiness" = { target = 5.7 }\n')
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = cli.main(["check", str(ZSTD), "--rules", str(rules)])
    assert rc == 2 and "expected a Kafka release" in err.getvalue() + out.getvalue()


def test_a_folded_rule_id_says_which_rule_took_it_over(tmp_path):
    rules = tmp_path / "r.toml"
    rules.write_text('[pack]\n"kafka.removed-api-versions" = false\n')
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = cli.main(["check", str(ZSTD), "--rules", str(rules)])
    assert rc == 2 and "folded into kafka.client-readiness" in err.getvalue() + out.getvalue()


def test_sasl_plain_in_clear_text_is_a_warning():
    _, doc = check_json(CAPTURES / "librdkafka-sasl-plain.pcap")
    assert rule(doc, "kafka.sasl-plain-cleartext")["status"] == "warned"


def test_crc_mismatch_is_an_error(tmp_path):
    from tests.helpers.capture_patch import exchanges, field_position, find

    raw = bytearray(GZIP.read_bytes())
    ex = next(e for e in exchanges(GZIP) if is_produce(e))
    crc = find(ex.request.body, "crc")
    at = field_position(bytes(raw), ex, "request", crc)
    raw[at] ^= 0xFF
    p = tmp_path / "crc.pcap"
    p.write_bytes(bytes(raw))
    rc, doc = check_json(p)
    assert rc == 1 and rule(doc, "kafka.crc")["status"] == "failed"
    assert rule(doc, "kafka.protocol-errors")["count"] == 0 or all(
        "crc" not in f["message"] for f in rule(doc, "kafka.protocol-errors")["findings"]
    )


def test_truncated_capture_is_a_protocol_error_with_partial_results(tmp_path):
    p = tmp_path / "cut.pcap"
    p.write_bytes(ZSTD.read_bytes()[:-10])
    rc, doc = check_json(p)
    r = rule(doc, "kafka.protocol-errors")
    assert rc == 1 and any("capture.truncated" in f["message"] for f in r["findings"])
    assert doc["captures"][0]["exchanges"] > 10


def test_metadata_storm_tuned_in_the_pack(tmp_path):
    rules = tmp_path / "r.toml"
    rules.write_text('[pack]\n"kafka.metadata-storm" = { max_rate = 0.01, severity = "error" }\n')
    rc, doc = check_json(ZSTD, "--rules", rules)
    r = rule(doc, "kafka.metadata-storm")
    assert rc == 1 and r["status"] == "failed" and "Metadata storm" in r["findings"][0]["message"]


def test_metadata_loop_of_the_generated_storm_names_the_topic_and_its_first_answer():
    _, doc = check_json(CAPTURES / "client-metadata-storm.pcap")
    r = rule(doc, "kafka.metadata-storm")
    loop = next(f for f in r["findings"] if "Metadata loop" in f["message"])
    assert "storm-producer" in loop["message"] and "no-such-topic" in loop["message"]
    assert loop["api"] == "Metadata" and "good-producer" not in str(r["findings"])


def test_pack_rule_switched_off(tmp_path):
    rules = tmp_path / "r.toml"
    rules.write_text('[pack]\n"kafka.compression" = false\n')
    _, doc = check_json(CAPTURES / "librdkafka-produce-consume-none.pcap", "--rules", rules)
    assert "kafka.compression" not in [r["id"] for r in doc["rules"]]


# -- rules files ---------------------------------------------------------------------------------------


def test_rules_file_assert_and_aggregate(tmp_path):
    rules = tmp_path / "r.toml"
    rules.write_text(
        """
[[rule]]
id = "fetch-isolation"
where = "api == Fetch"
assert = "fetch.isolation_level == 1"
severity = "error"
message = "consumers read committed"

[[rule]]
id = "produce-p99"
where = "api == Produce"
aggregate = "p99(latency)"
max = "1us"

[[rule]]
id = "many-samples"
where = "api == Produce"
aggregate = "max(latency)"
max = "10s"
min_samples = 1000
"""
    )
    rc, doc = check_json(GZIP, "--rules", rules)
    iso = rule(doc, "fetch-isolation")
    assert iso["status"] in ("passed", "failed")
    p99 = rule(doc, "produce-p99")
    assert p99["status"] == "failed" and p99["value"] > 0.001
    assert rule(doc, "many-samples")["status"] == "inconclusive"
    assert rc == 1


def test_inconclusive_alone_exits_3(tmp_path):
    rules = tmp_path / "r.toml"
    rules.write_text(
        '[[rule]]\nid = "n"\nwhere = "api == Produce"\naggregate = "max(latency)"\n'
        "max = 1000\nmin_samples = 999\n"
    )
    rc, _, _ = check(ZSTD, "--rules", rules)
    assert rc == 3


def test_no_kafka_is_inconclusive(tmp_path):
    from tests.helpers.packets import Conversation, write_pcap

    c = Conversation(broker=("10.0.0.2", 80)).handshake()
    c.send(0, b"GET / HTTP/1.1\r\n\r\n")
    c.send(1, b"HTTP/1.1 204 No Content\r\n\r\n")
    c.close()
    p = tmp_path / "http.pcap"
    write_pcap(p, [(1.0 + i, bytes(x)) for i, x in enumerate(c.pkts)])
    rc, out, _ = check(p)
    assert rc == 3 and "INCONCLUSIVE" in out and "no Kafka traffic found" in out


@pytest.mark.parametrize(
    "text, where, what",
    [
        ('[[rule]]\nid = "x"\nassert = "latncy > 5"\n', "[[rule]] 1 (id x)", "did you mean latency"),
        ('[[rule]]\nid = "x"\nassert = "error == NOT_A_REAL_ERROR"\n', "[[rule]] 1", "NOT_A_REAL_ERROR"),
        ('[[rule]]\nid = "x"\nwhere = "api == Prodce"\nassert = "version > 1"\n', "[[rule]] 1", "Prodce"),
        ('[[rule]]\nid = "x"\nasert = "version > 1"\n', "[[rule]] 1", "did you mean 'assert'"),
        ('[[rule]]\nid = "x"\naggregate = "p99(latency)"\n', "[[rule]] 1", "needs max or min"),
        ('[[rule]]\nid = "x"\naggregate = "p99(client_id)"\nmax = 1\n', "[[rule]] 1", "not a number"),
        ('[[rule]]\nid = "x"\naggregate = "median(latency)"\nmax = 1\n', "[[rule]] 1", "pNN/max"),
        ('[pack]\n"kafka.acks-al" = false\n', "[pack] kafka.acks-al", "did you mean kafka.acks-all"),
        ('[[waiver]]\nrule = "nope"\nreason = "r"\nuntil = 2030-01-01\n', "[[waiver]] 1", "neither"),
        ('[[waiver]]\nrule = "kafka.crc"\nuntil = 2030-01-01\n', "[[waiver]] 1", "needs a reason"),
        ('[[waiver]]\nrule = "kafka.crc"\nreason = "r"\nuntil = "soon"\n', "[[waiver]] 1", "expected a date"),
        ('[chek]\nfail_on = "warning"\n', "r.toml", "unknown key 'chek'"),
        ("[[rule]\n", "r.toml", "not valid TOML"),
    ],
)
def test_configuration_errors_exit_2_with_location(tmp_path, text, where, what):
    rules = tmp_path / "r.toml"
    rules.write_text(text)
    rc, out, err = check(ZSTD, "--rules", rules)
    assert rc == 2, out
    assert where in err and what in err


def test_unknown_error_name_in_forbid_flag_is_a_configuration_error():
    rc, _, err = check(ZSTD, "--forbid-error", "NOT_LEADER_FOR_PARTITON")
    assert rc == 2 and "--forbid-error" in err


def test_flags_are_shorthands_for_rules():
    rc, doc = check_json(ZSTD, "--latency", "Produce=p99:0.0001", "--expect-api", "Produce,OffsetCommit")
    assert rule(doc, "latency-1")["status"] == "failed"
    assert rule(doc, "expect-Produce")["status"] == "passed"
    assert rc == 1


# -- waivers -------------------------------------------------------------------------------------------


def test_waiver_until_a_date(tmp_path):
    p = tmp_path / "err.pcap"
    patch_field(GZIP, p, is_produce, "response", "error_code", struct.pack(">h", 10))
    rules = tmp_path / "r.toml"
    rules.write_text(
        '[pack]\n"kafka.producer-lost" = false\n'  # (the refused records are lost besides)
        '[[waiver]]\nrule = "kafka.error-responses"\nwhere = "api == Produce"\n'
        'until = 2030-06-30\nreason = "the broker fix ships in June"\n'
    )
    rc, doc = check_json(p, "--rules", rules, "--today", "2030-06-30")
    r = rule(doc, "kafka.error-responses")
    assert (
        rc == 0 and r["status"] == "waived" and r["findings"][0]["waived"] == "the broker fix ships in June"
    )
    rc, doc = check_json(p, "--rules", rules, "--today", "2030-07-01")
    r = rule(doc, "kafka.error-responses")
    assert rc == 1 and r["status"] == "failed" and "waiver expired on 2030-06-30" in r["summary"]


# -- baselines -----------------------------------------------------------------------------------------


def test_baseline_round_trip_and_regressions(tmp_path):
    base = tmp_path / "base.json"
    rc, _, err = check(GZIP, "--baseline", base, "--update-baseline")
    assert base.exists() and "baseline written" in err
    text = base.read_text()
    assert text == baseline.dumps(json.loads(text))  # canonical, sorted
    assert "127.0.0.1" not in text  # no addresses
    rc, doc = check_json(GZIP, "--baseline", base)
    assert all(r["status"] in ("passed", "noted") for r in doc["rules"] if r["id"].startswith("baseline."))

    acks = tmp_path / "acks1.pcap"
    patch_field(GZIP, acks, is_produce, "request", "acks", struct.pack(">h", 1))
    rc, doc = check_json(acks, "--baseline", base)
    r = rule(doc, "baseline.request-shape")
    assert rc == 1 and r["status"] == "failed" and "produce.acks" in r["summary"]

    err_p = tmp_path / "err.pcap"
    patch_field(GZIP, err_p, is_produce, "response", "error_code", struct.pack(">h", 6))
    rc, doc = check_json(err_p, "--baseline", base)
    r = rule(doc, "baseline.errors")
    assert rc == 1 and "NOT_LEADER_OR_FOLLOWER" in r["summary"]

    slow = tmp_path / "slow.pcap"
    assert delay_responses(GZIP, slow, is_produce, 0.080) > 0
    rc, doc = check_json(slow, "--baseline", base)
    r = rule(doc, "baseline.latency")
    assert rc == 1 and r["status"] == "failed" and "Produce p99" in r["summary"]


def test_baseline_compare_dimensions():
    b = {
        "apis": {"Produce": [9], "Metadata": [12]},
        "request_shape": {"produce.codec": ["zstd"], "produce.idempotent": [True]},
        "handshakes": ["ApiVersions > Metadata"],
        "errors": {},
        "latency_ms": {"Produce": {"p50": 2.0, "p99": 5.0, "count": 10}},
        "requests": {"Produce": 10, "Metadata": 2},
    }
    base = {"kafka-analyzer-baseline": 1, "clients": {"app": b}}

    def diff(**changes):
        cur = json.loads(json.dumps(b))
        cur.update(changes)
        return {(d.rule, d.severity) for d in baseline.compare(base, {"clients": {"app": cur}})}

    assert diff() == set()
    assert ("baseline.api-versions", "error") in diff(apis={"Produce": [9, 11], "Metadata": [12]})
    assert ("baseline.request-shape", "error") in diff(
        request_shape={"produce.codec": ["none"], "produce.idempotent": [True]}
    )
    assert ("baseline.request-shape", "error") in diff(
        request_shape={"produce.codec": ["zstd"], "produce.idempotent": [False]}
    )
    assert ("baseline.handshake", "error") in diff(handshakes=["Metadata > ApiVersions"])
    assert ("baseline.errors", "error") in diff(errors={"Produce": {"NOT_LEADER_OR_FOLLOWER": 1}})
    assert ("baseline.latency", "error") in diff(
        latency_ms={"Produce": {"p50": 2.0, "p99": 90.0, "count": 10}}
    )
    assert diff(latency_ms={"Produce": {"p50": 2.0, "p99": 40.0, "count": 10}}) == set()  # 8x but < +50 ms
    assert ("baseline.requests", "error") in diff(requests={"Produce": 16, "Metadata": 2})
    assert ("baseline.latency", "note") in diff(
        latency_ms={"Produce": {"p50": 2.0, "p99": 0.1, "count": 10}}
    ) or (diff(latency_ms={"Produce": {"p50": 2.0, "p99": 0.1, "count": 10}}) == set())
    other = {"clients": {"app": b, "new-client": b}}
    assert ("baseline.clients", "error") in {(d.rule, d.severity) for d in baseline.compare(base, other)}


# -- outputs ------------------------------------------------------------------------------------------


def test_github_annotations(tmp_path):
    p = tmp_path / "err.pcap"
    patch_field(GZIP, p, is_produce, "response", "error_code", struct.pack(">h", 10))
    rc, out, _ = check(p, "--format", "github")
    line = next(x for x in out.splitlines() if x.startswith("::error"))
    assert "title=kafka.error-responses" in line and f"file={p}" in line


def test_several_captures_one_report(tmp_path):
    junit = tmp_path / "r.xml"
    sarif = tmp_path / "r.sarif"
    rc, doc = check_json(GZIP, ZSTD, "-j", "2", "--junit", junit, "--sarif", sarif)
    assert len(doc["captures"]) == 2
    xml = junit.read_text()
    assert xml.count("<testsuite ") == 1 and xml.count("<testcase ") == len(doc["rules"])
    s = json.loads(sarif.read_text())
    assert s["version"] == "2.1.0" and len(s["runs"][0]["artifacts"]) == 2


def test_tls_capture_with_its_key_log_is_checked():
    """Without keys a TLS capture is inconclusive and says why; with its key log it is checked."""
    cap = CAPTURES / "kafka-python-tls-tls13-aes128gcm.pcap"
    rc, out, _ = check(cap)
    assert rc == 3 and "TLS connections (no key log given: --tls-keylog FILE)" in out
    rc, doc = check_json(cap, "--tls-keylog", cap.with_suffix(".keys"))
    assert rc == 0 and doc["captures"][0]["exchanges"] > 0 and not doc["captures"][0]["inconclusive"]
