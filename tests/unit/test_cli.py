"""The command line: protocol coverage, filters, several files in parallel, user-facing errors."""

import json
import subprocess
import sys

from tests.helpers.captures import CAPTURES, ROOT
from tests.helpers.packets import Conversation, write_pcap


def cli(*args, stdin=None):
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", *map(str, args)],
        input=stdin,
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )
    return r.returncode, r.stdout.decode(), r.stderr.decode()


def test_protocol_json_lists_every_api_with_versions():
    rc, out, _ = cli("protocol", "--format", "json")
    rows = json.loads(out)
    assert rc == 0 and len(rows) == 93
    by_key = {r["api_key"]: r for r in rows}
    assert set(rows[0]) == {"api_key", "name", "min_version", "max_version"}
    assert by_key[0] == {"api_key": 0, "name": "Produce", "min_version": 0, "max_version": 13}
    assert by_key[1]["max_version"] == 18 and by_key[3]["max_version"] == 13
    assert by_key[18]["max_version"] == 4 and by_key[71]["name"] == "GetTelemetrySubscriptions"
    assert by_key[4]["name"] == "LeaderAndIsr"


def test_read_filters():
    cap = CAPTURES / "librdkafka-produce-consume-gzip.pcap"
    rc, out, _ = cli("read", cap, "--api", "Produce")
    lines = out.splitlines()
    assert rc == 0 and lines and all(" Produce v" in x for x in lines)
    rc, out2, _ = cli("read", cap, "--api", "0")
    assert out2 == out
    rc, out, _ = cli("read", cap, "--topic", "rdk-gzip", "--api", "Fetch")
    assert out and all("rdk-gzip" in x and "Fetch v" in x for x in out.splitlines())
    rc, out, _ = cli("read", cap, "--errors")
    assert out and all("[" in x for x in out.splitlines())
    rc, out, _ = cli("read", cap, "--slower-than", "100000")
    assert rc == 0 and out == ""
    rc, out, _ = cli("read", cap, "--client", "nobody")
    assert out == ""
    rc, _, err = cli("read", cap, "--api", "NoSuchApi")
    assert rc != 0 and "unknown API" in err


def test_several_files_in_parallel_equal_one_by_one():
    a, b = CAPTURES / "kafka-python-0.9-none.pcap", CAPTURES / "aiokafka-gzip.pcap"
    rc, both, _ = cli("read", "-j", "2", a, b)
    _, one, _ = cli("read", a)
    _, two, _ = cli("read", b)
    assert rc == 0 and both == f"==> {a} <==\n{one}==> {b} <==\n{two}"
    rc, nd, _ = cli("export", a, b, "-j", "2")
    assert rc == 0 and [json.loads(x)["type"] for x in nd.splitlines()].count("summary") == 2


def test_no_kafka_traffic_is_said_with_a_hint(tmp_path):
    c = Conversation(broker=("10.0.0.2", 80)).handshake()
    c.send(0, b"GET / HTTP/1.1\r\nHost: example\r\n\r\n")
    c.send(1, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    c.close()
    p = tmp_path / "http.pcap"
    write_pcap(p, [(1.0 + i, bytes(x)) for i, x in enumerate(c.pkts)])
    rc, out, err = cli("stats", p)
    assert rc == 1 and "no Kafka traffic found" in err and "--port" in err


def test_stats_json_has_every_table():
    rc, out, _ = cli("stats", CAPTURES / "librdkafka-produce-consume-zstd.pcap", "--format", "json")
    t = json.loads(out)
    assert set(t) >= {"capture", "apis", "topics", "clients", "connections", "brokers", "groups", "anomalies"}
    topic = next(x for x in t["topics"] if x["topic"] == "rdk-zstd")
    assert topic["produced_records"] == 13
    assert t["groups"] and t["groups"][0]["protocol_type"] == "consumer"
    api = {a["api_name"]: a for a in t["apis"]}
    assert api["Produce"]["p50_ms"] is not None and api["Produce"]["p99_ms"] >= api["Produce"]["p50_ms"]


def test_tui_arguments_are_checked_before_the_screen_opens():
    """``tui`` takes a capture or ``-i INTERFACE`` (not both, not neither); -f/--write go with
    -i; a bad -Y, an unknown interface or a bad capture filter exit 2 with the reason."""
    cap = CAPTURES / "librdkafka-produce-consume-gzip.pcap"
    cases = [
        ((), "give a capture file, - (stdin), or -i INTERFACE"),
        ((cap, "-i", "lo"), "a capture file or -i INTERFACE, not both"),
        ((cap, "-f", "tcp"), "-f, --write and --max-exchanges go with -i INTERFACE"),
        ((cap, "-Y", "api =="), "bad display filter"),
    ]
    for args, said in cases:
        rc, out, err = cli("tui", *args)
        assert rc == 2 and said in err, (args, rc, err)
    rc, out, err = cli("tui", "-i", "no-such-if0")  # (without root: no permission, said as well)
    assert rc == 2 and err.startswith("kafka-analyzer: error: ") and out == "", err


def test_spark_split_size_takes_byte_suffixes():
    import argparse

    import pytest

    from analyzer.cli import byte_size

    assert [byte_size(t) for t in ("4K", "128M", "1g", "4096", "64MB", "0")] == [
        4096,
        128 << 20,
        1 << 30,
        4096,
        64 << 20,
        0,
    ]
    for bad in ("x", "-1", "4Q", ""):
        with pytest.raises(argparse.ArgumentTypeError):
            byte_size(bad)
