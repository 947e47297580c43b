"""What the live tests share: a librdkafka mock cluster with traffic on demand, and a network
namespace to run it (and the capture) in."""

from __future__ import annotations

import contextlib
import ctypes
import os
import subprocess
import time
import uuid
from collections.abc import Iterator

import confluent_kafka

CLONE_NEWNET = 0x40000000


class Mock:
    """A librdkafka mock cluster of 3 brokers on 127.0.0.1 (of the current network namespace)."""

    def __init__(self, prefix: str = "ring-test"):
        self.prefix = prefix
        self.handle = confluent_kafka.Producer({"test.mock.num.brokers": 3, "bootstrap.servers": "x:1"})
        md = self.handle.list_topics(timeout=10)
        self.ports = sorted(b.port for b in md.brokers.values())
        self.bootstrap = ",".join(f"127.0.0.1:{p}" for p in self.ports)
        self.bpf = " or ".join(f"tcp port {p}" for p in self.ports)

    def traffic(self, n: int, size: int = 100, compression: str = "none") -> None:
        """Produce n records to a new topic and consume them back (client ids ``PREFIX-p`` and
        ``PREFIX-c``)."""
        topic = f"ring-{uuid.uuid4().hex[:8]}"
        client = confluent_kafka.Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "linger.ms": 5,
                "client.id": f"{self.prefix}-p",
                "compression.type": compression,
            }
        )
        for i in range(n):
            client.produce(topic, value=os.urandom(size // 2).hex().encode(), partition=i % 2)
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
        got = 0
        deadline = time.monotonic() + 60
        while got < n and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                got += 1
        consumer.close()
        assert got == n
        del client


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


@contextlib.contextmanager
def netns(prefix: str) -> Iterator[str]:
    """A new network namespace (``PREFIX-<pid>-<random>``, its lo up) that the calling thread
    enters, and the threads it starts from then on (sockets opened there belong to it); on
    exit, the thread's namespace is restored and the namespace deleted. Needs root."""
    name = f"{prefix}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
        fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
        try:
            _setns(fd)
        finally:
            os.close(fd)
        try:
            yield name
        finally:
            _setns(own)
    finally:
        os.close(own)
        subprocess.run(["ip", "netns", "del", name], check=False)
