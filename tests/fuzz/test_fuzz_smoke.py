"""A few seconds of bench/fuzz.py in the suite: every decoder entry point (capture readers,
reassembly, framing, message decoder, records and codecs, TLS layer, filter compiler) takes a
few hundred mutations of real capture bytes without an exception, a hang or a finding. The long
runs (millions of executions per entry point) are in bench/RESULTS.md."""

from __future__ import annotations

import importlib.util

import pytest

from tests.helpers.captures import ROOT

_spec = importlib.util.spec_from_file_location("kafka_analyzer_fuzz", ROOT / "bench" / "fuzz.py")
fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz)


@pytest.mark.parametrize("entry", fuzz.ENTRIES)
def test_fuzz_smoke(entry, tmp_path):
    r = fuzz.fuzz(entry, 300, 5.0, 1, tmp_path, timeout=10.0, mem_mb=0, max_captures=4)
    assert r["executions"] > 0 and r["seeds"] > 0
    assert r["findings"] == [], r["findings"]
