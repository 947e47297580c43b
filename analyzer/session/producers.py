"""Producers from the wire: each batch's attempts, retries, duplicates written, records lost,
sequence gaps, epoch bumps, fencing, and how each producer batches.

A consumer (:meth:`ProducerTracker.event` per event, in capture order) of Produce exchanges:

* a **batch's identity** is, for an idempotent producer (producer id and base sequence set),
  (producer id, epoch, topic, partition, base sequence, record count): a broker answers a batch
  sent again with the offset it wrote first (or DUPLICATE_SEQUENCE_NUMBER), so it is never
  written twice. For a producer that is not idempotent it is (client, topic, partition, CRC,
  record count), and only a batch sent again *after an error or while its attempt had no answer*
  is a retry (an identical batch after a good answer is a new one);
* a **retry** is each later attempt; its ``error`` is what the attempt before it had got when
  it was sent ("no answer": none yet, the client timed out);
* **duplicates written**: a batch written at two or more base offsets, as Produce answers or
  Fetch answers show it (a plain producer whose first attempt was written but timed out: its
  first answer may never reach the capture, its records fetched at two offsets do): its records
  are in the log twice (followed for the last :data:`WRITTEN_KEPT` batches of a partition);
* **failed records**: a batch whose last attempt failed and none was written (lost unless the
  application sent them again); **unanswered**: a batch whose last attempt (acks not 0) got no
  answer in the capture;
* **sequence gaps**: an idempotent batch whose base sequence skips past the one its
  producer-partition expects (answers OUT_OF_ORDER_SEQUENCE_NUMBER counted as well); **epoch
  bumps**: a producer id seen at a higher epoch; **fenced**: answers PRODUCER_FENCED or
  INVALID_PRODUCER_EPOCH;
* **batching**: records and bytes per batch, codecs, the time between a partition's batches
  (linger), requests per second; a producer sending many one-record batches at a steady rate is
  flagged **under-batched**.

A batch stays open for retries while it is among the last :data:`KEPT` of its producer and
partition; then, and at the end, its outcome is counted. Processes that share the work send
:meth:`ProducerTracker.facts` of each Produce to the merge, which applies them in capture order.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import NamedTuple

from analyzer.dissect.constants import ApiKey, ErrorCode
from analyzer.dissect.errors import error_name
from analyzer.model import Exchange
from analyzer.plain import field, record
from analyzer.session.bounded import DEFAULT_BOUNDS, Bounds, Evictions, Expiry, median
from analyzer.session.consumption import addresses, host_of
from analyzer.session.walks import fetched, produced, topic_of

KEPT = 64  # batches per producer and partition kept open for retries
WRITTEN_KEPT = 10_000  # written batches per partition whose offsets are followed (duplicates)
FETCHED = "fetched"  # the kind of a Fetch answer's facts
RETRIES_KEPT = 10_000  # retry rows kept (the oldest go first; all are counted)
V2_HEADER = 61  # a v2 record batch's bytes before its records (the compression ratio's)
UNDER_BATCHED = (50, 1.5, 10.0)  # at least this many batches, median records per batch under, requests/s over
_FENCING = frozenset((ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH))
_WRITTEN_BEFORE = ErrorCode.DUPLICATE_SEQUENCE_NUMBER  # the broker has it already
_WRAP = 1 << 31
RETRIED, DUPLICATED, FAILED, UNANSWERED = "retried", "duplicated", "failed", "unanswered"  # outcomes told
REQUEST_TIMEOUT = 30.0  # (settle) seconds a client waits for an answer (request.timeout.ms)
NO_ANSWER = -2  # an attempt's error code when no answer came (acks 0 expects none: ACKS0)
ACKS0 = -3
_GOOD = frozenset((ErrorCode.NONE, _WRITTEN_BEFORE, ACKS0))  # an attempt that leaves nothing to count


class Attempt(NamedTuple):
    """One sending of a batch."""

    connection: str
    correlation_id: int | None
    time: float
    answered: float | None
    error: int  # the answer's error code; NO_ANSWER, ACKS0
    base_offset: int | None
    mark: object = None  # what the caller names the exchange by (check's evidence); None

    def row(self) -> dict:
        return {"connection": self.connection, "correlation_id": self.correlation_id, "time": self.time}


@record
class Batch:
    producer: tuple
    topic: str
    partition: int
    records: int
    attempts: list[Attempt]
    idempotent: bool
    size: int
    codec: str
    inflated: int | None  # its records' size decompressed (a compressed batch's, when known)
    written_as: tuple  # its identity among the partition's written batches
    told: set | None = None  # (live) its retries told as their attempts came (:func:`retry_key`)


@record
class ProducerView:
    """A producer: a client (host and client id) with one producer id (-1: not idempotent)."""

    client_id: str | None
    client: str  # its address, the first connection's
    producer_id: int
    producer_epoch: int | None = None
    transactional_id: str | None = None
    first: float = 0.0
    last: float = 0.0
    requests: int = 0
    batches: int = 0
    records: int = 0
    bytes: int = 0
    retried_records: int = 0
    failed_records: int = 0
    unanswered_records: int = 0
    duplicates_written: int = 0
    sequence_gaps: int = 0
    epoch_bumps: int = 0
    fenced: int = 0
    codecs: dict[str, int] = field(default_factory=dict)
    # compressed batches whose decompressed size is known: their records' bytes, as sent and
    # decompressed (the compression ratio)
    compressed: int = 0
    decompressed: int = 0
    sized: int = 0  # those batches
    per_batch: list[int] = field(default_factory=list)  # records per batch (bounded sample)
    gaps_ms: list[float] = field(default_factory=list)  # between a partition's batches (bounded)
    last_batch: dict[tuple[str, int], float] = field(default_factory=dict)
    next_seq: dict[tuple, int] = field(default_factory=dict)  # (epoch, topic, partition) -> expected

    def row(self) -> dict:
        span = self.last - self.first
        rate = self.requests / span if span >= 1.0 else None  # (a rate over less than a second says little)
        per = median(self.per_batch) if self.per_batch else None
        n, few, fast = UNDER_BATCHED
        return {
            "client_id": self.client_id,
            "client": self.client,
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "transactional_id": self.transactional_id,
            "idempotent": self.producer_id >= 0,
            "first": self.first,
            "last": self.last,
            "requests": self.requests,
            "batches": self.batches,
            "records": self.records,
            "bytes": self.bytes,
            "retried_records": self.retried_records,
            "failed_records": self.failed_records,
            "unanswered_records": self.unanswered_records,
            "duplicates_written": self.duplicates_written,
            "sequence_gaps": self.sequence_gaps,
            "epoch_bumps": self.epoch_bumps,
            "fenced": self.fenced,
            "records_per_batch": None if per is None else round(per, 3),
            "bytes_per_batch": round(self.bytes / self.batches, 1) if self.batches else None,
            "linger_ms": round(median(self.gaps_ms), 3) if self.gaps_ms else None,
            "requests_per_s": None if rate is None else round(rate, 3),
            "codecs": dict(sorted(self.codecs.items())),
            "compression_ratio": round(self.decompressed / self.compressed, 3) if self.compressed else None,
            "compression_batches": self.sized,
            "under_batched": bool(
                self.batches >= n and per is not None and per < few and rate is not None and rate > fast
            ),
        }


_SAMPLE = 100_000  # records-per-batch and linger samples kept per producer
# a producer's counts summed over every producer (:meth:`ProducerTracker.totals`)
COUNTED = (
    "retried_records",
    "failed_records",
    "unanswered_records",
    "duplicates_written",
    "sequence_gaps",
    "fenced",
)


class ProducerTracker:
    """The consumer: every producer's batches, retries, outcomes and batching."""

    def __init__(self, topic_ids: dict[str, str] | None = None, bounds: Bounds = DEFAULT_BOUNDS) -> None:
        self.topic_ids = topic_ids
        self.producers: dict[tuple, ProducerView] = {}
        # a producer (host, client id, producer id) unused past the bounds' idle time, or the
        # longest idle past their maximum, is let go (its open batches counted first), counted
        self.evictions = Evictions()
        self.expiry = Expiry("producers", self._evict, self.evictions, bounds)
        # (producer, topic, partition) -> identity -> Batch, or a batch sent once so far as a
        # plain tuple (:data:`Sent`: most batches; :func:`_batch` makes it a Batch)
        self.open: dict[tuple, OrderedDict] = {}
        self.retries: list[dict] = []
        self.retry_count = 0
        # (topic, partition) -> identity -> [producer key, records, base offset written (a set of
        # them once there are several), times sent anew, (batch, attempts) for on_outcome]: a batch
        # the capture saw produced, with every offset an answer or a Fetch showed it at
        self.written: dict[tuple[str, int], OrderedDict] = {}
        # told each batch's outcome as it is counted: (RETRIED, DUPLICATED, FAILED or UNANSWERED,
        # the producer, the batch, its attempts in the order sent); check's evidence (set before
        # the first exchange: the written batches keep theirs only then)
        self.on_outcome: Callable[[str, ProducerView, Batch, list[Attempt]], None] | None = None
        # (live, :meth:`follow`) what is new since the last :meth:`news`: ("retry", row) as each
        # later attempt comes, ("lost", ...) and ("duplicated", ...) as batches are counted
        self.pending: list[tuple[str, dict]] | None = None
        self.keep_keys: int | None = None  # (live) producer-partitions open, partitions followed
        self.closed_early = 0  # batches closed because keep_keys producer-partitions were open
        self.let_go = dict.fromkeys(COUNTED, 0)  # the counts of the producers let go (expiry)

    # -- feeding ------------------------------------------------------------------------------------
    def event(self, ev) -> None:
        f = self.facts(ev)
        if f is not None:
            self.apply(f)

    def facts(self, ev) -> tuple | None:
        """What a Produce exchange tells, as plain values: (time, answer time, connection, correlation id,
        client id, client address, acks, transactional id, batches); each batch (topic ref,
        producer id, epoch, base sequence, records, CRC, bytes, codec, its records' size
        decompressed (a compressed batch's; None: not known), error code, base offset)."""
        if type(ev) is not Exchange or ev.request is None:
            return None
        api = ev.api_key
        if api == ApiKey.FETCH:
            return self._fetched(ev)
        if api != ApiKey.PRODUCE:
            return None
        req = ev.request.body
        if req is None:
            return None
        acks = req.get("acks")
        batches = []
        missing = ACKS0 if acks == 0 else NO_ANSWER
        for pp in produced(ev):
            err = pp.error if pp.error is not None else missing
            base = pp.base_offset
            # (a summary has every key: records_common.entry_summary, records_batch)
            for s, e in zip(pp.batches, pp.entries, strict=False):  # (as many)
                n = s["record_count"] or 0
                if n <= 0 or s["crc_ok"] is False:
                    continue
                codec = s["codec"] or "none"
                batches.append(
                    (
                        pp.ref,
                        s["producer_id"],
                        s["producer_epoch"],
                        s["base_sequence"],
                        n,
                        s["crc"],
                        s["bytes"] or 0,
                        codec,
                        _sized(e) if codec != "none" else None,
                        err,
                        base,
                    )
                )
                if base is not None:
                    base += n  # a second batch of the partition follows the first
        if not batches:
            return None
        client, label = addresses(ev.conn)
        txn = req.get("transactional_id")
        answered = ev.response.frame.ts_first if ev.response is not None else None
        return (
            ev.request.frame.ts_first,
            answered,
            label,
            ev.correlation_id,
            ev.client_id,
            client,
            acks,
            txn,
            batches,
        )

    @staticmethod
    def _fetched(ev: Exchange) -> tuple | None:
        """(FETCHED, [(topic ref, base offset, producer id, epoch, base sequence, records, CRC)])
        of the record batches (v2, not control) a Fetch answer returned."""
        if ev.response is None or ev.response.body is None:
            return None
        out = []
        for fp in fetched(ev).answered:
            for b in fp.batches:
                base = b["base_offset"]
                if b["magic"] != 2 or b["control"] or not isinstance(base, int) or b["crc_ok"] is False:
                    continue
                out.append(
                    (
                        fp.ref,
                        base,
                        b["producer_id"],
                        b["producer_epoch"],
                        b["base_sequence"],
                        b["record_count"] or 0,
                        b["crc"],
                    )
                )
        return (FETCHED, out) if out else None

    def apply(self, facts: tuple, mark: object = None) -> None:
        """One Produce's or Fetch's :meth:`facts`; ``mark``: kept with a Produce's attempts
        (:attr:`Attempt.mark`)."""
        if facts[0] == FETCHED:
            self._written_again(facts[1])
            return
        t, answered, label, corr, client_id, client, acks, txn, batches = facts
        host = host_of(client)
        producers, ids, open_all, fencing = self.producers, self.topic_ids, self.open, _FENCING
        seen: set[tuple] = set()
        for ref, pid, epoch, seq, n, crc, size, codec, inflated, err, base in batches:
            pid = pid if isinstance(pid, int) else -1
            key = (host, client_id, pid)
            pv = producers.get(key)
            if pv is None:
                pv = producers[key] = ProducerView(client_id, client, pid, first=t)
            if key not in seen:
                seen.add(key)
                self.expiry.touch(key, t)
                pv.requests += 1
                pv.last = t
            if txn:
                pv.transactional_id = txn
            if pid >= 0 and isinstance(epoch, int):
                had = pv.producer_epoch
                if had is None or epoch > had:
                    if had is not None:
                        pv.epoch_bumps += 1
                    pv.producer_epoch = epoch
            tp = (ref[0], ref[2]) if ref[0] else topic_of(ref, ids)
            attempt = Attempt(label, corr, t, answered, err, base, mark)
            # the batch's identity (see the module's docstring)
            idempotent = pid >= 0 and isinstance(seq, int) and seq >= 0
            ident = (epoch, seq, n) if idempotent else (crc, n)
            written_as = (pid, epoch, seq, n) if idempotent else ident
            if err == ErrorCode.NONE and base is not None:
                self._wrote(tp, written_as, key, n, base)
            pkey = (key, *tp)
            open_ = open_all.get(pkey)
            if open_ is None:
                open_ = open_all[pkey] = OrderedDict()
                if self.keep_keys is not None and len(open_all) > self.keep_keys:
                    self._close_key(next(iter(open_all)))
            b = open_.get(ident)
            if b is not None:  # sent again (or an attempt answered after a later one was sent)
                if type(b) is tuple:
                    b = open_[ident] = _batch(b)
                b.attempts.append(attempt)
                open_.move_to_end(ident)
                if self.pending is not None:
                    self._tell_early(pv, b, attempt)
            else:
                self._new_batch(pv, tp, n, size, codec, inflated, t)
                if idempotent:
                    self._sequence(pv, epoch, tp, seq, n)
                open_[ident] = (key, tp[0], tp[1], n, attempt, idempotent, size, codec, inflated, written_as)
                if len(open_) > KEPT:
                    self._close(open_.popitem(last=False)[1])
            if err in fencing:
                pv.fenced += 1
            elif err == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER:
                pv.sequence_gaps += 1

    @staticmethod
    def _new_batch(  # noqa: PLR0913
        pv: ProducerView, tp: tuple[str, int], n: int, size: int, codec: str, inflated: int | None, t: float
    ) -> None:
        pv.batches += 1
        pv.records += n
        pv.bytes += size
        pv.codecs[codec] = pv.codecs.get(codec, 0) + 1
        if inflated is not None and size > V2_HEADER:
            pv.compressed += size - V2_HEADER
            pv.decompressed += inflated
            pv.sized += 1
        if len(pv.per_batch) < _SAMPLE:
            pv.per_batch.append(n)
        last = pv.last_batch.get(tp)
        if last is not None and len(pv.gaps_ms) < _SAMPLE:
            pv.gaps_ms.append((t - last) * 1000)
        pv.last_batch[tp] = t

    @staticmethod
    def _sequence(pv: ProducerView, epoch, tp, seq: int, n: int) -> None:
        k = (epoch, *tp)
        expected = pv.next_seq.get(k)
        nxt = (seq + n) % _WRAP
        if expected is not None and seq != expected and (seq - expected) % _WRAP < _WRAP // 2:
            pv.sequence_gaps += 1
        if expected is None or (seq - expected) % _WRAP < _WRAP // 2:
            pv.next_seq[k] = nxt

    def _close(self, b: Batch | tuple) -> None:  # noqa: C901 - a batch sent once apart
        """A batch leaves the window: its attempts in the order they were sent, its retries and
        its outcome. A plain producer's identical batch sent after a good answer to the one
        before is a batch of its own."""
        if isinstance(b, tuple):  # sent once (most batches)
            attempt = b[4]
            seen = self.written.get((b[1], b[2]))
            w = seen.get(b[9]) if seen is not None else None
            if w is not None:
                w[3] += 1
            if attempt.error in _GOOD and (w is None or self.on_outcome is None):
                return  # written (or acks 0): nothing to count, no evidence to keep
            batch = _batch(b)
            if w is not None and self.on_outcome is not None:
                w[4] = (batch, batch.attempts)
            if attempt.error not in _GOOD:
                self._outcome(self.producers[batch.producer], batch, batch.attempts)
            return
        pv = self.producers[b.producer]
        tries, runs = _runs(b)
        for run in runs[1:]:
            self._new_batch(pv, (b.topic, b.partition), b.records, b.size, b.codec, b.inflated, run[0].time)
        seen = self.written.get((b.topic, b.partition))
        w = seen.get(b.written_as) if seen is not None else None
        if w is not None:
            w[3] += len(runs)  # each sent anew (after a good answer): one offset of its own
            if self.on_outcome is not None:
                w[4] = (b, tries)  # (check's evidence when it turns out written twice)
        for run in runs:
            self._outcome(pv, b, run)

    def _evict(self, key) -> None:
        """Let a producer go: its open batches are counted first (as at the end)."""
        for k in [k for k in self.open if k[0] == key]:
            for b in self.open.pop(k).values():
                self._close(b)
        pv = self.producers.pop(key, None)
        if pv is not None:
            let_go = self.let_go
            for name in COUNTED:
                let_go[name] += getattr(pv, name)

    def _close_key(self, k: tuple) -> None:
        """Close every batch of a producer-partition (the oldest opened, past ``keep_keys``)."""
        for b in self.open.pop(k).values():
            self.closed_early += 1
            self._close(b)

    def _tell_early(self, pv: ProducerView, b: Batch, attempt: Attempt) -> None:
        """(live) A later attempt of a batch: its retry row from the attempts seen so far (the
        one its close gives when no earlier attempt comes after it)."""
        for run in _runs(b)[1]:
            if attempt in run[1:]:
                i = run.index(attempt)
                row = _retry_row(pv, b, run, i)
                if b.told is None:
                    b.told = set()
                b.told.add(retry_key(row))
                self._pend("retry", row)

    def _pend(self, kind: str, row: dict) -> None:
        if self.pending is not None:
            self.pending.append((kind, row))

    def follow(self, keep_keys: int | None = None) -> None:
        """(live) Keep what is new for :meth:`news`; bound the producer-partitions open and the
        partitions whose written batches are followed to ``keep_keys`` each."""
        self.pending = []
        self.keep_keys = keep_keys

    def news(self) -> list[tuple[str, dict]]:
        """What is new since the last call (:meth:`follow` first): ("retry", the export's retry
        row) when a later attempt comes (and, at its batch's close, a row its close gives
        otherwise), ("lost", ...) for a batch whose last attempt failed, ("duplicated", ...)
        for a batch written twice."""
        out = self.pending
        if out is None:
            return []
        self.pending = []
        return out

    def settle(self, now: float, quiet: float) -> None:
        """(live) Close the batches nothing happened to for ``quiet`` seconds of capture time
        (an unanswered last attempt: its send plus :data:`REQUEST_TIMEOUT`); a retry later
        than that is a batch of its own, as it is offline past :data:`KEPT` newer batches."""
        for k in list(self.open):
            open_ = self.open[k]
            while open_:
                b = _batch(next(iter(open_.values())))
                last = max(
                    a.answered if a.answered is not None else a.time + REQUEST_TIMEOUT for a in b.attempts
                )
                if now - last < quiet:
                    break
                open_.popitem(last=False)
                self._close(b)
            if not open_:
                del self.open[k]

    def _outcome(self, pv: ProducerView, b: Batch, run: list[Attempt]) -> None:
        if len(run) == 1 and run[0].error in _GOOD:  # sent once and written: nothing to count
            return
        tell = self.on_outcome
        if tell is not None and len(run) > 1:
            tell(RETRIED, pv, b, run)
        for i in range(1, len(run)):
            pv.retried_records += b.records
            self.retry_count += 1
            if len(self.retries) >= 2 * RETRIES_KEPT:
                del self.retries[:RETRIES_KEPT]
            row = _retry_row(pv, b, run, i)
            self.retries.append(row)
            if self.pending is not None and (b.told is None or retry_key(row) not in b.told):
                self._pend("retry", row)
        written = {a.base_offset for a in run if a.error == ErrorCode.NONE and a.base_offset is not None}
        if written or any(a.error in (ErrorCode.NONE, _WRITTEN_BEFORE, ACKS0) for a in run):
            return
        if run[-1].error == NO_ANSWER:
            pv.unanswered_records += b.records
        else:
            pv.failed_records += b.records
            self._pend(
                "lost",
                _about(pv, b.topic, b.partition)
                | {
                    "time": run[-1].answered if run[-1].answered is not None else run[-1].time,
                    "records": b.records,
                    "attempts": len(run),
                    "error": _name(run[-1].error),
                },
            )
        if tell is not None:
            tell(UNANSWERED if run[-1].error == NO_ANSWER else FAILED, pv, b, run)

    def _wrote(self, tp: tuple[str, int], ident: tuple, key: tuple | None, n: int, base: int) -> None:
        """A batch at ``base``: from a Produce answer (``key``: its producer) or a Fetch answer
        (None), in whichever order they come."""
        if base < 0:
            return  # (the librdkafka mock answers a transactional resend with -1)
        seen = self.written.get(tp)
        if seen is None:
            seen = self.written[tp] = OrderedDict()
        w = seen.get(ident)
        if w is None:
            seen[ident] = [key, n, base, 0, None]
            if len(seen) > WRITTEN_KEPT:
                self._count(seen.popitem(last=False)[1], tp)
            if len(seen) == 1 and self.keep_keys is not None and len(self.written) > self.keep_keys:
                old = next(iter(self.written))
                for x in self.written.pop(old).values():
                    self._count(x, old)
        else:
            at = w[2]
            if type(at) is set:
                at.add(base)
            elif at != base:
                w[2] = {at, base}
            if key is not None:
                w[0] = key

    def _written_again(self, batches: list) -> None:
        """Batches a Fetch returned: one found at two offsets, the capture having seen it
        produced, was written twice (a plain producer's resend of a batch whose answer it gave
        up on; that first answer may never reach the capture)."""
        ids, wrote = self.topic_ids, self._wrote
        for ref, base, pid, epoch, seq, n, crc in batches:
            idempotent = isinstance(pid, int) and pid >= 0 and isinstance(seq, int) and seq >= 0
            tp = (ref[0], ref[2]) if ref[0] else topic_of(ref, ids)
            wrote(tp, (pid, epoch, seq, n) if idempotent else (crc, n), None, n, base)

    def _count(self, w: list, tp: tuple[str, int]) -> None:
        key, n, offsets, batches, sent = w
        if type(offsets) is not set:
            return  # written at one offset
        pv = self.producers.get(key) if key is not None else None  # (None: let go, bounds)
        if pv is not None and len(offsets) > max(1, batches):
            extra = n * (len(offsets) - max(1, batches))
            pv.duplicates_written += extra
            self._pend("duplicated", _about(pv, *tp) | {"records": extra, "offsets": sorted(offsets)})
            if self.on_outcome is not None and sent is not None:
                self.on_outcome(DUPLICATED, pv, sent[0], sent[1])

    def done(self, outcome=None) -> None:
        for open_ in self.open.values():
            for b in open_.values():
                self._close(b)
            open_.clear()
        count = self._count
        for tp, seen in self.written.items():
            for w in seen.values():
                if type(w[2]) is set:  # (written at one offset: nothing to count)
                    count(w, tp)
            seen.clear()

    # -- what it found ---------------------------------------------------------------------------------
    def rows(self) -> list[dict]:
        return [pv.row() for _, pv in sorted(self.producers.items(), key=lambda kv: (kv[1].first, kv[0]))]

    def totals(self) -> dict[str, int]:
        """:data:`COUNTED` summed over every producer seen, those let go included (counts that
        never go down: the metrics' counters)."""
        out = dict(self.let_go)
        for pv in self.producers.values():
            for name in COUNTED:
                out[name] += getattr(pv, name)
        return out


def _sized(entry) -> int | None:
    """A compressed v2 batch's records decompressed, when the compression ratio reads it
    (``sized_for_ratio`` of a decoded batch, or of one rebuilt from plain data)."""
    sized = getattr(entry, "sized_for_ratio", None)
    return None if sized is None else sized()


def _batch(sent: Batch | tuple) -> Batch:
    """An open batch as a Batch (one sent once is kept as a tuple of its fields, the attempt in
    place of the attempts)."""
    if not isinstance(sent, tuple):
        return sent
    key, topic, partition, n, attempt, idempotent, size, codec, inflated, written_as = sent
    return Batch(key, topic, partition, n, [attempt], idempotent, size, codec, inflated, written_as)


def _runs(b: Batch) -> tuple[list[Attempt], list[list[Attempt]]]:
    """A batch's attempts in the order sent, and its runs: a plain producer's identical batch
    sent after a good answer (or with acks 0) starts a run of its own (a batch of its own)."""
    if len(b.attempts) == 1:  # most batches: sent once
        return b.attempts, [b.attempts]
    tries = sorted(b.attempts, key=lambda a: a.time)
    runs = [[tries[0]]]
    for a in tries[1:]:
        prev = runs[-1][-1]
        anew = prev.error == ACKS0 or (
            prev.error == ErrorCode.NONE and prev.answered is not None and prev.answered <= a.time
        )
        if anew and not b.idempotent:
            runs.append([a])
        else:
            runs[-1].append(a)
    return tries, runs


def _about(pv: ProducerView, topic: str, partition: int) -> dict:
    return {
        "client_id": pv.client_id,
        "client": pv.client,
        "producer_id": pv.producer_id,
        "topic": topic,
        "partition": partition,
    }


def _retry_row(pv: ProducerView, b: Batch, run: list[Attempt], i: int) -> dict:
    """The export's ``retry`` row of a run's attempt ``i`` (> 0)."""
    return _about(pv, b.topic, b.partition) | {
        "first": run[0].row(),
        "later": run[i].row(),
        "attempt": i + 1,
        "error": _before(run[i - 1], run[i]),
        "records": b.records,
    }


def retry_key(row: dict) -> tuple:
    """What names a retry row (its attempts, its number, what the one before got)."""
    f, later = row["first"], row["later"]
    return (
        f["connection"],
        f["correlation_id"],
        f["time"],
        later["connection"],
        later["correlation_id"],
        later["time"],
        row["attempt"],
        row["error"],
    )


def _before(prev: Attempt, a: Attempt) -> str:
    """What the attempt before ``a`` had got when ``a`` was sent."""
    if prev.answered is None or prev.answered > a.time:
        return "no answer"
    return _name(prev.error)


def _name(code: int) -> str:
    if code == NO_ANSWER:
        return "no answer"
    return error_name(code) or f"error {code}"
