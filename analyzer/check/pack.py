"""The built-in rule pack: on by default, each rule switched off or tuned under ``[pack]``.

Errors fail a run by default; warnings fail it with ``--fail-on warning`` (or ``[check]
fail_on``). The ids are stable: CI configurations, waivers and SARIF results refer to them.
"""

from __future__ import annotations

from analyzer.check.clients import CHURN, READINESS, STORM, THROTTLE
from analyzer.check.groups import LAG, REBALANCE, REWIND, STATUS
from analyzer.check.producers import DUPLICATES, E2E, HANGING, LOST, RETRIES
from analyzer.check.rules import Rule, assert_check, compile_expr
from analyzer.dissect import schema
from analyzer.dissect.error_versions import too_new
from analyzer.dissect.errors import ERRORS, is_retriable
from analyzer.dissect.protocol_table import CURRENT_RELEASE
from analyzer.issues import (
    CAPTURE_BAD_OPTION,
    CAPTURE_PACKETS_DROPPED,
    CAPTURE_SNAPLEN,
    DECODE_ELEMENT_LIMIT,
    DECODE_TRUNCATED,
    FRAMING_BAD_SIZE,
    FRAMING_INCOMPLETE,
    FRAMING_RESYNC,
    PAIRING_ACKS0,
    QUIRK_LEGACY_FORMAT_REJECTED,
    QUIRK_MOCK_LEAVE_GROUP_LAYOUT,
    QUIRK_SIMPLE_COMMIT_REJECTED,
    RECORDS_CRC_MISMATCH,
    STREAM_EVICTED,
    STREAM_GAP,
)
from analyzer.model import Exchange, Severity
from analyzer.session.clients import TARGETS

# Warnings that say the analysis saw or decoded less than the traffic held: the capture's own
# losses, bytes skipped between frames, and the limits that bound hostile input (what check would
# otherwise pass in silence; their errors are kafka.protocol-errors')
INCOMPLETE = frozenset(
    k.code
    for k in (
        CAPTURE_SNAPLEN,
        CAPTURE_PACKETS_DROPPED,
        CAPTURE_BAD_OPTION,
        STREAM_GAP,
        STREAM_EVICTED,
        FRAMING_BAD_SIZE,
        FRAMING_RESYNC,
        FRAMING_INCOMPLETE,
        DECODE_ELEMENT_LIMIT,
        DECODE_TRUNCATED,
    )
)

# Errors that are steps of a normal protocol exchange, not failures: a client asks, the broker
# says "not like this", the client goes on as the protocol intends.
EXPECTED_ERRORS = {
    "ApiVersions": frozenset(("UNSUPPORTED_VERSION",)),  # the client retries with v0
    "JoinGroup": frozenset(("MEMBER_ID_REQUIRED",)),  # KIP-394: rejoin with the given id
    # the coordinator tells a member to rejoin: the classic group protocol's rebalance signal
    "Heartbeat": frozenset(("REBALANCE_IN_PROGRESS",)),
    "SyncGroup": frozenset(("REBALANCE_IN_PROGRESS",)),
}
# Errors a named broker quirk causes, by the quirk on the exchange: the broker misread or refused a
# valid request, so the error is its deviation (kafka.peer-quirks names it), not a failure to judge here.
QUIRK_ERRORS = {
    # the mock reads a v3+ LeaveGroup's members array as a v0-v2 member id: no member matches
    QUIRK_MOCK_LEAVE_GROUP_LAYOUT.code: frozenset(("UNKNOWN_MEMBER_ID",)),
    # a Produce v0-v2 legacy message set (magic 0/1) refused as UNSUPPORTED_VERSION
    QUIRK_LEGACY_FORMAT_REJECTED.code: frozenset(("UNSUPPORTED_VERSION",)),
    # a simple commit (generation -1, no member id) to an empty group refused
    QUIRK_SIMPLE_COMMIT_REJECTED.code: frozenset(("UNKNOWN_MEMBER_ID",)),
}


def _error_responses(ex: Exchange) -> str | None:
    resp = ex.response
    if resp is None or not resp.errors:
        return None
    expected = EXPECTED_ERRORS.get(schema.api_name(ex.api_key) or "", frozenset())  # type: ignore[arg-type]
    # an error the request's version cannot receive is the broker's deviation: a named peer quirk
    # (quirk.error_too_new, kafka.peer-quirks), not a failure this rule judges
    quirky: set[int] = set()
    if ex.api_key is not None and ex.api_version is not None:
        quirky = {code for code, _, _ in too_new(ex.api_key, ex.api_version, resp.errors)}
    for issue in ex.all_issues():
        expected = expected | QUIRK_ERRORS.get(issue.code, frozenset())
    bad = []
    for code in resp.errors:
        name = ERRORS.get(code, (f"UNKNOWN_ERROR_CODE({code})",))[0]
        if name in expected or code in quirky or is_retriable(code):
            continue
        bad.append(name)
    if not bad:
        return None
    names = sorted(set(bad))
    return f"non-retriable error{'s' if len(names) > 1 else ''} {', '.join(names)}"


def _unanswered(ex: Exchange) -> str | None:
    req = ex.request
    if req is None or ex.response is not None or req.api_key is None:
        return None
    if any(i.code == PAIRING_ACKS0.code for i in ex.issues):
        return None  # acks=0: no answer is the protocol
    if ex.conn.closed in ("end of capture", "idle"):
        return None  # still in flight when the capture stopped (long-poll Fetch, a slow request)
    if ex.conn.closed_by == "client":
        return None  # the client hung up with it in flight (a consumer closing its long-poll Fetch)
    who = f" by the {ex.conn.closed_by}" if ex.conn.closed_by else ""
    return f"no response before the connection was closed{who} ({ex.conn.closed or 'closed'})"


def builtin_rules() -> list[Rule]:
    """A fresh list of the built-in rules (callers tune their copies)."""
    b = "built-in"

    def assert_rule(rid, sev, where, check, message, help_):
        flt = compile_expr(check, rid, "assert")
        r = Rule(rid, sev, message, b, where=compile_expr(where, rid, "where"), help=help_)
        r.check = assert_check(flt, message)
        r.texts = {"where": where, "assert": check}
        return r

    return [
        Rule(
            "kafka.protocol-errors",
            Severity.ERROR,
            "bytes that break the protocol or a damaged capture",
            b,
            issues=lambda i: i.severity >= Severity.ERROR and i.code != RECORDS_CRC_MISMATCH.code,
            help="No issue of error severity: decode faults, malformed records, framing and capture "
            "damage (allow codes with [check] allow or --allow).",
        ),
        Rule(
            "kafka.crc",
            Severity.ERROR,
            "a record batch or message whose CRC does not match its bytes",
            b,
            issues=lambda i: i.code == RECORDS_CRC_MISMATCH.code,
            help="Every record batch (CRC-32C) and legacy message (CRC-32) checksum holds.",
        ),
        Rule(
            "kafka.unanswered",
            Severity.ERROR,
            "a request without a response",
            b,
            check=_unanswered,
            help="Every request is answered; acks=0 Produce requests, requests still in flight "
            "when the capture ended and requests the client abandoned by closing its connection "
            "are excepted.",
        ),
        Rule(
            "kafka.error-responses",
            Severity.ERROR,
            "a response with a non-retriable error code",
            b,
            check=_error_responses,
            help="No response carries a non-retriable Kafka error code (protocol steps such as "
            "ApiVersions' UNSUPPORTED_VERSION, JoinGroup's MEMBER_ID_REQUIRED and REBALANCE_IN_PROGRESS "
            "to a Heartbeat or SyncGroup excepted, and "
            "errors the request's version predates or a named broker quirk causes, which "
            "kafka.peer-quirks reports).",
        ),
        assert_rule(
            "kafka.acks-all",
            Severity.WARNING,
            "api == Produce",
            "produce.acks == -1",
            "a Produce request without acks=all",
            "Producers wait for every in-sync replica (acks=all, -1).",
        ),
        assert_rule(
            "kafka.compression",
            Severity.WARNING,
            "api == Produce and records",
            'all(records.codec != "none")',
            "a Produce request with uncompressed batches",
            "Producers compress their batches (gzip, snappy, lz4 or zstd).",
        ),
        assert_rule(
            "kafka.idempotence",
            Severity.WARNING,
            "api == Produce and records.magic == 2",
            "all(records.producer_id >= 0)",
            "a Produce request from a producer that is not idempotent",
            "v2 record batches carry a producer id (enable.idempotence).",
        ),
        Rule(
            "kafka.client-readiness",
            Severity.WARNING,
            "a client that uses what the target Kafka release refuses",
            b,
            judge=READINESS,
            settings={"target": float(CURRENT_RELEASE)},
            units={"target": ""},
            help=f"No client uses an API version the target release no longer accepts (KIP-896 "
            f"removed the oldest versions in Kafka 4.0) nor sends or is sent record batches in the "
            f"old formats (magic 0/1); target: {', '.join(TARGETS)} (default {CURRENT_RELEASE}, the "
            "newest the schemas know). One finding per client (id and host) naming each version "
            "with its count and first exchange.",
        ),
        Rule(
            "kafka.metadata-storm",
            Severity.WARNING,
            "a client flooding the brokers with Metadata requests",
            b,
            judge=STORM,
            settings={"max_answers": 10.0, "max_rate": 10.0},
            units={"max_answers": "", "max_rate": ""},
            help="No client gets more than max_answers (10) Metadata answers in a row naming a topic "
            "UNKNOWN_TOPIC_OR_PARTITION or LEADER_NOT_AVAILABLE (a loop on a missing or leaderless "
            "topic), nor sends more than max_rate (10) Metadata requests per second over the span of "
            "its Metadata requests (a second at least: 130 requests in 0.3 s are 130/s).",
        ),
        Rule(
            "kafka.connection-churn",
            Severity.WARNING,
            "a client reconnecting in a loop or opening connections too often",
            b,
            judge=CHURN,
            settings={"max_fast_reconnects": 10.0, "max_per_min": 30.0},
            units={"max_fast_reconnects": "", "max_per_min": ""},
            help="No client reconnects to a broker within 100 ms of its last connection's end more "
            "than max_fast_reconnects (10) times (no backoff; connections refused or closed before "
            "a request count as its reconnections), nor opens more than max_per_min (30) "
            "connections a minute over a minute or more.",
        ),
        Rule(
            "kafka.throttling",
            Severity.WARNING,
            "a client throttled by the brokers' quotas",
            b,
            judge=THROTTLE,
            settings={"max": 0.0},
            units={"max": "ms"},
            help="No client's answers are throttled (throttle_time_ms) more than max in all (0 ms "
            "by default: any throttling); the finding sums it per API and names the first "
            "throttled answer; filter single answers with throttle_time_ms > 0.",
        ),
        Rule(
            "kafka.peer-quirks",
            Severity.WARNING,
            "a known deviation of a named client or broker from the protocol",
            b,
            issues=lambda i: i.code.startswith("quirk."),
            help="No named peer quirk (a client's or broker's known deviation from the protocol, "
            "decoded as the peer meant it: the librdkafka mock cluster's ApiVersions fallback, "
            "CRC-less transaction markers and extra Metadata byte; librdkafka's #5049 Metadata "
            "placeholder and its pre-2.2 hang-up after tagged ApiVersions fields; kafka-go's v0 "
            "subscription labelled v1; a broker answering acks=0, sending an error code the "
            "request version predates or Fetch records newer than the request version reads, "
            "refusing a Produce v0-v2 legacy message set or a simple commit to an empty group).",
        ),
        Rule(
            "kafka.invalid-batches",
            Severity.WARNING,
            "a record batch Kafka's own validation would reject",
            b,
            issues=lambda i: (
                i.code.startswith("records.")
                and i.severity == Severity.WARNING
                and i.code != RECORDS_CRC_MISMATCH.code
            ),
            records=True,  # records are validated one by one only when their bodies are decoded
            help="Record batches pass the checks Kafka brokers apply (LogValidator, "
            "ProduceRequest.validateRecords): a record count above 0, last_offset_delta = count - 1, "
            "offset deltas 0..n-1 and timestamps within the batch (when record bodies are decoded), "
            "no control batches from clients, one magic 2 batch per partition, transactional "
            "batches with a transactional id, idempotent sequences that continue per producer and "
            "partition across the capture.",
        ),
        Rule(
            "kafka.incomplete-analysis",
            Severity.WARNING,
            "traffic the analysis could not see or decode whole",
            b,
            issues=lambda i: i.code in INCOMPLETE and i.severity == Severity.WARNING,
            help="Everything the capture holds is seen and decoded: no packets cut by the snaplen or "
            "dropped, no gap in a TCP stream, no bytes skipped between frames or frame left "
            "incomplete, no connection closed early (--max-connections) nor message decoded in "
            "part (--max-elements, a frame too short for its message).",
        ),
        assert_rule(
            "kafka.sasl-plain-cleartext",
            Severity.WARNING,
            "api == SaslHandshake",
            'not sasl_handshake.mechanism == "PLAIN"',
            "SASL PLAIN in clear text: the password crosses the network readable",
            "SASL PLAIN is used only over TLS.",
        ),
        Rule(
            "kafka.group-rebalance-long",
            Severity.WARNING,
            "a consumer group rebalance longer than the bound",
            b,
            judge=REBALANCE,
            settings={"max": 30_000.0},
            units={"max": "ms"},
            help="No consumer group's rebalance (first JoinGroup, REBALANCE_IN_PROGRESS answer or "
            "LeaveGroup to the last SyncGroup answer of the new generation; KIP-848: until every "
            "member owns its target) lasts longer than max (30 s by default: the consumers of the "
            "group read nothing meanwhile), nor is one open longer than that at the capture's end.",
        ),
        Rule(
            "kafka.group-status",
            Severity.ERROR,
            "a consumer group whose consumer stopped making progress (Burrow ERR: STOP or STALL)",
            b,
            judge=STATUS,
            help="No consumer group is at Burrow's ERR because a partition is STOP (no commit for "
            "longer than its window of commits spans while the log moved on) or STALL (the same "
            "offset committed again and again while there is lag), judged at the capture's end. "
            "REWIND is kafka.group-rewind's; Burrow's WARN (lag not shrinking) is no finding.",
        ),
        Rule(
            "kafka.group-rewind",
            Severity.WARNING,
            "a consumer group that committed an offset below its previous commit (Burrow REWIND)",
            b,
            judge=REWIND,
            help="No consumer group commits an offset lower than its previous commit of the partition "
            "(Burrow's REWIND: records read and processed again), which a reset of the offsets does "
            "on purpose: a warning.",
        ),
        Rule(
            "kafka.group-lag",
            Severity.WARNING,
            "a consumer group partition lagging beyond the bounds",
            b,
            judge=LAG,
            settings={"max_records": 100_000.0, "max_time": 60_000.0},
            units={"max_records": "", "max_time": "ms"},
            help="No consumer group partition lags, at a commit or at the capture's end, more than "
            "max_records records (100000 by default) or more than max_time (60 s by default; the "
            "time since the first uncommitted record was appended, when the capture shows it).",
        ),
        Rule(
            "kafka.producer-duplicates",
            Severity.ERROR,
            "records a producer wrote twice",
            b,
            judge=DUPLICATES,
            help="No producer's batch is written twice: answered without error at two base offsets "
            "or more (a producer that is not idempotent sending a batch again after a timeout whose "
            "first attempt was written). An idempotent producer's batch sent again is answered "
            "with the offset written first, and is a retry, not a duplicate.",
        ),
        Rule(
            "kafka.producer-lost",
            Severity.ERROR,
            "records whose last attempt failed and none was written",
            b,
            judge=LOST,
            help="No producer's batch ends with a failed attempt and none written (the records are "
            "lost unless the application sent them again): an error. Batches whose last attempt "
            "got no answer in the capture are said apart, as a warning (written or not, the "
            "capture cannot tell); attempts still in flight when the capture ended are no finding.",
        ),
        Rule(
            "kafka.producer-retries",
            Severity.WARNING,
            "a producer sending more than a share of its records again",
            b,
            judge=RETRIES,
            settings={"max_share": 0.05},
            units={"max_share": ""},
            help="No producer sends more than max_share of its records again (0.05, 5% by "
            "default): retries after errors or timeouts (the same batch identity sent again).",
        ),
        Rule(
            "kafka.transaction-hanging",
            Severity.ERROR,
            "a transaction open past its timeout, or ended by an error",
            b,
            judge=HANGING,
            help="No transaction is open at the capture's end longer than its "
            "transaction_timeout_ms (from InitProducerId; 60 s when the capture does not show it): "
            "an error, it holds read_committed consumers back. A transaction whose EndTxn was "
            "answered with an error that ends it (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH, "
            "INVALID_TXN_STATE...) is a warning.",
        ),
        Rule(
            "kafka.e2e-latency",
            Severity.WARNING,
            "an end-to-end latency p99 over the bound",
            b,
            judge=E2E,
            settings={"max": 60_000.0},
            units={"max": "ms"},
            help="No end-to-end latency p99 (capture time of the Produce request to that of the Fetch "
            "answer returning the record, per topic, partition, producer, consumer and group) over "
            "max: 60 s by default, generous on purpose (as kafka.group-lag's max_time: a consumer "
            "that reads a minute behind its producer); a consumer that starts late on purpose (a "
            "batch job, a replay) measures its start: raise max or switch the rule off.",
        ),
    ]


BUILTIN_IDS = frozenset(r.id for r in builtin_rules())
