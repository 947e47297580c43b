"""What every part of the generator shares: paths and constants, the deterministic records
(:class:`Msg`, :func:`messages`), the event log a worker writes (:class:`Events`), a scenario's
context (:class:`Ctx`) and its description (:class:`Scenario`)."""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parent.parent.parent
DEFAULT_OUT = ROOT / "captures"
MANIFEST = "manifest.json"
NUM_BROKERS = 3
FILLER = "the quick brown fox jumps over the lazy dog. "
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
# (api key, min, max version): what tshark 4.0 decodes; -1 hides the API
TSHARK40_CAPS = ((0, 0, 8), (1, 0, 11), (2, 0, 5), (3, 0, 8), (8, 0, 8), (71, -1, -1), (72, -1, -1))
GROUP_LINGER_S = 1.6  # a group member keeps polling this long after the last record: Heartbeats


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


def dec(raw: bytes | str | None) -> str | dict[str, str] | None:
    """Text, or ``{"hex": ...}`` for bytes that are not UTF-8 (coordinator records)."""
    if raw is None or isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return {"hex": raw.hex()}


def dec_headers(raw: Any) -> list[list[str | None]] | None:
    if raw is None:
        return None
    return [[k if isinstance(k, str) else k.decode(), dec(v)] for k, v in raw]


class Events:
    """JSON lines, flushed one by one so a killed worker still leaves what it did."""

    def __init__(self, path: Path) -> None:
        self.path = path  # another process (a group member killed on purpose) appends here too
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

    def produced(
        self,
        topic: str,
        m: Msg,
        partition: int | None,
        offset: int | None,
        headers: Any,
        timestamp: int | None,
        **extra: Any,
    ) -> None:
        """A "produced" record: the planned message ``m`` as the client's delivery placed it."""
        self.record("produced", topic, partition, offset, m.key, m.value, headers, timestamp, **extra)

    def consumed(self, r: Any, headers: Any, timestamp: int | None) -> None:
        """A "consumed" record from a client's record object with ``topic``, ``partition``,
        ``offset``, ``key`` and ``value`` attributes (kafka-python's and aiokafka's)."""
        self.record("consumed", r.topic, r.partition, r.offset, r.key, r.value, headers, timestamp)

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


@dataclass(frozen=True)
class Scenario:
    name: str
    client: str  # a client module's NAME (registry.CLIENTS): "librdkafka", "kafkajs", ...
    api_version: str
    codec: str
    topics: tuple[str, ...]  # created in the broker (3 partitions) before the capture starts
    run: Callable[[Ctx], None]
    description: str
    timeout: float = 60.0
    notes: tuple[str, ...] = ()  # known limitations, copied into the manifest
    needs: tuple[str, ...] = ()  # extra PyPI packages, installed with pip --target if missing
    api_caps: tuple[tuple[int, int, int], ...] = ()  # (api key, min, max) the mock advertises
    sasl: str = ""  # the client's SASL mechanism: SASL_PLAINTEXT through the SASL front-end
    tls: str = ""  # a TLS front-end profile (tools/gen/tls.py); "plain": the same without TLS
    # mock cluster settings (mock.MOCK_SETTINGS names, each an rd_kafka_mock_* setter), e.g.
    # (("group_consumer_session_timeout_ms", 4000),)
    mock_settings: tuple[tuple[str, int], ...] = ()
    broker: str = "mock"  # the broker module (registry.BROKERS) the scenario runs against
    # builds what the scenario runs (go build, npm ci) before the capture, outside the namespace;
    # SystemExit with what to install when a toolchain is missing
    prepare: Callable[[], None] | None = None


def load_manifest(path: Path) -> list[dict[str, Any]]:
    if path.exists():
        return json.loads(path.read_text())
    return []
