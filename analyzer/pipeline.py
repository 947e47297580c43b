"""The only place that chains the stages: packets -> segments -> streams -> frames -> exchanges.

:class:`Pipeline` is sans-IO (``feed(packet)`` / ``finish()`` / ``expire(now)`` return events).
:class:`Analysis` is the one driver every front end uses (read, stats, export, live, check, the
TUI and Spark): it runs a pipeline over a source (a capture file, stdin, a file object, a live
capture), with progress callbacks and cancellation, exposes what the front ends show (packets,
connections, capture issues, knowledge) and owns the one outcome policy (:class:`Exit`).

A connection whose first bytes are a TLS record goes through its
:class:`~analyzer.tls.layer.TlsConnection` first: the plaintext StreamData and Gap events it
returns (decrypted with the :class:`~analyzer.tls.keylog.KeyLog`: ``--tls-keylog`` and the
capture's Decryption Secrets Blocks) are framed and paired like clear text.

Events (:data:`analyzer.events.Event`), in capture order:

* :class:`~analyzer.model.Exchange`: a request and its response (either may be missing);
* :class:`~analyzer.events.ConnIssue`: a connection-level issue (gap, resynchronisation, ...);
* :class:`~analyzer.events.ConnectionEnd`: a connection finished (with its ConnInfo);
* :class:`~analyzer.events.CaptureIssue`: damage of the source itself, at the end;
* :class:`~analyzer.events.CaptureStats`: a live source's kernel drop counters, when they grow.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from enum import IntEnum
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from analyzer.dissect.codecs import DEFAULT_LIMITS
from analyzer.dissect.framing import KafkaConnection
from analyzer.dissect.message import DEFAULT_OPTIONS, Options
from analyzer.events import (
    CaptureIssue,
    CaptureStats,
    ConnClose,
    ConnectionEnd,
    ConnIssue,
    ConnOpen,
    Event,
    Gap,
    Packet,
    Skip,
    StreamData,
    StreamEvent,
)
from analyzer.issues import (
    CAPTURE_NO_TCP,
    CAPTURE_PACKETS_DROPPED,
    CAPTURE_SNAPLEN,
    CAPTURE_SOURCE_FAILED,
    CAPTURE_UNKNOWN_FORMAT,
    CAPTURE_UNREADABLE,
    STREAM_EVICTED,
)
from analyzer.model import ConnInfo, Endpoint, Exchange, Issue, Severity
from analyzer.plain import field, record, replace
from analyzer.reassembly.packet import decode_tcp, skip_text
from analyzer.reassembly.tcp import Reassembler
from analyzer.session.knowledge import Knowledge
from analyzer.session.pairing import ConnectionPairer
from analyzer.tls.detect import looks_like_tls
from analyzer.tls.keylog import KeyLog

if TYPE_CHECKING:
    from analyzer.tls.layer import TlsConnection

# Ports brokers usually listen on: only a tie-breaker when content cannot tell who is the client
KAFKA_PORTS = frozenset((9092, 9093, 9094, 9095, 9096, 19092, 29092, 39092))


class _Conn:
    __slots__ = ("info", "framer", "pairer", "tls", "checked")

    def __init__(self, info: ConnInfo, framer: KafkaConnection, pairer: ConnectionPairer):
        self.info = info
        self.framer = framer
        self.pairer = pairer
        self.tls: TlsConnection | None = None  # the TLS layer, when the connection is TLS
        self.checked = False  # its first bytes were looked at for TLS


class Pipeline:
    def __init__(
        self,
        opts: Options = DEFAULT_OPTIONS,
        ports: Iterable[int] = (),
        max_buffer: int = 4 << 20,
        idle_timeout: float | None = None,
        keylog: KeyLog | None = None,
    ):
        self.opts = opts
        self.keylog = keylog if keylog is not None else KeyLog()  # TLS secrets (may grow)
        self.tls_connections = 0  # connections found to be TLS
        self.tls_decrypted = 0  # ... of which some records were decrypted (counted at their end)
        self.ports = frozenset(ports)
        limits = opts.limits or DEFAULT_LIMITS
        self.reasm = Reassembler(
            max_buffer=max_buffer, idle_timeout=idle_timeout, max_connections=limits.max_connections
        )
        self.conns: dict[int, _Conn] = {}
        self.knowledge = Knowledge()
        self.packets = 0
        self.skipped: Counter[str] = Counter()  # why packets were not TCP segments we could use
        self.last_ts = 0.0
        self.first_ts: float | None = None

    @property
    def connections(self) -> int:
        """TCP connections seen so far."""
        return self.reasm.connections

    def feed(self, index: int, ts: float, linktype: int, data) -> list[Event]:
        self.packets += 1
        if self.first_ts is None:
            self.first_ts = ts
        self.last_ts = ts
        seg = decode_tcp(linktype, data)
        if type(seg) is not tuple:  # a Skip
            self._skip(seg, linktype)  # type: ignore[arg-type]  # type() is exact: mypy narrows only isinstance, slower per packet
            return []
        events = self.reasm.feed(ts, index, seg)
        return self._events(events) if events else []

    def feed_segment(self, index: int, ts: float, seg) -> list[Event]:
        """One decoded TCP segment (:func:`~analyzer.reassembly.packet.decode_tcp`) of packet
        ``index``: for a driver that counts the packets itself and gives this pipeline only the
        flows it analyses (``export -j``: each process takes some of the connections)."""
        events = self.reasm.feed(ts, index, seg)
        return self._events(events) if events else []

    def _skip(self, why: Skip, linktype: int) -> None:
        """Count a packet that is not a usable TCP segment under its reason's text."""
        self.skipped[skip_text(why, linktype)] += 1

    def finish(self) -> list[Event]:
        """Close every connection still open: the last exchanges and connection ends."""
        return self._events(self.reasm.flush())

    def expire(self, now: float) -> list[Event]:
        """Close connections idle longer than ``idle_timeout`` (long live runs)."""
        return self._events(self.reasm.expire(now))

    def _events(self, events: list[StreamEvent]) -> list[Event]:  # noqa: C901 - hot path: one dispatch loop per event
        out: list[Event] = []
        conns = self.conns
        for ev in events:
            if type(ev) is StreamData or type(ev) is Gap:  # the common case first
                c = conns[ev.conn]
                info = c.info
                info.ts_last = ev.ts
                if type(ev) is StreamData:
                    info.bytes[ev.direction] += len(ev.data)
                    if not c.checked:
                        c.checked = True
                        if looks_like_tls(ev.data):
                            self._start_tls(c)
                else:
                    info.gaps[ev.direction] += 1
                if c.tls is not None:
                    self._tls(c, ev, out)
                    continue
                frames, issues = c.framer.feed(ev)
                for issue in issues:
                    out.append(ConnIssue(info, ev.direction, issue, ev.ts))
                if frames:
                    if info.client_direction is None:
                        info.client_direction = c.framer.client
                    for f in frames:
                        info.frames[f.direction] += 1
                        out.extend(c.pairer.feed(f))
            elif type(ev) is ConnOpen:
                self._open(ev)
            elif type(ev) is ConnClose:
                closing = conns.pop(ev.conn, None)
                if closing is None:
                    continue
                info = closing.info
                info.closed = ev.reason
                info.ts_last = ev.ts
                if ev.by is not None and info.client_direction is not None:
                    info.closed_by = "client" if ev.by == info.client_direction else "broker"
                tls = closing.tls
                if tls is not None:
                    for d, issue in tls.flush():
                        out.append(ConnIssue(info, d, issue, ev.ts))
                for issue in closing.framer.flush():
                    out.append(ConnIssue(info, -1, issue, ev.ts))
                out.extend(closing.pairer.flush())
                for issue in closing.pairer.conn_issues():
                    out.append(ConnIssue(info, -1, issue, ev.ts))
                info.not_kafka = closing.framer.not_kafka
                if tls is not None:
                    info.tls = tls.info
                    if tls.decrypted:
                        self.tls_decrypted += 1
                    else:
                        info.not_kafka = "TLS, not decrypted"
                    if info.client_direction is None:
                        info.client_direction = tls.client
                out.append(ConnectionEnd(info))
        return out

    def _start_tls(self, c: _Conn) -> None:
        from analyzer.tls.layer import TlsConnection  # the crypto libraries load with the first TLS

        self.tls_connections += 1
        c.tls = TlsConnection(c.info.id, self.keylog)

    def _tls(self, c: _Conn, ev: StreamData | Gap, out: list[Event]) -> None:
        """A TLS connection's ciphertext event: the TLS layer's plaintext goes to the framer."""
        tls = c.tls
        assert tls is not None
        info = c.info
        plain, issues = tls.feed(ev)
        for d, issue in issues:
            out.append(ConnIssue(info, d, issue, ev.ts))
        framer = c.framer
        if framer.client is None and tls.client is not None:
            framer.client = tls.client  # the ClientHello's sender: better than any guess
        for pev in plain:
            frames, fissues = framer.feed(pev)
            for issue in fissues:
                out.append(ConnIssue(info, pev.direction, issue, pev.ts))
            if frames:
                if info.client_direction is None:
                    info.client_direction = framer.client
                for f in frames:
                    info.frames[f.direction] += 1
                    out.extend(c.pairer.feed(f))

    def _open(self, ev: ConnOpen) -> None:
        info = ConnInfo(ev.conn, Endpoint(ev.src, ev.sport), Endpoint(ev.dst, ev.dport), ev.ts, ev.syn)
        info.first_packet = ev.packet_index
        client = None
        if ev.dport in self.ports:
            client = 0
        elif ev.sport in self.ports:
            client = 1
        port_client = 0 if ev.dport in KAFKA_PORTS else 1 if ev.sport in KAFKA_PORTS else None
        framer = KafkaConnection(
            ev.conn, ev.syn, client=client, port_client=port_client, offsets=self.opts.packet_offsets
        )
        self.conns[ev.conn] = _Conn(info, framer, ConnectionPairer(info, self.opts, self.knowledge))


# -- the driver ------------------------------------------------------------------------------------


# the cyclic GC's young-generation threshold while an analysis runs (see Analysis.batches)
YOUNG_GC = 20_000


class Exit(IntEnum):
    """The exit codes of every command (``check`` adds its own on top)."""

    OK = 0  # success
    DAMAGED = 1  # the input was truncated or corrupt (partial results), or held no Kafka traffic
    USAGE = 2  # usage error, missing or unreadable file, not a capture, a capture source that failed


# Capture issue codes that mean the input could not be used at all (exit 2), not damage (exit 1)
UNUSABLE = frozenset(k.code for k in (CAPTURE_UNKNOWN_FORMAT, CAPTURE_UNREADABLE, CAPTURE_SOURCE_FAILED))
# Capture issue codes that are warnings but still mean the results are partial (exit 1)
LOSSY = frozenset((CAPTURE_PACKETS_DROPPED.code,))


class Source(Protocol):
    """Anything that yields packets: :class:`~analyzer.capture.files.CaptureFile`, a live capture.

    ``issues`` collects the damage found while reading; ``bytes_read`` and ``size`` (None when
    unknown) give progress. Live sources also have ``stop()`` and ``close()``, and may count
    what the kernel received and dropped in ``received`` and ``dropped`` (the driver streams
    them as :class:`~analyzer.events.CaptureStats`; ``close()`` adds the final issue). A live
    source may yield None while no packet comes (every few hundred ms): the driver then checks
    :meth:`Analysis.stop` and its batch deadline, so a UI gets its batches while the line is idle.
    """

    name: str
    issues: list[Issue]
    bytes_read: int
    live: bool  # a live capture: seeing no Kafka is not damage

    def __iter__(self) -> Iterator[Packet | None]: ...


class Analysis:
    """Runs the pipeline over one source: the only loop over packets in the project.

    >>> a = Analysis("captures/x.pcap")
    >>> outcome = a.run(stats, writer)     # each consumer sees every event, then the outcome
    >>> outcome.exit_code(), outcome.problems()

    ``source`` is a path (``-`` for stdin), a binary file object or a :class:`Source`.
    ``progress(analysis)`` is called every ~1000 packets; ``cancel()`` returning True (or
    :meth:`stop`, from any thread or a signal handler) ends the packets early, as Ctrl-C does:
    the events of what was read still come, then the connections are flushed.
    ``idle_timeout`` (seconds) expires idle connections, checked every ``expire_every`` seconds
    of wall time: for long live runs, so memory stays bounded. ``lock``, if given, is held while
    the pipeline runs (a UI thread reading :attr:`knowledge` or the counters takes it too).
    """

    def __init__(
        self,
        source: str | os.PathLike | BinaryIO | Source,
        opts: Options = DEFAULT_OPTIONS,
        ports: Iterable[int] = (),
        *,
        progress: Callable[[Analysis], None] | None = None,
        cancel: Callable[[], bool] | None = None,
        idle_timeout: float | None = None,
        expire_every: float = 10.0,
        lock: AbstractContextManager | None = None,
        tls_keylog: str | os.PathLike | KeyLog | None = None,
        display_filter: Any = None,
    ) -> None:
        if isinstance(source, str | os.PathLike) or hasattr(source, "read"):
            from analyzer.capture.files import CaptureFile

            self.source: Source = CaptureFile(source)  # type: ignore[arg-type]  # a path or a readable stream here: hasattr narrows no type
        else:
            self.source = source
        # TLS secrets: the key log file (OSError when unreadable), and the capture's own
        # Decryption Secrets Blocks as the reader finds them
        keylog = KeyLog.from_file(tls_keylog) if isinstance(tls_keylog, str | os.PathLike) else tls_keylog
        if keylog is None:
            keylog = KeyLog()
        secrets = getattr(self.source, "secrets", None)
        if secrets is not None:
            keylog.attach(secrets)
        # the display filter (compiled; :func:`analyzer.filter.compile_filter`): the exchanges it
        # drops reach no consumer; it reads this run's knowledge, and record bodies are decoded
        # when it reads them
        self.filter = display_filter
        if display_filter is not None and display_filter.needs_records and not opts.records_bodies:
            opts = Options(True, opts.show_secrets, opts.limits, opts.packet_offsets)
        self.pipeline = Pipeline(opts, ports=ports, idle_timeout=idle_timeout, keylog=keylog)
        if display_filter is not None:
            display_filter.knowledge = self.pipeline.knowledge
        self.progress = progress
        self.cancel = cancel
        self.expire_every = expire_every if idle_timeout is not None else None
        # (a real lock when none is given: its enter and exit are C calls, nullcontext's are Python
        # calls, once per packet that produced events)
        self.lock: AbstractContextManager = lock if lock is not None else threading.Lock()
        self.exchanges = 0  # exchanges emitted
        self.interrupted = False  # Ctrl-C, stop() or cancel() ended the packets early
        self.finished = False
        self.capture_issues: list[Issue] = []  # the source's damage and the driver's own findings
        self._stop = False
        self._dropped_seen = 0  # the source's drop count last reported as CaptureStats

    # -- what front ends show ---------------------------------------------------------------------
    @property
    def opts(self) -> Options:
        return self.pipeline.opts

    @property
    def knowledge(self):
        """Per-capture knowledge: topic ids, brokers, client software, groups."""
        return self.pipeline.knowledge

    @property
    def packets(self) -> int:
        return self.pipeline.packets

    @property
    def connections(self) -> int:
        return self.pipeline.connections

    @property
    def first_ts(self) -> float | None:
        return self.pipeline.first_ts

    @property
    def last_ts(self) -> float:
        return self.pipeline.last_ts

    @property
    def skipped(self) -> Counter[str]:
        return self.pipeline.skipped

    @property
    def dropped(self) -> int | None:
        """Packets the kernel dropped (live sources that count them), else None."""
        return getattr(self.source, "dropped", None)

    @property
    def fraction(self) -> float | None:
        """How much of the source was read (0..1), None when its size is unknown."""
        size = getattr(self.source, "size", None)
        if not size:
            return None
        return min(1.0, getattr(self.source, "position", 0) / size)

    # -- running ------------------------------------------------------------------------------------
    def stop(self) -> None:
        """End the packets early (safe from another thread or a signal handler)."""
        self._stop = True
        stop = getattr(self.source, "stop", None)
        if stop is not None:
            stop()

    def events(self) -> Iterator[Event]:
        """Every event, in capture order; capture issues come last."""
        for batch in self.batches():
            yield from batch

    def batches(self, seconds: float | None = None) -> Iterator[list[Event]]:
        """The events in lists: with ``seconds``, one list at least that often (possibly empty,
        so a UI can show progress); without, one per packet that produced events."""
        p = self.pipeline
        feed = p.feed
        progress, cancel = self.progress, self.cancel
        lock = self.lock
        expire_every = self.expire_every
        next_expire = time.monotonic() + expire_every if expire_every is not None else None
        it = iter(self.source)
        n = 0
        # The connection table's state (some 25 objects a connection) lives for the connection:
        # at CPython's default young-generation threshold (700) the cyclic GC's full collections
        # come every time a quarter more objects survived and each rescans every tracked
        # connection, 70% of the time on 100,000 half-open connections (21 s -> 6 s of CPU
        # without the GC). A young generation of YOUNG_GC objects makes them 30x rarer; the
        # garbage they hold for longer is at most that many objects. It holds while a caller of
        # steps() works between batches too: the TUI's indexer keeps a slice's events (the
        # decoded messages of ~50 ms of capture) until it indexed them, which at 700 the GC
        # found alive many times a slice and moved to the older generations (0.54 s -> 0.08 s
        # of GC on a 40 MB capture).
        thresholds = gc.get_threshold()
        gc.set_threshold(max(thresholds[0], YOUNG_GC), *thresholds[1:])
        try:
            while True:
                out: list[Event] = []
                deadline = time.monotonic() + seconds if seconds is not None else None
                with lock:
                    for pkt in it:
                        if pkt is None:  # an idle live source (idle_ticks): nothing came for a while
                            if self._stop or (cancel is not None and cancel()):
                                self.interrupted = True
                                break
                            if getattr(self.source, "dropped", 0) != self._dropped_seen:
                                out.append(self._capture_stats(None))
                            if deadline is not None and time.monotonic() >= deadline:
                                break
                            continue
                        index, ts, linktype, data = pkt
                        evs = feed(index, ts, linktype, data)
                        n += 1
                        if evs:
                            out.extend(evs)
                        if not n & 0x3F:
                            if self._stop or (cancel is not None and cancel()):
                                self.interrupted = True
                                break
                            now = time.monotonic()
                            if getattr(self.source, "dropped", 0) != self._dropped_seen:
                                out.append(self._capture_stats(ts))
                            if next_expire is not None and now >= next_expire:
                                out.extend(p.expire(ts))
                                next_expire = now + expire_every  # type: ignore[operator]  # expire_every is set whenever next_expire is
                            if progress is not None and not n & 0x3FF:
                                progress(self)
                            if deadline is not None and now >= deadline:
                                break
                        if evs and deadline is None:
                            break
                    else:
                        self.finished = True
                if out or deadline is not None:
                    self._count(out)
                    yield out
                if self.finished or self.interrupted:
                    break
        except KeyboardInterrupt:
            self.interrupted = True
        finally:
            gc.set_threshold(*thresholds)
            close = getattr(self.source, "close", None) or getattr(it, "close", None)
            if close is not None:
                close()
        with lock:
            out = p.finish()
        self._count(out)
        if getattr(self.source, "dropped", 0) != self._dropped_seen:
            out.append(self._capture_stats(p.last_ts if p.packets else None))
        yield out
        yield self._capture_events()

    def _capture_stats(self, ts: float | None) -> CaptureStats:
        src = self.source
        self._dropped_seen = src.dropped  # type: ignore[attr-defined]  # only called when the source counts drops
        return CaptureStats(ts, getattr(src, "received", 0), src.dropped)  # type: ignore[attr-defined]  # only called when the source counts drops

    def _count(self, events: list[Event]) -> None:
        for ev in events:
            if type(ev) is Exchange:
                self.exchanges += 1

    def _capture_events(self) -> list[Event]:
        p = self.pipeline
        issues = list(getattr(self.source, "issues", ())) + p.keylog.issues
        if no_tcp(p.packets, p.skipped):
            issues.append(CAPTURE_NO_TCP("no TCP traffic in the capture"))
        if p.reasm.evicted:
            n = p.reasm.max_connections
            issues.append(
                STREAM_EVICTED(
                    f"{p.reasm.evicted} of {p.connections} TCP connections were closed early, the"
                    f" longest-idle first: more than {n} were open at once (max_connections; raise"
                    " it with --max-connections); their frames in progress are lost"
                )
            )
        self.capture_issues = issues
        if self.progress is not None:
            self.progress(self)
        return [CaptureIssue(i, p.last_ts if p.packets else None) for i in issues]

    # -- consumers ------------------------------------------------------------------------------------
    def run(self, *consumers: Consumer, seconds: float | None = None) -> Outcome:
        """Feed every event to each consumer (:class:`Consumer`) in capture order, then give
        each the :class:`Outcome`; returns it. Exchanges the display filter drops reach none."""
        for _ in self.steps(*consumers, seconds=seconds):
            pass
        return self.outcome()

    def steps(self, *consumers: Consumer, seconds: float | None = None) -> Iterator[list[Event]]:
        """:meth:`run` one batch at a time: after each batch's events went to the consumers
        (under :attr:`lock`) the batch is yielded, so a caller can drain what they made (a UI
        posting rows, Spark yielding them); ``seconds`` as for :meth:`batches`. At the end each
        consumer's ``done(outcome)`` is called."""
        flt = self.filter
        feeds = [c.event for c in consumers]
        one = feeds[0] if len(feeds) == 1 else None
        lock = self.lock
        for batch in self.batches(seconds):
            if flt is not None:
                batch = [ev for ev in batch if type(ev) is not Exchange or flt(ev)]
            with lock:
                if one is not None:
                    for ev in batch:
                        one(ev)
                else:
                    for ev in batch:
                        for feed in feeds:
                            feed(ev)
            yield batch
        outcome = self.outcome()
        for c in consumers:
            done = getattr(c, "done", None)
            if done is not None:
                done(outcome)

    def outcome(self) -> Outcome:
        """What the run came to (so far, while it runs): counters, capture issues, knowledge."""
        p = self.pipeline
        return Outcome(
            name=self.source.name,
            packets=p.packets,
            connections=p.connections,
            first_ts=p.first_ts,
            last_ts=p.last_ts,
            skipped=dict(p.skipped),
            exchanges=self.exchanges,
            tls_connections=p.tls_connections,
            tls_decrypted=p.tls_decrypted,
            keylog_given=p.keylog.given,
            capture_issues=tuple(self.capture_issues),
            interrupted=self.interrupted,
            live=bool(getattr(self.source, "live", False)),
            dropped=self.dropped,
            received=getattr(self.source, "received", None),
            knowledge=p.knowledge,
        )


class Consumer(Protocol):
    """What :meth:`Analysis.run` feeds (Wireshark's taps, mitmproxy's addons): ``event(ev)`` for
    each event in capture order; ``done(outcome)``, when defined, once at the end. A consumer
    with state that several runs share out (``-j N``, capture sets, splits, Spark, live workers)
    says how two partial states combine (its own ``merge``)."""

    def event(self, ev: Event) -> None: ...


# -- the outcome ------------------------------------------------------------------------------------


def no_tcp(packets: int, skipped: Mapping[str, int]) -> bool:
    """Packets, and not one of them a TCP segment (each skipped, counted by reason): the
    ``capture.no_tcp`` issue. TCP segments that open no connection (the ACKs and FINs of a
    close: all a rotated file's tail may hold) are TCP all the same."""
    return bool(packets) and sum(skipped.values()) >= packets


@record(frozen=True)
class Outcome:
    """What one run came to: the only thing front ends read after the events (summary
    counters, the exit code, the problems said on stderr or in the TUI). :meth:`combine` gives
    the outcome of a run from the outcomes of its parts (workers, shares, pieces)."""

    name: str
    packets: int = 0
    connections: int = 0
    first_ts: float | None = None
    last_ts: float = 0.0
    skipped: Mapping[str, int] = field(default_factory=dict)  # why packets were not usable TCP
    exchanges: int = 0
    tls_connections: int = 0  # connections found to be TLS
    tls_decrypted: int = 0  # ... of which some records were decrypted
    keylog_given: bool = False  # a key log was given, or the capture carried secrets
    capture_issues: tuple[Issue, ...] = ()
    interrupted: bool = False  # Ctrl-C, stop() or cancel() ended the packets early
    live: bool = False  # a live capture: seeing no Kafka is not damage
    dropped: int | None = None  # packets the kernel dropped (live sources that count them)
    received: int | None = None  # packets the kernel received (live sources that count them)
    knowledge: Knowledge = field(default_factory=Knowledge)

    @classmethod
    def combine(cls, parts: Sequence[Outcome], **given: Any) -> Outcome:
        """One outcome from the parts of one run: counters summed, times spanned, the
        knowledge merged in order, capture issues once per (code, message); ``given`` fields
        (what the parts cannot know alone: the whole capture's packets, its name) win."""
        knowledge = Knowledge()
        skipped: Counter[str] = Counter()
        issues: list[Issue] = []
        seen: set[tuple[str, str]] = set()
        for o in parts:
            knowledge.merge(o.knowledge)
            skipped.update(o.skipped)
            for i in o.capture_issues:
                if (i.code, i.message) not in seen:
                    seen.add((i.code, i.message))
                    issues.append(i)
        firsts = [o.first_ts for o in parts if o.first_ts is not None]
        counted = [o.dropped for o in parts if o.dropped is not None]
        received = [o.received for o in parts if o.received is not None]
        out = cls(
            name=parts[0].name if parts else "",
            packets=sum(o.packets for o in parts),
            connections=sum(o.connections for o in parts),
            first_ts=min(firsts) if firsts else None,
            last_ts=max((o.last_ts for o in parts), default=0.0),
            skipped=dict(skipped),
            exchanges=sum(o.exchanges for o in parts),
            tls_connections=sum(o.tls_connections for o in parts),
            tls_decrypted=sum(o.tls_decrypted for o in parts),
            keylog_given=any(o.keylog_given for o in parts),
            capture_issues=tuple(issues),
            interrupted=any(o.interrupted for o in parts),
            live=any(o.live for o in parts),
            dropped=sum(counted) if counted else None,
            received=sum(received) if received else None,
            knowledge=knowledge,
        )
        return replace(out, **given) if given else out

    def unusable(self) -> bool:
        """The input could not be used at all (not a capture, unreadable, the source failed)."""
        return any(i.code in UNUSABLE for i in self.capture_issues)

    def exit_code(self) -> Exit:
        """The one policy: 2 unusable input (or a live capture that could not start); 1 damaged
        input (a live capture that dropped packets too), or a capture file with no Kafka
        exchange (unless interrupted early); else 0."""
        if self.unusable():
            return Exit.USAGE
        if any(i.severity == Severity.ERROR or i.code in LOSSY for i in self.capture_issues):
            return Exit.DAMAGED
        if self.exchanges == 0 and not self.interrupted and not self.live:
            return Exit.DAMAGED
        return Exit.OK

    def inconclusive(self) -> str | None:
        """Why nothing can be concluded from the input (``check``'s inconclusive captures): it
        could not be used, or it holds no Kafka exchange; None otherwise."""
        if self.unusable():
            return "; ".join(f"{i.code}: {i.message}" for i in self.capture_issues)
        if self.exchanges == 0:
            said = [p for p in self.problems() if p.startswith("no Kafka")]
            return said[0] if said else "no Kafka exchange in the capture"
        return None

    def problems(self) -> list[str]:
        """One line per thing the user must know about the input (printed on stderr by the CLI,
        shown in the TUI): capture damage, and why no Kafka was found."""
        out = [f"{i.severity}: {i.message}" for i in self.capture_issues]
        if self.exchanges == 0 and not self.unusable() and not self.interrupted:
            n = self.connections
            hint = " (no TCP traffic at all)" if n == 0 else f" in {n} TCP connections"
            if n == 0 and self.skipped:
                why = ", ".join(f"{c} {reason}" for reason, c in Counter(self.skipped).most_common(3))
                hint = f" (no TCP traffic at all; packets skipped: {why})"
            tls = self.tls_connections - self.tls_decrypted
            if tls:
                why = (
                    "no key log given: --tls-keylog FILE"
                    if not self.keylog_given
                    else "the key log has no working secrets for them"
                )
                hint += f"; {tls} TLS connection{'s' if tls != 1 else ''} ({why})"
            cut = next((i for i in self.capture_issues if i.code == CAPTURE_SNAPLEN.code), None)
            if cut is not None:  # the likely cause: the frames were there, only their start was kept
                out.append(f"no Kafka traffic found{hint}: {cut.message}")
            else:
                out.append(
                    f"no Kafka traffic found{hint}; Kafka is detected by content on any port, "
                    "--port PORT names broker ports explicitly"
                )
        return out
