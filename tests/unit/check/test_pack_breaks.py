"""Every built-in rule broken by one capture, every baseline dimension regressed by one.

Each capture is a bundled recording with bytes patched (a field rewritten, a record batch's
CRC-32C recomputed so that only the meant change is in it) or a conversation crafted with the
packet generator (tests/packets.py); each is checked with the built-in pack and the finding must
carry the right rule id, severity and exchange (the 1-based number check and ``read`` give the
exchange), while the untouched source passes that rule."""

from __future__ import annotations

import io
import json
import struct
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from analyzer import cli
from analyzer.check.baseline import DIMENSIONS
from analyzer.check.pack import BUILTIN_IDS, builtin_rules
from analyzer.dissect.constants import ApiKey
from analyzer.dissect.crc import crc32c
from tests.helpers.capture_patch import (
    delay_responses,
    exchanges,
    patch_batch_field,
    patch_field,
    patch_frame,
)
from tests.helpers.captures import CAPTURES
from tests.helpers.packets import (
    Conversation,
    api_versions_request,
    api_versions_response,
    metadata_request,
    uvarint,
    write_pcap,
)
from tests.helpers.producer_patch import resend_batch

GZIP = CAPTURES / "librdkafka-produce-consume-gzip.pcap"
KP011 = CAPTURES / "kafka-python-0.11-none.pcap"  # uncompressed v2 batches with headers
SEVERITY = {r.id: str(r.severity) for r in builtin_rules()}


def check_json(*args) -> tuple[int, dict]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = cli.main(["check", *map(str, args), "--format", "json"])
    return rc, json.loads(out.getvalue())


def rule(doc: dict, rid: str) -> dict:
    return next(r for r in doc["rules"] if r["id"] == rid)


def api(ex, key: ApiKey, answered: bool = True) -> bool:
    return ex.api_key == key and ex.request is not None and (ex.response is not None or not answered)


def number(path: Path, select) -> int:
    """The 1-based number of the first selected exchange."""
    return next(n for n, ex in enumerate(exchanges(path), 1) if select(ex))


# -- the packet generator: small Kafka conversations ------------------------------------------------


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _request(key: ApiKey, ver: int, corr: int, body: bytes, client_id: str = "test-client") -> bytes:
    cid = client_id.encode()
    return _frame(struct.pack(">hhih", key, ver, corr, len(cid)) + cid + body)


def _response(corr: int, body: bytes) -> bytes:
    return _frame(struct.pack(">i", corr) + body)


def _metadata_response(corr: int) -> bytes:
    """Metadata v1: no brokers, no controller, no topics."""
    return _response(corr, struct.pack(">iii", 0, -1, 0))


def _zigzag(n: int) -> bytes:
    return uvarint((n << 1) ^ (n >> 63))


def record_batch(
    records: list[bytes], last_offset_delta: int | None = None, count: int | None = None
) -> bytes:
    """A magic 2 batch of uncompressed records (values), its CRC-32C computed."""
    body = b""
    for i, v in enumerate(records):
        rec = b"\x00" + _zigzag(0) + _zigzag(i) + _zigzag(-1) + _zigzag(len(v)) + v + _zigzag(0)
        body += _zigzag(len(rec)) + rec
    lod = len(records) - 1 if last_offset_delta is None else last_offset_delta
    n = len(records) if count is None else count
    after_crc = struct.pack(">hiqqqhii", 0, lod, 1_700_000_000_000, 1_700_000_000_000, -1, -1, -1, n) + body
    head = struct.pack(">bI", 2, crc32c(after_crc))
    return struct.pack(">qii", 0, len(head) + len(after_crc) + 4, -1) + head + after_crc


def produce_v3(corr: int, batch: bytes, topic: str = "t") -> bytes:
    t = topic.encode()
    body = struct.pack(">hhii", -1, -1, 5000, 1) + struct.pack(">h", len(t)) + t
    body += struct.pack(">iii", 1, 0, len(batch)) + batch
    return _request(ApiKey.PRODUCE, 3, corr, body)


def produce_v3_response(corr: int, topic: str = "t") -> bytes:
    t = topic.encode()
    body = struct.pack(">ih", 1, len(t)) + t + struct.pack(">iihqq", 1, 0, 0, 0, -1) + struct.pack(">i", 0)
    return _response(corr, body)


def write(path: Path, convs: list[Conversation], step: float = 0.001) -> Path:
    """The conversations' packets one after the other, ``step`` seconds apart."""
    pkts = [bytes(p) for c in convs for p in c.pkts]
    write_pcap(path, [(1_700_000_000.0 + i * step, p) for i, p in enumerate(pkts)])
    return path


def client_conn(port: int, requests: list[str], client_id: str = "test-client", n_metadata: int = 1):
    """A connection that sends ``requests`` ("ApiVersions", "Metadata") in order, each answered,
    then closes (the client first)."""
    c = Conversation(client=("10.0.0.1", port)).handshake()
    corr = 0
    for what in requests:
        for _ in range(n_metadata if what == "Metadata" else 1):
            corr += 1
            if what == "ApiVersions":
                c.send(0, api_versions_request(corr, client_id))
                c.send(1, api_versions_response(corr))
            else:
                c.send(0, metadata_request(corr, ["t"], client_id))
                c.send(1, _metadata_response(corr))
    return c.close()


# -- one capture per built-in rule -------------------------------------------------------------------


def _protocol_errors(tmp: Path):
    """A Produce whose record batch has magic 9: records.unknown_magic, an error."""
    p = tmp / "magic9.pcap"
    sel = lambda ex: api(ex, ApiKey.PRODUCE)  # noqa: E731
    assert patch_field(GZIP, p, sel, "request", "magic", b"\x09") == 1
    return GZIP, p, number(p, sel), "records.unknown_magic"


def _crc(tmp: Path):
    """One bit of a Produce's CRC flipped."""
    sel = lambda ex: api(ex, ApiKey.PRODUCE)  # noqa: E731
    first = next(ex for ex in exchanges(GZIP) if sel(ex))
    crc = next(f for f in first.request.body.walk() if f.name == "crc").value
    p = tmp / "crc.pcap"
    assert patch_field(GZIP, p, sel, "request", "crc", struct.pack(">I", crc ^ 1)) == 1
    return GZIP, p, number(p, sel), "records.crc_mismatch"


def _unanswered(tmp: Path):
    """The broker closes the connection with a Metadata request in flight (acks=0, the end of
    the capture and a client hanging up are the excepted cases)."""
    c = Conversation().handshake()
    c.send(0, api_versions_request(1))
    c.send(1, api_versions_response(1))
    c.send(0, metadata_request(2, ["t"]))
    c.pkts.append(c.pkt(1, "FA"))
    c.seq[1] += 1
    c.pkts.append(c.pkt(0, "FA"))
    c.seq[0] += 1
    c.pkts.append(c.pkt(1, "A"))
    p = write(tmp / "unanswered.pcap", [c])
    ok = client_conn(40001, ["ApiVersions", "Metadata"])
    return (
        write(tmp / "answered.pcap", [ok]),
        p,
        number(p, lambda ex: api(ex, ApiKey.METADATA, False)),
        "broker",
    )


def _error_responses(tmp: Path):
    p = tmp / "msg-too-large.pcap"
    sel = lambda ex: api(ex, ApiKey.PRODUCE)  # noqa: E731
    assert patch_field(GZIP, p, sel, "response", "error_code", struct.pack(">h", 10)) == 1
    return GZIP, p, number(p, sel), "MESSAGE_TOO_LARGE"


def _client_readiness(tmp: Path):
    """kafka-python with api_version 0.8.2 (a real recording): Produce v0, gone in Kafka 4.0; the
    finding names the client and its first Produce v0."""
    p = CAPTURES / "kafka-python-0.8.2-none.pcap"
    return GZIP, p, number(p, lambda ex: ex.api_key == ApiKey.PRODUCE), "KIP-896"


def _acks_all(tmp: Path):
    p = tmp / "acks1.pcap"
    sel = lambda ex: api(ex, ApiKey.PRODUCE)  # noqa: E731
    assert patch_field(GZIP, p, sel, "request", "acks", struct.pack(">h", 1)) == 1
    return GZIP, p, number(p, sel), "acks=all"


def _compression(tmp: Path):
    """The gzip recording's first Produce batch marked uncompressed... would not decode: the
    same client recorded with compression.codec=none instead."""
    p = CAPTURES / "librdkafka-produce-consume-none.pcap"
    return GZIP, p, number(p, lambda ex: api(ex, ApiKey.PRODUCE)), "uncompressed"


def _idempotence(tmp: Path):
    """kafka-python 0.11's idempotent producer with producer id -1 in its first batch."""
    p = tmp / "not-idempotent.pcap"
    n = patch_batch_field(KP011, p, lambda ex: api(ex, ApiKey.PRODUCE), "producer_id", struct.pack(">q", -1))
    return KP011, p, n, "not idempotent"


def _throttling(tmp: Path):
    p = tmp / "throttled.pcap"
    sel = lambda ex: api(ex, ApiKey.PRODUCE)  # noqa: E731
    assert patch_field(GZIP, p, sel, "response", "throttle_time_ms", struct.pack(">i", 250)) == 1
    return GZIP, p, number(p, sel), "throttled"


def _metadata_storm(tmp: Path):
    """130 Metadata requests in 2 s from one client id: above 10/s; the finding names its first."""
    p = write(tmp / "metadata-storm.pcap", [client_conn(40000, ["ApiVersions", "Metadata"], n_metadata=130)])
    return GZIP, p, number(p, lambda ex: ex.api_key == ApiKey.METADATA), "Metadata storm"


def _connection_churn(tmp: Path):
    """The generated reconnect loop (a producer reconnecting without backoff to a flapping broker):
    a finding of the client, named by its first exchange."""
    return GZIP, CAPTURES / "client-reconnect-loop.pcap", 1, "reconnections within 100 ms"


def _peer_quirks(tmp: Path):
    """The librdkafka mock cluster's ApiVersions fallback (a real recording) against kafka-python
    talking to the same mock at api_version 0.11 (no ApiVersions v3)."""
    p = GZIP
    sel = lambda ex: ex.api_key == ApiKey.API_VERSIONS and ex.api_version == 3  # noqa: E731
    return KP011, p, number(p, sel), "quirk.mock_api_versions"


def _invalid_batches(tmp: Path):
    """A record header key that is not UTF-8 (records.bad_header_key), the batch's CRC redone."""
    p = tmp / "bad-header-key.pcap"
    n = patch_batch_field(
        KP011, p, lambda ex: api(ex, ApiKey.PRODUCE), "key", b"\x04\xff\xfe", after="header"
    )
    return KP011, p, n, "records.bad_header_key"


def _sasl_plain_cleartext(tmp: Path):
    p = CAPTURES / "librdkafka-sasl-plain.pcap"
    return (
        CAPTURES / "librdkafka-sasl-scram.pcap",
        p,
        number(p, lambda ex: ex.api_key == ApiKey.SASL_HANDSHAKE),
        "PLAIN",
    )


def _incomplete_analysis(tmp: Path):
    """Four bytes claiming a frame of -1 bytes before the first request: skipped (the exchanges
    after them are still decoded), and said."""
    clean = write(tmp / "clean.pcap", [client_conn(40000, ["ApiVersions", "Metadata"])])
    c = Conversation(client=("10.0.0.1", 40000)).handshake()
    c.send(0, struct.pack(">i", -1))
    c.send(0, api_versions_request(1, "test-client"))
    c.send(1, api_versions_response(1))
    c.send(0, metadata_request(2, ["t"], "test-client"))
    c.send(1, _metadata_response(2))
    return clean, write(tmp / "bad-size.pcap", [c.close()]), None, "framing.bad_size"


JOINS = CAPTURES / "group-joins.pcap"
LAG = CAPTURES / "group-lag.pcap"


def _commits(path: Path, group: str) -> list[tuple[int, object]]:
    """(number, exchange) of a group's OffsetCommit exchanges."""
    return [
        (n, ex)
        for n, ex in enumerate(exchanges(path), 1)
        if api(ex, ApiKey.OFFSET_COMMIT) and ex.request.body.get("group_id") == group
    ]


def _group_rebalance_long(tmp: Path):
    """The last SyncGroup answer of group-joins 31 s late: its rebalance lasts over 30 s; the
    finding names the exchange that started it."""
    from analyzer.session.rebalances import GroupTracker

    p = tmp / "slow-sync.pcap"
    last = [ex for ex in exchanges(JOINS) if api(ex, ApiKey.SYNC_GROUP)][-1]
    assert (
        delay_responses(
            JOINS,
            p,
            lambda ex: (
                ex.correlation_id == last.correlation_id
                and ex.conn.id == last.conn.id
                and api(ex, ApiKey.SYNC_GROUP)
            ),
            31.0,
        )
        > 0
    )
    tracker = GroupTracker()
    numbered = list(enumerate(exchanges(p), 1))
    for _, ex in numbered:
        tracker.event(ex)
    tracker.done()
    [g] = tracker.groups.values()
    longest = max(g.rebalances, key=lambda r: r.duration_ms or 0.0)
    start = next(
        n for n, ex in numbered if ex.request is not None and ex.request.frame.ts_first == longest.start
    )
    return JOINS, p, start, "group g-group-joins: longest rebalance 3"


def _group_status(tmp: Path):
    """group-lag's stopped consumer (Burrow STOP) against group-joins' healthy one: the finding
    names the stopped group's last commit."""
    return JOINS, LAG, _commits(LAG, "g-lag-stop")[-1][0], "group g-lag-stop: Burrow status ERR"


def _group_rewind(tmp: Path):
    """group-lag's rewinding consumer: the finding names the commit that went back."""
    last: dict[int, int] = {}
    back = None
    for n, ex in _commits(LAG, "g-lag-rewind"):
        for t in ex.request.body.elements("topics"):
            for part in t.elements("partitions"):
                i, off = part.get("partition_index"), part.get("committed_offset")
                if i == 0 and i in last and off < last[i]:
                    back = n
                last[i] = off
    return JOINS, LAG, back, "group g-lag-rewind: Burrow status ERR"


def _group_lag(tmp: Path):
    """The slow consumer's last commit answered 61 s late: its lag in seconds then is over 60 s."""
    p = tmp / "slow-commit.pcap"
    n, last = _commits(LAG, "g-lag-slow")[-1]

    def sel(ex) -> bool:
        return api(ex, ApiKey.OFFSET_COMMIT) and (ex.conn.id, ex.correlation_id) == (
            last.conn.id,
            last.correlation_id,
        )

    assert delay_responses(LAG, p, sel, 61.0) > 0
    return JOINS, p, n, "group g-lag-slow: grp-lag[0] lag 77.474 s > 60 s at exchange"


TXN = CAPTURES / "librdkafka-txn.pcap"


def _producer_lost(tmp: Path):
    """The first Produce answer of a plain producer patched to MESSAGE_TOO_LARGE (not retriable)."""
    p = tmp / "too-large.pcap"
    assert (
        patch_field(GZIP, p, lambda ex: api(ex, ApiKey.PRODUCE), "response", "error_code", b"\x00\x0a") == 1
    )
    return GZIP, p, number(GZIP, lambda ex: api(ex, ApiKey.PRODUCE)), "records lost ("


def _producer_duplicates(tmp: Path):
    """librdkafka-txn's second batch of partition 1 sent as sequence 0: the first batch again,
    written at a second offset; the finding names the first attempt."""
    return TXN, resend_batch(TXN, tmp / "resent.pcap"), 20, "1 record written twice"


def _producer_retries(tmp: Path):
    """The same, with the first attempt answered NOT_LEADER_OR_FOLLOWER: a retry written once."""
    resent = resend_batch(TXN, tmp / "resent.pcap")
    p = tmp / "retried.pcap"
    seen = {"n": 0}

    def second(ex) -> bool:
        seen["n"] += api(ex, ApiKey.PRODUCE)
        return api(ex, ApiKey.PRODUCE) and seen["n"] == 2  # exchange 20

    assert patch_field(resent, p, second, "response", "error_code", b"\x00\x06") == 1
    return TXN, p, 20, "1 of 8 records sent again (12.5% > 5.0%"


def _transaction_hanging(tmp: Path):
    """librdkafka-txn with its timeout patched to 1 ms and its last EndTxn naming another
    transactional id: the last transaction never ends; the finding names its first exchange."""
    from analyzer.session.transactions import TxnTracker

    short, p = tmp / "short.pcap", tmp / "hanging.pcap"
    init = lambda ex: api(ex, ApiKey.INIT_PRODUCER_ID)  # noqa: E731
    assert patch_field(TXN, short, init, "request", "transaction_timeout_ms", struct.pack(">i", 1)) == 1
    ends = {"n": 0}

    def last_end(ex) -> bool:
        ends["n"] += api(ex, ApiKey.END_TXN)
        return api(ex, ApiKey.END_TXN) and ends["n"] == 3

    assert patch_field(short, p, last_end, "request", "transactional_id", b"\x00\x12txn-librdkafka-txX") == 1
    t = TxnTracker()
    numbered = list(enumerate(exchanges(p), 1))
    for _, ex in numbered:
        t.event(ex)
    [x] = t.open.values()
    first = next(n for n, ex in numbered if ex.request is not None and ex.request.frame.ts_first == x.start)
    return TXN, p, first, "transaction txn-librdkafka-txn (producer id 327974000, epoch 0): open for "


def _e2e_latency(tmp: Path):
    """The first Fetch answer returning records 61 s late: their end-to-end latency is over 60 s."""
    from analyzer.session.walks import fetched

    def returns(ex) -> bool:
        return api(ex, ApiKey.FETCH) and any(fp.batches for fp in fetched(ex).answered)

    n, first = next((n, ex) for n, ex in enumerate(exchanges(GZIP), 1) if returns(ex))
    key = (first.conn.id, first.correlation_id)
    p = tmp / "late-fetch.pcap"
    sel = lambda ex: api(ex, ApiKey.FETCH) and (ex.conn.id, ex.correlation_id) == key  # noqa: E731
    assert delay_responses(GZIP, p, sel, 61.0) > 0
    return GZIP, p, n, "end-to-end latency (Produce request to the Fetch answer returning the record): "


BREAKERS = {
    "kafka.producer-lost": _producer_lost,
    "kafka.producer-duplicates": _producer_duplicates,
    "kafka.producer-retries": _producer_retries,
    "kafka.transaction-hanging": _transaction_hanging,
    "kafka.e2e-latency": _e2e_latency,
    "kafka.group-rebalance-long": _group_rebalance_long,
    "kafka.group-status": _group_status,
    "kafka.group-rewind": _group_rewind,
    "kafka.group-lag": _group_lag,
    "kafka.protocol-errors": _protocol_errors,
    "kafka.crc": _crc,
    "kafka.unanswered": _unanswered,
    "kafka.error-responses": _error_responses,
    "kafka.client-readiness": _client_readiness,
    "kafka.acks-all": _acks_all,
    "kafka.compression": _compression,
    "kafka.idempotence": _idempotence,
    "kafka.throttling": _throttling,
    "kafka.metadata-storm": _metadata_storm,
    "kafka.connection-churn": _connection_churn,
    "kafka.peer-quirks": _peer_quirks,
    "kafka.invalid-batches": _invalid_batches,
    "kafka.incomplete-analysis": _incomplete_analysis,
    "kafka.sasl-plain-cleartext": _sasl_plain_cleartext,
}


def test_every_builtin_rule_has_a_breaking_capture():
    assert set(BREAKERS) == BUILTIN_IDS


@pytest.mark.parametrize("rid", sorted(BREAKERS))
def test_builtin_rule_is_broken_by_its_capture(tmp_path, rid):
    source, broken, exchange, words = BREAKERS[rid](tmp_path)
    _, doc = check_json(source)
    assert rule(doc, rid)["status"] == "passed", rule(doc, rid)
    rc, doc = check_json(broken)
    r = rule(doc, rid)
    sev = SEVERITY[rid]
    assert r["severity"] == sev
    assert r["status"] == ("failed" if sev == "error" else "warned"), r
    # a warning does not fail the run (group-lag.pcap has an error of kafka.group-status besides)
    assert rc == (1 if any(x["status"] == "failed" for x in doc["rules"]) else 0)
    assert sev != "error" or rc == 1
    f = r["findings"][0]
    assert r["id"] == rid and words in f["message"], f
    assert f["exchange"] == exchange, (f, exchange)
    if exchange is not None:
        assert f["connection"] >= 1 and f["packets"]


def test_no_response_at_the_end_of_the_capture_or_after_the_client_hung_up_is_not_a_finding(tmp_path):
    end = Conversation().handshake()
    end.send(0, api_versions_request(1))
    end.send(1, api_versions_response(1))
    end.send(0, metadata_request(2, ["t"]))  # still in flight when the recording stopped
    hung_up = Conversation(client=("10.0.0.1", 40002)).handshake()
    hung_up.send(0, api_versions_request(1))
    hung_up.send(1, api_versions_response(1))
    hung_up.send(0, metadata_request(2, ["t"]))
    hung_up.close()  # the client's FIN first, its Metadata unanswered
    p = write(tmp_path / "in-flight.pcap", [end, hung_up])
    _, doc = check_json(p)
    assert rule(doc, "kafka.unanswered")["status"] == "passed"


def test_an_empty_record_batch_is_an_invalid_batch(tmp_path):
    """A Produce whose batch declares no record (record_count 0, last_offset_delta 0): Kafka's
    LogValidator rejects it (InvalidRecordException). A well-formed batch of one record passes."""

    def capture(name: str, batch: bytes) -> Path:
        c = Conversation().handshake()
        c.send(0, api_versions_request(1))
        c.send(1, api_versions_response(1))
        c.send(0, produce_v3(2, batch))
        c.send(1, produce_v3_response(2))
        return write(tmp_path / name, [c.close()])

    good = capture("one.pcap", record_batch([b"v"]))
    _, doc = check_json(good)
    assert rule(doc, "kafka.invalid-batches")["status"] == "passed"
    assert rule(doc, "kafka.protocol-errors")["status"] == "passed"
    empty = capture("empty.pcap", record_batch([], last_offset_delta=0))
    _, doc = check_json(empty)
    r = rule(doc, "kafka.invalid-batches")
    assert rule(doc, "kafka.protocol-errors")["status"] == "passed", rule(doc, "kafka.protocol-errors")
    assert r["status"] == "warned" and r["findings"][0]["exchange"] == number(
        empty, lambda ex: api(ex, ApiKey.PRODUCE)
    )


# -- one regression per baseline dimension ------------------------------------------------------------


def baseline_of(tmp: Path, *captures: Path) -> Path:
    base = tmp / "base.json"
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        assert cli.main(["check", *map(str, captures), "--baseline", str(base), "--update-baseline"]) in (
            0,
            1,
        )
    return base


def _bl_clients(tmp: Path):
    """One Fetch sent under another client id (its header's client id patched)."""
    p = tmp / "other-client.pcap"
    cid = next(ex.client_id for ex in exchanges(GZIP) if ex.client_id)
    assert patch_frame(GZIP, p, lambda ex: api(ex, ApiKey.FETCH), "request", 10, b"X") == 1
    return GZIP, p, "X" + cid[1:]


def _bl_api_versions(tmp: Path):
    """The Produce requests sent as v11 (the same layout as the recorded v10)."""
    p = tmp / "produce-v11.pcap"
    assert (
        patch_frame(GZIP, p, lambda ex: api(ex, ApiKey.PRODUCE), "request", 2, struct.pack(">h", 11), 99) == 3
    )
    return GZIP, p, "Produce v11 (baseline: v10)"


def _bl_request_shape(tmp: Path):
    p = tmp / "acks1.pcap"
    patch_field(GZIP, p, lambda ex: api(ex, ApiKey.PRODUCE), "request", "acks", struct.pack(">h", 1))
    return GZIP, p, "produce.acks: -1, 1"


def _bl_handshake(tmp: Path):
    """Three connections start with ApiVersions; in the regressed recording one starts with
    Metadata (the client skipped the version negotiation)."""
    good = [client_conn(40000 + i, ["ApiVersions", "Metadata"]) for i in range(3)]
    bad = good[:2] + [client_conn(40002, ["Metadata", "ApiVersions"])]
    return (
        write(tmp / "hs-good.pcap", good),
        write(tmp / "hs-bad.pcap", bad),
        "connections start with Metadata",
    )


def _bl_errors(tmp: Path):
    """A Fetch answered NOT_LEADER_OR_FOLLOWER (its top-level error code: no record is lost, which
    baseline.producer-lost would say of a Produce answered so)."""
    p = tmp / "not-leader.pcap"
    patch_field(GZIP, p, lambda ex: api(ex, ApiKey.FETCH), "response", "error_code", struct.pack(">h", 6))
    return GZIP, p, "Fetch answered NOT_LEADER_OR_FOLLOWER (1x), new"


def _bl_latency(tmp: Path):
    from tests.helpers.capture_patch import delay_responses

    p = tmp / "slow.pcap"
    assert delay_responses(GZIP, p, lambda ex: api(ex, ApiKey.PRODUCE), 0.080) > 0
    return GZIP, p, "Produce p50 latency 80."


def _bl_requests(tmp: Path):
    """The same connections, each sending 8 Metadata requests instead of 4 (+100%)."""
    good = [client_conn(40000 + i, ["ApiVersions", "Metadata"], n_metadata=4) for i in range(2)]
    bad = [client_conn(40000 + i, ["ApiVersions", "Metadata"], n_metadata=8) for i in range(2)]
    return (
        write(tmp / "rq-good.pcap", good),
        write(tmp / "rq-bad.pcap", bad),
        "Metadata: 16 requests (baseline 8",
    )


REGRESSIONS = {
    "baseline.clients": _bl_clients,
    "baseline.api-versions": _bl_api_versions,
    "baseline.request-shape": _bl_request_shape,
    "baseline.handshake": _bl_handshake,
    "baseline.errors": _bl_errors,
    "baseline.latency": _bl_latency,
    "baseline.requests": _bl_requests,
}


def test_every_baseline_dimension_has_a_regression():
    # the consumer groups' dimensions are regressed in test_baseline_groups.py, the producers'
    # in test_baseline_producers.py, the clients' health in test_baseline_clients.py
    mine = (
        "baseline.group",
        "baseline.producer",
        "baseline.transactions",
        "baseline.e2e",
        "baseline.client-",
    )
    assert set(REGRESSIONS) == {d for d in DIMENSIONS if not d.startswith(mine)}


@pytest.mark.parametrize("rid", sorted(REGRESSIONS))
def test_baseline_dimension_regression_is_caught(tmp_path, rid):
    source, regressed, words = REGRESSIONS[rid](tmp_path)
    base = baseline_of(tmp_path, source)
    _, doc = check_json(source, "--baseline", base)
    held = {r["id"]: r["status"] for r in doc["rules"] if r["source"] == "baseline"}
    assert held == dict.fromkeys(DIMENSIONS, "passed"), held
    rc, doc = check_json(regressed, "--baseline", base)
    r = rule(doc, rid)
    assert rc == 1 and r["status"] == "failed" and r["severity"] == "error", r
    f = r["findings"][0]
    assert words in f["message"], f
    others = {x["id"] for x in doc["rules"] if x["source"] == "baseline" and x["status"] == "failed"}
    assert others == {rid}, others
