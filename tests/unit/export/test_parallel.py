"""The walkers ``export -j`` and Spark share: :class:`Router` sends both directions of a
connection to one part, :class:`SplitWalk` walks a split once and its packets, split after
split, are the file's, each with its connection's owner; :func:`range_totals` counts the file
from its splits as one reader does."""

from array import array
from collections import Counter

import pytest

from analyzer.capture.files import CaptureFile
from analyzer.capture.split import splits
from analyzer.events import Skip
from analyzer.export.parallel import SplitWalk, plan_owners, range_totals
from analyzer.export.routes import Router, Window, flow_key, walk_routes
from analyzer.reassembly.packet import decode_tcp, skip_text
from tests.helpers.captures import CAPTURES


@pytest.mark.parametrize("name", ["librdkafka-txn.pcap", "kafka-python-tls-tls13-aes128gcm-dsb.pcapng"])
def test_split_walks_give_the_files_packets_with_their_owners(name):
    path = CAPTURES / name
    parts = 3
    owners = plan_owners(str(path), parts, sample=4096)  # a plan for the first connections only
    route = Router(owners, parts)
    want, skipped = [], Counter()
    cap = CaptureFile(path)
    for index, ts, linktype, data in cap:
        seg = decode_tcp(linktype, data)
        if type(seg) is Skip:
            skipped[skip_text(seg, linktype)] += 1
            continue
        want.append((route(seg), index, ts, bytes(data)))
        # one part per connection, both ways; the plan's part for the connections it names
        back = (seg[2], seg[3], seg[0], seg[1], *seg[4:])
        assert route(back) == route(seg)
        if flow_key(seg) in owners:
            assert route(seg) == owners[flow_key(seg)]
    assert {w[0] for w in want} == set(range(parts))
    cuts = splits(path, 4096)
    assert len(cuts) > 5
    got, walks, base = _walk_splits(cuts, owners, parts)
    assert got == want
    totals = range_totals(walks)
    assert totals.packets == base == len(want) + sum(skipped.values())
    assert (totals.first_ts, totals.last_ts) == (want[0][2], want[-1][2])
    assert totals.skipped == skipped


@pytest.mark.parametrize("name", ["librdkafka-txn.pcap", "group-joins.pcap"])
def test_routes_of_a_pcap_split_name_the_packets_its_walk_gives(name):
    """Spark's walk of a plain pcap split sends each owner where its packets are, not the
    packets: read back from the file at those places, they are the ones SplitWalk gives, with
    the same numbers, times, counts and skips."""
    path = CAPTURES / name
    parts = 3
    owners = plan_owners(str(path), parts, sample=4096)
    cuts = splits(path, 4096)
    assert len(cuts) > 2
    for c in cuts:
        walk = SplitWalk(c, owners, parts)
        want = sorted((o, n, ts, bytes(d)) for o, n, ts, _lt, d in walk)
        routed = walk_routes(c, owners, parts)
        assert routed is not None
        packets, first_ts, last_ts, skipped, linktype, routes = routed
        assert (packets, first_ts, last_ts, skipped) == (
            walk.packets,
            walk.first_ts,
            walk.last_ts,
            walk.skipped,
        )
        assert not walk.issues and walk.format == "pcap" and linktype == 1
        got = []
        window = Window(str(path))
        for owner, raw in enumerate(routes):
            r = array("d")
            r.frombytes(raw)
            for i in range(0, len(r), 4):
                got.append((owner, int(r[i]), r[i + 1], bytes(window.get(int(r[i + 2]), int(r[i + 3])))))
        window.close()
        assert sorted(got) == want


def test_a_split_that_is_not_plain_pcap_or_is_damaged_has_no_routes(tmp_path):
    ng = CAPTURES / "kafka-python-tls-tls13-aes128gcm-dsb.pcapng"
    assert all(walk_routes(c, {}, 2) is None for c in splits(ng, 4096))
    cut = tmp_path / "cut.pcap"
    cut.write_bytes((CAPTURES / "librdkafka-txn.pcap").read_bytes()[:-7])  # the last record cut short
    last = splits(cut, 4096)[-1]
    assert walk_routes(last, {}, 2) is None
    assert any(i.code == "capture.truncated" for i in _issues(SplitWalk(last, {}, 2)))


def _issues(walk: SplitWalk) -> list:
    for _ in walk:
        pass
    return walk.issues


def _walk_splits(cuts, owners, parts) -> tuple[list, list, int]:
    """Walk ``cuts`` in order, numbering on from split to split: each packet as (owner, number,
    ts, bytes), the walks, and the packets counted; no split has an issue."""
    got, walks, base = [], [], 0
    for c in cuts:
        w = SplitWalk(c, owners, parts)
        got += [(o, base + n, ts, bytes(d)) for o, n, ts, _lt, d in w]
        walks.append(w)
        base += w.packets
        assert not w.issues
    return got, walks, base


def test_split_walks_of_a_chain_give_the_sets_packets(tmp_path):
    """Rotated files cut into splits, file after file (each file its own header): walked in
    that order and numbered on from split to split, their packets are the capture set's, as
    Spark walks a chain; their totals are the set's."""
    from analyzer.capture.sets import CaptureSet
    from tests.helpers.captures import cut

    pieces = cut(CAPTURES / "librdkafka-txn.pcap", 40, tmp_path)
    parts = 2
    owners = plan_owners(str(pieces[0]), parts)
    route = Router(owners, parts)
    want, skipped = [], Counter()
    for index, ts, linktype, data in CaptureSet(pieces):
        seg = decode_tcp(linktype, data)
        if type(seg) is Skip:
            skipped[skip_text(seg, linktype)] += 1
            continue
        want.append((route(seg), index, ts, bytes(data)))
    cuts = [c for p in pieces for c in splits(p, 4096)]
    assert len(pieces) > 5 and len(cuts) > len(pieces)
    got, walks, base = _walk_splits(cuts, owners, parts)
    assert got == want
    totals = range_totals(walks)
    assert totals.packets == base == len(want) + sum(skipped.values())
    assert totals.skipped == skipped


def test_a_share_writes_its_items_as_it_goes_and_the_merge_reads_them_back(tmp_path, monkeypatch):
    """With an items file, a share keeps at most ITEM_CHUNK items (the rest written, memoryviews
    as bytes) and its part names the file; part_items gives back the same items, in order, as
    the share that keeps them all. (export -j and stats -j held every event's item in each
    process and in the merge: 156 MB in the parent for bench-250mb, 521-558 MB for 1 GB.)"""
    from analyzer.dissect.message import Options
    from analyzer.export import parallel
    from analyzer.export.parallel import Share, part_items

    monkeypatch.setattr(parallel, "ITEM_CHUNK", 7)
    name = CAPTURES / "group-joins.pcap"
    kept, spilled = Share(Options()), Share(Options(), items_path=str(tmp_path / "items"))
    most = 0
    for index, ts, linktype, data in CaptureFile(name):
        seg = decode_tcp(linktype, data)
        if type(seg) is tuple:
            kept.feed(index, ts, seg)
            spilled.feed(index, ts, seg)
            most = max(most, len(spilled.items))
    whole, streamed = kept.finish(), spilled.finish()
    assert isinstance(whole.items, list) and streamed.items == str(tmp_path / "items")
    assert most < 7 + 40  # a chunk, and at most one packet's events beyond it
    back = list(part_items(streamed))
    assert len(back) == len(whole.items) > 100
    assert back == whole.items
    assert list(part_items(whole)) == whole.items
