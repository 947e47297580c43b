"""Compare with tshark (the reference where it decodes): frames per connection and, for every
request tshark decodes, the same (api key, version, correlation id) paired the same way."""

import shutil
import subprocess
from collections import Counter

import pytest

from analyzer.dissect import schema
from analyzer.events import ConnectionEnd
from analyzer.model import Exchange
from analyzer.pipeline import Analysis
from tests.helpers.captures import project_captures, public_captures

pytestmark = [pytest.mark.tshark, pytest.mark.skipif(shutil.which("tshark") is None, reason="no tshark")]

CAPTURES = public_captures() + project_captures()


def ours(path):
    """Our connections, exchanges and the broker ports we found (what tshark is told to decode)."""
    conns = []
    exchanges = []
    for ev in Analysis(path).events():
        if isinstance(ev, ConnectionEnd):
            conns.append(ev.conn)
        elif isinstance(ev, Exchange):
            exchanges.append(ev)
    ports = {c.broker.port for c in conns if c.client_direction is not None}
    return conns, exchanges, ports


def tshark_fields(path, ports, display_filter, fields, two_pass=False) -> list[list[str]]:
    """tshark's field values per packet (``|``-separated, occurrences joined with ``,``), Kafka
    dissected on every broker port."""
    args = ["tshark", *(["-2"] if two_pass else []), "-r", str(path), "-Y", display_filter, "-T", "fields"]
    args += ["-E", "separator=|", "-E", "occurrence=a", "-E", "aggregator=,"]
    for p in sorted(ports):
        args += ["-d", f"tcp.port=={p},kafka"]
    for f in fields:
        args += ["-e", f]
    out = subprocess.run(args, capture_output=True, text=True, timeout=300, check=True).stdout
    return [line.split("|") for line in out.splitlines()]


def tshark_pdus(path, ports):
    fields = [
        "ip.src",
        "ipv6.src",
        "tcp.srcport",
        "ip.dst",
        "ipv6.dst",
        "tcp.dstport",
        "kafka.len",
        "kafka.correlation_id",
        "kafka.request_key",
        "kafka.request.version",
        "_ws.malformed",
    ]
    rows = []
    for src, src6, sport, dst, dst6, dport, lens, corrs, keys, vers, malformed in tshark_fields(
        path, ports, "kafka", fields
    ):
        rows.append(
            (
                (src or src6, int(sport)),
                (dst or dst6, int(dport)),
                lens.split(","),
                corrs.split(","),
                keys.split(",") if keys else [],
                vers.split(",") if vers else [],
                bool(malformed),
            )
        )
    return rows


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_frames_per_connection_equal_tshark_pdus(path):
    conns, exchanges, ports = ours(path)
    rows = tshark_pdus(path, ports)
    theirs = Counter()
    for src, dst, lens, *_ in rows:
        theirs[frozenset((src, dst))] += len(lens)
    mine = Counter()
    for c in conns:
        mine[frozenset(((c.a.ip, c.a.port), (c.b.ip, c.b.port)))] += sum(c.frames)
    assert mine == theirs


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_requests_tshark_decodes_are_ours_too(path):
    conns, exchanges, ports = ours(path)
    theirs = Counter()
    unknown = Counter()  # tshark has no raw-SASL mode: it reads raw tokens as requests of unknown APIs
    for src, _dst, _lens, corrs, keys, vers, _malformed in tshark_pdus(path, ports):
        for corr, key, ver in zip(corrs, keys, vers, strict=False):
            if schema.version_range(int(key)) is None:
                unknown[src] += 1
            else:
                theirs[(src, int(key), int(ver), int(corr))] += 1
    mine = Counter()
    raw_tokens = Counter()
    for e in exchanges:
        if e.request is not None:
            c = e.conn
            if e.api_key is None:
                raw_tokens[(c.client.ip, c.client.port)] += 1
            mine[((c.client.ip, c.client.port), e.api_key, e.api_version, e.correlation_id)] += 1
    missing = theirs - mine
    assert not missing, f"requests tshark decodes that we do not: {missing}"
    # every "request" tshark could not place is a raw SASL token we decoded as such
    assert unknown == raw_tokens


def tshark_links(path, ports):
    """(request frame number, response frame number, correlation id) tshark pairs (two-pass)."""
    fields = ["frame.number", "kafka.request_frame", "kafka.correlation_id"]
    links = set()
    for frame, reqs, corrs in tshark_fields(path, ports, "kafka.request_frame", fields, two_pass=True):
        for req, corr in zip(reqs.split(","), corrs.split(","), strict=False):
            if req:
                links.add((int(req), int(frame), int(corr)))
    return links


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_exchanges_pair_like_tshark(path):
    conns, exchanges, ports = ours(path)
    theirs = tshark_links(path, ports)
    mine = {
        (e.request.frame.packet_indexes[-1], e.response.frame.packet_indexes[-1], e.correlation_id)
        for e in exchanges
        if e.request is not None and e.response is not None
    }
    missing = theirs - mine
    assert not missing, f"pairs tshark makes that we do not: {sorted(missing)[:10]}"
