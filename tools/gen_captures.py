"""Record real Kafka client traffic into small pcap files (the committed ``captures/``).

Every scenario runs against librdkafka's built-in mock cluster (3 brokers on 127.0.0.1),
created through the librdkafka shared library that ships inside confluent-kafka. The mock
cluster, the clients and ``tcpdump -i lo`` all run inside a private network namespace
(``kgen``) whose loopback has a 1500-byte MTU and no segmentation offloads, so the packets
are sized as on a real Ethernet network. Nothing leaves that namespace.

The mock cluster has no SASL (no SaslHandshake or SaslAuthenticate handler). The SASL scenarios
(``*-sasl-*``) therefore put a small SASL front-end in front of each mock broker (in the mock's
process): it answers ApiVersions (the mock's answer plus the two SASL APIs), SaslHandshake v0/v1,
SaslAuthenticate v0-v2 and raw SASL tokens (after SaslHandshake v0) for PLAIN, SCRAM-SHA-256 and
SCRAM-SHA-512 (user ``alice``, password ``alice-secret``), then relays the connection to the
mock broker, which advertises the front-end's ports. tcpdump records only the front-end's ports.

Each scenario runs in its own subprocess with a time limit; whatever was captured is kept
even if the client hung or failed, and the manifest says so in ``notes``. Records produced
and consumed are written to ``captures/manifest.json`` (a list, one object per pcap).

Usage (root is needed for the namespace and tcpdump)::

    sudo .venv/bin/python tools/gen_captures.py                      # all scenarios
    sudo .venv/bin/python tools/gen_captures.py --only librdkafka-txn  # one (repeatable)
    sudo .venv/bin/python tools/gen_captures.py --out /tmp/caps        # another directory
    sudo .venv/bin/python tools/gen_captures.py --list                 # scenario names
    .venv/bin/python tools/gen_captures.py --check                     # tshark summary
    sudo .venv/bin/python tools/gen_captures.py --bench 250 --out /tmp/bench

``--only`` replaces just that scenario's entry in an existing manifest. Extra packages a
scenario needs (``xxhash`` for kafka-python LZ4 at 0.8.2/0.9) are pip-installed with
``--target`` into ``~/.cache/kafka-analyzer-gen-captures/pydeps`` when the venv lacks them.

``--check`` runs tshark over the captures listed in the manifest (decoding every broker port
as Kafka) and prints, per file, the Kafka PDUs found by splitting each TCP stream on the
length prefix, tshark's PDU count and its malformed packets.

``--bench SIZE_MB`` records librdkafka producers and a consumer group using every codec until
the pcap reaches SIZE_MB MiB (it ends a little larger: the clients then shut down cleanly),
writing ``bench-<SIZE_MB>mb.pcap`` and ``bench-<SIZE_MB>mb.json`` (a summary, not the
records: payloads follow a seeded rule) into ``--out``.

Internal modes (used by the parent process, run inside the namespace): ``--serve-mock``
starts the mock cluster and prints its bootstrap list; ``--worker NAME`` runs one scenario
and appends JSON lines (records produced/consumed, notes) to ``--events``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import ctypes
import hashlib
import hmac
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

NETNS = os.environ.get("KGEN_NETNS", "kgen")  # another name lets two generators run at once
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from analyzer.dissect.constants import ApiKey, ErrorCode  # noqa: E402  (pure Python, no deps)

DEFAULT_OUT = ROOT / "captures"
MANIFEST = "manifest.json"
NUM_BROKERS = 3
FILLER = "the quick brown fox jumps over the lazy dog. "
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
TCPDUMP_START_S = 0.5  # give tcpdump time to start before the clients run
TCPDUMP_DRAIN_S = 0.5  # let the last FIN/ACKs pass before stopping tcpdump
# (api key, min, max version): what tshark 4.0 decodes; -1 hides the API
TSHARK40_CAPS = ((0, 0, 8), (1, 0, 11), (2, 0, 5), (3, 0, 8), (8, 0, 8), (71, -1, -1), (72, -1, -1))
GROUP_LINGER_S = 1.6  # a group member keeps polling this long after the last record: Heartbeats


# --------------------------------------------------------------------------------------
# Payloads and the event log a worker writes
# --------------------------------------------------------------------------------------


BASE_TS = 1_700_000_000_000  # CreateTime of record i is BASE_TS + 1000 * i (ms)


@dataclass(frozen=True, slots=True)
class Msg:
    partition: int
    key: str | None
    value: str | None
    headers: tuple[tuple[str, str], ...] | None = None
    timestamp: int | None = None


def messages(
    scenario: str, count: int, partitions: int = 3, headers: bool = True, repeat: int = 6
) -> list[Msg]:
    """Deterministic keyed records: key ``k-<scenario>-<i>``, value ``v-<scenario>-<i>-...``."""
    out = []
    for i in range(count):
        hdrs = None
        if headers:
            hdrs = (("h1", f"h1-{scenario}-{i}"), ("h2", f"h2-{i % 2}"))
        out.append(
            Msg(
                i % partitions,
                f"k-{scenario}-{i}",
                f"v-{scenario}-{i}-" + FILLER * repeat,
                hdrs,
                BASE_TS + 1000 * i,
            )
        )
    return out


def edge_messages(scenario: str, first: int) -> list[Msg]:
    """Records with a null key, a null value (tombstone), an empty value and an 8 KB value of
    seeded hex digits that still spans several TCP segments once compressed."""
    big = random.Random(f"big-{scenario}").randbytes(4200).hex()
    ts = [BASE_TS + 1000 * (first + j) for j in range(4)]
    return [
        Msg(0, None, f"v-{scenario}-{first}-null-key", (("h1", "null-key"),), ts[0]),
        Msg(1, f"k-{scenario}-{first + 1}-tombstone", None, None, ts[1]),
        Msg(2, f"k-{scenario}-{first + 2}-empty", "", (), ts[2]),
        Msg(
            0,
            f"k-{scenario}-{first + 3}-big",
            f"v-{scenario}-{first + 3}-big-" + big,
            (("h1", "big"),),
            ts[3],
        ),
    ]


def enc(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


def dec(raw: bytes | str | None) -> str | None:
    if raw is None or isinstance(raw, str):
        return raw
    return raw.decode("utf-8")


def dec_headers(raw: Any) -> list[list[str | None]] | None:
    if raw is None:
        return None
    return [[k if isinstance(k, str) else k.decode(), dec(v)] for k, v in raw]


class Events:
    """JSON lines, flushed one by one so a killed worker still leaves what it did."""

    def __init__(self, path: Path) -> None:
        self._fh: TextIO = path.open("a", encoding="utf-8", buffering=1)
        self._lock = threading.Lock()

    def emit(self, kind: str, **data: Any) -> None:
        with self._lock:
            self._fh.write(json.dumps({"kind": kind, **data}) + "\n")
            self._fh.flush()

    def note(self, text: str) -> None:
        self.emit("note", text=text)

    def record(
        self,
        kind: str,
        topic: str,
        partition: int | None,
        offset: int | None,
        key: Any,
        value: Any,
        headers: Any,
        timestamp: int | None = None,
        **extra: Any,
    ) -> None:
        self.emit(
            kind,
            topic=topic,
            partition=partition,
            offset=offset,
            key=dec(key),
            value=dec(value),
            headers=dec_headers(headers),
            timestamp=timestamp,
            **extra,
        )

    def close(self) -> None:
        self._fh.close()


@dataclass
class Ctx:
    name: str
    bootstrap: str
    events: Events
    deadline: float

    def left(self) -> float:
        return max(0.0, self.deadline - time.monotonic())


# --------------------------------------------------------------------------------------
# librdkafka (confluent-kafka) scenarios
# --------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------
# kafka-python scenarios (legacy message sets at old api_version settings)
# --------------------------------------------------------------------------------------


def scenario_kafka_python(
    api_version: tuple[int, ...], codec: str, sasl: str = "", tls: str = ""
) -> Callable[[Ctx], None]:
    """kafka-python at ``api_version``; over SASL_PLAINTEXT with mechanism ``sasl`` if given;
    through the TLS front-end with ``tls`` (a profile of tools/gen/tls.py; ``plain`` is its
    clear-text twin): then every TLS scenario produces the same records to topic ``kp-tls``."""

    def run(ctx: Ctx) -> None:
        from kafka import KafkaConsumer, KafkaProducer, TopicPartition

        topic = f"kp-sasl-{codec}" if sasl else "kp-tls" if tls else f"kp-{codec}"
        security: dict[str, Any] = {}
        if tls and tls != "plain":
            from gen.tls import client_context

            security = {"security_protocol": "SSL", "ssl_context": client_context(os.environ["KGEN_TLS_CA"])}
        if sasl:
            security = {
                "security_protocol": "SASL_PLAINTEXT",
                "sasl_mechanism": sasl,
                "sasl_plain_username": SASL_USER,
                "sasl_plain_password": SASL_PASSWORD,
            }
        headers = api_version >= (0, 11)
        msgs = messages("kafka-python-tls" if tls else ctx.name, 6, headers=headers)
        p = KafkaProducer(
            bootstrap_servers=ctx.bootstrap,
            api_version=api_version,
            client_id=f"gen-{ctx.name}",
            compression_type=None if codec == "none" else codec,
            linger_ms=100,
            request_timeout_ms=5000,
            delivery_timeout_ms=12000,
            retries=1,
            **security,
        )
        with_ts = api_version >= (0, 10)  # magic 0 has no timestamp
        futures = []
        for m in msgs:
            kwargs: dict[str, Any] = {}
            if m.headers is not None:
                kwargs["headers"] = [(k, enc(v)) for k, v in m.headers]
            futures.append(
                (
                    m,
                    p.send(
                        topic,
                        value=enc(m.value),
                        key=enc(m.key),
                        partition=m.partition,
                        timestamp_ms=m.timestamp,
                        **kwargs,
                    ),
                )
            )
        p.flush(timeout=15)
        delivered = 0
        for m, fut in futures:
            try:
                md = fut.get(timeout=1)
            except Exception as exc:  # noqa: BLE001 - recorded in the manifest
                # Still in the Produce request on the wire: keep it, with the error.
                ctx.events.record(
                    "produced",
                    topic,
                    m.partition,
                    None,
                    m.key,
                    m.value,
                    m.headers,
                    m.timestamp if with_ts else None,
                    error=type(exc).__name__,
                )
                continue
            delivered += 1
            ctx.events.record(
                "produced",
                topic,
                md.partition,
                md.offset,
                m.key,
                m.value,
                m.headers,
                m.timestamp if with_ts else None,
            )
        p.close(timeout=5)
        if not delivered:
            return

        group = f"g-{ctx.name}" if api_version >= (0, 9) else None
        c = KafkaConsumer(
            bootstrap_servers=ctx.bootstrap,
            api_version=api_version,
            client_id=f"gen-{ctx.name}-consumer",
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
            request_timeout_ms=8000,
            **security,
        )
        if group:
            c.subscribe([topic])
        else:
            c.assign([TopicPartition(topic, i) for i in range(3)])
        got = 0
        end = time.monotonic() + min(20.0, ctx.left())
        while got < delivered and time.monotonic() < end:
            for batch in c.poll(timeout_ms=300).values():
                for r in batch:
                    got += 1
                    ts = r.timestamp if r.timestamp not in (None, -1) else None
                    ctx.events.record(
                        "consumed",
                        r.topic,
                        r.partition,
                        r.offset,
                        r.key,
                        r.value,
                        (r.headers or []) if headers else None,
                        ts,
                    )
        if got < delivered:
            ctx.events.note(f"consumer got {got} of {delivered} records")
        if group and got:
            end = time.monotonic() + GROUP_LINGER_S
            while time.monotonic() < end:
                c.poll(timeout_ms=200)
            c.commit()
        c.close()

    return run


# --------------------------------------------------------------------------------------
# aiokafka scenarios
# --------------------------------------------------------------------------------------


def scenario_aiokafka(codec: str) -> Callable[[Ctx], None]:
    async def main(ctx: Ctx) -> None:
        from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

        topic = f"aio-{codec}"
        msgs = messages(ctx.name, 6)
        p = AIOKafkaProducer(
            bootstrap_servers=ctx.bootstrap,
            client_id=f"gen-{ctx.name}",
            compression_type=None if codec == "none" else codec,
            linger_ms=100,
            request_timeout_ms=8000,
        )
        await p.start()
        try:
            futs = [
                (
                    m,
                    await p.send(
                        topic,
                        value=enc(m.value),
                        key=enc(m.key),
                        partition=m.partition,
                        timestamp_ms=m.timestamp,
                        headers=[(k, enc(v)) for k, v in m.headers or ()],
                    ),
                )
                for m in msgs
            ]
            for m, fut in futs:
                md = await fut
                ctx.events.record(
                    "produced",
                    topic,
                    md.partition,
                    md.offset,
                    m.key,
                    m.value,
                    list(m.headers or ()),
                    m.timestamp,
                )
        finally:
            await p.stop()

        c = AIOKafkaConsumer(
            topic,
            bootstrap_servers=ctx.bootstrap,
            group_id=f"g-{ctx.name}",
            client_id=f"gen-{ctx.name}-consumer",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
        )
        await c.start()
        got = 0
        try:
            end = time.monotonic() + min(20.0, ctx.left())
            while got < len(msgs) and time.monotonic() < end:
                for batch in (await c.getmany(timeout_ms=300)).values():
                    for r in batch:
                        got += 1
                        ctx.events.record(
                            "consumed",
                            r.topic,
                            r.partition,
                            r.offset,
                            r.key,
                            r.value,
                            list(r.headers),
                            r.timestamp,
                        )
            if got < len(msgs):
                ctx.events.note(f"consumer got {got} of {len(msgs)} records")
            if got:
                await c.getmany(timeout_ms=int(GROUP_LINGER_S * 1000))
                await c.commit()
        finally:
            await c.stop()

    def run(ctx: Ctx) -> None:
        asyncio.run(main(ctx))

    return run


# --------------------------------------------------------------------------------------
# Scenario table
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    name: str
    client: str  # "librdkafka", "kafka-python" or "aiokafka"
    api_version: str
    codec: str
    topics: tuple[str, ...]  # created in the mock (3 partitions) before the capture starts
    run: Callable[[Ctx], None]
    description: str
    timeout: float = 60.0
    notes: tuple[str, ...] = ()  # known limitations, copied into the manifest
    needs: tuple[str, ...] = ()  # extra PyPI packages, installed with pip --target if missing
    api_caps: tuple[tuple[int, int, int], ...] = ()  # (api key, min, max) the mock advertises
    sasl: str = ""  # the client's SASL mechanism: SASL_PLAINTEXT through the SASL front-end
    tls: str = ""  # a TLS front-end profile (tools/gen/tls.py); "plain": the same without TLS


def _kp_version(v: tuple[int, ...]) -> str:
    return ".".join(map(str, v))


def build_scenarios() -> list[Scenario]:
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
    for api in ((0, 8, 2), (0, 9), (0, 10, 0), (0, 11)):
        fmt = {
            (0, 8, 2): "message set magic 0",
            (0, 9): "message set magic 0",
            (0, 10, 0): "message set magic 1",
            (0, 11): "record batch v2",
        }[api]
        for codec in ("none", "gzip", "snappy", "lz4"):
            v = _kp_version(api)
            consumer = (
                "an assign() consumer (no group)" if api < (0, 9) else "a consumer group (subscribe, commit)"
            )
            nested = "" if codec == "none" else f", {codec} wrapper around the inner records"
            notes: tuple[str, ...] = ()
            if codec != "none" and api < (0, 11):
                notes = (
                    "The mock cluster only stores uncompressed legacy message sets: it "
                    "answers this Produce with UNSUPPORTED_VERSION (35), so the capture "
                    "holds the compressed message set in the Produce request only and "
                    "nothing is fetched back.",
                )
            needs = ("xxhash",) if codec == "lz4" and api < (0, 10) else ()
            out.append(
                Scenario(
                    f"kafka-python-{v}-{codec}",
                    "kafka-python",
                    v,
                    codec,
                    (f"kp-{codec}",),
                    scenario_kafka_python(api, codec),
                    f"kafka-python api_version={v}: producer with compression {codec} ({fmt}"
                    f"{nested}), 6 keyed records{' with headers' if api >= (0, 11) else ''} over "
                    f"3 partitions; {consumer} fetches them back.",
                    timeout=40.0,
                    notes=notes,
                    needs=needs,
                )
            )
    sasl_note = (
        "librdkafka's mock cluster has no SASL: it advertises neither SaslHandshake nor "
        "SaslAuthenticate in ApiVersions (rd_kafka_mock_set_apiversion cannot add them: they have "
        "no handler) and closes the connection on either request. The generator's SASL front-end "
        "(tools/gen_captures.py, SASL_PLAINTEXT with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 like "
        "a Kafka broker's listener) therefore answers ApiVersions (the mock's list plus "
        "SaslHandshake v0-v1 and SaslAuthenticate v0-v2), the SASL requests and tokens; after "
        "authentication it relays the connection byte for byte to the mock broker, which "
        "advertises the front-end's ports. The client's bytes are the client's own; the SASL "
        "answers are the front-end's. The front-end's own connections to the mock are not "
        "captured.",
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
                notes=sasl_note,
                sasl=mech,
            )
        )
    kp_sasl: tuple[tuple[tuple[int, ...], str, str, tuple[str, ...]], ...] = (
        (
            (0, 10, 0),
            "kafka-python-0.10.0-sasl-plain",
            "ApiVersions v0, SaslHandshake v0, then the PLAIN token as a raw size-prefixed frame "
            "(not a Kafka request) answered by an empty raw frame; producer (Produce v2, message "
            "set magic 1) with 6 keyed records",
            (),
        ),
        (
            (2, 3),
            "kafka-python-sasl-plain",
            "ApiVersions v2, SaslHandshake v1, then SaslAuthenticate v1; producer (Produce v7, "
            "record batch v2) with 6 keyed records with headers",
            (
                "api_version 2.3 is the newest kafka-python setting that works with the mock: "
                "from 2.4 kafka-python sends ApiVersions v3, cannot decode the mock's "
                "UNSUPPORTED_VERSION answer (KafkaProtocolError: Unable to decode response), "
                "drops the connection and retries until it times out; so SaslAuthenticate v2 "
                "(flexible; kafka-python from 2.5) is not in these captures.",
            ),
        ),
    )
    for api, name, how, extra in kp_sasl:
        out.append(
            Scenario(
                name,
                "kafka-python",
                _kp_version(api),
                "none",
                ("kp-sasl-none",),
                scenario_kafka_python(api, "none", sasl="PLAIN"),
                f"kafka-python api_version={_kp_version(api)} over SASL_PLAINTEXT, "
                f"sasl_mechanism=PLAIN, user {SASL_USER!r}, password {SASL_PASSWORD!r}: on every "
                f"connection {how} over 3 partitions; a consumer group fetches them back.",
                timeout=40.0,
                notes=sasl_note + extra,
                sasl="PLAIN",
            )
        )
    from gen.tls import HOST, PROFILES

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
    for profile in (*PROFILES, "plain"):
        version, _cipher, iana = PROFILES.get(profile, ("clear text", "", ""))
        how = f"over {version} ({iana})" if profile != "plain" else "in clear text (the TLS scenarios' twin)"
        out.append(
            Scenario(
                f"kafka-python-tls-{profile}",
                "kafka-python",
                "2.3",
                "none",
                ("kp-tls",),
                scenario_kafka_python((2, 3), "none", tls=profile),
                f"kafka-python api_version=2.3 {how} through the TLS front-end on {HOST}: producer "
                "(Produce v7) with 6 keyed records with headers over 3 partitions, a consumer group "
                "fetches them back; the same records in every kafka-python-tls-* capture",
                timeout=40.0,
                tls=profile,
            )
        )
    for codec in ("gzip", "zstd"):
        out.append(
            Scenario(
                f"aiokafka-{codec}",
                "aiokafka",
                "auto (ApiVersions)",
                codec,
                (f"aio-{codec}",),
                scenario_aiokafka(codec),
                f"aiokafka producer (compression {codec}) sends 6 keyed records with headers over "
                f"3 partitions; an aiokafka consumer group fetches them back and commits.",
            )
        )
    return out


# --------------------------------------------------------------------------------------
# The mock cluster (librdkafka's rd_kafka_mock_* C API through ctypes)
# --------------------------------------------------------------------------------------


def _librdkafka() -> ctypes.CDLL:
    import confluent_kafka

    libdir = Path(confluent_kafka.__file__).resolve().parent.parent / "confluent_kafka.libs"
    found = sorted(libdir.glob("librdkafka*.so*"))
    lib = ctypes.CDLL(str(found[0]) if found else "librdkafka.so.1")
    vp, cp, i32 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    sigs = {
        "rd_kafka_conf_new": (vp, []),
        "rd_kafka_conf_set": (i32, [vp, cp, cp, cp, ctypes.c_size_t]),
        "rd_kafka_new": (vp, [i32, vp, cp, ctypes.c_size_t]),
        "rd_kafka_mock_cluster_new": (vp, [vp, i32]),
        "rd_kafka_mock_cluster_bootstraps": (cp, [vp]),
        "rd_kafka_mock_topic_create": (i32, [vp, cp, i32, i32]),
        "rd_kafka_mock_group_initial_rebalance_delay_ms": (None, [vp, ctypes.c_int32]),
        "rd_kafka_mock_set_controller_id": (None, [vp, ctypes.c_int32]),
        "rd_kafka_mock_set_apiversion": (i32, [vp, ctypes.c_int16, ctypes.c_int16, ctypes.c_int16]),
        "rd_kafka_mock_broker_set_host_port": (None, [vp, ctypes.c_int32, cp, i32]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


def parse_cap(text: str) -> tuple[int, int, int]:
    """``"KEY:MIN:MAX"`` -> (api key, min version, max version)."""
    key, lo, hi = (int(x) for x in text.split(":"))
    return key, lo, hi


def serve_mock(
    topics: list[str],
    partitions: int,
    caps: list[tuple[int, int, int]],
    sasl: tuple[str, ...] = (),
    tls: str = "",
    tls_dir: str = "",
) -> None:
    """Start a mock cluster, print its bootstrap list, serve until stdin closes.

    The rd_kafka_t that hosts the mock has no bootstrap servers, so it sends nothing itself:
    every Kafka packet in a capture comes from the scenario's clients.

    With ``sasl`` (mechanisms), a SASL front-end listens for each broker and the mock advertises
    the front-end's ports (Metadata, FindCoordinator), so clients only ever talk to the
    front-end; the bootstrap list printed is the front-end's.
    """
    lib = _librdkafka()
    conf = lib.rd_kafka_conf_new()
    err = ctypes.create_string_buffer(512)
    lib.rd_kafka_conf_set(conf, b"log_level", b"3", err, len(err))
    rk = lib.rd_kafka_new(0, conf, err, len(err))
    if not rk:
        sys.exit(f"rd_kafka_new failed: {err.value.decode()}")
    mcluster = lib.rd_kafka_mock_cluster_new(rk, NUM_BROKERS)
    if not mcluster:
        sys.exit("rd_kafka_mock_cluster_new failed")
    lib.rd_kafka_mock_group_initial_rebalance_delay_ms(mcluster, 0)
    lib.rd_kafka_mock_set_controller_id(mcluster, 1)  # unset, Metadata says controller 0
    for key, lo, hi in caps:
        if lib.rd_kafka_mock_set_apiversion(mcluster, key, lo, hi):
            sys.exit(f"rd_kafka_mock_set_apiversion({key}, {lo}, {hi}) failed")
    for t in topics:
        rc = lib.rd_kafka_mock_topic_create(mcluster, t.encode(), partitions, NUM_BROKERS)
        if rc:
            sys.exit(f"rd_kafka_mock_topic_create({t}) failed: {rc}")
    bootstrap = lib.rd_kafka_mock_cluster_bootstraps(mcluster).decode()
    if sasl:
        # the bootstrap list is in broker id order (1..N)
        ports = start_sasl_front_end(ports_of(bootstrap), sasl)
        for broker_id, port in enumerate(ports, 1):
            lib.rd_kafka_mock_broker_set_host_port(mcluster, broker_id, b"127.0.0.1", port)
        bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports)
    elif tls:
        from gen.tls import HOST, start_front_end

        ports = start_front_end(ports_of(bootstrap), tls, Path(tls_dir))
        for broker_id, port in enumerate(ports, 1):
            lib.rd_kafka_mock_broker_set_host_port(mcluster, broker_id, HOST.encode(), port)
        bootstrap = ",".join(f"{HOST}:{p}" for p in ports)
    print(bootstrap, flush=True)
    sys.stdin.read()
    os._exit(0)  # skip librdkafka's teardown: the process is done


# --------------------------------------------------------------------------------------
# SASL front-end: librdkafka's mock cluster has no SASL (no SaslHandshake/SaslAuthenticate
# handler; it closes the connection on either), so SASL scenarios put this in front of it
# --------------------------------------------------------------------------------------

SASL_USER = "alice"
SASL_PASSWORD = "alice-secret"  # recognisable: tests check it never appears in masked output
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SASL_APIS = ((17, 0, 1), (36, 0, 2))  # SaslHandshake v0-v1, SaslAuthenticate v0-v2, as Kafka 2.5+
SCRAM_ITERATIONS = 4096  # Kafka's minimum for SCRAM credentials


class SaslFailed(Exception):
    pass


class PlainServer:
    """RFC 4616: one token ``authzid NUL user NUL password``, answered with an empty token."""

    def __init__(self, mechanism: str, users: dict[str, str]) -> None:
        self.users = users
        self.done = False

    def step(self, token: bytes) -> bytes:
        parts = token.split(b"\x00")
        if len(parts) != 3 or self.users.get(parts[1].decode(errors="replace")) != parts[2].decode(
            errors="replace"
        ):
            raise SaslFailed("Authentication failed: Invalid username or password")
        self.done = True
        return b""


class ScramServer:
    """RFC 5802 server side: client-first -> server-first, client-final -> server-final.

    The salt is derived from the user name (stable across runs); the server nonce is random,
    like the client's."""

    def __init__(self, mechanism: str, users: dict[str, str]) -> None:
        self.hash_name = "sha256" if mechanism == "SCRAM-SHA-256" else "sha512"
        self.hash = getattr(hashlib, self.hash_name)
        self.users = users
        self.done = False
        self.first: tuple[str, str, str, bytes] | None = None  # bare, server-first, nonce, salted

    def _hmac(self, key: bytes, msg: bytes) -> bytes:
        return hmac.new(key, msg, self.hash).digest()

    def step(self, token: bytes) -> bytes:
        msg = token.decode(errors="replace")
        if self.first is None:
            gs2 = msg.split(",", 2)
            if len(gs2) != 3 or gs2[0] not in ("n", "y"):
                raise SaslFailed("Invalid SCRAM client-first-message")
            bare = gs2[2]
            attrs = dict(kv.split("=", 1) for kv in bare.split(",") if "=" in kv)
            user, password = attrs.get("n", ""), self.users.get(attrs.get("n", ""))
            if password is None or "r" not in attrs:
                raise SaslFailed(f"Authentication failed: unknown user {user!r}")
            salt = hashlib.sha256(f"kafka-analyzer-salt-{user}".encode()).digest()[:16]
            nonce = attrs["r"] + os.urandom(18).hex()
            server_first = f"r={nonce},s={base64.b64encode(salt).decode()},i={SCRAM_ITERATIONS}"
            salted = hashlib.pbkdf2_hmac(self.hash_name, password.encode(), salt, SCRAM_ITERATIONS)
            self.first = (bare, server_first, nonce, salted)
            return server_first.encode()
        bare, server_first, nonce, salted = self.first
        without_proof, sep, proof_b64 = msg.rpartition(",p=")
        attrs = dict(kv.split("=", 1) for kv in without_proof.split(",") if "=" in kv)
        if not sep or attrs.get("r") != nonce:
            raise SaslFailed("Invalid SCRAM client-final-message")
        auth_message = f"{bare},{server_first},{without_proof}".encode()
        client_key = self._hmac(salted, b"Client Key")
        signature = self._hmac(self.hash(client_key).digest(), auth_message)
        proof = base64.b64decode(proof_b64)
        if len(proof) != len(signature) or bytes(a ^ b for a, b in zip(proof, signature, strict=True)) != (
            client_key
        ):
            raise SaslFailed("Authentication failed: Invalid user credentials")
        self.done = True
        server_signature = self._hmac(self._hmac(salted, b"Server Key"), auth_message)
        return b"v=" + base64.b64encode(server_signature)


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n, pos
        shift += 7


def _request_body(frame: bytes, flexible: bool) -> int:
    """Offset of the body: past api key, version, correlation id, client id (and tags)."""
    clen = struct.unpack_from(">h", frame, 8)[0]
    pos = 10 + max(clen, 0)
    if flexible:
        ntags, pos = _read_uvarint(frame, pos)
        for _ in range(ntags):
            _, pos = _read_uvarint(frame, pos)
            size, pos = _read_uvarint(frame, pos)
            pos += size
    return pos


def sasl_handshake_response(corr: int, error: int, mechanisms: tuple[str, ...]) -> bytes:
    out = struct.pack(">ihi", corr, error, len(mechanisms))
    for m in mechanisms:
        out += struct.pack(">h", len(m)) + m.encode()
    return out


def sasl_authenticate_response(
    corr: int, version: int, error: int, message: str | None, token: bytes
) -> bytes:
    text = None if message is None else message.encode()
    if version >= 2:  # flexible: response header tags, compact strings and bytes, body tags
        out = struct.pack(">i", corr) + b"\x00" + struct.pack(">h", error)
        out += b"\x00" if text is None else _uvarint(len(text) + 1) + text
        out += _uvarint(len(token) + 1) + token
        return out + struct.pack(">q", 0) + b"\x00"
    out = struct.pack(">ih", corr, error)
    out += struct.pack(">h", -1) if text is None else struct.pack(">h", len(text)) + text
    out += struct.pack(">i", len(token)) + token
    return out + (struct.pack(">q", 0) if version >= 1 else b"")  # session_lifetime_ms 0: no re-auth


def add_sasl_apis(resp: bytes, version: int) -> bytes:
    """A successful v0-v2 ApiVersions response with SaslHandshake and SaslAuthenticate added
    (the mock's own list lacks them); anything else unchanged."""
    if version > 2 or len(resp) < 10 or struct.unpack_from(">h", resp, 4)[0] != 0:
        return resp
    count = struct.unpack_from(">i", resp, 6)[0]
    end = 10 + 6 * count
    apis = {k: (lo, hi) for k, lo, hi in struct.iter_unpack(">hhh", resp[10:end])}
    apis.update({k: (lo, hi) for k, lo, hi in SASL_APIS})
    body = b"".join(struct.pack(">hhh", k, lo, hi) for k, (lo, hi) in sorted(apis.items()))
    return resp[:6] + struct.pack(">i", len(apis)) + body + resp[end:]


async def _read_frame(reader: asyncio.StreamReader) -> bytes | None:
    try:
        head = await reader.readexactly(4)
        return await reader.readexactly(struct.unpack(">i", head)[0])
    except (asyncio.IncompleteReadError, ConnectionError):
        return None


async def _relay(src: asyncio.StreamReader, dst: asyncio.StreamWriter, half_close: bool) -> None:
    """Copy Kafka frames one write each, so the client sees the mock's responses in separate
    segments as it sends them (copying whatever one read returns would merge them)."""
    try:
        while (frame := await _read_frame(src)) is not None:
            dst.write(struct.pack(">i", len(frame)) + frame)
            await dst.drain()
    except ConnectionError:
        pass
    finally:
        if half_close and dst.can_write_eof() and not dst.is_closing():
            with contextlib.suppress(OSError):
                dst.write_eof()
        else:
            dst.close()


async def sasl_connection(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, upstream: int, mechanisms: tuple[str, ...]
) -> None:
    """One client connection: what a broker's SASL_PLAINTEXT listener does before
    authentication (ApiVersions, SaslHandshake v0/v1, SaslAuthenticate v0-v2 or, after
    SaslHandshake v0, raw size-prefixed tokens), then a byte relay to the mock broker.

    ApiVersions goes to the mock, with SaslHandshake and SaslAuthenticate added to its answer.
    Any other request before authentication closes the connection (as a broker does)."""
    users = {SASL_USER: SASL_PASSWORD}
    servers = {"PLAIN": PlainServer, "SCRAM-SHA-256": ScramServer, "SCRAM-SHA-512": ScramServer}
    up: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    server: PlainServer | ScramServer | None = None
    raw = False
    try:
        while server is None or not server.done:
            frame = await _read_frame(reader)
            if frame is None or len(frame) < (0 if raw else 10):
                return
            if raw:  # after SaslHandshake v0: the frame is the token, the answer too
                assert server is not None
                try:
                    token = server.step(frame)
                except SaslFailed:
                    return  # a broker closes the connection on failure in this mode
                writer.write(struct.pack(">i", len(token)) + token)
                await writer.drain()
                continue
            key, version, corr = struct.unpack_from(">hhi", frame)
            if key == ApiKey.API_VERSIONS:
                if up is None:
                    up = await asyncio.open_connection("127.0.0.1", upstream)
                up[1].write(struct.pack(">i", len(frame)) + frame)
                await up[1].drain()
                resp = await _read_frame(up[0])
                if resp is None:
                    return
                resp = add_sasl_apis(resp, version)
            elif key == ApiKey.SASL_HANDSHAKE and server is None:
                pos = _request_body(frame, False)
                size = struct.unpack_from(">h", frame, pos)[0]
                mechanism = frame[pos + 2 : pos + 2 + size].decode(errors="replace")
                ok = mechanism in mechanisms
                resp = sasl_handshake_response(
                    corr, ErrorCode.NONE if ok else ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms
                )
                if ok:
                    server = servers[mechanism](mechanism, users)
                    raw = version == 0
            elif key == ApiKey.SASL_AUTHENTICATE and server is not None and not raw:
                pos = _request_body(frame, version >= 2)
                if version >= 2:
                    size, pos = _read_uvarint(frame, pos)
                    token = frame[pos : pos + size - 1]
                else:
                    size = struct.unpack_from(">i", frame, pos)[0]
                    token = frame[pos + 4 : pos + 4 + size]
                try:
                    resp = sasl_authenticate_response(corr, version, 0, None, server.step(token))
                except SaslFailed as exc:  # answer, then close (as a broker does)
                    resp = sasl_authenticate_response(
                        corr, version, ErrorCode.SASL_AUTHENTICATION_FAILED, str(exc), b""
                    )
                    writer.write(struct.pack(">i", len(resp)) + resp)
                    await writer.drain()
                    return
            else:
                return  # not allowed before authentication: close
            writer.write(struct.pack(">i", len(resp)) + resp)
            await writer.drain()
        # authenticated: relay the rest of the connection to the mock broker
        if up is None:
            up = await asyncio.open_connection("127.0.0.1", upstream)
        await asyncio.gather(_relay(reader, up[1], half_close=True), _relay(up[0], writer, half_close=False))
    finally:
        writer.close()
        if up is not None:
            up[1].close()


def start_sasl_front_end(upstream_ports: list[int], mechanisms: tuple[str, ...]) -> list[int]:
    """Listen on one new port per mock broker (in a background event loop); the ports."""
    loop = asyncio.new_event_loop()

    async def listen() -> list[int]:
        ports = []
        for port in upstream_ports:

            async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter, port: int = port) -> None:
                await sasl_connection(r, w, port, mechanisms)

            srv = await asyncio.start_server(handle, "127.0.0.1", 0)
            ports.append(srv.sockets[0].getsockname()[1])
        return ports

    ports = loop.run_until_complete(listen())
    threading.Thread(target=loop.run_forever, name="sasl-front-end", daemon=True).start()
    return ports


# --------------------------------------------------------------------------------------
# Parent side: namespace, mock process, tcpdump, worker, manifest
# --------------------------------------------------------------------------------------


def _run(cmd: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


@contextlib.contextmanager
def namespace() -> Iterator[None]:
    if os.geteuid() != 0:
        sys.exit("needs root (network namespace and tcpdump): sudo .venv/bin/python tools/gen_captures.py")
    for tool in ("ip", "tcpdump", "ethtool"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found")
    _run(["ip", "netns", "del", NETNS], check=False)
    _run(["ip", "netns", "add", NETNS])
    try:
        _run(["ip", "netns", "exec", NETNS, "ip", "link", "set", "lo", "up", "mtu", "1500"])
        _run(["ip", "netns", "exec", NETNS, "ethtool", "-K", "lo", "gso", "off", "tso", "off", "gro", "off"])
        yield
    finally:
        _run(["ip", "netns", "del", NETNS], check=False)


def in_ns(cmd: list[str]) -> list[str]:
    return ["ip", "netns", "exec", NETNS, *cmd]


def self_cmd(*args: str) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), *args]


def _stop(proc: subprocess.Popen[Any], sig: int = signal.SIGTERM, wait: float = 5.0) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(wait)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def mock_cluster(
    topics: tuple[str, ...] | list[str],
    caps: tuple[tuple[int, int, int], ...] = (),
    sasl: tuple[str, ...] = (),
    tls: str = "",
    tls_dir: Path | None = None,
) -> Iterator[str]:
    env = None
    if tls:
        from gen.tls import env_for_mock

        assert tls_dir is not None
        env = env_for_mock(tls_dir, tls)
    cmd = self_cmd(
        "--serve-mock",
        "--topics",
        ",".join(topics),
        "--api-caps",
        ",".join(":".join(map(str, c)) for c in caps),
        "--sasl",
        ",".join(sasl),
        "--tls",
        tls,
        "--tls-dir",
        str(tls_dir or ""),
    )
    proc = subprocess.Popen(in_ns(cmd), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if not line:
            raise RuntimeError("mock cluster did not start")
        yield line
    finally:
        if proc.stdin:
            proc.stdin.close()
        _stop(proc)


@contextlib.contextmanager
def tcpdump(pcap: Path, notes: list[str], ports: list[int] | None = None) -> Iterator[None]:
    """Capture TCP on the namespace's loopback into ``pcap``; kernel drops go to ``notes``.
    With ``ports``, only connections to those ports (a SASL front-end's: its own connections
    to the mock brokers would repeat every packet).

    --immediate-mode matters: without it libpcap's TPACKET_V3 ring hands packets over in
    blocks every second, and the block still open at SIGINT is lost.
    """
    pcap.unlink(missing_ok=True)
    cmd = [
        "tcpdump",
        "-i",
        "lo",
        "-w",
        str(pcap),
        "-s",
        "0",
        "-U",
        "-n",
        "--immediate-mode",
        "-Z",
        "root",
        "tcp" if not ports else "tcp and (" + " or ".join(f"port {p}" for p in ports) + ")",
    ]
    proc = subprocess.Popen(in_ns(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    started = proc.stderr.readline()  # "listening on lo, link-type EN10MB ..."
    if "listening" not in started:
        _stop(proc)
        raise RuntimeError(f"tcpdump did not start: {started}{proc.stderr.read()}")
    time.sleep(TCPDUMP_START_S)
    try:
        yield
    finally:
        time.sleep(TCPDUMP_DRAIN_S)
        _stop(proc, signal.SIGINT)
        for line in proc.stderr.read().splitlines():  # "N packets dropped by kernel"
            words = line.split()
            if "dropped" in words and words[0].isdigit() and int(words[0]):
                notes.append(f"tcpdump: {line.strip()}")


def ports_of(bootstrap: str) -> list[int]:
    return [int(hp.rsplit(":", 1)[1]) for hp in bootstrap.split(",")]


def client_version(client: str) -> str:
    if client == "librdkafka":
        import confluent_kafka

        return f"librdkafka {confluent_kafka.libversion()[0]} (confluent-kafka {confluent_kafka.__version__})"
    if client == "kafka-python":
        import kafka

        return f"kafka-python {kafka.__version__}"
    import aiokafka

    return f"aiokafka {aiokafka.__version__}"


def deps_env(pkgs: tuple[str, ...]) -> dict[str, str] | None:
    """An environment whose PYTHONPATH has ``pkgs`` (pip install --target a cache dir when the
    venv lacks them), or None when nothing extra is needed."""
    import importlib.util

    missing = [p for p in pkgs if importlib.util.find_spec(p) is None]
    if not missing:
        return None
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    target = cache / "kafka-analyzer-gen-captures" / "pydeps"
    if not all((target / p).exists() for p in missing):
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(target), *missing], check=True
        )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(target), env.get("PYTHONPATH")]))
    return env


def run_scenario(scn: Scenario, out_dir: Path) -> dict[str, Any]:
    pcap = out_dir / f"{scn.name}.pcap"
    notes: list[str] = list(scn.notes)
    env = deps_env(scn.needs)
    with tempfile.TemporaryDirectory(prefix="gen-captures-") as tmp:
        events_path = Path(tmp) / "events.jsonl"
        log_path = Path(tmp) / "worker.log"
        tls_dir = Path(tmp) / "tls"
        if scn.tls:
            from gen.tls import make_certificate

            tls_dir.mkdir()
            cert, _key = make_certificate(tls_dir)
            env = dict(env or os.environ)
            env["KGEN_TLS_CA"] = str(cert)
        with (
            mock_cluster(
                scn.topics, scn.api_caps, SASL_MECHANISMS if scn.sasl else (), scn.tls, tls_dir
            ) as bootstrap,
            tcpdump(pcap, notes, ports_of(bootstrap) if scn.sasl or scn.tls else None),
        ):
            started = time.monotonic()
            cmd = self_cmd(
                "--worker",
                scn.name,
                "--bootstrap",
                bootstrap,
                "--events",
                str(events_path),
                "--timeout",
                str(scn.timeout),
            )
            with log_path.open("w") as log:
                proc = subprocess.Popen(in_ns(cmd), stdout=log, stderr=subprocess.STDOUT, env=env)
                try:
                    rc = proc.wait(scn.timeout + 10)
                except subprocess.TimeoutExpired:
                    _stop(proc)
                    rc = None
            elapsed = time.monotonic() - started
        if rc is None:
            notes.append(f"worker hung: killed after {elapsed:.0f} s; capture is partial")
        elif rc != 0:
            tail = log_path.read_text(errors="replace").strip().splitlines()[-1:]
            notes.append(f"worker failed (exit {rc}) after {elapsed:.0f} s: {' '.join(tail)}")
        events = (
            [json.loads(line) for line in events_path.read_text().splitlines() if line.strip()]
            if events_path.exists()
            else []
        )
        tls_entry = tls_pdus = None
        if scn.tls:
            tls_entry, tls_pdus = _tls_outputs(scn, pcap, tls_dir, out_dir)
    notes += [e["text"] for e in events if e["kind"] == "note"]
    strip = ("kind",)
    entry = {
        "file": pcap.name,
        "scenario": scn.name,
        "description": scn.description,
        "client": scn.client,
        "client_version": client_version(scn.client),
        "api_version": scn.api_version,
        "codec": scn.codec,
        "broker_ports": ports_of(bootstrap),
        "bootstrap": bootstrap,
        "topics": sorted(set(scn.topics) | {e["topic"] for e in events if "topic" in e}),
        "produced": [
            {k: v for k, v in e.items() if k not in strip} for e in events if e["kind"] == "produced"
        ],
        "consumed": [
            {k: v for k, v in e.items() if k not in strip} for e in events if e["kind"] == "consumed"
        ],
        "operations": [{k: v for k, v in e.items() if k not in strip} for e in events if e["kind"] == "op"],
        "kafka_pdus": tls_pdus
        if scn.tls
        else kafka_pdus(pcap, ports_of(bootstrap))
        if pcap.exists()
        else None,
        "size_bytes": pcap.stat().st_size if pcap.exists() else 0,
        "duration_s": round(elapsed, 1),
        "notes": notes,
    }
    if not entry["operations"]:
        del entry["operations"]
    if scn.api_caps:
        entry["mock_api_caps"] = [list(c) for c in scn.api_caps]
    if tls_entry is not None:
        entry["tls"] = tls_entry
    if scn.sasl:
        entry["sasl"] = {
            "mechanism": scn.sasl,
            "username": SASL_USER,
            "password": SASL_PASSWORD,
            "front_end_mechanisms": list(SASL_MECHANISMS),
            "front_end_apis": [list(a) for a in SASL_APIS],
        }
    return entry


def _tls_outputs(scn: Scenario, pcap: Path, tls_dir: Path, out_dir: Path) -> tuple[dict, dict]:
    """A TLS scenario's key log (next to the pcap), its pcapng with the keys embedded (TLS 1.3
    AES-128-GCM only), and its manifest ``tls`` object; the relayed plaintext PDU counts."""
    from gen.tls import HOST, PROFILES, inject_secrets, read_pdus

    pdus = read_pdus(tls_dir)
    if scn.tls == "plain":
        return {"version": None, "cipher": None, "sni": HOST, "keylog": None, "front_end": "plain"}, pdus
    version, _openssl, iana = PROFILES[scn.tls]
    keylog = out_dir / f"{scn.name}.keys"
    src = tls_dir / "keylog.txt"
    keylog.write_text(src.read_text() if src.exists() else "")
    entry: dict[str, Any] = {"version": version, "cipher": iana, "sni": HOST, "keylog": keylog.name}
    if scn.tls == "tls13-aes128gcm" and scn.client == "kafka-python":
        dsb = out_dir / f"{scn.name}-dsb.pcapng"
        if inject_secrets(pcap, keylog, dsb):
            entry["pcapng_with_secrets"] = dsb.name
    return entry, pdus


def run_worker(name: str, bootstrap: str, events_path: Path, timeout: float) -> None:
    scn = {s.name: s for s in build_scenarios()}[name]
    events = Events(events_path)
    ctx = Ctx(name, bootstrap, events, time.monotonic() + timeout)
    try:
        scn.run(ctx)
    except Exception as exc:
        events.note(f"scenario raised {type(exc).__name__}: {exc}")
        raise
    finally:
        events.close()


def load_manifest(path: Path) -> list[dict[str, Any]]:
    if path.exists():
        return json.loads(path.read_text())
    return []


def generate(names: list[str] | None, out_dir: Path) -> None:
    scenarios = build_scenarios()
    known = {s.name for s in scenarios}
    for n in names or ():
        if n not in known:
            sys.exit(f"unknown scenario {n!r}; --list shows the names")
    chosen = [s for s in scenarios if not names or s.name in names]
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest_path = out_dir / MANIFEST
    entries = {e["scenario"]: e for e in load_manifest(manifest_path)} if names else {}
    with namespace():
        for scn in chosen:
            print(f"{scn.name} ...", end=" ", flush=True)
            entry = run_scenario(scn, out_dir)
            entries[scn.name] = entry
            print(
                f"{entry['size_bytes'] / 1024:.0f} KiB, {len(entry['produced'])} produced, "
                f"{len(entry['consumed'])} consumed, {entry['duration_s']} s"
                + (f"; notes: {entry['notes']}" if entry["notes"] else ""),
                flush=True,
            )
            ordered = [entries[s.name] for s in scenarios if s.name in entries]
            manifest_path.write_text(json.dumps(ordered, indent=1, ensure_ascii=False) + "\n")


# --------------------------------------------------------------------------------------
# Ground truth for the manifest: Kafka PDUs per capture, from a tiny pcap reader
# --------------------------------------------------------------------------------------


def tcp_streams(pcap: Path) -> tuple[dict[tuple[int, int], bytearray], int]:
    """Payload bytes per (source port, destination port), in sequence order, and the number
    of sequence gaps. Handles what these captures hold: classic pcap, Ethernet, IPv4, TCP."""
    data = pcap.read_bytes()
    magic = data[:4]
    endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    streams: dict[tuple[int, int], bytearray] = {}
    expect: dict[tuple[int, int], int] = {}
    gaps, pos = 0, 24
    while pos + 16 <= len(data):
        incl = struct.unpack_from(endian + "I", data, pos + 8)[0]
        pkt = data[pos + 16 : pos + 16 + incl]
        pos += 16 + incl
        if len(pkt) < 34 or pkt[12:14] != b"\x08\x00" or pkt[23] != 6:
            continue
        ip = pkt[14:]
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack_from(">H", ip, 2)[0]
        tcp = ip[ihl:total]
        sport, dport, seq = struct.unpack_from(">HHI", tcp, 0)
        flags, off = tcp[13], (tcp[12] >> 4) * 4
        key = (sport, dport)
        if flags & 0x02:  # SYN
            expect[key] = (seq + 1) & 0xFFFFFFFF
            streams.setdefault(key, bytearray())
            continue
        payload = tcp[off:]
        if not payload or key not in expect:
            continue
        skip = (expect[key] - seq) & 0xFFFFFFFF
        if skip >= 1 << 31:  # segment starts after what we expect: bytes are missing
            gaps += 1
            skip = 0
        if skip < len(payload):
            streams[key] += payload[skip:]
            expect[key] = (seq + len(payload)) & 0xFFFFFFFF
    return streams, gaps


def _split_frames(buf: bytearray) -> tuple[list[bytes], int]:
    """Length-prefixed frames of one direction, and 1 if one is cut off by the end."""
    out, pos = [], 0
    while pos + 4 <= len(buf):
        size = struct.unpack_from(">i", buf, pos)[0]
        if size < 0 or pos + 4 + size > len(buf):
            return out, 1
        out.append(bytes(buf[pos + 4 : pos + 4 + size]))
        pos += 4 + size
    return out, 0


def _kafka_request_like(frame: bytes) -> bool:
    if len(frame) < 10:
        return False
    key, ver = struct.unpack_from(">hh", frame)
    return 0 <= key < 100 and 0 <= ver < 30


def kafka_pdus(pcap: Path, ports: list[int]) -> dict[str, Any]:
    """Count length-prefixed Kafka requests (to a broker port) and responses (from one), with
    the request versions seen per API key. After a SaslHandshake v0 request, the frames that
    are not Kafka requests are raw SASL tokens (so are as many answers after the handshake's
    response): counted apart, as ``raw_sasl_tokens``."""
    streams, gaps = tcp_streams(pcap)
    requests = responses = partial = 0
    raw = {"requests": 0, "responses": 0}
    versions: dict[str, set[int]] = {}
    raw_answers: dict[tuple[int, int], tuple[int, int]] = {}  # response stream: (first, count)
    for (sport, dport), buf in streams.items():
        if dport not in ports:
            continue
        frames, part = _split_frames(buf)
        partial += part
        in_raw, answered = False, 0
        for frame in frames:
            if in_raw and not _kafka_request_like(frame):
                raw["requests"] += 1
                first, count = raw_answers[(dport, sport)]
                raw_answers[(dport, sport)] = (first, count + 1)
                continue
            in_raw = False
            requests += 1
            key, ver = struct.unpack_from(">hh", frame)
            versions.setdefault(str(key), set()).add(ver)
            answered += 1
            if key == ApiKey.SASL_HANDSHAKE and ver == 0:  # v0: raw tokens follow
                in_raw = True
                raw_answers[(dport, sport)] = (answered, 0)
    for (sport, dport), buf in streams.items():
        if sport not in ports:
            continue
        frames, part = _split_frames(buf)
        partial += part
        first, count = raw_answers.get((sport, dport), (0, 0))
        responses += len(frames)
        if count and len(frames) > first:
            n = min(count, len(frames) - first)
            raw["responses"] += n
            responses -= n
    out: dict[str, Any] = {
        "requests": requests,
        "responses": responses,
        "request_versions": {k: sorted(v) for k, v in sorted(versions.items(), key=lambda kv: int(kv[0]))},
    }
    if raw["requests"] or raw["responses"]:
        out["raw_sasl_tokens"] = raw
    if gaps or partial:
        out["gaps"], out["partial_pdus"] = gaps, partial
    return out


# --------------------------------------------------------------------------------------
# tshark check
# --------------------------------------------------------------------------------------


def tshark_summary(pcap: Path, ports: list[int], keylog: Path | None = None) -> dict[str, Any]:
    """Kafka PDUs (one correlation id each), requests, malformed frames, and the request
    versions per API key, as tshark decodes them with every broker port mapped to Kafka (inside
    TLS, decrypted with ``keylog``, when given)."""
    layer = "tls" if keylog else "tcp"
    decode = [a for p in ports for a in ("-d", f"{layer}.port=={p},kafka")]
    if keylog:
        decode += ["-o", f"tls.keylog_file:{keylog}"]
    out = _run(
        [
            "tshark",
            "-r",
            str(pcap),
            *decode,
            "-Y",
            "kafka",
            "-T",
            "fields",
            "-E",
            "separator=/t",
            "-e",
            "kafka.correlation_id",
            "-e",
            "kafka.request_key",
            "-e",
            "kafka.request.version",
        ],
        check=False,
    ).stdout
    pdus = requests = 0
    versions: dict[int, set[int]] = {}
    for line in out.splitlines():
        corr, keys, vers = [*line.split("\t"), "", "", ""][:3]
        pdus += len([c for c in corr.split(",") if c])
        keys_l, vers_l = [k for k in keys.split(",") if k], [v for v in vers.split(",") if v]
        requests += len(keys_l)
        for k, v in zip(keys_l, vers_l, strict=False):
            versions.setdefault(int(k), set()).add(int(v))
    malformed = _run(
        ["tshark", "-r", str(pcap), *decode, "-Y", "_ws.malformed"], check=False
    ).stdout.splitlines()
    return {
        "pdus": pdus,
        "requests": requests,
        "malformed": len(malformed),
        "request_versions": {k: sorted(v) for k, v in sorted(versions.items())},
    }


def check(out_dir: Path) -> None:
    if not shutil.which("tshark"):
        sys.exit("tshark not found")
    total = 0
    for e in load_manifest(out_dir / MANIFEST):
        pcap = out_dir / e["file"]
        keylog = (e.get("tls") or {}).get("keylog")
        s = tshark_summary(pcap, e["broker_ports"], out_dir / keylog if keylog else None)
        size = pcap.stat().st_size
        total += size
        # TLS: the payload is ciphertext; the manifest has the plaintext PDUs the front-end relayed
        own = e["kafka_pdus"] if e.get("tls") else kafka_pdus(pcap, e["broker_ports"])
        apis = " ".join(f"{k}:v{'/'.join(map(str, v))}" for k, v in own["request_versions"].items())
        raw = own.get("raw_sasl_tokens")
        print(
            f"{e['file']:40} {size / 1024:5.1f} KiB  pdus={own['requests'] + own['responses']:4}"
            f" (req {own['requests']}, resp {own['responses']})  tshark: pdus={s['pdus']:4} "
            f"malformed={s['malformed']:3}  api:versions {apis}"
            + (f"  raw SASL tokens {raw['requests']}/{raw['responses']}" if raw else "")
        )
    print(f"total {total / 1024:.0f} KiB")


# --------------------------------------------------------------------------------------
# Benchmark capture
# --------------------------------------------------------------------------------------

WORDS = (
    "kafka",
    "broker",
    "record",
    "batch",
    "offset",
    "partition",
    "topic",
    "leader",
    "replica",
    "consumer",
    "producer",
    "group",
    "commit",
    "fetch",
    "produce",
    "metadata",
    "epoch",
    "segment",
    "index",
    "timestamp",
    "header",
    "key",
    "value",
    "compression",
)


def bench_value(rng: random.Random, codec: str, i: int) -> bytes:
    """Moderately compressible text (2-4x), 60..4000 bytes."""
    n = rng.choice((8, 16, 40, 120, 500))
    words = " ".join(rng.choice(WORDS) + str(rng.randrange(1000)) for _ in range(n))
    return f"v-bench-{codec}-{i}-{words}".encode()


def run_bench_worker(bootstrap: str, events_path: Path) -> None:
    from confluent_kafka import Consumer, Producer

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    events = Events(events_path)
    produced: dict[str, int] = {}
    consumed: dict[str, int] = {}

    def produce(codec: str) -> None:
        rng = random.Random(f"bench-{codec}")
        p = Producer(
            {
                "bootstrap.servers": bootstrap,
                "client.id": f"bench-{codec}",
                "compression.type": codec,
                "linger.ms": 5,
                "acks": "all",
            }
        )
        topic, i = f"bench-{codec}", 0
        while not stop.is_set():
            hdrs = [("h1", f"h1-bench-{i}".encode())] if i % 3 == 0 else None
            try:
                p.produce(
                    topic,
                    bench_value(rng, codec, i),
                    f"k-bench-{codec}-{i}".encode(),
                    partition=i % 3,
                    headers=hdrs,
                )
            except BufferError:
                p.poll(0.05)
                continue
            i += 1
            if i % 200 == 0:
                p.poll(0)
                time.sleep(0.01)  # leave CPU for the consumer and the mock
        p.flush(10)
        produced[topic] = i

    def consume() -> None:
        c = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "client.id": "bench-consumer",
                "group.id": "g-bench",
                "auto.offset.reset": "earliest",
            }
        )
        c.subscribe([f"bench-{codec}" for codec in CODECS])
        while not stop.is_set():
            for m in c.consume(500, 0.2):
                if not m.error():
                    consumed[m.topic()] = consumed.get(m.topic(), 0) + 1
        c.close()

    threads = [threading.Thread(target=produce, args=(c,)) for c in CODECS]
    threads.append(threading.Thread(target=consume))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    events.emit("counts", produced=produced, consumed=consumed)
    events.close()


def bench(size_mb: float, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    tag = f"{size_mb:g}mb"
    pcap = out_dir / f"bench-{tag}.pcap"
    limit = size_mb * 1024 * 1024
    topics = [f"bench-{c}" for c in CODECS]
    notes: list[str] = []
    with namespace(), tempfile.TemporaryDirectory(prefix="gen-bench-") as tmp:
        events_path = Path(tmp) / "events.jsonl"
        with mock_cluster(topics) as bootstrap, tcpdump(pcap, notes):
            started = time.monotonic()
            cmd = self_cmd("--bench-worker", "--bootstrap", bootstrap, "--events", str(events_path))
            proc = subprocess.Popen(in_ns(cmd))
            while proc.poll() is None and (not pcap.exists() or pcap.stat().st_size < limit):
                time.sleep(0.05)
            _stop(proc, signal.SIGTERM, wait=30)
            elapsed = time.monotonic() - started
        counts: dict[str, Any] = {}
        for line in events_path.read_text().splitlines() if events_path.exists() else []:
            ev = json.loads(line)
            if ev.pop("kind") == "counts":
                counts = ev
    summary = {
        "file": pcap.name,
        "client_version": client_version("librdkafka"),
        "codecs": list(CODECS),
        "broker_ports": ports_of(bootstrap),
        "topics": topics,
        "records": counts,
        "payload": "key k-bench-<codec>-<i>, value v-bench-<codec>-<i>-<seeded words>, "
        "header h1 on every third record, partition i % 3",
        "size_bytes": pcap.stat().st_size,
        "duration_s": round(elapsed, 1),
        "notes": notes,
    }
    (out_dir / f"bench-{tag}.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))


# --------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    ap.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="run only this scenario (repeatable); keeps other manifest entries",
    )
    ap.add_argument("--list", action="store_true", help="list the scenarios")
    ap.add_argument("--check", action="store_true", help="summarise the captures with tshark")
    ap.add_argument(
        "--bench",
        type=float,
        metavar="SIZE_MB",
        help="record one large benchmark capture of about SIZE_MB MiB",
    )
    internal = ap.add_argument_group("internal (run inside the namespace)")
    internal.add_argument("--serve-mock", action="store_true", help=argparse.SUPPRESS)
    internal.add_argument("--topics", default="", help=argparse.SUPPRESS)
    internal.add_argument("--api-caps", default="", help=argparse.SUPPRESS)
    internal.add_argument("--sasl", default="", help=argparse.SUPPRESS)
    internal.add_argument("--tls", default="", help=argparse.SUPPRESS)
    internal.add_argument("--tls-dir", default="", help=argparse.SUPPRESS)
    internal.add_argument("--worker", metavar="NAME", help=argparse.SUPPRESS)
    internal.add_argument("--bench-worker", action="store_true", help=argparse.SUPPRESS)
    internal.add_argument("--bootstrap", help=argparse.SUPPRESS)
    internal.add_argument("--events", type=Path, help=argparse.SUPPRESS)
    internal.add_argument("--timeout", type=float, default=60.0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.serve_mock:
        caps = [parse_cap(c) for c in args.api_caps.split(",") if c]
        sasl = tuple(m for m in args.sasl.split(",") if m)
        serve_mock([t for t in args.topics.split(",") if t], 3, caps, sasl, args.tls, args.tls_dir)
    elif args.worker:
        run_worker(args.worker, args.bootstrap, args.events, args.timeout)
    elif args.bench_worker:
        run_bench_worker(args.bootstrap, args.events)
    elif args.list:
        for s in build_scenarios():
            print(f"{s.name:36} {s.description}")
    elif args.check:
        check(args.out)
    elif args.bench:
        bench(args.bench, args.out)
    else:
        generate(args.only, args.out)


if __name__ == "__main__":
    main()
