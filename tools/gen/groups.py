"""Consumer-group scenarios (issue 27) and their ground truth: librdkafka consumers (confluent-kafka)
joining, leaving, being killed, restarting with a static id, rebalancing cooperatively, using the
KIP-848 protocol, and lagging (slow, stopped, rewinding), against the mock cluster.

Every client writes what it saw, with ``time.time()`` (the clock tcpdump stamps packets with), to
the worker's event log as ``truth`` events; :func:`build_truth` turns them into
``captures/<scenario>.truth.json`` (the format: captures/README.md, "Group ground truth").

A member that is killed on purpose runs in its own process (:func:`child_main`), which appends to
the same event log; SIGKILL ends it without LeaveGroup, so the coordinator expires it after its
session timeout.
"""

from __future__ import annotations

import functools
import json
import os
import queue
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .core import FILLER, ROOT, Ctx, Events, Msg, Scenario, enc

SESSION_MS = 4000  # classic groups: the mock expires a silent member after this (checked every 1 s)
HEARTBEAT_MS = 500
STATS_MS = 500
TRUTH_KINDS = ("truth", "truth_client", "expect", "phase")
# the statistics fields kept (librdkafka STATISTICS.md): the group's and each assigned partition's
CGRP_FIELDS = ("state", "join_state", "rebalance_cnt", "rebalance_reason", "assignment_size")
PART_FIELDS = (
    "fetch_state",
    "fetchq_cnt",
    "app_offset",
    "stored_offset",
    "committed_offset",
    "next_offset",
    "lo_offset",
    "hi_offset",
    "ls_offset",
    "consumer_lag",
    "consumer_lag_stored",
)


def now() -> float:
    return time.time()


def tps(parts: Any) -> list[list[Any]]:
    """TopicPartitions as ``[topic, partition, offset]`` (offset as librdkafka gives it: -1001 is
    INVALID, i.e. none), sorted."""
    return sorted([p.topic, p.partition, p.offset] for p in parts or ())


def group_metadata(consumer: Any) -> dict[str, Any]:
    """Generation (the member epoch under KIP-848), member id and group.instance.id, read from the
    consumer's serialized group metadata (rd_kafka_consumer_group_metadata_write: ``CGMDv2:``,
    int32 generation in host order, group id, member id, null flag, instance id; C strings)."""
    raw = consumer.consumer_group_metadata()
    if not isinstance(raw, bytes | bytearray):
        return {}
    magic = b"CGMDv2:"
    if not raw.startswith(magic):
        return {}
    pos = len(magic)
    (gen,) = struct.unpack_from("=i", raw, pos)
    pos += 4
    group_end = raw.index(b"\x00", pos)
    member_end = raw.index(b"\x00", group_end + 1)
    member = raw[group_end + 1 : member_end].decode()
    null = raw[member_end + 1]
    instance = None if null else raw[member_end + 2 : raw.index(b"\x00", member_end + 2)].decode()
    return {"generation": gen, "member_id": member, "instance_id": instance}


class Truth:
    """Writes one client's view: ``truth`` events with its name and the wall-clock time."""

    def __init__(self, events: Events, client: str) -> None:
        self.events, self.client = events, client

    def __call__(self, event: str, **data: Any) -> None:
        self.events.emit("truth", client=self.client, event=event, t=now(), **data)


class Member:
    """A group consumer (subscribe) whose callbacks, commits, statistics and records go to the
    truth. ``run()`` polls in a thread until ``close()`` or ``stop`` (the latter leaves the
    consumer open: its process is about to be killed)."""

    def __init__(
        self,
        events: Events,
        bootstrap: str,
        scenario: str,
        name: str,
        group: str,
        topics: list[str],
        conf: dict[str, Any] | None = None,
        on_message: Callable[[Member, Any], None] | None = None,
    ) -> None:
        from confluent_kafka import Consumer

        self.events, self.name, self.group, self.topics = events, name, group, topics
        self.truth = Truth(events, name)
        self.on_message = on_message
        self.assignment: set[tuple[str, int]] = set()
        self.positions: dict[tuple[str, int], int] = {}  # next offset to read
        self.consumed = 0
        self.paused = False
        self._last_stats: Any = None
        self._stop = threading.Event()
        self._tasks: queue.Queue[tuple[Callable[[], Any], threading.Event]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self.lock = threading.Lock()
        settings: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "client.id": f"gen-{scenario}-{name}",
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": True,
            "auto.commit.interval.ms": 1000,
            "session.timeout.ms": SESSION_MS,
            "heartbeat.interval.ms": HEARTBEAT_MS,
            "partition.assignment.strategy": "range",
            "statistics.interval.ms": STATS_MS,
            **(conf or {}),
        }
        if settings.get("group.protocol") == "consumer":  # KIP-848: the broker sets these
            for k in ("session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy"):
                settings.pop(k, None)
        self.settings = settings
        # the callbacks get the partitions added/removed, not the whole assignment
        self.incremental = (
            settings.get("group.protocol") == "consumer"
            or settings.get("partition.assignment.strategy") == "cooperative-sticky"
        )
        shown = {k: v for k, v in settings.items() if k != "bootstrap.servers"}
        events.emit("truth_client", client=name, role="consumer", group=group, topics=topics, config=shown)
        self.c = Consumer(
            {
                **settings,
                "on_commit": self._on_commit,
                "stats_cb": self._on_stats,
                "error_cb": lambda err: self.truth("error", error=str(err)),
            }
        )
        self.truth("created", pid=os.getpid())

    # callbacks (all served by poll() in the member's thread)
    def _meta(self) -> dict[str, Any]:
        return {**group_metadata(self.c), "member_id_api": self.c.memberid()}

    def _on_assign(self, c: Any, parts: Any) -> None:
        incremental = self.incremental
        with self.lock:
            self.assignment |= {(p.topic, p.partition) for p in parts}
            whole = sorted(self.assignment)
        self.truth(
            "assign",
            partitions=tps(parts),
            incremental=incremental,
            assignment=[list(x) for x in whole],
            **self._meta(),
        )

    def _on_revoke(self, c: Any, parts: Any) -> None:
        self._lose("revoke", c, parts)

    def _on_lost(self, c: Any, parts: Any) -> None:
        self._lose("lost", c, parts)

    def _lose(self, what: str, c: Any, parts: Any) -> None:
        incremental = self.incremental
        with self.lock:
            self.assignment -= {(p.topic, p.partition) for p in parts}
            whole = sorted(self.assignment)
        self.truth(
            what,
            partitions=tps(parts),
            incremental=incremental,
            assignment=[list(x) for x in whole],
            **self._meta(),
        )

    def _on_commit(self, err: Any, parts: Any) -> None:
        self.truth(
            "commit",
            error=None if err is None else str(err),
            offsets=[
                [p.topic, p.partition, p.offset, None if p.error is None else str(p.error)]
                for p in parts or ()
            ],
        )

    def _on_stats(self, raw: str) -> None:
        s = json.loads(raw)
        cg = s.get("cgrp") or {}
        snap: dict[str, Any] = {"cgrp": {k: cg.get(k) for k in CGRP_FIELDS}, "partitions": []}
        for topic in self.topics:
            for pid, p in sorted(((s.get("topics") or {}).get(topic) or {}).get("partitions", {}).items()):
                if pid == "-1" or p.get("fetch_state") == "none" and p.get("committed_offset", -1001) < 0:
                    continue
                snap["partitions"].append(
                    {"topic": topic, "partition": int(pid), **{k: p.get(k) for k in PART_FIELDS}}
                )
        if snap != self._last_stats:  # unchanged snapshots are left out
            self._last_stats = snap
            self.truth("stats", stats_time=s.get("time"), **snap)

    # the poll loop
    def subscribe(self) -> None:
        self.truth("subscribe", topics=self.topics)
        self.c.subscribe(
            self.topics, on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost
        )

    def poll(self, timeout: float = 0.2) -> None:
        m = self.c.poll(timeout)
        if m is None:
            return
        if m.error():
            self.truth("error", error=str(m.error()))
            return
        kind, ts = m.timestamp()
        topic, part, offset = str(m.topic()), int(m.partition() or 0), int(m.offset() or 0)
        self.events.record(
            "consumed",
            topic,
            part,
            offset,
            m.key(),
            m.value(),
            m.headers() or [],
            ts if kind != 0 else None,
            consumer=self.name,
        )
        self.truth("consumed", topic=topic, partition=part, offset=offset)
        with self.lock:
            self.positions[(topic, part)] = offset + 1
            self.consumed += 1
        if self.on_message is not None:
            self.on_message(self, m)

    def start(self) -> Member:
        self.subscribe()
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.poll()
            self._run_tasks()

    def _run_tasks(self) -> None:
        while True:
            try:
                fn, done = self._tasks.get_nowait()
            except queue.Empty:
                return
            try:
                fn()
            finally:
                done.set()

    def call(self, fn: Callable[[], Any], timeout: float = 15.0) -> None:
        """Run ``fn`` in the member's thread between two polls (the consumer is used by one
        thread only) and wait for it."""
        if self._thread is None or not self._thread.is_alive():
            fn()
            return
        done = threading.Event()
        self._tasks.put((fn, done))
        done.wait(timeout)

    def close(self) -> None:
        """Leave the group (LeaveGroup, or the KIP-848 leave heartbeat) and close."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.truth("close_begin")
        self.c.close()
        self.truth("closed")

    def stop_polling(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def commit(self, offsets: list[tuple[str, int, int]]) -> None:
        """Commit these offsets (synchronously, from the member's thread); on_commit records them."""
        from confluent_kafka import KafkaException, TopicPartition

        self.truth("commit_request", offsets=[list(o) for o in offsets])
        try:
            done = self.c.commit(offsets=[TopicPartition(t, p, o) for t, p, o in offsets], asynchronous=False)
        except KafkaException as exc:
            self.truth(
                "commit", sync=True, error=str(exc), offsets=[[t, p, o, str(exc)] for t, p, o in offsets]
            )
            return
        # a synchronous commit's result is its return value (on_commit is not called for it)
        self.truth(
            "commit",
            sync=True,
            error=None,
            offsets=[
                [x.topic, x.partition, x.offset, None if x.error is None else str(x.error)]
                for x in done or ()
            ],
        )

    def watermarks(self, parts: list[tuple[str, int]], cached: bool = False) -> None:
        """The low and high watermarks (ListOffsets on the wire unless ``cached``), queried in
        the member's thread."""
        self.call(lambda: self._watermarks(parts, cached))

    def _watermarks(self, parts: list[tuple[str, int]], cached: bool) -> None:
        from confluent_kafka import TopicPartition

        out = []
        for t, p in parts:
            try:
                lo, hi = self.c.get_watermark_offsets(TopicPartition(t, p), timeout=5, cached=cached)
            except Exception as exc:  # noqa: BLE001 - a failed query is part of the view
                out.append([t, p, None, None, str(exc)])
                continue
            out.append([t, p, lo, hi, None])
        self.truth("watermarks", cached=cached, offsets=out)


class Feeder:
    """A producer whose delivery reports (with their time) go to the manifest and the truth.
    Record timestamps are the wall clock at produce time (so lag in seconds means something)."""

    def __init__(self, ctx: Ctx, name: str, conf: dict[str, Any] | None = None) -> None:
        from confluent_kafka import Producer

        self.ctx, self.name = ctx, name
        self.truth = Truth(ctx.events, name)
        settings = {"client.id": f"gen-{ctx.name}-{name}", "linger.ms": 50, "acks": "all", **(conf or {})}
        ctx.events.emit("truth_client", client=name, role="producer", group=None, topics=[], config=settings)
        self.p = Producer({"bootstrap.servers": ctx.bootstrap, **settings})
        self.sent = 0
        self.delivered = 0

    def send(self, topic: str, i: int, partition: int, scenario: str) -> None:
        ts = int(now() * 1000)
        m = Msg(
            partition, f"k-{scenario}-{i}", f"v-{scenario}-{i}-" + FILLER, (("h1", f"h1-{scenario}-{i}"),), ts
        )

        def delivered(err: Any, dr: Any) -> None:
            if err is not None:
                self.ctx.events.note(f"delivery failed for key {m.key!r}: {err}")
                self.truth(
                    "delivery", topic=topic, partition=partition, offset=None, error=str(err), key=m.key
                )
                return
            self.delivered += 1
            self.ctx.events.record(
                "produced", dr.topic(), dr.partition(), dr.offset(), m.key, m.value, list(m.headers or ()), ts
            )
            self.truth(
                "delivery",
                topic=dr.topic(),
                partition=dr.partition(),
                offset=dr.offset(),
                timestamp=ts,
                key=m.key,
            )

        self.p.produce(
            topic,
            value=enc(m.value),
            key=enc(m.key),
            partition=partition,
            headers=[(k, enc(v)) for k, v in m.headers or ()],
            timestamp=ts,
            on_delivery=delivered,
        )
        self.sent += 1
        self.p.poll(0)

    def burst(self, topic: str, first: int, count: int, scenario: str, partitions: int = 3) -> int:
        for i in range(first, first + count):
            self.send(topic, i, i % partitions, scenario)
        self.flush()
        return first + count

    def flush(self) -> None:
        left = self.p.flush(10)
        if left:
            self.ctx.events.note(f"{self.name}: {left} message(s) not delivered at flush timeout")


def phase(ctx: Ctx, text: str) -> None:
    ctx.events.emit("phase", t=now(), text=text)


def wait_until(ctx: Ctx, what: str, cond: Callable[[], bool], timeout: float = 20.0) -> bool:
    end = time.monotonic() + min(timeout, ctx.left())
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    ctx.events.note(f"timed out waiting for: {what}")
    return False


def truth_events(ctx: Ctx, client: str) -> list[dict[str, Any]]:
    """The truth events a client (possibly in another process) has written so far."""
    out = []
    for line in Path(ctx.events.path).read_text().splitlines():
        try:
            e = json.loads(line)
        except ValueError:  # a line being written
            continue
        if e.get("kind") == "truth" and e.get("client") == client:
            out.append(e)
    return out


def last_assignment(ctx: Ctx, client: str) -> set[tuple[str, int]] | None:
    for e in reversed(truth_events(ctx, client)):
        if e["event"] in ("assign", "revoke", "lost"):
            return {(t, p) for t, p in e["assignment"]}
    return None


def member_id_of(ctx: Ctx, client: str) -> str | None:
    ids = [e.get("member_id") for e in truth_events(ctx, client) if e["event"] == "assign"]
    return ids[-1] if ids else None


def stable(ctx: Ctx, members: list[Member], parts: int, extra: int = 0) -> Callable[[], bool]:
    """True when the members' assignments (plus ``extra`` partitions held elsewhere) cover ``parts``
    partitions, none twice."""

    def cond() -> bool:
        held = [tp for m in members for tp in m.assignment]
        return len(held) + extra == parts and len(set(held)) == len(held)

    return cond


# a member in its own process (killed on purpose)


def spawn_member(
    ctx: Ctx, name: str, group: str, topics: list[str], conf: dict[str, Any]
) -> subprocess.Popen[bytes]:
    args = json.dumps(
        {
            "events": str(ctx.events.path),
            "bootstrap": ctx.bootstrap,
            "scenario": ctx.name,
            "name": name,
            "group": group,
            "topics": topics,
            "conf": conf,
        }
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    code = "import sys; from tools.gen.groups import child_main; child_main(sys.argv[1])"
    return subprocess.Popen([sys.executable, "-c", code, args], env=env)


def child_main(raw: str) -> None:
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: never outlive the worker
    a = json.loads(raw)
    events = Events(Path(a["events"]))
    m = Member(events, a["bootstrap"], a["scenario"], a["name"], a["group"], a["topics"], a["conf"])
    m.subscribe()
    while True:  # until SIGKILL
        m.poll()


def kill(ctx: Ctx, proc: subprocess.Popen[bytes], name: str) -> None:
    Truth(ctx.events, name)("killed", pid=proc.pid, signal="SIGKILL")
    proc.send_signal(signal.SIGKILL)
    proc.wait()


# the scenarios


def joins_flow(ctx: Ctx, topic: str, group: str, conf: dict[str, Any], expect: dict[str, Any]) -> None:
    """Three members join one after another, the second leaves (close: LeaveGroup, or the KIP-848
    leave heartbeat), the third is killed (SIGKILL: nothing sent) and expires after the session
    timeout; the first takes every partition and leaves. A producer writes between the phases."""
    ctx.events.emit(
        "expect",
        group=group,
        join_order=["c1", "c2", "c3"],
        left=["c2"],
        killed=["c3"],
        rebalance_causes=["c1 joins", "c2 joins", "c3 joins", "c2 leaves", "c3 expires"],
        **expect,
    )
    prod = Feeder(ctx, "producer")
    n = prod.burst(topic, 0, 6, ctx.name)
    phase(ctx, "c1 joins")
    c1 = Member(ctx.events, ctx.bootstrap, ctx.name, "c1", group, [topic], conf).start()
    wait_until(ctx, "c1 assigned and caught up", lambda: len(c1.assignment) == 3 and all_consumed(ctx))
    time.sleep(1.5)
    phase(ctx, "c2 joins")
    c2 = Member(ctx.events, ctx.bootstrap, ctx.name, "c2", group, [topic], conf).start()
    wait_until(ctx, "c1+c2 stable", lambda: bool(c2.assignment) and stable(ctx, [c1, c2], 3)())
    n = prod.burst(topic, n, 3, ctx.name)
    time.sleep(1.5)
    phase(ctx, "c3 joins (own process)")
    c3 = spawn_member(ctx, "c3", group, [topic], conf)
    try:

        def three() -> bool:
            a3 = last_assignment(ctx, "c3") or set()
            return (
                bool(a3)
                and bool(c1.assignment)
                and bool(c2.assignment)
                and stable(ctx, [c1, c2], 3, len(a3))()
            )

        wait_until(ctx, "c1+c2+c3 stable", three)
        n = prod.burst(topic, n, 3, ctx.name)
        time.sleep(1.5)
        phase(ctx, "c2 leaves (close)")
        c2.close()

        def two() -> bool:
            a3 = last_assignment(ctx, "c3") or set()
            return bool(a3) and bool(c1.assignment) and stable(ctx, [c1], 3, len(a3))()

        wait_until(ctx, "c1+c3 stable", two)
        time.sleep(1.5)
        c1.watermarks([(topic, p) for p in range(3)])
        phase(ctx, "c3 killed (SIGKILL)")
        kill(ctx, c3, "c3")
        n = prod.burst(topic, n, 3, ctx.name)
        wait_until(
            ctx,
            "c1 alone with every partition",
            lambda: len(c1.assignment) == 3,
            timeout=SESSION_MS / 1000 + 15,
        )
        wait_until(ctx, "every record consumed", lambda: all_consumed(ctx))
        time.sleep(1.5)
        c1.watermarks([(topic, p) for p in range(3)])
        phase(ctx, "c1 leaves (close)")
        c1.close()
    finally:
        if c3.poll() is None:
            c3.kill()


def scenario_joins(ctx: Ctx) -> None:
    joins_flow(
        ctx,
        "grp-joins",
        "g-group-joins",
        {},
        {"protocol": "classic", "assignor": "range", "session_timeout_ms": SESSION_MS},
    )


def scenario_cooperative(ctx: Ctx) -> None:
    joins_flow(
        ctx,
        "grp-coop",
        "g-group-cooperative",
        {"partition.assignment.strategy": "cooperative-sticky"},
        {"protocol": "classic", "assignor": "cooperative-sticky", "session_timeout_ms": SESSION_MS},
    )


def scenario_kip848(ctx: Ctx) -> None:
    joins_flow(
        ctx,
        "grp-kip848",
        "g-group-kip848",
        {"group.protocol": "consumer"},
        {"protocol": "consumer", "assignor": "uniform (the mock's)", "session_timeout_ms": SESSION_MS},
    )


def scenario_static(ctx: Ctx) -> None:
    """Two static members (group.instance.id); s2 closes (a static member's leave keeps its
    assignment) and a new s2 process with the same instance id rejoins within the session
    timeout: it gets its partitions back and s1 sees no rebalance."""
    topic, group = "grp-static", "g-group-static"
    conf = {"group.protocol": "consumer"}
    ctx.events.emit(
        "expect",
        group=group,
        protocol="consumer",
        session_timeout_ms=SESSION_MS,
        static_members={"s1": "static-1", "s2": "static-2"},
        restarted=["s2"],
        static_rejoin_no_rebalance=True,
        rebalance_causes=["s1 joins", "s2 joins"],
    )
    prod = Feeder(ctx, "producer")
    n = prod.burst(topic, 0, 6, ctx.name)
    phase(ctx, "s1 joins")
    s1 = Member(
        ctx.events, ctx.bootstrap, ctx.name, "s1", group, [topic], {**conf, "group.instance.id": "static-1"}
    ).start()
    wait_until(ctx, "s1 assigned and caught up", lambda: len(s1.assignment) == 3 and all_consumed(ctx))
    time.sleep(1.5)
    phase(ctx, "s2 joins")
    s2 = Member(
        ctx.events, ctx.bootstrap, ctx.name, "s2", group, [topic], {**conf, "group.instance.id": "static-2"}
    ).start()
    wait_until(ctx, "s1+s2 stable", lambda: bool(s2.assignment) and stable(ctx, [s1, s2], 3)())
    n = prod.burst(topic, n, 3, ctx.name)
    wait_until(ctx, "every record consumed", lambda: all_consumed(ctx))
    time.sleep(1.5)
    phase(ctx, "s2 stops (close, static leave)")
    s2.close()
    time.sleep(1.0)
    phase(ctx, "s2 restarts with the same group.instance.id")
    s2b = Member(
        ctx.events,
        ctx.bootstrap,
        ctx.name,
        "s2-restarted",
        group,
        [topic],
        {**conf, "group.instance.id": "static-2"},
    ).start()
    wait_until(ctx, "s2 back", lambda: bool(s2b.assignment) and stable(ctx, [s1, s2b], 3)())
    n = prod.burst(topic, n, 3, ctx.name)
    wait_until(ctx, "every record consumed", lambda: all_consumed(ctx))
    time.sleep(1.5)
    phase(ctx, "s1 and s2 leave (close)")
    s2b.close()
    s1.close()


LAG_RUN_S = 20.0  # the producer writes for this long
LAG_GROUPS = {  # client name -> (group, Burrow status its commits should earn)
    "ok": ("g-lag-ok", "OK"),
    "slow": ("g-lag-slow", "WARN"),
    "stop": ("g-lag-stop", "STOP"),
    "rewind": ("g-lag-rewind", "REWIND"),
}


class Behaviour:
    """How a lag-scenario member processes and commits (its ``on_message`` hook and ``tick``)."""

    def __init__(
        self, sleep: float, every: float, stop_at: float | None = None, rewind_at: float | None = None
    ):
        self.sleep, self.every, self.stop_at, self.rewind_at = sleep, every, stop_at, rewind_at
        self.start = time.monotonic()
        self.last_commit = time.monotonic()
        self.stopped = self.rewound = False

    def on_message(self, m: Member, msg: Any) -> None:
        if self.sleep:
            time.sleep(self.sleep)  # "processing"
        self.tick(m)

    def tick(self, m: Member) -> None:
        now_m = time.monotonic()
        if self.stopped:
            return
        if self.stop_at is not None and now_m - self.start >= self.stop_at:
            self.stopped = True
            parts = [TopicPartitionOf(t, p) for t, p in sorted(m.assignment)]
            m.truth(
                "pause",
                partitions=[[t, p] for t, p in sorted(m.assignment)],
                reason="stop consuming and committing",
            )
            m.c.pause(parts)
            m.paused = True
            return
        if self.rewind_at is not None and not self.rewound and now_m - self.start >= self.rewind_at:
            self.rewound = True
            back = {k: max(0, v - 5) for k, v in m.positions.items()}
            m.truth("rewind", offsets=[[t, p, o] for (t, p), o in sorted(back.items())], by=5)
            for (t, p), o in back.items():
                m.c.seek(TopicPartitionOf(t, p, o))
                m.positions[(t, p)] = o
            m.commit([(t, p, o) for (t, p), o in sorted(back.items())])
            self.last_commit = now_m
            return
        if now_m - self.last_commit >= self.every and m.positions:
            self.last_commit = now_m
            m.commit([(t, p, o) for (t, p), o in sorted(m.positions.items())])


def TopicPartitionOf(topic: str, partition: int, offset: int | None = None) -> Any:  # noqa: N802
    from confluent_kafka import TopicPartition

    return TopicPartition(topic, partition) if offset is None else TopicPartition(topic, partition, offset)


def scenario_lag(ctx: Ctx) -> None:
    """A producer writes one record to each of 3 partitions every second; four groups of one
    member each read the topic: ok (keeps up, commits every 1 s), slow (1.5 s per record, commits
    every 3 s: lag grows), stop (commits for 5 s, then pauses and never commits again while the
    producer goes on) and rewind (0.75 s per record, commits every 2 s, then seeks 5 records back
    on each partition and commits the lower offsets). slow and rewind join after 4 s, so their lag
    is never 0."""
    topic = "grp-lag"
    ctx.events.emit(
        "expect",
        groups={name: g for name, (g, _) in LAG_GROUPS.items()},
        burrow={g: status for g, status in LAG_GROUPS.values()},
        burrow_rules=(
            "Burrow's partition evaluator over each partition's commits in the capture: lag 0 at "
            "the last commit -> OK; STOP when the time since the last commit exceeds the span "
            "between the first and last commit and the end offset moved past the committed "
            "offset; any zero lag -> OK; an offset going back -> REWIND; all offsets equal -> "
            "STALL; lag never decreasing -> WARN; else OK"
        ),
        producer_rate_per_partition_per_s=1,
    )
    prod = Feeder(ctx, "producer")
    behaviours = {
        "ok": Behaviour(0.0, 1.0),
        "slow": Behaviour(1.5, 3.0),
        "stop": Behaviour(0.0, 1.0, stop_at=5.0),
        "rewind": Behaviour(0.75, 2.0, rewind_at=9.0),
    }
    members: dict[str, Member] = {}
    conf = {"enable.auto.commit": False, "statistics.interval.ms": 1000}
    started = time.monotonic()
    i = 0
    next_send = started
    next_marks = started + 3.0
    phase(ctx, "producer starts; ok and stop join")
    for name in ("ok", "stop"):
        b = behaviours[name]
        members[name] = Member(
            ctx.events, ctx.bootstrap, ctx.name, name, LAG_GROUPS[name][0], [topic], conf, b.on_message
        ).start()
    late = ["slow", "rewind"]
    while time.monotonic() - started < LAG_RUN_S and ctx.left() > 10:
        if late and time.monotonic() - started >= 4.0:  # a backlog first: their lag is never 0
            phase(ctx, "slow and rewind join")
            for name in late:
                b = behaviours[name]
                b.start = time.monotonic()
                members[name] = Member(
                    ctx.events,
                    ctx.bootstrap,
                    ctx.name,
                    name,
                    LAG_GROUPS[name][0],
                    [topic],
                    conf,
                    b.on_message,
                ).start()
            late = []
        if time.monotonic() >= next_send:
            for p in range(3):
                prod.send(topic, i, p, ctx.name)
                i += 1
            next_send += 1.0
        if time.monotonic() >= next_marks and "ok" in members:
            members["ok"].watermarks([(topic, p) for p in range(3)])
            next_marks += 3.0
        if "stop" in members:  # a paused member gets no records: tick it from here
            stop = members["stop"]
            stop.call(functools.partial(behaviours["stop"].tick, stop))
        prod.p.poll(0)
        time.sleep(0.05)
    prod.flush()
    phase(ctx, "producer stops")
    wait_until(ctx, "every record consumed", lambda: all_consumed(ctx), timeout=20)
    members["ok"].watermarks([(topic, p) for p in range(3)])
    members["ok"].call(lambda: behaviours["ok"].tick(members["ok"]))
    phase(ctx, "members leave (close)")
    for m in members.values():
        m.close()


def all_consumed(ctx: Ctx) -> bool:
    """Every record delivered so far has been consumed by some member (so every record a Fetch
    carried is in the manifest's ``consumed``)."""
    delivered, consumed = set(), set()
    for line in Path(ctx.events.path).read_text().splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("kind") != "truth":
            continue
        if e["event"] == "delivery" and e.get("offset") is not None:
            delivered.add((e["topic"], e["partition"], e["offset"]))
        elif e["event"] == "consumed":
            consumed.add((e["topic"], e["partition"], e["offset"]))
    return delivered <= consumed


def scenarios() -> list[Scenario]:
    kip848_mock = (
        ("group_consumer_session_timeout_ms", SESSION_MS),
        ("group_consumer_heartbeat_interval_ms", HEARTBEAT_MS),
    )
    flow = (
        "members c1, c2 and c3 join one after another, c2 leaves (close), c3 is killed (SIGKILL: "
        "nothing sent) and the coordinator expires it after the session timeout, c1 takes every "
        "partition and leaves; a producer writes between the phases"
    )

    def scn(name: str, topic: str, run: Callable[[Ctx], None], text: str, **kw: Any) -> Scenario:
        return Scenario(
            name,
            "librdkafka",
            "auto (ApiVersions)" + (", group.protocol=consumer" if kw.get("mock_settings") else ""),
            "none",
            (topic,),
            run,
            f"{text} The clients' own view: {name}.truth.json.",
            timeout=75.0,
            **kw,
        )

    return [
        scn(
            "group-lag",
            "grp-lag",
            scenario_lag,
            "Lag (classic groups of one member each, explicit synchronous commits): a producer "
            "writes one record to each of 3 partitions every second for 20 s (timestamps: the "
            "wall clock); g-lag-ok keeps up and commits every 1 s (Burrow OK); g-lag-slow joins "
            "after 4 s, takes 1.5 s per record and commits every 3 s (lag grows: WARN); "
            "g-lag-stop commits for 5 s, then pauses its partitions and never commits again "
            "(STOP); g-lag-rewind joins after 4 s, takes 0.75 s per record, commits every 2 s and "
            "5 s after joining seeks 5 records back and commits the lower offsets (REWIND).",
        ),
        scn(
            "group-joins",
            "grp-joins",
            scenario_joins,
            f"Consumer group, classic protocol, range assignor, session.timeout.ms {SESSION_MS}: {flow}.",
        ),
        scn(
            "group-cooperative",
            "grp-coop",
            scenario_cooperative,
            f"Consumer group, classic protocol, cooperative-sticky assignor (incremental "
            f"rebalances: assign/revoke callbacks with the partitions added or taken), "
            f"session.timeout.ms {SESSION_MS}: {flow}.",
        ),
        scn(
            "group-kip848",
            "grp-kip848",
            scenario_kip848,
            f"KIP-848 consumer group (group.protocol=consumer: ConsumerGroupHeartbeat), the mock's "
            f"group.consumer.session.timeout.ms {SESSION_MS} and heartbeat interval {HEARTBEAT_MS} "
            f"ms: {flow} (member epoch -1 on leave; the killed member is fenced).",
            mock_settings=kip848_mock,
        ),
        scn(
            "group-static",
            "grp-static",
            scenario_static,
            "KIP-848 consumer group with static members (group.instance.id static-1, static-2): "
            "s2 closes (leave heartbeat with member epoch -2, its assignment kept) and a new "
            "consumer with the same instance id rejoins within the session timeout; it gets the "
            "same partitions back and s1 sees no rebalance.",
            mock_settings=kip848_mock,
        ),
    ]


# the ground truth file


def build_truth(scn: Scenario, pcap_name: str, events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """``<scenario>.truth.json`` from the worker's events, or None when the scenario wrote none."""
    if not any(e["kind"] in TRUTH_KINDS for e in events):
        return None
    expect: dict[str, Any] = {}
    for e in events:
        if e["kind"] == "expect":
            expect.update({k: v for k, v in e.items() if k != "kind"})
    clients: dict[str, dict[str, Any]] = {}
    for e in events:
        if e["kind"] == "truth_client":
            clients[e["client"]] = {k: v for k, v in e.items() if k not in ("kind", "client")}
            clients[e["client"]]["member_ids"] = []
            clients[e["client"]]["events"] = []
    for e in sorted((e for e in events if e["kind"] == "truth"), key=lambda e: e["t"]):
        c = clients.setdefault(e["client"], {"role": None, "member_ids": [], "events": []})
        c["events"].append({k: v for k, v in e.items() if k not in ("kind", "client")})
        for mid in (e.get("member_id"), e.get("member_id_api")):
            if mid and mid not in c["member_ids"]:
                c["member_ids"].append(mid)
    return {
        "scenario": scn.name,
        "file": pcap_name,
        "clock": "t: time.time() in the client process (CLOCK_REALTIME, the clock of the pcap's timestamps)",
        "expect": expect,
        "phases": [{"t": e["t"], "text": e["text"]} for e in events if e["kind"] == "phase"],
        "clients": clients,
    }


def dump_truth(doc: dict[str, Any]) -> str:
    """JSON with one line per phase and per client event (readable, diffable, small)."""
    out = ["{"]
    keys = list(doc)
    for i, k in enumerate(keys):
        comma = "," if i < len(keys) - 1 else ""
        v = doc[k]
        if k == "phases":
            out.append(' "phases": [')
            out += [f"  {json.dumps(p)}" + ("," if j < len(v) - 1 else "") for j, p in enumerate(v)]
            out.append(f" ]{comma}")
        elif k == "clients":
            out.append(' "clients": {')
            names = list(v)
            for j, name in enumerate(names):
                c = v[name]
                head = {kk: vv for kk, vv in c.items() if kk != "events"}
                out.append(f"  {json.dumps(name)}: {{")
                for kk, vv in head.items():
                    out.append(f"   {json.dumps(kk)}: {json.dumps(vv)},")
                out.append('   "events": [')
                evs = c["events"]
                out += [f"    {json.dumps(e)}" + ("," if n < len(evs) - 1 else "") for n, e in enumerate(evs)]
                out.append("   ]")
                out.append("  }" + ("," if j < len(names) - 1 else ""))
            out.append(f" }}{comma}")
        else:
            out.append(f" {json.dumps(k)}: {json.dumps(v)}{comma}")
    out.append("}")
    return "\n".join(out) + "\n"
