"""Transactions from the wire, the classic protocol and KIP-890's second version, and the
read_committed consumers they hold back.

A consumer (:meth:`TxnTracker.event` per event, in capture order) of InitProducerId,
AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn and transactional Produce and
Fetch exchanges:

* a **transaction** of a transactional id starts with the first of: an AddPartitionsToTxn or
  AddOffsetsToTxn request, a transactional Produce (KIP-890 v2: Produce v12+ adds its partitions
  itself); it ends with the EndTxn answer without error (``commit`` or ``abort``) or one whose
  error ends it (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE...: the outcome with
  that error); a retriable error (CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS...)
  leaves it open for the retry. Its partitions, the records its Produce answers acknowledged
  (each written batch once), the offsets it committed (TxnOffsetCommit: consume-transform-
  produce) are kept;
* at the end of the capture a transaction still open past its ``transaction_timeout_ms`` (from
  InitProducerId; 60 s, the clients' default, when the capture did not show it) is **hanging**,
  one within it **open**;
* a **read_committed** consumer (Fetch isolation_level 1) is **held back** on a partition when
  the last stable offset its answers give is behind the high watermark: the largest and the
  last gap, and whether it grew.

Processes that share the work send :meth:`TxnTracker.facts` to the merge, applied in capture
order as one run does.
"""

from __future__ import annotations

from collections.abc import Callable

from analyzer.dissect.constants import ApiKey, ErrorCode
from analyzer.dissect.errors import error_name, is_retriable
from analyzer.model import Exchange
from analyzer.plain import field, record
from analyzer.session.bounded import DEFAULT_BOUNDS, Bounds, Evictions, Expiry
from analyzer.session.consumption import addresses, host_of
from analyzer.session.entities import topic_refs
from analyzer.session.walks import fetched, produced, topic_of

DEFAULT_TIMEOUT_MS = 60_000  # librdkafka's and the Java client's transaction.timeout.ms
DONE_KEPT = 100_000  # finished transactions kept (the oldest go first; all are counted)
_KEYS = frozenset(
    (
        ApiKey.INIT_PRODUCER_ID,
        ApiKey.ADD_PARTITIONS_TO_TXN,
        ApiKey.ADD_OFFSETS_TO_TXN,
        ApiKey.TXN_OFFSET_COMMIT,
        ApiKey.END_TXN,
        ApiKey.PRODUCE,
        ApiKey.FETCH,
    )
)
INIT, ADD, OFFSETS, COMMIT, END, PRODUCE, HELD = range(7)


@record
class Transaction:
    transactional_id: str
    producer_id: int | None
    producer_epoch: int | None
    start: float
    client: str | None = None
    end: float | None = None
    outcome: str = "open"  # commit, abort, hanging, open
    error: str | None = None
    partitions: set[tuple[str, int]] = field(default_factory=set)
    written: set[tuple[str, int, int]] = field(default_factory=set)  # (topic, partition, base offset)
    records: int = 0
    offsets: list[dict] = field(default_factory=list)
    timeout_ms: int | None = None

    def hanging_at(self, now: float) -> bool:
        """Open past its timeout (the client's, else the default) at ``now``."""
        return now - self.start > (self.timeout_ms or DEFAULT_TIMEOUT_MS) / 1000

    first_mark: object = None  # what the caller named its first exchange by (check's evidence)
    end_mark: object = None  # ... its EndTxn

    def row(self) -> dict:
        return {
            "transactional_id": self.transactional_id,
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "client": self.client,
            "start": self.start,
            "end": self.end,
            "duration_ms": None if self.end is None else round((self.end - self.start) * 1000, 3),
            "outcome": self.outcome,
            "error": self.error,
            "timeout_ms": self.timeout_ms,
            "partitions": [{"topic": t, "partition": p} for t, p in sorted(self.partitions)],
            "records": self.records,
            "offsets_committed": self.offsets,
        }


@record
class HeldBack:
    """A read_committed consumer's partition: how far its last stable offset lagged."""

    client_id: str | None
    client: str
    topic: str
    partition: int
    fetches: int = 0
    first_gap: int = 0
    max_gap: int = 0
    last_gap: int = 0

    def row(self) -> dict:
        return {
            "client_id": self.client_id,
            "client": self.client,
            "topic": self.topic,
            "partition": self.partition,
            "fetches": self.fetches,
            "max_held_back": self.max_gap,
            "last_held_back": self.last_gap,
            "growing": self.last_gap > self.first_gap,
        }


class TxnTracker:
    """The consumer: every transaction and every read_committed consumer held back."""

    def __init__(self, topic_ids: dict[str, str] | None = None, bounds: Bounds = DEFAULT_BOUNDS) -> None:
        self.topic_ids = topic_ids
        self.open: dict[str, Transaction] = {}
        # the transactional ids' timeouts and the held-back consumers let go past the bounds
        # (unused longer than their idle time, the longest idle past their maximum), counted
        self.evictions = Evictions()
        self.expiry = Expiry("transactional_ids", self._forget_txn, self.evictions, bounds)
        self.held_expiry = Expiry("held_back", self._forget_held, self.evictions, bounds)
        self.done_: list[Transaction] = []
        self.finished = 0
        self.outcomes: dict[str, int] = {}  # finished transactions by outcome (those let go too)
        self.timeouts: dict[str, int] = {}
        self.held: dict[tuple, HeldBack] = {}
        self.last_ts = 0.0
        self._mark: object = None  # the mark of the exchange being applied
        self.on_finish: Callable[[Transaction], None] | None = None  # told each ended transaction
        self.done_kept = DONE_KEPT
        self.ended: list[dict] | None = None  # (live, :meth:`follow`) rows ended since :meth:`news`
        self.open_kept: int | None = None  # (live) transactional ids open at once
        self.dropped_open = 0  # open transactions let go (open_kept), never told
        self.hanging_told: set[str] = set()  # (live) open transactions told hanging

    # -- feeding ------------------------------------------------------------------------------------
    def event(self, ev) -> None:
        f = self.facts(ev)
        if f is not None:
            self.apply(f)

    def facts(self, ev) -> tuple | None:  # noqa: C901 - one case per API
        """What an exchange tells the transactions, as plain values (None: nothing)."""
        if type(ev) is not Exchange or ev.api_key not in _KEYS or ev.request is None:
            return None
        req = ev.request.body
        resp = ev.response.body if ev.response is not None else None
        if req is None:
            return None
        key = ev.api_key
        if key == ApiKey.PRODUCE:
            if not req.get("transactional_id"):
                return None
        elif key == ApiKey.FETCH and (req.get("isolation_level") != 1 or resp is None):
            return None
        t = ev.request.frame.ts_first
        answered = ev.response.frame.ts_first if ev.response is not None else None
        client = addresses(ev.conn)[0]
        err = resp.get("error_code") if resp is not None and key == ApiKey.END_TXN else None
        if key == ApiKey.INIT_PRODUCER_ID:
            txn = req.get("transactional_id")
            if not txn:
                return None
            return (INIT, t, txn, req.get("transaction_timeout_ms"))
        if key == ApiKey.ADD_PARTITIONS_TO_TXN:
            out = []
            if req.get("v3_and_below_transactional_id"):
                parts = [(r.name, r.topic_id, p) for r in topic_refs(ev.request) for p, _ in r.partitions]
                out.append(
                    (
                        req.get("v3_and_below_transactional_id"),
                        req.get("v3_and_below_producer_id"),
                        req.get("v3_and_below_producer_epoch"),
                        parts,
                    )
                )
            for x in req.elements("transactions"):
                if x.get("verify_only"):
                    continue  # a broker asking the coordinator (KIP-890 v1): not the client adding
                parts = [
                    (tp.get("name"), None, p.value)
                    for tp in x.elements("topics")
                    for p in tp.elements("partitions")
                ]
                out.append((x.get("transactional_id"), x.get("producer_id"), x.get("producer_epoch"), parts))
            return (ADD, t, client, out) if out else None
        if key == ApiKey.ADD_OFFSETS_TO_TXN:
            txn = req.get("transactional_id")
            return (
                (OFFSETS, t, client, txn, req.get("producer_id"), req.get("producer_epoch")) if txn else None
            )
        if key == ApiKey.TXN_OFFSET_COMMIT:
            txn = req.get("transactional_id")
            if not txn or resp is None:
                return None
            ok = {
                (r.name, r.topic_id, p)
                for r in topic_refs(ev.response)
                for p, f in r.partitions
                if f is not None and f.get("error_code") == ErrorCode.NONE
            }
            offsets = [
                ((r.name, r.topic_id, p), f.get("committed_offset"))
                for r in topic_refs(ev.request)
                for p, f in r.partitions
                if f is not None and (r.name, r.topic_id, p) in ok
            ]
            return (
                COMMIT,
                t,
                client,
                txn,
                req.get("producer_id"),
                req.get("producer_epoch"),
                req.get("group_id"),
                offsets,
            )
        if key == ApiKey.END_TXN:
            txn = req.get("transactional_id")
            if not txn or err is None or answered is None:
                return None
            return (END, answered, txn, bool(req.get("committed")), err)
        if key == ApiKey.PRODUCE:
            txn = req.get("transactional_id")
            if not txn:
                return None
            batches = []
            for pp in produced(ev):
                n = pid = epoch = None
                for b in pp.batches:
                    if b.get("transactional"):
                        n = (n or 0) + (b.get("record_count") or 0)
                        pid, epoch = b.get("producer_id"), b.get("producer_epoch")
                if n is not None:
                    batches.append((pp.ref, pid, epoch, n, pp.error, pp.base_offset))
            return (PRODUCE, t, client, txn, batches) if batches else None
        # Fetch (read_committed, answered): the partitions whose last stable offset lags
        gaps = []
        for fp in fetched(ev).answered:
            hw, lso = fp.high_watermark, fp.last_stable_offset
            if fp.error == ErrorCode.NONE and hw is not None and lso is not None and hw >= 0 and lso >= 0:
                gaps.append((fp.ref, hw - lso))
        return (HELD, answered or t, client, ev.client_id, gaps) if gaps else None

    def apply(self, facts: tuple, mark: object = None) -> None:  # noqa: C901 - one case per kind
        """One exchange's :meth:`facts`; ``mark``: kept as a transaction's first exchange or its
        EndTxn (:attr:`Transaction.first_mark`, :attr:`Transaction.end_mark`)."""
        kind, t = facts[0], facts[1]
        self._mark = mark
        self.last_ts = max(self.last_ts, t)
        if kind == INIT:
            if isinstance(facts[3], int) and facts[3] > 0:
                self.timeouts[facts[2]] = facts[3]
                self.expiry.touch(facts[2], t)
        elif kind == ADD:
            for txn, pid, epoch, parts in facts[3]:
                x = self._begin(txn, pid, epoch, t, facts[2])
                x.partitions.update(topic_of(ref, self.topic_ids) for ref in parts)
        elif kind == OFFSETS:
            self._begin(facts[3], facts[4], facts[5], t, facts[2])
        elif kind == COMMIT:
            _, _, client, txn, pid, epoch, group, offsets = facts
            x = self._begin(txn, pid, epoch, t, client)
            for ref, offset in offsets:
                topic, p = topic_of(ref, self.topic_ids)
                x.offsets.append({"group": group, "topic": topic, "partition": p, "offset": offset})
        elif kind == END:
            _, _, txn, committed, err = facts
            ending = self.open.get(txn)
            if ending is None:
                return  # its start is before the capture: nothing to report of it
            if err != ErrorCode.NONE and is_retriable(err):
                return  # the client asks again
            ending.outcome = "commit" if committed else "abort"
            if err != ErrorCode.NONE:
                ending.error = error_name(err) or f"error {err}"
            ending.end = t
            ending.end_mark = mark
            self._finish(txn)
        elif kind == PRODUCE:
            _, _, client, txn, batches = facts
            for ref, pid, epoch, n, err, base in batches:
                x = self._begin(txn, pid, epoch, t, client)
                tp = topic_of(ref, self.topic_ids)
                x.partitions.add(tp)
                if err == ErrorCode.NONE and isinstance(base, int) and (*tp, base) not in x.written:
                    x.written.add((*tp, base))
                    x.records += n
        else:
            _, _, client, client_id, gaps = facts
            host, ids = host_of(client), self.topic_ids
            for ref, gap in gaps:
                topic, p = (ref[0], ref[2]) if ref[0] else topic_of(ref, ids)
                k = (host, client_id, topic, p)
                h = self.held.get(k)
                if h is None:
                    h = self.held[k] = HeldBack(client_id, client, topic, p, first_gap=gap)
                self.held_expiry.touch(k, t)
                h.fetches += 1
                h.max_gap = max(h.max_gap, gap)
                h.last_gap = gap

    def _begin(self, txn: str, pid, epoch, t: float, client: str) -> Transaction:
        x = self.open.get(txn)
        if x is None:
            x = self.open[txn] = Transaction(
                txn, pid, epoch, t, client, timeout_ms=self.timeouts.get(txn), first_mark=self._mark
            )
            if self.open_kept is not None and len(self.open) > self.open_kept:
                gone = next(iter(self.open))
                del self.open[gone]
                self.hanging_told.discard(gone)
                self.dropped_open += 1
        if isinstance(pid, int) and pid >= 0:
            x.producer_id = pid
        if isinstance(epoch, int) and epoch >= 0:
            x.producer_epoch = epoch
        return x

    def _finish(self, txn: str) -> None:
        x = self.open.pop(txn)
        if self.on_finish is not None:
            self.on_finish(x)
        self.finished += 1
        self.outcomes[x.outcome] = self.outcomes.get(x.outcome, 0) + 1
        self.done_.append(x)
        if len(self.done_) > 2 * self.done_kept:
            del self.done_[: self.done_kept]
        if self.ended is not None:
            self.ended.append(x.row())
            self.hanging_told.discard(txn)

    # -- live ---------------------------------------------------------------------------------------
    def _forget_txn(self, txn) -> None:
        self.timeouts.pop(txn, None)
        self.hanging_told.discard(txn)

    def _forget_held(self, k) -> None:
        self.held.pop(k, None)

    def follow(self, kept: int) -> None:
        """(live) Keep the transactions ended for :meth:`news`; keep ``kept`` finished ones and
        ``kept`` open ones (the oldest opened let go past it, counted in :attr:`dropped_open`)."""
        self.ended = []
        self.done_kept = kept
        self.open_kept = kept

    def news(self) -> list[dict]:
        """The rows of the transactions ended since the last call (as :meth:`transactions`)."""
        out = self.ended or []
        if self.ended is not None:
            self.ended = []
        return out

    def hanging(self, now: float) -> list[dict]:
        """The open transactions that went past their timeout since the last call, each once
        (as :meth:`transactions` gives a hanging one)."""
        out = []
        for txn, x in self.open.items():
            if txn not in self.hanging_told and x.hanging_at(now):
                self.hanging_told.add(txn)
                out.append(x.row() | {"outcome": "hanging"})
        return out

    # -- what it found ---------------------------------------------------------------------------------
    def transactions(self, now: float | None = None) -> list[dict]:
        """Every transaction, the finished and those open at ``now`` (the capture's end): hanging
        when open past its timeout."""
        now = self.last_ts if now is None else now
        rows = [x.row() for x in self.done_]
        for x in self.open.values():
            row = x.row()
            row["outcome"] = "hanging" if x.hanging_at(now) else "open"
            rows.append(row)
        return sorted(rows, key=lambda r: (r["start"], r["transactional_id"]))

    def unfinished(self, now: float | None = None) -> dict[str, int]:
        """The open transactions at ``now`` (the capture's end): ``hanging`` past their timeout,
        else ``open`` (as :meth:`transactions` gives them)."""
        now = self.last_ts if now is None else now
        out = {"hanging": 0, "open": 0}
        for x in self.open.values():
            out["hanging" if x.hanging_at(now) else "open"] += 1
        return out

    def held_back(self) -> list[dict]:
        return [
            h.row()
            for _, h in sorted(self.held.items(), key=lambda kv: kv[0][1:] + (kv[0][0],))
            if h.max_gap > 0
        ]
