"""The driver's own bookkeeping (the capture-to-exchange behaviour is tested through its stages
and on the captures)."""

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrFragment
from scapy.layers.l2 import Ether

from analyzer.events import Skip
from analyzer.pipeline import Pipeline


def test_packets_that_are_not_tcp_segments_are_counted_by_reason():
    """decode_tcp's Skip results, counted under their text; an unknown link type with its number."""
    p = Pipeline()
    frag = bytes(Ether() / IPv6() / IPv6ExtHdrFragment(offset=8) / TCP())
    for linktype, raw in [
        (1, bytes(Ether() / IP() / UDP())),
        (1, bytes(Ether() / IP() / UDP())),
        (1, bytes(Ether() / IP() / TCP())[:30]),
        (1, frag),
        (147, b"\x00" * 40),
        (1, bytes(Ether(type=0x0806) / (b"\x00" * 28))),
        (1, bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(flags="S"))),
    ]:
        assert p.feed(1, 0.0, linktype, memoryview(raw)) == []
    assert dict(p.skipped) == {
        "not tcp": 2,
        "truncated": 1,
        "fragment": 1,
        "unknown linktype 147": 1,
        "not ip": 1,
    }
    assert all(type(k) is str for k in p.skipped)  # plain text: JSON, pickling to fanout workers
    assert {str(s) for s in Skip} == {"not ip", "not tcp", "fragment", "truncated", "unknown linktype"}


def test_inconclusive_says_why_nothing_can_be_concluded(tmp_path):
    """``Analysis.inconclusive``: check's reason for a capture it can conclude nothing from (an
    unusable file, no Kafka exchange); None for a capture with Kafka traffic."""
    from analyzer.dissect.message import Options
    from analyzer.pipeline import Analysis
    from tests.helpers.captures import CAPTURES

    def run(path):
        return Analysis(str(path), Options()).run().inconclusive()

    assert run(CAPTURES / "librdkafka-acks0.pcap") is None
    notes = tmp_path / "notes.pcap"
    notes.write_text("this is not a capture\n")
    assert run(notes).startswith("capture.unknown_format: not a pcap or pcapng capture")
    empty = tmp_path / "empty.pcap"
    empty.write_bytes((CAPTURES / "librdkafka-acks0.pcap").read_bytes()[:24])  # the header only
    assert run(empty).startswith("no Kafka")


class Recorder:
    """A consumer that keeps what it was given."""

    def __init__(self) -> None:
        self.events: list = []
        self.outcomes: list = []

    def event(self, ev) -> None:
        self.events.append(ev)

    def done(self, outcome) -> None:
        self.outcomes.append(outcome)


def test_run_feeds_every_consumer_every_event_then_the_outcome():
    """Analysis.run: each consumer sees the same events in capture order (an event-only consumer
    needs no done), then done(outcome) once; the outcome returned is the one they were given and
    says what one pass of events() says."""
    from analyzer.events import CaptureIssue, ConnectionEnd
    from analyzer.model import Exchange
    from analyzer.pipeline import Analysis
    from tests.helpers.captures import CAPTURES

    path = str(CAPTURES / "librdkafka-txn.pcap")
    expected = [(type(e).__name__, getattr(e, "correlation_id", None)) for e in Analysis(path).events()]
    a, b = Recorder(), Recorder()

    class EventsOnly:
        n = 0

        def event(self, ev) -> None:
            self.n += 1

    only = EventsOnly()
    outcome = Analysis(path).run(a, only, b)
    assert [(type(e).__name__, getattr(e, "correlation_id", None)) for e in a.events] == expected
    assert a.events == b.events and only.n == len(expected)
    assert a.outcomes == b.outcomes == [outcome]
    assert outcome.exchanges == sum(type(e) is Exchange for e in a.events) > 0
    assert outcome.connections == sum(type(e) is ConnectionEnd for e in a.events)
    assert list(outcome.capture_issues) == [e.issue for e in a.events if type(e) is CaptureIssue]
    assert outcome.exit_code() == 0 and outcome.problems() == []
    assert outcome.knowledge.cluster_id  # what the run learnt travels with the outcome


def test_the_display_filter_of_a_run_reaches_no_consumer_and_reads_its_knowledge():
    """Analysis(display_filter=...): the exchanges it drops reach no consumer (connection ends and
    issues still do), the outcome still counts every exchange, and a filter on record fields gets
    record bodies decoded."""
    from analyzer.filter import compile_filter
    from analyzer.model import Exchange
    from analyzer.pipeline import Analysis
    from tests.helpers.captures import CAPTURES

    path = str(CAPTURES / "librdkafka-txn.pcap")
    every = Recorder()
    whole = Analysis(path).run(every)
    produce = compile_filter("api == 0")
    kept = Recorder()
    a = Analysis(path, display_filter=produce)
    assert produce.knowledge is a.knowledge
    outcome = a.run(kept)
    exchanges = [e for e in kept.events if type(e) is Exchange]
    assert exchanges and all(e.api_key == 0 for e in exchanges)
    assert len(exchanges) == sum(type(e) is Exchange and e.api_key == 0 for e in every.events)
    assert [e for e in kept.events if type(e) is not Exchange] == [
        e for e in every.events if type(e) is not Exchange
    ]
    assert outcome.exchanges == whole.exchanges
    records = compile_filter('records.key contains "k"')
    assert records.needs_records
    assert Analysis(path, display_filter=records).opts.records_bodies


def test_steps_hand_back_each_batch_after_the_consumers_had_it():
    """steps(): a caller drains what its consumers made batch by batch; done comes after the last."""
    from analyzer.pipeline import Analysis
    from tests.helpers.captures import CAPTURES

    rec = Recorder()
    seen = 0
    for batch in Analysis(str(CAPTURES / "librdkafka-acks0.pcap")).steps(rec):
        seen += len(batch)
        assert len(rec.events) == seen and not rec.outcomes
    assert seen == len(rec.events) > 0 and len(rec.outcomes) == 1


def test_outcomes_combine_as_one_run():
    """Outcome.combine: counters summed, times spanned, knowledge merged (what was known first
    stays), capture issues once per code and message, given fields win; the policy reads the
    combined facts."""
    from analyzer.issues import CAPTURE_SNAPLEN, CAPTURE_TRUNCATED
    from analyzer.pipeline import Exit, Outcome
    from analyzer.session.knowledge import Knowledge

    k1, k2 = Knowledge(), Knowledge()
    k1.topic_ids["id1"] = "orders"
    k1.cluster_id = "first"
    k2.topic_ids.update({"id1": "orders", "id2": "payments"})
    k2.brokers[1] = "b1:9092"
    k2.cluster_id = "second"
    cut = CAPTURE_TRUNCATED("the file ends inside a packet")
    one = Outcome(
        "a",
        packets=10,
        connections=2,
        first_ts=5.0,
        last_ts=9.0,
        skipped={"not tcp": 1},
        exchanges=3,
        capture_issues=(cut,),
        knowledge=k1,
        dropped=1,
        received=20,
    )
    two = Outcome(
        "b",
        packets=7,
        connections=1,
        first_ts=4.0,
        last_ts=8.0,
        skipped={"not tcp": 2, "not ip": 1},
        exchanges=0,
        capture_issues=(cut,),
        knowledge=k2,
        interrupted=True,
        received=9,
    )
    both = Outcome.combine([one, two])
    assert (both.name, both.packets, both.connections, both.exchanges) == ("a", 17, 3, 3)
    assert (both.first_ts, both.last_ts) == (4.0, 9.0)
    assert both.skipped == {"not tcp": 3, "not ip": 1}
    assert (both.dropped, both.received, both.interrupted) == (1, 29, True)
    assert both.capture_issues == (cut,)
    assert both.knowledge.topic_ids == {"id1": "orders", "id2": "payments"}
    assert both.knowledge.brokers == {1: "b1:9092"} and both.knowledge.cluster_id == "first"
    assert both.exit_code() == Exit.DAMAGED  # the truncation is an error
    assert Outcome.combine([one, two], name="set", packets=100).packets == 100
    assert Outcome.combine([]).exit_code() == Exit.DAMAGED  # nothing seen: no Kafka
    snap = CAPTURE_SNAPLEN("packets were cut to 64 bytes")
    said = Outcome("c", packets=5, connections=1, capture_issues=(snap,)).problems()
    assert said[-1].startswith("no Kafka traffic found in 1 TCP connections: packets were cut")
    tls = Outcome("d", packets=5, connections=1, tls_connections=1).problems()
    assert "1 TLS connection (no key log given: --tls-keylog FILE)" in tls[-1]
