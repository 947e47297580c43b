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


def is_tls_capture(p: Path) -> bool:
    """A TLS capture needs its key log (``NAME.keys``), or carries it (``NAME-dsb.pcapng``)."""
    return p.with_suffix(".keys").exists() or p.name.endswith("-dsb.pcapng")


def project_captures() -> list[Path]:
    """The clear-text captures (the TLS ones are tests/captures/test_tls.py's)."""
    if not CAPTURES.is_dir():
        return []
    return sorted(p for p in CAPTURES.glob("*.pcap*") if not is_tls_capture(p))


def tls_captures() -> list[Path]:
    return sorted(p for p in CAPTURES.glob("*.pcap*") if is_tls_capture(p)) if CAPTURES.is_dir() else []


@pytest.fixture
def tmp(tmp_path):
    return tmp_path


def pytest_report_header(config):
    return (
        f"public captures: {len(public_captures())} ({PUBLIC}), "
        f"project captures: {len(project_captures())}, root={os.geteuid() == 0}"
    )


def known_malformed(api_key, kind: str, body_error_code) -> str | None:
    """Bytes on the wire that really are malformed, by name (issue: 'except bytes that really are
    malformed, which the test names'). Returns why, or None.

    * librdkafka's mock cluster answers an ApiVersions request it does not support with
      UNSUPPORTED_VERSION (35) in a layout that is neither v0 nor the requested version (the
      ApiKeys array count is one short and the response ends 2 bytes early).
    """
    if api_key == 18 and kind == "response" and body_error_code == 35:
        return "librdkafka mock: malformed ApiVersions UNSUPPORTED_VERSION answer"
    return None
