"""Kafka framing over reassembled streams: splits, merges, gaps, mid-stream starts, garbage."""

import struct

from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.layers.inet import TCP

from analyzer.dissect.framing import DEFAULT_MAX_FRAME, KafkaConnection
from analyzer.events import Gap, StreamData
from tests.helpers.packets import Conversation, api_versions_request, api_versions_response, metadata_request

REQS = [api_versions_request(i, pad=i * 300) for i in range(1, 8)]
RESPS = [api_versions_response(i, n_apis=10 * i) for i in range(1, 8)]


def feed_all(conn: KafkaConnection, events):
    frames, issues = [], []
    for ev in events:
        f, i = conn.feed(ev)
        frames.extend(f)
        issues.extend(i)
    issues.extend(conn.flush())
    return frames, issues


def chunks(direction, data, sizes, start=0, ts=1.0):
    out = []
    off = start
    i = 0
    while off - start < len(data):
        n = sizes[i % len(sizes)]
        out.append(StreamData(1, direction, off, data[off - start : off - start + n], ts, i + 1))
        off += n
        i += 1
    return out


def test_frames_split_across_segments_and_many_per_segment():
    req = b"".join(REQS)
    resp = b"".join(RESPS)
    for sizes in ([1], [7, 3], [1448], [len(req)], [100, 5000]):
        conn = KafkaConnection(1, syn=True)
        frames, issues = feed_all(conn, chunks(0, req, sizes) + chunks(1, resp, sizes))
        assert [bytes(f.payload) for f in frames if f.kind == "request"] == [r[4:] for r in REQS]
        assert [bytes(f.payload) for f in frames if f.kind == "response"] == [r[4:] for r in RESPS]
        assert not issues
        assert conn.client == 0


def test_packet_indexes_and_timestamps_of_a_frame():
    req = REQS[3]
    evs = [StreamData(1, 0, o, req[o : o + 500], 10.0 + o, 100 + o // 500) for o in range(0, len(req), 500)]
    frames, _ = feed_all(KafkaConnection(1, syn=True), evs)
    (f,) = frames
    assert f.packet_indexes == tuple(100 + i for i in range(len(evs)))
    assert f.ts_first == 10.0 and f.ts_last == evs[-1].ts


def test_packet_offsets_where_each_packet_starts_in_the_frame():
    # frames of 352, 652 and 952 bytes (0..352, 352..1004, 1004..1956) in packets 1..5 of
    # 500, 500, 6, 500, 500 bytes: packet 4 starts in the middle of frame 3's size prefix
    req = REQS[0] + REQS[1] + REQS[2]
    sizes = [500, 500, 6, 500, 500]
    evs = chunks(0, req, sizes)
    frames, issues = feed_all(KafkaConnection(1, syn=True), evs)
    assert not issues and [f.offset for f in frames] == [0, 352, 1004]
    for f in frames:  # the same from the segments' own offsets
        end = f.offset + 4 + f.length
        want = [
            (ev.packet_index, max(ev.offset - f.offset, 0))
            for ev in evs
            if ev.offset < end and ev.offset + len(ev.data) > f.offset
        ]
        assert list(zip(f.packet_indexes, f.packet_offsets, strict=True)) == want
    assert [f.packet_indexes for f in frames] == [(1,), (1, 2, 3), (3, 4, 5)]
    assert [f.packet_offsets for f in frames] == [(0,), (0, 148, 648), (0, 2, 502)]
    # not asked for (stats, read: the framer's cost stays as it was): none over several packets
    again, _ = feed_all(KafkaConnection(1, syn=True, offsets=False), evs)
    assert [f.packet_indexes for f in again] == [f.packet_indexes for f in frames]
    assert [f.packet_offsets for f in again] == [(0,), (), ()]


def test_packet_offsets_of_a_frame_inside_one_segment_and_after_a_cut_segment():
    # whole frames in one segment (the framer's fast path), then a frame split after them
    req = REQS[0] + REQS[1] + REQS[2]
    first = len(REQS[0]) + len(REQS[1]) + 10  # the third frame's first 10 bytes, then the rest
    evs = [StreamData(1, 0, 0, req[:first], 1.0, 7), StreamData(1, 0, first, req[first:], 2.0, 9)]
    frames, issues = feed_all(KafkaConnection(1, syn=True, client=0), evs)
    assert not issues
    assert [f.packet_offsets for f in frames] == [(0,), (0,), (0, 10)]
    assert [f.packet_indexes for f in frames] == [(7,), (7,), (7, 9)]


def test_gap_loses_only_the_frame_it_hits():
    req = b"".join(REQS)
    # frame boundaries
    bounds = []
    o = 0
    for r in REQS:
        bounds.append((o, o + len(r)))
        o += len(r)
    hole_start, hole_len = bounds[2][0] + 100, 200  # inside frame 3
    evs = [
        StreamData(1, 0, 0, req[:hole_start], 1.0, 1),
        Gap(1, 0, hole_start, hole_len, 2.0, 2),
        StreamData(1, 0, hole_start + hole_len, req[hole_start + hole_len :], 3.0, 3),
    ]
    frames, issues = feed_all(KafkaConnection(1, syn=True), evs)
    got = [bytes(f.payload) for f in frames]
    assert got == [r[4:] for i, r in enumerate(REQS) if i != 2]
    codes = [i.code for i in issues]
    assert "stream.gap" in codes and "framing.resync" in codes
    skipped = next(i for i in issues if i.code == "framing.resync")
    assert str(bounds[3][0] - hole_start - hole_len) in skipped.message


def test_mid_stream_start_resynchronises_on_both_directions():
    req = b"".join(REQS)
    resp = b"".join(RESPS)
    cut_req = len(REQS[0]) + 37  # start inside request 2
    cut_resp = len(RESPS[0]) + 11
    conn = KafkaConnection(1, syn=False)
    evs = chunks(0, req[cut_req:], [500], start=cut_req) + chunks(1, resp[cut_resp:], [700], start=cut_resp)
    # interleave like a capture: requests first, then responses
    frames, issues = feed_all(conn, evs)
    assert conn.client == 0
    assert [bytes(f.payload) for f in frames if f.kind == "request"] == [r[4:] for r in REQS[2:]]
    # responses 3.. are found by their correlation ids (requests 3.. are known)
    assert [bytes(f.payload) for f in frames if f.kind == "response"] == [r[4:] for r in RESPS[2:]]
    assert sum(1 for i in issues if i.code == "framing.resync") == 2


def test_client_found_by_content_when_it_speaks_second_without_syn():
    # the broker's bytes arrive first (a response to a request before the capture started)
    conn = KafkaConnection(1, syn=False)
    evs = [StreamData(1, 0, 0, RESPS[0], 1.0, 1), StreamData(1, 1, 0, metadata_request(9, ["t"]), 2.0, 2)]
    frames, issues = feed_all(conn, evs)
    assert conn.client == 1
    assert [f.kind for f in frames] == ["response", "request"]


def test_hostile_length_is_not_buffered():
    garbage = struct.pack(">i", 0x7FFFFFF0) + b"\x00" * 100
    conn = KafkaConnection(1, syn=True, client=0)
    frames, issues = feed_all(conn, [StreamData(1, 0, 0, garbage + REQS[0], 1.0, 1)])
    assert [bytes(f.payload) for f in frames] == [REQS[0][4:]]
    assert any(i.code == "framing.bad_size" for i in issues)
    assert len(conn.dirs[0].buf) == 0


def test_tls_is_given_up():
    hello = bytes([0x16, 3, 1, 0, 200]) + b"\x01" * 200
    conn = KafkaConnection(1, syn=True)
    frames, issues = feed_all(conn, [StreamData(1, 0, 0, hello, 1.0, 1)])
    assert not frames and conn.not_kafka == "TLS"


def test_non_kafka_connection_is_given_up_and_dropped():
    http = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    conn = KafkaConnection(1, syn=True)
    frames, issues = feed_all(
        conn, [StreamData(1, 0, 0, http, 1.0, 1), StreamData(1, 1, 0, b"HTTP/1.1 200 OK\r\n", 1.0, 2)]
    )
    assert not frames and conn.not_kafka
    assert all(len(d.buf) == 0 for d in conn.dirs)


def test_incomplete_frame_at_the_end_is_reported():
    conn = KafkaConnection(1, syn=True)
    frames, issues = feed_all(conn, [StreamData(1, 0, 0, REQS[0] + REQS[1][:50], 1.0, 1)])
    assert len(frames) == 1
    assert [i.code for i in issues] == ["framing.incomplete"]
    assert "50 bytes" in issues[0].message


def test_conversation_capture_end_to_end(tmp_path):
    """A capture with one lost segment: every frame before and after the gap, gap reported."""
    from analyzer.events import ConnIssue
    from analyzer.model import Exchange
    from analyzer.pipeline import Analysis
    from tests.helpers.packets import write_pcap

    c = Conversation().handshake()
    seg_lists = []
    for r, s in zip(REQS, RESPS, strict=True):
        seg_lists.append(c.send(0, r, mss=400))
        c.send(1, s, mss=1448)
    c.close()
    lost = seg_lists[3][1]  # a segment in the middle of request 4
    pkts = [p for p in c.pkts if p is not lost]
    path = tmp_path / "lost.pcap"
    write_pcap(path, [(1000.0 + i * 0.001, bytes(p)) for i, p in enumerate(pkts)])
    events = list(Analysis(path).events())
    exchanges = [e for e in events if isinstance(e, Exchange)]
    paired = sorted(e.correlation_id for e in exchanges if e.request and e.response)
    assert paired == [1, 2, 3, 5, 6, 7]
    orphan = [e for e in exchanges if e.request is None]
    assert [e.correlation_id for e in orphan] == [4]
    gaps = [e for e in events if type(e) is ConnIssue and e.issue.code == "stream.gap"]
    assert len(gaps) == 1 and f"{len(bytes(lost[TCP].payload))} bytes" in gaps[0].issue.message


def test_impossible_first_frame_size_resynchronises_instead_of_giving_up():
    for size in (-1, -(2**31), 0x7FFFFFFF):
        bogus = struct.pack(">i", size)
        conn = KafkaConnection(1, syn=True)
        req = b"".join(REQS)
        evs = [StreamData(1, 0, 0, bogus, 1.0, 1)]
        evs += chunks(0, req, [1448], start=4) + chunks(1, b"".join(RESPS), [1448])
        frames, issues = feed_all(conn, evs)
        assert conn.client == 0 and not conn.not_kafka
        assert [bytes(f.payload) for f in frames if f.kind == "request"] == [r[4:] for r in REQS]
        assert [bytes(f.payload) for f in frames if f.kind == "response"] == [r[4:] for r in RESPS]
        bad = next(i for i in issues if i.code == "framing.bad_size")
        assert bad.offset == 0 and str(size) in bad.message
        skip = next(i for i in issues if i.code == "framing.resync")
        assert skip.offset == 0 and "skipped 4 bytes" in skip.message


def test_impossible_frame_size_mid_stream_counts_every_skipped_byte():
    garbage = struct.pack(">i", -1) + b"\xff" * 7
    req = REQS[0] + garbage + REQS[1]
    conn = KafkaConnection(1, syn=True, client=0)
    frames, issues = feed_all(conn, [StreamData(1, 0, 0, req, 1.0, 1)])
    assert [bytes(f.payload) for f in frames] == [REQS[0][4:], REQS[1][4:]]
    skip = next(i for i in issues if i.code == "framing.resync")
    assert skip.offset == len(REQS[0]) and f"skipped {len(garbage)} bytes" in skip.message


def test_non_kafka_connection_given_up_says_nothing_of_frame_sizes():
    conn = KafkaConnection(1, syn=True)
    frames, issues = feed_all(
        conn,
        [
            StreamData(1, 0, 0, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 1.0, 1),
            StreamData(1, 1, 0, b"HTTP/1.1 200 OK\r\n", 1.0, 2),
        ],
    )
    assert conn.not_kafka and [i.code for i in issues] == ["framing.not_kafka"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(REQS + RESPS + [metadata_request(9, ["t"]), b"\x00" * 20, b"\xff" * 9]),
            st.binary(max_size=40),
        ),
        max_size=12,
    ),
    st.integers(0, 40),
    st.sampled_from([DEFAULT_MAX_FRAME, 1 << 12, 100, (1 << 31) - 1]),
    st.sets(st.integers(-3, 9), max_size=4),
)
def test_resync_scans_find_what_a_byte_by_byte_scan_finds(parts, cut, max_frame, pending):
    """The resynchronising scans try only the positions a regular expression lets through; they
    find the same request or response start as trying every byte would (the old scan)."""
    buf = bytearray(b"".join(parts)[cut:])
    conn = KafkaConnection(1, syn=False, client=0, max_frame=max_frame)
    conn.pending = dict.fromkeys(pending)
    st_ = conn.dirs[0]
    st_.buf = buf
    want_req = next(((p, False) for p in range(len(buf) - 13) if conn._request_at(buf, p)), None)
    assert conn._scan_request(st_, 0) == want_req
    want_resp, waiting = None, None
    for p in range(len(buf) - 7):
        v = conn._response_at(buf, p, False)
        if v is True:
            want_resp = p
            break
        if v is None and waiting is None:
            waiting = p
    assert conn._scan_response(st_, 0) == (want_resp if want_resp is not None else waiting)
