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

What cannot be evaluated is said, never passed: tables without the ``state`` column (written by
an older ``spark``), a big file analysed in splits that holds no Kafka exchange (why, only one
run says), tables limited by ``spark -Y``,
and rules that need record bodies over tables written without ``spark --records`` are
:class:`NotTables` errors (exit 2) naming the fix.
"""

from __future__ import annotations

import os

import orjson

from analyzer.events import CaptureIssue, ConnectionEnd, ConnIssue
from analyzer.export.exchange_state import exchange_from_state
from analyzer.model import ConnInfo, Endpoint, Exchange, Issue, Severity
from analyzer.session.knowledge import Knowledge

_SEVERITY = {str(s): s for s in Severity}
_ISSUE_COLUMNS = ["capture", "ts", "connection", "client", "broker", "severity", "code", "message"]
_ISSUE_COLUMNS += ["offset", "where", "roles_known", "seq"]
_END_COLUMNS = ["capture", "connection", "client", "broker", "roles_known", "first_ts", "last_ts", "seq"]


# the exchanges read in one scan of the tables (several pieces at a time, up to this many)
BATCH_EXCHANGES = 50_000


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


def _dataset(base: str, name: str):
    import pyarrow.dataset as ds

    path = os.path.join(base, name)
    if not os.path.isdir(path):
        raise NotTables(f"{base}: no {name}/ table (not an output directory of `kafka-analyzer spark`)")
    try:
        return ds.dataset(path, format="parquet", partitioning="hive", exclude_invalid_files=True)
    except Exception as exc:  # pyarrow's ArrowInvalid, ArrowIOError...: a damaged table
        raise NotTables(f"{path}: not readable as Parquet: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _read(d, columns: list[str], flt) -> list[dict]:
    if not d.files:  # Spark writes no file for an empty table
        return []
    missing = [c for c in columns if c not in d.schema.names]
    if missing:
        raise NotTables(
            f"{d.files[0].rsplit('/', 2)[0]}: no column {', '.join(missing)}: written by an older "
            "`kafka-analyzer spark`; write the tables again"
        )
    try:
        return d.to_table(columns=columns, filter=flt).to_pylist()
    except Exception as exc:
        where = d.files[0].rsplit("/", 2)[0]
        raise NotTables(f"{where}: not readable as Parquet: {_first_line(exc)}") from None


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
        import pyarrow.dataset as ds

        self.base = base
        self._flt = None if capture_set is None else ds.field("capture_set") == capture_set
        self._exchanges = _dataset(base, "exchanges")
        self._issues = _dataset(base, "issues")
        self._ends = _dataset(base, "connections")
        cols = ["capture", "packets", "exchanges", "first_ts", "last_ts", "files"]
        cols += ["inconclusive", "exit_code", "records_bodies", "where_filter", "capture_set"]
        caps = _read(_dataset(base, "captures"), cols, self._flt)
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

        self._rows: dict[int, tuple[list, list, list]] = {}

    def records_bodies(self) -> bool:
        return all(c["records_bodies"] for c in self.pieces)

    @staticmethod
    def name(piece: dict) -> str:
        """The piece as ``check`` names a capture: its files joined with `` + ``."""
        return " + ".join(_local(f) for f in piece["files"] or (piece["capture"],))

    def _load(self, piece: dict) -> None:
        """Read the rows of ``piece`` and of the pieces after it, up to :data:`BATCH_EXCHANGES`
        exchanges (one scan of the tables per batch of pieces, the memory of a batch)."""
        import pyarrow.dataset as ds

        at = next(i for i, p in enumerate(self.pieces) if p is piece)
        batch: list[dict] = []
        total = 0
        for p in self.pieces[at:]:
            if batch and total + (p["exchanges"] or 0) > BATCH_EXCHANGES:
                break
            batch.append(p)
            total += p["exchanges"] or 0
        owner: dict[tuple, int] = {}
        for i, p in enumerate(batch):
            for n in list(p["files"] or ()) + [p["capture"]]:
                # (the same files written into two capture sets are two pieces)
                owner[(p["capture_set"], n)] = at + i
        flt = ds.field("capture").isin(sorted({n for _s, n in owner})) & ds.field("capture_set").isin(
            sorted({s for s, _n in owner})
        )
        self._rows = {at + i: ([], [], []) for i in range(len(batch))}
        for kind, rows in enumerate(
            (
                _read(self._exchanges, ["capture", "capture_set", "seq", "state"], flt),
                _read(self._issues, [*_ISSUE_COLUMNS, "capture_set"], flt),
                _read(self._ends, [*_END_COLUMNS, "capture_set"], flt),
            )
        ):
            for r in rows:
                owned = owner.get((r["capture_set"], r["capture"]))
                if owned is not None:
                    self._rows[owned][kind].append(r)

    def replay(self, piece: dict):
        """The piece's exchanges, connection/capture issues and connection ends, in the order one run emitted
        them; each exchange with the software the run knew of its client id then."""
        at = next(i for i, p in enumerate(self.pieces) if p is piece)
        if at not in self._rows:
            self._load(piece)
        rows, issues, ends = self._rows.pop(at)
        if any(r["state"] is None for r in rows):
            raise NotTables(
                f"{self.base}: {piece['capture']}: exchanges without check state (written by an older "
                "`kafka-analyzer spark`): write the tables again"
            )
        if len(rows) != (piece["exchanges"] or 0):
            raise NotTables(
                f"{self.base}: {piece['capture']}: {len(rows)} exchange rows for "
                f"{piece['exchanges']} exchanges: the tables are incomplete"
            )
        if any(r["seq"] is None for r in ends):
            raise NotTables(
                f"{self.base}: {piece['capture']}: connections without their place among the events "
                "(written by an older `kafka-analyzer spark`): write the tables again"
            )
        merged = [(r["seq"], 0, r) for r in rows] + [(r["seq"] or 0, 1, r) for r in issues]
        merged += [(r["seq"], 2, r) for r in ends]
        merged.sort(key=lambda x: (x[0], x[1]))
        for _seq, kind, r in merged:
            if kind == 0:
                try:
                    yield exchange_from_state(orjson.loads(r["state"]))
                except (ValueError, KeyError, TypeError) as exc:
                    raise NotTables(
                        f"{self.base}: {piece['capture']}: a damaged exchange state ({_first_line(exc)})"
                    ) from None
            elif kind == 1:
                yield _issue_event(r), None
            else:
                yield _end_event(r), None
