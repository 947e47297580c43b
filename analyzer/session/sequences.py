"""Idempotent producers' base sequences across the Produce requests of a capture (sans-IO).

A broker keeps, per producer id, epoch and partition, the sequence it expects next and the last
five batches it appended (``ProducerStateManager``): a batch whose base sequence is the next one
is appended, one equal to a cached batch's is a retried duplicate, anything else is answered
OUT_OF_ORDER_SEQUENCE_NUMBER. This tracker does the same over the requests it sees, in the order
their exchanges are made, and warns ``records.bad_sequence`` on a gap or a step back that is not a
retry. The first batch seen of a producer and partition (the capture may start mid-stream) and a
new epoch start afresh. Memory is bounded: past :data:`MAX_KEYS` producer-partitions no new one
is tracked.
"""

from __future__ import annotations

from collections import deque

from analyzer.dissect.validate import produce_partitions
from analyzer.issues import RECORDS_BAD_SEQUENCE
from analyzer.model import Message

MAX_KEYS = 100_000
_WRAP = 1 << 31  # sequences wrap from Int32.MaxValue to 0
_CACHED = 5  # batches a broker remembers per producer-partition for duplicate detection


class SequenceTracker:
    __slots__ = ("state",)

    def __init__(self) -> None:
        # (producer id, epoch, topic, partition) -> [next expected sequence, recent base sequences]
        self.state: dict[tuple, list] = {}

    def check(self, req: Message) -> None:
        """Check the v2 batches of a Produce request; issues go on the request."""
        body = req.body
        if body is None:
            return
        for topic, partition, rec in produce_partitions(body):
            for entry in rec.children or ():
                s = entry.value
                if entry.type != "record_batch" or not isinstance(s, dict) or s.get("crc_ok") is False:
                    continue
                pid, epoch, seq = s.get("producer_id"), s.get("producer_epoch"), s.get("base_sequence")
                count = s.get("record_count") or 0
                if pid is None or pid < 0 or seq is None or seq < 0 or count <= 0:
                    continue
                key = (pid, epoch, topic, partition)
                st = self.state.get(key)
                nxt = seq + count
                if nxt >= _WRAP:
                    nxt -= _WRAP
                if st is None:
                    if len(self.state) < MAX_KEYS:
                        self.state[key] = [nxt, deque((seq,), maxlen=_CACHED)]
                    continue
                expected, recent = st
                if seq == expected:
                    st[0] = nxt
                    recent.append(seq)
                    continue
                if seq in recent:
                    continue  # a retry of a batch already sent: the broker answers it as a duplicate
                how = "skips" if _ahead(seq, expected) else "goes back before"
                req.issues.append(
                    RECORDS_BAD_SEQUENCE(
                        f"producer {pid} epoch {epoch} on {topic}-{partition}: base_sequence {seq} "
                        f"{how} the expected {expected} (previous batch "
                        f"{recent[-1]}..{(expected - 1) % _WRAP})",
                        entry.offset + 53,
                        f"{topic}-{partition} batch at offset {entry.offset}",
                    )
                )
                st[0] = nxt  # go on from what the producer sent: one warning per break
                recent.append(seq)


def _ahead(seq: int, expected: int) -> bool:
    d = (seq - expected) % _WRAP
    return d < _WRAP // 2
