"""Producer captures made from bundled ones: a batch sent again (a retry, or a duplicate)."""

from __future__ import annotations

from pathlib import Path

from analyzer.dissect.constants import ApiKey
from tests.helpers.capture_patch import patch_batch_field


def resend_batch(path: Path, out: Path) -> Path:
    """``out``: librdkafka-txn.pcap (``path``) with the Produce of partition 1's sequence 1
    (exchange 24) sent as sequence 0 (its batch's CRC-32C recomputed): the batch of exchange 20
    sent again, on the same connection, after its first attempt was written at offset 0; the
    broker's answer writes it again at offset 2."""

    def select(ex) -> bool:
        if ex.api_key != ApiKey.PRODUCE:
            return False
        seqs = [f.value for f in ex.request.body.walk() if f.name == "base_sequence"]
        parts = [f.value for f in ex.request.body.walk() if f.name == "index"]
        return seqs == [1] and parts == [1]

    assert patch_batch_field(path, out, select, "base_sequence", (0).to_bytes(4, "big")) == 24
    return out
