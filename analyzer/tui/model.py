"""The TUI's index of one analysis: the exchanges in arrival order (:class:`Index`) with the
connection and issue summaries and the consumer-group timeline. No Textual here (unit-tested
alone).

Indexing keeps per exchange only what the list, the filter and the sort need (times, endpoints,
API, version, correlation id, topics, sizes, latency, flags, issue codes) and where its frames are
in a temporary file (:class:`~analyzer.tui.spool.Spool`, the frames' metadata in front of their
payloads), packed in one record of about 100 bytes (:class:`~analyzer.tui.rows.RowStore`): the
capture's bytes are not kept in memory, so memory grows with exchanges, not bytes, and beyond
:data:`~analyzer.tui.rows.SPILL_ROWS` exchanges the records spill to a temporary file too. The
decoded trees (with record bodies) are made again from the spooled payloads when an exchange is
shown (:meth:`Index.exchange`).

The rest of the TUI's data lives beside it: :mod:`analyzer.tui.spool` (temporary files),
:mod:`analyzer.tui.rows` (rows and columns), :mod:`analyzer.tui.listview` (the list's order),
:mod:`analyzer.tui.textsearch` (its text search), :mod:`analyzer.tui.groups` (consumer groups),
:mod:`analyzer.tui.charts` (the pictures' numbers).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from analyzer.dissect.constants import ApiKey
from analyzer.dissect.message import Options, decode_request, decode_response
from analyzer.events import CaptureIssue, ConnectionEnd, ConnIssue, Event
from analyzer.model import ConnInfo, Exchange, Issue, Severity
from analyzer.plain import replace
from analyzer.session.insights import Insights
from analyzer.session.internal import annotate
from analyzer.tui.groups import GROUP_APIS, GroupTimeline
from analyzer.tui.rows import Indexes, Row, RowStore
from analyzer.tui.spool import Spool

CLIENTS_KEPT = 10_000  # (a bounded index) clients and edges of each kind followed at most


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
        topic_ids: dict[str, str] | None = None,
    ) -> None:
        """``topic_ids``: the analysis' topic names by id (its knowledge, as it learns them)."""
        self.opts = opts  # how exchanges are decoded when shown (record bodies on)
        self.spool = spool if spool is not None else Spool(directory)
        # the rows, packed; beyond ``spill_after`` (default SPILL_ROWS) in a temporary file
        self.rows = RowStore(self.spool, spill_after, directory)
        self.limit = limit  # rows kept at most (a live session); later exchanges are only counted
        self.dropped = 0  # exchanges not kept because of the limit
        self.conns: dict[int, ConnSummary] = {}
        self.issue_groups: dict[str, IssueGroup] = {}
        self.groups = GroupTimeline()
        # the consumer groups' generations, rebalances, lag and status, the producers', the
        # clients' inventory and topology (every exchange, kept or not)
        self.insights = Insights(topic_ids)
        if limit is not None:  # (live: the rows bounded) the clients and edges followed, bounded too
            self.insights.clients.follow(CLIENTS_KEPT)
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
                kept = self.limit is None or len(rows) < self.limit
                self.insights.event(ev, len(rows) if kept else None)  # (marked with its row)
                if not kept:
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
                self.insights.event(ev)  # (the clients' connection churn)
        if out:
            self.spool.flush()
            rows.flush()
        return out

    def finish(self) -> None:
        """The source ended: the insights close what is still open (a synced rebalance)."""
        self.insights.done()

    def _conn(self, info: ConnInfo) -> ConnSummary:
        s = self.conns.get(info.id)
        if s is None:
            s = self.conns[info.id] = ConnSummary(info)
        return s

    def _count(self, row: Row, ex: Exchange, all_issues: list[Issue]) -> None:
        if row.api_key in GROUP_APIS:
            self.groups.add(row, ex)
        elif row.api_key == ApiKey.OFFSET_COMMIT:
            self.groups.commit(row, ex)
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
        if opts.records_bodies:  # internal topics' records: their coordinator fields in the tree
            annotate(req)
            annotate(resp)
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
            cdir = info.client_direction if info.client_direction is not None else 0
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
