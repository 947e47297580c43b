"""Flip single bytes inside records and inside batch headers of real captured Produce requests:
each flip is exactly one CRC mismatch at the right batch or message, nothing else changes."""

import random

import pytest

from analyzer.dissect.message import Options, decode_request
from analyzer.model import Exchange, Frame
from analyzer.pipeline import Analysis
from tests.helpers.captures import CAPTURES

OPTS = Options(records_bodies=True)
FILES = [
    "librdkafka-produce-consume-none.pcap",
    "librdkafka-produce-consume-zstd.pcap",
    "kafka-python-0.9-none.pcap",
    "kafka-python-0.10.0-none.pcap",
    "kafka-python-0.10.0-gzip.pcap",
    "kafka-python-0.11-snappy.pcap",
    "aiokafka-gzip.pcap",
]
# v2 header fields covered by the CRC whose change breaks nothing else
V2_HEADER = (
    "last_offset_delta",
    "base_timestamp",
    "max_timestamp",
    "producer_id",
    "producer_epoch",
    "base_sequence",
)


def produce_frames(name):
    path = CAPTURES / name
    if not path.exists():
        pytest.skip(f"{name} absent")
    for ev in Analysis(path, OPTS).events():
        if isinstance(ev, Exchange) and ev.api_key == 0 and ev.request is not None:
            yield ev.request


def entries(msg):
    """Top-level batches/messages (not those inside decompressed data: no frame offsets)."""
    for f in msg.body.walk():
        if f.type == "records":
            yield from f.children or ()


def flip_targets(entry):
    """(offset, what) of bytes to flip inside one batch/message, in frame coordinates."""
    out = []
    compressed = any(c.type == "decompressed" for c in entry.children)
    if entry.name == "record_batch":
        for c in entry.children:
            if c.name in V2_HEADER:
                out.append((c.offset + c.length - 1, c.name))
        if not compressed:
            for r in entry.walk():
                if r.name == "value" and r.type == "bytes" and r.value:
                    out.append((r.offset + r.length - 1, "record value"))
                    break
    else:
        for c in entry.children:
            if c.name == "value" and c.value and not compressed:
                out.append((c.offset + c.length - 1, "message value"))
            if c.name == "timestamp":
                out.append((c.offset + 7, "message timestamp"))
    return out


def summary(msg):
    return [(f.name, f.offset, f.length) for f in msg.body.walk() if f.type in ("string", "int16", "int32")]


@pytest.mark.parametrize("name", FILES)
def test_each_flip_is_exactly_one_crc_mismatch_at_the_right_place(name):
    rnd = random.Random(name)
    checked = 0
    for req in produce_frames(name):
        assert not [i for i in req.issues if i.code == "records.crc_mismatch"]
        payload = bytes(req.frame.payload)
        for entry in entries(req):
            targets = flip_targets(entry)
            for off, what in rnd.sample(targets, min(3, len(targets))):
                bad = bytearray(payload)
                bad[off] ^= 1 << rnd.randrange(8)
                f = Frame(1, 0, 0, len(bad), bytes(bad), 0.0, 0.0, (1,), "request")
                m = decode_request(f, OPTS)
                crc = [i for i in m.issues if i.code == "records.crc_mismatch"]
                assert len(crc) == 1, (what, m.issues)
                assert crc[0].offset == entry.offset, (what, crc[0])
                assert [i for i in m.issues if i is not crc[0]] == [i for i in req.issues], what
                assert m.body.get("acks") == req.body.get("acks")
                checked += 1
    assert checked >= 3
