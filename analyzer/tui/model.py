"""The TUI's data: a compact index of the exchanges, the spool of their frame payloads, the filter
and the sort orders, the connection and issue summaries. No Textual here (unit-tested alone).

Indexing keeps per exchange only what the list, the filter and the sort need (times, endpoints,
API, version, correlation id, topics, sizes, latency, flags, issue codes) and where its frames are
in a temporary file (:class:`Spool`, the frames' metadata in front of their payloads), packed in
one record of about 100 bytes (:class:`RowStore`; strings and tuples are numbers of interned
tables): the capture's bytes are not kept in memory, so memory grows with exchanges, not bytes,
and beyond :data:`SPILL_ROWS` exchanges the records spill to a temporary file too. A
:class:`Row` is made from its record when asked for (the list draws a window; filter and sort
read every record in chunks). The decoded trees (with record bodies) are made again from the
spooled payloads when an exchange is shown (:meth:`Index.exchange`).
"""

from __future__ import annotations

import math
import os
import struct
import sys
import tempfile
from array import array
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import lru_cache

from analyzer.dissect.message import Options, decode_request, decode_response
from analyzer.dissect.protocol_table import ApiKey
from analyzer.events import CaptureIssue, ConnectionEnd, ConnIssue, Event
from analyzer.model import ConnInfo, Exchange, Field, Frame, Issue, Message, Severity
from analyzer.session.report import api_text, exchange_flags, topics_text
from analyzer.session.stats import error_names

_intern = sys.intern


def _istr(v):
    """``v`` interned when it is a str."""
    return _intern(v) if type(v) is str else v


# -- the spool -------------------------------------------------------------------------------------


class SpoolError(Exception):
    """The TUI's temporary files (the spool, the spilled rows) could not be made or written
    (a full disk, an unusable temporary directory): what happened, for the user."""


def temp_file(prefix: str, directory: str | None):
    """An anonymous temporary file, or :class:`SpoolError` saying why not."""
    try:
        return tempfile.TemporaryFile(prefix=prefix, dir=directory)  # noqa: SIM115
    except OSError as e:
        where = f" in {directory}" if directory else " (TMPDIR)"
        raise SpoolError(f"cannot create the TUI's temporary file{where}: {e}") from e


class Spool:
    """An append-only temporary file of frame payloads (and their packet numbers).

    The indexing thread appends (:meth:`put`) and calls :meth:`flush` before it hands rows to
    the UI; the UI thread reads what was flushed (:meth:`get`, ``os.pread``: no shared file
    position). What is put waits in memory until :meth:`flush` (one write per batch of rows,
    not one or two per frame). The file is deleted when closed (and by the OS if the process
    dies).
    """

    def __init__(self, directory: str | None = None) -> None:
        self._f = temp_file("kafka-analyzer-tui-", directory)
        self._fd = self._f.fileno()
        self._buf = bytearray()
        self.size = 0

    def put(self, data: bytes | memoryview, more: bytes = b"") -> int:
        """Append ``data`` (and ``more`` after it); where ``data`` starts."""
        off = self.size
        buf = self._buf
        buf += data
        buf += more
        self.size = off + len(data) + len(more)
        return off

    def flush(self) -> None:
        try:
            if self._buf:
                self._f.write(self._buf)
                self._buf = bytearray()
            self._f.flush()
        except OSError as e:
            raise SpoolError(f"cannot write the TUI's temporary file of frames: {e.strerror or e}") from e

    def get(self, offset: int, length: int) -> bytes:
        return os.pread(self._fd, length, offset)

    def close(self) -> None:
        self._f.close()


# -- rows --------------------------------------------------------------------------------------------


FRAME_HEAD = struct.Struct("<Bqqqddi")  # direction, stream offset, length, bytes, first/last ts, packets


class FrameRef:
    """Where one frame is: its spooled payload, packet numbers and packet offsets, and its
    metadata (spooled in front of its payload: a row keeps only where it starts).

    ``keep`` holds a message that is not re-decoded (a raw SASL token, decoded with its
    connection's mechanism at capture time; these are small)."""

    __slots__ = (
        "direction",
        "stream_offset",
        "length",
        "nbytes",
        "ts_first",
        "ts_last",
        "spool",
        "packets",
        "keep",
    )

    def __init__(self, frame: Frame, spool: Spool, keep: Message | None) -> None:
        self.direction = frame.direction
        self.stream_offset = frame.offset
        self.length = frame.length
        self.ts_first = frame.ts_first
        self.ts_last = frame.ts_last
        self.nbytes = len(frame.payload)  # the size field's value for whole frames
        self.packets = len(frame.packet_indexes)
        self.spool = spool_frame(frame, spool)
        self.keep = keep

    @classmethod
    def load(cls, spool: Spool, offset: int, keep: Message | None) -> FrameRef:
        """The frame spooled at ``offset`` (by :func:`spool_frame`)."""
        ref = cls.__new__(cls)
        (
            ref.direction,
            ref.stream_offset,
            ref.length,
            ref.nbytes,
            ref.ts_first,
            ref.ts_last,
            ref.packets,
        ) = FRAME_HEAD.unpack(spool.get(offset, FRAME_HEAD.size))
        ref.spool = offset
        ref.keep = keep
        return ref

    def frame(self, conn: int, kind: str, spool: Spool) -> Frame:
        n, count = self.nbytes, self.packets
        raw = spool.get(self.spool + FRAME_HEAD.size, n + 8 * (2 * count - 1 if count > 1 else count))
        pk = array("q")
        pk.frombytes(raw[n:])
        return Frame(
            conn,
            self.direction,
            self.stream_offset,
            self.length,
            raw[:n],
            self.ts_first,
            self.ts_last,
            tuple(pk[:count]),
            kind,
            (0, *pk[count:]) if count and min(pk[count:], default=0) >= 0 else (),
        )


def spool_frame(frame: Frame, spool: Spool) -> int:
    """Spool ``frame``: its metadata, payload, packet numbers and where each packet after the
    first starts in the frame (the first starts at 0; nothing more for the frames that fit in
    one packet; -1: not known, a frame not built by the framer). Where it starts."""
    pk = frame.packet_indexes
    spooled = array("q", pk)
    if len(pk) > 1:
        offs = frame.packet_offsets
        spooled.extend(offs[1:] if len(offs) == len(pk) else (-1,) * (len(pk) - 1))
    payload = frame.payload
    head = FRAME_HEAD.pack(
        frame.direction, frame.offset, frame.length, len(payload), frame.ts_first, frame.ts_last, len(pk)
    )
    off = spool.put(head, payload)
    spool.put(spooled.tobytes())
    return off


EMPTY: tuple = ()
_SEVERITIES = tuple(sorted(Severity))  # by value
NONE = -(1 << 31)  # None in an int16 column (api key, version)
NO_CORR = -(1 << 62)  # None as a correlation id (an int32)
SPILL_ROWS = 2_000_000  # rows kept in memory; the later ones spill to a temporary file


class Indexes(array):
    """Row indexes, 4 bytes each (a list of ints costs up to 36); equal to a list of the same
    ints, as the lists they replace were."""

    def __new__(cls, items: Iterable[int] = ()) -> Indexes:
        return super().__new__(cls, "i", items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]


class _Table:
    """Distinct values by number (rows keep the numbers): 0 is ``first``."""

    __slots__ = ("values", "codes")

    def __init__(self, first: object) -> None:
        self.values: list = [first]
        self.codes: dict = {first: 0}

    def code(self, value: object) -> int:
        c = self.codes.get(value)
        if c is None:
            c = self.codes[value] = len(self.values)
            self.values.append(value)
        return c


# one row: index, ts, latency (NaN: none), conn id, api key, api version, corr, client id,
# topics, request bytes, response bytes, flags, severity (-1: none), codes, where the request
# and response frames are spooled (-1: none), the api key and version the response was
# decoded with (NONE: none); strings and tuples are numbers of :class:`RowStore`'s tables
ROW = struct.Struct("<iddiiiqiiqqibiqqii")
_TS = struct.Struct("<d")  # a record's ts, 4 bytes in


class RowStore:
    """Every row of an index, packed (:data:`ROW`, about 100 bytes an exchange): in memory for
    the first ``spill_after``, then in a temporary file (deleted when closed, and by the OS if
    the process dies) read back on demand. ``store[i]`` is row ``i`` (a :class:`Row`, made
    again on each access); iterating reads the rows in chunks.

    The indexing thread appends and calls :meth:`flush` before it hands rows to the UI; the
    UI thread reads what was flushed (``os.pread``: no shared file position)."""

    CHUNK = 1 << 15  # rows read at a time when iterating

    def __init__(self, spool: Spool, spill_after: int | None = None, directory: str | None = None) -> None:
        self.spool = spool
        self.spill_after = SPILL_ROWS if spill_after is None else max(0, spill_after)
        self.directory = directory
        self._mem = bytearray()
        self._n = 0
        self._file = None
        self._fd = -1
        self._pending = bytearray()  # spilled rows not yet written
        self._written = 0  # spilled rows written
        self.clients = _Table(None)
        self.topics = _Table(EMPTY)
        self.flags = _Table(EMPTY)
        self.codes = _Table(EMPTY)
        self.conns: dict[int, ConnInfo] = {}
        self.issues: dict[int, tuple[Issue, ...]] = {}  # exchange-level (pairing) issues, by row
        self.keep: dict[int, Message] = {}  # raw SASL tokens, by where their frame is spooled

    def __len__(self) -> int:
        return self._n

    @property
    def spilled(self) -> int:
        """Rows in the temporary file."""
        return max(0, self._n - self.spill_after)

    @property
    def spill_file(self):
        """The temporary file of the spilled rows (None until a row spills)."""
        return self._file

    def append(self, rec: tuple) -> None:
        data = ROW.pack(*rec)
        if self._n < self.spill_after:
            self._mem += data
        else:
            if self._file is None:
                self._file = temp_file("kafka-analyzer-rows-", self.directory)
                self._fd = self._file.fileno()
            self._pending += data
        self._n += 1

    def flush(self) -> None:
        if self._pending:
            data = self._pending
            try:
                done = os.pwrite(self._fd, data, self._written * ROW.size)
                while done < len(data):  # a short write
                    done += os.pwrite(self._fd, data[done:], self._written * ROW.size + done)
            except OSError as e:
                raise SpoolError(f"cannot write the TUI's temporary file of rows: {e.strerror or e}") from e
            self._pending = bytearray()
            self._written += len(data) // ROW.size

    def record(self, i: int) -> tuple:
        n = self._n
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("row index out of range")
        if i < self.spill_after:
            return ROW.unpack_from(self._mem, i * ROW.size)
        k = i - self.spill_after
        if k >= self._written:  # not written yet (the indexing thread)
            return ROW.unpack_from(self._pending, (k - self._written) * ROW.size)
        return ROW.unpack(os.pread(self._fd, ROW.size, k * ROW.size))

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [Row(self, self.record(j)) for j in range(*i.indices(self._n))]
        return Row(self, self.record(i))

    def ts(self, i: int) -> float:
        """Row ``i``'s request time (without making the row, when it is in memory)."""
        if 0 <= i < min(self.spill_after, self._n):
            return _TS.unpack_from(self._mem, i * ROW.size + 4)[0]
        return self.record(i)[1]

    def __iter__(self):
        return self.iter(0, self._n)

    def iter(self, start: int, stop: int):
        """Rows ``start`` to ``stop`` (excluded), read in chunks."""
        size, chunk = ROW.size, self.CHUNK
        i = start
        while i < stop:
            j = min(stop, i + chunk)
            if i < self.spill_after:
                j = min(j, self.spill_after)
                data = bytes(self._mem[i * size : j * size])
            else:
                k = i - self.spill_after
                j = min(j, self.spill_after + self._written)
                if j <= i:  # not written yet: one by one
                    yield self[i]
                    i += 1
                    continue
                data = os.pread(self._fd, (j - i) * size, k * size)
            for rec in ROW.iter_unpack(data):
                yield Row(self, rec)
            i = j

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._fd = -1


class Taken:
    """The first ``n`` rows of a :class:`RowStore` (what the UI took so far), as a sequence."""

    def __init__(self, store: RowStore, n: int = 0) -> None:
        self.store = store
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self.store[j] for j in range(*i.indices(self.n))]
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError("row index out of range")
        return self.store[i]

    def __iter__(self):
        return self.store.iter(0, self.n)

    def extend(self, rows: list[Row]) -> None:
        self.n += len(rows)


class Picked:
    """Rows of ``rows`` by index (``indexes``), as a sequence made on access."""

    def __init__(self, rows, indexes) -> None:
        self.rows = rows
        self.indexes = indexes

    def __len__(self) -> int:
        return len(self.indexes)

    def __getitem__(self, i):
        return self.rows[self.indexes[i]]

    def __iter__(self):
        rows = self.rows
        return (rows[i] for i in self.indexes)


class Row:
    """One exchange in the index: what the list shows, filters and sorts on (made from its
    packed record in a :class:`RowStore`; the frames' metadata is read from the spool when
    asked for: :attr:`req`, :attr:`resp`)."""

    __slots__ = (
        "index",
        "conn",
        "ts",
        "api_key",
        "api_version",
        "corr",
        "client_id",
        "topics",
        "req_bytes",
        "resp_bytes",
        "latency",
        "flags",
        "severity",
        "codes",
        "req_at",
        "resp_at",
        "resp_key",
        "_store",
    )

    def __init__(self, store: RowStore, rec: tuple) -> None:
        (
            self.index,
            self.ts,
            latency,
            conn,
            key,
            version,
            corr,
            client,
            topics,
            self.req_bytes,
            self.resp_bytes,
            flags,
            severity,
            codes,
            self.req_at,
            self.resp_at,
            rkey,
            rversion,
        ) = rec
        self._store = store
        self.conn: ConnInfo = store.conns[conn]
        self.latency = None if latency != latency else latency
        self.api_key = None if key == NONE else key
        self.api_version = None if version == NONE else version
        self.corr = None if corr == NO_CORR else corr
        self.client_id = store.clients.values[client]
        self.topics: tuple[tuple[str, tuple[int, ...]], ...] = store.topics.values[topics]
        self.flags: tuple[str, ...] = store.flags.values[flags]
        self.severity = None if severity < 0 else _SEVERITIES[severity]
        self.codes: tuple[str, ...] = store.codes.values[codes]
        self.resp_key = (None if rkey == NONE else rkey, None if rversion == NONE else rversion)

    @staticmethod
    def record(index: int, ex: Exchange, store: RowStore, issues: list[Issue] | None = None) -> tuple:
        """The packed form of exchange ``ex`` (its frames spooled; its strings and tuples put
        in ``store``'s tables); ``issues``: ``ex.all_issues()`` when the caller has them."""
        req, resp = ex.request, ex.response
        spool = store.spool
        cid = ex.client_id
        # (topic, partitions) pairs
        topics = tuple((_intern(t), tuple(ps)) for t, ps in ex.topics.items()) if ex.topics else EMPTY
        if issues is None:  # once: the flags and the codes both need them
            issues = ex.all_issues()
        errs = error_names(resp)
        flags, worst = exchange_flags(ex, issues, errs)
        # every issue code and Kafka error name (the issues view groups by these)
        codes = [i.code for i in issues]
        codes.extend(f"kafka.{n}" for n in errs)
        if ex.issues:
            store.issues[index] = tuple(ex.issues)
        store.conns.setdefault(ex.conn.id, ex.conn)
        token = req is not None and req.api_key is None  # a raw SASL token and its answer
        req_at = resp_at = -1
        if req is not None:
            req_at = spool_frame(req.frame, spool)
            if token:
                store.keep[req_at] = req
        if resp is not None:
            resp_at = spool_frame(resp.frame, spool)
            if token:
                store.keep[resp_at] = resp
        latency = ex.latency
        key, version, corr = ex.api_key, ex.api_version, ex.correlation_id
        # the api key and version the response was decoded with (its request's)
        rkey, rversion = (req.api_key, req.api_version) if req is not None else (None, None)
        return (
            index,
            ex.ts,
            math.nan if latency is None else latency,
            ex.conn.id,
            NONE if key is None else key,
            NONE if version is None else version,
            NO_CORR if corr is None else corr,
            store.clients.code(_intern(cid) if cid is not None else None),
            store.topics.code(topics),
            req.frame.length + 4 if req is not None else -1,
            resp.frame.length + 4 if resp is not None else -1,
            store.flags.code(tuple(flags)) if flags else 0,
            -1 if worst is None else int(worst),
            store.codes.code(tuple(dict.fromkeys(codes))) if codes else 0,
            req_at,
            resp_at,
            NONE if rkey is None else rkey,
            NONE if rversion is None else rversion,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Row) and other.index == self.index and other._store is self._store

    def __hash__(self) -> int:
        return self.index

    @property
    def has_errors(self) -> bool:
        return self.severity is not None

    @property
    def issues(self) -> tuple[Issue, ...]:
        """The exchange-level (pairing) issues."""
        return self._store.issues.get(self.index, EMPTY)

    @property
    def req(self) -> FrameRef | None:
        at = self.req_at
        return FrameRef.load(self._store.spool, at, self._store.keep.get(at)) if at >= 0 else None

    @property
    def resp(self) -> FrameRef | None:
        at = self.resp_at
        return FrameRef.load(self._store.spool, at, self._store.keep.get(at)) if at >= 0 else None

    # what the list shows -------------------------------------------------------------------------
    @property
    def api(self) -> str:
        return api_text(self.api_key, self.api_version)

    @property
    def endpoints(self) -> str:
        c = self.conn
        if c.client_direction is None:
            return f"{c.a} ?? {c.b}"
        return f"{c.client} -> {c.broker}"

    def topic_dict(self) -> dict[str, list[int]]:
        """The exchange's topics as the session layer names them: topic -> partitions."""
        return {t: list(ps) for t, ps in self.topics}

    @property
    def topics_text(self) -> str:
        return topics_text(self.topic_dict()) if self.topics else ""

    @property
    def sizes(self) -> str:
        req = self.req_bytes if self.req_bytes >= 0 else "-"
        resp = self.resp_bytes if self.resp_bytes >= 0 else "-"
        return f"{req}/{resp}"

    @property
    def latency_text(self) -> str:
        return f"{self.latency * 1000:.3f}ms" if self.latency is not None else "-"

    def cells(self, origin: float | None) -> tuple[str, ...]:
        return tuple(c.text(self, origin) for c in COLUMNS)


# -- columns -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Column:
    """A list column: its title, how wide it may grow, whether it stays at narrow widths
    (``priority`` 0 columns are always shown, then 1, 2... while they fit), its text and its
    sort key."""

    name: str
    max_width: int
    priority: int
    text: Callable[[Row, float | None], str]
    key: Callable[[Row], object]


def _none_last(v):
    return (v is None, v if v is not None else 0)


COLUMNS: tuple[Column, ...] = (
    Column("#", 7, 2, lambda r, o: str(r.index + 1), lambda r: r.index),
    Column(
        "time",
        14,
        0,
        lambda r, o: f"{r.ts - o:.6f}" if o is not None else "-",
        lambda r: r.ts,
    ),
    Column("client -> broker", 47, 3, lambda r, o: r.endpoints, lambda r: (r.endpoints, r.ts)),
    Column(
        "client id",
        30,
        4,
        lambda r, o: r.client_id if r.client_id is not None else "-",
        lambda r: r.client_id or "",
    ),
    Column(
        "API",
        24,
        0,
        lambda r, o: r.api,
        lambda r: (r.api_key if r.api_key is not None else -1, r.api_version or 0),
    ),
    Column(
        "corr", 10, 0, lambda r, o: str(r.corr) if r.corr is not None else "-", lambda r: _none_last(r.corr)
    ),
    Column("topics", 60, 3, lambda r, o: r.topics_text, lambda r: r.topics_text),
    Column("req/resp B", 17, 1, lambda r, o: r.sizes, lambda r: max(r.req_bytes, 0) + max(r.resp_bytes, 0)),
    Column("latency", 12, 0, lambda r, o: r.latency_text, lambda r: _none_last(r.latency)),
    Column(
        "!",
        80,
        0,
        lambda r, o: "; ".join(r.flags),
        lambda r: (-(r.severity if r.severity is not None else -1), r.flags),
    ),
)
COLUMN_NAMES = tuple(c.name for c in COLUMNS)
TIME_COLUMN = 1


# -- the filter ----------------------------------------------------------------------------------------

ERROR_WORDS = ("errors", "error", "err")


@lru_cache(maxsize=64)
def parse_filter(text: str) -> tuple[str, ...]:
    return tuple(t for t in text.lower().split() if t)


def matches(row: Row, text: str) -> bool:
    """Whether the filter ``text`` keeps ``row``. Every term must match: ``errors`` keeps
    exchanges with error codes or problems; ``api:X``, ``topic:X``, ``client:X`` look for
    substring X in that column only; any other term is a substring of the API name
    (``produce``, ``fetch v12``), a topic or the client id. (The one place the filter language
    lives: swap in a compiled display filter here.)"""
    for t in parse_filter(text):
        if t in ERROR_WORDS:
            if not row.has_errors:
                return False
            continue
        col, sep, value = t.partition(":")
        client = (row.client_id or "").lower()
        if sep and col in ("api", "topic", "client"):
            if col == "api":
                ok = value in row.api.lower()
            elif col == "topic":
                ok = any(value in topic.lower() for topic, _ in row.topics)
            else:
                ok = value in client
        else:
            ok = t in row.api.lower() or t in client or any(t in topic.lower() for topic, _ in row.topics)
        if not ok:
            return False
    return True


def keep(
    row: Row, text: str, conn: int | None = None, predicate: Callable[[Row], bool] | None = None
) -> bool:
    """Whether a view scoped to connection ``conn`` and filtered by ``predicate`` (a compiled
    display filter over the row's exchange) or else by the text search ``text`` shows ``row``."""
    if conn is not None and row.conn.id != conn:
        return False
    if predicate is not None:
        return predicate(row)
    return not text or matches(row, text)


# -- filters built from a tree field (`f`) --------------------------------------------------------

HEADER_FIELDS = {
    "request_api_key": "api",
    "request_api_version": "version",
    "correlation_id": "corr",
    "client_id": "client_id",
}
# record fields -> the records fields of the filter language
RECORD_FIELDS = {
    ("record", "key"): "records.key",
    ("record", "value"): "records.value",
    ("header", "key"): "records.headers.key",
    ("header", "value"): "records.headers.value",
    ("record_batch", "magic"): "records.magic",
    ("record_batch", "producer_id"): "records.producer_id",
    ("message", "magic"): "records.magic",
    ("message", "key"): "records.key",
    ("message", "value"): "records.value",
}


def literal(v: object) -> str | None:
    """``v`` written as a value of the filter language (None: it has no literal)."""
    from analyzer.filter import quote

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return quote(v)
    if isinstance(v, bytes | bytearray | memoryview):
        try:
            s = bytes(v).decode("utf-8")
        except UnicodeDecodeError:
            return None
        return quote(s) if s.isprintable() else None
    return None


def field_expressions(api_key: int | None, kind: str, path: tuple[Field, ...]) -> list[str] | str:
    """Display filters that keep the exchanges whose ``kind`` message has the value of the tree
    field at the end of ``path`` (from its header or body root), most specific first; or why
    there is none (a str)."""
    from analyzer.dissect.decoder import snake
    from analyzer.dissect.protocol_table import API_NAMES

    if not path:
        return "select a field of the request or response"
    f = path[-1]
    root = path[0]
    if root.type.endswith("Header"):
        name = HEADER_FIELDS.get(f.name)
        if name is None:
            return f"{f.name}: the filter language has no header field of that name"
        if name == "api" and isinstance(f.value, int) and f.value in API_NAMES:
            return [f"api == {API_NAMES[f.value]}"]
        lit = literal(f.value)
        return [f"{name} == {lit}"] if lit is not None else f"{f.name}: no value to compare"
    inside = next((i for i, p in enumerate(path) if p.type == "records"), None)
    if inside is not None:
        if f.type == "record_batch" and isinstance(f.value, dict) and f.value.get("codec"):
            return [f"records.codec == {f.value['codec']}"]
        parent = path[-2] if len(path) >= 2 else None
        name = RECORD_FIELDS.get((parent.type if parent is not None else "", f.name))
        if name is None and parent is not None:
            name = RECORD_FIELDS.get((parent.name, f.name))
        if name is None:
            return f"{f.name}: a records field the filter language does not name"
        lit = literal(f.value)
        if lit is None:
            return f"{f.name}: a binary value (no text to compare)"
        return [f"{name} == {lit}"]
    if api_key is None or api_key not in API_NAMES:
        return "an exchange of an unknown API"
    names = [p.name for i, p in enumerate(path) if i and not path[i - 1].type.startswith("[]")]
    dotted = f"{snake(API_NAMES[api_key])}.{kind}.{'.'.join(names)}"
    if f.children is not None:
        return [dotted]  # a struct or an array: that it is there
    if f.value is None:
        return [f"not {dotted}"]
    lit = literal(f.value)
    if lit is None:
        return f"{f.name}: a binary value (no text to compare)"
    return [f"{dotted} == {lit}"]


# -- the index -------------------------------------------------------------------------------------------


@dataclass(slots=True)
class ConnSummary:
    """One connection as the connections view shows it."""

    info: ConnInfo
    exchanges: int = 0
    errors: int = 0
    client_ids: Counter = field(default_factory=Counter)
    issues: int = 0  # connection-level issues (gaps, resynchronisations...)


@dataclass(slots=True)
class IssueGroup:
    """Every exchange (and connection-level event) with one issue code or Kafka error name."""

    code: str
    severity: Severity | None
    example: str
    rows: Indexes = field(default_factory=Indexes)  # row indexes
    events: int = 0  # connection- and capture-level occurrences (no exchange to jump to)


@dataclass(slots=True)
class GroupEvent:
    """One exchange of a consumer group's protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
    ConsumerGroupHeartbeat): the group's generation and members as they were after it."""

    row: int  # the exchange's row index
    ts: float
    group: str
    api: str
    member: str | None
    generation: int | None
    members: int  # members known after this exchange
    leader: str | None
    error: str | None

    def as_dict(self, origin: float | None) -> dict:
        return {
            "#": self.row + 1,
            "time": round(self.ts - origin, 6) if origin is not None else None,
            "group": self.group,
            "API": self.api,
            "member": self.member,
            "generation": self.generation,
            "members": self.members,
            "leader": self.leader,
            "error": self.error,
        }


_GROUP_APIS = frozenset(
    (
        ApiKey.JOIN_GROUP,
        ApiKey.SYNC_GROUP,
        ApiKey.HEARTBEAT,
        ApiKey.LEAVE_GROUP,
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
    )
)


def _fields(f: Field | None, name: str) -> list[Field]:
    c = f.child(name) if f is not None else None
    return c.children or [] if c is not None else []


class GroupTimeline:
    """The consumer groups over time: one :class:`GroupEvent` per group-protocol exchange, with
    each group's members followed as the exchanges say (joins add, the leader's JoinGroup
    answer lists them all, leaves remove)."""

    def __init__(self) -> None:
        self.events: list[GroupEvent] = []
        self.members: dict[str, set[str]] = {}
        self.leaders: dict[str, str] = {}

    def add(self, row: Row, ex: Exchange) -> None:
        req, resp = ex.request, ex.response
        if req is None or req.body is None:
            return
        body = req.body
        gid = body.get("group_id")
        if not isinstance(gid, str):
            return
        rb = resp.body if resp is not None else None
        members = self.members.setdefault(gid, set())
        key = row.api_key
        member = body.get("member_id") or None
        ok = resp is not None and not resp.errors
        if rb is not None and ok:
            if key == ApiKey.JOIN_GROUP:
                listed = [m.get("member_id") for m in _fields(rb, "members") if m.get("member_id")]
                if listed:  # the leader's answer: every member of the new generation
                    members.clear()
                    members.update(listed)
                member = rb.get("member_id") or member
                if member:
                    members.add(member)
                if rb.get("leader"):
                    self.leaders[gid] = _istr(rb.get("leader"))
            elif key == ApiKey.CONSUMER_GROUP_HEARTBEAT:
                member = rb.get("member_id") or member
                if member and body.get("member_epoch") != -1:
                    members.add(member)
            elif key in (ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT) and member:
                members.add(member)
        if key == ApiKey.LEAVE_GROUP or (
            key == ApiKey.CONSUMER_GROUP_HEARTBEAT and body.get("member_epoch") == -1
        ):
            for m in [member, *(f.get("member_id") for f in _fields(body, "members"))]:
                members.discard(m)
        gen = None
        if rb is not None:
            gen = rb.get("generation_id", rb.get("member_epoch"))
        if gen is None or gen < 0:
            gen = body.get("generation_id", body.get("member_epoch"))
        errors = error_names(resp)
        self.events.append(
            GroupEvent(  # one per heartbeat too: the strings interned, shared by the events
                row.index,
                row.ts,
                _istr(gid),
                _istr(row.api),
                _istr(member),
                gen if isinstance(gen, int) and gen >= 0 else None,
                len(members),
                self.leaders.get(gid),
                _intern(", ".join(dict.fromkeys(errors))) if errors else None,
            )
        )

    def rows(self, origin: float | None) -> list[dict]:
        """The events in time order, as the groups view lists them."""
        return [e.as_dict(origin) for e in sorted(self.events, key=lambda e: (e.ts, e.row))]


class Index:
    """The exchanges of one analysis, in arrival order (``rows[i].index == i``).

    :meth:`add` takes the driver's events (on the indexing thread) and returns the new rows;
    :meth:`exchange` rebuilds an exchange with its field trees from the spool."""

    def __init__(
        self,
        opts: Options,
        spool: Spool | None = None,
        limit: int | None = None,
        spill_after: int | None = None,
        directory: str | None = None,
    ) -> None:
        self.opts = opts  # how exchanges are decoded when shown (record bodies on)
        self.spool = spool if spool is not None else Spool(directory)
        # the rows, packed; beyond ``spill_after`` (default SPILL_ROWS) in a temporary file
        self.rows = RowStore(self.spool, spill_after, directory)
        self.limit = limit  # rows kept at most (a live session); later exchanges are only counted
        self.dropped = 0  # exchanges not kept because of the limit
        self.conns: dict[int, ConnSummary] = {}
        self.issue_groups: dict[str, IssueGroup] = {}
        self.groups = GroupTimeline()
        self.error_rows = 0
        self.origin: float | None = None  # the time column counts from here

    def close(self) -> None:
        self.rows.close()
        self.spool.close()

    def add(self, events: Iterable[Event]) -> list[Row]:
        out: list[Row] = []
        rows = self.rows
        for ev in events:
            t = type(ev)
            if t is Exchange:
                if self.limit is not None and len(rows) >= self.limit:
                    self.dropped += 1
                    continue
                issues = ev.all_issues()  # type: ignore[union-attr]
                rec = Row.record(len(rows), ev, rows, issues)  # type: ignore[arg-type]
                rows.append(rec)
                row = Row(rows, rec)
                out.append(row)
                self._count(row, ev, issues)  # type: ignore[arg-type]
            elif t is ConnIssue:
                info = ev.conn  # type: ignore[union-attr]
                self._conn(info).issues += 1
                self._event_issue(ev.issue)  # type: ignore[union-attr]
            elif t is CaptureIssue:
                self._event_issue(ev.issue)  # type: ignore[union-attr]
            elif t is ConnectionEnd:
                self._conn(ev.conn)  # type: ignore[union-attr]
        if out:
            self.spool.flush()
            rows.flush()
        return out

    def _conn(self, info: ConnInfo) -> ConnSummary:
        s = self.conns.get(info.id)
        if s is None:
            s = self.conns[info.id] = ConnSummary(info)
        return s

    def _count(self, row: Row, ex: Exchange, all_issues: list[Issue]) -> None:
        if row.api_key in _GROUP_APIS:
            self.groups.add(row, ex)
        s = self._conn(row.conn)
        s.exchanges += 1
        if row.has_errors:
            s.errors += 1
            self.error_rows += 1
        if row.client_id is not None:
            s.client_ids[row.client_id] += 1
        if row.codes:
            issues = {i.code: i for i in all_issues}
            for code in row.codes:
                g = self.issue_groups.get(code)
                if g is None:
                    i = issues.get(code)
                    sev = i.severity if i is not None else Severity.ERROR
                    example = i.message if i is not None else f"{row.api} response with error {code[6:]}"
                    g = self.issue_groups[code] = IssueGroup(code, sev, example)
                g.rows.append(row.index)

    def _event_issue(self, issue: Issue) -> None:
        g = self.issue_groups.get(issue.code)
        if g is None:
            g = self.issue_groups[issue.code] = IssueGroup(issue.code, issue.severity, issue.message)
        g.events += 1

    def exchange(self, row: Row, opts: Options | None = None) -> Exchange:
        """The exchange of ``row`` with its field trees, decoded again from the spooled payloads
        (with ``opts``, else :attr:`opts`: record bodies included) as the pairing layer decoded
        them: responses with their request's api key and version. Raw SASL tokens are kept as
        decoded at capture time (with their connection's mechanism)."""
        conn, spool = row.conn, self.spool
        opts = opts if opts is not None else self.opts
        req = resp = None
        if row.req is not None:
            frame = row.req.frame(conn.id, "request", spool)
            keep = row.req.keep
            req = replace(keep, frame=frame) if keep is not None else decode_request(frame, opts)
        if row.resp is not None:
            frame = row.resp.frame(conn.id, "response", spool)
            keep = row.resp.keep
            if keep is not None:
                resp = replace(keep, frame=frame)
            else:
                key, version = row.resp_key
                resp = decode_response(frame, key, version, opts)
        return Exchange(conn, req, resp, list(row.issues), row.topic_dict())

    def connection_rows(self, knowledge=None) -> list[dict]:
        """One dict per connection (the connections view), in the order they were first seen."""
        out = []
        clients = getattr(knowledge, "clients", {}) or {}
        for s in sorted(self.conns.values(), key=lambda s: (s.info.ts_first, s.info.id)):
            info = s.info
            known = info.client_direction is not None
            cid = s.client_ids.most_common(1)[0][0] if s.client_ids else None
            sw = clients.get(cid) if cid is not None else None
            cdir = info.client_direction if known else 0
            out.append(
                {
                    "id": info.id,
                    "client": str(info.client if known else info.a),
                    "broker": str(info.broker if known else info.b),
                    "client_id": cid,
                    "software": " ".join(x for x in sw if x) if sw else None,
                    "exchanges": s.exchanges,
                    "bytes_to_broker": info.bytes[cdir],
                    "bytes_to_client": info.bytes[1 - cdir],
                    "gaps": sum(info.gaps),
                    "errors": s.errors,
                    "issues": s.issues,
                    "status": info.not_kafka and "not kafka" or info.closed or "open",
                }
            )
        return out

    def issue_rows(self) -> list[IssueGroup]:
        """The issue groups, worst first, then most frequent."""
        return sorted(
            self.issue_groups.values(),
            key=lambda g: (
                -(g.severity if g.severity is not None else -1),
                -(len(g.rows) + g.events),
                g.code,
            ),
        )


class SortedRows:
    """The rows a view shows, kept sorted by one column while rows stream in.

    Only the row indexes are kept (:class:`Indexes`, 4 bytes a row), sorted by ``(column
    key, index)`` (ties keep arrival order); rows that sort after every row shown are
    appended, the others inserted (in time order, only the exchanges that completed late,
    such as long-polling Fetches: the keys of the rows they are compared with are made again
    from their rows)."""

    def __init__(self, sort: int = TIME_COLUMN, reverse: bool = False) -> None:
        self.sort = sort
        self.reverse = reverse
        self.indexes = Indexes()
        self._last: tuple | None = None  # (key, index) of the last row

    def reset(self, rows: Iterable[Row]) -> None:
        key = COLUMNS[self.sort].key
        keys: list = []
        idx = Indexes()
        for r in rows:
            keys.append(key(r))
            idx.append(r.index)
        n = len(keys)
        # stable sorts: by index first (when the rows did not come in index order), then key
        pos = list(range(n))
        if any(idx[i] > idx[i + 1] for i in range(n - 1)):
            pos.sort(key=idx.__getitem__)
        pos.sort(key=keys.__getitem__)
        self.indexes = Indexes(idx[p] for p in pos)
        self._last = (keys[pos[-1]], idx[pos[-1]]) if n else None

    def add(self, rows: Iterable[Row]) -> bool:
        """Add ``rows``; True when they were all appended at the end (ascending)."""
        key = COLUMNS[self.sort].key
        idx = self.indexes
        appended = True
        for r in rows:
            k = (key(r), r.index)
            last = self._last
            if last is None or k >= last:
                idx.append(r.index)
                self._last = k
            else:
                store = r._store
                if self.sort == TIME_COLUMN:  # the usual order: the times without the rows
                    pos = bisect_right(idx, k, key=lambda i: (store.ts(i), i))
                else:
                    pos = bisect_right(idx, k, key=lambda i: (key(store[i]), i))
                idx.insert(pos, r.index)
                appended = False
        return appended

    def shown(self) -> Indexes:
        """The row indexes in display order."""
        return Indexes(self.indexes[::-1]) if self.reverse else Indexes(self.indexes)


class ListView:
    """What the exchange list shows: the rows taken so far (arrival order), those the filter
    ``text`` and the connection scope ``conn`` keep, sorted (``shown``: row indexes)."""

    def __init__(self, rows: Taken | None = None) -> None:
        # the rows taken (a list, or the first rows of an index's store)
        self.rows: list[Row] | Taken = rows if rows is not None else []
        self.order = SortedRows()
        self.shown: Indexes = Indexes()
        self.text = ""
        self.conn: int | None = None
        self.predicate: Callable[[Row], bool] | None = None  # the display filter, when text is one

    def add(self, rows: list[Row]) -> list[int] | None:
        """Take new rows: the indexes appended at the end of ``shown``, or None when ``shown``
        was rebuilt (a new row sorts before rows already shown)."""
        self.rows.extend(rows)
        new = [r for r in rows if keep(r, self.text, self.conn, self.predicate)]
        if not new:
            return []
        before = len(self.order.indexes)
        if self.order.add(new) and not self.order.reverse:
            added = self.order.indexes[before:]
            self.shown.extend(added)
            return added
        self.shown = self.order.shown()
        return None

    def rebuild(self) -> None:
        """``shown`` again, after the filter, the scope or the sort order changed."""
        self.order.reset(r for r in self.rows if keep(r, self.text, self.conn, self.predicate))
        self.shown = self.order.shown()

    def sort_by(self, column: int, reverse: bool = False) -> None:
        self.order = SortedRows(column, reverse)
        self.rebuild()


# -- pictures ----------------------------------------------------------------------------------------


def io_series(rows: Iterable[Row], buckets: int = 60) -> dict:
    """Requests, bytes (both directions) and exchanges with errors per second, in ``buckets``
    equal time slices over the span of the rows' request times. ``rows`` is read twice when
    it is a sequence (an index's rows are made again on each pass, not all kept)."""
    if not hasattr(rows, "__len__"):
        rows = list(rows)
    if not len(rows):  # type: ignore[arg-type]
        return {"seconds": 0.0, "step": 0.0, "requests": [], "bytes": [], "errors": []}
    t0, t1, count = math.inf, -math.inf, 0
    for r in rows:
        ts = r.ts
        t0 = min(t0, ts)
        t1 = max(t1, ts)
        count += 1
    span = max(t1 - t0, 1e-6)
    n = max(1, min(buckets, count))
    step = span / n
    req = [0.0] * n
    byt = [0.0] * n
    err = [0.0] * n
    for r in rows:
        b = min(n - 1, int((r.ts - t0) / step))
        req[b] += 1
        byt[b] += max(r.req_bytes, 0) + max(r.resp_bytes, 0)
        if r.has_errors:
            err[b] += 1
    scale = 1.0 / step
    return {
        "seconds": span,
        "step": step,
        "requests": [v * scale for v in req],
        "bytes": [v * scale for v in byt],
        "errors": [v * scale for v in err],
    }


def timeline_bar(row: Row, t0: float, span: float, width: int) -> tuple[int, int]:
    """Where the bar of ``row`` starts (columns from ``t0``) and how long it is (at least one
    column; an unanswered request runs to the end) on an axis of ``width`` columns for
    ``span`` seconds."""
    start = min(width - 1, max(0, int((row.ts - t0) / span * width)))
    if row.latency is None:
        return start, width - start
    return start, max(1, min(width - start, round(row.latency / span * width)))


def latency_histogram(latencies: list[float], bins: int = 12) -> list[tuple[float, float, int]]:
    """(low ms, high ms, count) over log-spaced bins from the smallest to the largest latency."""
    import math

    vals = sorted(v * 1000.0 for v in latencies if v is not None and v >= 0)
    if not vals:
        return []
    lo, hi = max(vals[0], 0.001), max(vals[-1], 0.001)
    if hi <= lo * 1.0001:
        return [(lo, hi, len(vals))]
    edges = [lo * (hi / lo) ** (i / bins) for i in range(bins + 1)]
    counts = [0] * bins
    llo, lspan = math.log(lo), math.log(hi / lo)
    for v in vals:
        i = int((math.log(max(v, lo)) - llo) / lspan * bins)
        counts[min(bins - 1, max(0, i))] += 1
    return [(edges[i], edges[i + 1], counts[i]) for i in range(bins)]
