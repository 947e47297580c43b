"""The core (model, capture files, reassembly, dissect, session, pipeline) never imports the
front ends' libraries: checked in a fresh interpreter."""

import subprocess
import sys

from conftest import ROOT

CORE = [
    "analyzer.model",
    "analyzer.capture.files",
    "analyzer.reassembly.packet",
    "analyzer.reassembly.tcp",
    "analyzer.dissect.framing",
    "analyzer.dissect.decoder",
    "analyzer.dissect.message",
    "analyzer.dissect.records",
    "analyzer.session.pairing",
    "analyzer.session.knowledge",
    "analyzer.session.stats",
    "analyzer.session.records",
    "analyzer.session.report",
    "analyzer.pipeline",
    "analyzer.export.writer",
    "analyzer.filter",
]
FORBIDDEN = ("scapy", "textual", "rich", "pyspark", "analyzer.cli", "analyzer.tui")


def test_core_imports_no_front_end_library():
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in CORE)
        + "from analyzer.capture.files import CaptureFile\n"
        + "from analyzer.pipeline import analyze_file\n"
        + f"list(analyze_file(CaptureFile({str(ROOT / 'captures' / 'aiokafka-gzip.pcap')!r})))\n"
        + f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r} or m in {FORBIDDEN!r})\n"
        + "print(','.join(bad))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ""
