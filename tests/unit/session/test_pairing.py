"""Pairing by correlation id: pipelining, acks=0, missing sides, raw SASL after SaslHandshake v0."""

import struct

from analyzer.model import Exchange
from analyzer.pipeline import Analysis
from tests.helpers.packets import (
    Conversation,
    api_versions_request,
    api_versions_response,
    metadata_request,
    write_pcap,
)


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def s16(s: str) -> bytes:
    return struct.pack(">h", len(s)) + s.encode()


def exchanges(tmp_path, conv) -> list[Exchange]:
    p = tmp_path / "c.pcap"
    write_pcap(p, [(100.0 + i * 0.001, bytes(x)) for i, x in enumerate(conv.pkts)])
    return [e for e in Analysis(p).events() if isinstance(e, Exchange)]


def test_pipelined_requests_pair_in_order_with_latency(tmp_path):
    c = Conversation().handshake()
    c.send(0, api_versions_request(1) + api_versions_request(2) + metadata_request(3, ["a", "b"]))
    c.send(1, api_versions_response(1) + api_versions_response(2))
    meta = struct.pack(">iiii", 3, 0, 1, 0)  # corr, brokers [], controller_id, topics []
    c.send(1, frame(meta))
    c.close()
    ex = exchanges(tmp_path, c)
    assert [(e.api_key, e.correlation_id) for e in ex] == [(18, 1), (18, 2), (3, 3)]
    assert all(e.request and e.response and e.latency > 0 for e in ex)
    assert ex[2].topics == {"a": [], "b": []}
    assert all(not e.all_issues() for e in ex)


def produce_v3(corr: int, acks: int) -> bytes:
    body = struct.pack(">hhi", -1, acks, 1000) + struct.pack(">i", 1) + s16("t") + struct.pack(">i", 1)
    body += struct.pack(">ii", 0, -1)  # partition 0, records null
    return frame(struct.pack(">hhih", 0, 3, corr, 1) + b"c" + body)


def test_acks0_expects_no_response_and_a_lost_response_is_reported(tmp_path):
    c = Conversation().handshake()
    c.send(0, produce_v3(1, 0) + api_versions_request(2) + api_versions_request(3))
    c.send(1, api_versions_response(3))  # the answer to 2 was not captured
    c.close()
    ex = exchanges(tmp_path, c)
    by = {e.correlation_id: e for e in ex}
    assert by[1].response is None and [i.code for i in by[1].issues] == ["pairing.acks0"]
    assert by[2].response is None and [i.code for i in by[2].issues] == ["pairing.no_response"]
    assert by[3].response is not None


def test_response_without_request(tmp_path):
    c = Conversation()  # mid-stream: no handshake
    c.send(0, api_versions_request(8))
    c.send(1, api_versions_response(7) + api_versions_response(8))
    ex = exchanges(tmp_path, c)
    orphan = [e for e in ex if e.request is None]
    assert [e.correlation_id for e in orphan] == [7]
    assert [i.code for i in orphan[0].issues] == ["pairing.no_request"]


def test_raw_sasl_after_handshake_v0_is_paired_and_masked(tmp_path):
    c = Conversation().handshake()
    hs_req = frame(struct.pack(">hhih", 17, 0, 1, 1) + b"c" + s16("PLAIN"))
    hs_resp = frame(struct.pack(">ih", 1, 0) + struct.pack(">i", 1) + s16("PLAIN"))
    token = frame(b"\x00alice\x00s3cret-pw")
    c.send(0, hs_req)
    c.send(1, hs_resp)
    c.send(0, token)
    c.send(1, frame(b""))  # the broker's empty answer: authenticated
    c.send(0, api_versions_request(2))
    c.send(1, api_versions_response(2))
    c.close()
    ex = exchanges(tmp_path, c)
    assert [e.api_key for e in ex] == [17, None, 18]
    sasl = ex[1]
    tok = sasl.request.body.children[0]
    assert b"s3cret" not in tok.value and "password=********" in tok.display
    assert sasl.response is not None and not sasl.all_issues()
    assert ex[2].request.client_id == "test-client" and not ex[2].all_issues()


def test_request_frame_too_short_for_a_header_is_shown_not_dropped(tmp_path):
    c = Conversation().handshake()
    c.send(0, api_versions_request(1) + struct.pack(">i", 0) + api_versions_request(2))
    c.send(1, api_versions_response(1) + api_versions_response(2))
    c.close()
    ex = exchanges(tmp_path, c)
    # the short frame's exchange comes at once, the others with their responses
    assert [(e.correlation_id, e.request is not None, e.response is not None) for e in ex] == [
        (None, True, False),
        (1, True, True),
        (2, True, True),
    ]
    assert [i.code for i in ex[0].all_issues()] == ["decode.truncated"]
