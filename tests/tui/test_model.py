"""The TUI's row model and index, without Textual: rows, spool, re-decoding, filter, sort,
connections, issues, pictures."""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path

import pytest

from analyzer.dissect.message import Options
from analyzer.model import Exchange, Severity
from analyzer.pipeline import Analysis
from analyzer.session.internal import annotate
from analyzer.session.report import api_text, exchange_flags, sizes_text, topics_text
from analyzer.session.stats import Stats, error_names
from analyzer.tui.charts import io_series, latency_histogram
from analyzer.tui.listview import SortedRows
from analyzer.tui.model import Index
from analyzer.tui.rows import COLUMNS, TIME_COLUMN
from analyzer.tui.spool import Spool, SpoolError
from analyzer.tui.textsearch import keep, matches

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = ROOT / "captures"
PUBLIC = ROOT.parent / "shared" / "captures" / "public"
TXN = CAPTURES / "librdkafka-txn.pcap"
GZIP = CAPTURES / "librdkafka-produce-consume-gzip.pcap"
NDPI = PUBLIC / "ndpi_kafka.pcapng"


def full(path: Path) -> list[Exchange]:
    """The pipeline's exchanges with record bodies, internal topics' records annotated as the
    TUI shows them (:func:`analyzer.session.internal.annotate`)."""
    opts = Options(records_bodies=True, packet_offsets=True)
    out = [ev for ev in Analysis(path, opts).events() if type(ev) is Exchange]
    for ex in out:
        annotate(ex.request)
        annotate(ex.response)
    return out


def indexed(path: Path) -> tuple[Index, Analysis]:
    """The TUI's way: one pass without record bodies, in batches, packet offsets recorded."""
    a = Analysis(path, Options(records_bodies=False, packet_offsets=True))
    index = Index(Options(records_bodies=True))
    for events in a.batches(0.05):
        if index.origin is None:
            index.origin = a.first_ts
        index.add(events)
    return index, a


def tree_of(f):
    if f is None:
        return None
    return [(x.name, x.type, repr(x.value), x.offset, x.length, x.display) for x in f.walk()]


def all_captures() -> list[Path]:
    public = sorted(PUBLIC.glob("*.pcap*")) if PUBLIC.is_dir() else []
    return sorted(CAPTURES.glob("*.pcap")) + public


@pytest.mark.parametrize("path", all_captures(), ids=lambda p: p.name)
def test_exchanges_decode_again_from_the_spool(path):
    """Indexed without record bodies, each exchange decodes again from the spooled payloads to
    exactly the pipeline's trees, payloads, packet numbers and issues (with record bodies)."""
    want = full(path)
    index, _ = indexed(path)
    try:
        assert len(index.rows) == len(want)
        for row, ex in zip(index.rows, want, strict=True):
            assert (row.api_key, row.api_version, row.corr) == (ex.api_key, ex.api_version, ex.correlation_id)
            assert row.ts == ex.ts and row.latency == ex.latency and row.conn.id == ex.conn.id
            assert row.sizes == sizes_text(ex)
            assert row.topics_text == topics_text(ex.topics) and row.topic_dict() == ex.topics
            view = index.exchange(row)
            for got, exp in ((view.request, ex.request), (view.response, ex.response)):
                assert (got is None) == (exp is None)
                if got is None:
                    continue
                assert bytes(got.frame.payload) == bytes(exp.frame.payload)
                assert got.frame.packet_indexes == exp.frame.packet_indexes
                assert got.frame.packet_offsets == exp.frame.packet_offsets
                assert len(got.frame.packet_offsets) == len(got.frame.packet_indexes)
                assert (got.frame.ts_first, got.frame.ts_last) == (exp.frame.ts_first, exp.frame.ts_last)
                assert tree_of(got.header) == tree_of(exp.header)
                assert tree_of(got.body) == tree_of(exp.body)
            assert view.all_issues() == ex.all_issues()
            assert view.topics == ex.topics
    finally:
        index.close()


def test_rows_flags_and_cells():
    want = full(NDPI) if NDPI.is_file() else full(TXN)
    index, _ = indexed(NDPI if NDPI.is_file() else TXN)
    for row, ex in zip(index.rows, want, strict=True):
        flags, worst = exchange_flags(ex)
        assert list(row.flags) == flags and row.severity == worst
        assert row.has_errors == (worst is not None)
        cells = row.cells(index.origin)
        assert len(cells) == len(COLUMNS)
        assert cells[0] == str(row.index + 1)
        assert cells[4] == api_text(ex.api_key, ex.api_version)
        assert cells[5] == str(ex.correlation_id)
        assert cells[-1] == "; ".join(flags)
        assert float(cells[TIME_COLUMN]) == pytest.approx(ex.ts - index.origin, abs=1e-6)
        codes = {i.code for i in ex.all_issues()} | {f"kafka.{n}" for n in error_names(ex.response)}
        assert set(row.codes) == codes
    index.close()


def test_the_index_keeps_no_payloads():
    """Rows hold no bytes: the payloads are in the spool file."""
    index, _ = indexed(GZIP)
    try:
        total = 0
        for row in index.rows:
            for ref in (row.req, row.resp):
                if ref is None:
                    continue
                total += ref.nbytes
                if ref.keep is None:
                    assert not any(isinstance(getattr(ref, s), bytes) for s in ref.__slots__)
        assert index.spool.size >= total > 10_000
        assert sys.getsizeof(index.rows) < total
    finally:
        index.close()


def test_spool_round_trip(tmp_path):
    s = Spool(str(tmp_path))
    a = s.put(b"hello")
    b = s.put(memoryview(b"world!"))
    s.flush()
    assert (a, b, s.size) == (0, 5, 11)
    assert s.get(b, 6) == b"world!" and s.get(a, 5) == b"hello"
    s.close()
    assert list(tmp_path.iterdir()) == []  # an anonymous temporary file


def test_frame_packets_round_trip_through_the_spool(tmp_path):
    """Packet numbers and offsets come back from the spool as the framer gave them; a frame
    whose offsets are not known (not built by the framer) comes back without offsets."""
    from analyzer.model import Frame
    from analyzer.tui.spool import FrameRef

    s = Spool(str(tmp_path))
    frames = [
        Frame(1, 0, 0, 3, b"abc", 1.0, 1.0, (5,), "request", (0,)),
        Frame(1, 0, 7, 3000, b"x" * 3000, 1.0, 2.0, (6, 8, 9), "request", (0, 1448, 2896)),
        Frame(1, 1, 0, 3000, b"y" * 3000, 1.0, 2.0, (10, 11), "response"),
        Frame(1, 1, 0, 0, b"", 1.0, 2.0, (), "response"),
    ]
    refs = [FrameRef(f, s, None) for f in frames]
    s.flush()
    got = [r.frame(1, f.kind, s) for r, f in zip(refs, frames, strict=True)]
    assert [g.packet_indexes for g in got] == [(5,), (6, 8, 9), (10, 11), ()]
    assert [g.packet_offsets for g in got] == [(0,), (0, 1448, 2896), (), ()]
    assert [bytes(g.payload) for g in got] == [bytes(f.payload) for f in frames]
    s.close()


def test_filter_matches():
    if not NDPI.is_file():
        pytest.skip("public captures not available")
    want = full(NDPI)
    index, _ = indexed(NDPI)
    rows = index.rows

    def kept(text):
        return [r.index for r in rows if matches(r, text)]

    assert kept("") == list(range(len(rows)))
    assert kept("api:produce") == [
        i for i, e in enumerate(want) if "produce" in api_text(e.api_key, e.api_version).lower()
    ]
    assert kept("errors") == [i for i, r in enumerate(rows) if r.has_errors] != []
    assert kept("PRODUCE") == kept("produce")
    assert all("sampleTopic" in want[i].topics for i in kept("topic:sampletopic"))
    assert [(want[i].client_id, want[i].api_key) for i in kept("client:console-producer api:produce")] == [
        ("console-producer", 22),
        ("console-producer", 0),
    ]
    assert kept("no-such-thing") == []
    conn = rows[0].conn.id
    assert [r.index for r in rows if keep(r, "", conn)] == [r.index for r in rows if r.conn.id == conn]
    index.close()


def test_sorted_rows_time_order_is_monotonic_while_rows_stream_in():
    index, _ = indexed(TXN)
    rows = index.rows
    order = SortedRows()
    for k in range(0, len(rows), 7):  # batches in arrival (completion) order
        order.add(rows[k : k + 7])
    shown = order.shown()
    assert sorted(shown) == list(range(len(rows)))
    times = [rows[i].ts for i in shown]
    assert times == sorted(times)
    assert shown != list(range(len(rows)))  # completion order is not request-time order here

    for col in range(len(COLUMNS)):
        for rev in (False, True):
            o = SortedRows(col, rev)
            o.add(rows[::-1])  # any arrival order gives the same result
            key = COLUMNS[col].key
            want = sorted(rows, key=lambda r: (key(r), r.index), reverse=rev)
            assert o.shown() == [r.index for r in want], COLUMNS[col].name
            o2 = SortedRows(col, rev)
            o2.reset(rows)
            assert o2.shown() == o.shown()
    index.close()


def test_latency_column_sorts_missing_last():
    index, _ = indexed(TXN)
    o = SortedRows(COLUMNS.index(next(c for c in COLUMNS if c.name == "latency")))
    o.reset(index.rows)
    lat = [index.rows[i].latency for i in o.shown()]
    known = [x for x in lat if x is not None]
    assert known == sorted(known) and lat[: len(known)] == known
    index.close()


def test_connections_and_issues():
    a = Analysis(TXN, Options())
    stats = Stats(a.knowledge.topic_ids)
    index = Index(Options(True))
    for events in a.batches():
        for ev in events:
            stats.event(ev)
        index.add(events)
    conns = index.connection_rows(a.knowledge)
    assert sum(c["exchanges"] for c in conns) == len(index.rows)
    by_id = {c["id"]: c for c in conns}
    for srow in stats.connection_rows():
        c = by_id[srow["connection"]]
        for k in ("client", "broker", "exchanges", "bytes_to_broker", "bytes_to_client"):
            assert c[k] == srow[k], k
    assert any(c["software"] and "rdkafka" in c["software"] for c in conns)
    for c in conns:
        ids = Counter(r.client_id for r in index.rows if r.conn.id == c["id"] and r.client_id is not None)
        assert c["client_id"] == (ids.most_common(1)[0][0] if ids else None)

    groups = index.issue_rows()
    assert groups
    sev = [g.severity for g in groups]
    assert sev == sorted(sev, key=lambda s: -(s if s is not None else -1))
    for g in groups:
        assert g.rows or g.events
        for i in g.rows:
            assert g.code in index.rows[i].codes
    # every exchange with an issue code is in that code's group
    for r in index.rows:
        for code in r.codes:
            assert r.index in index.issue_groups[code].rows
    assert any(g.code.startswith("kafka.") for g in groups)
    assert all(g.severity is not None and g.severity >= Severity.NOTE for g in groups)
    index.close()


def test_io_series_and_latency_histogram():
    index, _ = indexed(GZIP)
    rows = index.rows
    s = io_series(rows, 20)
    assert len(s["requests"]) == 20
    assert sum(s["requests"]) * s["step"] == pytest.approx(len(rows))
    total = sum(max(r.req_bytes, 0) + max(r.resp_bytes, 0) for r in rows)
    assert sum(s["bytes"]) * s["step"] == pytest.approx(total)
    assert sum(s["errors"]) * s["step"] == pytest.approx(sum(r.has_errors for r in rows))
    lats = [r.latency for r in rows if r.latency is not None]
    h = latency_histogram(lats, 10)
    assert sum(n for _, _, n in h) == len(lats)
    assert h[0][0] == pytest.approx(max(min(lats) * 1000, 0.001))
    assert h[-1][1] == pytest.approx(max(lats) * 1000)
    assert io_series([])["requests"] == [] and latency_histogram([]) == []
    index.close()


def test_indexer_posts_every_row_once_then_done(tmp_path):
    import gc
    import threading

    from analyzer.pipeline import YOUNG_GC
    from analyzer.tui.indexer import Indexer

    want = full(TXN)
    a = Analysis(TXN, Options())
    index = Index(Options(True))
    stats = Stats(a.knowledge.topic_ids)
    posted = []
    thresholds = gc.get_threshold()
    # the GC's thresholds while indexing: a post made while the analysis's batches run (a slow
    # machine posts before the end) sees the pipeline's young generation of YOUNG_GC objects
    seen = []
    Indexer(a, index, stats, threading.Lock(), first_batch=0.0, batch=0.0).run(
        lambda p: posted.append(p) or seen.append(gc.get_threshold()) or True, lambda: False, str(TXN)
    )
    assert all(t == (YOUNG_GC, *thresholds[1:]) for t in seen[:-1])
    assert seen[-1] == thresholds  # the last post (done): the analysis over, the GC's own
    assert gc.get_threshold() == thresholds  # and as they were once done
    assert posted[-1].done and posted[-1].error is None and posted[-1].fraction == 1.0
    assert not any(p.done for p in posted[:-1])
    rows = [r for p in posted for r in p.rows]
    assert rows == list(index.rows) and [r.index for r in rows] == list(range(len(want)))
    assert stats.exchanges == len(want) and index.origin == a.first_ts
    index.close()

    # an unreadable path: one batch, done, saying why
    out = []
    b = Analysis(tmp_path / "nope.pcap", Options())
    Indexer(b, Index(Options()), Stats(), threading.Lock()).run(
        lambda p: out.append(p) or True, lambda: False, str(tmp_path / "nope.pcap")
    )
    assert len(out) == 1 and out[0].done and "no such file" in out[0].error


def test_list_view_takes_batches_filters_scopes_and_sorts():
    from analyzer.tui.listview import ListView

    index, _ = indexed(TXN)
    rows = index.rows
    lv = ListView()
    lv.text = "fetch"
    for k in range(0, len(rows), 5):
        added = lv.add(rows[k : k + 5])
        assert added is None or all(i in lv.shown for i in added)
    fetch = [r for r in rows if matches(r, "fetch")]
    assert sorted(lv.shown) == sorted(r.index for r in fetch) != []
    assert [rows[i].ts for i in lv.shown] == sorted(r.ts for r in fetch)
    lv.text, lv.conn = "", rows[0].conn.id
    lv.rebuild()
    assert sorted(lv.shown) == [r.index for r in rows if r.conn.id == rows[0].conn.id]
    lv.conn = None
    lv.sort_by(0, reverse=True)
    assert lv.shown == list(range(len(rows)))[::-1]
    index.close()


# -- the session: display filters over the index --------------------------------------------------


def _indexed_session(path):
    from analyzer.tui.session import Session

    s = Session(str(path))
    s.indexer().run(lambda p: s.take(p) is not None or True, lambda: False, str(path))
    assert s.done and s.rows
    return s


@pytest.mark.parametrize(
    "expr",
    [
        "api == Produce",
        "produce.acks == -1",
        "fetch.max_wait_ms >= 100 and not error",
        'records.value contains "a"',
        "latency > 1ms or api == Metadata",
        'client == 127.0.0.0/8 and topic matches "^t" and conn > 1',
    ],
)
def test_session_filter_matches_decoding_every_row(expr):
    """The filter bar's predicate (rows answer what they can, decoded trees cached) keeps the
    same rows as the filter on every exchange decoded in full."""
    from analyzer.filter import compile_filter

    path = ROOT / "captures" / "librdkafka-produce-consume-gzip.pcap"
    s = _indexed_session(path)
    try:
        flt = compile_filter(expr)
        flt.knowledge = s.analysis.knowledge
        full = [r.index for r in s.rows if flt(s.index.exchange(r))]
        pred = s.predicate(compile_filter(expr))
        assert [r.index for r in s.rows if pred(r)] == full
        assert [r.index for r in s.rows if pred(r)] == full  # again, from the cache
    finally:
        s.close()


def test_session_filter_decodes_only_what_the_index_cannot_answer():
    from analyzer.filter import compile_filter

    path = ROOT / "captures" / "librdkafka-produce-consume-gzip.pcap"
    s = _indexed_session(path)
    decoded = []
    real = s.index.exchange

    def counting(row, opts=None):
        decoded.append((row.index, opts is not None and opts.records_bodies))
        return real(row, opts)

    s.index.exchange = counting
    try:
        for expr in ("api == Produce", 'client_id contains "rdkafka"', "latency > 1ms"):
            pred = s.predicate(compile_filter(expr))
            assert any(pred(r) for r in s.rows), expr
        assert decoded == []  # the index answers these
        pred = s.predicate(compile_filter("produce.acks == -1"))
        kept = [r.index for r in s.rows if pred(r)]
        produce = [r.index for r in s.rows if r.api_key == 0]
        assert kept and sorted({i for i, _ in decoded}) == produce  # the Produce exchanges only
        assert all(not bodies for _, bodies in decoded)  # without record bodies
        decoded.clear()
        assert [r.index for r in s.rows if pred(r)] == kept
        assert decoded == []  # cached
        # the operand the index answers is tried first, whatever its place in the text
        s.cache.clear()
        slow = {r.index for r in s.rows if r.api_key == 0 and r.latency is not None and r.latency > 0.001}
        assert slow
        pred = s.predicate(compile_filter("produce.acks == -1 and latency > 1ms"))
        assert {r.index for r in s.rows if pred(r)} <= slow
        assert {i for i, _ in decoded} == {
            r.index for r in s.rows if r.latency is not None and r.latency > 0.001 and r.api_key == 0
        }
    finally:
        s.close()


def test_decoded_cache_is_bounded_and_a_scan_does_not_evict():
    from analyzer.tui.session import DecodedCache

    c = DecodedCache(budget=100)
    for i in range(5):
        c.put(i, True, f"ex{i}", 30)  # type: ignore[arg-type]
    assert c.used <= 100 and len(c) == 3 and c.get(0, True) is None and c.get(4, True) == "ex4"
    assert c.get(4, False) == "ex4"  # with bodies answers without
    c.put(9, False, "scan", 30, evict=False)  # no room: not kept, nothing evicted
    assert c.get(9, False) is None and len(c) == 3


def test_index_limit_counts_what_it_does_not_keep():
    """A live session keeps a bounded number of exchanges; the others are counted (the status
    line's queue drops), not indexed."""
    path = ROOT / "captures" / "librdkafka-produce-consume-gzip.pcap"
    events = list(Analysis(path, Options(records_bodies=False)).events())
    n = sum(1 for e in events if type(e) is Exchange)
    idx = Index(Options(True), limit=5)
    spilled = Index(Options(True), limit=5, spill_after=2)  # the bound holds on spilled rows too
    try:
        idx.add(events)
        spilled.add(events)
        assert len(idx.rows) == 5 and idx.dropped == n - 5
        assert [r.index for r in idx.rows] == list(range(5))
        assert len(spilled.rows) == 5 and spilled.dropped == n - 5 and spilled.rows.spilled == 3
        assert [_row_state(r) for r in spilled.rows] == [_row_state(r) for r in idx.rows]
    finally:
        idx.close()
        spilled.close()


def test_live_status_text():
    from analyzer.tui.widgets.status import live_text

    t = live_text("eth0", True, 1234.4, 56789, 321, 1000, 0, 0, 0, following=True)
    assert (
        t.plain == " LIVE  eth0  following  1,234 pkt/s  56,789 pkts  321 exchanges  drops kernel 0 queue 0"
    )
    assert len(t.plain) <= 90
    t = live_text("eth0", False, 0.0, 56789, 321, 1000, 7, 2, 5)
    assert (
        t.plain
        == " stopped  eth0  56,789 pkts  321 exchanges  drops kernel 7 of 1,000 queue 5 (ring full 2x)"
    )


def test_field_expressions_and_timeline_bars():
    """What ``f`` builds from a tree path (without Textual), what it refuses and why; where a
    timeline bar starts and how long it is."""
    from analyzer.filter import field_expressions
    from analyzer.tui.charts import timeline_bar

    ex = next(e for e in full(TXN) if e.api_key == 0)
    body, header = ex.request.body, ex.request.header
    acks = body.child("acks")
    assert field_expressions(0, "request", (body, acks)) == [f"produce.request.acks == {acks.value}"]
    assert field_expressions(0, "request", (header, header.child("request_api_key"))) == ["api == Produce"]
    assert field_expressions(0, "request", (header, header.child("correlation_id"))) == [
        f"corr == {ex.correlation_id}"
    ]
    assert field_expressions(0, "request", (header, header.child("client_id"))) == [
        f'client_id == "{ex.client_id}"'
    ]
    arr = body.child("topic_data")
    elem = arr.children[0]
    assert field_expressions(0, "request", (body, arr, elem, elem.child("name"))) == [
        f'produce.request.topic_data.name == "{elem.get("name")}"'
    ]
    assert field_expressions(0, "request", (body, arr)) == ["produce.request.topic_data"]  # present
    assert field_expressions(None, "request", (body, acks)) == "an exchange of an unknown API"
    assert field_expressions(0, "request", ()) == "select a field of the request or response"
    crc = next(f for f in body.walk() if f.name == "crc")
    assert "does not name" in field_expressions(0, "request", tuple(_path_to(body, crc)))

    index, _ = indexed(TXN)
    row = index.rows[0]
    assert timeline_bar(row, row.ts, 1.0, 100) == (0, max(1, round(row.latency * 100)))
    late = replace_latency(row, None)
    assert timeline_bar(late, row.ts - 0.5, 1.0, 100) == (50, 50)  # unanswered: to the end
    index.close()


def _path_to(root, target):
    if root is target:
        return [root]
    for c in root.children or ():
        p = _path_to(c, target)
        if p:
            return [root, *p]
    return []


def replace_latency(row, latency):
    import copy

    r = copy.copy(row)
    r.latency = latency
    return r


# -- rows spilled to a temporary file -----------------------------------------------------------


def _row_state(row):
    """Everything a row answers, its frames' metadata included."""
    refs = [
        None if f is None else (f.direction, f.stream_offset, f.length, f.nbytes, f.ts_first, f.ts_last)
        for f in (row.req, row.resp)
    ]
    return (
        row.index,
        row.conn.id,
        row.ts,
        row.api_key,
        row.api_version,
        row.corr,
        row.client_id,
        row.topics,
        row.req_bytes,
        row.resp_bytes,
        row.latency,
        row.flags,
        row.severity,
        row.has_errors,
        row.codes,
        row.issues,
        row.resp_key,
        refs,
        row.cells(1.0),
    )


def test_spilled_rows_are_the_rows_kept_in_memory(tmp_path):
    """With the spill threshold forced to 50 rows, the later rows live in a temporary file (open
    while the index is, gone once closed) and read back as the rows kept in memory: the same
    fields, cells, sort orders (every column, both ways, while streaming in and rebuilt),
    filter matches and decoded exchanges."""
    from analyzer.tui.listview import ListView
    from analyzer.tui.rows import ROW, Taken

    path = TXN
    a = Analysis(path, Options(records_bodies=False, packet_offsets=True))
    mem = Index(Options(records_bodies=True))
    spilled = Index(Options(records_bodies=True), spill_after=50, directory=str(tmp_path))
    for events in a.batches(0.05):
        for index in (mem, spilled):
            if index.origin is None:
                index.origin = a.first_ts
            index.add(events)
    n = len(mem.rows)
    try:
        assert n > 50 and len(spilled.rows) == n
        assert mem.rows.spilled == 0 and mem.rows.spill_file is None
        assert spilled.rows.spilled == n - 50
        f = spilled.rows.spill_file
        assert os.fstat(f.fileno()).st_size == (n - 50) * ROW.size  # the file is there
        assert list(tmp_path.iterdir()) == []  # anonymous: deleted even if the process dies

        # every row, by index and streamed back in chunks (small chunks: several reads)
        spilled.rows.CHUNK = 16
        assert [_row_state(r) for r in spilled.rows] == [_row_state(r) for r in mem.rows]
        assert [_row_state(spilled.rows[i]) for i in range(n)] == [_row_state(r) for r in mem.rows]
        assert [_row_state(r) for r in spilled.rows[-3:]] == [_row_state(r) for r in mem.rows[-3:]]

        # sort orders: streaming in (completion order) and rebuilt, every column, both ways
        for col in range(len(COLUMNS)):
            for rev in (False, True):
                orders = []
                for index in (mem, spilled):
                    o = SortedRows(col, rev)
                    for k in range(0, n, 7):
                        o.add(index.rows[k : k + 7])
                    o2 = SortedRows(col, rev)
                    o2.reset(index.rows)
                    assert o.shown() == o2.shown()
                    orders.append(o.shown())
                assert orders[0] == orders[1], COLUMNS[col].name

        # the list view over the taken rows, filtered by text, scoped to a connection
        for text in ("", "fetch", "errors", "topic:txn", "produce"):
            shown = []
            for index in (mem, spilled):
                lv = ListView(Taken(index.rows))
                lv.text = text
                for k in range(0, n, 9):
                    lv.add(index.rows[k : k + 9])
                shown.append(list(lv.shown))
                lv.conn = index.rows[0].conn.id
                lv.sort_by(8, reverse=True)
                shown.append(list(lv.shown))
            assert shown[0] == shown[2] and shown[1] == shown[3], text

        # the decoded exchanges (record bodies), from the spool
        for r, s in zip(mem.rows, spilled.rows, strict=True):
            x, y = mem.exchange(r), spilled.exchange(s)
            assert x.all_issues() == y.all_issues() and x.topics == y.topics
            for m, k in ((x.request, y.request), (x.response, y.response)):
                assert (m is None) == (k is None)
                if m is not None:
                    assert tree_of(m.header) == tree_of(k.header) and tree_of(m.body) == tree_of(k.body)
                    assert bytes(m.frame.payload) == bytes(k.frame.payload)
                    assert m.frame.packet_indexes == k.frame.packet_indexes

        # the views' data
        assert io_series(spilled.rows) == io_series(mem.rows)
        assert [(g.code, list(g.rows), g.events) for g in spilled.issue_rows()] == [
            (g.code, list(g.rows), g.events) for g in mem.issue_rows()
        ]
        assert spilled.groups.rows(spilled.origin) == mem.groups.rows(mem.origin)
        assert spilled.connection_rows() == mem.connection_rows()
    finally:
        mem.close()
        spilled.close()
    assert f.closed and list(tmp_path.iterdir()) == []  # closed: the file is gone


def test_spilled_session_filters_and_views_match(monkeypatch):
    """A session whose index spills (the module's threshold forced to 50) answers display
    filters, the timeline and the I/O series as one that keeps every row in memory."""
    from analyzer.tui import rows
    from analyzer.tui.session import Session

    def run(s):
        s.indexer().run(lambda p: s.take(p) is not None or True, lambda: False, str(TXN))
        return s

    mem = run(Session(str(TXN)))
    monkeypatch.setattr(rows, "SPILL_ROWS", 50)
    spilled = run(Session(str(TXN)))
    try:
        assert spilled.index.rows.spilled == len(spilled.rows) - 50 > 0 and mem.index.rows.spilled == 0
        from analyzer.filter import compile_filter

        for expr in ("api == Fetch", "produce.acks == -1", "latency > 0.001", "not api == Produce"):
            kept = []
            for s in (mem, spilled):
                pred = s.predicate(compile_filter(expr))
                kept.append([r.index for r in s.rows if pred(r)])
            assert kept[0] == kept[1] != [], expr
        conn = mem.rows[0].conn.id
        a, b = mem.connection_timeline(conn), spilled.connection_timeline(conn)
        assert a[0] == b[0] and [r.index for r in a[1]] == [r.index for r in b[1]]
        assert io_series(spilled.rows) == io_series(mem.rows)
    finally:
        mem.close()
        spilled.close()


def test_temporary_file_failures_are_said_not_raised(tmp_path, monkeypatch):
    """A temporary directory that cannot be used stops the TUI before it starts with exit 2 and
    a message; a full disk while rows spill ends the indexing with a message (the rows indexed
    before stay), no traceback."""
    import errno
    import tempfile
    import threading

    from analyzer.tui import rows
    from analyzer.tui.app import run_tui
    from analyzer.tui.indexer import Indexer

    with pytest.raises(SpoolError, match="cannot create the TUI's temporary file in"):
        Index(Options(True), directory=str(tmp_path / "missing"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    assert run_tui(str(TXN)) == 2
    monkeypatch.undo()

    def full_disk(fd, data, offset):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(rows.os, "pwrite", full_disk)
    a = Analysis(TXN, Options())
    index = Index(Options(True), spill_after=60)
    posted = []
    Indexer(a, index, Stats(), threading.Lock(), first_batch=0.0, batch=0.0).run(
        lambda p: posted.append(p) or True, lambda: False, str(TXN)
    )
    try:
        last = posted[-1]
        assert last.done and last.error == (
            "cannot write the TUI's temporary file of rows: No space left on device"
        )
        # the rows posted before are whole (the batch that failed is not posted)
        kept = [r for p in posted for r in p.rows]
        assert len(kept) <= 60 and [r.index for r in kept] == list(range(len(kept)))
        assert all(index.exchange(r).request is not None for r in kept if r.req_bytes >= 0)
    finally:
        index.close()


def test_internal_topic_records_show_their_coordinator_fields():
    """A Fetch of __consumer_offsets: each record's key and value Fields hold the decoded
    coordinator record (version, then the schema's fields), the record's label its summary."""
    index, _ = indexed(CAPTURES / "group-internal.pcap")
    try:
        seen = set()
        for row in index.rows:
            if row.api_key != 1 or "__consumer_offsets" not in row.topic_dict():
                continue
            view = index.exchange(row)
            if view.response is None:
                continue  # (the reader's last Fetch, unanswered when it closed)
            assert view.response.body is not None
            for r in view.response.body.walk():
                if r.type != "record":
                    continue
                key, value = r.child("key"), r.child("value")
                assert key is not None and key.children and key.children[0].name == "version"
                kids = [c.name for c in key.children]
                if kids == ["version", "group", "topic", "partition"]:
                    seen.add("OffsetCommit")
                    assert "OffsetCommit" in (r.display or "")
                    if value is not None and value.value is None:
                        assert value.display == "tombstone" and "tombstone" in r.display
                        seen.add("tombstone")
                    else:
                        assert value is not None and value.children
                        assert value.child("offset") is not None
                        # the decoded fields sit inside the record's bytes
                        assert all(key.offset <= c.offset < key.offset + key.length for c in key.children)
                elif kids == ["version", "group"]:
                    seen.add("GroupMetadata")
                    assert "GroupMetadata" in (r.display or "")
        assert seen == {"OffsetCommit", "GroupMetadata", "tombstone"}
    finally:
        index.close()


@pytest.mark.parametrize("name", ["group-joins", "group-lag", "group-kip848", "group-cooperative"])
def test_the_index_feeds_the_group_insights_as_a_run_does(name):
    """The groups view's insights come from the TUI's index (its one pass, without record
    bodies, in batches): the same generations, rebalances, lag and status as ``groups``' run;
    a rebalance's exchanges are its group's, sent while it ran."""
    from analyzer.session.insights import Insights

    path = CAPTURES / f"{name}.pcap"
    a = Analysis(path, Options(records_bodies=False, packet_offsets=True))
    index = Index(Options(records_bodies=True), topic_ids=a.knowledge.topic_ids)
    for events in a.batches(0.05):
        index.add(events)
    index.finish()
    b = Analysis(path)
    ins = Insights(b.knowledge.topic_ids)
    out = b.run(ins)
    # (the producers' and the clients' too: the clients and topology views')
    assert index.insights.objects(out.last_ts) == ins.objects(out.last_ts)
    assert index.insights.groups.report(out.last_ts) == ins.groups.report(out.last_ts)
    assert index.insights.clients.flows_rows() == ins.clients.flows_rows()
    exchanges = full(path)
    for g in index.insights.groups.report(out.last_ts):
        for r in g["rebalances"]:
            rows = index.groups.between(g["group"], r["start"], r["end"])
            assert rows
            for i in rows:
                ex = exchanges[i]
                assert ex.request.body.get("group_id") == g["group"]
                assert r["start"] <= ex.request.frame.ts_first <= (r["end"] or float("inf"))
        for gen in g["generations"]:
            rows = index.groups.formed(g["group"], gen["generation"])
            assert rows
            assert {exchanges[i].api_key for i in rows} <= {11, 14, 68}
    index.close()


def test_lag_plot_numbers():
    """A lag held from one commit to the next, the largest in each column; eighth blocks."""
    from analyzer.tui.charts import column_plot, step_series

    assert step_series([(1, 5), (3, 0), (4, 10)], 0, 5, 10) == [None, None, 5, 5, 5, 5, 5, 0, 10, 10]
    assert step_series([(9, 2)], 0, 5, 2) == [None, 2]  # (after the axis: the last column)
    assert step_series([], 0, 1, 3) == [None, None, None]
    assert column_plot([None, 0, 4, 8], 2) == ["   █", "  ██"]
    assert column_plot([1, 8], 1) == ["▁█"]  # a positive value shows at least an eighth
    assert column_plot([0, 0], 2) == ["  ", "  "]


def test_a_views_pick_scopes_the_list():
    from analyzer.tui.listview import ListView

    index, _ = indexed(TXN)
    lv = ListView(list(index.rows))
    lv.picked = frozenset({3, 1, 7})
    lv.rebuild()
    assert sorted(lv.shown) == [1, 3, 7]
    lv.text = "errors"  # with a filter too: both keep
    lv.rebuild()
    assert all(index.rows[i].has_errors for i in lv.shown) and set(lv.shown) <= {1, 3, 7}
    index.close()
