"""The display-filter language: tokens, literals, precedence, names, types and error positions,
evaluated on hand-built exchanges (decoded by the real decoder from real bytes where fields are
involved)."""

import pytest

from analyzer.filter import FilterError, compile_filter, quote, shorthand
from analyzer.filter.syntax import Address, BoolOp, Compare, Exists, Not, parse, tokenize
from analyzer.model import Exchange, Issue, Severity
from tests.helpers.exchanges import make_ex, produce_bodies


def m(expr: str, ex: Exchange) -> bool:
    return compile_filter(expr)(ex)


def err(expr: str) -> FilterError:
    with pytest.raises(FilterError) as info:
        compile_filter(expr)
    return info.value


# -- tokens and literals --------------------------------------------------------------------------------


def test_tokens_carry_positions():
    toks = tokenize('api == Produce && latency>5ms || !topic contains "a\\"b"')
    assert [(t.kind, t.text, t.pos) for t in toks[:4]] == [
        ("word", "api", 0),
        ("op", "==", 4),
        ("word", "Produce", 7),
        ("op", "&&", 15),
    ]
    assert toks[6].kind == "duration" and toks[6].value == 5.0
    s = [t for t in toks if t.kind == "string"][0]
    assert s.value == 'a"b' and s.pos == 49


@pytest.mark.parametrize(
    "text,kind,value",
    [
        ("42", "number", 42),
        ("-3", "number", -3),
        ("0x1f", "number", 31),
        ("1.5", "number", 1.5),
        ("2e3", "number", 2000.0),
        ("50ms", "duration", 50.0),
        ("2s", "duration", 2000.0),
        ("1.5s", "duration", 1500.0),
        ("250us", "duration", 0.25),
        ("1m", "duration", 60000.0),
    ],
)
def test_number_and_duration_literals(text, kind, value):
    t = tokenize(text)[0]
    assert (t.kind, t.value) == (kind, value)


@pytest.mark.parametrize(
    "text,net,port",
    [
        ("10.0.0.5", "10.0.0.5/32", None),
        ("10.0.0.5:9092", "10.0.0.5/32", 9092),
        ("10.0.0.0/8", "10.0.0.0/8", None),
        ("[::1]", "::1/128", None),
        ("[2001:db8::5]:9092", "2001:db8::5/128", 9092),
        ("[2001:db8::]/32", "2001:db8::/32", None),
    ],
)
def test_address_literals(text, net, port):
    t = tokenize(text)[0]
    assert t.kind == "address" and isinstance(t.value, Address)
    assert str(t.value.network) == net and t.value.port == port


def test_string_escapes():
    t = tokenize(r'"a\tb\n\\\"\x41\u00e9"')[0]
    assert t.value == 'a\tb\n\\"A\u00e9'
    assert tokenize(quote('we"ird\\\n\x01'))[0].value == 'we"ird\\\n\x01'


@pytest.mark.parametrize(
    "expr,pos,end,words",
    [
        ('topic == "abc', 9, 13, "not closed"),
        (r'topic == "a\q"', 11, 13, "unknown escape"),
        ("latency > 5xs", 10, 13, "cannot read"),
        ("client == 10.0.0.300", 10, 20, "bad address"),
        ("client == 10.0.0.5:99999", 10, 24, "bad port"),
        ("api = Produce", 4, 5, "'=='"),
        ("api == Produce & version > 3", 15, 16, "'&&'"),
        ("api == Produce $", 15, 16, "unexpected character"),
        ("(api == Produce", 15, 16, "expected ')'"),
        ("api ==", 6, 7, "expected a value"),
        ("api == Produce version", 15, 22, "unexpected 'version'"),
        ("", 0, 1, "empty"),
        ("and", 0, 3, "expected a field name"),
        ("all(api)", 7, 8, "needs a comparison"),
        ("corr in {1, 2", 13, 14, "'}'"),
    ],
)
def test_syntax_errors_have_positions(expr, pos, end, words):
    e = err(expr)
    assert (e.position, e.end) == (pos, end), e
    assert words in e.message
    caret = e.caret(expr).splitlines()[1]
    assert caret.index("^") == pos


# -- precedence -----------------------------------------------------------------------------------------


def test_precedence_not_binds_tighter_than_and_tighter_than_or():
    tree = parse("not a or b and c")
    assert isinstance(tree, BoolOp) and tree.op == "or"
    assert isinstance(tree.left, Not) and isinstance(tree.left.expr, Exists)
    assert isinstance(tree.right, BoolOp) and tree.right.op == "and"
    tree = parse("! a || b && c")
    assert isinstance(tree, BoolOp) and tree.op == "or" and isinstance(tree.left, Not)
    tree = parse("not (a or b) and c")
    assert tree.op == "and" and isinstance(tree.left, Not) and tree.left.expr.op == "or"
    c = parse("corr in {1, 2, 3,}")
    assert isinstance(c, Compare) and [v.value for v in c.values] == [1, 2, 3]


def test_precedence_evaluates_as_written():
    ex = make_ex(api=0, latency_ms=12.5, client_id="app")
    # not A or (B and C), A false -> true regardless of B, C
    assert m("not api == Fetch or version == 1 and corr == 2", ex)
    # A true, B and C false -> false
    assert not m("not api == Produce or version == 1 and corr == 7", ex)
    assert m("not api == Produce or version == 9 and corr == 7", ex)
    assert not m("not (api == Produce or version == 1) and corr == 7", ex)
    assert m("api == Fetch or api == Produce and latency > 10ms", ex)
    assert not m("(api == Fetch or api == Produce) and latency > 20ms", ex)
    assert m("not not(api==Produce)", ex) and m("NOT api == Fetch AND api == Produce", ex)


# -- exchange-level fields ------------------------------------------------------------------------------


def test_exchange_fields():
    ex = make_ex(errors=[6], issues=[Issue(Severity.WARNING, "pairing.late", "x")])
    yes = [
        "api == Produce",
        "api == produce",
        "api == PRODUCE",
        "api == 0",
        "api in {Fetch, Produce}",
        'api == "Produce"',
        "api != Fetch",
        "version >= 9",
        "version == 0x9",
        "corr == 7",
        "client_id == app",
        'client_id == "app"',
        'client_id contains "pp"',
        'client_id matches "^a.p$"',
        "client == 10.0.0.5",
        "client == 10.0.0.5:40000",
        "client == 10.0.0.0/8",
        'client == "10.0.0.5"',
        'client contains "10.0"',
        "broker == 10.0.0.7:9092",
        "broker in {10.0.0.1, 10.0.0.7}",
        "conn == 3",
        "latency > 12ms",
        "latency > 12",
        "latency_ms > 12.4",
        "latency < 0.013s",
        "latency > 12000us",
        "error",
        "error == NOT_LEADER_OR_FOLLOWER",
        "error == not_leader_or_follower",
        "error == 6",
        "error in {UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER}",
        'topic == "orders"',
        "topic == orders",
        "partition == 1",
        "all(partition < 2)",
        "request_bytes == 104",
        "response_bytes == 54",
        'issue == "pairing.late"',
        'issue contains "late"',
        "severity == warning",
        "severity >= note",
        "severity < error",
        "not unanswered",
        "unanswered == false",
    ]
    no = [
        "api == Fetch",
        "api in {Fetch, 3}",
        "version < 9",
        "client_id == App",
        "client == 10.0.0.6",
        "client == 10.0.0.5:1",
        "client == 192.168.0.0/16",
        "client == [::1]",
        "broker == 10.0.0.5",
        "latency > 13ms",
        "latency >= 1s",
        "error == UNKNOWN_TOPIC_OR_PARTITION",
        "error != NOT_LEADER_OR_FOLLOWER",
        'topic == "payments"',
        "all(partition == 0)",
        "severity == error",
        "severity > warning",
        "unanswered",
        "software",
        "group",
    ]
    for e in yes:
        assert m(e, ex), e
    for e in no:
        assert not m(e, ex), e


def test_absent_values():
    ex = make_ex(answered=False, client_id=None, topics={})
    assert m("unanswered", ex)
    assert not m("latency", ex) and not m("latency > 0", ex) and m("not latency", ex)
    assert not m("client_id", ex) and m('client_id != "x"', ex)
    assert not m("error", ex) and not m("response_bytes", ex) and m("request_bytes", ex)
    assert not m("topic", ex) and not m("all(topic == x)", ex)
    assert not m("severity", ex)


def test_ipv6_endpoints():
    ex = make_ex(client=("2001:db8::5", 50000), broker=("2001:db8::1", 9092))
    assert m("client == [2001:db8::5]", ex)
    assert m("client == [2001:db8::5]:50000", ex)
    assert m("client == [2001:db8::]/32", ex)
    assert not m("client == 10.0.0.0/8", ex)
    assert m("broker == [2001:db8::1]:9092", ex)


def test_software_from_knowledge():
    from analyzer.session.knowledge import Knowledge

    ex = make_ex()
    f = compile_filter('software contains "librdkafka"')
    assert not f(ex)
    k = Knowledge()
    k.clients["app"] = ("librdkafka", "2.3.0")
    f.knowledge = k
    assert f(ex)
    g = compile_filter('software == "librdkafka 2.3.0"')
    g.knowledge = k
    assert g(ex)


# -- decoded fields, any / all --------------------------------------------------------------------------


def test_decoded_paths_any_and_all():
    req, resp = produce_bodies()
    ex = make_ex(req_body=req, resp_body=resp)
    assert m("produce.acks == 1", ex)
    assert m("produce.request.acks == 1", ex)
    assert m("produce.response.throttle_time_ms == 0", ex)
    assert m("throttle_time_ms == 0", ex)
    assert m("acks == 1", ex)
    assert m("produce.responses.partition_responses.error_code == 6", ex)
    assert m("produce.responses.partition_responses.error_code == NOT_LEADER_OR_FOLLOWER", ex)
    assert m("partition_responses.error_code == 0", ex)  # any element
    assert not m("all(partition_responses.error_code == 0)", ex)  # not every element
    assert m("all(partition_responses.index < 2)", ex)
    assert m("partition_responses.error_code != 7", ex)
    assert not m("partition_responses.error_code != 6", ex)  # != is not(==)
    assert not m("all(partition_responses.error_code != 6)", ex)
    assert m("all(partition_responses.error_code != 7)", ex)
    assert m("produce.responses.name == orders", ex)
    assert m("produce.responses", ex) and m("produce.responses.partition_responses", ex)
    assert not m("produce.transactional_id", ex)  # null is absent
    assert not m("fetch.isolation_level == 0", ex)
    assert not m("metadata.topics.name == orders", ex)
    assert m('produce.responses.name in {"payments", "orders"}', ex)


def test_unknown_names_suggest_the_nearest():
    e = err("latncy > 5ms")
    assert "unknown field 'latncy'" in e.message and "latency" in e.message and e.position == 0 and e.end == 6
    e = err("produce.ack == 1")
    assert "produce.acks" in e.message and e.end == 11
    e = err("corr == 1 and throttle_time > 0")
    assert e.position == 14 and "throttle_time_ms" in e.message
    e = err("api == Prodce")
    assert "Produce" in e.message and e.position == 7
    e = err("error == NOT_LEADER")
    assert e.position == 9 and "NOT_LEADER_OR_FOLLOWER" in e.message
    e = err("records.kye contains x")
    assert "records.key" in e.message
    e = err("severity >= warn")
    assert "warning" in e.message and e.position == 12
    e = err("produce.response.acks == 1")
    assert "response" in e.message


@pytest.mark.parametrize(
    "expr,pos,words",
    [
        ('version == "9"', 11, "is a number"),
        ("client_id == 5", 13, "is text"),
        ("corr contains 5", 0, "applies to text"),
        ("latency matches x", 0, "applies to text"),
        ("client_id contains 5", 19, "needs a string"),
        ('topic matches "(("', 14, "bad regular expression"),
        ("unanswered == 3", 14, "true or false"),
        ("latency > 10.0.0.1", 10, "is a duration"),
        ("client < 10.0.0.1", 0, "does not apply"),
        ("client == 5", 10, "expected an address"),
        ("produce.topic_data > 3", 0, "is a structure"),
        ("produce.topic_data.partition_data.records == 3", 0, "is a structure"),
        ("error > 3", 0, "does not apply"),
        ("api == 1.5", 7, "API name or key"),
        ("records.codec == 1", 17, "is text"),
        ("records.count == gzip", 17, "is a number"),
    ],
)
def test_type_errors_have_positions(expr, pos, words):
    e = err(expr)
    assert words in e.message, e
    assert e.position >= pos and e.position <= pos + 2, e


def test_needs_flags():
    assert not compile_filter("api == Produce and latency > 5ms").needs_trees
    assert not compile_filter("api == Produce and latency > 5ms").needs_records
    assert compile_filter("produce.acks == 1").needs_trees
    assert not compile_filter("records.codec == gzip").needs_records
    assert compile_filter('records.key contains "x"').needs_records
    assert compile_filter("records.headers.key").needs_records


def test_shorthand_builds_one_expression():
    assert shorthand() is None
    expr = shorthand(
        "latency > 1", api=["Produce,Fetch", "3"], topic=['a"b'], client=["c"], errors=True, slower_than=5
    )
    assert expr == (
        '(latency > 1) and api in {"Produce", "Fetch", 3} and topic in {"a\\"b"} and client_id in {"c"} '
        "and (error or severity >= warning) and latency >= 5.0"
    )
    f = compile_filter(expr)
    ex = make_ex(api=1, latency_ms=6, topics={'a"b': [0]}, client_id="c", errors=[1])
    assert f(ex)
    assert not f(make_ex(api=1, latency_ms=6, topics={'a"b': [0]}, client_id="c"))
