"""The benchmark capture (``--bench SIZE_MB``): librdkafka producers with every codec and a
consumer group against the mock cluster until the pcap reaches SIZE_MB MiB (it ends a little
larger: the clients then shut down cleanly); ``bench-<SIZE_MB>mb.pcap`` and a summary
``bench-<SIZE_MB>mb.json`` (not the records: payloads follow a seeded rule)."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from .core import CODECS, Events
from .librdkafka import version as librdkafka_version
from .mock import mock_cluster
from .netns import in_ns, namespace, ports_of, self_cmd, stop, tcpdump

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


def bench(size_mb: float, out_dir: Path, caps: tuple[tuple[int, int, int], ...] = ()) -> None:
    """Record the benchmark capture; with ``caps`` (api key, min, max), the mock advertises at
    most those versions (bench/gen_capped.py: what tshark 4.0 decodes)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    tag = f"{size_mb:g}mb"
    pcap = out_dir / f"bench-{tag}.pcap"
    limit = size_mb * 1024 * 1024
    topics = [f"bench-{c}" for c in CODECS]
    notes: list[str] = []
    with namespace(), tempfile.TemporaryDirectory(prefix="gen-bench-") as tmp:
        events_path = Path(tmp) / "events.jsonl"
        with mock_cluster(topics, caps) as bootstrap, tcpdump(pcap, notes):
            started = time.monotonic()
            cmd = self_cmd("--bench-worker", "--bootstrap", bootstrap, "--events", str(events_path))
            proc = subprocess.Popen(in_ns(cmd))
            while proc.poll() is None and (not pcap.exists() or pcap.stat().st_size < limit):
                time.sleep(0.05)
            stop(proc, signal.SIGTERM, wait=30)
            elapsed = time.monotonic() - started
        counts: dict[str, Any] = {}
        for line in events_path.read_text().splitlines() if events_path.exists() else []:
            ev = json.loads(line)
            if ev.pop("kind") == "counts":
                counts = ev
    summary = {
        "file": pcap.name,
        "client_version": librdkafka_version(),
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
    if caps:
        summary["mock_api_caps"] = [list(c) for c in caps]
    (out_dir / f"bench-{tag}.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
