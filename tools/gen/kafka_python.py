"""kafka-python scenarios: legacy message sets at old ``api_version`` settings (0.8.2 to 0.11),
SASL (PLAIN, also with the raw tokens of SaslHandshake v0) and TLS against the mock cluster.
:func:`scenario_kafka_python` serves other brokers' scenarios too."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from .core import GROUP_LINGER_S, Ctx, Scenario, enc, messages
from .sasl import SASL_NOTE, SASL_PASSWORD, SASL_USER

NAME = "kafka-python"


def version() -> str:
    import kafka

    return f"kafka-python {kafka.__version__}"


def scenario_kafka_python(
    api_version: tuple[int, ...],
    codec: str,
    sasl: str = "",
    tls: str = "",
    consumer_api: tuple[int, ...] | None = None,
) -> Callable[[Ctx], None]:
    """kafka-python at ``api_version``; over SASL_PLAINTEXT with mechanism ``sasl`` if given;
    through the TLS front-end with ``tls`` (a profile of tools/gen/tls.py; ``plain`` is its
    clear-text twin): then every TLS scenario produces the same records to topic ``kp-tls``.
    With ``consumer_api``, the consumer uses that api_version instead (an older client reading
    what a newer one wrote)."""
    c_api = consumer_api or api_version

    def run(ctx: Ctx) -> None:
        from kafka import KafkaConsumer, KafkaProducer, TopicPartition

        topic = f"kp-sasl-{codec}" if sasl else "kp-tls" if tls else f"kp-{codec}"
        security: dict[str, Any] = {}
        if tls and tls != "plain":
            from .tls import client_context

            security = {"security_protocol": "SSL", "ssl_context": client_context(os.environ["KGEN_TLS_CA"])}
        if sasl:
            security = {
                "security_protocol": "SASL_PLAINTEXT",
                "sasl_mechanism": sasl,
                "sasl_plain_username": SASL_USER,
                "sasl_plain_password": SASL_PASSWORD,
            }
        headers = api_version >= (0, 11)
        msgs = messages("kafka-python-tls" if tls else ctx.name, 6, headers=headers)
        p = KafkaProducer(
            bootstrap_servers=ctx.bootstrap,
            api_version=api_version,
            client_id=f"gen-{ctx.name}",
            compression_type=None if codec == "none" else codec,
            linger_ms=100,
            request_timeout_ms=5000,
            delivery_timeout_ms=12000,
            retries=1,
            **security,
        )
        with_ts = api_version >= (0, 10)  # magic 0 has no timestamp
        futures = []
        for m in msgs:
            kwargs: dict[str, Any] = {}
            if m.headers is not None:
                kwargs["headers"] = [(k, enc(v)) for k, v in m.headers]
            futures.append(
                (
                    m,
                    p.send(
                        topic,
                        value=enc(m.value),
                        key=enc(m.key),
                        partition=m.partition,
                        timestamp_ms=m.timestamp,
                        **kwargs,
                    ),
                )
            )
        p.flush(timeout=15)
        delivered = 0
        for m, fut in futures:
            try:
                md = fut.get(timeout=1)
            except Exception as exc:  # noqa: BLE001 - recorded in the manifest
                # Still in the Produce request on the wire: keep it, with the error.
                ts = m.timestamp if with_ts else None
                ctx.events.produced(topic, m, m.partition, None, m.headers, ts, error=type(exc).__name__)
                continue
            delivered += 1
            ctx.events.produced(
                topic, m, md.partition, md.offset, m.headers, m.timestamp if with_ts else None
            )
        p.close(timeout=5)
        if not delivered:
            return

        group = f"g-{ctx.name}" if c_api >= (0, 9) else None
        c = KafkaConsumer(
            bootstrap_servers=ctx.bootstrap,
            api_version=c_api,
            client_id=f"gen-{ctx.name}-consumer",
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
            request_timeout_ms=8000,
            **security,
        )
        if group:
            c.subscribe([topic])
        else:
            c.assign([TopicPartition(topic, i) for i in range(3)])
        got = 0
        end = time.monotonic() + min(20.0, ctx.left())
        while got < delivered and time.monotonic() < end:
            for batch in c.poll(timeout_ms=300).values():
                for r in batch:
                    got += 1
                    ts = r.timestamp if r.timestamp not in (None, -1) else None
                    ctx.events.consumed(r, (r.headers or []) if headers else None, ts)
        if got < delivered:
            ctx.events.note(f"consumer got {got} of {delivered} records")
        if group and got:
            end = time.monotonic() + GROUP_LINGER_S
            while time.monotonic() < end:
                c.poll(timeout_ms=200)
            c.commit()
        c.close()

    return run


def _kp_version(v: tuple[int, ...]) -> str:
    return ".".join(map(str, v))


def scenarios() -> list[Scenario]:
    """The kafka-python scenarios against the mock cluster, in manifest order."""
    out: list[Scenario] = []
    for api in ((0, 8, 2), (0, 9), (0, 10, 0), (0, 11)):
        fmt = {
            (0, 8, 2): "message set magic 0",
            (0, 9): "message set magic 0",
            (0, 10, 0): "message set magic 1",
            (0, 11): "record batch v2",
        }[api]
        for codec in ("none", "gzip", "snappy", "lz4"):
            v = _kp_version(api)
            consumer = (
                "an assign() consumer (no group)" if api < (0, 9) else "a consumer group (subscribe, commit)"
            )
            nested = "" if codec == "none" else f", {codec} wrapper around the inner records"
            notes: tuple[str, ...] = ()
            if codec != "none" and api < (0, 11):
                notes = (
                    "The mock cluster only stores uncompressed legacy message sets: it "
                    "answers this Produce with UNSUPPORTED_VERSION (35), so the capture "
                    "holds the compressed message set in the Produce request only and "
                    "nothing is fetched back.",
                )
            needs = ("xxhash",) if codec == "lz4" and api < (0, 10) else ()
            out.append(
                Scenario(
                    f"kafka-python-{v}-{codec}",
                    "kafka-python",
                    v,
                    codec,
                    (f"kp-{codec}",),
                    scenario_kafka_python(api, codec),
                    f"kafka-python api_version={v}: producer with compression {codec} ({fmt}"
                    f"{nested}), 6 keyed records{' with headers' if api >= (0, 11) else ''} over "
                    f"3 partitions; {consumer} fetches them back.",
                    timeout=40.0,
                    notes=notes,
                    needs=needs,
                )
            )
    kp_sasl: tuple[tuple[tuple[int, ...], str, str, tuple[str, ...]], ...] = (
        (
            (0, 10, 0),
            "kafka-python-0.10.0-sasl-plain",
            "ApiVersions v0, SaslHandshake v0, then the PLAIN token as a raw size-prefixed frame "
            "(not a Kafka request) answered by an empty raw frame; producer (Produce v2, message "
            "set magic 1) with 6 keyed records",
            (),
        ),
        (
            (2, 3),
            "kafka-python-sasl-plain",
            "ApiVersions v2, SaslHandshake v1, then SaslAuthenticate v1; producer (Produce v7, "
            "record batch v2) with 6 keyed records with headers",
            (
                "api_version 2.3 is the newest kafka-python setting that works with the mock: "
                "from 2.4 kafka-python sends ApiVersions v3, cannot decode the mock's "
                "UNSUPPORTED_VERSION answer (KafkaProtocolError: Unable to decode response), "
                "drops the connection and retries until it times out; so SaslAuthenticate v2 "
                "(flexible; kafka-python from 2.5) is not in these captures.",
            ),
        ),
    )
    for api, name, how, extra in kp_sasl:
        out.append(
            Scenario(
                name,
                "kafka-python",
                _kp_version(api),
                "none",
                ("kp-sasl-none",),
                scenario_kafka_python(api, "none", sasl="PLAIN"),
                f"kafka-python api_version={_kp_version(api)} over SASL_PLAINTEXT, "
                f"sasl_mechanism=PLAIN, user {SASL_USER!r}, password {SASL_PASSWORD!r}: on every "
                f"connection {how} over 3 partitions; a consumer group fetches them back.",
                timeout=40.0,
                notes=SASL_NOTE + extra,
                sasl="PLAIN",
            )
        )
    from .tls import HOST, PROFILES

    for profile in (*PROFILES, "plain"):
        version, _cipher, iana = PROFILES.get(profile, ("clear text", "", ""))
        how = f"over {version} ({iana})" if profile != "plain" else "in clear text (the TLS scenarios' twin)"
        out.append(
            Scenario(
                f"kafka-python-tls-{profile}",
                "kafka-python",
                "2.3",
                "none",
                ("kp-tls",),
                scenario_kafka_python((2, 3), "none", tls=profile),
                f"kafka-python api_version=2.3 {how} through the TLS front-end on {HOST}: producer "
                "(Produce v7) with 6 keyed records with headers over 3 partitions, a consumer group "
                "fetches them back; the same records in every kafka-python-tls-* capture",
                timeout=40.0,
                tls=profile,
            )
        )
    return out
