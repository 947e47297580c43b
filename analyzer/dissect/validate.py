"""Record batch validation as Apache Kafka's brokers do it, on a decoded Produce request.

Kafka's ``LogValidator.validateBatch`` (and ``DefaultRecordBatch`` while iterating) rejects a
client's batch whose bytes parse but whose header does not hold together. Each such batch is a
WARNING on the request (the bytes decode; the broker answers INVALID_RECORD), reported by the
``kafka.invalid-batches`` rule:

* ``records.empty_batch``: record_count 0 ("Invalid reported count for record batch");
* ``records.bad_offset_range``: last_offset_delta is not record_count - 1 ("Inconsistent batch
  offset range"), so the offsets the broker assigns would overlap the next batch's;
* ``records.bad_offset_delta``: the records' offset deltas are not 0..n-1 in order (inner offsets
  must be contiguous);
* ``records.bad_timestamp``: a CreateTime batch whose max_timestamp is before its
  base_timestamp, or a record timestamp outside the batch's [base, max] range.

The last two read the records: from the decoded rows when record bodies are decoded, else by a
scan of the record headers of uncompressed batches (compressed ones are checked only when their
bodies are decoded: decompressing every produced batch is the cost ``--records`` opts into).
* ``records.client_control_batch``: "Clients are not allowed to write control records";
* ``records.mixed_magic``: a partition's batches with different magic bytes;
* ``records.produce_batches``: a partition of a Produce v3+ request that holds other than exactly
  one magic 2 batch (``ProduceRequest.validateRecords``);
* ``records.transactional_without_id``: a transactional batch in a request without a
  transactional_id;
* ``records.bad_sequence``: a batch with a producer id but a negative base sequence ("Invalid
  sequence number"). Sequence continuity across requests needs the whole capture: see
  :mod:`analyzer.session.sequences`.

A batch whose CRC does not match is not validated: the broker rejects it first
(``ensureValid``), and the CRC finding says so. Only Produce requests are checked: a Fetch
response legitimately carries batches of compacted topics, whose offset deltas have holes.
Sans-IO, never raises on any tree.
"""

from __future__ import annotations

from analyzer.dissect.records_common import Malformed, varint
from analyzer.dissect.records_view import BatchField
from analyzer.issues import (
    RECORDS_BAD_OFFSET_DELTA,
    RECORDS_BAD_OFFSET_RANGE,
    RECORDS_BAD_SEQUENCE,
    RECORDS_BAD_TIMESTAMP,
    RECORDS_CLIENT_CONTROL_BATCH,
    RECORDS_EMPTY_BATCH,
    RECORDS_MIXED_MAGIC,
    RECORDS_PRODUCE_BATCHES,
    RECORDS_TRANSACTIONAL_WITHOUT_ID,
)
from analyzer.model import Field, Issue


def produce_partitions(body: Field) -> list[tuple[str, int | None, Field]]:
    """(topic name or id, partition index, records Field) of each partition of a Produce request
    that has records."""
    out: list[tuple[str, int | None, Field]] = []
    # one pass over each struct's fields (Field.child per name costs a scan each, per request)
    for td in body.children or ():
        if td.name != "topic_data":
            continue
        for t in td.children or ():
            name = tid = pd = None
            for x in t.children or ():
                n = x.name
                if n == "name":
                    name = x.value
                elif n == "topic_id":
                    tid = x.value
                elif n == "partition_data" and pd is None:
                    pd = x
            topic = name or tid or "?"
            for p in (pd.children or ()) if pd is not None else ():
                index = rec = None
                for x in p.children or ():
                    if x.name == "index":
                        index = x.value
                    elif x.name == "records" and rec is None:
                        rec = x
                if rec is not None and rec.children:
                    out.append((topic, index, rec))
        break
    return out


def _where(topic: str, partition: int | None, batch: Field) -> str:
    return f"{topic}-{partition} batch at offset {batch.offset}"


def _records_of(batch: Field) -> tuple[Field | None, bool]:
    """The batch's scanned ``records`` Field (RecordsField) and whether it is decompressed."""
    for c in batch.tail if type(batch) is BatchField else batch.children or ():
        if c.name == "records" and hasattr(c, "rows"):
            return c, False
        if c.type == "decompressed" and c.children:
            inner = c.children[0]
            if hasattr(inner, "rows"):
                return inner, True
    return None, False


def validate_produce(body: Field, version: int | None = None, payload=None) -> list[Issue]:
    """The LogValidator findings of every v2 batch of a Produce request body (``version``: the
    request's, for the checks that depend on it; ``payload``: the frame payload, to scan the
    records of uncompressed batches whose bodies were not decoded)."""
    issues: list[Issue] = []
    txn_id = body.get("transactional_id")
    for topic, partition, rec in produce_partitions(body):
        entries = [e for e in rec.children or () if isinstance(e.value, dict) and e.type != "partial"]
        # one magic 2 batch (the usual partition) is checked without a set or a generator
        if (
            version is not None
            and version >= 3
            and entries
            and (len(entries) != 1 or entries[0].value.get("magic") != 2)
        ):
            magics = {e.value.get("magic") for e in entries}
            issues.append(
                RECORDS_PRODUCE_BATCHES(
                    f"Produce v{version} partition {topic}-{partition} holds {len(entries)} "
                    f"entr{'y' if len(entries) == 1 else 'ies'} of magic "
                    f"{'/'.join(str(m) for m in sorted(m for m in magics if m is not None))}: "
                    "v3+ allows exactly one magic 2 batch per partition",
                    rec.offset,
                    f"{topic}-{partition}",
                )
            )
        if txn_id is None:
            for e in entries:
                if e.value.get("transactional"):  # the first transactional batch
                    issues.append(
                        RECORDS_TRANSACTIONAL_WITHOUT_ID(
                            "a transactional batch in a Produce request without a transactional_id",
                            e.offset + 21,
                            _where(topic, partition, e),
                        )
                    )
                    break
        magic0 = None
        for entry in entries:
            summary = entry.value
            if summary.get("crc_ok") is False:
                continue  # a batch whose CRC fails is rejected before validation (ensureValid)
            magic = summary.get("magic")
            if magic0 is None:
                magic0 = magic
            elif magic != magic0 and (version is None or version < 3):  # v3+: produce_batches
                issues.append(
                    RECORDS_MIXED_MAGIC(
                        f"batch magic {magic} is not the magic {magic0} of the partition's first batch",
                        entry.offset + 16,
                        _where(topic, partition, entry),
                    )
                )
            if magic == 2 and entry.type == "record_batch":
                _batch(entry, summary, topic, partition, issues, payload)
    return issues


def _batch(entry: Field, s: dict, topic: str, partition: int | None, issues: list[Issue], payload) -> None:
    at = entry.offset
    n = lod = None
    has_count = False
    if type(entry) is BatchField:  # the header's values, without building its Fields
        n, lod, has_count = entry.header[12], entry.header[6], True
    else:
        for x in entry.children or ():
            if x.name == "record_count" and not has_count:
                n, has_count = x.value, True
            elif x.name == "last_offset_delta" and lod is None:
                lod = x.value
    if not has_count:
        n = s.get("record_count")
    pid, seq = s.get("producer_id"), s.get("base_sequence")
    ok = (
        not s.get("control")
        and n is not None
        and n > 0
        and (lod is None or lod == n - 1)
        and not (pid is not None and pid >= 0 and seq is not None and seq < 0)
    )
    where = "" if ok else _where(topic, partition, entry)
    if s.get("control"):
        issues.append(
            RECORDS_CLIENT_CONTROL_BATCH(
                "a control batch in a Produce request: clients may not write control records",
                at + 21,
                where,
            )
        )
    if n is not None and n == 0:
        issues.append(
            RECORDS_EMPTY_BATCH(
                f"record_count 0 (last_offset_delta {lod}): Kafka rejects a batch without records",
                at + 57,
                where,
            )
        )
    elif n is not None and n > 0 and lod is not None and lod != n - 1:
        issues.append(
            RECORDS_BAD_OFFSET_RANGE(
                f"last_offset_delta {lod} with {n} record{'s' if n != 1 else ''} (must be {n - 1}): "
                f"offsets {s.get('base_offset')}..{(s.get('base_offset') or 0) + lod} "
                f"{'overlap the next batch' if lod < n - 1 else 'leave a hole'}",
                at + 23,
                where,
            )
        )
    if pid is not None and pid >= 0 and seq is not None and seq < 0:
        issues.append(
            RECORDS_BAD_SEQUENCE(
                f"producer id {pid} with base_sequence {seq}: an idempotent batch needs a sequence",
                at + 53,
                where,
            )
        )
    create_time = not (s.get("attributes") or 0) & 0x08
    bts, mts = s.get("base_timestamp"), s.get("max_timestamp")
    if create_time and bts is not None and mts is not None and bts != -1 and mts != -1 and mts < bts:
        issues.append(
            RECORDS_BAD_TIMESTAMP(
                f"max_timestamp {mts} is {bts - mts} ms before base_timestamp {bts}",
                at + 35,
                where or _where(topic, partition, entry),
            )
        )
        return
    ts_base = bts if create_time and bts != -1 else None
    rf, decompressed = _records_of(entry)
    if rf is not None:
        rows = _rows_of(rf, decompressed)
    elif payload is not None and not (s.get("attributes") or 0) & 7 and n:
        # record bodies not decoded (the default): an uncompressed batch's records are scanned
        # for their offset and timestamp deltas only
        rows = _scan(payload, at + 61, at + entry.length, n)
    else:
        return
    _check_records(rows, ts_base, mts, (topic, partition, entry), issues)


def _rows_of(rf, decompressed: bool):
    """(index, ts delta, its frame offset, offset delta, its frame offset) of decoded records."""
    base = rf.rbase
    anchor = rf.batch.ioff
    for i, row in enumerate(rf.rows):
        tsd, tse, od = row[4], row[5], row[6]
        if od is None:
            return  # the record did not parse: the decoder said so
        if decompressed:
            yield i, tsd, anchor, od, anchor
        else:
            yield i, tsd, base + row[1] + 1, od, base + tse


def _scan(buf, p: int, end: int, count: int):
    """The same tuples for an uncompressed batch, read straight from the frame: each record's
    length, attributes, timestamp delta and offset delta. A record that does not parse ends the
    scan (decoding record bodies, e.g. ``--records``, reports it)."""
    for i in range(count):
        try:
            length, q = varint(buf, p, end)
            rend = q + length
            if length < 2 or rend > end:
                return
            ts_at = q + 1
            tsd, q = varint(buf, ts_at, rend, 10)
            od, _ = varint(buf, q, rend)
        except Malformed:
            return
        yield i, tsd, ts_at, od, q
        p = rend


def _check_records(rows, bts, mts, place: tuple, issues: list[Issue]) -> None:
    """``place``: (topic, partition, batch), for the issues' where (built for an issue only)."""
    delta_done = ts_done = False
    for i, tsd, ts_at, od, od_at in rows:
        if not delta_done and od != i:
            issues.append(
                RECORDS_BAD_OFFSET_DELTA(
                    f"record {i} has offset delta {od} (expected {i}): offset deltas must be 0..n-1",
                    od_at,
                    f"record {i} of {_where(*place)}",
                )
            )
            delta_done = True
        if not ts_done and bts is not None and tsd is not None:
            t = bts + tsd
            if tsd < 0 or (mts is not None and mts != -1 and t > mts):
                issues.append(
                    RECORDS_BAD_TIMESTAMP(
                        f"record {i} timestamp {t} (delta {tsd}) is outside the batch range [{bts}, {mts}]",
                        ts_at,
                        f"record {i} of {_where(*place)}",
                    )
                )
                ts_done = True
        if delta_done and ts_done:
            return
