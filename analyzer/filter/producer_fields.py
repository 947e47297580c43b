"""The producer.* and txn.* display-filter fields: what one exchange says of its producer and its
transaction, read from that exchange alone (so a filter gives the same answer however the
exchanges are split among processes).

* ``producer.id``, ``producer.epoch``: the producer id and epoch of a Produce request's v2 batches,
  of an InitProducerId (the request's, for a re-initialisation, and the answer's), of the
  transaction APIs (AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn); -1 (none, a
  producer that is not idempotent) is no value;
* ``producer.sequence``: the base sequences of a Produce request's v2 batches (-1: none);
* ``producer.transactional_id``: the transactional id a producer's request carries (Produce,
  InitProducerId and the transaction APIs);
* ``txn.id``: the same, and the transactional ids a FindCoordinator looks up (key type 1) or
  DescribeTransactions asks for (as ``group.id`` adds the group lookups to ``group``);
* ``txn.committed``: EndTxn's committed flag (false: an abort).
"""

from __future__ import annotations

from analyzer.dissect.constants import ApiKey
from analyzer.model import Exchange, Field

# the transaction APIs a producer sends, whose requests name its producer id and epoch
_TXN_APIS = frozenset(
    (
        ApiKey.INIT_PRODUCER_ID,
        ApiKey.ADD_PARTITIONS_TO_TXN,
        ApiKey.ADD_OFFSETS_TO_TXN,
        ApiKey.TXN_OFFSET_COMMIT,
        ApiKey.END_TXN,
    )
)
_PID_NAMES = frozenset(("producer_id", "v3_and_below_producer_id"))
_EPOCH_NAMES = frozenset(("producer_epoch", "v3_and_below_producer_epoch"))
_TXN_NAMES = frozenset(("transactional_id", "v3_and_below_transactional_id"))


def _produce_batches(ex: Exchange) -> list[dict]:
    """The v2 batch summaries of a Produce request (not those inside legacy messages)."""
    req = ex.request
    if ex.api_key != ApiKey.PRODUCE or req is None or req.body is None:
        return []
    out: list[dict] = []
    for t in req.body.elements("topic_data"):
        for p in t.elements("partition_data"):
            for x in p.children or ():
                if x.type == "records":
                    out.extend(
                        b.value
                        for b in x.children or ()
                        if b.name == "record_batch" and isinstance(b.value, dict)
                    )
    return out


def _named(body: Field | None, names: frozenset[str]) -> list:
    """The values of the fields called one of ``names`` anywhere in ``body`` (not in records)."""
    out: list = []
    stack = [body] if body is not None else []
    while stack:
        f = stack.pop()
        if f.name in names and f.value is not None and not f.children:
            out.append(f.value)
        elif f.children and f.type != "records":
            stack.extend(reversed(f.children))
    return out


def _ids(ex: Exchange, names: frozenset[str], summary: str) -> list[int]:
    out: list = [b.get(summary) for b in _produce_batches(ex)]
    if ex.api_key in _TXN_APIS:
        out += _named(ex.request.body if ex.request is not None else None, names)
        if ex.api_key == ApiKey.INIT_PRODUCER_ID and ex.response is not None and ex.response.body is not None:
            out.append(ex.response.body.get(summary))
    return [v for v in dict.fromkeys(out) if isinstance(v, int) and not isinstance(v, bool) and v >= 0]


def producer_ids(ex: Exchange) -> list[int]:
    return _ids(ex, _PID_NAMES, "producer_id")


def producer_epochs(ex: Exchange) -> list[int]:
    return _ids(ex, _EPOCH_NAMES, "producer_epoch")


def producer_sequences(ex: Exchange) -> list[int]:
    out = [b.get("base_sequence") for b in _produce_batches(ex)]
    return [v for v in out if isinstance(v, int) and v >= 0]


def transactional_ids(ex: Exchange) -> list[str]:
    req = ex.request
    if req is None or req.body is None or ex.api_key not in _TXN_APIS | {ApiKey.PRODUCE}:
        return []
    if ex.api_key == ApiKey.PRODUCE:
        t = req.body.get("transactional_id")
        return [t] if isinstance(t, str) and t else []
    return [t for t in dict.fromkeys(_named(req.body, _TXN_NAMES)) if isinstance(t, str) and t]


def txn_ids(ex: Exchange) -> list[str]:
    out = transactional_ids(ex)
    req = ex.request
    body = req.body if req is not None else None
    if body is None:
        return out
    if ex.api_key == ApiKey.FIND_COORDINATOR and body.get("key_type") == 1:
        key = body.get("key")
        if isinstance(key, str) and key:
            out.append(key)
        out.extend(c.value for c in body.elements("coordinator_keys") if isinstance(c.value, str))
    elif ex.api_key == ApiKey.DESCRIBE_TRANSACTIONS:
        out.extend(c.value for c in body.elements("transactional_ids") if isinstance(c.value, str))
    return list(dict.fromkeys(out))


def txn_committed(ex: Exchange) -> bool | None:
    req = ex.request
    if ex.api_key != ApiKey.END_TXN or req is None or req.body is None:
        return None
    v = req.body.get("committed")
    return v if isinstance(v, bool) else None
