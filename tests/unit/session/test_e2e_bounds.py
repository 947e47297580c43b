"""The end-to-end latencies' tables are bounded as every long-lived table is: a bundled capture
replayed six times, 1,000 s apart, each time from a client host of its own (as ``tcpreplay
--unique-ip`` loops it into ``live``), keeps only the recent (topic, partition, producer, consumer,
group) latencies under ``--state-idle``, at most ``--state-max`` of them, and counts the rest."""

from __future__ import annotations

import json
import struct

import pytest

from analyzer.cli import main
from tests.helpers.captures import CAPTURES
from tests.helpers.packets import write_pcap

LOOPS = 6
APART = 1000.0


def _broker_ports(records: list[tuple[float, bytes]]) -> set[int]:
    out = set()
    for _, data in records:
        t = 14 + (data[14] & 0x0F) * 4
        if data[23] == 6 and data[t + 13] & 0x12 == 0x02:  # a SYN without ACK goes to a broker
            out.add(struct.unpack_from(">H", data, t + 2)[0])
    return out


def loop(name: str, path, loops: int = LOOPS) -> None:
    """``captures/name`` replayed ``loops`` times, :data:`APART` seconds apart, each time from a
    client host of its own (10.9.LOOP.1), written to ``path``."""
    raw = (CAPTURES / name).read_bytes()
    assert raw[:4] == bytes.fromhex("d4c3b2a1") and struct.unpack_from("<I", raw, 20)[0] == 1
    records, off = [], 24
    while off + 16 <= len(raw):
        sec, usec, incl = struct.unpack_from("<III", raw, off)
        records.append((sec + usec / 1e6, raw[off + 16 : off + 16 + incl]))
        off += 16 + incl
    brokers = _broker_ports(records)
    out = []
    for n in range(loops):
        host = bytes((10, 9, n, 1))
        for ts, data in records:
            p = bytearray(data)
            t = 14 + (p[14] & 0x0F) * 4
            if struct.unpack_from(">H", p, t + 2)[0] in brokers:
                p[26:30] = host  # the client's side: its own host each loop
            else:
                p[30:34] = host
            out.append((ts + n * APART, bytes(p)))
    write_pcap(path, out)


@pytest.fixture(scope="module")
def looped(tmp_path_factory):
    path = tmp_path_factory.mktemp("e2e") / "looped.pcap"
    loop("librdkafka-produce-consume-gzip.pcap", path)
    return path


def _stats(capsys, *args) -> dict:
    rc = main(["stats", *map(str, args), "--format", "json"])
    out, _ = capsys.readouterr()
    assert rc == 0
    return json.loads(out)


def _let_go(report: dict) -> dict[str, int]:
    return {r["table"]: r["expired_idle"] + r["evicted_full"] for r in report.get("evictions", [])}


def test_latencies_expire_when_idle_and_stay_within_the_maximum(capsys, looped):
    whole = _stats(capsys, looped)
    rows = whole["e2e"]
    assert len(rows) >= 2 * LOOPS and not any(t.startswith("e2e") for t in _let_go(whole))
    per_loop = len(rows) // LOOPS
    # each loop's clients are a host of their own: their keys are their own
    assert len({r["consumer_client"] for r in rows}) >= LOOPS

    idle = _stats(capsys, looped, "--state-idle", 300)
    let_go = _let_go(idle)
    # the earlier loops' latencies were let go and counted; none came back
    assert len(idle["e2e"]) <= per_loop + 1
    assert len(idle["e2e"]) + let_go["e2e_latencies"] == len(rows)
    assert let_go["e2e_consumers"] >= LOOPS - 1
    last = f"@10.9.{LOOPS - 1}.1"
    assert idle["e2e"] and all(r["consumer_client"].endswith(last) for r in idle["e2e"])
    said = " ".join(r["said"] for r in idle["evictions"])
    assert "e2e latencies expired after 5min idle" in said

    most = _stats(capsys, looped, "--state-max", 2)
    assert len(most["e2e"]) <= 2
    # (partitions past the maximum are let go too: fewer of their records are matched)
    assert _let_go(most)["e2e_latencies"] >= len(rows) // 2


def test_two_processes_let_go_what_one_does(capsys, looped):
    one = _stats(capsys, looped, "--state-idle", 300)
    two = _stats(capsys, looped, "--state-idle", 300, "-j", 2)
    assert two["e2e"] == one["e2e"] and two["evictions"] == one["evictions"]


def _counters(path) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    out = {}
    for fam in text_string_to_metric_families(path.read_text()):
        for sample in fam.samples:
            if sample.name.startswith(("kafka_analyzer_producer_", "kafka_analyzer_transactions_total")):
                out[sample.name + str(sorted(sample.labels.items()))] = sample.value
    return out


@pytest.mark.parametrize("name", ["producer-plain.pcap", "producer-txn.pcap"])
def test_counters_keep_what_was_let_go(capsys, tmp_path, name):
    """The producers' and transactions' counters are the same whether the producers were let go
    (each loop's, idle) or kept: a counter never goes down when a table lets an entry go."""
    looped = tmp_path / "looped.pcap"
    loop(name, looped, 4)
    kept, bounded = tmp_path / "kept.prom", tmp_path / "bounded.prom"
    _stats(capsys, looped, "--metrics-file", kept)
    report = _stats(capsys, looped, "--metrics-file", bounded, "--state-idle", 300)
    assert _let_go(report)["producers"] >= 3
    single = tmp_path / "single.prom"
    _stats(capsys, CAPTURES / name, "--metrics-file", single)
    counted = _counters(kept)
    assert _counters(bounded) == counted
    # four times one copy's (duplicates aside: each loop writes its batches at the offsets the
    # previous loops' took, which a replay does and a broker does not)
    single_counted = _counters(single)
    assert {k: v for k, v in counted.items() if "duplicated" not in k} == {
        k: 4 * v for k, v in single_counted.items() if "duplicated" not in k
    }
    assert any(v for v in counted.values())
