"""Compare with tshark (the reference where it decodes): frames per connection and, for every
request tshark decodes, the same (api key, version, correlation id) paired the same way."""

import functools
import shutil
import subprocess
from collections import Counter
from typing import NamedTuple

import pytest

from analyzer.dissect import schema
from analyzer.events import ConnectionEnd
from analyzer.model import Exchange
from analyzer.pipeline import Analysis
from tests.helpers.captures import project_captures, public_captures

pytestmark = [pytest.mark.tshark, pytest.mark.skipif(shutil.which("tshark") is None, reason="no tshark")]

# each capture's three tests form one xdist group (one worker): what they compare, ours (as the
# few counts compared) and tshark's, is computed once per capture (functools.cache)
CAPTURES = [
    pytest.param(p, id=p.name, marks=pytest.mark.xdist_group(f"tshark-{p.name}"))
    for p in public_captures() + project_captures()
]


class Ours(NamedTuple):
    """What the tests compare with tshark, from one analysis of a capture."""

    frames: Counter  # frames per connection (its two endpoints)
    requests: Counter  # (client, api key, version, correlation id) of each request
    raw_tokens: Counter  # raw SASL tokens (requests of no API) per client
    pairs: frozenset  # (request's last packet, response's last packet, correlation id)
    ports: frozenset  # the broker ports we found (what tshark is told to decode)


@functools.cache
def ours(path) -> Ours:
    """Our side of the comparisons (small: cached for the capture's three tests)."""
    frames: Counter = Counter()
    requests: Counter = Counter()
    raw_tokens: Counter = Counter()
    pairs = set()
    ports = set()
    for ev in Analysis(path).events():
        if isinstance(ev, ConnectionEnd):
            c = ev.conn
            frames[frozenset(((c.a.ip, c.a.port), (c.b.ip, c.b.port)))] += sum(c.frames)
            if c.client_direction is not None:
                ports.add(c.broker.port)
        elif isinstance(ev, Exchange) and ev.request is not None:
            client = (ev.conn.client.ip, ev.conn.client.port)
            if ev.api_key is None:
                raw_tokens[client] += 1
            requests[(client, ev.api_key, ev.api_version, ev.correlation_id)] += 1
            if ev.response is not None:
                last = ev.request.frame.packet_indexes[-1], ev.response.frame.packet_indexes[-1]
                pairs.add((*last, ev.correlation_id))
    return Ours(frames, requests, raw_tokens, frozenset(pairs), frozenset(ports))


def tshark_fields(path, ports, display_filter, fields) -> list[list[str]]:
    """tshark's field values per packet (``|``-separated, occurrences joined with ``,``), Kafka
    dissected on every broker port, in two passes (a response's ``kafka.request_frame`` is known
    in the second only)."""
    args = ["tshark", "-2", "-r", str(path), "-Y", display_filter, "-T", "fields"]
    args += ["-E", "separator=|", "-E", "occurrence=a", "-E", "aggregator=,"]
    for p in sorted(ports):
        args += ["-d", f"tcp.port=={p},kafka"]
    for f in fields:
        args += ["-e", f]
    out = subprocess.run(args, capture_output=True, text=True, timeout=300, check=True).stdout
    return [line.split("|") for line in out.splitlines()]


@functools.cache
def tshark_kafka(path, ports) -> tuple[tuple, frozenset]:
    """One tshark run over the Kafka packets: its PDUs (as :func:`tshark_pdus`) and its pairs
    (as :func:`tshark_links`)."""
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
        "frame.number",
        "kafka.request_frame",
    ]
    rows = []
    links = set()
    for line in tshark_fields(path, ports, "kafka", fields):
        src, src6, sport, dst, dst6, dport, lens, corrs, keys, vers, malformed, frame, reqs = line
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
        for req, corr in zip(reqs.split(","), corrs.split(","), strict=False):
            if req:
                links.add((int(req), int(frame), int(corr)))
    return tuple(rows), frozenset(links)


def tshark_pdus(path, ports) -> tuple:
    """Per Kafka packet: (source, destination, its PDUs' lengths, correlation ids, request keys
    and versions, malformed)."""
    return tshark_kafka(path, ports)[0]


@pytest.mark.parametrize("path", CAPTURES)
def test_frames_per_connection_equal_tshark_pdus(path):
    mine = ours(path)
    theirs = Counter()
    for src, dst, lens, *_ in tshark_pdus(path, mine.ports):
        theirs[frozenset((src, dst))] += len(lens)
    assert mine.frames == theirs


@pytest.mark.parametrize("path", CAPTURES)
def test_requests_tshark_decodes_are_ours_too(path):
    mine = ours(path)
    theirs = Counter()
    unknown = Counter()  # tshark has no raw-SASL mode: it reads raw tokens as requests of unknown APIs
    for src, _dst, _lens, corrs, keys, vers, _malformed in tshark_pdus(path, mine.ports):
        for corr, key, ver in zip(corrs, keys, vers, strict=False):
            if schema.version_range(int(key)) is None:
                unknown[src] += 1
            else:
                theirs[(src, int(key), int(ver), int(corr))] += 1
    missing = theirs - mine.requests
    assert not missing, f"requests tshark decodes that we do not: {missing}"
    # every "request" tshark could not place is a raw SASL token we decoded as such
    assert unknown == mine.raw_tokens


def tshark_links(path, ports) -> frozenset:
    """(request frame number, response frame number, correlation id) tshark pairs (two-pass)."""
    return tshark_kafka(path, ports)[1]


@pytest.mark.parametrize("path", CAPTURES)
def test_exchanges_pair_like_tshark(path):
    mine = ours(path)
    missing = tshark_links(path, mine.ports) - mine.pairs
    assert not missing, f"pairs tshark makes that we do not: {sorted(missing)[:10]}"
