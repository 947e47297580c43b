"""Real traffic against Tansu (the ``broker`` entries of captures/manifest.json, tools/gen/tansu.py):
`check` with no options passes (issue #12's done-when: no protocol violation but named peer
quirks), and each of Tansu's deviations the manifest's notes name is found, named after Tansu,
where it is on the wire."""

import io
import json
from contextlib import redirect_stderr, redirect_stdout

import pytest

from analyzer import cli
from analyzer.dissect.constants import ApiKey
from analyzer.dissect.message import Options
from analyzer.events import ConnIssue
from analyzer.model import Exchange, Severity
from analyzer.pipeline import Analysis
from tests.helpers.captures import CAPTURES

MANIFEST = (
    json.loads((CAPTURES / "manifest.json").read_text()) if (CAPTURES / "manifest.json").exists() else []
)
TANSU = [e for e in MANIFEST if (e.get("broker") or "").startswith("tansu ")]

pytestmark = pytest.mark.skipif(not TANSU, reason="no Tansu captures in captures/manifest.json")


def quirks(name: str) -> list:
    """Every quirk.* issue of a capture, on exchanges and connections."""
    out = []
    for ev in Analysis(CAPTURES / name, Options()).events():
        if isinstance(ev, Exchange):
            out += [(ev, i) for i in ev.all_issues() if i.code.startswith("quirk.")]
        elif type(ev) is ConnIssue and ev.issue.code.startswith("quirk."):
            out.append((None, ev.issue))
    return out


def test_check_passes_with_the_quirks_named():
    out, err = io.StringIO(), io.StringIO()
    files = [str(CAPTURES / e["file"]) for e in TANSU]
    with redirect_stdout(out), redirect_stderr(err):
        rc = cli.main(["check", *files, "--format", "json"])
    doc = json.loads(out.getvalue())
    # the one failure: Tansu refuses kafka-python 0.10.1's records with an error Produce v2 cannot
    # carry (quirk.error_too_new): they are lost, which kafka.producer-lost says
    failed = [r for r in doc["rules"] if r["status"] == "failed"]
    assert rc == 1 and [r["id"] for r in failed] == ["kafka.producer-lost"], failed
    [lost] = failed[0]["findings"]
    assert "tansu-kafka-python-0.10.1-none" in lost["capture"] and "UNKNOWN_PRODUCER_ID" in lost["message"]
    r = next(r for r in doc["rules"] if r["id"] == "kafka.peer-quirks")
    codes = sorted(f["message"].split(":", 1)[0] for f in r["findings"])
    assert codes == [
        "quirk.acks0_answered",
        "quirk.error_too_new",
        "quirk.error_too_new",
        "quirk.error_too_new",  # sarama's JoinGroup v1
        "quirk.fetch_magic_too_new",
    ]


def test_acks0_produce_answered():
    [(ex, i)] = quirks("tansu-librdkafka-acks0.pcap")
    assert ex is None and i.code == "quirk.acks0_answered" and i.severity == Severity.WARNING
    assert i.message.startswith("Tansu answered 3 Produce requests sent with acks=0")


def test_unknown_producer_id_to_produce_v2():
    [(ex, i)] = quirks("tansu-kafka-python-0.10.1-none.pcap")
    assert (ex.api_key, ex.api_version) == (ApiKey.PRODUCE, 2)
    assert i.code == "quirk.error_too_new" and i.severity == Severity.WARNING
    assert i.message.startswith("Tansu answered Produce v2 with UNKNOWN_PRODUCER_ID, which KIP-98")
    # the first partition's error_code (corr, topics, name "kp-none", partitions, index)
    assert i.offset == 4 + 4 + 2 + 7 + 4 + 4
    assert (
        ex.response.body.child("responses")
        .children[0]
        .child("partition_responses")
        .children[0]
        .get("error_code")
        == 59
    )


def test_member_id_required_to_join_group_v1_and_magic_2_to_fetch_v3():
    found = quirks("tansu-kafka-python-0.10.1-group.pcap")
    assert [(ex.api_key, ex.api_version, i.code) for ex, i in found] == [
        (ApiKey.JOIN_GROUP, 1, "quirk.error_too_new"),
        (ApiKey.FETCH, 3, "quirk.fetch_magic_too_new"),
    ]
    (join, too_new), (fetch, magic) = found
    assert too_new.message.startswith("Tansu answered JoinGroup v1 with MEMBER_ID_REQUIRED")
    assert too_new.offset == 4  # the error_code right after the correlation id
    assert magic.severity == Severity.WARNING
    assert magic.message.startswith("Tansu answered Fetch v3 with 3 record batches of magic 2")
    payload = fetch.response.frame.payload
    assert payload[magic.offset] == 2  # the offset is the first batch's magic byte


def test_member_id_required_to_sarama_join_group_v1():
    # sarama 1.22 does not know the code and gives the group up; its records are read by partition
    [(join, i)] = quirks("tansu-sarama-zstd.pcap")
    assert (join.api_key, join.api_version) == (ApiKey.JOIN_GROUP, 1)
    assert i.code == "quirk.error_too_new" and i.severity == Severity.WARNING
    assert i.message.startswith("Tansu answered JoinGroup v1 with MEMBER_ID_REQUIRED")
    assert i.offset == 4 and join.response.body.get("error_code") == 79


def test_the_other_tansu_captures_have_no_quirk():
    for name in (
        "tansu-librdkafka-produce-consume-zstd.pcap",
        "tansu-kafka-python-3.9-gzip.pcap",
        "tansu-aiokafka-gzip.pcap",
        "tansu-kafkajs-gzip.pcap",
    ):
        assert quirks(name) == [], name
