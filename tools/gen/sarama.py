"""sarama (Shopify's Go client, Debian's golang-github-shopify-sarama-dev 1.22) scenarios: a
SyncProducer (acks=all, Kafka version 2.1.0: record batch v2 with headers) and a consumer group
(JoinGroup/SyncGroup/Heartbeat, OffsetCommit, LeaveGroup), by codec, against the mock cluster,
and zstd against Tansu (where the group gives way to a partition consumer). The program is
tools/gen/go/sarama/main.go, built offline by go.py."""

from __future__ import annotations

from . import tansu
from .core import Scenario, messages
from .external import program_scenario
from .go import GoClient

NAME = "sarama"
CLIENT = GoClient("sarama", "golang-github-shopify-sarama-dev", "github.com/Shopify/sarama")
CODECS = ("snappy", "zstd")
TANSU_NOTES = (
    "Tansu answers sarama's JoinGroup v1 with MEMBER_ID_REQUIRED (79), which KIP-394 defines for "
    "JoinGroup v4 and later only (quirk.error_too_new); sarama 1.22 does not know that code and "
    "gives the group up, so the program reads the records back by partition (ListOffsets, "
    "Fetch) without a group.",
)


def version() -> str:
    return CLIENT.version("sarama")


def _scenario(codec: str, broker: str = "mock") -> Scenario:
    on_tansu = broker == tansu.NAME
    against = f" {tansu.AGAINST}" if on_tansu else ""
    return Scenario(
        f"{tansu.NAME}-sarama-{codec}" if on_tansu else f"sarama-{codec}",
        NAME,
        "2.1.0 (Config.Version)",
        codec,
        (f"sarama-{codec}",),
        program_scenario(CLIENT.cmd, f"sarama-{codec}", codec, lambda name: messages(name, 6)),
        f"sarama SyncProducer{against} (Config.Version 2.1.0, acks=all, compression {codec}, "
        "record batch v2) sends 6 keyed records with headers over 3 partitions in one "
        "SendMessages; a sarama consumer group (JoinGroup/SyncGroup/Heartbeat) fetches them back, "
        "commits the marked offsets and leaves"
        + ("; when the broker will not let it join, a partition consumer reads them." if on_tansu else "."),
        notes=TANSU_NOTES if on_tansu else (),
        prepare=CLIENT.build,
        broker=broker,
    )


def scenarios() -> list[Scenario]:
    """The sarama scenarios against the mock cluster and Tansu, in manifest order."""
    return [*(_scenario(codec) for codec in CODECS), _scenario("zstd", tansu.NAME)]
