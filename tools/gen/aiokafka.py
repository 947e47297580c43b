"""aiokafka scenarios: an asyncio producer by codec and a consumer group, against the mock
cluster. :func:`scenario_aiokafka` serves other brokers' scenarios too."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from .core import GROUP_LINGER_S, Ctx, Scenario, enc, messages

NAME = "aiokafka"


def version() -> str:
    import aiokafka

    return f"aiokafka {aiokafka.__version__}"


def scenario_aiokafka(codec: str) -> Callable[[Ctx], None]:
    async def main(ctx: Ctx) -> None:
        from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

        topic = f"aio-{codec}"
        msgs = messages(ctx.name, 6)
        p = AIOKafkaProducer(
            bootstrap_servers=ctx.bootstrap,
            client_id=f"gen-{ctx.name}",
            compression_type=None if codec == "none" else codec,
            linger_ms=100,
            request_timeout_ms=8000,
        )
        await p.start()
        try:
            futs = [
                (
                    m,
                    await p.send(
                        topic,
                        value=enc(m.value),
                        key=enc(m.key),
                        partition=m.partition,
                        timestamp_ms=m.timestamp,
                        headers=[(k, enc(v)) for k, v in m.headers or ()],
                    ),
                )
                for m in msgs
            ]
            for m, fut in futs:
                md = await fut
                ctx.events.produced(topic, m, md.partition, md.offset, list(m.headers or ()), m.timestamp)
        finally:
            await p.stop()

        c = AIOKafkaConsumer(
            topic,
            bootstrap_servers=ctx.bootstrap,
            group_id=f"g-{ctx.name}",
            client_id=f"gen-{ctx.name}-consumer",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
        )
        await c.start()
        got = 0
        try:
            end = time.monotonic() + min(20.0, ctx.left())
            while got < len(msgs) and time.monotonic() < end:
                for batch in (await c.getmany(timeout_ms=300)).values():
                    for r in batch:
                        got += 1
                        ctx.events.consumed(r, list(r.headers), r.timestamp)
            if got < len(msgs):
                ctx.events.note(f"consumer got {got} of {len(msgs)} records")
            if got:
                await c.getmany(timeout_ms=int(GROUP_LINGER_S * 1000))
                await c.commit()
        finally:
            await c.stop()

    def run(ctx: Ctx) -> None:
        asyncio.run(main(ctx))

    return run


def scenarios() -> list[Scenario]:
    """The aiokafka scenarios against the mock cluster, in manifest order."""
    out: list[Scenario] = []
    for codec in ("gzip", "zstd"):
        out.append(
            Scenario(
                f"aiokafka-{codec}",
                "aiokafka",
                "auto (ApiVersions)",
                codec,
                (f"aio-{codec}",),
                scenario_aiokafka(codec),
                f"aiokafka producer (compression {codec}) sends 6 keyed records with headers over "
                f"3 partitions; an aiokafka consumer group fetches them back and commits.",
            )
        )
    return out
