"""The generic decoder: special cases of the protocol, tagged fields, faults with offsets, and
that no byte string can make it raise or hang."""

import gc
import struct
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.dissect.decoder import message_plan
from analyzer.dissect.message import Options, decode_request, decode_response, decode_sasl_token
from analyzer.dissect.protocol_table import MESSAGES
from analyzer.model import Frame, Severity
from tests.helpers.packets import api_versions_request, cstr, uvarint


def frame(payload: bytes, kind="request") -> Frame:
    return Frame(1, 0, 0, len(payload), payload, 0.0, 0.0, (1,), kind)


def test_request_header_v2_client_id_is_not_compact():
    p = api_versions_request(7, client_id="my-client")[4:]
    m = decode_request(frame(p))
    assert (m.api_key, m.api_version, m.correlation_id, m.client_id) == (18, 3, 7, "my-client")
    assert m.body.get("client_software_name") == "kafka-analyzer-test"
    assert not m.issues


def test_unknown_tagged_fields_are_kept_with_their_tag():
    body = cstr("sw") + cstr("1") + uvarint(2) + uvarint(9) + uvarint(3) + b"abc" + uvarint(12) + uvarint(0)
    p = struct.pack(">hhih", 18, 3, 1, 1) + b"c" + b"\x00" + body
    m = decode_request(frame(p))
    assert not m.issues
    tags = [(f.name, f.value, f.offset, f.length) for f in m.body.children if f.type == "unknown_tagged"]
    start = len(p) - 7  # after the tagged-field count
    assert tags == [("tag_9", b"abc", start, 5), ("tag_12", b"", start + 5, 2)]


def test_known_tagged_field_decoded_by_name():
    # ApiVersions response v3: tag 0 SupportedFeatures, tag 1 FinalizedFeaturesEpoch
    body = struct.pack(">h", 0) + uvarint(1) + struct.pack(">i", 0)
    tagged = uvarint(1) + uvarint(1) + uvarint(8) + struct.pack(">q", 42)
    p = struct.pack(">i", 5) + body + tagged
    m = decode_response(frame(p, "response"), 18, 3)
    assert not m.issues
    assert m.body.get("finalized_features_epoch") == 42


def test_api_versions_unsupported_version_answer_is_decoded_as_v0():
    # a v4 request answered in v0: error 35 UNSUPPORTED_VERSION and the broker's versions
    body = struct.pack(">hi", 35, 1) + struct.pack(">hhh", 18, 0, 3)
    p = struct.pack(">i", 9) + body
    m = decode_response(frame(p, "response"), 18, 4)
    assert m.api_version == 0 and not m.issues
    err = m.body.child("error_code")
    assert err.value == 35 and err.display == "UNSUPPORTED_VERSION"


def test_truncated_message_keeps_what_was_decoded_and_says_where():
    p = api_versions_request(7, client_id="my-client")[4:]
    m = decode_request(frame(p[:-6]))
    assert m.client_id == "my-client"
    (issue,) = m.issues
    assert issue.severity == Severity.ERROR and issue.code == "decode.truncated"
    assert issue.offset == 20 and issue.where == "api_versions_request.client_software_name"


def test_hostile_array_count_costs_nothing():
    # Metadata v1 request claiming 2^31-1 topics
    p = struct.pack(">hhih", 3, 1, 1, 0) + struct.pack(">i", 0x7FFFFFFF)
    t = time.perf_counter()
    m = decode_request(frame(p))
    assert time.perf_counter() - t < 0.01
    assert [i.code for i in m.issues] == ["decode.bad_count"]


def test_unknown_api_key_and_version():
    m = decode_request(frame(struct.pack(">hhih", 999, 0, 1, 0)))
    assert m.body is None and [i.code for i in m.issues] == ["decode.unknown_api"]
    m = decode_request(frame(struct.pack(">hhih", 3, 99, 1, 0)))
    assert m.body is None and [i.code for i in m.issues] == ["decode.unsupported_version"]


def test_sasl_plain_password_is_masked_unless_asked():
    tok = b"\x00alice\x00s3cret"
    m = decode_sasl_token(frame(tok), "PLAIN")
    f = m.body.children[0]
    assert b"s3cret" not in f.value and "password=********" in f.display
    m = decode_sasl_token(frame(tok), "PLAIN", Options(show_secrets=True))
    assert m.body.children[0].value == tok


def test_sasl_authenticate_scram_proof_is_masked():
    final = b"c=biws,r=abcdef,p=SECRETPROOF=="
    p = struct.pack(">hhih", 36, 1, 5, 1) + b"c" + struct.pack(">i", len(final)) + final
    m = decode_request(frame(p))
    f = m.body.child("auth_bytes")
    assert b"SECRETPROOF" not in f.value and f.value.endswith(b"p=********")


def test_consumer_protocol_subscription_inside_join_group():
    sub = (
        struct.pack(">h", 1)
        + struct.pack(">i", 2)
        + struct.pack(">h", 1)
        + b"a"
        + struct.pack(">h", 1)
        + b"b"
    )
    sub += struct.pack(">i", -1) + struct.pack(">i", 0)  # user data null, owned partitions []
    # JoinGroup v1 request: group_id, session_timeout, rebalance_timeout, member_id, protocol_type, protocols
    body = (
        struct.pack(">h", 1)
        + b"g"
        + struct.pack(">ii", 10000, 30000)
        + struct.pack(">h", 0)
        + struct.pack(">h", 8)
        + b"consumer"
        + struct.pack(">i", 1)
        + struct.pack(">h", 5)
        + b"range"
        + struct.pack(">i", len(sub))
        + sub
    )
    p = struct.pack(">hhih", 11, 1, 3, 1) + b"c" + body
    m = decode_request(frame(p))
    assert not m.issues
    md = m.body.child("protocols").children[0].child("metadata")
    assert md.display == "ConsumerProtocolSubscription"
    decoded = md.children[1]
    assert [t.value for t in decoded.child("topics").children] == ["a", "b"]
    assert md.children[0].offset == md.offset + 4  # after the bytes length


def all_plans():
    for (key, kind), segments in MESSAGES.items():
        for lo, hi, _flex, _fields in segments:
            for v in range(lo, hi + 1):
                yield key, kind, v


PAIRS = sorted(set(all_plans()))


def test_every_version_in_the_table_compiles():
    assert len(PAIRS) > 700
    for key, kind, v in PAIRS:
        assert message_plan(key, kind, v) is not None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PAIRS), st.binary(max_size=300))
def test_random_bytes_never_raise_and_finish_fast(pair, data):
    key, kind, v = pair
    # CPU time, the collector off: a loaded machine's waits and a full collection of the whole
    # suite's heap (0.5 s seen in .ci/run) are not the decoder's
    gc.disable()
    try:
        t = time.process_time()
        if kind == "request":
            m = decode_request(frame(struct.pack(">hhih", key, v, 1, 0) + data))
        else:
            m = decode_response(frame(struct.pack(">i", 1) + data, "response"), key, v)
        assert time.process_time() - t < 0.5
    finally:
        gc.enable()
    for i in m.issues:
        assert i.offset is None or 0 <= i.offset <= len(data) + 10


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=0, max_size=200))
def test_random_frames_never_raise(data):
    decode_request(frame(data))
    decode_response(frame(data, "response"), None, None)
    decode_sasl_token(frame(data), None)


def test_an_error_code_kafka_does_not_define_is_flagged():
    # Fetch v4 response: throttle, topics [1: name, partitions [1: index, error 5120, ...]]
    part = struct.pack(">ihqqi", 0, 5120, 0, 0, 0) + struct.pack(">i", -1)  # no aborted txns
    body = (
        struct.pack(">i", 0)
        + struct.pack(">i", 1)
        + struct.pack(">h", 1)
        + b"t"
        + struct.pack(">i", 1)
        + part
    )
    body += struct.pack(">i", -1)  # records null
    m = decode_response(frame(struct.pack(">i", 1) + body, "response"), 1, 4)
    assert m.errors == [5120]
    (issue,) = [i for i in m.issues if i.code == "decode.unknown_error_code"]
    assert issue.severity == Severity.WARNING and "5120" in issue.message


def test_librdkafka_mock_api_versions_fallback_is_a_named_quirk():
    """The mock answers an ApiVersions v3 it rejects with one-byte count N (not N+1) and no
    tagged fields: decoded as meant, one quirk warning, no error."""
    from analyzer.dissect.message import decode_response
    from analyzer.model import Frame, Severity

    body = struct.pack(">ihB", 1, 35, 1) + struct.pack(">hhh", 18, 0, 2) + struct.pack(">i", 0)
    frame = Frame(1, 1, 0, len(body), body, 0.0, 0.0, (1,), "response")
    m = decode_response(frame, 18, 3)
    assert [(i.code, i.severity) for i in m.issues] == [("quirk.mock_api_versions", Severity.WARNING)]
    keys = m.body.child("api_keys").children
    assert [(k.get("api_key"), k.get("min_version"), k.get("max_version")) for k in keys] == [(18, 0, 2)]
    assert m.errors == [35] and m.body.get("throttle_time_ms") == 0
    # one byte more: not the mock's shape, so not recognised as it
    m = decode_response(Frame(1, 1, 0, len(body) + 1, body + b"\0", 0.0, 0.0, (1,), "response"), 18, 3)
    assert "quirk.mock_api_versions" not in [i.code for i in m.issues]


def test_scram_server_signature_is_masked_in_the_value_and_the_hex():
    from analyzer.dissect.message import decode_response, masked_payload

    final = b"v=SERVERSIGNATURE0123456789="
    p = struct.pack(">ihh", 5, 0, -1) + struct.pack(">i", len(final)) + final + struct.pack(">q", 0)
    m = decode_response(frame(p), 36, 1)
    f = m.body.child("auth_bytes")
    assert f.value == b"v=********" and f.display == "SCRAM server-final-message (signature masked)"
    hexed = masked_payload(m)
    assert b"SERVERSIGNATURE" not in hexed and len(hexed) == len(p) and hexed.endswith(b"*" * 26 + bytes(8))
    shown = decode_response(frame(p), 36, 1, Options(show_secrets=True))
    assert shown.body.child("auth_bytes").value == final and masked_payload(shown, True) == p


def test_oauthbearer_token_and_unknown_mechanisms_are_masked():
    from analyzer.dissect.message import masked_payload

    tok = b"n,,\x01auth=Bearer eyJTOKEN.x.y\x01\x01"
    m = decode_sasl_token(frame(tok), "OAUTHBEARER")
    f = m.body.children[0]
    assert b"eyJTOKEN" not in f.value and "token masked" in f.display
    assert b"eyJTOKEN" not in masked_payload(m)
    gss = decode_sasl_token(frame(b"\x60\x82KERBEROS-TICKET"), "GSSAPI")
    assert b"KERBEROS" not in gss.body.children[0].value and b"KERBEROS" not in masked_payload(gss)


def _metadata_v0_response(topics: int, replicas: int) -> bytes:
    brokers = struct.pack(">iih", 1, 1, 1) + b"b" + struct.pack(">i", 9092)
    part = struct.pack(">hiii", 0, 0, 1, replicas) + struct.pack(f">{replicas}i", *range(replicas))
    part += struct.pack(">i", 0)
    topic = struct.pack(">hh", 0, 1) + b"t" + struct.pack(">i", 1) + part
    return struct.pack(">i", 7) + brokers + struct.pack(">i", topics) + topic * topics


def test_element_budget_stops_decoding_with_one_issue():
    from analyzer.dissect.codecs import Limits

    m = decode_response(frame(_metadata_v0_response(50, 2)), 3, 0, Options(limits=Limits(max_elements=10)))
    (issue,) = [i for i in m.issues if i.code == "decode.element_limit"]
    assert "max_elements" in issue.message and "--max-elements" in issue.message
    topics = m.body.child("topics")
    assert topics.value == 50 and len(topics.children) <= 10


def test_scalar_arrays_are_compact_and_show_the_same_fields():
    from analyzer.dissect.decoder import ScalarArrayField
    from analyzer.export.jsonout import message_json

    m = decode_response(frame(_metadata_v0_response(1, 5)), 3, 0)
    part = m.body.child("topics").children[0].child("partitions").children[0]
    reps = part.child("replica_nodes")
    assert type(reps) is ScalarArrayField and reps.values == (0, 1, 2, 3, 4)
    kids = reps.children  # built on demand, as the per-element decoding made them
    assert [(k.name, k.type, k.value, k.length) for k in kids] == [("int32", "int32", i, 4) for i in range(5)]
    assert kids[0].offset == reps.offset + 4 and kids[4].offset == reps.offset + 4 + 16
    j = message_json(m)
    assert j["body"]["topics"][0]["partitions"][0]["replica_nodes"] == [0, 1, 2, 3, 4]


def test_a_scalar_array_past_the_element_budget_keeps_the_budget_and_says_so_once():
    """A huge []int32 costs at most the budget: the values past it are cut (the count on the
    wire stays), one issue names the limit, and the fields after the array are still decoded."""
    from analyzer.dissect.codecs import Limits

    m = decode_response(frame(_metadata_v0_response(1, 40)), 3, 0, Options(limits=Limits(max_elements=25)))
    assert [i.code for i in m.issues].count("decode.element_limit") == 1
    part = m.body.child("topics").children[0].child("partitions").children[0]
    reps = part.child("replica_nodes")
    assert reps.value == 40 and reps.values == tuple(range(22))  # 25 - broker, topic, partition
    assert len(reps.children) == 22 and reps.length == 4 + 40 * 4
    assert part.child("isr_nodes") is not None  # decoded after the cut array
