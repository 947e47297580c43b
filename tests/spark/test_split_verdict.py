"""A big file without a Kafka exchange, analysed in byte-range splits: its captures row has the
exit code and the reason (``inconclusive``) one run over the whole file gives, so ``check
--parquet`` can judge it (it refused a null exit code)."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.helpers.packets import Conversation
from tests.hostile.gen import pcap_bytes, timed

pytest.importorskip("pyspark")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("Spark needs Java", allow_module_level=True)


def no_kafka_capture() -> bytes:
    """Three HTTP-like TCP connections, 60 KB each way: TCP, but no Kafka request anywhere."""
    pkts = []
    for i in range(3):
        c = Conversation(client=("10.0.0.1", 41000 + i)).handshake()
        for k in range(30):
            c.send(0, b"GET /x HTTP/1.1\r\nHost: y\r\n\r\n" + b"a" * 2000, mss=1448)
            c.send(1, b"HTTP/1.1 200 OK\r\n\r\n" + bytes([k]) * 2000, mss=1448)
        c.close()
        pkts += c.pkts
    return pcap_bytes(timed(pkts))


def test_a_split_piece_without_kafka_gets_the_whole_files_verdict(spark, tmp_path):
    from analyzer.spark.source import analyze

    f = tmp_path / "http.pcap"
    f.write_bytes(no_kafka_capture())
    cols = ("packets", "tcp_connections", "exchanges", "issues", "damaged", "exit_code", "inconclusive")
    split = analyze(spark, [str(f)], split_size=4096)
    one = analyze(spark, [str(f)], split_size=0)
    try:
        assert list(split.split.values())[0] > 10  # really cut
        assert not one.split
        got, want = ([tuple(r[c] for c in cols) for r in x.captures.collect()] for x in (split, one))
        assert got == want
        (row,) = got
        assert row[2] == 0 and row[5] == 1 and "no Kafka traffic found in 3 TCP connections" in row[6]
    finally:
        split.unpersist()
        one.unpersist()
