"""``kafka-analyzer check --parquet DIR``: the rules over the Parquet tables that
``kafka-analyzer spark --out DIR`` wrote, read with pyarrow (no Spark, no Java, no capture read).

There is one way to evaluate rules: each piece's exchanges are rebuilt from the exchanges'
``state`` column (:mod:`analyzer.export.exchange_state`: the decoded trees, issues and connection
the exchange was emitted with) and fed, with the piece's connection and capture issues (the
issues table) and its connections' ends (the connections table: the clients' connection churn),
in the order one run emitted them (``seq``), to the same
:class:`~analyzer.check.engine.Engine` (and baseline profiler) as ``check`` on captures; each
piece ends with the facts of its captures row. A piece is what ``check`` calls a capture: a
file, or the rotated files of one recording chained.

Tables of a big file that ``spark`` analysed in byte-range splits are the same: the stitching
writes the ``state`` and ``seq`` one run writes.

Memory: a piece's small rows (its exchanges' ``seq``, its issues and connection ends) are read
whole, its exchange states in record batches of about 1 MiB (as many rows as the file's metadata
says hold that many bytes), each handed on (and freed) as soon as the run's
order reaches it (the files that hold none of them are not read again), with ``pyarrow.parquet``
alone (``pyarrow.dataset`` costs ~16 MB more to import), so ``check --parquet`` stays within
1.5x of ``check``'s peak memory.

What cannot be evaluated is said, never passed: tables without the ``state`` column (written by
an older ``spark``), a big file analysed in splits that holds no Kafka exchange (why, only one
run says), tables limited by ``spark -Y``,
and rules that need record bodies over tables written without ``spark --records`` are
:class:`NotTables` errors (exit 2) naming the fix.
"""

from __future__ import annotations

import os
from heapq import heappop, heappush
from urllib.parse import unquote

import orjson

from analyzer.events import CaptureIssue, ConnectionEnd, ConnIssue
from analyzer.export.exchange_state import exchange_from_state
from analyzer.model import ConnInfo, Endpoint, Exchange, Issue, Severity
from analyzer.session.knowledge import Knowledge

_SEVERITY = {str(s): s for s in Severity}
_ISSUE_COLUMNS = ["capture", "ts", "connection", "client", "broker", "severity", "code", "message"]
_ISSUE_COLUMNS += ["offset", "where", "roles_known", "seq"]
_END_COLUMNS = ["capture", "connection", "client", "broker", "roles_known", "first_ts", "last_ts", "seq"]


# the bytes of exchange states read at a time: a batch's states are decoded by pyarrow, copied to
# Python strings, then parsed one by one. A batch of a fixed number of rows holds however big the
# states are (256 states of 33 KB, a request's 16 KB string each, are 8 MB: that batch and the
# next, and the allocations pyarrow's allocator keeps, cost check --parquet 50+ MB)
STATE_BYTES = 1 << 20
_NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"  # Spark's directory name for a null partition value


class NotTables(Exception):
    """The directory holds no tables ``check --parquet`` can evaluate rules on: why, and what to
    do (one line)."""


class Known:
    """What the filters, the profiler and the insights read of the run's knowledge: the client
    software, as the run knew it when each exchange was emitted (set before each exchange is
    fed), and the topic names of topic ids, learnt again from the exchanges in the run's order
    (:meth:`learn`; a Fetch names topics by id since v13)."""

    def __init__(self) -> None:
        self.clients: dict[str, tuple] = {}
        self._learning = Knowledge()
        self.topic_ids: dict[str, str] = self._learning.topic_ids

    def learn(self, ex: Exchange) -> None:
        topics = ex.topics
        self._learning.learn(ex)
        ex.topics = topics  # (as stored: what the run said of this exchange)


class _Table:
    """One table of the output directory: its Parquet files (Spark's ``part-*``, not its
    ``.crc``/``_SUCCESS`` files) with the Hive partition values of their directories
    (``capture_set=NAME/``, ``date=.../hour=.../``), read column by column with
    ``pyarrow.parquet``."""

    def __init__(self, base: str, name: str) -> None:
        self.path = os.path.join(base, name)
        if not os.path.isdir(self.path):
            raise NotTables(f"{base}: no {name}/ table (not an output directory of `kafka-analyzer spark`)")
        self.files: list[tuple[str, dict[str, str | None]]] = []
        for root, dirs, names in os.walk(self.path):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
            rel = os.path.relpath(root, self.path)
            parts: dict[str, str | None] = {}
            for seg in () if rel == "." else rel.split(os.sep):
                key, eq, value = seg.partition("=")
                if eq:
                    parts[key] = None if value == _NULL_PARTITION else unquote(value)
            for n in sorted(names):
                if not n.startswith((".", "_")):
                    self.files.append((os.path.join(root, n), parts))

    def of_set(self, capture_set: str | None) -> list[tuple[str, dict[str, str | None]]]:
        if capture_set is None:
            return self.files
        return [(f, parts) for f, parts in self.files if parts.get("capture_set") == capture_set]

    def record_batches(
        self, columns: list[str], files: list[tuple[str, dict]], batch_size: int = 65536, batch_bytes: int = 0
    ):
        """``(file, rows, partition values)`` of each record batch of ``files`` (of :meth:`of_set`),
        ``rows`` a dict of column lists (partition columns are not in them). With ``batch_bytes``,
        a file's batches hold fewer rows, so that they hold about that many bytes (uncompressed, as
        the file's metadata says of its widest row group)."""
        import pyarrow.parquet as pq

        for f, parts in files:
            try:
                pf = pq.ParquetFile(f)
                names = set(pf.schema_arrow.names)
                missing = [c for c in columns if c not in names and c not in parts]
                if missing:
                    raise NotTables(
                        f"{self.path}: no column {', '.join(missing)}: written by an older "
                        "`kafka-analyzer spark`; write the tables again"
                    )
                cols = [c for c in columns if c in names]
                rows = _rows_within(pf.metadata, cols, batch_bytes) if batch_bytes else batch_size
                # (in this thread: pyarrow's threads each keep their allocator's heap, ~10 MB more)
                batches = pf.iter_batches(batch_size=min(batch_size, rows), columns=cols, use_threads=False)
                for b in batches:
                    yield f, {c: b.column(c).to_pylist() for c in cols}, parts
            except NotTables:
                raise
            except Exception as exc:  # pyarrow's ArrowInvalid, OSError...: a damaged table
                raise NotTables(f"{self.path}: not readable as Parquet: {_first_line(exc)}") from None

    def rows(self, columns: list[str], capture_set: str | None = None, keep=None, found=None) -> list[dict]:
        """The rows (dicts of ``columns``, partition columns included) that ``keep(row)`` takes;
        the files they were in are added to the set ``found``, if given."""
        out = []
        for f, cols, parts in self.record_batches(columns, self.of_set(capture_set)):
            n = len(next(iter(cols.values()))) if cols else 0
            for i in range(n):
                r = {c: cols[c][i] if c in cols else parts.get(c) for c in columns}
                if keep is None or keep(r):
                    out.append(r)
                    if found is not None:
                        found.add(f)
        return out


def _rows_within(meta, columns: list[str], nbytes: int) -> int:
    """The most rows of ``columns`` that hold about ``nbytes`` (uncompressed) in every row group
    of a Parquet file (its ``FileMetaData``); at least 1."""
    rows = 1 << 30
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        wanted = set(columns)
        width = sum(
            rg.column(i).total_uncompressed_size
            for i in range(rg.num_columns)
            if rg.column(i).path_in_schema.split(".")[0] in wanted
        )
        if rg.num_rows and width:
            rows = min(rows, max(1, nbytes * rg.num_rows // width))
    return rows


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _local(uri: str) -> str:
    """A local file's URI as the command line names it (file:/a/b.pcap -> /a/b.pcap)."""
    if uri.startswith("file://"):
        return uri[len("file://") :]
    if uri.startswith("file:"):
        return uri[len("file:") :]
    return uri


def _endpoint(text: str | None) -> Endpoint:
    host, _, port = (text or ":0").rpartition(":")
    return Endpoint(host.removeprefix("[").removesuffix("]"), int(port or 0))


def _issue_event(r: dict):
    issue = Issue(_SEVERITY[r["severity"]], r["code"], r["message"], r["offset"], r["where"])
    if r["connection"] is None:
        return CaptureIssue(issue, r["ts"])
    conn = ConnInfo(
        r["connection"],
        _endpoint(r["client"]),
        _endpoint(r["broker"]),
        0.0,
        False,
        0 if r["roles_known"] else None,
    )
    return ConnIssue(conn, -1, issue, r["ts"])


def _end_event(r: dict) -> ConnectionEnd:
    """A connection's end as the clients read it (its endpoints, roles and times)."""
    known = 0 if r["roles_known"] else None
    return ConnectionEnd(
        ConnInfo(
            r["connection"],
            _endpoint(r["client"]),
            _endpoint(r["broker"]),
            r["first_ts"],
            False,
            known,
            r["last_ts"],
        )
    )


class Tables:
    """The pieces of a capture set (or of every set) in an output directory of ``spark``."""

    def __init__(self, base: str, capture_set: str | None = None) -> None:
        self.base = base
        self.capture_set = capture_set
        self._exchanges = _Table(base, "exchanges")
        self._issues = _Table(base, "issues")
        self._ends = _Table(base, "connections")
        cols = ["capture", "packets", "exchanges", "first_ts", "last_ts", "files"]
        cols += ["inconclusive", "exit_code", "records_bodies", "where_filter", "capture_set"]
        caps = _Table(base, "captures").rows(cols, capture_set)
        if not caps:
            which = f"capture set {capture_set!r}" if capture_set is not None else "capture"
            raise NotTables(f"{base}: no {which} in the tables")
        # in the order check takes the chains of its captures (analyzer.capture.sets.plan): by
        # their first packet's time, then path; the pieces without packets last
        self.pieces = sorted(
            caps,
            key=lambda c: (
                c["first_ts"] is None,
                c["first_ts"] or 0.0,
                [_local(f) for f in c["files"] or (c["capture"],)],
            ),
        )
        for c in self.pieces:
            if c["where_filter"]:
                raise NotTables(
                    f"{base}: the tables hold only the exchanges matching `spark -Y {c['where_filter']}`: "
                    "rules need every exchange; write the tables without -Y"
                )
            if c["exit_code"] is None:
                raise NotTables(
                    f"{base}: {c['capture']} has no check state (written by an older `kafka-analyzer "
                    "spark`): write the tables again"
                )

    def records_bodies(self) -> bool:
        return all(c["records_bodies"] for c in self.pieces)

    @staticmethod
    def name(piece: dict) -> str:
        """The piece as ``check`` names a capture: its files joined with `` + ``."""
        return " + ".join(_local(f) for f in piece["files"] or (piece["capture"],))

    def replay(self, piece: dict):
        """The piece's exchanges, connection/capture issues and connection ends, in the order one run emitted
        them; each exchange with the software the run knew of its client id then."""
        cset = piece["capture_set"]
        # (the same files written into two capture sets are two pieces)
        names = set(piece["files"] or ()) | {piece["capture"]}

        def mine(r: dict) -> bool:
            return r["capture"] in names and r["capture_set"] == cset

        issues = self._issues.rows([*_ISSUE_COLUMNS, "capture_set"], cset, mine)
        ends = self._ends.rows([*_END_COLUMNS, "capture_set"], cset, mine)
        if any(r["seq"] is None for r in ends):
            raise NotTables(
                f"{self.base}: {piece['capture']}: connections without their place among the events "
                "(written by an older `kafka-analyzer spark`): write the tables again"
            )
        # first the exchanges' places (small), then their states a batch at a time
        files: set[str] = set()  # those holding the piece's exchanges: the only ones read again
        seqs = [r["seq"] for r in self._exchanges.rows(["capture", "capture_set", "seq"], cset, mine, files)]
        if len(seqs) != (piece["exchanges"] or 0):
            raise NotTables(
                f"{self.base}: {piece['capture']}: {len(seqs)} exchange rows for "
                f"{piece['exchanges']} exchanges: the tables are incomplete"
            )
        if any(q is None for q in seqs):
            raise NotTables(
                f"{self.base}: {piece['capture']}: exchanges without their place among the events "
                "(written by an older `kafka-analyzer spark`): write the tables again"
            )
        merged: list[tuple[int, int, dict | None]] = [(q, 0, None) for q in seqs]
        merged += [(r["seq"] or 0, 1, r) for r in issues] + [(r["seq"], 2, r) for r in ends]
        del seqs, issues, ends
        merged.sort(key=lambda x: (x[0], x[1]))
        states = self._states(piece, names, [(f, p) for f, p in self._exchanges.of_set(cset) if f in files])
        waiting: list = []  # (seq, arrival, state) read before their turn (tables not in seq order)
        arrived = 0
        for seq, kind, r in merged:
            if r is not None:
                yield (_issue_event(r) if kind == 1 else _end_event(r)), None
                continue
            while not waiting or waiting[0][0] != seq:
                got = next(states, None)
                if got is None:
                    raise NotTables(
                        f"{self.base}: {piece['capture']}: the exchanges table changed while read"
                    )
                heappush(waiting, (got[0], arrived, got[1]))
                arrived += 1
            state = heappop(waiting)[2]
            try:
                yield exchange_from_state(orjson.loads(state))
            except (ValueError, KeyError, TypeError) as exc:
                raise NotTables(
                    f"{self.base}: {piece['capture']}: a damaged exchange state ({_first_line(exc)})"
                ) from None

    def _states(self, piece: dict, names: set, files: list[tuple[str, dict]]):
        """``(seq, state)`` of the piece's exchanges in ``files``, in the tables' order."""
        for _f, cols, _parts in self._exchanges.record_batches(
            ["capture", "seq", "state"], files, batch_bytes=STATE_BYTES
        ):
            for capture, seq, state in zip(cols["capture"], cols["seq"], cols["state"], strict=True):
                if capture in names:
                    if state is None:
                        raise NotTables(
                            f"{self.base}: {piece['capture']}: exchanges without check state (written by an "
                            "older `kafka-analyzer spark`): write the tables again"
                        )
                    yield seq, state
