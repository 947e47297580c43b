"""librdkafka (confluent-kafka) scenarios: producers and consumers by codec, KIP-848, acks=0,
SASL, TLS, transactions and the AdminClient, against the mock cluster. Their building blocks
(:func:`rdk_produce`, :func:`rdk_consume`, :func:`scenario_rdk_codec`) serve other brokers'
scenarios too."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from .core import CODECS, GROUP_LINGER_S, TSHARK40_CAPS, Ctx, Msg, Scenario, edge_messages, enc, messages
from .sasl import SASL_NOTE, SASL_PASSWORD, SASL_USER

NAME = "librdkafka"


def version() -> str:
    import confluent_kafka

    return f"librdkafka {confluent_kafka.libversion()[0]} (confluent-kafka {confluent_kafka.__version__})"


def _rdk_ts(msg: Any) -> int | None:
    kind, ts = msg.timestamp()
    return ts if kind != 0 else None


def rdk_produce(ctx: Ctx, topic: str, msgs: list[Msg], conf: dict[str, Any]) -> None:
    from confluent_kafka import Producer

    p = Producer(
        {"bootstrap.servers": ctx.bootstrap, "client.id": f"gen-{ctx.name}", "linger.ms": 100, **conf}
    )
    produce_into(ctx, p, topic, msgs)
    left = p.flush(min(20.0, ctx.left()))
    if left:
        ctx.events.note(f"{left} message(s) not delivered at flush timeout")


def produce_into(ctx: Ctx, p: Any, topic: str, msgs: list[Msg], txn: str | None = None) -> None:
    """Produce ``msgs``; each delivery report adds a "produced" event (the headers come from
    ``msgs``: librdkafka's delivery reports carry none)."""
    extra = {"transaction": txn} if txn else {}

    def report(m: Msg) -> Callable[[Any, Any], None]:
        def delivered(err: Any, dr: Any) -> None:
            if err is not None:
                ctx.events.note(f"delivery failed for key {m.key!r}: {err}")
                return
            offset = dr.offset()  # None with acks=0
            ctx.events.record(
                "produced",
                dr.topic(),
                dr.partition(),
                offset if offset is not None and offset >= 0 else None,
                m.key,
                m.value,
                list(m.headers or ()),
                m.timestamp,
                **extra,
            )

        return delivered

    for m in msgs:
        headers = [(k, enc(v)) for k, v in m.headers or ()]
        p.produce(
            topic,
            value=enc(m.value),
            key=enc(m.key),
            partition=m.partition,
            headers=headers,
            timestamp=m.timestamp or 0,
            on_delivery=report(m),
        )
    p.poll(0)


def rdk_consume(
    ctx: Ctx, topics: list[str], expect: int, conf: dict[str, Any], group: str | None = None, note: str = ""
) -> None:
    """Read back ``expect`` records, as a consumer group (subscribe) or by assign()."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    settings = {
        "bootstrap.servers": ctx.bootstrap,
        "client.id": f"gen-{ctx.name}-consumer",
        "group.id": group or f"unused-{ctx.name}",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
        **conf,
    }
    if settings.get("group.protocol") == "consumer":  # KIP-848: the broker sets these
        del settings["session.timeout.ms"], settings["heartbeat.interval.ms"]
    c = Consumer(settings)
    if group:
        c.subscribe(topics)
    else:
        c.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t in topics for p in range(3)])
    got = 0
    end = time.monotonic() + min(25.0, ctx.left())
    while got < expect and time.monotonic() < end:
        m = c.poll(0.3)
        if m is None:
            continue
        if m.error():
            ctx.events.note(f"consumer error: {m.error()}")
            continue
        got += 1
        ctx.events.record(
            "consumed",
            m.topic(),
            m.partition(),
            m.offset(),
            m.key(),
            m.value(),
            m.headers() or [],
            _rdk_ts(m),
            **({"consumer": note} if note else {}),
        )
    if got < expect:
        ctx.events.note(f"consumer {note or group or 'assign'} got {got} of {expect} records")
    if group:
        end = time.monotonic() + GROUP_LINGER_S
        while time.monotonic() < end:
            if (m := c.poll(0.2)) is not None and not m.error():
                ctx.events.note(f"unexpected extra record at offset {m.offset()}")
    if group and got:
        c.commit(asynchronous=False)
    c.close()


def scenario_rdk_codec(codec: str) -> Callable[[Ctx], None]:
    def run(ctx: Ctx) -> None:
        topic = f"rdk-{codec}"
        msgs = messages(ctx.name, 9)
        msgs += edge_messages(ctx.name, len(msgs))
        rdk_produce(ctx, topic, msgs, {"compression.type": codec, "acks": "all"})
        rdk_consume(ctx, [topic], len(msgs), {}, group=f"g-{ctx.name}")

    return run


def scenario_rdk_kip848(ctx: Ctx) -> None:
    """The KIP-848 consumer group protocol: ConsumerGroupHeartbeat instead of Join/Sync."""
    topic = "rdk-kip848"
    msgs = messages(ctx.name, 9)
    rdk_produce(ctx, topic, msgs, {"compression.type": "zstd", "acks": "all"})
    rdk_consume(ctx, [topic], len(msgs), {"group.protocol": "consumer"}, group=f"g-{ctx.name}")


def scenario_rdk_acks0(ctx: Ctx) -> None:
    topic = "rdk-acks0"
    msgs = messages(ctx.name, 6)
    rdk_produce(ctx, topic, msgs, {"acks": "0", "compression.type": "none"})
    time.sleep(0.3)  # nothing acknowledges acks=0 produces: let them land before reading back
    rdk_consume(ctx, [topic], len(msgs), {}, note="assign")


def rdk_sasl_conf(mechanism: str) -> dict[str, Any]:
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": SASL_USER,
        "sasl.password": SASL_PASSWORD,
    }


def scenario_rdk_sasl(mechanism: str, topic: str) -> Callable[[Ctx], None]:
    def run(ctx: Ctx) -> None:
        msgs = messages(ctx.name, 6)
        conf = rdk_sasl_conf(mechanism)
        rdk_produce(ctx, topic, msgs, {"acks": "all", **conf})
        rdk_consume(ctx, [topic], len(msgs), conf, group=f"g-{ctx.name}")

    return run


def scenario_rdk_tls(ctx: Ctx) -> None:
    """librdkafka over TLS (its own OpenSSL) through the TLS front-end, verifying the certificate."""
    topic = "rdk-tls"
    msgs = messages(ctx.name, 6)
    conf = {"security.protocol": "SSL", "ssl.ca.location": os.environ["KGEN_TLS_CA"]}
    rdk_produce(ctx, topic, msgs, {"acks": "all", **conf})
    rdk_consume(ctx, [topic], len(msgs), conf, group=f"g-{ctx.name}")


def scenario_rdk_txn(ctx: Ctx) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic, source = "rdk-txn", "rdk-txn-source"
    p = Producer(
        {
            "bootstrap.servers": ctx.bootstrap,
            "client.id": f"gen-{ctx.name}",
            "transactional.id": f"txn-{ctx.name}",
            "linger.ms": 50,
        }
    )
    p.init_transactions(15)

    p.begin_transaction()
    produce_into(ctx, p, topic, messages(f"{ctx.name}-commit1", 3), txn="committed")
    p.commit_transaction(15)

    p.begin_transaction()
    produce_into(ctx, p, topic, messages(f"{ctx.name}-abort", 3), txn="aborted")
    p.flush(10)  # make the aborted records reach the log before the abort marker
    p.abort_transaction(15)

    p.begin_transaction()
    produce_into(ctx, p, topic, messages(f"{ctx.name}-commit2", 3), txn="committed")
    group = f"g-{ctx.name}"
    meta_consumer = Consumer(
        {"bootstrap.servers": ctx.bootstrap, "group.id": group, "client.id": f"gen-{ctx.name}-meta"}
    )
    try:
        p.send_offsets_to_transaction(
            [TopicPartition(source, 0, 7)], meta_consumer.consumer_group_metadata(), 15
        )
        ctx.events.emit("op", name="send_offsets_to_transaction", group=group, offsets=[[source, 0, 7]])
    finally:
        meta_consumer.close()
    p.commit_transaction(15)
    p.flush(5)

    rdk_consume(ctx, [topic], 6, {"isolation.level": "read_committed"}, note="read_committed")
    rdk_consume(ctx, [topic], 9, {"isolation.level": "read_uncommitted"}, note="read_uncommitted")


def scenario_rdk_admin(ctx: Ctx) -> None:
    """The AdminClient calls the mock answers (it has no CreateTopics, DeleteTopics,
    DescribeConfigs, ListGroups, DescribeGroups or DeleteRecords: librdkafka refuses those
    locally after ApiVersions, so they never reach the wire)."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicCollection, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    topic, group = "rdk-admin", f"g-{ctx.name}"
    msgs = messages(ctx.name, 6)
    rdk_produce(ctx, topic, msgs, {})
    rdk_consume(ctx, [topic], len(msgs), {}, group=group)

    a = AdminClient({"bootstrap.servers": ctx.bootstrap, "client.id": f"gen-{ctx.name}"})

    def op(name: str, fn: Callable[[], Any]) -> None:
        try:
            result = fn()
        except Exception as exc:  # noqa: BLE001 - the mock's answer is what we record
            ctx.events.emit("op", name=name, ok=False, error=str(exc))
            ctx.events.note(f"{name} failed: {exc}")
            return
        ctx.events.emit("op", name=name, ok=True, result=result)

    def cluster() -> dict[str, Any]:
        d = a.describe_cluster(include_authorized_operations=True).result(10)
        return {"controller": d.controller.id, "nodes": sorted(n.id for n in d.nodes)}

    def topics() -> dict[str, Any]:
        fs = a.describe_topics(TopicCollection([topic]), include_authorized_operations=True)
        return {t: [p.id for p in f.result(10).partitions] for t, f in fs.items()}

    def offsets() -> list[list[Any]]:
        specs = {
            "earliest": OffsetSpec.earliest(),
            "latest": OffsetSpec.latest(),
            "max_timestamp": OffsetSpec.max_timestamp(),
        }
        out = []
        for label, spec in specs.items():
            fs = a.list_offsets({TopicPartition(topic, p): spec for p in range(3)})
            out += [
                [label, tp.partition, f.result(10).offset]
                for tp, f in sorted(fs.items(), key=lambda kv: kv[0].partition)
            ]
        return out

    def group_offsets() -> list[list[Any]]:
        parts = [TopicPartition(topic, p) for p in range(3)]
        fs = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group, parts)])
        return sorted(
            [tp.topic, tp.partition, tp.offset] for f in fs.values() for tp in f.result(10).topic_partitions
        )

    def alter() -> list[list[Any]]:
        req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 1)])
        fs = a.alter_consumer_group_offsets([req])
        return sorted(
            [tp.topic, tp.partition, tp.offset] for f in fs.values() for tp in f.result(10).topic_partitions
        )

    op("describe_cluster", cluster)
    op("describe_topics", topics)
    op("list_offsets", offsets)
    op("list_consumer_group_offsets", group_offsets)
    op("alter_consumer_group_offsets", alter)
    op("list_consumer_group_offsets_after_alter", group_offsets)


def scenarios() -> list[Scenario]:
    """The librdkafka scenarios against the mock cluster, in manifest order."""
    out: list[Scenario] = []
    for codec in CODECS:
        out.append(
            Scenario(
                f"librdkafka-produce-consume-{codec}",
                "librdkafka",
                "auto (ApiVersions)",
                codec,
                (f"rdk-{codec}",),
                scenario_rdk_codec(codec),
                f"librdkafka producer (acks=all, compression.type={codec}, record batch v2) sends "
                f"9 keyed records with headers over 3 partitions, then a null key, a tombstone "
                f"(null value), an empty value and an 8 KB value spanning several TCP segments; a "
                f"consumer group (subscribe, JoinGroup/SyncGroup/Heartbeat) fetches them back, "
                f"commits and leaves.",
            )
        )
    out.append(
        Scenario(
            "librdkafka-capped-apis-gzip",
            "librdkafka",
            "auto (ApiVersions), mock capped",
            "gzip",
            ("rdk-gzip",),
            scenario_rdk_codec("gzip"),
            "As librdkafka-produce-consume-gzip, but the mock advertises at most the request "
            "versions tshark 4.0 decodes (Produce v8, Fetch v11, ListOffsets v5, Metadata v8, "
            "OffsetCommit v8; no telemetry APIs), so tshark can cross-check a librdkafka capture.",
            api_caps=TSHARK40_CAPS,
        )
    )
    out.append(
        Scenario(
            "librdkafka-kip848",
            "librdkafka",
            "auto (ApiVersions), group.protocol=consumer",
            "zstd",
            ("rdk-kip848",),
            scenario_rdk_kip848,
            "KIP-848 consumer group: a zstd producer, then a consumer with group.protocol=consumer "
            "that joins, gets its assignment and commits through ConsumerGroupHeartbeat (API 68) "
            "instead of JoinGroup/SyncGroup/Heartbeat.",
        )
    )
    out.append(
        Scenario(
            "librdkafka-acks0",
            "librdkafka",
            "auto (ApiVersions)",
            "none",
            ("rdk-acks0",),
            scenario_rdk_acks0,
            "librdkafka producer with acks=0 (RequiredAcks 0 in each Produce request); an "
            "assign() consumer fetches the records back.",
            notes=(
                "The mock cluster answers every Produce request, even with acks=0 (a real "
                "broker sends no response), so each acks=0 Produce here has a response.",
            ),
        )
    )
    out.append(
        Scenario(
            "librdkafka-txn",
            "librdkafka",
            "auto (ApiVersions)",
            "none",
            ("rdk-txn", "rdk-txn-source"),
            scenario_rdk_txn,
            "Transactional producer: InitProducerId, a committed transaction, an aborted one, a "
            "committed one with send_offsets_to_transaction (AddOffsetsToTxn/TxnOffsetCommit); "
            "then a read_committed and a read_uncommitted consumer fetch the topic (control "
            "batches with commit/abort markers, aborted-transaction lists).",
        )
    )
    out.append(
        Scenario(
            "librdkafka-admin",
            "librdkafka",
            "auto (ApiVersions)",
            "none",
            ("rdk-admin",),
            scenario_rdk_admin,
            "A small produce and consumer-group round, then AdminClient describe_cluster and "
            "describe_topics (Metadata with authorized operations), list_offsets (ListOffsets "
            "earliest/latest/max_timestamp), list_consumer_group_offsets (OffsetFetch) and "
            "alter_consumer_group_offsets (OffsetCommit).",
            notes=(
                "The mock cluster advertises no CreateTopics, DeleteTopics, CreatePartitions, "
                "DescribeConfigs, ListGroups, DescribeGroups or DeleteRecords in ApiVersions, "
                "so librdkafka fails those AdminClient calls locally (_UNSUPPORTED_FEATURE) "
                "without sending anything; they are left out.",
            ),
        )
    )
    for mech, slug in (("PLAIN", "plain"), ("SCRAM-SHA-256", "scram")):
        topic = f"rdk-sasl-{slug}"
        out.append(
            Scenario(
                f"librdkafka-sasl-{slug}",
                "librdkafka",
                "auto (ApiVersions)",
                "none",
                (topic,),
                scenario_rdk_sasl(mech, topic),
                f"librdkafka producer and consumer group over SASL_PLAINTEXT, sasl.mechanism={mech}, "
                f"user {SASL_USER!r}, password {SASL_PASSWORD!r}: on every connection ApiVersions, "
                f"SaslHandshake v1, then SaslAuthenticate "
                + (
                    "(one PLAIN token)"
                    if mech == "PLAIN"
                    else "twice (SCRAM client-first and client-final with the proof)"
                )
                + "; 6 keyed records with headers over 3 partitions, fetched back by the group.",
                notes=SASL_NOTE,
                sasl=mech,
            )
        )
    from .tls import HOST

    out.append(
        Scenario(
            "librdkafka-tls-tls13-aes128gcm",
            "librdkafka",
            "auto (ApiVersions)",
            "none",
            ("rdk-tls",),
            scenario_rdk_tls,
            f"librdkafka producer and consumer group over TLS 1.3 (TLS_AES_128_GCM_SHA256) through "
            f"the TLS front-end on {HOST} (security.protocol=SSL, certificate verified): 6 keyed "
            "records over 3 partitions, fetched back",
            timeout=40.0,
            tls="tls13-aes128gcm",
        )
    )
    return out
