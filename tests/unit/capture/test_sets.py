"""Capture sets: rotated pieces of one recording give exactly the analysis of the whole file."""

import io
import json
from contextlib import redirect_stdout

import pytest

from analyzer import cli
from analyzer.capture.sets import MAX_EDGE_GAP, CaptureSet, plan, span
from tests.helpers.captures import cut, cut_splits, project_captures


def export(*args: str) -> tuple[int, list[dict]]:
    buf = io.BytesIO()
    out = io.TextIOWrapper(buf, encoding="utf-8")
    with redirect_stdout(out):
        rc = cli.main(["export", *args])
        out.flush()
    lines = [json.loads(x) for x in buf.getvalue().splitlines()]
    return rc, lines


def comparable(lines: list[dict]) -> list[dict]:
    """Everything but the file name on the first line."""
    return [{k: v for k, v in x.items() if k != "file"} if x["type"] == "capture" else x for x in lines]


CAPS = [p for p in project_captures() if p.suffix == ".pcap"]


@pytest.mark.parametrize("every", [3, 17])
@pytest.mark.parametrize("path", CAPS, ids=lambda p: p.name)
def test_pieces_give_the_whole(path, every, tmp_path):
    pieces = cut(path, every, tmp_path)
    assert len(pieces) > 1
    assert plan([str(p) for p in reversed(pieces)]) == [[str(p) for p in pieces]]
    rc_whole, whole = export(str(path))
    rc_set, stitched = export(*(str(p) for p in pieces))
    assert rc_set == rc_whole
    assert comparable(stitched) == comparable(whole)


def test_a_connection_quiet_through_a_piece_still_joins_the_next(tmp_path):
    # Tansu holds a JoinGroup 3 s (its initial rebalance delay): cut every 4 packets, one piece
    # holds only the other connection's packets, and the next, 2.9 s later, the JoinGroup answer
    path = next(p for p in CAPS if p.name == "tansu-librdkafka-produce-consume-zstd.pcap")
    pieces = cut(path, 4, tmp_path)
    spans = [span(str(p)) for p in pieces]
    edges = [
        (a, b)
        for a, b in zip(spans, spans[1:], strict=False)
        if b.first_ts - a.last_ts > MAX_EDGE_GAP and a.flows.isdisjoint(b.flows)
    ]
    assert edges  # the case: only an earlier piece shares a connection with the next
    assert plan([str(p) for p in reversed(pieces)]) == [[str(p) for p in pieces]]
    _, whole = export(str(path))
    _, stitched = export(*(str(p) for p in pieces))
    assert comparable(stitched) == comparable(whole)


def test_separate_files_break_flows_and_say_so(tmp_path):
    path = next(p for p in CAPS if p.name == "librdkafka-produce-consume-gzip.pcap")
    pieces = [str(p) for p in cut(path, 40, tmp_path)]
    _, whole = export(str(path))
    _, separate = export("--separate", *pieces)
    paired = [x for x in whole if x["type"] == "exchange"]
    broken = [x for x in separate if x["type"] == "exchange"]
    assert len(broken) > len(paired)  # requests and responses on both sides of an edge


def test_overlapping_files_are_not_one_recording(tmp_path):
    a = next(p for p in CAPS if p.name == "librdkafka-produce-consume-gzip.pcap")
    b = next(p for p in CAPS if p.name == "librdkafka-produce-consume-none.pcap")
    pa = cut(a, 10_000, tmp_path)[0]
    # the same recording twice covers the same time: two chains, analysed side by side
    copy = tmp_path / "copy.pcap"
    copy.write_bytes(pa.read_bytes())
    chains = plan([str(pa), str(copy), str(b)])
    assert not any(str(pa) in c and str(copy) in c for c in chains)
    assert sorted(p for c in chains for p in c) == sorted([str(pa), str(copy), str(b)])


def test_packet_numbers_go_on_and_map_back(tmp_path):
    path = CAPS[0]
    pieces = cut(path, 5, tmp_path)
    s = CaptureSet(pieces)
    numbers = [n for n, *_ in s]
    assert numbers == list(range(1, len(numbers) + 1))
    assert s.file_of(1) == (str(pieces[0]), 1)
    assert s.file_of(7) == (str(pieces[1]), 2)


def test_damage_in_one_piece_is_named_and_the_rest_analysed(tmp_path):
    path = next(p for p in CAPS if p.name == "librdkafka-produce-consume-gzip.pcap")
    pieces = cut(path, 50, tmp_path)
    pieces[1].write_bytes(pieces[1].read_bytes()[:-7])  # cut inside its last record
    rc, lines = export(*(str(p) for p in pieces))
    assert rc == 1
    summary = lines[-1]
    issues = summary["capture_issues"]
    assert any(pieces[1].name in i["message"] and i["code"] == "capture.truncated" for i in issues)
    assert sum(1 for x in lines if x["type"] == "exchange") > 40


def test_pcapng_pieces_carry_their_decryption_secrets(tmp_path):
    """A pcapng whose TLS secrets are in Decryption Secrets Blocks, rotated into pieces (each
    with the section header, interfaces and secrets in force): the set gives the key logs to
    the pipeline as one file does, so its TLS exchanges decrypt as the whole file's."""
    from analyzer.model import Exchange
    from analyzer.pipeline import Analysis
    from tests.helpers.captures import CAPTURES

    whole = CAPTURES / "kafka-python-tls-tls13-aes128gcm-dsb.pcapng"
    pieces = cut_splits(whole, 8192, tmp_path)
    assert len(pieces) > 2 and plan(pieces) == [pieces]

    def rows(source) -> list[tuple]:
        a = Analysis(source)
        return [(e.api_key, e.correlation_id, e.conn.id, e.ts) for e in a.events() if type(e) is Exchange]

    want = rows(whole)
    assert len(want) > 10
    assert rows(CaptureSet(pieces)) == want
