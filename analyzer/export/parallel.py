"""``export -j N`` on one capture (a file, or the rotated pieces of one recording): N processes
each analyse some of the TCP connections, and a merge writes exactly what one process writes.

Why connections and not stretches of time: all that a connection's exchanges are comes from
that connection's own packets (reassembly, framing, pairing, decoding), in any process; a
stretch of time would cut connections in the middle of frames and of request/response pairs.
Three things do depend on the other connections, and the merge puts them right:

* **connection ids** number the connections in the order they open, over all of them: each
  process numbers its own and says at which packet each opened; the merge renumbers (the id in
  every line is rewritten at its known place);
* **knowledge** learnt from another connection's exchanges (topic ids -> names from Metadata
  responses, client software, groups and their live members): processes send the exchanges
  knowledge is learnt from and, for each exchange that names a topic by id, its topic references;
  the merge learns in capture order and re-labels the exchanges whose topics the process could
  not name as one run would; processes also send each simple commit answered UNKNOWN_MEMBER_ID
  (:func:`~analyzer.session.groups.simple_commit`), which the merge judges again against the
  members one run knows by then (``quirk.simple_commit_rejected``);
* the **summary**: processes send what the statistics count of each event
  (:func:`~analyzer.session.stats.exchange_facts`); the merge counts them in capture order.

Plain pcap files (one, or the rotated pieces of one recording) are read once: each process walks
byte ranges of them and routes each packet to the process that owns its connection (as a file
offset); the owners then read their packets from the files. Other captures (pcapng, compressed,
damage found in a range) are read whole by every process, each keeping its connections'
packets (decoding every TCP header: about a fifth of the work). A connection belongs to the
process given by a plan made from the first megabytes (the biggest connections spread first),
else by a hash of its address pair.
Events are written in the order one run emits them: by the packet that completed them, then, at
the end, by connection.
Lines go through a temporary file per process; the merge holds only a small record per event.

The pieces are usable apart: :class:`Share` analyses the segments of some connections (fed in
capture order) into a :class:`Part`, and :func:`merge` writes the parts as one export, given the
capture's :class:`Totals`: a process on another machine can run a share on the packets of the
connections it was given (keyed by :func:`flow_key`), its part carrying its lines.
"""

from __future__ import annotations

import contextlib
import copyreg
import heapq
import io
import multiprocessing
import os
import pickle
import signal
import struct
import tempfile
import zlib
from array import array
from collections import Counter
from multiprocessing.reduction import ForkingPickler
from typing import Any, BinaryIO, NamedTuple

import orjson

from analyzer.capture.files import MAX_RECORD, PCAP_MAGIC, CaptureFile
from analyzer.capture.sets import CaptureSet
from analyzer.capture.split import MIN_SPLIT, Opener, Split, SplitSource, open_local, splits
from analyzer.dissect.constants import ApiKey
from analyzer.dissect.message import Options
from analyzer.events import CaptureIssue, ConnectionEnd, ConnIssue, Skip
from analyzer.export.jsonout import connection_json, exchange_json, stream_event_json
from analyzer.export.writer import Writer
from analyzer.issues import CAPTURE_NO_TCP, QUIRK_SIMPLE_COMMIT_REJECTED, STREAM_GAP
from analyzer.model import Exchange, Issue
from analyzer.pipeline import Analysis, Outcome, Pipeline
from analyzer.reassembly.packet import decode_tcp, skip_text
from analyzer.session.groups import simple_commit, simple_commit_rejected
from analyzer.session.knowledge import EXCHANGE_TOPIC_ARRAYS, LEARNS_FROM, UNNAMED_BROKER
from analyzer.session.records import FETCH_APIS
from analyzer.session.stats import Stats, exchange_facts, topic_record_counts
from analyzer.tls.keylog import KeyLog

SAMPLE = 8 << 20  # capture bytes read to plan which process takes which connection
_FLUSH = 1 << 62  # sort key of the events of the end of the capture, after every packet
_EXCHANGE, _CONNECTION, _GAP, _ISSUE = range(4)
_SECTIONS = (None, "connections", "gaps", "issues")
_OFFSET_COMMIT = ApiKey.OFFSET_COMMIT


class Job(NamedTuple):
    paths: tuple[str, ...]
    part: int
    parts: int
    owners: dict  # canonical address pair -> part (the plan); others by hash
    records_bodies: bool
    show_secrets: bool
    ports: tuple[int, ...]
    keylog: str | None
    spans: bool
    tmpdir: str | None  # where the lines go (a temporary file); None: in the Part itself
    render: bool = True  # False: no lines (the statistics only)


class PartFailed(Exception):
    """A process could not do its share (the reason is the message): one process must."""


class Totals(NamedTuple):
    """What one run counts of the whole capture, whoever analyses which connection."""

    packets: int
    first_ts: float | None
    last_ts: float
    skipped: Counter  # why packets were not usable TCP segments, in the order first seen
    issues: list[Issue]  # the capture's damage
    secrets: list[bytes]  # the capture's TLS key logs (pcapng Decryption Secrets Blocks)


class Part(NamedTuple):
    """What one share sends back: one record per event (its lines are in ``lines``)."""

    items: list  # (batch key, seq, kind, local conn id, line length, extra)
    opens: list[int]  # packet number at which each of its connections opened (local id - 1)
    lines: str | bytes  # its rendered lines: a temporary file, or the bytes themselves
    totals: Totals | None  # the whole capture's (export -j: every process reads all of it)
    tls_connections: int
    tls_decrypted: int
    keylog_issues: list[Issue]  # the key log's problems, as far as this part read it
    keylog_pulled: int  # the capture's secret texts this part's connections made it read


def flow_key(seg) -> tuple:
    """The connection of a TCP segment, the same both ways: ((addr, port), (addr, port)) sorted."""
    a, b = (seg[0], seg[1]), (seg[2], seg[3])
    return (a, b) if a <= b else (b, a)


def _hash_owner(key: tuple, parts: int) -> int:
    (sa, pa), (sb, pb) = key
    return zlib.crc32(bytes(sa) + bytes(sb) + struct.pack(">HH", pa, pb)) % parts


class Router:
    """Which part owns the connection of each TCP segment: the plan's (``owners``: canonical
    address pair -> part), else by a hash of the pair; remembered per direction. What routes
    packets to owners in ``export -j`` and on Spark's executors (:class:`SplitWalk`)."""

    __slots__ = ("owners", "parts", "seen")

    def __init__(self, owners: dict, parts: int) -> None:
        self.owners, self.parts = owners, parts
        self.seen: dict[tuple, int] = {}

    def __call__(self, seg) -> int:
        k4 = seg[:4]
        o = self.seen.get(k4)
        if o is None:
            key = flow_key(seg)
            o = self.owners.get(key)
            o = self.seen[k4] = o if o is not None else _hash_owner(key, self.parts)
        return o


def _skip(skipped: dict, why: str, number: int) -> None:
    """Count a packet that is no usable TCP segment: reason -> [count, number of its first]."""
    if why in skipped:
        skipped[why][0] += 1
    else:
        skipped[why] = [1, number]


class SplitWalk:
    """One split of a capture file (:mod:`analyzer.capture.split`: pcap at record boundaries,
    pcapng at block boundaries with its interface table carried) walked once: iterating gives
    each TCP packet as ``(owner, number, ts, linktype, data)``, ``number`` counting the split's
    packets from 1 and ``owner`` the part of its connection (:class:`Router`). Once walked:
    the split's ``count``, ``first_ts``, ``last_ts``, ``skipped`` (reason -> [count, number of
    the first]), ``issues`` (its reader's), ``secrets`` (pcapng Decryption Secrets Blocks),
    ``format`` and ``compression``. Spark's executors walk splits of big files with it and
    shuffle the packets to their owners, who each run a :class:`Share`.

    The issues' byte offsets are the file's; their packet numbers too when the split knows the
    number of its first packet (``split.first``: pcapng), else they count from the split's."""

    def __init__(self, split: Split, owners: dict, parts: int, opener: Opener = open_local) -> None:
        self.split = split
        self.opener = opener
        self.route = Router(owners, parts)
        self.count = 0
        self.first_ts: float | None = None
        self.last_ts = 0.0
        self.skipped: dict[str, list[int]] = {}
        self.issues: list[Issue] = []
        self.secrets: list[bytes] = []
        self.format: str | None = None
        self.compression: str | None = None

    def __iter__(self):
        first = self.split.first or 1
        src = SplitSource(self.split, first, self.opener)
        base = first - 1
        route = self.route
        skipped = self.skipped
        number = 0
        ts = 0.0
        try:
            for index, ts, linktype, data in src:
                number = index - base
                if self.first_ts is None:
                    self.first_ts = ts
                seg = decode_tcp(linktype, data)
                if type(seg) is Skip:
                    _skip(skipped, skip_text(seg, linktype), number)
                    continue
                yield route(seg), number, ts, linktype, data
        finally:
            self.count, self.last_ts = number, ts if number else 0.0
            self.issues, self.secrets = list(src.issues), list(src.secrets)
            self.format, self.compression = src.format, src.compression


def plan_owners(path: str | BinaryIO, parts: int, sample: int = SAMPLE) -> dict:
    """Which process takes which connection, from the payload bytes of the connections seen in
    the first ``sample`` bytes (of a file, or of a binary stream read from its start): the
    biggest first, each to the least loaded process."""
    size: Counter = Counter()
    cap = CaptureFile(path)
    for _, _ts, linktype, data in cap:
        seg = decode_tcp(linktype, data)
        if type(seg) is tuple:
            size[flow_key(seg)] += len(seg[7]) + 64  # a packet costs something even without payload
        if cap.bytes_read > sample:
            break
    load = [0] * parts
    owners = {}
    for key, n in size.most_common():
        i = load.index(min(load))
        owners[key] = i
        load[i] += n
    return owners


class _Watched(dict):
    """The topic ids of a process's knowledge, noting when a topic id was looked up."""

    __slots__ = ("used",)

    def __init__(self) -> None:
        super().__init__()
        self.used = False

    def __bool__(self) -> bool:  # an empty one must still be used (the walker tests truth)
        return True

    def get(self, key, default=None):  # type: ignore[override]
        self.used = True
        return dict.get(self, key, default)


def _topic_refs(ex: Exchange) -> tuple[list, list]:
    """The topic references an exchange's labels and record counts come from, unresolved:
    ([(name, topic id, partitions)], [(name, topic id, records, bytes)])."""
    from analyzer.session.entities import topic_refs

    req, resp = ex.request, ex.response
    msg = req if req is not None and req.body is not None else resp
    labels = []
    if msg is not None and msg.body is not None:
        for t in topic_refs(msg):
            if t.element is not None and not t.nested and t.array in EXCHANGE_TOPIC_ARRAYS:
                labels.append((t.name, t.topic_id, t.partition_indexes()))
    key = ex.api_key
    src = req if key == ApiKey.PRODUCE else resp if key in FETCH_APIS else None
    totals = [(t.name, t.topic_id, n, b) for t, n, b in topic_record_counts(src)] if src is not None else []
    return labels, totals


class Share:
    """Some of the connections of a capture, analysed and rendered: their TCP segments go to
    :meth:`feed` in capture order (with the capture's packet numbers), then :meth:`finish`.

    What each ``export -j`` process runs on the connections it owns, and what a process on
    another machine can run on the packets of the connections it was given (Spark, after a
    shuffle by :func:`flow_key`): :func:`merge` makes one export of the parts.
    """

    def __init__(
        self,
        opts: Options,
        ports: tuple[int, ...] = (),
        keylog: KeyLog | None = None,
        spans: bool = True,
        lines_path: str | None = None,
        render: bool = True,
    ) -> None:
        self.render = render
        self.keylog = keylog if keylog is not None else KeyLog()
        self.pipe = Pipeline(opts, ports=ports, keylog=self.keylog)
        self.ids = _Watched()
        self.pipe.knowledge.topic_ids = self.ids
        self.pipe.knowledge.names_broker = False  # the merge names it, from every share's answers
        self.items: list = []
        self.opens: list[int] = []
        self.spans, self.records = spans, opts.records_bodies
        self.lines_path = lines_path
        self.out: BinaryIO = open(lines_path, "wb", buffering=1 << 20) if lines_path else io.BytesIO()  # noqa: SIM115 - closed by finish()
        self._seq = 0
        self._next_id = self.pipe.reasm.next_id

    def feed(self, index: int, ts: float, seg) -> None:
        """One TCP segment (:func:`~analyzer.reassembly.packet.decode_tcp`) of packet ``index``."""
        pipe = self.pipe
        evs = pipe.feed_segment(index, ts, seg)
        if pipe.reasm.next_id != self._next_id:  # this packet opened a connection
            self.opens.append(index)
            self._next_id = pipe.reasm.next_id
        if evs:
            self._emit(evs, index)

    def finish(self, totals: Totals | None = None) -> Part:
        """The end of the capture: the connections still open end; the part to merge."""
        self._emit(self.pipe.finish(), _FLUSH)
        out = self.out
        lines: str | bytes = self.lines_path if self.lines_path else out.getvalue()  # type: ignore[attr-defined]  # a BytesIO without a path
        out.close()
        pipe = self.pipe
        kl = self.keylog
        return Part(
            self.items,
            self.opens,
            lines,
            totals,
            pipe.tls_connections,
            pipe.tls_decrypted,
            list(kl.issues),
            kl.pulled,
        )

    def _emit(self, events: list, batch: int) -> None:
        ids = self.ids
        items = self.items
        render = self.render
        write = self.out.write
        dumps, opt = orjson.dumps, orjson.OPT_NON_STR_KEYS
        learnt = ids.used  # a topic id was looked up while labelling this batch's exchanges
        ids.used = False
        for ev in events:
            t = type(ev)
            data = b""
            if t is Exchange:
                if render:
                    data = dumps(exchange_json(ev, self.spans, self.records), option=opt)
                facts = exchange_facts(ev, ids)
                refs = _topic_refs(ev) if learnt or ids.used else None
                ids.used = False
                key = ev.api_key
                kept = key in LEARNS_FROM or (key == _OFFSET_COMMIT and simple_commit(ev))
                know = _detached(ev) if kept else None
                items.append((batch, self._seq, _EXCHANGE, ev.conn.id, len(data), (facts, refs, know)))
            elif t is ConnIssue:
                kind = _GAP if ev.issue.code == STREAM_GAP.code else _ISSUE
                if render:
                    data = dumps(stream_event_json(ev), option=opt)
                items.append(
                    (batch, self._seq, kind, ev.conn.id, len(data), (ev.issue.code, ev.issue.message))
                )
            elif t is ConnectionEnd:
                if render:
                    data = dumps(connection_json(ev.conn), option=opt)
                items.append((batch, self._seq, _CONNECTION, ev.conn.id, len(data), ev.conn))
            else:
                continue
            if data:
                write(data)
            self._seq += 1


def _share(job: Job, keylog: KeyLog) -> Share:
    lines_path = None
    if job.tmpdir is not None:
        fd, lines_path = tempfile.mkstemp(prefix=f"export-part{job.part}-", suffix=".ndjson", dir=job.tmpdir)
        os.close(fd)
    opts = Options(job.records_bodies, job.show_secrets)
    return Share(opts, job.ports, keylog, job.spans, lines_path, job.render)


# -- a plain pcap file: each packet read once ------------------------------------------------------
#
# Each process walks one byte range of the file (capture/split.py: record boundaries found by
# chained header checks, each confirmed by the previous range's walk ending exactly there) and
# routes its packets to their owners as (number in the range, ts, data offset, length); then each
# owner takes its packets of every range, in order, straight from the file. Anything unusual
# (a record cut by the snaplen, an impossible length, a range whose walk does not end at the
# next one's start, bytes left over) and the whole-capture way is taken instead: the reader's
# own reports must be what one run reports.


class Route(NamedTuple):
    """One byte range of a pcap walked: its packets, by owner."""

    clean: bool  # every record whole and plain, the walk ended exactly at the range's end
    count: int
    first_ts: float | None
    last_ts: float
    skipped: dict  # reason -> [count, number in the range of its first packet]
    routes: list[str]  # per owner: a file of (number in the range, ts, data offset, length) doubles


def _pcap_format(path: str) -> tuple[str, float, int] | None:
    """(byte order, timestamp scale, link type) of a plain (uncompressed) pcap file."""
    with open(path, "rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:4] not in PCAP_MAGIC:
        return None
    order, scale = PCAP_MAGIC[head[:4]]
    linktype = struct.unpack_from(order + "I", head, 20)[0] & 0x0FFFFFFF
    return order, scale, linktype


def route_range(args: tuple) -> Route:
    """Walk the records of ``[start, end)`` and route each packet to its owner."""
    path, start, end, owners, parts, folder, number = args
    fmt = _pcap_format(path)
    assert fmt is not None
    order, scale, linktype = fmt
    unpack = struct.Struct(order + "IIII").unpack_from
    names = [os.path.join(folder, f"range{number}-owner{o}") for o in range(parts)]
    files = [open(n, "wb") for n in names]  # noqa: SIM115 - closed below
    routes = [array("d") for _ in range(parts)]
    window = _Window(path)
    try:
        clean, count, first_ts, last_ts, skipped = _walk(
            window, start, end, unpack, scale, linktype, owners, parts, routes, files
        )
        for r, f in zip(routes, files, strict=True):
            r.tofile(f)
    finally:
        window.close()
        for f in files:
            f.close()
    return Route(clean, count, first_ts, last_ts, skipped, names)


WINDOW = 8 << 20  # bytes of a capture file read at a time


class _Window:
    """Bytes of a file at increasing offsets, read :data:`WINDOW` bytes at a time (the slices
    keep their window alive, as the capture reader's chunks do)."""

    def __init__(self, path: str) -> None:
        self.f = open(path, "rb")  # noqa: SIM115 - closed by close()
        self.start = 0
        self.buf = memoryview(b"")

    def get(self, at: int, n: int) -> memoryview | None:
        """``n`` bytes at offset ``at`` (None: the file ends first)."""
        o = at - self.start
        if o < 0 or o + n > len(self.buf):
            self.f.seek(at)
            self.buf = memoryview(self.f.read(max(WINDOW, n)))
            self.start = at
            o = 0
            if n > len(self.buf):
                return None
        return self.buf[o : o + n]

    def close(self) -> None:
        self.f.close()


FLUSH_ROUTES = 1 << 16  # route entries a walk holds per owner before writing them out


def _walk(window, start, end, unpack, scale, linktype, owners, parts, routes, files) -> tuple:  # noqa: C901 - the per-packet loop, inline
    """(clean, count, first ts, last ts, skipped) of the records in ``[start, end)``; each
    packet's route appended to its owner's array (written to its file as it fills)."""
    skipped: dict[str, list[int]] = {}
    route = Router(owners, parts)
    count = 0
    first_ts = None
    last_ts = 0.0
    pos = start
    while pos < end:
        head = window.get(pos, 16) if pos + 16 <= end else None
        if head is None:
            return False, count, first_ts, last_ts, skipped
        sec, frac, incl, orig = unpack(head)
        data_at = pos + 16
        data = window.get(data_at, incl) if incl == orig and 0 < incl <= MAX_RECORD else None
        if data is None or data_at + incl > end:
            return False, count, first_ts, last_ts, skipped
        count += 1
        ts = sec + frac * scale
        if first_ts is None:
            first_ts = ts
        last_ts = ts
        seg = decode_tcp(linktype, data)
        if type(seg) is Skip:
            _skip(skipped, skip_text(seg, linktype), count)
        else:
            o = route(seg)
            r = routes[o]
            r.extend((count, ts, data_at, incl))
            if len(r) >= 4 * FLUSH_ROUTES:
                r.tofile(files[o])
                del r[:]
        pos = data_at + incl
    return pos == end, count, first_ts, last_ts, skipped


def range_totals(ranges: list) -> Totals:
    """One run's counts of the whole file, from its ranges in order (each with ``count``,
    ``first_ts``, ``last_ts`` and ``skipped``: a :class:`Route`, a walked :class:`SplitWalk`)."""
    packets = 0
    first_ts = None
    last_ts = 0.0
    firsts: dict[str, tuple[int, int]] = {}  # reason -> (number of its first packet, count)
    for r in ranges:
        if r.count:
            if first_ts is None:
                first_ts = r.first_ts
            last_ts = r.last_ts
        for reason, (n, first) in r.skipped.items():
            at, total = firsts.get(reason, (packets + first, 0))
            firsts[reason] = (at, total + n)
        packets += r.count
    skipped: Counter = Counter()
    for reason, (_at, n) in sorted(firsts.items(), key=lambda x: x[1][0]):
        skipped[reason] = n
    return Totals(packets, first_ts, last_ts, skipped, [], [])


def run_routed(args: tuple) -> Part:
    """An owner's share of a plain pcap: its packets of every range, read from the file."""
    job, sources = args  # (route file, capture file, number of the range's first packet - 1)
    keylog = KeyLog.from_file(job.keylog) if job.keylog else KeyLog()
    share = _share(job, keylog)
    feed = share.feed
    for name, path, base in sources:
        fmt = _pcap_format(path)
        assert fmt is not None
        linktype = fmt[2]
        window = _Window(path)
        get = window.get
        with open(name, "rb") as f:
            while True:
                r = array("d")
                with contextlib.suppress(EOFError):  # the last block is short
                    r.fromfile(f, 4 * FLUSH_ROUTES)
                if not r:
                    break
                for i in range(0, len(r), 4):
                    data = get(int(r[i + 2]), int(r[i + 3]))
                    if data is None:
                        raise OSError(f"{path} changed while it was read")
                    feed(base + int(r[i]), r[i + 1], decode_tcp(linktype, data))
        window.close()
    return share.finish(None)


def _routed(pool, jobs_list: list[Job], folder: str) -> list[Part] | None:
    """The parts by ranges of plain pcap files (one, or the pieces of one recording in order),
    or None when the capture must be read whole (``folder``: where the routes go)."""
    job = jobs_list[0]
    paths = list(job.paths)
    if any(_pcap_format(p) is None for p in paths):
        return None
    total = sum(os.path.getsize(p) for p in paths)
    target = max(MIN_SPLIT, total // job.parts + 1)
    ranges = [r for p in paths for r in splits(p, target)]
    if len(ranges) < 2:
        return None
    walked = pool.map(
        route_range,
        [(r.path, r.start or 24, r.end, job.owners, job.parts, folder, i) for i, r in enumerate(ranges)],
    )
    if not all(r.clean for r in walked):
        return None
    totals = range_totals(walked)
    base = 0
    mine: list[list] = [[] for _ in jobs_list]
    for rng, r in zip(ranges, walked, strict=True):
        for o, name in enumerate(r.routes):
            mine[o].append((name, rng.path, base))
        base += r.count
    parts = pool.map(run_routed, list(zip(jobs_list, mine, strict=True)))
    return [parts[0]._replace(totals=totals), *parts[1:]]


def run_part(job: Job) -> Part:
    """One process's share of ``export -j``: the whole capture read, the connections it owns
    analysed and rendered."""
    paths = list(job.paths)
    source: Any = CaptureSet(paths) if len(paths) > 1 else CaptureFile(paths[0])
    keylog = KeyLog.from_file(job.keylog) if job.keylog else KeyLog()
    secrets = getattr(source, "secrets", None)
    if secrets is not None:
        keylog.attach(secrets)
    share = _share(job, keylog)
    feed = share.feed
    route, part = Router(job.owners, job.parts), job.part
    skipped: Counter = Counter()
    packets = 0
    first_ts = None
    last_ts = 0.0
    for index, ts, linktype, data in source:
        packets += 1
        if first_ts is None:
            first_ts = ts
        last_ts = ts
        seg = decode_tcp(linktype, data)
        if type(seg) is Skip:
            skipped[skip_text(seg, linktype)] += 1
            continue
        if route(seg) == part:
            feed(index, ts, seg)
    issues = list(getattr(source, "issues", ()))
    return share.finish(Totals(packets, first_ts, last_ts, skipped, issues, list(secrets or ())))


# -- the merge -------------------------------------------------------------------------------------


class _Done:
    """The capture as a finished source (the name and issues the summary and exit code use)."""

    live = False
    bytes_read = 0

    def __init__(self, name: str, issues: list[Issue]) -> None:
        self.name = name
        self.issues = issues

    def __iter__(self):
        return iter(())


def _renumber(data: bytes, kind: int, conn: int) -> bytes:
    """The line with its connection id rewritten (the first place each kind of line has it)."""
    if kind == _EXCHANGE:
        tag = b',"connection":{"id":'
    elif kind == _CONNECTION:
        tag = b'{"type":"connection","id":'
    else:
        tag = b',"connection":'
    i = data.index(tag) + len(tag)
    j = data.index(b",", i)
    return data[:i] + str(conn).encode() + data[j:]


def _relabel(data: bytes, topics: dict) -> bytes:
    tag = b',"topics":'
    i = data.index(tag) + len(tag)
    j = data.index(b',"request":', i)
    return data[:i] + orjson.dumps(topics, option=orjson.OPT_NON_STR_KEYS) + data[j:]


_UNNAMED_TEXT = UNNAMED_BROKER + " answered "
_UNNAMED = orjson.dumps(_UNNAMED_TEXT)[:-1]  # the start of such a message in a line


def _unnamed(x, kind: int) -> bool:
    if kind == _EXCHANGE:
        return any(m.startswith(_UNNAMED_TEXT) for _c, _s, m in x[0][7])
    return kind == _ISSUE and x[1].startswith(_UNNAMED_TEXT)


def _name_broker(data: bytes, x, kind: int, software: str) -> tuple[bytes, object]:
    """An issue that says "the broker answered ..." because its process had not learnt the
    broker's software, which one run knew by then from another connection (the cluster id of a
    Metadata answer): named as one run names it, in its line and in the statistics' facts."""
    text = software + " answered "
    cut = len(_UNNAMED_TEXT)
    if kind == _EXCHANGE:
        facts, refs, know = x
        issues = [(c, sev, text + m[cut:] if m.startswith(_UNNAMED_TEXT) else m) for c, sev, m in facts[7]]
        x = ((*facts[:7], issues, *facts[8:]), refs, know)
    else:
        code, message = x
        x = (code, text + message[cut:])
    return data.replace(_UNNAMED, orjson.dumps(text)[:-1]), x


def _rejudge(data: bytes, x: tuple, knowledge) -> tuple[bytes, tuple]:
    """A simple commit answered UNKNOWN_MEMBER_ID (``know`` in ``x``) with its
    ``quirk.simple_commit_rejected`` as one run names it: against the live members learnt from
    every connection so far (its process saw only its own), in its line and its facts. The quirk
    is the last of the exchange's own issues (pairing adds it last), and issues end the line."""
    facts, refs, ex = x
    software = knowledge.broker_software()
    broker = software if software is not None else UNNAMED_BROKER
    quirk = simple_commit_rejected(ex, knowledge.members, broker)
    code = QUIRK_SIMPLE_COMMIT_REJECTED.code
    had = [i for i in ex.issues if i.code == code]
    if not had and quirk is None:
        return data, x
    ex.issues = [i for i in ex.issues if i.code != code] + ([quirk] if quirk is not None else [])
    issues = ex.all_issues()
    if data:
        tag = b',"issues":'
        data = data[: data.rindex(tag)] + tag + orjson.dumps([i.to_dict() for i in issues]) + b"}"
    facts = (*facts[:7], [(i.code, i.severity, i.message) for i in issues], *facts[8:])
    return data, (facts, refs, ex)


def _ignore_sigint() -> None:
    """Ctrl-C is the parent's to handle (it ends the pool): no traceback from each process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _memoryview_as_bytes(m: memoryview):
    return bytes, (m.tobytes(),)


_DETACH = {**copyreg.dispatch_table, memoryview: _memoryview_as_bytes}


def _detached(ex: Exchange) -> Exchange:
    """``ex`` copied off the capture's buffers. Its frames and fields are slices of the 8 MB
    window (or reader chunk) they were read from, and an exchange kept to the end (the merge's
    knowledge) would pin that whole buffer: on the 1 GB bench capture a process kept about 700 MB
    of windows for a few hundred Metadata and group exchanges."""
    buf = io.BytesIO()
    p = pickle.Pickler(buf, pickle.HIGHEST_PROTOCOL)
    p.dispatch_table = _DETACH
    p.dump(ex)
    return pickle.loads(buf.getvalue())


def _resolve(name, tid, ids: dict) -> str:
    return name if name else ids.get(tid, tid)


def run(
    paths: list[str],
    jobs: int,
    opts: Options,
    ports: tuple[int, ...] = (),
    keylog: str | None = None,
    spans: bool = True,
    tmpdir: str | None = None,
    render: bool = True,
) -> list[Part]:
    """The parts of ``jobs`` processes (:class:`PartFailed` when one could not do its share)."""
    owners = plan_owners(paths[0], jobs)
    jobs_list = [
        Job(
            tuple(paths),
            i,
            jobs,
            owners,
            opts.records_bodies,
            opts.show_secrets,
            ports,
            keylog,
            spans,
            tmpdir,
            render,
        )
        for i in range(jobs)
    ]
    # frames and fields hold memoryviews of the capture's chunks: they travel as bytes
    ForkingPickler.register(memoryview, _memoryview_as_bytes)
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    try:
        with (
            ctx.Pool(jobs, initializer=_ignore_sigint) as pool,
            tempfile.TemporaryDirectory(prefix="kafka-analyzer-routes-") as folder,
        ):
            parts = _routed(pool, jobs_list, folder)
            return parts if parts is not None else pool.map(run_part, jobs_list)
    except Exception as exc:  # noqa: BLE001 - whatever stopped a process, one process does it all
        raise PartFailed(f"{type(exc).__name__}: {exc}") from exc


def _name(paths: list[str]) -> str:
    return CaptureSet(paths).name if len(paths) > 1 else CaptureFile(paths[0]).name


def export(
    paths: list[str],
    out: BinaryIO,
    fmt: str,
    jobs: int,
    opts: Options,
    ports: tuple[int, ...] = (),
    keylog: str | None = None,
    spans: bool = True,
) -> Outcome:
    """Export one capture with ``jobs`` processes; the outcome returned gives the exit code."""
    with tempfile.TemporaryDirectory(prefix="kafka-analyzer-") as tmpdir:
        parts = run(paths, jobs, opts, ports, keylog, spans, tmpdir)
        return merge(parts, _name(paths), out, fmt, spans, opts.records_bodies, keylog)


def statistics(
    paths: list[str], jobs: int, opts: Options, ports: tuple[int, ...] = (), keylog: str | None = None
) -> tuple[Outcome, Stats]:
    """The statistics of one capture counted by ``jobs`` processes (no line rendered), as one
    process counts them, and the analysis for the summary and the exit code."""
    parts = run(paths, jobs, opts, ports, keylog, render=False)
    return combine(parts, _name(paths), keylog=keylog)


def _analysis(parts: list[Part], totals: Totals, name: str, connections: int, keylog: str | None) -> Analysis:
    """The analysis one run would end with (counters, capture issues' source), for the summary
    and the exit code."""
    a = Analysis(_Done(name, totals.issues))
    pipe = a.pipeline
    pipe.packets = totals.packets
    pipe.first_ts = totals.first_ts
    pipe.last_ts = totals.last_ts
    pipe.skipped = totals.skipped
    pipe.reasm.connections = connections
    pipe.tls_connections = sum(p.tls_connections for p in parts)
    pipe.tls_decrypted = sum(p.tls_decrypted for p in parts)
    kl = KeyLog.from_file(keylog) if keylog else KeyLog()
    if totals.secrets:
        kl.attach(list(totals.secrets))  # read when asked, as one run's key log is
    pipe.keylog = kl
    return a


def merge(
    parts: list[Part],
    name: str,
    out: BinaryIO,
    fmt: str = "ndjson",
    spans: bool = True,
    records: bool = False,
    keylog: str | None = None,
    totals: Totals | None = None,
) -> Outcome:
    """Write the export of the parts (each some connections of one capture) as one run writes
    it; ``totals``: the whole capture's counts when the parts do not carry them."""
    from analyzer.session.report import stats_tables

    w = Writer(out, fmt, spans=spans, records=records)
    w.begin(name)
    outcome, stats = combine(parts, name, w, keylog, totals)
    w.end(stats_tables(stats, outcome))
    return outcome


def combine(  # noqa: C901 - one pass over the events, each kind inline
    parts: list[Part],
    name: str,
    w: Writer | None = None,
    keylog: str | None = None,
    totals: Totals | None = None,
) -> tuple[Outcome, Stats]:
    """The parts in capture order: their lines written to ``w`` (when given) with connection ids
    and topic labels as one run has them, the statistics counted, the knowledge learnt."""
    totals = totals if totals is not None else parts[0].totals
    assert totals is not None, "the capture's totals: given, or carried by the parts"
    # connection ids: in the order the connections opened, over every process
    opened = sorted(
        (index, p, local) for p, part in enumerate(parts) for local, index in enumerate(parts[p].opens, 1)
    )
    ids = [dict() for _ in parts]
    for n, (_index, p, local) in enumerate(opened, 1):
        ids[p][local] = n

    def order(p: int):
        idmap = ids[p]
        for it in parts[p].items:
            batch, seq, _kind, conn, _n, _x = it
            yield ((batch, idmap[conn], seq) if batch == _FLUSH else (batch, 0, seq)), p, it

    a = _analysis(parts, totals, name, len(opened), keylog)
    pipe = a.pipeline
    knowledge = pipe.knowledge
    topic_ids = knowledge.topic_ids
    stats = Stats(topic_ids)
    files = [
        open(p.lines, "rb") if isinstance(p.lines, str) else io.BytesIO(p.lines)  # noqa: SIM115 - closed below
        for p in parts
    ]
    try:
        batch_key = None
        pending: list = []  # the current batch: (kind, conn id, data, extra)

        def flush_batch() -> None:
            # the statistics count a batch once the pipeline learnt from all of it, as one run
            for kind, conn, data, x in pending:
                if w is not None:
                    w.raw(_SECTIONS[kind], data)
                if kind == _EXCHANGE:
                    facts, refs, _know = x
                    if refs is not None:
                        counts: dict[str, list[int]] = {}
                        for nm, tid, nrec, nbytes in refs[1]:
                            acc = counts.setdefault(_resolve(nm, tid, topic_ids), [0, 0])
                            acc[0] += nrec
                            acc[1] += nbytes
                        facts = (*facts[:11], [(t, n, b) for t, (n, b) in counts.items()])
                    stats.apply(conn, None, facts)
                    a.exchanges += 1
                elif kind == _CONNECTION:
                    x.id = conn
                    stats.connections[conn] = x
                else:
                    stats._anomaly(*x)
            pending.clear()

        for (key, _sub, _seq), p, (_b, _s, kind, local, n, x) in heapq.merge(
            *(order(p) for p in range(len(parts)))
        ):
            if key != batch_key:
                flush_batch()
                batch_key = key
            conn = ids[p][local]
            data = _renumber(files[p].read(n), kind, conn) if w is not None else b""
            if kind == _EXCHANGE:
                facts, refs, know = x
                if know is None:
                    pass
                elif know.api_key == _OFFSET_COMMIT:
                    data, x = _rejudge(data, x, knowledge)
                    facts = x[0]
                else:
                    knowledge.learn(know)
                    knowledge.members.learn(know)
                if refs is not None:
                    labels: dict[str, list[int]] = {}
                    for nm, tid, partitions in refs[0]:
                        labels.setdefault(_resolve(nm, tid, topic_ids), []).extend(partitions)
                    if list(labels) != facts[10]:
                        if w is not None:
                            data = _relabel(data, labels)
                        facts = (*facts[:10], list(labels), facts[11])
                        x = (facts, refs, know)
            if kind != _CONNECTION and _unnamed(x, kind):
                software = knowledge.broker_software()
                if software is not None:
                    data, x = _name_broker(data, x, kind, software)
            pending.append((kind, conn, data, x))
        flush_batch()
    finally:
        for f in files:
            f.close()
    # the key log's problems as one run has them: its connections together read as many of the
    # capture's secret texts as the part that read the most (the texts are read in order)
    issues = list(totals.issues) + max(parts, key=lambda p: p.keylog_pulled).keylog_issues
    if pipe.packets and not pipe.connections:
        issues.append(CAPTURE_NO_TCP("no TCP traffic in the capture"))
    a.capture_issues = issues
    for i in issues:
        ev = CaptureIssue(i, pipe.last_ts if pipe.packets else None)
        stats.event(ev)
        if w is not None:
            w.event(ev)
    a.finished = True
    return a.outcome(), stats
