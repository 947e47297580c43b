"""The metrics' counts (analyzer.session.metrics): label values from the wire bounded with
thousands of client ids and topics, sums kept whole under "other", two halves merged equal to
one run, a live exposition's series never dropped between two scrapes."""

from collections import Counter

from analyzer.dissect import schema
from analyzer.model import Severity
from analyzer.session.metrics import OTHER, Health, LiveMetrics, MetricLimits, Metrics, families
from analyzer.session.stats import ExchangeFacts


def facts(
    i: int, client: str, topic: str, latency: float = 2**-8
) -> ExchangeFacts:  # exact in binary: sums in any order
    return ExchangeFacts(
        float(i),
        0,
        "Produce",
        latency,
        100,
        50,
        ["NOT_LEADER_OR_FOLLOWER"] if i % 7 == 0 else [],
        [("pairing.no_response", Severity.NOTE, "x")] if i % 11 == 0 else [],
        client,
        i % 7 == 0,
        [topic],
        [(topic, 2, 40)],
    )


def feed(m: Metrics, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        # a few busy clients, thousands that send one request each
        client = f"busy-{i % 3}" if i % 2 == 0 else f"client-{i}"
        m.apply(facts(i, client, f"topic-{i % 1500}"), (9, 5 if i % 5 == 0 else 0, None))


def series(fams, name: str) -> list:
    (f,) = [f for f in fams if f.name == "kafka_analyzer_" + name]
    return f.samples


def test_thousands_of_client_ids_are_bounded_and_summed_whole():
    limits = MetricLimits(clients=10, topics=20, track=5)
    m = Metrics(limits)
    feed(m, 6000)
    assert len(m.clients.rows) <= 10 * 5 + 1 and len(m.topics.rows) <= 20 * 5 + 1
    assert m.clients.overflow > 0 and m.topics.overflow > 0
    fams = families(m, Health(packets=1))
    clients = series(fams, "client_requests_total")
    assert len(clients) == 11 and clients[-1][0] == (OTHER,)
    assert {v[0] for v, _ in clients} >= {"busy-0", "busy-1", "busy-2"}
    assert sum(n for _, n in clients) == 6000
    assert sum(n for _, n in series(fams, "client_error_responses_total")) == sum(
        1 for i in range(6000) if i % 7 == 0
    )
    topics = series(fams, "topic_records_total")
    assert len(topics) == 2 * 21 and sum(n for (_t, d), n in topics if d == "produce") == 2 * 6000
    overflow = dict(series(fams, "label_overflow_total"))
    assert overflow[("client_id",)] == m.clients.overflow and overflow[("topic",)] == m.topics.overflow
    folded = dict(series(fams, "label_folded"))
    assert folded[("client_id",)] == len(m.clients.rows) - 1 - 10
    assert sum(n for _, n in series(fams, "requests_total")) == 6000
    (h,) = series(fams, "latency_seconds")
    assert h[1][2] == 6000 and h[1][0][-1] == (float("inf"), 6000)
    assert dict(series(fams, "throttle_seconds_total"))[("Produce",)] == 1200 * 5 / 1000
    assert dict(series(fams, "unanswered_requests_total"))[("Produce",)] == len(range(0, 6000, 11))


def test_two_halves_merged_are_one_run():
    limits = MetricLimits(clients=10, topics=20, track=50)
    one = Metrics(limits)
    feed(one, 400)
    a, b = Metrics(limits), Metrics(limits)
    feed(a, 200)
    feed(b, 200, 200)
    a.merge(b)
    assert families(a, Health()) == families(one, Health())


def test_software_names_are_bounded():
    m = Metrics(MetricLimits(software=3))
    for i in range(100):
        m.apply(facts(i, f"c{i}", "t"), (3, 0, f"lib {i}"))
    names = {k[2] for k in m.requests}
    assert len(names) == 4 and OTHER in names and m.software_overflow == 97


def test_a_live_exposition_keeps_the_series_it_showed():
    live = LiveMetrics(MetricLimits(clients=2))
    m = Metrics(live.limits)
    m.apply(facts(1, "early", "t"), None)
    live.part(0, m, Health())
    live.health.running = True
    first = {v for v, _ in series(live.families(), "client_requests_total")}
    for i in range(50):
        m.apply(facts(i, f"busy-{i % 2}", "t"), None)
    later = {v for v, _ in series(live.families(), "client_requests_total")}
    assert first == {("early",)} and ("early",) in later and len(later) == 3
    assert live.healthz()["capturing"] is True


def unknown_errors(m: Metrics, codes: range) -> None:
    for c in codes:
        f = facts(0, "c", "t")._replace(errors=[f"UNKNOWN_ERROR_CODE({c})"] * (c % 3 + 1))
        m.apply(f, None)


def test_unknown_error_codes_are_bounded_and_summed_whole():
    """Error names are the registry's, except UNKNOWN_ERROR_CODE(n) of any n a peer sends: at
    most ``unknown_errors`` of them apart, the rest under one label, counted as overflow; a merge
    keeps the bound."""
    limits = MetricLimits(unknown_errors=20)
    m = Metrics(limits)
    unknown_errors(m, range(1000, 1500))
    fams = families(m, Health())
    errors = dict(series(fams, "errors_total"))
    assert len(errors) == 21 and ("Produce", "UNKNOWN_ERROR_CODE(other)") in errors
    assert sum(errors.values()) == sum(c % 3 + 1 for c in range(1000, 1500))
    assert (
        dict(series(fams, "label_overflow_total"))[("error",)]
        == errors[("Produce", "UNKNOWN_ERROR_CODE(other)")]
    )
    assert dict(series(fams, "label_limit"))[("error",)] == 20
    a, b = Metrics(limits), Metrics(limits)
    unknown_errors(a, range(1000, 1015))
    unknown_errors(b, range(2000, 2015))
    a.merge(b)
    merged = dict(series(families(a, Health()), "errors_total"))
    assert len(merged) == 21 and sum(merged.values()) == sum(
        c % 3 + 1 for c in [*range(1000, 1015), *range(2000, 2015)]
    )


def test_api_keys_and_versions_outside_the_table_are_bounded():
    """A stream resynchronised after lost packets can frame bytes that carry any 16-bit api key
    and version (a soak at 20,000 packets/s with kernel drops showed ``Api17902`` and Produce
    v4 to v26): the ``api`` and ``version`` labels stay the protocol table's, the rest counted
    under ``(unknown)`` and ``unsupported``, every exchange still counted."""
    m = Metrics()
    m.apply(facts(1, "c", "t"), (9, 0, None))
    for v in range(-12544, 32767, 97):  # Produce at versions the table has not
        m.apply(facts(2, "c", "t"), (v, 0, None))
    for key in range(17000, 18000):  # keys the table has not, named as exchange_facts names them
        m.apply(facts(3, "c", "t")._replace(api_key=key, api_name=f"Api{key}"), (key % 50, 0, None))
    requests = dict(series(families(m, Health()), "requests_total"))
    produce = {k[1]: n for k, n in requests.items() if k[0] == "Produce"}
    lo, hi = schema.version_range(0)
    expected = Counter(str(v) if lo <= v <= hi else "unsupported" for v in range(-12544, 32767, 97))
    expected["9"] += 1
    assert produce == expected and expected["unsupported"] > 400
    assert requests[("(unknown)", "unsupported", "unknown")] == 1000
    assert sum(requests.values()) == 1 + len(range(-12544, 32767, 97)) + 1000
    apis = {k[0] for k, _ in series(families(m, Health()), "request_bytes_total")}
    assert apis == {"Produce", "(unknown)"}
