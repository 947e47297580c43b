"""Compiling any text raises nothing but FilterError, and what compiles evaluates without raising
(random strings, and random soups of the grammar's own tokens)."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_filter_language import _produce_bodies, make_ex

from analyzer.filter import FilterError, compile_filter

_req, _resp = _produce_bodies()
EXCHANGES = [
    make_ex(req_body=_req, resp_body=_resp, errors=[6]),
    make_ex(answered=False, client_id=None, topics={}),
    make_ex(api=1, client=("2001:db8::5", 1), broker=("::1", 9092)),
]

# fmt: off
TOKENS = [
    "api", "version", "corr", "client_id", "client", "broker", "conn", "latency", "latency_ms", "error",
    "topic", "partition", "request_bytes", "response_bytes", "issue", "severity", "software", "group",
    "unanswered", "records", "records.codec", "records.count", "records.key", "records.headers.key",
    "produce.acks", "produce.request.acks", "produce.responses.partition_responses.error_code",
    "throttle_time_ms", "error_code", "metadata.topics.name", "nosuch", "produce.nosuch",
    "==", "!=", "<", "<=", ">", ">=", "contains", "matches", "in", "{", "}", ",", "(", ")",
    "and", "or", "not", "&&", "||", "!", "all", "true", "false",
    "Produce", "fetch", "NOT_LEADER_OR_FOLLOWER", "warning", "gzip", "42", "-1", "0x1f", "1.5", "50ms",
    "2s", "250us", "10.0.0.5", "10.0.0.5:9092", "10.0.0.0/8", "[::1]", "[::1]:9092", '"orders"',
    '"(("', '"^o.*s$"', '"a\\"b"', '"\\x41"', "=", "&", "|", "[", "]", "$", '"', "\\", ".", "1.", "-",
]
# fmt: on


def _check(text: str) -> None:
    try:
        f = compile_filter(text)
    except FilterError as e:
        assert 0 <= e.position <= len(text) + 1
        assert e.end > e.position
        e.caret(text)
        return
    for ex in EXCHANGES:
        assert f(ex) in (True, False)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=60))
def test_random_text_only_raises_filter_error(text):
    _check(text)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet='abcdefgilmnoprstuvxy_.0123456789 =!<>&|(){}[]",:/\\-', max_size=50))
def test_grammar_alphabet_only_raises_filter_error(text):
    _check(text)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TOKENS), max_size=12), st.sampled_from([" ", ""]))
def test_token_soup_only_raises_filter_error(tokens, sep):
    _check(sep.join(tokens) if sep else " ".join(tokens))
