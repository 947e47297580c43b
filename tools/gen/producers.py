"""Producer scenarios (issue 28) and their ground truth: librdkafka producers (confluent-kafka) whose
Produce answers the mock cluster fails or delays on purpose (errors injected through the mock's
control socket, mock.py), an idempotent and a plain producer, a transactional producer with
commits, aborts, consume-transform-produce and a hanging transaction, and several producers with
different linger.ms, acks and codecs read by a separate consumer group.

Every client writes what it saw (delivery reports, statistics, transaction calls, records
consumed), with ``time.time()`` (the clock tcpdump stamps packets with), to the worker's event log
as ``truth`` events, and so does the injector (client ``mock``, role ``broker``: what was injected,
when); groups.build_truth turns them into ``captures/<scenario>.truth.json`` (the format:
captures/README.md, "Producer ground truth").
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from .core import FILLER, Ctx, Scenario, enc
from .groups import Truth, now, phase
from .mock import mock_control

STATS_MS = 250
PRODUCE = 0  # ApiKey.PRODUCE
# producer statistics kept (librdkafka STATISTICS.md): top level, per broker, the eos block
TOP_FIELDS = ("txmsgs", "txmsg_bytes", "msg_cnt", "tx", "txretries_total")
BROKER_FIELDS = ("tx", "txerrs", "txretries", "req_timeouts", "rxerrs", "outbuf_msg_cnt", "waitresp_msg_cnt")
EOS_FIELDS = ("idemp_state", "producer_id", "producer_epoch", "epoch_cnt", "txn_state")


def error_name(code: int) -> str:
    from analyzer.dissect.constants import ErrorCode

    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


class Injector:
    """Error injection on the mock cluster (its serving process, through mock.mock_control); each
    call is a truth event of client ``mock``."""

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        self.truth = Truth(ctx.events, "mock")
        ctx.events.emit(
            "truth_client",
            client="mock",
            role="broker",
            group=None,
            topics=[],
            config={"what": "librdkafka mock cluster, 3 brokers; rd_kafka_mock_* through its control socket"},
        )

    def errors(self, errors: list[int], api: int = PRODUCE, why: str = "") -> None:
        """The cluster's next ``len(errors)`` answers to ``api`` (any broker, any client) carry
        these errors, one each (every partition of the answer); nothing is written."""
        start = now()  # every earlier request was sent (and answered) before this
        mock_control(self.ctx.bootstrap, "push_request_errors", api=api, errors=errors)
        self.truth(
            "inject",
            start=start,
            fn="rd_kafka_mock_push_request_errors",
            api=api,
            broker=None,
            errors=[[e, error_name(e), 0] for e in errors],
            why=why,
        )

    def broker_errors(
        self, broker: int, errors: list[tuple[int, int]], api: int = PRODUCE, why: str = ""
    ) -> None:
        """The next answers of ``broker`` to ``api``: (error, delay ms) each; error 0 with a delay is
        a good answer (the request is processed, so a Produce is written) sent late."""
        start = now()  # every earlier request was sent (and answered) before this
        mock_control(
            self.ctx.bootstrap,
            "broker_push_request_error_rtts",
            broker=broker,
            api=api,
            errors=[list(e) for e in errors],
        )
        self.truth(
            "inject",
            start=start,
            fn="rd_kafka_mock_broker_push_request_error_rtts",
            api=api,
            broker=broker,
            errors=[[e, error_name(e), ms] for e, ms in errors],
            why=why,
        )

    def rtt(self, broker: int, ms: int, why: str = "") -> None:
        start = now()  # every earlier request was sent (and answered) before this
        mock_control(self.ctx.bootstrap, "broker_set_rtt", broker=broker, ms=ms)
        self.truth(
            "inject",
            start=start,
            fn="rd_kafka_mock_broker_set_rtt",
            api=None,
            broker=broker,
            rtt_ms=ms,
            why=why,
        )


class Prod:
    """A producer whose delivery reports, statistics and transaction calls go to the truth, and
    whose records (delivered or failed: both were on the wire) go to the manifest's ``produced``."""

    def __init__(self, ctx: Ctx, name: str, conf: dict[str, Any]) -> None:
        from confluent_kafka import Producer

        self.ctx, self.name = ctx, name
        self.truth = Truth(ctx.events, name)
        settings = {
            "client.id": f"gen-{ctx.name}-{name}",
            "statistics.interval.ms": STATS_MS,
            **conf,
        }
        self.settings = settings
        ctx.events.emit("truth_client", client=name, role="producer", group=None, topics=[], config=settings)
        self._last_stats: Any = None
        self.txmsgs = 0
        self.p = Producer(
            {
                "bootstrap.servers": ctx.bootstrap,
                **settings,
                "stats_cb": self._on_stats,
                "error_cb": lambda err: self.truth("error", error=str(err), fatal=err.fatal()),
            }
        )
        self.truth("created", pid=os.getpid())
        self.sent = 0
        self.delivered: list[dict[str, Any]] = []
        self.failed: list[dict[str, Any]] = []

    def _on_stats(self, raw: str) -> None:
        s = json.loads(raw)
        self.txmsgs = s.get("txmsgs") or 0
        brokers = {}
        for b in (s.get("brokers") or {}).values():
            if b.get("nodeid", -1) >= 0:
                brokers[str(b["nodeid"])] = {k: b.get(k) for k in BROKER_FIELDS}
        top = {k: s.get(k) for k in TOP_FIELDS if k in s}
        top["txretries_total"] = sum(b["txretries"] or 0 for b in brokers.values())
        snap = {**top, "brokers": brokers, "eos": {k: (s.get("eos") or {}).get(k) for k in EOS_FIELDS}}
        # outbuf/waitresp change all the time: compare without them
        cmp = json.dumps(
            {**snap, "brokers": {k: {f: v[f] for f in BROKER_FIELDS[:5]} for k, v in brokers.items()}}
        )
        if cmp != self._last_stats:
            self._last_stats = cmp
            self.truth("stats", stats_time=s.get("time"), **snap)

    def send(
        self,
        topic: str,
        key: str,
        partition: int | None = None,
        value: str | None = None,
        timestamp: int | None = None,
        txn: str | None = None,
    ) -> None:
        value = value if value is not None else f"v-{key}-{FILLER}"
        headers = [("h1", f"h1-{key}")]
        produce_t = now()
        if timestamp is None:
            timestamp = int(produce_t * 1000)  # CreateTime: the wall clock at produce()

        def delivered(err: Any, m: Any) -> None:
            kind, ts = m.timestamp()  # the mock answers LogAppendTime 1234: kept apart
            dr_offset = m.offset()
            # a failed record has no offset (librdkafka reports the answer's base offset -1 + index)
            off = dr_offset if err is None and dr_offset is not None and dr_offset >= 0 else None
            rec = {
                "topic": m.topic(),
                "partition": m.partition(),
                "offset": off,
                "dr_offset": dr_offset,
                "error": None if err is None else err.name(),
                "error_text": None if err is None else err.str(),
                "key": key,
                "timestamp": timestamp,
                "dr_timestamp": [kind, ts],
                "produce_t": produce_t,
                "latency_ms": round((m.latency() or 0) * 1000, 3),
            }
            if txn:
                rec["txn"] = txn
            self.truth("delivery", **rec)
            (self.failed if err is not None else self.delivered).append(rec)
            extra = {"producer": self.name, **({"transaction": txn} if txn else {})}
            if err is not None:
                extra["error"] = err.name()
            self.ctx.events.record(
                "produced", m.topic(), m.partition(), off, key, value, headers, timestamp, **extra
            )

        kw: dict[str, Any] = {"timestamp": timestamp}
        if partition is not None:
            kw["partition"] = partition
        self.p.produce(
            topic,
            value=enc(value),
            key=enc(key),
            headers=[(k, enc(v)) for k, v in headers],
            on_delivery=delivered,
            **kw,
        )
        self.sent += 1
        self.p.poll(0)

    def flush(self, timeout: float = 15.0) -> None:
        left = self.p.flush(min(timeout, self.ctx.left()))
        if left:
            self.ctx.events.note(f"{self.name}: {left} message(s) not delivered at flush timeout")

    def settle(self) -> None:
        """Serve callbacks for two statistics intervals: the last snapshot after the last answer."""
        end = time.monotonic() + 2.5 * STATS_MS / 1000
        while time.monotonic() < end:
            self.p.poll(0.05)

    # transactions: each call and its outcome
    def txn_call(self, what: str, fn: Callable[[], Any], **data: Any) -> bool:
        from confluent_kafka import KafkaException

        start = now()
        try:
            fn()
        except KafkaException as exc:
            e = exc.args[0]
            self.truth(
                what,
                start=start,
                ok=False,
                error=e.name(),
                retriable=e.retriable(),
                abortable=e.txn_requires_abort(),
                **data,
            )
            return False
        self.truth(what, start=start, ok=True, error=None, **data)
        return True

    def leader_of(self, topic: str, partition: int) -> int:
        md = self.p.list_topics(topic, timeout=5).topics[topic].partitions
        return int(md[partition].leader)


class Reader:
    """A consumer (assign() from the beginning, or a group member with subscribe()) whose records
    go to the truth with the time the application got them, and to the manifest's ``consumed``."""

    def __init__(
        self, ctx: Ctx, name: str, topics: list[str], conf: dict[str, Any], group: str | None = None
    ) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        self.ctx, self.name, self.topics = ctx, name, topics
        self.truth = Truth(ctx.events, name)
        settings = {
            "client.id": f"gen-{ctx.name}-{name}",
            "group.id": group or f"unused-{ctx.name}-{name}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            **conf,
        }
        ctx.events.emit(
            "truth_client", client=name, role="consumer", group=group, topics=topics, config=settings
        )
        self.c = Consumer({"bootstrap.servers": ctx.bootstrap, **settings})
        self.truth("created", pid=os.getpid())
        self.got: list[tuple[str, int, int, str | None]] = []
        if group:
            self.truth("subscribe", topics=topics)
            self.c.subscribe(
                topics,
                on_assign=lambda c, ps: self.truth("assign", partitions=[[p.topic, p.partition] for p in ps]),
            )
        else:
            parts = [TopicPartition(t, p, OFFSET_BEGINNING) for t in topics for p in range(3)]
            self.truth("assign", partitions=[[t, p] for t in topics for p in range(3)])
            self.c.assign(parts)

    def poll(self, timeout: float = 0.1) -> Any:
        m = self.c.poll(timeout)
        if m is None:
            return None
        if m.error():
            self.truth("error", error=str(m.error()))
            return None
        kind, ts = m.timestamp()
        ts = ts if kind != 0 else None
        topic, part, off = str(m.topic()), int(m.partition() or 0), int(m.offset() or 0)
        key = m.key().decode() if m.key() is not None else None
        self.truth("consumed", topic=topic, partition=part, offset=off, key=key, timestamp=ts)
        self.ctx.events.record(
            "consumed", topic, part, off, m.key(), m.value(), m.headers() or [], ts, consumer=self.name
        )
        self.got.append((topic, part, off, key))
        return m

    def read_for(self, seconds: float, until: Callable[[], bool] | None = None) -> None:
        end = time.monotonic() + min(seconds, max(0.0, self.ctx.left() - 5))
        while time.monotonic() < end:
            self.poll(0.1)
            if until is not None and until():
                return

    def close(self) -> None:
        self.truth("close_begin")
        self.c.close()
        self.truth("closed")


def observed(p: Prod, readers: list[Reader]) -> dict[str, Any]:
    """What the clients saw, summed (the test recomputes it from the events)."""
    got = Counter(k for r in readers for *_, k in r.got)
    return {
        "records": p.sent,
        "delivered": len(p.delivered),
        "failed": len(p.failed),
        "txmsgs": p.txmsgs,
        "records_sent_again": p.txmsgs - p.sent,
        "keys_read_twice": sorted(k for k, v in got.items() if v > 1 and k is not None),
    }


# the scenarios


def scenario_idempotent(ctx: Ctx) -> None:
    """An idempotent producer (enable.idempotence=true) on partition 0 of ``pidem``: Produce
    answers with retriable errors (NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT,
    NOT_ENOUGH_REPLICAS), an error answer delayed past the request timeout (nothing written;
    the client times out and resends), and a good answer delayed past the request timeout (the
    batch is written; the client resends it)."""
    topic = "pidem"
    inj = Injector(ctx)
    p = Prod(
        ctx,
        "idempotent",
        {
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 20,
            "socket.timeout.ms": 1500,  # a Produce request times out after this (message timeout larger)
            "message.timeout.ms": 30000,
            "retry.backoff.ms": 100,
        },
    )
    c = Reader(ctx, "reader", [topic], {"isolation.level": "read_uncommitted"})
    n = 0

    def batch(count: int, part: int = 0) -> None:
        nonlocal n
        for _ in range(count):
            p.send(topic, f"k-{ctx.name}-{n}", partition=part)
            n += 1
        p.flush()

    phase(ctx, "warm up: one batch per partition (InitProducerId first)")
    for part in range(3):
        batch(2, part)
    leader = p.leader_of(topic, 0)
    phase(ctx, "retriable errors: the next 3 Produce answers fail")
    inj.errors([6, 7, 19], why="retriable errors: the batch is sent again with the same sequence")
    batch(3)
    phase(ctx, "an error answer delayed past the request timeout (nothing written)")
    inj.broker_errors(
        leader,
        [(19, 3000)],
        why="NOT_ENOUGH_REPLICAS answered after 3 s: the client times out at 1.5 s and resends",
    )
    batch(3)
    time.sleep(2.0)  # the late answer goes to a closed connection (or is dropped)
    phase(ctx, "a good answer delayed past the request timeout (the batch is written)")
    inj.broker_errors(
        leader, [(0, 3000)], why="written, answered after 3 s: the client times out at 1.5 s and resends"
    )
    batch(3)
    time.sleep(2.0)
    phase(ctx, "no errors")
    batch(3)
    p.settle()
    c.read_for(6.0, until=lambda: len(c.got) >= n + 3)
    c.close()
    ctx.events.emit(
        "expect",
        topic=topic,
        producer="idempotent",
        idempotent=True,
        records=n,
        retries=5,  # batches sent again: 3 error answers, 2 timeouts
        retried_records=15,  # records sent again (txmsgs minus records)
        timed_out_requests=2,
        failed_records=0,
        lost_records=0,
        duplicates_written=3,  # the mock's doing (mock_limitation); a real broker: 0
        duplicates_written_real_broker=0,
        injected_errors=["NOT_LEADER_OR_FOLLOWER", "REQUEST_TIMED_OUT", "NOT_ENOUGH_REPLICAS"],
        observed=observed(p, [c]),
        mock_limitation=(
            "the mock checks producer id, epoch and sequence only for Produce requests with a "
            "transactional id: the idempotent producer's resend of the batch the mock wrote (its "
            "answer delayed past the request timeout) is written again, so the log holds that "
            "batch twice (a real broker answers the resend with the original base offset)"
        ),
    )


def scenario_plain(ctx: Ctx) -> None:
    """A plain producer (enable.idempotence=false, retries=1, max.in.flight 5) on partition 0 of
    ``pplain``: a good answer delayed past the request timeout (the batch is written, the client
    resends it: written twice), errors that exhaust the one retry (the records fail), and one
    retriable error the retry gets past."""
    topic = "pplain"
    inj = Injector(ctx)
    p = Prod(
        ctx,
        "plain",
        {
            "enable.idempotence": False,
            "acks": "all",
            "retries": 1,
            "max.in.flight.requests.per.connection": 5,
            "linger.ms": 20,
            "socket.timeout.ms": 1500,
            "message.timeout.ms": 30000,
            "retry.backoff.ms": 100,
        },
    )
    c = Reader(ctx, "reader", [topic], {"isolation.level": "read_uncommitted"})
    n = 0

    def batch(count: int, part: int = 0) -> None:
        nonlocal n
        for _ in range(count):
            p.send(topic, f"k-{ctx.name}-{n}", partition=part)
            n += 1
        p.flush()

    phase(ctx, "warm up: one batch per partition")
    for part in range(3):
        batch(2, part)
    leader = p.leader_of(topic, 0)
    phase(ctx, "a good answer delayed past the request timeout (the batch is written twice)")
    inj.broker_errors(
        leader, [(0, 3000)], why="written, answered after 3 s: the client times out at 1.5 s and resends"
    )
    batch(3)
    time.sleep(2.0)
    phase(ctx, "errors that exhaust the retry (the records fail)")
    # broker-level (the leader's): once a broker has an error stack for an API, the mock never
    # falls back to the cluster's (push_request_errors) for it
    inj.broker_errors(leader, [(19, 0), (19, 0)], why="NOT_ENOUGH_REPLICAS twice: retries=1 gives up")
    batch(3)
    phase(ctx, "one retriable error, then the retry is written")
    inj.broker_errors(leader, [(7, 0)], why="REQUEST_TIMED_OUT once: the retry is written")
    batch(3)
    phase(ctx, "no errors")
    batch(3)
    p.settle()
    c.read_for(6.0, until=lambda: len(c.got) >= n)
    c.close()
    ctx.events.emit(
        "expect",
        topic=topic,
        producer="plain",
        idempotent=False,
        records=n,
        retries=3,  # batches sent again: 1 timeout, 2 error answers
        retried_records=9,
        timed_out_requests=1,
        failed_records=3,  # NOT_ENOUGH_REPLICAS twice: delivery reports with the error
        lost_records=3,  # the failed records were never written (the application does not resend)
        duplicates_written=3,  # the timed-out batch: two base offsets for one batch
        injected_errors=["NOT_ENOUGH_REPLICAS", "REQUEST_TIMED_OUT"],
        observed=observed(p, [c]),
    )


TXN_IN, TXN_OUT = "ptx-in", "ptx-out"
TXN_TIMEOUT_MS = 10000
HANG_TIMEOUT_MS = 2000


def scenario_txn(ctx: Ctx) -> None:
    """Consume-transform-produce: a source writes 15 records to ``ptx-in``; a processor (group
    g-ptx, read_committed) reads 3 at a time and a transactional producer writes each as a
    record to ``ptx-out`` and commits the consumer's positions in the transaction
    (send_offsets_to_transaction) in rounds until every input is committed (6 here), the second
    aborted (the processor seeks back and a later round does it again), the fourth with a
    Produce answer delayed past the request timeout (the resend is answered by the mock's
    duplicate detection). Then a second transactional
    producer (transaction.timeout.ms 2000) writes 2 records and never ends its transaction;
    a read_committed and a read_uncommitted reader read ``ptx-out`` and the capture ends more
    than the transaction timeout later, without EndTxn."""
    from confluent_kafka import TopicPartition

    inj = Injector(ctx)
    source = Prod(ctx, "source", {"enable.idempotence": False, "acks": "all", "linger.ms": 5})
    for i in range(15):
        source.send(TXN_IN, f"k-{ctx.name}-in-{i}", partition=i % 3)
    source.flush()
    source.settle()
    group = "g-ptx"
    proc = Reader(
        ctx,
        "processor",
        [TXN_IN],
        {"isolation.level": "read_committed", "fetch.wait.max.ms": 500},
        group=group,
    )
    tx = Prod(
        ctx,
        "transactional",
        {
            "transactional.id": f"txn-{ctx.name}",
            "transaction.timeout.ms": TXN_TIMEOUT_MS,
            "linger.ms": 10,
            "socket.timeout.ms": 1500,
            "message.timeout.ms": 9000,
        },
    )
    tx.txn_call("init_transactions", lambda: tx.p.init_transactions(15))
    # round 2 is aborted (the processor seeks back: its records are done again), round 4 has a
    # Produce answer delayed past the request timeout; rounds go on until every input is committed
    rounds: list[tuple[str, str | None]] = []
    done: set[str] = set()
    r = 0
    while len(done) < 15 and r < 10 and ctx.left() > 20:
        r += 1
        outcome, extra = ("abort" if r == 2 else "commit"), ("delay" if r == 4 else None)
        phase(
            ctx,
            f"round {r}: {outcome}"
            + (" (a Produce answer delayed past the request timeout)" if extra else ""),
        )
        msgs = []
        end = time.monotonic() + 10
        while len(msgs) < 3 and time.monotonic() < end:
            m = proc.poll(0.1)
            if m is not None:
                msgs.append(m)
        if not msgs:
            ctx.events.note(f"round {r}: nothing to process")
            continue
        before = {(m.topic(), m.partition()): m.offset() for m in reversed(msgs)}  # first per partition
        tx.txn_call("begin_transaction", tx.p.begin_transaction, round=r)
        if extra == "delay":
            leader = tx.leader_of(TXN_OUT, msgs[0].partition())
            inj.broker_errors(
                leader,
                [(0, 3000)],
                why="written, answered after 3 s: the transactional producer times out at 1.5 s and "
                "resends; the mock's sequence check answers the resend as a duplicate",
            )
        for m in msgs:
            key = m.key().decode()
            out = key.replace("-in-", "-out-")
            # the value names the round: an aborted record done again is another record
            tx.send(
                TXN_OUT, out, partition=m.partition(), value=f"v-{out}-round-{r}-{FILLER}", txn=f"round {r}"
            )
        positions = [
            TopicPartition(t, p, o)
            for (t, p), o in sorted({(m.topic(), m.partition()): m.offset() + 1 for m in msgs}.items())
        ]
        offsets = [[x.topic, x.partition, x.offset] for x in positions]
        tx.txn_call(
            "send_offsets_to_transaction",
            lambda positions=positions: tx.p.send_offsets_to_transaction(
                positions, proc.c.consumer_group_metadata(), 15
            ),
            round=r,
            group=group,
            offsets=offsets,
        )
        rounds.append((outcome, extra))
        if outcome == "commit":
            if tx.txn_call("commit_transaction", lambda: tx.p.commit_transaction(20), round=r):
                done |= {m.key().decode() for m in msgs}
        else:
            tx.p.flush(10)  # the records reach the log before the abort marker
            tx.txn_call("abort_transaction", lambda: tx.p.abort_transaction(15), round=r)
            for (t, p), o in sorted(before.items()):
                proc.c.seek(TopicPartition(t, p, o))
            proc.truth("rewind", offsets=[[t, p, o] for (t, p), o in sorted(before.items())])
    tx.settle()
    phase(ctx, "a transaction left hanging (no EndTxn before the capture ends)")
    hang = Prod(
        ctx,
        "hanging",
        {
            "transactional.id": f"txn-{ctx.name}-hanging",
            "transaction.timeout.ms": HANG_TIMEOUT_MS,
            "linger.ms": 10,
        },
    )
    hang.txn_call("init_transactions", lambda: hang.p.init_transactions(15))
    hang.txn_call("begin_transaction", hang.p.begin_transaction, round="hanging")
    for i in range(2):
        hang.send(TXN_OUT, f"k-{ctx.name}-hang-{i}", partition=i, txn="hanging")
    hang.flush()
    hang_start = now()
    proc.close()
    slow = {"fetch.wait.max.ms": 500}  # fewer empty fetches: a smaller capture
    rc = Reader(ctx, "committed-reader", [TXN_OUT], {"isolation.level": "read_committed", **slow})
    ru = Reader(ctx, "uncommitted-reader", [TXN_OUT], {"isolation.level": "read_uncommitted", **slow})
    end = time.monotonic() + HANG_TIMEOUT_MS / 1000 + 2.0
    while time.monotonic() < end:
        rc.poll(0.05)
        ru.poll(0.05)
        hang.p.poll(0)
    hang.settle()
    rc.close()
    ru.close()
    committed = [d for d in tx.delivered if d.get("txn") != "round 2"]
    ctx.events.emit(
        "expect",
        input_topic=TXN_IN,
        output_topic=TXN_OUT,
        group=group,
        transactional_ids={"transactional": f"txn-{ctx.name}", "hanging": f"txn-{ctx.name}-hanging"},
        transaction_timeout_ms={"transactional": TXN_TIMEOUT_MS, "hanging": HANG_TIMEOUT_MS},
        transactions=[
            {"producer": "transactional", "round": r, "outcome": o, "delayed_answer": x is not None}
            for r, (o, x) in enumerate(rounds, 1)
        ]
        + [{"producer": "hanging", "round": "hanging", "outcome": "hanging", "records": 2}],
        outcomes={
            "commit": sum(o == "commit" for o, _ in rounds),
            "abort": sum(o == "abort" for o, _ in rounds),
            "hanging": 1,
        },
        committed_records=len(committed),
        aborted_records=sum(1 for d in tx.delivered if d.get("txn") == "round 2"),
        hanging_records=2,
        input_records=15,
        inputs_committed=len(done),
        duplicates_written=0,
        failed_records=0,
        hanging_since=hang_start,
        observed=observed(tx, [rc]),
        mock_limitation=(
            "the mock (librdkafka 2.16.0) answers Fetch with last_stable_offset = high watermark "
            "and no aborted transactions, so the read_committed reader gets the aborted and the "
            "hanging records too; it answers the resend of the delayed batch (round 4) as a "
            "duplicate with base offset -1 and no error (a real broker answers the original base "
            "offset), so that batch's delivery reports carry offsets -1 (None) and 0; it never "
            "aborts a transaction after transaction.timeout.ms"
        ),
    )
    ctx.events.note("the hanging producer's process exits without EndTxn (os._exit)")
    ctx.events.close()
    os._exit(0)  # no EndTxn for the hanging transaction: librdkafka's teardown never runs


MIX_TOPIC = "pmix"
MIX_PRODUCERS = {  # name -> settings
    "fast-gzip": {"linger.ms": 0, "acks": "1", "compression.type": "gzip"},
    "batch-snappy": {"linger.ms": 100, "acks": "all", "compression.type": "snappy"},
    "fire-lz4": {"linger.ms": 20, "acks": "0", "compression.type": "lz4"},
    "slow-zstd": {"linger.ms": 500, "acks": "all", "compression.type": "zstd"},
}
MIX_RUN_S = 2.5
MIX_EVERY_S = 0.1


def scenario_mix(ctx: Ctx) -> None:
    """Four producers with different linger.ms, acks and codecs write to ``pmix`` (each one
    record every 100 ms for 2.5 s, partitions in turn), while a consumer group (g-pmix, one
    member) reads everything as it arrives: end-to-end latency from the produce() call or the
    CreateTime to the time the consumer got the record."""
    import threading

    reader = Reader(ctx, "group-reader", [MIX_TOPIC], {"fetch.wait.max.ms": 50}, group="g-pmix")
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            reader.poll(0.05)

    th = threading.Thread(target=loop, name="group-reader", daemon=True)
    th.start()
    end = time.monotonic() + 10
    while time.monotonic() < end and not reader_assigned(ctx):
        time.sleep(0.1)
    prods = {
        name: Prod(ctx, name, {"enable.idempotence": False, **conf}) for name, conf in MIX_PRODUCERS.items()
    }
    phase(ctx, "producers start")
    start = time.monotonic()
    i = 0
    while time.monotonic() - start < MIX_RUN_S:
        for name, p in prods.items():
            p.send(MIX_TOPIC, f"k-{ctx.name}-{name}-{i}", partition=i % 3)
        i += 1
        time.sleep(MIX_EVERY_S)
        for p in prods.values():
            p.p.poll(0)
    for p in prods.values():
        p.flush()
    phase(ctx, "producers flushed")
    total = sum(p.sent for p in prods.values())
    end = time.monotonic() + 8
    while len(reader.got) < total and time.monotonic() < end:
        time.sleep(0.05)
    for p in prods.values():
        p.settle()
    stop.set()
    th.join()
    reader.c.commit(asynchronous=False)
    reader.close()
    ctx.events.emit(
        "expect",
        topic=MIX_TOPIC,
        group="g-pmix",
        producers={name: {k: str(v) for k, v in conf.items()} for name, conf in MIX_PRODUCERS.items()},
        records_per_producer=i,
        records=total,
        failed_records=0,
        duplicates_written=0,
        retried_records=0,
        acks0_producer="fire-lz4",
        latency_rule=(
            "end to end = the consumer's consumed t minus the producer's produce_t (or minus the "
            "CreateTime timestamp, ms); the wire: the Fetch answer carrying the record minus the "
            "Produce request carrying it"
        ),
        observed={name: observed(p, [reader]) for name, p in prods.items()},
    )


def reader_assigned(ctx: Ctx) -> bool:
    for line in ctx.events.path.read_text().splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("kind") == "truth" and e.get("client") == "group-reader" and e.get("event") == "assign":
            return True
    return False


def scenarios() -> list[Scenario]:
    def scn(
        name: str, topics: tuple[str, ...], run: Callable[[Ctx], None], codec: str, text: str, **kw: Any
    ) -> Scenario:
        return Scenario(
            name,
            "librdkafka",
            "auto (ApiVersions)",
            codec,
            topics,
            run,
            f"{text} The clients' own view: {name}.truth.json.",
            timeout=60.0,
            **kw,
        )

    return [
        scn(
            "producer-idempotent",
            ("pidem",),
            scenario_idempotent,
            "none",
            "Idempotent producer (enable.idempotence=true, socket.timeout.ms 1500): Produce answers "
            "with injected retriable errors (NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, "
            "NOT_ENOUGH_REPLICAS), an error answer and a good answer each delayed 3 s (past the "
            "request timeout: the client resends the batch with the same sequence); an assign() "
            "consumer reads the topic back.",
        ),
        scn(
            "producer-plain",
            ("pplain",),
            scenario_plain,
            "none",
            "Plain producer (enable.idempotence=false, retries=1, max.in.flight 5, socket.timeout.ms "
            "1500): a good Produce answer delayed 3 s (the client times out and resends: the batch "
            "is written twice), NOT_ENOUGH_REPLICAS twice (the one retry exhausted: 3 records "
            "fail), REQUEST_TIMED_OUT once (the retry is written); an assign() consumer reads the "
            "topic back.",
        ),
        scn(
            "producer-txn",
            (TXN_IN, TXN_OUT),
            scenario_txn,
            "none",
            "Transactions: consume-transform-produce (a read_committed group member reads ptx-in, "
            "a transactional producer writes ptx-out and send_offsets_to_transaction) in "
            "transactions until every input is committed (6: 5 committed, 1 aborted and redone), "
            "one with a Produce answer delayed past the request timeout; then a second "
            "transactional producer (transaction.timeout.ms 2000) leaves its transaction open "
            "(no EndTxn) while a read_committed and a read_uncommitted reader read ptx-out.",
        ),
        scn(
            "producer-mix",
            (MIX_TOPIC,),
            scenario_mix,
            "gzip, snappy, lz4, zstd",
            "Four producers, one record every 100 ms each for 2.5 s: linger.ms 0 acks=1 gzip, "
            "linger.ms 100 acks=all snappy, linger.ms 20 acks=0 lz4, linger.ms 500 acks=all zstd; a "
            "consumer group (g-pmix) reads everything as it arrives (end-to-end latency).",
            notes=(
                "The mock cluster answers acks=0 Produce requests too (a real broker sends no response).",
            ),
        ),
    ]
