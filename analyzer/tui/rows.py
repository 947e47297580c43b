"""The index's rows, packed: one record of about 100 bytes an exchange (:data:`ROW`; strings and
tuples are numbers of interned tables) in a :class:`RowStore`, in memory for the first
:data:`SPILL_ROWS` exchanges and in a temporary file beyond. A :class:`Row` is made from its
record when asked for (the list draws a window; filter and sort read every record in chunks);
the list's columns (:data:`COLUMNS`) are what a row shows and sorts by."""

from __future__ import annotations

import math
import os
import struct
import sys
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, cast, overload

from analyzer.model import ConnInfo, Exchange, Issue, Message, Severity
from analyzer.session.report import api_text, exchange_flags, topics_text
from analyzer.session.stats import error_names
from analyzer.tui.spool import FrameRef, Spool, SpoolError, spool_frame, temp_file

intern = sys.intern


def istr(v):
    """``v`` interned when it is a str."""
    return intern(v) if type(v) is str else v


EMPTY: tuple = ()
_SEVERITIES = tuple(sorted(Severity))  # by value
NONE = -(1 << 31)  # None in an int16 column (api key, version)
NO_CORR = -(1 << 62)  # None as a correlation id (an int32)
SPILL_ROWS = 2_000_000  # rows kept in memory; the later ones spill to a temporary file


class Indexes(array):
    """Row indexes, 4 bytes each (a list of ints costs up to 36); equal to a list of the same
    ints, as the lists they replace were."""

    def __new__(cls, items: Iterable[int] = ()) -> Indexes:
        return cast(Indexes, super().__new__(cls, "i", items))  # typeshed: array[int], not the subclass

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return super().__eq__(other)

    __hash__ = None


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
        self._file: IO[bytes] | None = None
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
    def spill_file(self) -> IO[bytes] | None:
        """The temporary file of the spilled rows (None until a row spills)."""
        return self._file

    def append(self, rec: tuple) -> None:
        data = ROW.pack(*rec)
        if self._n < self.spill_after:
            self._mem += data
        else:
            if self._file is None:
                f = self._file = temp_file("kafka-analyzer-rows-", self.directory)
                self._fd = f.fileno()
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


class Taken(Sequence["Row"]):
    """The first ``n`` rows of a :class:`RowStore` (what the UI took so far), as a sequence."""

    def __init__(self, store: RowStore, n: int = 0) -> None:
        self.store = store
        self.n = n

    def __len__(self) -> int:
        return self.n

    @overload
    def __getitem__(self, i: int) -> Row: ...
    @overload
    def __getitem__(self, i: slice) -> list[Row]: ...
    def __getitem__(self, i: int | slice) -> Row | list[Row]:
        if isinstance(i, slice):
            return [self.store[j] for j in range(*i.indices(self.n))]
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError("row index out of range")
        return self.store[i]

    def __iter__(self) -> Iterator[Row]:
        return self.store.iter(0, self.n)

    def extend(self, rows: list[Row]) -> None:
        self.n += len(rows)


class Picked(Sequence["Row"]):
    """Rows of ``rows`` by index (``indexes``), as a sequence made on access."""

    def __init__(self, rows: Sequence[Row], indexes: Sequence[int]) -> None:
        self.rows = rows
        self.indexes = indexes

    def __len__(self) -> int:
        return len(self.indexes)

    @overload
    def __getitem__(self, i: int) -> Row: ...
    @overload
    def __getitem__(self, i: slice) -> list[Row]: ...
    def __getitem__(self, i: int | slice) -> Row | list[Row]:
        if isinstance(i, slice):
            return [self.rows[j] for j in self.indexes[i]]
        return self.rows[self.indexes[i]]

    def __iter__(self) -> Iterator[Row]:
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
        "store",
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
        self.store = store
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
        topics = tuple((intern(t), tuple(ps)) for t, ps in ex.topics.items()) if ex.topics else EMPTY
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
            store.clients.code(intern(cid) if cid is not None else None),
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
        return isinstance(other, Row) and other.index == self.index and other.store is self.store

    def __hash__(self) -> int:
        return self.index

    @property
    def has_errors(self) -> bool:
        return self.severity is not None

    @property
    def issues(self) -> tuple[Issue, ...]:
        """The exchange-level (pairing) issues."""
        return self.store.issues.get(self.index, EMPTY)

    @property
    def req(self) -> FrameRef | None:
        at = self.req_at
        return FrameRef.load(self.store.spool, at, self.store.keep.get(at)) if at >= 0 else None

    @property
    def resp(self) -> FrameRef | None:
        at = self.resp_at
        return FrameRef.load(self.store.spool, at, self.store.keep.get(at)) if at >= 0 else None

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
