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

The corrections themselves, on named tuples, are :mod:`analyzer.export.merge`'s (Spark's
stitching applies the same). Each process decodes with the run's options, limits included
(:class:`Decoding`); one thing no process can do alone is closing connections early when more
than ``--max-connections`` are open at once (which ones depends on all of them): when one run
would, the parts are refused (:class:`OneProcess`) and one process does the work.

Plain pcap files (one, or the rotated pieces of one recording) are read once: each process walks
byte ranges of them and routes each packet to the process that owns its connection (as a file
offset); the owners then read their packets from the files. Other captures (pcapng, compressed,
damage found in a range) are read whole by every process, each keeping its connections'
packets (decoding every TCP header: about a fifth of the work). A connection belongs to the
process given by a plan made from the first megabytes (the biggest connections spread first),
else by a hash of its address pair.
Events are written in the order one run emits them: by the packet that completed them, then, at
the end, by connection.
Lines and the records of the events (:class:`Item`) go through temporary files, two per
process; the merge reads them back in order, so neither the processes' memory nor the merge's
grows with the capture.

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
import tempfile
from array import array
from collections import Counter
from collections.abc import Iterator
from multiprocessing.reduction import ForkingPickler
from typing import Any, BinaryIO, NamedTuple

import orjson

from analyzer.capture.files import CaptureFile
from analyzer.capture.sets import CaptureSet
from analyzer.capture.split import MIN_SPLIT, Opener, Split, SplitSource, open_local, splits
from analyzer.dissect.codecs import DEFAULT_LIMITS, Limits
from analyzer.dissect.constants import ApiKey
from analyzer.dissect.message import Options
from analyzer.events import CaptureIssue, ConnectionEnd, ConnIssue, Skip
from analyzer.export.jsonout import connection_json, exchange_json, stream_event_json
from analyzer.export.merge import (
    CONNECTION,
    END,
    EXCHANGE,
    GAP,
    ISSUE,
    SECTIONS,
    ExchangeItem,
    IssueItem,
    Item,
    SimpleCommit,
    TableLog,
    connection_ids,
    evicts,
    issue_facts,
    name_broker,
    name_broker_in,
    relabel,
    renumber,
    topic_refs,
    unnamed,
    with_issues,
)
from analyzer.export.routes import (
    FLUSH_ROUTES,
    Router,
    count_skip,
    flow_key,
    pcap_format,
    read_routed,
    route_range,
)
from analyzer.export.writer import Writer
from analyzer.issues import CAPTURE_NO_TCP, STREAM_GAP
from analyzer.model import Exchange, Issue
from analyzer.pipeline import Outcome, Pipeline, no_tcp
from analyzer.reassembly.packet import decode_tcp, skip_text
from analyzer.session.bounded import DEFAULT_BOUNDS, Bounds
from analyzer.session.insights import Insights
from analyzer.session.knowledge import LEARNS_FROM, Knowledge
from analyzer.session.metrics import Metrics, metric_extra
from analyzer.session.stats import Stats, exchange_facts
from analyzer.tls.keylog import KeyLog

SAMPLE = 8 << 20  # capture bytes read to plan which process takes which connection
_OFFSET_COMMIT = ApiKey.OFFSET_COMMIT


class Decoding(NamedTuple):
    """How every part decodes: the run's :class:`~analyzer.dissect.message.Options` that travel
    to other processes (and machines), limits included, so that each decodes as one run does."""

    records_bodies: bool = False
    show_secrets: bool = False
    limits: Limits = DEFAULT_LIMITS

    @classmethod
    def of(cls, opts: Options) -> Decoding:
        return cls(opts.records_bodies, opts.show_secrets, opts.limits or DEFAULT_LIMITS)

    def options(self) -> Options:
        return Options(self.records_bodies, self.show_secrets, self.limits)


class Job(NamedTuple):
    paths: tuple[str, ...]
    part: int
    parts: int
    owners: dict  # canonical address pair -> part (the plan); others by hash
    decoding: Decoding
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

    items: list[Item] | str  # the items, or the file they were written to (part_items reads either)
    opens: list[int]  # packet number at which each of its connections opened (local id - 1)
    lines: str | bytes  # its rendered lines: a temporary file, or the bytes themselves
    totals: Totals | None  # the whole capture's (export -j: every process reads all of it)
    tls_connections: int
    tls_decrypted: int
    keylog_issues: list[Issue]  # the key log's problems, as far as this part read it
    keylog_pulled: int  # the capture's secret texts this part's connections made it read
    table: array  # its connection table packet by packet (:class:`~analyzer.export.merge.TableLog`)
    evicted: int  # connections it closed early itself (too many open at once)


class OneProcess(PartFailed):
    """The parts cannot give one run's output: one process must do the work (the reason is
    the message)."""


def check_tracked(parts: list[Part], limits: Limits | None) -> None:
    """Raise :class:`OneProcess` when one run would close connections early (more than
    ``--max-connections`` open at once): which ones depends on every connection."""
    n = max((limits or DEFAULT_LIMITS).max_connections, 1)
    if any(p.evicted for p in parts) or evicts([p.table for p in parts], n):
        raise OneProcess(
            f"more than {n} TCP connections were open at once (--max-connections): which ones one"
            " run closes early depends on all of them"
        )


class SplitWalk:
    """One split of a capture file (:mod:`analyzer.capture.split`: pcap at record boundaries,
    pcapng at block boundaries with its interface table carried) walked once: iterating gives
    each TCP packet as ``(owner, number, ts, linktype, data)``, ``number`` counting the split's
    packets from 1 and ``owner`` the part of its connection (:class:`Router`). Once walked:
    the split's ``packets``, ``first_ts``, ``last_ts``, ``skipped`` (reason -> [count, number of
    the first]), ``issues`` (its reader's), ``secrets`` (pcapng Decryption Secrets Blocks),
    ``format`` and ``compression``. Spark's executors walk splits of big files with it and
    shuffle the packets to their owners, who each run a :class:`Share`.

    The issues' byte offsets are the file's; their packet numbers too when the split knows the
    number of its first packet (``split.first``: pcapng), else they count from the split's."""

    def __init__(self, split: Split, owners: dict, parts: int, opener: Opener = open_local) -> None:
        self.split = split
        self.opener = opener
        self.route = Router(owners, parts)
        self.packets = 0
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
                    count_skip(skipped, skip_text(seg, linktype), number)
                    continue
                yield route(seg), number, ts, linktype, data
        finally:
            self.packets, self.last_ts = number, ts if number else 0.0
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

    def get(self, key, default=None):
        self.used = True
        return dict.get(self, key, default)


# items a share keeps before writing them to its items file (when it has one)
ITEM_CHUNK = 2_000


class Share:
    """Some of the connections of a capture, analysed and rendered: their TCP segments go to
    :meth:`feed` in capture order (with the capture's packet numbers), then :meth:`finish`.

    With ``items_path``, its items go to that file as they are made (pickled lists of
    :data:`ITEM_CHUNK`), and the part names the file: a process's memory, and the merge's, stay
    the same whatever the size of the capture (the merge reads them back in order).

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
        items_path: str | None = None,
    ) -> None:
        self.render = render
        self.keylog = keylog if keylog is not None else KeyLog()
        self.pipe = Pipeline(opts, ports=ports, keylog=self.keylog)
        self.ids = _Watched()
        self.pipe.knowledge.topic_ids = self.ids
        self.pipe.knowledge.names_broker = False  # the merge names it, from every share's answers
        self.items: list = []
        self.items_path = items_path
        self.items_file: BinaryIO | None = open(items_path, "wb") if items_path else None  # noqa: SIM115 - closed by finish()
        self.opens: list[int] = []
        self.spans, self.records = spans, opts.records_bodies
        self.lines_path = lines_path
        self.out: BinaryIO = open(lines_path, "wb", buffering=1 << 20) if lines_path else io.BytesIO()  # noqa: SIM115 - closed by finish()
        self._seq = 0
        self._next_id = self.pipe.reasm.next_id
        self.table = TableLog()
        self.insights = Insights()  # (its facts of each exchange; the merge keeps the state)

    def feed(self, index: int, ts: float, seg) -> None:
        """One TCP segment (:func:`~analyzer.reassembly.packet.decode_tcp`) of packet ``index``."""
        pipe = self.pipe
        evs = pipe.feed_segment(index, ts, seg)
        reasm = pipe.reasm
        size = len(reasm.table)
        if reasm.next_id != self._next_id:  # this packet opened a connection
            self.opens.append(index)
            self._next_id = reasm.next_id
            self.table.feed(index, size, True, seg[0] == seg[2] and seg[1] == seg[3])
        elif size != self.table.size:
            self.table.feed(index, size, False)
        if evs:
            self._emit(evs, index)

    def finish(self, totals: Totals | None = None) -> Part:
        """The end of the capture: the connections still open end; the part to merge."""
        self._emit(self.pipe.finish(), END)
        out = self.out
        lines: str | bytes = self.lines_path if self.lines_path else out.getvalue()  # type: ignore[attr-defined]  # a BytesIO without a path
        out.close()
        items: list | str = self.items
        if self.items_file is not None and self.items_path is not None:
            self._spill()
            self.items_file.close()
            items = self.items_path
        pipe = self.pipe
        kl = self.keylog
        return Part(
            items,
            self.opens,
            lines,
            totals,
            pipe.tls_connections,
            pipe.tls_decrypted,
            list(kl.issues),
            kl.pulled,
            self.table.log,
            pipe.reasm.evicted,
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
                refs = topic_refs(ev) if learnt or ids.used else None
                ids.used = False
                key = ev.api_key
                learn = _detached(ev) if key in LEARNS_FROM else None
                commit = SimpleCommit.of(ev) if key == _OFFSET_COMMIT else None
                insight = None
                told = self.insights.facts(ev)
                if told is not None or Insights.wants(ev):
                    timeline = (learn or _detached(ev)) if Insights.wants(ev) else None
                    insight = (timeline, told)
                x = ExchangeItem(facts, refs, learn, commit, insight, metric_extra(ev))
                items.append(Item(batch, self._seq, EXCHANGE, ev.conn.id, len(data), x))
            elif t is ConnIssue:
                kind = GAP if ev.issue.code == STREAM_GAP.code else ISSUE
                if render:
                    data = dumps(stream_event_json(ev), option=opt)
                i = IssueItem(ev.issue.code, ev.issue.message)
                items.append(Item(batch, self._seq, kind, ev.conn.id, len(data), i))
            elif t is ConnectionEnd:
                self.insights.groups.consumption.closed(ev.conn.id)  # (its fetch session)
                if render:
                    data = dumps(connection_json(ev.conn), option=opt)
                items.append(Item(batch, self._seq, CONNECTION, ev.conn.id, len(data), ev.conn))
            else:
                continue
            if data:
                write(data)
            self._seq += 1
        if self.items_file is not None and len(items) >= ITEM_CHUNK:
            self._spill()

    def _spill(self) -> None:
        """The items kept so far, appended to the items file (memoryviews as bytes)."""
        assert self.items_file is not None
        p = pickle.Pickler(self.items_file, pickle.HIGHEST_PROTOCOL)
        p.dispatch_table = _DETACH
        p.dump(self.items)
        self.items.clear()


def part_items(part: Part) -> Iterator[Item]:
    """A part's items in order: its list, or read back from its items file."""
    if not isinstance(part.items, str):
        yield from part.items
        return
    with open(part.items, "rb") as f:
        while True:
            try:
                chunk = pickle.load(f)
            except EOFError:
                return
            yield from chunk


def _share(job: Job, keylog: KeyLog) -> Share:
    lines_path = items_path = None
    if job.tmpdir is not None:
        fd, lines_path = tempfile.mkstemp(prefix=f"export-part{job.part}-", suffix=".ndjson", dir=job.tmpdir)
        os.close(fd)
        fd, items_path = tempfile.mkstemp(prefix=f"export-part{job.part}-", suffix=".items", dir=job.tmpdir)
        os.close(fd)
    return Share(job.decoding.options(), job.ports, keylog, job.spans, lines_path, job.render, items_path)


def range_totals(ranges: list) -> Totals:
    """One run's counts of the whole file, from its ranges in order (each with ``packets``,
    ``first_ts``, ``last_ts`` and ``skipped``: a :class:`Route`, a walked :class:`SplitWalk`)."""
    packets = 0
    first_ts = None
    last_ts = 0.0
    firsts: dict[str, tuple[int, int]] = {}  # reason -> (number of its first packet, count)
    for r in ranges:
        if r.packets:
            if first_ts is None:
                first_ts = r.first_ts
            last_ts = r.last_ts
        for reason, (n, first) in r.skipped.items():
            at, total = firsts.get(reason, (packets + first, 0))
            firsts[reason] = (at, total + n)
        packets += r.packets
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
        fmt = pcap_format(path)
        assert fmt is not None
        linktype = fmt[2]
        with open(path, "rb") as capture, open(name, "rb") as f:
            while True:
                r = array("d")
                with contextlib.suppress(EOFError):  # the last block is short
                    r.fromfile(f, 4 * FLUSH_ROUTES)
                if not r:
                    break
                for index, ts, seg in read_routed(capture, path, linktype, r, base):
                    feed(index, ts, seg)
    return share.finish(None)


def _routed(pool, jobs_list: list[Job], folder: str) -> list[Part] | None:
    """The parts by ranges of plain pcap files (one, or the pieces of one recording in order),
    or None when the capture must be read whole (``folder``: where the routes go)."""
    job = jobs_list[0]
    paths = list(job.paths)
    if any(pcap_format(p) is None for p in paths):
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
        base += r.packets
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
    decoding = Decoding.of(opts)
    jobs_list = [
        Job(tuple(paths), i, jobs, owners, decoding, ports, keylog, spans, tmpdir, render)
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
            if parts is None:
                parts = pool.map(run_part, jobs_list)
    except Exception as exc:  # noqa: BLE001 - whatever stopped a process, one process does it all
        raise PartFailed(f"{type(exc).__name__}: {exc}") from exc
    check_tracked(parts, opts.limits)
    return parts


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
    bounds: Bounds = DEFAULT_BOUNDS,
) -> Outcome:
    """Export one capture with ``jobs`` processes; the outcome returned gives the exit code
    (``bounds``: the merge's tables', which keep the state)."""
    with tempfile.TemporaryDirectory(prefix="kafka-analyzer-") as tmpdir:
        parts = run(paths, jobs, opts, ports, keylog, spans, tmpdir)
        return merge(parts, _name(paths), out, fmt, spans, opts.records_bodies, keylog, bounds=bounds)


def statistics(
    paths: list[str],
    jobs: int,
    opts: Options,
    ports: tuple[int, ...] = (),
    keylog: str | None = None,
    metrics: Metrics | None = None,
    bounds: Bounds = DEFAULT_BOUNDS,
) -> tuple[Outcome, Stats, Insights]:
    """The statistics of one capture counted by ``jobs`` processes (no line rendered), as one
    process counts them, and the analysis for the summary and the exit code (``metrics``:
    counted too)."""
    with tempfile.TemporaryDirectory(prefix="kafka-analyzer-") as tmpdir:  # (the parts' items)
        parts = run(paths, jobs, opts, ports, keylog, tmpdir=tmpdir, render=False)
        if metrics is not None:
            metrics.evicted += sum(p.evicted for p in parts)
        outcome, stats, insights = combine(parts, _name(paths), keylog=keylog, metrics=metrics, bounds=bounds)
    if metrics is not None:
        metrics.state_of(stats, outcome.knowledge)
    return outcome, stats, insights


def merge(
    parts: list[Part],
    name: str,
    out: BinaryIO,
    fmt: str = "ndjson",
    spans: bool = True,
    records: bool = False,
    keylog: str | None = None,
    totals: Totals | None = None,
    bounds: Bounds = DEFAULT_BOUNDS,
) -> Outcome:
    """Write the export of the parts (each some connections of one capture) as one run writes
    it; ``totals``: the whole capture's counts when the parts do not carry them."""
    from analyzer.session.report import stats_tables

    w = Writer(out, fmt, spans=spans, records=records)
    w.begin(name)
    outcome, stats, insights = combine(parts, name, w, keylog, totals, bounds=bounds)
    w.objects(insights.objects(outcome.last_ts if outcome.packets else None))
    w.end(stats_tables(stats, outcome, insights))
    return outcome


def combine(  # noqa: C901 - one pass over the events, each kind inline
    parts: list[Part],
    name: str,
    w: Writer | None = None,
    keylog: str | None = None,
    totals: Totals | None = None,
    metrics: Metrics | None = None,
    bounds: Bounds = DEFAULT_BOUNDS,
) -> tuple[Outcome, Stats, Insights]:
    """The parts in capture order: their lines written to ``w`` (when given) with connection ids
    and topic labels as one run has them, the statistics counted, the knowledge learnt, the
    consumer groups followed; the outcome one run ends with."""
    totals = totals if totals is not None else parts[0].totals
    assert totals is not None, "the capture's totals: given, or carried by the parts"
    # connection ids: in the order the connections opened, over every process
    idmap = connection_ids(enumerate(p.opens for p in parts))
    ids: list[dict[int, int]] = [{} for _ in parts]
    for (p, local), n in idmap.items():
        ids[p][local] = n

    def order(p: int):
        local_ids = ids[p]
        for it in part_items(parts[p]):
            batch = it.batch
            yield ((batch, local_ids[it.conn], it.seq) if batch == END else (batch, 0, it.seq)), p, it

    knowledge = Knowledge(most=bounds.max_entries)
    topic_ids = knowledge.topic_ids
    exchanges = 0

    def topic_name(nm: str | None, tid: str | None) -> str:
        return nm if nm else topic_ids.get(tid, tid)  # type: ignore[arg-type,return-value]  # a topic has a name or an id

    stats = Stats(topic_ids, bounds)
    insights = Insights(topic_ids, bounds=bounds)
    files = [
        open(p.lines, "rb") if isinstance(p.lines, str) else io.BytesIO(p.lines)  # noqa: SIM115 - closed below
        for p in parts
    ]
    try:
        batch_key = None
        pending: list = []  # the current batch: (kind, conn id, data, extra)

        def flush_batch() -> None:
            # the statistics count a batch once the pipeline learnt from all of it, as one run
            nonlocal exchanges
            for kind, conn, data, x in pending:
                if w is not None:
                    w.raw(SECTIONS[kind], data)
                if kind == EXCHANGE:
                    facts = x.facts
                    if x.refs is not None:
                        facts = facts._replace(record_counts=x.refs.record_counts(topic_name))
                    stats.apply(conn, None, facts)
                    if metrics is not None:
                        metrics.apply(facts, x.metric)
                    exchanges += 1
                    if x.insight is not None:
                        insights.apply(*x.insight)
                elif kind == CONNECTION:
                    x.id = conn
                    stats.connection(x)
                    end = ConnectionEnd(x)
                    insights.connection_end(end)
                    if metrics is not None:
                        metrics.event(end)
                else:
                    stats.anomaly(*x)
                    if metrics is not None:
                        metrics.issue(x.code)
            pending.clear()

        for (key, _sub, _seq), p, it in heapq.merge(*(order(p) for p in range(len(parts)))):
            if key != batch_key:
                flush_batch()
                batch_key = key
            kind, x = it.kind, it.extra
            conn = ids[p][it.conn]
            data = renumber(files[p].read(it.length), kind, conn) if w is not None else b""
            if kind == EXCHANGE:
                facts = x.facts
                if x.learn is not None:
                    knowledge.learn(x.learn)
                    knowledge.members.learn(x.learn)
                elif x.commit is not None:
                    # its quirk judged against the live members one run knows by then
                    commit = x.commit
                    empty = knowledge.members.empty(commit.group)
                    if commit.judged or (empty and commit.quirk is not None):
                        issues = commit.issues(empty)
                        if data:
                            data = with_issues(data, issues)
                        facts = facts._replace(issues=issue_facts(issues))
                if x.refs is not None:
                    labels = x.refs.topics(topic_name)
                    if list(labels) != facts.topics:
                        if w is not None:
                            data = relabel(data, labels)
                        facts = facts._replace(topics=list(labels))
                if any(unnamed(m) for _c, _s, m in facts.issues):
                    software = knowledge.broker_software()
                    if software is not None:
                        data = name_broker_in(data, software)
                        facts = facts._replace(
                            issues=[(c, s, name_broker(m, software)) for c, s, m in facts.issues]
                        )
                if facts is not x.facts:
                    x = x._replace(facts=facts)
            elif kind != CONNECTION and unnamed(x.message):
                software = knowledge.broker_software()
                if software is not None:
                    data = name_broker_in(data, software)
                    x = x._replace(message=name_broker(x.message, software))
            pending.append((kind, conn, data, x))
        flush_batch()
    finally:
        for f in files:
            f.close()
    # the key log's problems as one run has them: its connections together read as many of the
    # capture's secret texts as the part that read the most (the texts are read in order)
    issues = list(totals.issues) + max(parts, key=lambda p: p.keylog_pulled).keylog_issues
    if no_tcp(totals.packets, totals.skipped):
        issues.append(CAPTURE_NO_TCP("no TCP traffic in the capture"))
    for i in issues:
        ev = CaptureIssue(i, totals.last_ts if totals.packets else None)
        stats.event(ev)
        if metrics is not None:
            metrics.event(ev)
        if w is not None:
            w.event(ev)
    kl = KeyLog.from_file(keylog) if keylog else KeyLog()
    if totals.secrets:
        kl.attach(list(totals.secrets))  # read when asked, as one run's key log is
    outcome = Outcome(
        name=name,
        packets=totals.packets,
        connections=len(idmap),
        first_ts=totals.first_ts,
        last_ts=totals.last_ts,
        skipped=dict(totals.skipped),
        exchanges=exchanges,
        tls_connections=sum(p.tls_connections for p in parts),
        tls_decrypted=sum(p.tls_decrypted for p in parts),
        keylog_given=kl.given,
        capture_issues=tuple(issues),
        knowledge=knowledge,
    )
    insights.done()
    return outcome, stats, insights
