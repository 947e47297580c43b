"""segmentio/kafka-go (Debian's golang-github-segmentio-kafka-go-dev 0.2) scenarios: a Writer
(acks=all, message sets of magic 1: no headers) and a Reader with a GroupID (JoinGroup/SyncGroup/
Heartbeat, one OffsetCommit; no LeaveGroup on Close), against the mock cluster. kafka-go 0.2 labels its
JoinGroup subscription version 1 but writes the version-0 layout: the analyzer names that
quirk (quirk.kafka_go_subscription). The program is tools/gen/go/kafkago/main.go, built
offline by go.py."""

from __future__ import annotations

from .core import Scenario, messages
from .external import program_scenario
from .go import GoClient

NAME = "kafka-go"
CLIENT = GoClient("kafkago", "golang-github-segmentio-kafka-go-dev", "github.com/segmentio/kafka-go")


def version() -> str:
    return CLIENT.version("kafka-go")


def scenarios() -> list[Scenario]:
    """The kafka-go scenario against the mock cluster. None against Tansu: it answers kafka-go's
    Produce v2 (magic 1) with UNKNOWN_PRODUCER_ID, as it does kafka-python's at api_version 0.10.1
    (tansu-kafka-python-0.10.1-none), so nothing would be stored or consumed."""
    return [
        Scenario(
            "kafka-go-none",
            NAME,
            "0.2 (Produce v2, Fetch v2, JoinGroup v1)",
            "none",
            ("kafka-go-none",),
            program_scenario(
                CLIENT.cmd, "kafka-go-none", "none", lambda name: messages(name, 6, headers=False)
            ),
            "kafka-go Writer (acks=all, message set magic 1, no compression) writes 6 keyed records "
            "(no headers: magic 1 has none) over 3 partitions, routed by a Balancer; a Reader with "
            "a GroupID (JoinGroup with the subscription kafka-go 0.2 labels v1 in the v0 layout, "
            "SyncGroup, Heartbeat) fetches them back, commits once and closes (kafka-go 0.2 sends "
            "no LeaveGroup).",
            notes=(
                "kafka-go's Writer reports no offsets: the produced records have offset null (the "
                "consumed ones carry them).",
                "Uncompressed only: the mock cluster answers a compressed magic-1 message set with "
                "UNSUPPORTED_VERSION (35), as in the kafka-python 0.10.0 compressed scenarios.",
            ),
            prepare=CLIENT.build,
        )
    ]
