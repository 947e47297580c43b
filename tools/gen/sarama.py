"""sarama (Shopify's Go client, Debian's golang-github-shopify-sarama-dev 1.22) scenarios: a
SyncProducer (acks=all, Kafka version 2.1.0: record batch v2 with headers) and a consumer group
(JoinGroup/SyncGroup/Heartbeat, OffsetCommit, LeaveGroup), by codec, against the mock cluster.
The program is tools/gen/go/sarama/main.go, built offline by go.py."""

from __future__ import annotations

from .core import Scenario, messages
from .external import program_scenario
from .go import GoClient

NAME = "sarama"
CLIENT = GoClient("sarama", "golang-github-shopify-sarama-dev", "github.com/Shopify/sarama")
CODECS = ("snappy", "zstd")


def version() -> str:
    return CLIENT.version("sarama")


def scenarios() -> list[Scenario]:
    """The sarama scenarios against the mock cluster, in manifest order."""
    return [
        Scenario(
            f"sarama-{codec}",
            NAME,
            "2.1.0 (Config.Version)",
            codec,
            (f"sarama-{codec}",),
            program_scenario(CLIENT.cmd, f"sarama-{codec}", codec, lambda name: messages(name, 6)),
            f"sarama SyncProducer (Config.Version 2.1.0, acks=all, compression {codec}, record batch "
            "v2) sends 6 keyed records with headers over 3 partitions in one SendMessages; a sarama "
            "consumer group (JoinGroup/SyncGroup/Heartbeat) fetches them back, commits the marked "
            "offsets and leaves.",
            prepare=CLIENT.build,
        )
        for codec in CODECS
    ]
