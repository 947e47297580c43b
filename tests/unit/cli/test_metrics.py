"""``stats CAPTURE --metrics-file OUT.prom``: the Prometheus exposition of a capture, whose totals
are the ``stats`` JSON's, the same with ``-j 2`` as with one process, accepted by ``promtool
check metrics`` (Debian's ``prometheus``), read back by prometheus_client's own parser."""

import json
import shutil
import subprocess

import pytest
from prometheus_client.parser import text_string_to_metric_families

from analyzer.cli import main
from tests.helpers.captures import CAPTURES

SAMPLES = [
    "group-lag.pcap",
    "producer-txn.pcap",
    "client-metadata-storm.pcap",
    "kafka-python-0.11-gzip.pcap",
    "group-cooperative.pcap",
]


def exposition(capsys, tmp_path, *args) -> tuple[str, dict]:
    out = tmp_path / "out.prom"
    rc = main(["stats", *map(str, args), "--format", "json", "--metrics-file", str(out)])
    stdout, _ = capsys.readouterr()
    assert rc == 0
    return out.read_text(), json.loads(stdout)


def samples(text: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def total(s: dict, name: str, **match) -> float:
    return sum(v for labels, v in s.get(name, []) if all(labels.get(k) == x for k, x in match.items()))


@pytest.mark.parametrize("name", SAMPLES)
def test_exposition_totals_are_the_stats_totals(capsys, tmp_path, name):
    text, tables = exposition(capsys, tmp_path, CAPTURES / name)
    s = samples(text)
    apis = tables["apis"]
    assert (
        total(s, "kafka_analyzer_requests_total")
        == sum(a["count"] for a in apis)
        == tables["capture"]["exchanges"]
    )
    for a in apis:
        api = a["api_name"]
        assert total(s, "kafka_analyzer_requests_total", api=api) == a["count"], api
        assert total(s, "kafka_analyzer_request_bytes_total", api=api) == a["request_bytes"], api
        assert total(s, "kafka_analyzer_response_bytes_total", api=api) == a["response_bytes"], api
        assert total(s, "kafka_analyzer_unanswered_requests_total", api=api) == a["unanswered"], api
        for err, n in a["errors"].items():
            assert total(s, "kafka_analyzer_errors_total", api=api, error=err) == n
    assert total(s, "kafka_analyzer_errors_total") == sum(sum(a["errors"].values()) for a in apis)
    # the latency histogram counts every exchange with a latency
    counted = total(s, "kafka_analyzer_latency_seconds_count")
    assert counted == sum(a["count"] - a["unanswered"] for a in apis if a["p50_ms"] is not None)
    assert total(s, "kafka_analyzer_packets_total") == tables["capture"]["packets"]
    assert total(s, "kafka_analyzer_tcp_connections_total") == tables["capture"]["tcp_connections"]
    anomalies = {
        r["anomaly"]: r["count"] for r in tables["anomalies"] if not r["anomaly"].startswith("kafka.")
    }
    assert {labels["code"]: v for labels, v in s.get("kafka_analyzer_issues_total", [])} == anomalies
    clients = {r["client_id"]: r["requests"] for r in tables["clients"]}
    assert total(s, "kafka_analyzer_client_requests_total") == sum(clients.values())
    for t in tables["topics"]:
        if len(tables["topics"]) <= 50:
            for d in ("produce", "fetch"):
                key = "produced_records" if d == "produce" else "fetched_records"
                assert total(s, "kafka_analyzer_topic_records_total", topic=t["topic"], direction=d) == t[key]
    for g in tables["group_health"]:
        if g["status"] is not None:
            assert total(s, "kafka_analyzer_consumer_status", group=g["group_id"], status=g["status"]) == 1
        assert total(s, "kafka_analyzer_rebalances_total", group=g["group_id"]) == g["rebalances"]
        paused = total(s, "kafka_analyzer_consumer_paused_seconds_total", group=g["group_id"])
        assert paused == pytest.approx((g["paused_ms"] or 0) / 1000.0, abs=1e-6)
    txn = tables["transactions"]
    for outcome in ("commit", "abort"):
        assert total(s, "kafka_analyzer_transactions_total", outcome=outcome) == sum(r[outcome] for r in txn)
    prods = tables["producers"]
    assert total(s, "kafka_analyzer_producer_retries_total") == sum(r["retried_records"] or 0 for r in prods)


@pytest.mark.parametrize("name", ["group-lag.pcap", "producer-txn.pcap", "client-reconnect-loop.pcap"])
def test_two_processes_write_what_one_writes(capsys, tmp_path, name):
    one, _ = exposition(capsys, tmp_path, CAPTURES / name)
    two, _ = exposition(capsys, tmp_path, CAPTURES / name, "-j", "2")
    assert one == two


@pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool (Debian's prometheus)")
@pytest.mark.parametrize("name", SAMPLES)
def test_promtool_accepts_the_exposition(capsys, tmp_path, name):
    text, _ = exposition(capsys, tmp_path, CAPTURES / name)
    r = subprocess.run(
        ["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_label_bounds_and_buckets_follow_the_options(capsys, tmp_path):
    text, tables = exposition(
        capsys,
        tmp_path,
        CAPTURES / "group-lag.pcap",
        "--metrics-clients",
        "2",
        "--metrics-groups",
        "1",
        "--metrics-buckets",
        "0.001,0.1",
    )
    s = samples(text)
    ids = {labels["client_id"] for labels, _ in s["kafka_analyzer_client_requests_total"]}
    ranked = sorted(tables["clients"], key=lambda r: (-r["requests"], r["client_id"]))
    assert ids == {ranked[0]["client_id"], ranked[1]["client_id"], "other"}
    assert total(s, "kafka_analyzer_client_requests_total") == sum(r["requests"] for r in tables["clients"])
    assert total(s, "kafka_analyzer_label_folded", label="client_id") == len(ranked) - 2
    assert total(s, "kafka_analyzer_label_limit", label="client_id") == 2
    assert len({labels["group"] for labels, _ in s["kafka_analyzer_rebalances_total"]}) == 1
    les = {labels["le"] for labels, _ in s["kafka_analyzer_latency_seconds_bucket"]}
    assert les == {"0.001", "0.1", "+Inf"}


@pytest.mark.parametrize(
    "args",
    [["--metrics-buckets", "0.1,0.01"], ["--metrics-buckets", "x"], ["--metrics-clients", "0"]],
)
def test_bad_metric_options_are_said(capsys, tmp_path, args):
    rc = main(["stats", str(CAPTURES / "group-lag.pcap"), "--metrics-file", str(tmp_path / "m.prom"), *args])
    _, err = capsys.readouterr()
    assert rc == 2 and "--metrics-" in err and "Traceback" not in err
    assert not (tmp_path / "m.prom").exists()


def test_an_unwritable_metrics_file_is_said(capsys, tmp_path):
    rc = main(["stats", str(CAPTURES / "group-lag.pcap"), "--metrics-file", str(tmp_path / "no" / "m.prom")])
    _, err = capsys.readouterr()
    assert rc == 2 and "--metrics-file: no such directory" in err
