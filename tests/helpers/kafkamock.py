"""What the live tests share: a librdkafka mock cluster with traffic on demand. The tests run it
(and the capture) in a network namespace of their own (:func:`tests.helpers.netns.isolated`)."""

from __future__ import annotations

import os
import time
import uuid

import confluent_kafka


class Mock:
    """A librdkafka mock cluster of 3 brokers on 127.0.0.1 (of the current network namespace)."""

    def __init__(self, prefix: str = "ring-test"):
        self.prefix = prefix
        self.handle = confluent_kafka.Producer({"test.mock.num.brokers": 3, "bootstrap.servers": "x:1"})
        md = self.handle.list_topics(timeout=10)
        self.ports = sorted(b.port for b in md.brokers.values())
        self.bootstrap = ",".join(f"127.0.0.1:{p}" for p in self.ports)
        self.bpf = " or ".join(f"tcp port {p}" for p in self.ports)

    def traffic(
        self, n: int, size: int = 100, compression: str = "none", values: list[bytes] | None = None
    ) -> tuple[str, list[bytes]]:
        """Produce n records to a new topic (``values``, keyed ``k0``, ``k1``...; else random
        text of ``size`` bytes, no key), two partitions, and consume them back (client ids
        ``PREFIX-p`` and ``PREFIX-c``): the topic and the values, each consumed once."""
        topic = f"{self.prefix}-{uuid.uuid4().hex[:8]}"
        client = confluent_kafka.Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "linger.ms": 5,
                "client.id": f"{self.prefix}-p",
                "compression.type": compression,
            }
        )
        sent = values if values is not None else [os.urandom(size // 2).hex().encode() for _ in range(n)]
        for i, v in enumerate(sent):
            key = f"k{i}".encode() if values is not None else None
            client.produce(topic, key=key, value=v, partition=i % 2)
        assert client.flush(30) == 0
        consumer = confluent_kafka.Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": topic,
                "auto.offset.reset": "earliest",
                "client.id": f"{self.prefix}-c",
            }
        )
        consumer.subscribe([topic])
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < len(sent) and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                got.append(m.value())
        consumer.close()
        assert sorted(got) == sorted(sent)
        del client
        return topic, sent
