"""The project's captures hold exactly the records their manifest says were produced and
consumed, with every CRC valid (except the malformed bytes named in tests/helpers/captures.py)."""

import json
from collections import Counter

import pytest

from analyzer.dissect.constants import ApiKey
from analyzer.dissect.message import Options
from analyzer.events import CaptureIssue, ConnIssue
from analyzer.model import Exchange, Severity
from analyzer.pipeline import Analysis
from analyzer.session.records import iter_records
from tests.helpers.captures import CAPTURES, known_malformed

MANIFEST = (
    json.loads((CAPTURES / "manifest.json").read_text()) if (CAPTURES / "manifest.json").exists() else []
)


def rec_key(topic, key, value, headers):
    return (topic, _hashable(key), _hashable(value), tuple((k, v) for k, v in headers))


def _hashable(v):
    # bytes that are not UTF-8 (coordinator records) are {"hex": ...} in the manifest
    return ("hex", v["hex"]) if isinstance(v, dict) else v


def text(b):
    if b is None:
        return None
    try:
        return b.decode()
    except UnicodeDecodeError:
        return {"hex": b.hex()}


def analyse(path, keylog=None):
    a = Analysis(path, Options(records_bodies=True), tls_keylog=keylog)
    produced, fetched, errors, crc = Counter(), Counter(), [], []
    for ev in a.events():
        if type(ev) in (ConnIssue, CaptureIssue):
            if ev.issue.severity == Severity.ERROR:
                errors.append(ev.issue)
            continue
        if not isinstance(ev, Exchange):
            continue
        if ev.api_key == ApiKey.PRODUCE and ev.request is not None:
            for r in iter_records(ev.request, a.knowledge.topic_ids):
                produced[
                    rec_key(r.topic, text(r.key), text(r.value), [(k, text(v)) for k, v in r.headers])
                ] += 1
        if ev.api_key == ApiKey.FETCH and ev.response is not None:
            for r in iter_records(ev.response, a.knowledge.topic_ids):
                if not r.control:
                    fetched[
                        rec_key(r.topic, text(r.key), text(r.value), [(k, text(v)) for k, v in r.headers])
                    ] += 1
        for m in (ev.request, ev.response):
            if m is None:
                continue
            named = known_malformed(ev.api_key, m.kind, m.body.get("error_code") if m.body else None)
            for i in m.issues:
                if i.code == "records.crc_mismatch":
                    crc.append((ev.api_key, m.kind, i))
                elif i.severity == Severity.ERROR and not named:
                    errors.append(i)
    return produced, fetched, errors, crc


@pytest.mark.parametrize("entry", MANIFEST, ids=lambda e: e["file"])
def test_records_in_capture_are_exactly_the_manifest(entry):
    keylog = (entry.get("tls") or {}).get("keylog")
    produced, fetched, errors, crc = analyse(CAPTURES / entry["file"], keylog and CAPTURES / keylog)
    want_p = {rec_key(r["topic"], r["key"], r["value"], r.get("headers") or []) for r in entry["produced"]}
    assert set(produced) == want_p
    want_c = {rec_key(r["topic"], r["key"], r["value"], r.get("headers") or []) for r in entry["consumed"]}
    assert set(fetched) == want_c
    assert not errors
    # the only bad CRCs: the librdkafka mock writes transaction markers with CRC 0
    for api_key, kind, issue in crc:
        assert (api_key, kind) == (ApiKey.FETCH, "response") and "stored 0x00000000" in issue.message, issue
    if "txn" not in entry["file"]:
        assert not crc


def test_manifest_covers_every_codec_and_magic():
    seen = {(e["client"], e["codec"]) for e in MANIFEST}
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        assert ("librdkafka", codec) in seen
    assert {e["api_version"] for e in MANIFEST if e["client"] == "kafka-python"} >= {
        "0.8.2",
        "0.9",
        "0.10.0",
        "0.11",
    }
