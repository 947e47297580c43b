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
  responses, client software, groups): processes send the exchanges knowledge is learnt from and,
  for each exchange that names a topic by id, its topic references; the merge learns in capture
  order and re-labels the exchanges whose topics the process could not name as one run would;
* the **summary**: processes send what the statistics count of each event
  (:func:`~analyzer.session.stats.exchange_facts`); the merge counts them in capture order.

Every process reads the whole capture and decodes the TCP header of each packet (about a sixth of
the work); a connection belongs to the process given by a plan made from the first megabytes
(the biggest connections spread first), else by a hash of its address pair. Events are written in
the order one run emits them: by the packet that completed them, then, at the end, by connection.
Lines go through a temporary file per process; the merge holds only a small record per event.
"""

from __future__ import annotations

import heapq
import io
import multiprocessing
import os
import signal
import struct
import tempfile
import zlib
from collections import Counter
from multiprocessing.reduction import ForkingPickler
from typing import Any, BinaryIO, NamedTuple

import orjson

from analyzer.capture.files import CaptureFile
from analyzer.capture.sets import CaptureSet
from analyzer.dissect.constants import ApiKey
from analyzer.dissect.message import Options
from analyzer.events import CaptureIssue, ConnectionEnd, ConnIssue
from analyzer.export.jsonout import connection_json, exchange_json, stream_event_json
from analyzer.export.writer import Writer
from analyzer.issues import CAPTURE_NO_TCP, STREAM_GAP
from analyzer.model import Exchange, Issue
from analyzer.pipeline import Analysis, Pipeline
from analyzer.reassembly.packet import decode_tcp
from analyzer.session.knowledge import EXCHANGE_TOPIC_ARRAYS
from analyzer.session.records import FETCH_APIS
from analyzer.session.stats import Stats, exchange_facts, topic_record_counts
from analyzer.tls.keylog import KeyLog

SAMPLE = 8 << 20  # capture bytes read to plan which process takes which connection
_FLUSH = 1 << 62  # sort key of the events of the end of the capture, after every packet
_EXCHANGE, _CONNECTION, _GAP, _ISSUE = range(4)
_SECTIONS = (None, "connections", "gaps", "issues")
# exchanges the knowledge learns from (Knowledge.learn): sent whole to the merge
_KNOWLEDGE_APIS = frozenset(
    (
        ApiKey.METADATA,
        ApiKey.CREATE_TOPICS,
        ApiKey.DESCRIBE_TOPIC_PARTITIONS,
        ApiKey.API_VERSIONS,
        ApiKey.JOIN_GROUP,
        ApiKey.HEARTBEAT,
        ApiKey.LEAVE_GROUP,
        ApiKey.SYNC_GROUP,
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
    )
)


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


class PartFailed(Exception):
    """A process could not do its share (the reason is the message): one process must."""


class Part(NamedTuple):
    """What one process sends back: one record per event (its lines are in ``lines``)."""

    items: list  # (batch key, seq, kind, local conn id, line length, extra)
    opens: list[int]  # packet number at which each of its connections opened (local id - 1)
    lines: str | bytes  # its rendered lines: a temporary file, or the bytes themselves
    packets: int
    first_ts: float | None
    last_ts: float
    skipped: Counter
    issues: list[Issue]  # the capture's (every process reads all of it: the first one's count)
    tls_connections: int
    tls_decrypted: int


def _key(seg) -> tuple:
    a, b = (seg[0], seg[1]), (seg[2], seg[3])
    return (a, b) if a <= b else (b, a)


def _hash_owner(key: tuple, parts: int) -> int:
    (sa, pa), (sb, pb) = key
    return zlib.crc32(bytes(sa) + bytes(sb) + struct.pack(">HH", pa, pb)) % parts


def plan_owners(path: str, parts: int, sample: int = SAMPLE) -> dict:
    """Which process takes which connection, from the payload bytes of the connections seen in
    the first ``sample`` bytes: the biggest first, each to the least loaded process."""
    size: Counter = Counter()
    cap = CaptureFile(path)
    for _, _ts, linktype, data in cap:
        seg = decode_tcp(linktype, data)
        if type(seg) is tuple:
            size[_key(seg)] += len(seg[7]) + 64  # a packet costs something even without payload
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


def run_part(job: Job) -> Part:
    """One process's share: the connections it owns, analysed and rendered."""
    paths = list(job.paths)
    source: Any = CaptureSet(paths) if len(paths) > 1 else CaptureFile(paths[0])
    keylog = KeyLog.from_file(job.keylog) if job.keylog else KeyLog()
    secrets = getattr(source, "secrets", None)
    if secrets is not None:
        keylog.attach(secrets)
    pipe = Pipeline(Options(job.records_bodies, job.show_secrets), ports=job.ports, keylog=keylog)
    ids = _Watched()
    pipe.knowledge.topic_ids = ids
    reasm = pipe.reasm
    owners, part, parts = job.owners, job.part, job.parts
    mine: dict[tuple, bool] = {}
    skipped: Counter = Counter()
    items: list = []
    opens: list[int] = []
    packets = 0
    first_ts = None
    last_ts = 0.0
    seq = 0
    spans, records = job.spans, job.records_bodies
    if job.tmpdir is not None:
        fd, lines_path = tempfile.mkstemp(prefix=f"export-part{part}-", suffix=".ndjson", dir=job.tmpdir)
        sink: BinaryIO = os.fdopen(fd, "wb", buffering=1 << 20)
    else:
        sink = io.BytesIO()
    with sink as out:

        def emit(events: list, batch: int) -> None:
            nonlocal seq
            learnt = ids.used  # a topic id was looked up while labelling this batch's exchanges
            ids.used = False
            for ev in events:
                t = type(ev)
                if t is Exchange:
                    data = orjson.dumps(exchange_json(ev, spans, records), option=orjson.OPT_NON_STR_KEYS)
                    facts = exchange_facts(ev, ids)
                    refs = _topic_refs(ev) if learnt or ids.used else None
                    ids.used = False
                    know = ev if ev.api_key in _KNOWLEDGE_APIS else None
                    items.append((batch, seq, _EXCHANGE, ev.conn.id, len(data), (facts, refs, know)))
                elif t is ConnIssue:
                    obj = stream_event_json(ev)
                    data = orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS)
                    kind = _GAP if ev.issue.code == STREAM_GAP.code else _ISSUE
                    items.append((batch, seq, kind, ev.conn.id, len(data), (ev.issue.code, ev.issue.message)))
                elif t is ConnectionEnd:
                    data = orjson.dumps(connection_json(ev.conn), option=orjson.OPT_NON_STR_KEYS)
                    items.append((batch, seq, _CONNECTION, ev.conn.id, len(data), ev.conn))
                else:
                    continue
                out.write(data)
                seq += 1

        next_id = reasm.next_id
        for index, ts, linktype, data in source:
            packets += 1
            if first_ts is None:
                first_ts = ts
            last_ts = ts
            seg = decode_tcp(linktype, data)
            if type(seg) is str:
                skipped[seg] += 1
                continue
            k4 = seg[:4]
            own = mine.get(k4)
            if own is None:
                key = _key(seg)
                owner = owners.get(key)
                own = mine[k4] = (owner if owner is not None else _hash_owner(key, parts)) == part
            if not own:
                continue
            evs = pipe.feed_segment(index, ts, seg)
            if reasm.next_id != next_id:  # this packet opened a connection
                opens.append(index)
                next_id = reasm.next_id
            if evs:
                emit(evs, index)
        emit(pipe.finish(), _FLUSH)
        lines: str | bytes = lines_path if job.tmpdir is not None else out.getvalue()  # type: ignore[attr-defined]  # a BytesIO without a tmpdir
    return Part(
        items,
        opens,
        lines,
        packets,
        first_ts,
        last_ts,
        skipped,
        list(getattr(source, "issues", ())) + keylog.issues,
        pipe.tls_connections,
        pipe.tls_decrypted,
    )


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


def _ignore_sigint() -> None:
    """Ctrl-C is the parent's to handle (it ends the pool): no traceback from each process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _memoryview_as_bytes(m: memoryview):
    return bytes, (m.tobytes(),)


def _resolve(name, tid, ids: dict) -> str:
    return name if name else ids.get(tid, tid)


def export(
    paths: list[str],
    out: BinaryIO,
    fmt: str,
    jobs: int,
    opts: Options,
    ports: tuple[int, ...] = (),
    keylog: str | None = None,
    spans: bool = True,
) -> Analysis:
    """Export one capture with ``jobs`` processes; the analysis returned gives the exit code."""
    owners = plan_owners(paths[0], jobs)
    name = CaptureSet(paths).name if len(paths) > 1 else CaptureFile(paths[0]).name
    with tempfile.TemporaryDirectory(prefix="kafka-analyzer-") as tmpdir:
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
            )
            for i in range(jobs)
        ]
        # frames and fields hold memoryviews of the capture's chunks: they travel as bytes
        ForkingPickler.register(memoryview, _memoryview_as_bytes)
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        try:
            with ctx.Pool(jobs, initializer=_ignore_sigint) as pool:
                parts = pool.map(run_part, jobs_list)
        except Exception as exc:  # noqa: BLE001 - whatever stopped a process, one process does it all
            raise PartFailed(f"{type(exc).__name__}: {exc}") from exc
        return _merge(parts, name, out, fmt, spans, opts.records_bodies, keylog)


def _analysis(parts: list[Part], name: str, connections: int, keylog: str | None) -> Analysis:
    """The analysis one run would end with (counters, capture issues' source), for the summary
    and the exit code."""
    first = parts[0]
    a = Analysis(_Done(name, first.issues))
    pipe = a.pipeline
    pipe.packets = first.packets
    pipe.first_ts = first.first_ts
    pipe.last_ts = first.last_ts
    pipe.skipped = first.skipped
    pipe.reasm.connections = connections
    pipe.tls_connections = sum(p.tls_connections for p in parts)
    pipe.tls_decrypted = sum(p.tls_decrypted for p in parts)
    if keylog:
        pipe.keylog = KeyLog.from_file(keylog)
    return a


def _merge(
    parts: list[Part], name: str, out: BinaryIO, fmt: str, spans: bool, records: bool, keylog
) -> Analysis:
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

    a = _analysis(parts, name, len(opened), keylog)
    first = parts[0]
    pipe = a.pipeline
    knowledge = pipe.knowledge
    topic_ids = knowledge.topic_ids
    stats = Stats(topic_ids)
    w = Writer(out, fmt, spans=spans, records=records)
    w.begin(name)
    files = [open(p.lines, "rb") if isinstance(p.lines, str) else io.BytesIO(p.lines) for p in parts]  # noqa: SIM115 - closed below
    try:
        batch_key = None
        pending: list = []  # the current batch: (kind, conn id, data, extra)

        def flush_batch() -> None:
            # the statistics count a batch once the pipeline learnt from all of it, as one run
            for kind, conn, data, x in pending:
                w.raw(_SECTIONS[kind], data)
                if kind == _EXCHANGE:
                    facts, refs, _know = x
                    if refs is not None:
                        totals: dict[str, list[int]] = {}
                        for nm, tid, nrec, nbytes in refs[1]:
                            acc = totals.setdefault(_resolve(nm, tid, topic_ids), [0, 0])
                            acc[0] += nrec
                            acc[1] += nbytes
                        facts = (*facts[:11], [(t, n, b) for t, (n, b) in totals.items()])
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
            data = _renumber(files[p].read(n), kind, conn)
            if kind == _EXCHANGE:
                facts, refs, know = x
                if know is not None:
                    knowledge.learn(know)
                if refs is not None:
                    labels: dict[str, list[int]] = {}
                    for nm, tid, partitions in refs[0]:
                        labels.setdefault(_resolve(nm, tid, topic_ids), []).extend(partitions)
                    if list(labels) != facts[10]:
                        data = _relabel(data, labels)
                        facts = (*facts[:10], list(labels), facts[11])
                        x = (facts, refs, know)
            pending.append((kind, conn, data, x))
        flush_batch()
    finally:
        for f in files:
            f.close()
    issues = list(first.issues)
    if pipe.packets and not pipe.connections:
        issues.append(CAPTURE_NO_TCP("no TCP traffic in the capture"))
    a.capture_issues = issues
    for i in issues:
        ev = CaptureIssue(i, pipe.last_ts if pipe.packets else None)
        stats.add(ev)
        w.event(ev)
    from analyzer.session.report import stats_tables

    w.end(stats_tables(stats, a))
    a.finished = True
    return a
