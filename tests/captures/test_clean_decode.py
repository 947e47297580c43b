"""Every Kafka frame of the public and project captures decodes without error-severity issues,
except bytes that really are malformed, which tests.helpers.captures.known_malformed names."""

import pytest

from analyzer.dissect.message import Options
from analyzer.events import CaptureIssue, ConnIssue
from analyzer.model import Exchange, Severity
from analyzer.pipeline import Analysis
from tests.helpers.captures import known_malformed, project_captures, public_captures


@pytest.mark.parametrize("path", public_captures() + project_captures(), ids=lambda p: p.name)
def test_no_error_issues(path):
    frames = 0
    bad = []
    for ev in Analysis(path, Options(records_bodies=True)).events():
        if type(ev) in (ConnIssue, CaptureIssue):
            assert ev.issue.severity < Severity.ERROR, ev.issue
        if not isinstance(ev, Exchange):
            continue
        for m in (ev.request, ev.response):
            if m is None:
                continue
            frames += 1
            err = m.body.get("error_code") if m.body is not None else None
            if known_malformed(ev.api_key, m.kind, err):
                continue
            for i in m.issues:
                if i.severity == Severity.ERROR:
                    # the librdkafka mock writes transaction markers with CRC 0
                    if (
                        i.code == "records.crc_mismatch"
                        and "stored 0x00000000" in i.message
                        and "txn" in path.name
                    ):
                        continue
                    bad.append((ev.api_key, m.api_version, m.kind, i))
    assert frames > 0
    assert not bad
