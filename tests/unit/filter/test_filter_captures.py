"""On the bundled captures, ``read -Y EXPR`` and ``export -Y EXPR`` keep exactly the exchanges a
plain Python predicate over the unfiltered ``export`` NDJSON keeps (compared by connection and
correlation id), for expressions over every kind of field."""

import base64
import json
import re

import pytest

from analyzer import cli
from tests.helpers.captures import CAPTURES

CAPS = [
    "librdkafka-produce-consume-gzip.pcap",
    "librdkafka-admin.pcap",
    "librdkafka-txn.pcap",
    "librdkafka-acks0.pcap",
    "librdkafka-kip848.pcap",
    "kafka-python-0.8.2-gzip.pcap",
    "kafka-python-0.10.0-snappy.pcap",
    "kafka-python-sasl-plain.pcap",
    "aiokafka-zstd.pcap",
]


def _run(capsys, *argv) -> str:
    capsys.readouterr()
    rc = cli.main([str(a) for a in argv])
    out = capsys.readouterr().out
    assert rc == 0, (argv, rc)
    return out


SOFTWARE: dict[str, str] = {}  # client id -> software, from the last export's summary


def _export(capsys, cap, *extra) -> list[dict]:
    out = _run(capsys, "export", cap, "--no-spans", *extra)
    lines = [json.loads(line) for line in out.splitlines()]
    SOFTWARE.clear()
    SOFTWARE.update((c["client_id"], c["software"]) for c in lines[-1]["clients"] if c["software"])
    return [d for d in lines if d["type"] == "exchange"]


def _walk(v):
    """Every (key, value) of a JSON value, depth first."""
    if isinstance(v, dict):
        for k, x in v.items():
            yield k, x
            yield from _walk(x)
    elif isinstance(v, list):
        for x in v:
            yield from _walk(x)


def _bodies(d):
    return [m["body"] for m in (d["request"], d["response"]) if m is not None and m["body"] is not None]


def _errors(d):
    r = d["response"]
    if r is None or r["body"] is None:
        return set()
    return {v for k, v in _walk(r["body"]) if k.endswith("error_code") and isinstance(v, int) and v != 0}


_SEV = {"note": 0, "warning": 1, "error": 2}


def _severity(d):
    return max((_SEV[i["severity"]] for i in d["issues"]), default=None)


def _batches(d):
    out = []
    if d["api_name"] not in ("Produce", "Fetch", "ShareFetch"):
        return out
    for k, v in ((k, v) for b in _bodies(d) for k, v in _walk(b)):
        if k == "records" and isinstance(v, dict) and "batches" in v:
            # the export's one record shape: the batch header, its count, its records
            out.extend(
                {**e["batch"], "record_count": e["record_count"], "record_list": e.get("record_list")}
                for e in v["batches"]
            )
    return out


def _count(b):
    """Records of a batch (the header's count, for every magic)."""
    return b["record_count"]


def _raw(v):
    if v is None:
        return None
    if isinstance(v, dict):
        return base64.b64decode(v["base64"]) if "base64" in v else None
    return v.encode("utf-8")


def _records(d):
    """(key, value, header keys) of every record, as the records view yields them."""
    return [r for b in _batches(d) for r in b["record_list"] or ()]


def _client_port(ds):
    return ds[0]["connection"]["broker"].rsplit(":", 1)[1]


def _unanswered(d):
    req = d["request"]
    if req is None or d["response"] is not None or d["api_key"] is None:
        return False
    return not (d["api_key"] == 0 and req["body"] is not None and req["body"].get("acks") == 0)


def _groups(d):
    req = d["request"]
    if req is None or req["body"] is None:
        return []
    out = []
    for k, v in _walk(req["body"]):
        if k == "group_id" and isinstance(v, str):
            out.append(v)
        elif k == "groups" and isinstance(v, list):
            out += [g for g in v if isinstance(g, str)]
    return out


def _throttle(d):
    return [v for b in _bodies(d) for k, v in _walk(b) if k == "throttle_time_ms" and isinstance(v, int)]


def _topic_names(d, api, arr):
    if d["api_name"] != api:
        return []
    return [t.get("name") for b in _bodies(d) for t in (b.get(arr) or [])]


CASES = [
    ("api == Produce", lambda d, x: d["api_name"] == "Produce"),
    ("api in {Fetch, 3}", lambda d, x: d["api_key"] in (1, 3)),
    (
        "not api == ApiVersions and version >= 4",
        lambda d, x: d["api_key"] != 18 and (d["api_version"] or 0) >= 4,
    ),
    ("latency > 5ms", lambda d, x: d["latency_ms"] is not None and d["latency_ms"] > 5),
    (
        "latency <= 250us or unanswered",
        lambda d, x: (d["latency_ms"] is not None and d["latency_ms"] <= 0.25) or _unanswered(d),
    ),
    (
        "corr < 5 && corr != 2",
        lambda d, x: d["correlation_id"] is not None and d["correlation_id"] < 5 and d["correlation_id"] != 2,
    ),
    ('client_id contains "consumer"', lambda d, x: "consumer" in (d["client_id"] or "")),
    (
        'client_id matches "^gen-.*-(gzip|txn)$"',
        lambda d, x: bool(re.search("^gen-.*-(gzip|txn)$", d["client_id"] or "")),
    ),
    ("client == 127.0.0.0/8", lambda d, x: d["connection"]["client"].startswith("127.")),
    ("broker == 127.0.0.1:{port}", lambda d, x: d["connection"]["broker"] == f"127.0.0.1:{x['port']}"),
    ("conn == 2", lambda d, x: d["connection"]["id"] == 2),
    ("error", lambda d, x: bool(_errors(d))),
    ("error == UNSUPPORTED_VERSION", lambda d, x: 35 in _errors(d)),
    (
        "error in {NOT_COORDINATOR, 15, COORDINATOR_LOAD_IN_PROGRESS}",
        lambda d, x: bool(_errors(d) & {16, 15, 14}),
    ),
    ("topic", lambda d, x: bool(d["topics"])),
    ("topic == {topic}", lambda d, x: x["name"] in d["topics"]),
    ("partition == 1", lambda d, x: any(1 in ps for ps in d["topics"].values())),
    (
        "all(partition == 0)",
        lambda d, x: (
            bool([p for ps in d["topics"].values() for p in ps])
            and all(p == 0 for ps in d["topics"].values() for p in ps)
        ),
    ),
    ("request_bytes > 200", lambda d, x: d["request"] is not None and d["request"]["length"] + 4 > 200),
    (
        "response_bytes >= 100 and response_bytes < 0x200",
        lambda d, x: d["response"] is not None and 100 <= d["response"]["length"] + 4 < 512,
    ),
    ("severity >= warning", lambda d, x: (_severity(d) or 0) >= 1),
    ("severity", lambda d, x: _severity(d) is not None),
    ('issue contains "pairing"', lambda d, x: any("pairing" in i["code"] for i in d["issues"])),
    ("unanswered", lambda d, x: _unanswered(d)),
    ("group", lambda d, x: bool(_groups(d))),
    ('software contains "python"', lambda d, x: "python" in SOFTWARE.get(d["client_id"], "")),
    ("software", lambda d, x: d["client_id"] in SOFTWARE),
    ('group matches "-consumer$|txn"', lambda d, x: any(re.search("-consumer$|txn", g) for g in _groups(d))),
    (
        "produce.acks == -1",
        lambda d, x: d["api_key"] == 0 and d["request"] and (d["request"]["body"] or {}).get("acks") == -1,
    ),
    (
        "produce.request.acks != 0",
        lambda d, x: (
            not (d["api_key"] == 0 and d["request"] and (d["request"]["body"] or {}).get("acks") == 0)
        ),
    ),
    (
        "fetch.isolation_level == 1",
        lambda d, x: (
            d["api_key"] == 1
            and d["request"] is not None
            and (d["request"]["body"] or {}).get("isolation_level") == 1
        ),
    ),
    ("metadata.topics.name == {topic}", lambda d, x: x["name"] in _topic_names(d, "Metadata", "topics")),
    ("throttle_time_ms >= 0", lambda d, x: any(v >= 0 for v in _throttle(d))),
    ("records.codec == none", lambda d, x: any(b.get("codec") == "none" for b in _batches(d))),
    (
        "records.codec in {gzip, snappy, lz4, zstd}",
        lambda d, x: any(b.get("codec") in ("gzip", "snappy", "lz4", "zstd") for b in _batches(d)),
    ),
    (
        "all(records.codec == gzip)",
        lambda d, x: bool(_batches(d)) and all(b.get("codec") == "gzip" for b in _batches(d)),
    ),
    ("records.count > 3", lambda d, x: bool(_batches(d)) and sum(_count(b) for b in _batches(d)) > 3),
    ("records", lambda d, x: bool(_batches(d))),
    ("records.transactional", lambda d, x: any(b.get("transactional") for b in _batches(d))),
]

RECORD_CASES = [
    (
        'records.key contains "-1"',
        lambda d, x: any(b"-1" in (_raw(r.get("key")) or b"") for r in _records(d)),
    ),
    (
        'records.value matches "quick.*fox"',
        lambda d, x: any(
            re.search("quick.*fox", (_raw(r.get("value")) or b"").decode("utf-8", "surrogateescape"))
            for r in _records(d)
        ),
    ),
    (
        'records.headers.key == "h2"',
        lambda d, x: any(h.get("key") == "h2" for r in _records(d) for h in r.get("headers") or ()),
    ),
    (
        "not records.key and records",
        lambda d, x: bool(_batches(d)) and not any(r.get("key") is not None for r in _records(d)),
    ),
]


def _keys_from_read(out: str) -> list[tuple]:
    keys = []
    for line in out.splitlines():
        m = re.match(r"\s*\S+\s+(\S+) -> (\S+)\s.*?\scorr=(\S+)\s", line)
        assert m, line
        keys.append((m.group(1), m.group(2), m.group(3)))
    return sorted(keys)


def _key(d):
    c = d["connection"]
    return (c["client"], c["broker"], str(d["correlation_id"]) if d["correlation_id"] is not None else "-")


@pytest.mark.parametrize("cap", CAPS)
def test_read_and_export_filter_like_python_over_export(cap, capsys):
    path = CAPTURES / cap
    plain = _export(capsys, path)
    with_records = _export(capsys, path, "--records")
    assert len(plain) == len(with_records) > 0
    topics = sorted({t for d in plain for t in d["topics"]})
    name = topics[0] if topics else "none"
    x = {"port": _client_port(plain), "topic": json.dumps(name), "name": name}
    hits = 0
    for cases, ds in ((CASES, plain), (RECORD_CASES, with_records)):
        for expr, pred in cases:
            expr = expr.replace("{port}", x["port"]).replace("{topic}", x["topic"])
            want = [d for d in ds if pred(d, x)]
            hits += bool(want)
            got_read = _keys_from_read(_run(capsys, "read", path, "-Y", expr))
            assert got_read == sorted(_key(d) for d in want), expr
            got_export = [
                (d["connection"]["id"], d["correlation_id"])
                for d in (
                    json.loads(line)
                    for line in _run(capsys, "export", path, "--no-spans", "-Y", expr).splitlines()
                )
                if d["type"] == "exchange"
            ]
            assert got_export == [(d["connection"]["id"], d["correlation_id"]) for d in want], expr
    assert hits >= 8  # the expressions really select something on this capture


def test_shorthands_are_the_same_filter(capsys):
    path = CAPTURES / "librdkafka-produce-consume-gzip.pcap"
    a = _run(
        capsys,
        "read",
        path,
        "--api",
        "Produce,Fetch",
        "--slower-than",
        "1",
        "--client",
        "gen-librdkafka-produce-consume-gzip-consumer",
    )
    b = _run(
        capsys,
        "read",
        path,
        "-Y",
        'api in {Produce, Fetch} and latency >= 1 and client_id == "gen-librdkafka-produce-consume-gzip-consumer"',  # noqa: E501
    )
    assert a == b and a.count("\n") > 3
    c = _run(capsys, "read", path, "--errors")
    d = _run(capsys, "read", path, "-Y", "error or severity >= warning")
    assert c == d and "UNSUPPORTED_VERSION" in c


def test_stats_over_matching_exchanges(capsys):
    path = CAPTURES / "librdkafka-produce-consume-gzip.pcap"
    full = json.loads(_run(capsys, "stats", path, "--format", "json"))
    only = json.loads(_run(capsys, "stats", path, "--format", "json", "-Y", "api == Fetch"))
    assert [r["api_name"] for r in only["apis"]] == ["Fetch"]
    fetch = [r for r in full["apis"] if r["api_name"] == "Fetch"][0]
    assert only["apis"][0] == fetch
    assert only["capture"]["exchanges"] == fetch["count"] < full["capture"]["exchanges"]
    assert all(t["produced_records"] == 0 for t in only["topics"])


def test_bad_filter_is_a_usage_error(capsys):
    path = CAPTURES / "librdkafka-produce-consume-gzip.pcap"
    for argv in (
        ["read", path, "-Y", "latency > 5 ms"],
        ["stats", path, "-Y", "api == Prodce"],
        ["export", path, "-Y", "x"],
    ):
        capsys.readouterr()
        assert cli.main([str(a) for a in argv]) == 2
        err = capsys.readouterr().err
        assert "bad display filter" in err and "^" in err
