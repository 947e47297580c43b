"""Golden outputs: `read`, `stats` and `export --records` on a few project captures are pinned
byte for byte.

Regenerate after an intended change, and review the diff:
    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/captures/test_golden.py
"""

import os
import subprocess
import sys

import orjson
import pytest

from analyzer import __version__
from tests.helpers.captures import CAPTURES, ROOT

GOLDEN = ROOT / "tests" / "captures" / "golden"
CASES = [
    ("read", "librdkafka-produce-consume-gzip.pcap", []),
    ("read", "librdkafka-txn.pcap", ["--api", "Produce,Fetch,EndTxn,AddPartitionsToTxn"]),
    ("read", "kafka-python-0.9-none.pcap", []),
    ("read", "librdkafka-produce-consume-zstd.pcap", ["--errors"]),
    ("stats", "librdkafka-produce-consume-gzip.pcap", []),
    ("stats", "kafka-python-0.10.0-gzip.pcap", []),
    ("stats", "librdkafka-txn.pcap", []),
    # Tansu (an independent broker): JoinGroup v1 answered MEMBER_ID_REQUIRED, Fetch v3 answered
    # with magic 2 batches (named peer quirks); acks=0 Produce requests answered
    ("read", "tansu-kafka-python-0.10.1-group.pcap", ["-v"]),
    ("stats", "tansu-librdkafka-acks0.pcap", []),
    # the clients outside Python (issue #12): kafkajs with the mock's LeaveGroup quirk, sarama,
    # kafka-go's group join with its v0-layout subscription
    ("read", "kafkajs-gzip.pcap", []),
    ("stats", "sarama-zstd.pcap", []),
    ("read", "kafka-go-none.pcap", ["--api", "JoinGroup,SyncGroup,OffsetCommit", "-v"]),
    # read -V: the field trees of a transaction's exchanges (the TUI's detail tree, as text)
    ("read", "librdkafka-txn.pcap", ["--api", "EndTxn,AddPartitionsToTxn,InitProducerId", "-V"]),
]


@pytest.mark.parametrize(
    "cmd,name,extra", CASES, ids=lambda x: x if isinstance(x, str) else "-".join(x) or "all"
)
def test_golden(cmd, name, extra):
    path = CAPTURES / name
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", cmd, str(path.relative_to(ROOT)), *extra],
        capture_output=True,
        cwd=ROOT,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert r.returncode == 0, r.stderr
    golden = (
        GOLDEN
        / f"{cmd}-{name.removesuffix('.pcap')}{'-' + '-'.join(extra).replace(',', '_') if extra else ''}.txt"
    )
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_bytes(r.stdout)
    assert r.stdout.decode() == golden.read_text()


# export --records, one capture per record format: magic 0 (kafka-python 0.8.2, produced and
# fetched back), magic 1 with gzip wrappers (kafka-python 0.10.0) and magic 2 with transaction
# markers (librdkafka-txn: only the exchanges that carry a control batch, without spans, to keep
# the file small). The analyzer's version in the capture line is replaced by VERSION.
EXPORT_CASES = [
    ("kafka-python-0.8.2-none.pcap", ["--records"], False),
    ("kafka-python-0.10.0-gzip.pcap", ["--records"], False),
    ("librdkafka-txn.pcap", ["--records", "--no-spans"], True),
]


def _has_control_batch(obj) -> bool:
    if isinstance(obj, dict):
        b = obj.get("batch")
        if isinstance(b, dict) and b.get("control") is True:
            return True
        return any(_has_control_batch(v) for v in obj.values())
    if isinstance(obj, list):
        return any(_has_control_batch(v) for v in obj)
    return False


@pytest.mark.parametrize("name,extra,control_only", EXPORT_CASES, ids=[c[0] for c in EXPORT_CASES])
def test_golden_export(name, extra, control_only):
    path = CAPTURES / name
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", "export", str(path.relative_to(ROOT)), *extra],
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines(keepends=True)
    assert lines and orjson.loads(lines[0])["type"] == "capture"
    lines[0] = lines[0].replace(f"kafka-analyzer {__version__}".encode(), b"kafka-analyzer VERSION")
    if control_only:
        lines = [
            x for x in lines if orjson.loads(x)["type"] != "exchange" or _has_control_batch(orjson.loads(x))
        ]
    out = b"".join(lines)
    golden = GOLDEN / f"export-{name.removesuffix('.pcap')}{''.join(extra)}.ndjson"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_bytes(out)
    assert out.decode() == golden.read_text()
