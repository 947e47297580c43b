"""A big piece on Spark (one capture file, or the rotated files of one recording chained): byte-range
splits walked on the executors, one keyed shuffle by connection, the pipeline per connection
owner, and the stitching that makes the rows one run's.

A piece bigger than the split size (:data:`~analyzer.capture.split.DEFAULT_SPLIT`,
``analyze(split_size=...)``), on any file system ``pyarrow.fs`` reads (local, ``hdfs://``,
``s3a://``...: :func:`~analyzer.spark.source.open_ranged`, seeks and ranged reads, never the
whole file as one value), is cut by :func:`~analyzer.capture.split.splits`, file after file
for a chain (each file one split or more, with its own header; pcap at record boundaries found
by chained header checks, pcapng at block boundaries with the interface table carried; a
compressed file stays one split: one file alone is then analysed whole), as ``export -j`` cuts
a file or a chain. The splits are numbered in the piece's order, so the packets of a chain are
numbered on from file to file as :class:`~analyzer.capture.sets.CaptureSet` numbers them; each
row names its file as the piece analysed whole names it (an exchange the file of its first
packet, a connection's end and issue the file being read), the capture issues are named by
their file. Then:

1. **walk** (a task per few splits): each split is read once, each TCP packet going to
   ``owner``, the part its connection belongs to (canonical flow key: the plan of the first
   megabytes, else a hash, as ``export -j`` routes). A split of a plain pcap file on a local
   file system (a path, a ``file:`` URI) is walked as ``export -j`` walks its ranges
   (:func:`~analyzer.export.routes.walk_routes`): each owner gets, keyed ``(piece, owner,
   split, 0)``, where its packets are in the file (number in the split, time, offset, length:
   32 bytes a packet); any other split (pcapng, compressed, damage found) is read by
   :class:`~analyzer.export.parallel.SplitWalk` and each packet itself is keyed ``(piece,
   owner, split, number)``, as is every split on a remote store (an owner's reads of its own
   packets would be as many requests); each split also sends every owner its packet count
   (number -1);
2. **one shuffle**: ``repartitionAndSortWithinPartitions`` on the owner, sorted by split and
   number, so each owner gets its packets, or where to read them, in capture order (the
   counts of the splits before number them as one run does); an owner reads its packets of a
   routed split from the file, its packets close together in one read (the 1 GB
   rotated bench set: 794 MB shuffled before, 12 MB now);
3. **own**: each owner runs a :class:`~analyzer.export.parallel.Share` over its packets and
   turns its events into rows, with the connection ids of its own numbering;
4. **stitch**: the driver collects the small part (when each connection opened, what the
   knowledge learnt from each Metadata-like exchange, the splits' counts) and works out what
   one run knows where; a map renumbers the connections in the order they opened over the whole
   file and names topics (by id) and the broker software as one run names them at that point;
   each simple commit answered UNKNOWN_MEMBER_ID is judged again against the group members one
   run knows by then (``quirk.simple_commit_rejected``: members join and leave on other
   connections, which other owners may have); with the Parquet output, the exchange and issue
   events are numbered in the order one run emits them (``seq``: the owners send the packet
   number of each event, the end's by connection) and each exchange's ``state`` gets the
   connection id, the judged quirk, the names and the client software one run has there;
5. **insights**: each owner also sends each exchange's part of the insights (groups,
   producers, clients: :meth:`~analyzer.session.insights.Insights.facts`, computed with its
   connections' fetch sessions, and the exchange itself when the groups' timeline
   :meth:`~analyzer.session.insights.Insights.wants` it), each connection's end as the clients
   see it, and the topic ids the knowledge learnt; a second shuffle brings a piece's parts to
   one task, sorted in one run's order, which follows the insights as ``export -j``'s merge
   does (a packet's parts once the topic ids of all its exchanges are learnt, connection ends
   in their place among them) and makes the piece's insight rows.

The exchanges, issues, connections and records (and ``check --parquet``'s ``seq`` and ``state``,
the captures row's verdict, the insights' rows) are those of analysing the piece whole in
one task.
"""

from __future__ import annotations

import bisect
import contextlib
import copyreg
import os
import pickle
import traceback
from array import array
from collections.abc import Iterable, Iterator
from functools import partial

import orjson
from pyspark import StorageLevel
from pyspark.rdd import RDD
from pyspark.sql import SparkSession

from analyzer.capture.split import Split, SplitSource, splits
from analyzer.dissect.codecs import DEFAULT_LIMITS
from analyzer.dissect.constants import ApiKey
from analyzer.events import CaptureIssue, ConnectionEnd, ConnIssue
from analyzer.export.exchange_state import joined_state, state_parts
from analyzer.export.merge import (
    CONNECTION,
    END,
    EXCHANGE,
    ISSUE,
    SimpleCommit,
    TopicRefs,
    connection_ids,
    evicts,
    name_broker,
    name_broker_in,
    order_key,
    relabel,
    renumber,
    topic_refs,
    unnamed,
    with_issues,
)
from analyzer.export.parallel import Decoding, Share, SplitWalk, plan_owners, range_totals
from analyzer.export.routes import Route, read_routed, walk_routes
from analyzer.issues import CAPTURE_NO_TCP, CAPTURE_UNREADABLE, SPARK_ANALYSIS_FAILED
from analyzer.model import Exchange, Issue, Severity
from analyzer.pipeline import Outcome, no_tcp
from analyzer.plain import replace
from analyzer.reassembly.packet import decode_tcp
from analyzer.session.groups import GroupMembers, member_change
from analyzer.session.insights import Insights
from analyzer.session.knowledge import LEARNS_FROM, Knowledge
from analyzer.spark.pieces import TASK_BYTES, Named, Piece, open_ranged
from analyzer.spark.rows import (
    CaptureRow,
    ConnectionRow,
    ExchangeRow,
    IssueRow,
    RecordRow,
    connection_row,
    event,
    exchange_row,
    insight_rows,
    issue_row,
    record_rows,
    row_of,
)
from analyzer.tls.keylog import KeyLog

# what the owners send: a row, the driver's part, or an exchange's (a connection end's) part of
# the insights
_ROW, _KNOW, _OPENS, _SPLITS, _FAILED, _ORDER, _GROUP = range(7)


def _memoryview_as_bytes(m: memoryview):
    return bytes, (m.tobytes(),)


def plan_splits(piece: Piece, split_size: int) -> list[Split] | None:
    """The splits of a piece bigger than ``split_size``: those of each of its files in the
    piece's order (a chain of rotated files: each file one split or more, with its own header
    and interface table, as ``export -j`` cuts a chain); None: the piece is analysed whole
    (small, one file that is compressed or not a capture, or a file system that cannot be read
    by ranges here: its analysis then says why in one line naming the URI)."""
    if piece.size <= split_size:
        return None
    try:
        parts = [s for uri in piece.uris for s in splits(uri, split_size, open_ranged)]
    except (OSError, ValueError):
        return None  # the whole-piece analysis reports what is wrong with it
    return parts if len(parts) > 1 else None


def _walk(tasks: Iterable[tuple]) -> Iterator[tuple]:
    """Where the packets of some splits are, keyed ``(piece, owner, split, 0)``: for a split of a
    plain pcap file, each owner's packets as (number, ts, offset, length) in the file (it reads
    them itself, :func:`_read_routed`), else the packets themselves, keyed ``(piece, owner,
    split, number)``; then each split's counts, to every owner (number -1)."""
    for fno, sno, split, owners, parts in tasks:
        routed = None
        if _local(split.path):
            with contextlib.suppress(OSError):  # (SplitWalk says what failed)
                routed = walk_routes(split, owners, parts, open_ranged)
        if routed is not None:
            packets, first_ts, last_ts, skipped, linktype, routes = routed
            for owner, r in enumerate(routes):
                if r:
                    yield (fno, owner, sno, 0), (split.path, linktype, r)
            summary: tuple = (packets, first_ts, last_ts, skipped, [], [], "pcap", None)
        else:
            walk = SplitWalk(split, owners, parts, open_ranged)
            try:
                for owner, number, ts, linktype, data in walk:
                    yield (fno, owner, sno, number), (ts, linktype, bytes(data))
            except OSError as exc:  # the file went away or its file system failed: the file's issue
                where = f"{split.path}[{split.start}:{split.end}]"
                walk.issues.append(CAPTURE_UNREADABLE(f"cannot read {where} on the executor: {exc}"))
            summary = (walk.packets, walk.first_ts, walk.last_ts, walk.skipped, walk.issues, walk.secrets)
            summary += (walk.format, walk.compression)
        for owner in range(parts):
            yield (fno, owner, sno, -1), summary


def _local(uri: str) -> bool:
    """A file on this machine's file systems (a path, a ``file:`` URI): its owners read their
    packets from it. The packets of a file on a remote store (``hdfs://``, ``s3a://``) go
    through the shuffle: an owner's reads of its own packets would be as many requests."""
    return "://" not in uri or uri.startswith("file:")


def _read_routed(path: str, linktype: int, routes: bytes, base: int) -> Iterator[tuple]:
    """An owner's packets of a routed split (:func:`_walk`), read from the file in spans
    (:func:`~analyzer.export.routes.read_routed`): ``(index, ts, segment)``, ``base`` the
    number of the piece's packets before the split."""
    r = array("d")
    r.frombytes(routes)
    f, _size = open_ranged(path)
    with f:
        yield from read_routed(f, path, linktype, r, base)


def _shuffled(index: int, ts: float, linktype: int, data: bytes) -> Iterator[tuple]:
    """A packet that came through the shuffle, as :func:`_read_routed` gives them."""
    yield index, ts, decode_tcp(linktype, data)


class _RowShare(Share):
    """An owner's share of one piece: its events as rows, with what the stitching needs."""

    def __init__(self, name: str, fno: int, owner: int, opts: dict, uris: tuple | None = None) -> None:
        keylog = KeyLog()
        if opts["tls_keylog"] is not None:
            keylog.add_text(opts["tls_keylog"], "the key log")
        self.secrets: list[bytes] = []
        keylog.attach(self.secrets)
        decoding = Decoding(opts["records"], opts["show_secrets"], opts.get("limits", DEFAULT_LIMITS))
        super().__init__(
            decoding.options(),
            opts["ports"],
            keylog,
            False,
            None,
            False,
        )
        self.name, self.fno, self.owner, self.opts = name, fno, owner, opts
        # a chain: the file of each split, and the number of each file's first packet (as
        # CaptureSet.files has them, once the counts of the splits before are known)
        self.uris = uris
        self.starts: list[int] = [1]
        self.files: list[str] = [uris[0]] if uris else []
        self.pending: list[tuple] = []
        self.exchanges = 0
        self.issues = 0
        # the batch of each exchange and issue event (their order: seq), those of the end by
        # connection
        self.marks = array("q")
        self.flushed: list[int] = []

    def split_starts(self, sno: int, first: int) -> None:
        """Split ``sno`` starts at packet ``first`` (of the piece): a new file when a chain's
        split is its file's first."""
        uris = self.uris
        if uris and sno < len(uris) and uris[sno] != uris[sno - 1]:
            self.starts.append(first)
            self.files.append(uris[sno])

    def file_of(self, number: int | None) -> str:
        """The ``capture`` of a row, as :func:`~analyzer.spark.source.analyze_piece` names it:
        the piece for one file; for a chain, the file of packet ``number`` (None or the end:
        the chain's last file)."""
        if not self.uris:
            return self.name
        if number is None or number == END:
            return self.uris[-1]
        return self.files[bisect.bisect_right(self.starts, number) - 1]

    def _emit(self, events: list, batch: int) -> None:
        ids = self.ids
        opts = self.opts
        fno, owner = self.fno, self.owner
        here = self.file_of(batch)  # the file being read when the events come
        out = self.pending
        learnt = ids.used  # a topic id was looked up while labelling this batch's exchanges
        ids.used = False
        for ev in events:
            t = type(ev)
            if t is Exchange:
                self.exchanges += 1
                msg = ev.request or ev.response
                name = self.file_of(msg.frame.packet_indexes[0]) if msg and msg.frame.packet_indexes else here
                row = exchange_row(name, ev, ids, opts["with_json"], opts["records"], opts["bodies"])
                refs = topic_refs(ev) if learnt or ids.used else None
                rows = [event("exchange", row)]
                if opts["records"]:  # topics by id left unnamed: the stitching names them
                    rows += [event("record", r) for r in record_rows(name, ev, {} if refs else ids)]
                ids.used = False
                named = any(unnamed(i.message) for i in ev.all_issues())
                commit = SimpleCommit.of(ev) if ev.api_key == _OFFSET_COMMIT else None
                if commit is not None:
                    named = True  # its quirk, if one run names it, says "the broker" until stitched
                state = None
                if opts["bodies"]:  # check --parquet's state: the stitching completes it
                    state = state_parts(ev)
                self._mark(batch, ev.conn.id)
                out.append(
                    (
                        _ROW,
                        fno,
                        owner,
                        batch,
                        self._seq,
                        ev.conn.id,
                        EXCHANGE,
                        _packed(rows, state),
                        refs,
                        named,
                        commit,
                    )
                )
                if ev.api_key in LEARNS_FROM:
                    out.append((_KNOW, fno, owner, batch, self._seq, ev.conn.id, _learnt(ev)))
                # the insights' part (Insights.wants/facts; this owner's fetch sessions)
                told = self.insights.facts(ev)
                wants = Insights.wants(ev)
                if told is not None or wants:
                    timeline = ev if wants else None
                    out.append((_GROUP, fno, owner, batch, self._seq, ev.conn.id, (timeline, told)))
            elif t is ConnIssue:
                self.issues += 1
                named = unnamed(ev.issue.message)
                issue = event("issue", issue_row(here, ev))
                self._mark(batch, ev.conn.id)
                at = (_ROW, fno, owner, batch, self._seq, ev.conn.id, ISSUE)
                out.append((*at, _packed([issue]), None, named, None))
            elif t is ConnectionEnd:
                end = event("connection", connection_row(here, ev.conn))
                self._mark(batch, ev.conn.id)
                at = (_ROW, fno, owner, batch, self._seq, ev.conn.id, CONNECTION)
                out.append((*at, _packed([end]), None, False, None))
                # the clients' part (plain: its endpoints and times)
                out.append((_GROUP, fno, owner, batch, self._seq, ev.conn.id, (Insights.end_facts(ev),)))
            else:
                continue
            self._seq += 1

    def _mark(self, batch: int, conn: int) -> None:
        if batch == END:
            self.flushed.append(conn)
        else:
            self.marks.append(batch)

    def order(self) -> tuple:
        """What the driver needs to number the events as one run does (seq)."""
        return (_ORDER, self.fno, self.owner, self.marks, self.flushed)

    def drain(self) -> list[tuple]:
        out, self.pending = self.pending, []
        return out

    def close(self, splits_seen: list) -> list[tuple]:
        part = self.finish(None)
        out = self.drain()
        out.append(
            (_OPENS, self.fno, self.owner, part.opens, self.exchanges, self.issues)
            + (part.keylog_pulled, part.keylog_issues, part.table, part.evicted)
            + (part.tls_connections, part.tls_decrypted, self.keylog.given)
        )
        out.append(self.order())
        if splits_seen:
            out.append((_SPLITS, self.fno, splits_seen))
        return out


def _packed(rows: list, state: tuple | None = None) -> bytes:
    """An owner's rows of one event (and an exchange's state parts), pickled apart: the owners'
    output is read three times (the driver's small part, the stitching, the groups' parts) and
    only the stitching reads the rows, the exchanges' JSON and state (about 10 KB an exchange),
    which a bytes value spares the other two readers decoding."""
    return pickle.dumps((rows, state), pickle.HIGHEST_PROTOCOL)


def _learnt(ex: Exchange) -> tuple[dict, str | None, tuple | None, dict]:
    """What the knowledge learns from ``ex`` whatever it knew before: topic ids, cluster id, the
    change of a group's live members and the client software."""
    k = Knowledge()
    topics = ex.topics
    k.learn(ex)
    ex.topics = topics
    return dict(k.topic_ids), k.cluster_id, member_change(ex), dict(k.clients)


_OFFSET_COMMIT = ApiKey.OFFSET_COMMIT


def _failed(fno: int, at: int | None) -> tuple:
    """An owner's analysis stopped on an internal error: what the driver reports (everything
    before it is kept, as for a whole file)."""
    tb = traceback.format_exc(limit=-3).strip().replace("\n", " | ")
    return (_FAILED, fno, at, tb)


def _close(share: _RowShare, seen: list, broken: bool) -> list[tuple]:
    """The end of an owner's share (``broken``: its analysis stopped on an internal error)."""
    if not broken:
        try:
            return share.close(seen)
        except MemoryError:
            raise
        except Exception:  # noqa: BLE001 - a bug must not fail the whole job: the file's issue
            out = share.drain()
            out.append(_failed(share.fno, None))
    else:
        out = []
    pipe = share.pipe
    table, evicted = share.table.log, pipe.reasm.evicted
    out.append(
        (_OPENS, share.fno, share.owner, share.opens, share.exchanges, share.issues, 0, [], table, evicted)
        + (pipe.tls_connections, pipe.tls_decrypted, share.keylog.given)
    )
    out.append(share.order())
    if seen:
        out.append((_SPLITS, share.fno, seen))
    return out


def _own(items: Iterable[tuple], names: list[tuple], opts: dict) -> Iterator[tuple]:  # noqa: C901 - the owner's loop, the split counts inline
    """An owner's packets, in capture order, through its share."""
    copyreg.pickle(memoryview, _memoryview_as_bytes)  # rows and issues may hold slices of frames
    share: _RowShare | None = None
    current = None
    bases: dict[int, int] = {}
    seen: list = []
    broken = False
    for (fno, owner, sno, number), value in items:
        if (fno, owner) != current:
            if share is not None:
                yield from _close(share, seen, broken)
            name, uris = names[fno]
            current, share, bases, seen = (fno, owner), _RowShare(name, fno, owner, opts, uris), {0: 0}, []
            broken = False
        assert share is not None
        if number < 0:  # a split's counts: they number the next split's packets
            bases[sno + 1] = bases[sno] + value[0]
            share.split_starts(sno + 1, bases[sno + 1] + 1)
            for secret in value[5]:  # the split's Decryption Secrets Blocks (its header's too)
                if secret not in share.secrets:
                    share.secrets.append(secret)
            if owner == 0:
                seen.append((sno, value))
            continue
        if broken:
            continue
        if number == 0:  # a routed split: this owner's packets, read from the file
            packets = _read_routed(value[0], value[1], value[2], bases[sno])
        else:
            packets = _shuffled(bases[sno] + number, *value)
        index = bases[sno] + max(number, 1)
        try:
            for index, ts, seg in packets:
                share.feed(index, ts, seg)
                if share.pending:
                    yield from share.drain()
        except MemoryError:
            raise
        except Exception:  # noqa: BLE001 - a bug must not fail the whole job: the file's issue
            broken = True
            yield from share.drain()
            yield _failed(fno, index)
            continue
    if share is not None:
        yield from _close(share, seen, broken)


class _Knowing:
    """What one run knows at each point of a piece (an event's order key): the topic ids and the
    broker software, from the knowledge learnt in order over every owner."""

    def __init__(self, learnt: list[tuple]) -> None:
        k = Knowledge()
        self.tids: dict[str, tuple[list, list]] = {}  # topic id -> (keys, names)
        self.sw_keys: list = []
        self.sw: list = []
        self.groups: dict[str, tuple[list, list]] = {}  # group id -> (keys, empty after each)
        self.clients: dict[str, tuple[list, list]] = {}  # client id -> (keys, software)
        members = GroupMembers()
        software = None
        for key, (topic_ids, cluster_id, change, clients) in sorted(learnt, key=lambda x: x[0]):
            for cid, sw in clients.items():
                keys, known = self.clients.setdefault(cid, ([], []))
                keys.append(key)
                known.append(sw)
            if change is not None:
                gid = change[0]
                members.apply(*change)
                keys, empty = self.groups.setdefault(gid, ([], []))
                keys.append(key)
                empty.append(members.empty(gid))
            for tid, name in topic_ids.items():
                keys, names = self.tids.setdefault(tid, ([], []))
                keys.append(key)
                names.append(name)
            if cluster_id:
                k.cluster_id = cluster_id
            now = k.broker_software()
            if now != software:
                software = now
                self.sw_keys.append(key)
                self.sw.append(now)

    def topic(self, tid, key):
        got = self.tids.get(tid)
        if got is None:
            return None
        i = bisect.bisect_right(got[0], key)
        return got[1][i - 1] if i else None

    def software(self, key) -> str | None:
        i = bisect.bisect_right(self.sw_keys, key)
        return self.sw[i - 1] if i else None

    def client(self, client_id: str | None, key) -> tuple | None:
        """The software of ``client_id`` one run knows when it emits the event at ``key``: one
        run emits a packet's events once it learnt from all of them (the end's, from all)."""
        got = self.clients.get(client_id) if client_id is not None else None
        if got is None:
            return None
        i = bisect.bisect_right(got[0], (key[0], _AFTER))
        return got[1][i - 1] if i else None

    def empty(self, group_id: str, key) -> bool:
        """No live member of the group is known at ``key`` (learnt before it)."""
        got = self.groups.get(group_id)
        if got is None:
            return True
        i = bisect.bisect_left(got[0], key)  # a change at ``key`` itself is not this event's
        return got[1][i - 1] if i else True


_AFTER = float("inf")  # (batch, _AFTER): after every event of the batch


class _Order:
    """One run's numbering of a piece's exchange, issue and connection-end events (seq, 1-based), from the
    batches of every owner's events: a packet's events are one owner's (its connection's); the
    end's are ordered by connection, then as their owner emitted them."""

    def __init__(self, orders: list[tuple], idmap: dict) -> None:
        marks = array("q")
        ends: dict[int, int] = {}
        for _tag, _fno, owner, m, flushed in orders:
            marks.extend(m)
            for local in flushed:
                conn = idmap[(owner, local)]
                ends[conn] = ends.get(conn, 0) + 1
        self.marks = array("q", sorted(marks))
        self.ends: dict[int, int] = {}
        n = len(self.marks)
        for conn in sorted(ends):
            self.ends[conn] = n
            n += ends[conn]
        self.total = n

    def first(self, batch: int, conn: int) -> int:
        """The number of the events before the first of ``batch`` (of ``conn``'s at the end)."""
        if batch == END:
            return self.ends[conn]
        return bisect.bisect_left(self.marks, batch)


def _stitch(items: Iterable[tuple], shared) -> Iterator[tuple]:
    """An owner's rows as one run has them: connection ids over the whole piece, topics by id and
    the broker software named as one run knew them at that point; ``shared``: the driver's
    tables, broadcast (None for a piece analysed whole instead)."""
    tables: dict = shared.value
    at: tuple = ()  # the current batch (file, owner, batch, connection at the end)
    n = 0  # its exchange and issue events so far
    for it in items:
        if it[0] != _ROW or tables[it[1]] is None:
            continue
        _tag, fno, owner, batch, seq, local, kind, packed, refs, named, commit = it
        rows, state = pickle.loads(packed)
        idmap, knowing, order = tables[fno]
        conn = idmap[(owner, local)]
        key = order_key(batch, seq, conn)
        software = knowing.software(key) if named else None
        where = (fno, owner, batch, conn if batch == END else 0)
        if where != at:
            at, n = where, 0
        n += 1
        number = order.first(batch, conn) + n
        for ev in rows:
            what = ev[0]
            if what == "exchange":
                x = ExchangeRow._make(row_of(ev))
                empty = None
                if commit is not None:
                    empty = knowing.empty(commit.group, key)
                    x = _rejudge(x, commit, empty)
                x = _exchange(x, conn, key, refs, knowing, software)
                if state is not None:
                    x = _with_state(x, state, conn, key, knowing, software, commit, empty, number)
                yield event("exchange", x)
            elif what == "record":
                r = RecordRow._make(row_of(ev))._replace(connection=conn)
                if refs is not None:
                    r = r._replace(topic=knowing.topic(r.topic, key) or r.topic)
                yield event("record", r)
            elif what == "issue":
                i = IssueRow._make(row_of(ev))._replace(connection=conn, seq=number)
                if software is not None:
                    i = i._replace(message=name_broker(i.message, software))
                yield event("issue", i)
            else:
                yield event(
                    "connection", ConnectionRow._make(row_of(ev))._replace(connection=conn, seq=number)
                )


def _with_state(
    r: ExchangeRow,
    state: tuple[bytes, bytes, bytes, bytes],
    conn: int,
    key: tuple,
    knowing: _Knowing,
    software: str | None,
    commit: SimpleCommit | None,
    empty: bool | None,
    number: int | None,
) -> ExchangeRow:
    """An exchange row with its ``seq`` and ``state`` as one run writes them: the connection's id
    over the whole piece, the commit's quirk judged again, the topics and the broker named, the
    client software one run knew then (``state``: the owner's
    :func:`~analyzer.export.exchange_state.state_parts`, its decoded trees not parsed again)."""
    issues = None if commit is None else commit.own_issues(bool(empty))
    js = joined_state(state, conn, issues, r.topic_partitions, knowing.client(r.client_id, key))
    if software is not None:
        js = name_broker_in(js, software)
    return r._replace(seq=number, state=js.decode())


def _rejudge(r: ExchangeRow, commit: SimpleCommit, empty: bool) -> ExchangeRow:
    """A simple commit's exchange row with ``quirk.simple_commit_rejected`` as one run names it
    (``empty``: one run knows no live member of its group there), its broker still unnamed."""
    issues: list[Issue] = commit.issues(empty)
    worst = max((i.severity for i in issues), default=None)
    listed = orjson.dumps([i.to_dict() for i in issues]).decode()
    return r._replace(
        issues=[i.code for i in issues],
        severity=None if worst is None else str(worst),
        json=None if r.json is None else with_issues(r.json.encode(), issues).decode(),
        issue_details=None if r.issue_details is None else listed,
    )


def _exchange(
    r: ExchangeRow, conn: int, key: tuple, refs: TopicRefs | None, knowing: _Knowing, software: str | None
) -> ExchangeRow:
    """An exchange row with the connection id, the topics and the broker as one run names them."""
    r = r._replace(connection=conn)
    js = None if r.json is None else renumber(r.json.encode(), EXCHANGE, conn)
    if refs is not None:

        def name(nm, tid):
            return nm if nm else knowing.topic(tid, key) or tid

        labels = refs.topics(name)
        if list(labels) != r.topics:
            r = r._replace(topics=list(labels), topic_partitions=labels)
            if js is not None:
                js = relabel(js, labels)
        r = r._replace(record_counts=refs.record_counts(name))
    if software is not None:
        if js is not None:
            js = name_broker_in(js, software)
        if r.issue_details is not None:
            r = r._replace(issue_details=name_broker_in(r.issue_details.encode(), software).decode())
    if js is not None:
        r = r._replace(json=js.decode())
    return r


def _split_issues(cut: Split, before: int, issues: list) -> list:
    """A split's issues with the file's packet numbers: as its walk found them when it knew the
    number of its first packet (pcapng), else from the split read again from packet
    ``before + 1`` (a damaged pcap split, on the driver)."""
    if not issues or cut.first is not None or not before:
        return issues
    src = SplitSource(cut, before + 1, open_ranged)
    for _ in src:
        pass
    return src.issues


def _capture_rows(
    piece: Piece,
    cuts: list[Split],
    walks: list,
    opens: int,
    exchanges: int,
    issues: int,
    keylog,
    events: int,
    opts: dict,
    tls: tuple[int, int, bool] = (0, 0, False),
) -> list[tuple]:
    """The piece's capture issues and its captures row, as the whole-piece analysis gives them
    (the capture issues come last, after the ``events`` exchange and issue events); ``tls``:
    the owners' TLS connections, those decrypted, and whether a key log was given."""
    walks = sorted(walks, key=lambda x: x[0])
    found = []
    before = 0  # packets of the file before the split
    chain = len(piece.uris) > 1
    for sno, w in walks:
        cut = cuts[sno]
        if sno and cut.path != cuts[sno - 1].path:
            before = 0
        damage = _split_issues(cut, before, w[4])
        if chain:  # as CaptureSet reports a file's damage: named by the file
            base = os.path.basename(cut.path)
            damage = [replace(i, message=f"{base}: {i.message}", where=i.where or base) for i in damage]
        found += damage
        before += w[0]
    walks = [v for _s, v in walks]
    totals = range_totals([Route(True, w[0], w[1], w[2], w[3], []) for w in walks])
    found += list(keylog)
    if no_tcp(totals.packets, totals.skipped):
        found.append(CAPTURE_NO_TCP("no TCP traffic in the capture"))
    last = totals.last_ts if totals.packets else None
    name = piece.name
    rows = [
        event("issue", issue_row(name, CaptureIssue(i, last), events + n)) for n, i in enumerate(found, 1)
    ]
    damaged = any(i.severity == Severity.ERROR for i in found)
    outcome = Outcome(
        name,
        packets=totals.packets,
        connections=opens,
        first_ts=totals.first_ts,
        last_ts=totals.last_ts,
        skipped=totals.skipped,
        exchanges=exchanges,
        tls_connections=tls[0],
        tls_decrypted=tls[1],
        keylog_given=tls[2],
        capture_issues=tuple(found),
    )
    # as one run says them, also for a piece without a Kafka exchange: why (the walks' skipped
    # packets, the owners' TLS connections without keys) and its exit code
    inconclusive = outcome.inconclusive()
    code = int(outcome.exit_code())
    fmt, compression = (walks[0][6], walks[0][7]) if walks else (None, None)
    row = CaptureRow(
        name,
        fmt,
        compression,
        piece.size,
        totals.packets,
        opens,
        exchanges,
        issues + len(found),
        totals.first_ts,
        last,
        damaged,
        list(piece.uris),
        inconclusive,
        code,
        opts["records"],
        None,  # (a file analysed with -Y is not split)
    )
    rows.append(event("capture", row))
    return rows


def analyze_split(
    spark: SparkSession, files: list[tuple[Piece, list[Split]]], opts: dict, tasks: int
) -> tuple[RDD, RDD, list[Piece]]:
    """The event rows of big pieces (files, chains) cut into splits (see the module docstring),
    the RDD of the owners' output (persisted: unpersist it once the rows are no longer needed),
    and the pieces to analyse whole instead (one run closes some of their connections early:
    more than ``max_connections`` were open at once, and which ones depends on them all). Runs
    the walk, the shuffle and the owners now (a Spark job): the stitching needs their small
    part."""
    sc = spark.sparkContext
    work = []
    offsets = []
    total = 0
    for fno, (piece, cuts) in enumerate(files):
        parts = owner_parts(piece.size, len(cuts), sc.defaultParallelism)
        f, _size = open_ranged(piece.uris[0])
        with f:
            owners = plan_owners(Named(f, piece.uris[0]), parts)  # type: ignore[arg-type]  # a stream with a name
        offsets.append(total)
        total += parts
        work += [(fno, sno, split, owners, parts) for sno, split in enumerate(cuts)]
    base = list(offsets)
    # a chain's rows name the file of each split (one file's, the piece)
    names = [(p.name, tuple(c.path for c in cuts) if len(p.uris) > 1 else None) for p, cuts in files]
    slices = max(1, min(len(work), tasks))
    owned = (
        sc.parallelize(work, slices)
        .mapPartitions(_walk)
        .repartitionAndSortWithinPartitions(total, partial(_partition, base=base))
        .mapPartitions(partial(_own, names=names, opts=opts))
        .persist(StorageLevel.DISK_ONLY)
    )
    small = owned.filter(lambda it: it[0] != _ROW and it[0] != _GROUP).collect()
    tables: dict[int, tuple | None] = {}
    finals: dict[int, tuple[str, float | None]] = {}  # each piece's name and end (its groups' now)
    rows: list[tuple] = []
    again: list[Piece] = []
    tracked = max(opts.get("limits", DEFAULT_LIMITS).max_connections, 1)
    for fno, (piece, cuts) in enumerate(files):
        mine = [it for it in small if it[1] == fno]
        ends = [it for it in mine if it[0] == _OPENS]
        if any(it[9] for it in ends) or evicts([it[8] for it in ends], tracked):
            tables[fno] = None
            again.append(piece)
            continue
        idmap = connection_ids((it[2], it[3]) for it in ends)
        learnt = [(order_key(it[3], it[4], idmap[(it[2], it[5])]), it[6]) for it in mine if it[0] == _KNOW]
        order = _Order([it for it in mine if it[0] == _ORDER], idmap)
        tables[fno] = (idmap, _Knowing(learnt), order)
        walks = [w for it in mine if it[0] == _SPLITS for w in it[2]]
        keylog = max(ends, key=lambda it: it[6])[7] if ends else []
        for it in mine:
            if it[0] == _FAILED:
                at = "at the end" if it[2] is None else f"at packet {it[2]}"
                stopped = f"the analysis of some connections stopped {at}: ({it[3]})"
                keylog = [*keylog, SPARK_ANALYSIS_FAILED(stopped)]
        exchanges = sum(it[4] for it in ends)
        issues = sum(it[5] for it in ends)
        tls = (sum(it[10] for it in ends), sum(it[11] for it in ends), any(it[12] for it in ends))
        made = _capture_rows(
            piece, cuts, walks, len(idmap), exchanges, issues, keylog, order.total, opts, tls
        )
        finals[fno] = (piece.name, CaptureRow._make(row_of(made[-1])).last_ts)
        rows += made
    # (broadcast: the events' batches are 8 bytes an event, read by every task)
    shared = sc.broadcast(tables)
    stitched = owned.mapPartitions(partial(_stitch, shared=shared))
    groups = (
        owned.mapPartitions(partial(_group_parts, shared=shared))
        .repartitionAndSortWithinPartitions(max(1, len(files)), _piece_of)
        .mapPartitions(partial(_groups, finals=finals))
    )
    return stitched.union(sc.parallelize(rows, 1)).union(groups), owned, again


_LEARN, _APPLY = 0, 1  # in a batch, what the knowledge learnt comes before the groups' parts


def _group_parts(items: Iterable[tuple], shared) -> Iterator[tuple]:
    """The consumer groups' parts of an owner's exchanges and what the knowledge learnt (the
    topic ids), keyed by their place in one run's order: ``(piece, batch, connection at the
    end, seq, _LEARN | _APPLY)``."""
    tables: dict = shared.value
    for it in items:
        tag = it[0]
        if (tag != _GROUP and tag != _KNOW) or tables[it[1]] is None:
            continue
        fno, owner, batch, seq, local = it[1:6]
        conn = tables[fno][0][(owner, local)]
        key = (fno, *order_key(batch, seq, conn))
        if tag == _KNOW:
            yield (*key, _LEARN), it[6][0]
        else:
            yield (*key, _APPLY), it[6]


def _piece_of(key: tuple) -> int:
    return key[0]


def _groups(items: Iterable[tuple], finals: dict) -> Iterator[tuple]:
    """The insights of each piece from their parts in one run's order, as ``export -j``'s merge
    follows them (:func:`analyzer.export.parallel.combine`): a packet's parts once the knowledge
    learnt from all of its exchanges (the end's: from all of them), a connection's end in its
    place among them."""
    piece: int | None = None
    insights = Insights()
    topic_ids: dict[str, str] = {}
    at = None
    pending: list[tuple] = []
    for (fno, batch, _conn, _seq, what), value in items:
        if fno != piece:
            if piece is not None:
                yield from _insight_rows_of(insights, pending, finals[piece])
            piece, at, pending = fno, None, []
            topic_ids = {}
            insights = Insights(topic_ids)
        if batch != at:
            _apply(insights, pending)
            at, pending = batch, []
        if what == _LEARN:
            topic_ids.update(value)
        else:
            pending.append(value)
    if piece is not None:
        yield from _insight_rows_of(insights, pending, finals[piece])


def _apply(insights: Insights, parts: list[tuple]) -> None:
    for part in parts:
        if len(part) == 1:  # a connection's end
            insights.apply_end(part[0])
        else:
            insights.apply(*part)


def _insight_rows_of(insights: Insights, pending: list[tuple], end: tuple) -> list[tuple]:
    _apply(insights, pending)
    insights.done()
    name, now = end
    return insight_rows(name, insights, now)


def owner_parts(size: int, splits: int, cores: int) -> int:
    """How many owners share a piece's connections: two per core, and more for a big piece, so
    that an owner's task (its packets, the rows it writes) stays about :data:`TASK_BYTES` of
    capture however big the piece is (four owners for a 10 GB file took 2.5 GB each and ran the
    1 GiB driver JVM out of heap); at most one per split."""
    return max(1, min(splits, max(2 * cores, -(-size // TASK_BYTES))))


def _partition(key: tuple, base: list[int]) -> int:
    return base[key[0]] + key[1]
