"""Records decoding throughput per format and codec, on batches built by kafka-python.

    python bench/bench_records.py [--batches 200] [--records 100] [--value-size 200] [--repeat 3]

For each (magic, codec) it builds one records blob of ``batches`` batches (for magic 0/1: one
compressed wrapper per batch, or ``records`` plain messages when uncompressed) and times
``decode_records`` with ``bodies=True`` (full tree) and ``bodies=False`` (summary path: CRCs and
counts). MB/s is measured on the wire size (compressed bytes); best of ``repeat`` runs.
"""

from __future__ import annotations

import argparse
import random
import struct
import sys
import time

from kafka import codec as kcodec
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from analyzer.dissect.codecs import CODEC_NAMES, xxh32
from analyzer.dissect.records import decode_records


class _XxhashShim:  # kafka-python needs `xxhash` for magic 0 LZ4 only
    class xxh32:  # noqa: N801
        def __init__(self, data):
            self._h = xxh32(bytes(data))

        def digest(self):
            return struct.pack(">I", self._h)


def _value(rnd: random.Random, size: int) -> bytes:
    """JSON-ish text: compresses about 3-5x, like typical event payloads."""
    out = []
    n = 0
    while n < size:
        s = f'{{"id":{rnd.randrange(10**9)},"user":"u{rnd.randrange(5000)}","ok":{rnd.random() < 0.5}}}'
        out.append(s)
        n += len(s)
    return "".join(out).encode()[:size]


def build(magic: int, codec: int, batches: int, records: int, value_size: int) -> bytes:
    rnd = random.Random(42)
    ts = 1_700_000_000_000
    parts = []
    offset = 0
    for _ in range(batches):
        if magic == 2:
            b = DefaultRecordBatchBuilder(2, codec, False, 1000, 0, offset, batch_size=1 << 30)
        else:
            b = LegacyRecordBatchBuilder(magic, codec, batch_size=1 << 30)
        for i in range(records):
            key = b"key-%d" % rnd.randrange(1000)
            headers = [("trace", b"abc")] if magic == 2 else None
            if magic == 2:
                b.append(i, timestamp=ts + i, key=key, value=_value(rnd, value_size), headers=headers)
            else:
                b.append(i, timestamp=ts + i, key=key, value=_value(rnd, value_size))
        buf = bytearray(b.build())
        struct.pack_into(">q", buf, 0, offset + (records - 1 if magic == 1 and codec else 0))
        parts.append(bytes(buf))
        offset += records
    return b"".join(parts)


def bench(data: bytes, bodies: bool, repeat: int) -> tuple[float, int]:
    best = float("inf")
    count = 0
    for _ in range(repeat):
        t = time.perf_counter()
        fields, issues = decode_records(data, 0, bodies=bodies)
        best = min(best, time.perf_counter() - t)
        assert not issues, issues[:3]
        count = sum(f.value["record_count"] for f in fields)
    return best, count


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--records", type=int, default=100)
    ap.add_argument("--value-size", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    kcodec.xxhash = _XxhashShim

    cases = [(2, c) for c in range(5)] + [(1, c) for c in range(4)] + [(0, 0), (0, 3)]
    print(f"{args.batches} batches x {args.records} records, values {args.value_size} bytes", end="")
    print(f"; best of {args.repeat}")
    head = (
        f"{'format':<8} {'codec':<7} {'wire MB':>8} {'records':>8} | {'full rec/s':>11} {'full MB/s':>9}"
        f" | {'summary rec/s':>13} {'summary MB/s':>12}"
    )
    print(head)
    print("-" * len(head))
    for magic, codec in cases:
        data = build(magic, codec, args.batches, args.records, args.value_size)
        mb = len(data) / 1e6
        t_full, n = bench(data, True, args.repeat)
        t_sum, n2 = bench(data, False, args.repeat)
        assert n == n2 == args.batches * args.records, (n, n2)
        print(
            f"{'v' + str(magic):<8} {CODEC_NAMES[codec]:<7} {mb:>8.2f} {n:>8} | {n / t_full:>11,.0f}"
            f" {mb / t_full:>9.1f} | {n / t_sum:>13,.0f} {mb / t_sum:>12.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
