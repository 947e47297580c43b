"""Compiling any text raises nothing but FilterError, and what compiles evaluates without raising
(random strings, and random soups of the grammar's own tokens)."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.filter import FilterError, compile_filter
from tests.helpers.exchanges import make_ex, produce_bodies

_req, _resp = produce_bodies()
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


def test_deep_nesting_and_long_chains():
    e = None
    try:
        compile_filter("(" * 500 + "api" + ")" * 500)
    except FilterError as exc:
        e = exc
    assert e is not None and "nested too deeply" in e.message and e.position == 64
    try:
        compile_filter("not " * 300 + "api")
    except FilterError as exc:
        assert "nested too deeply" in exc.message
    ok = compile_filter("(" * 60 + "api == Produce" + ")" * 60)
    assert ok(EXCHANGES[0])
    long_or = compile_filter(" or ".join(f"corr == {i}" for i in range(5000)))
    assert long_or(EXCHANGES[0])  # corr 7
    long_and = compile_filter(" and ".join(["latency > 1ms"] * 5000 + ["api == Fetch"]))
    assert not long_and(EXCHANGES[0])
    mixed = compile_filter(" or ".join(["api == Fetch and corr == 1"] * 3000 + ["not api == Fetch"]))
    assert mixed(EXCHANGES[0])
