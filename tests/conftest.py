import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PUBLIC = ROOT.parent / "shared" / "captures" / "public"
CAPTURES = ROOT / "captures"
sys.path.insert(0, str(Path(__file__).resolve().parent))


def public_captures() -> list[Path]:
    if not PUBLIC.is_dir():
        return []
    return sorted(p for p in PUBLIC.iterdir() if p.suffix in (".pcap", ".pcapng"))


def project_captures() -> list[Path]:
    return sorted(p for p in CAPTURES.glob("*.pcap*")) if CAPTURES.is_dir() else []


@pytest.fixture
def tmp(tmp_path):
    return tmp_path


def pytest_report_header(config):
    return (
        f"public captures: {len(public_captures())} ({PUBLIC}), "
        f"project captures: {len(project_captures())}, root={os.geteuid() == 0}"
    )
