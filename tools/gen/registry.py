"""The scenario registry: every client or broker module that contributes scenarios, in manifest
order. Adding a client or a broker is adding its module (with ``NAME`` and ``scenarios()``; a
client also has ``version()``, a broker ``cluster()``, ``capture_ports()`` and
``manifest_extra()``) and one line here.
"""

from __future__ import annotations

from types import ModuleType

from . import (
    aiokafka,
    clients,
    groups,
    internal,
    kafka_go,
    kafka_python,
    kafkajs,
    librdkafka,
    mock,
    producers,
    sarama,
    tansu,
)
from .core import Scenario

CLIENTS: dict[str, ModuleType] = {
    m.NAME: m for m in (librdkafka, kafka_python, aiokafka, kafkajs, sarama, kafka_go)
}
BROKERS: dict[str, ModuleType] = {m.NAME: m for m in (mock, tansu)}
# the modules whose scenarios() make the scenario list, in this order
SOURCES: tuple[ModuleType, ...] = (
    librdkafka,
    kafka_python,
    aiokafka,
    tansu,
    kafkajs,
    sarama,
    kafka_go,
    groups,
    internal,
    producers,
    clients,
)


def build_scenarios() -> list[Scenario]:
    out = [s for m in SOURCES for s in m.scenarios()]
    names = [s.name for s in out]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ValueError(f"scenario names used twice: {sorted(dup)}")
    return out


def client_version(client: str) -> str:
    return CLIENTS[client].version()
