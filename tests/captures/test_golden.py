"""Golden outputs: `read` and `stats` on a few project captures are pinned byte for byte.

Regenerate after an intended change, and review the diff:
    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/captures/test_golden.py
"""

import os
import subprocess
import sys

import pytest
from conftest import CAPTURES, ROOT

GOLDEN = ROOT / "tests" / "captures" / "golden"
CASES = [
    ("read", "librdkafka-produce-consume-gzip.pcap", []),
    ("read", "librdkafka-txn.pcap", ["--api", "Produce,Fetch,EndTxn,AddPartitionsToTxn"]),
    ("read", "kafka-python-0.9-none.pcap", []),
    ("read", "librdkafka-produce-consume-zstd.pcap", ["--errors"]),
    ("stats", "librdkafka-produce-consume-gzip.pcap", []),
    ("stats", "kafka-python-0.10.0-gzip.pcap", []),
    ("stats", "librdkafka-txn.pcap", []),
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
