"""The shape of the code: the core (model, events, capture files, reassembly, dissect, session,
pipeline) never imports the front ends' libraries (checked in a fresh interpreter and by the
import-linter contracts in pyproject.toml), and ruff finds nothing."""

import subprocess
import sys
from pathlib import Path

from conftest import ROOT

CORE = [
    "analyzer.model",
    "analyzer.issues",
    "analyzer.netconst",
    "analyzer.dissect.constants",
    "analyzer.capture.files",
    "analyzer.capture.ring",
    "analyzer.capture.pcapwriter",
    "analyzer.reassembly.packet",
    "analyzer.reassembly.tcp",
    "analyzer.tls.layer",
    "analyzer.dissect.framing",
    "analyzer.dissect.decoder",
    "analyzer.dissect.message",
    "analyzer.dissect.records",
    "analyzer.session.pairing",
    "analyzer.session.knowledge",
    "analyzer.session.entities",
    "analyzer.session.stats",
    "analyzer.session.records",
    "analyzer.session.report",
    "analyzer.pipeline",
    "analyzer.fanout",
    "analyzer.export.writer",
    "analyzer.filter",
]
FORBIDDEN = ("scapy", "textual", "rich", "pyspark", "analyzer.cli", "analyzer.tui")


def test_core_imports_no_front_end_library():
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in CORE)
        + "from analyzer.pipeline import Analysis\n"
        + "from analyzer.capture.ring import preload\n"
        + "preload()\n"
        + f"list(Analysis({str(ROOT / 'captures' / 'aiokafka-gzip.pcap')!r}).events())\n"
        + f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r} or m in {FORBIDDEN!r})\n"
        + "print(','.join(bad))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ""


def _tool(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def test_import_contracts():
    """import-linter: the stages are layered and the core imports no front end (pyproject.toml)."""
    r = subprocess.run([_tool("lint-imports")], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


# the core packages mypy checks (config: [tool.mypy] in pyproject.toml)
MYPY_CORE = [
    "analyzer/model.py",
    "analyzer/events.py",
    "analyzer/issues.py",
    "analyzer/netconst.py",
    "analyzer/pipeline.py",
    "analyzer/capture",
    "analyzer/reassembly",
    "analyzer/tls",
    "analyzer/dissect",
    "analyzer/session",
    "analyzer/filter",
]


def test_mypy():
    """mypy finds no type error in the core (check_untyped_defs: the bodies of untyped functions too)."""
    r = subprocess.run(
        [_tool("mypy"), "--no-incremental", *MYPY_CORE], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


def test_ruff():
    r = subprocess.run(
        [_tool("ruff"), "check", "--no-cache", "."], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert r.returncode == 0, r.stdout[-4000:]
    r = subprocess.run(
        [_tool("ruff"), "format", "--check", "--no-cache", "."],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout[-4000:]
