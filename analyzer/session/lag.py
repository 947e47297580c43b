"""Consumer lag from the wire: commits against end offsets, lag in records and in seconds, and
Burrow's status per partition and per group (:mod:`analyzer.session.burrow`).

A consumer (:meth:`LagTracker.event` per event, in capture order):

* **end offsets** per (topic, partition), the newest seen: a Fetch answer's high watermark (any
  fetcher: a consumer, a follower), a ListOffsets answer for the latest offset (timestamp -1), a
  Produce answer's base offset plus the records its request sent there;
* **append times** of offsets: a Produce answer's LogAppendTime, else its batch's max timestamp,
  else the answer's capture time; a fetched batch's max timestamp; kept for the last
  :data:`APPENDS_KEPT` batches of each partition;
* **commits**: OffsetCommit and TxnOffsetCommit partitions answered without error, and the
  OffsetCommit records of ``__consumer_offsets`` a Fetch answer carries (a consumer such as
  Burrow, or a follower, reading the topic; named by name: :func:`~analyzer.session.internal.\
  fetched_commits`), at their commit timestamp; a commit seen both ways (same group, partition
  and offset, times within :data:`SAME_COMMIT_S`) counts once. Each gives a
  ``lag`` row: the committed offset (the next record the group will read), the end offset known
  then, their difference, and the lag in seconds: the commit's time minus the append time of the
  first uncommitted record (0 with no lag; None when its append time was not seen); and the
  consumer's position between commits: its last Fetch offset of the partition and the largest
  lag of its position (high watermark minus fetch offset) since its previous commit
  (:meth:`~analyzer.session.consumption.ConsumptionTracker.take`);
* **Burrow's windows** per (group, topic, partition): each commit with its lag, the end offsets
  known at the commits and at the time of judging (Burrow samples them every offset-refresh
  instead); :meth:`status` judges them at a time (the capture's end).

**Coverage**: a partition whose end offset no answer in the capture gave has commits but no lag
(:meth:`coverage` lists them); a lag in seconds needs the record's batch seen produced or fetched.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Callable

from analyzer.dissect.constants import ApiKey, ErrorCode
from analyzer.model import Exchange, Message
from analyzer.plain import record
from analyzer.session.burrow import DEFAULT_PARAMS, Params, Status, Window, group_status
from analyzer.session.consumption import ConsumptionTracker, Fetcher, fetcher_of
from analyzer.session.entities import topic_refs
from analyzer.session.internal import fetched_commits
from analyzer.session.walks import fetched, produced, topic_of

APPENDS_KEPT = 10_000  # batches per partition whose append times are kept (the oldest go first)
PLAUSIBLE_S = 86_400.0  # an append time further than this from the capture's clock is not one
SAME_COMMIT_S = 1.0  # an OffsetCommit answer and its __consumer_offsets record: the same commit
RECENT_KEPT = 8  # commits of a partition kept per source to tell the same commit seen twice
_COMMITS = frozenset((ApiKey.OFFSET_COMMIT, ApiKey.TXN_OFFSET_COMMIT))
_KEYS = frozenset((ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS)) | _COMMITS

TP = tuple[str, int]
FETCH, PRODUCE, LIST_OFFSETS, COMMIT = range(4)  # the kinds of facts (LagTracker.facts)


@record(frozen=True)
class LagRow:
    """A commit's lag (the export's ``lag`` object)."""

    group: str
    topic: str
    partition: int
    time: float
    committed_offset: int
    end_offset: int | None
    lag: int | None
    lag_seconds: float | None
    position: int | None = None  # the committer's last fetch offset of it before the commit
    position_lag: int | None = None  # the largest high watermark - fetch offset since its last commit

    def row(self) -> dict:
        return {
            "group": self.group,
            "topic": self.topic,
            "partition": self.partition,
            "time": self.time,
            "committed_offset": self.committed_offset,
            "end_offset": self.end_offset,
            "lag": self.lag,
            "lag_seconds": None if self.lag_seconds is None else round(self.lag_seconds, 6),
            "position": self.position,
            "position_lag": self.position_lag,
        }


class _Appends:
    """Append times of a partition's batches, by base offset (ascending)."""

    __slots__ = ("bases", "lasts", "times")

    def __init__(self) -> None:
        self.bases: list[int] = []
        self.lasts: list[int] = []
        self.times: list[float] = []

    def add(self, base: int, last: int, t: float) -> None:
        if self.lasts and base <= self.lasts[-1]:
            return  # seen already (fetched again, or produced and then fetched)
        self.bases.append(base)
        self.lasts.append(last)
        self.times.append(t)
        if len(self.bases) > 2 * APPENDS_KEPT:
            for xs in (self.bases, self.lasts, self.times):
                del xs[:APPENDS_KEPT]

    def time_of(self, offset: int) -> float | None:
        i = bisect_right(self.bases, offset) - 1
        if i < 0 or offset > self.lasts[i]:
            return None
        return self.times[i]


class LagTracker:
    """The consumer: end offsets, append times, commits with their lag, Burrow's windows.

    ``keep`` (a run that lasts, ``live``): each group keeps its last ``keep`` lag rows (at least;
    at most twice that), counting the ones let go (:attr:`dropped`); :meth:`news` gives the rows
    since its last call and :meth:`status_changes` the groups whose status changed."""

    def __init__(
        self,
        topic_ids: dict[str, str] | None = None,
        params: Params = DEFAULT_PARAMS,
        positions: ConsumptionTracker | None = None,
        keep: int | None = None,
    ) -> None:
        self.topic_ids = topic_ids
        self.params = params
        self.positions = positions  # the consumers' positions (their fetches) to give each commit
        self.ends: dict[TP, int] = {}
        self.appends: dict[TP, _Appends] = {}
        self.windows: dict[str, dict[TP, Window]] = {}  # group -> partition -> window
        self.last: dict[tuple[str, str, int], LagRow] = {}  # the last commit of each
        self.rows: list[LagRow] = []
        self.last_ts = 0.0
        # the last commits of each (group, topic, partition) per source: (offset, time)
        self.recent: tuple[dict, dict] = ({}, {})  # (OffsetCommit answers, __consumer_offsets records)
        self.keep = keep
        self.dropped: dict[str, int] = {}  # group -> its lag rows let go (keep)
        self.kept: dict[str, int] = {}  # group -> its rows in self.rows (with keep)
        self.untold = 0  # the last rows, not given by news() yet
        self.committed: set[str] = set()  # groups with commits since the last status_changes()
        self.told: dict[str, tuple] = {}  # group -> the statuses status_changes() last gave
        self.on_group: Callable[[str, float], None] | None = None  # told of each commit's group, time

    # -- feeding ------------------------------------------------------------------------------------
    def event(self, ev) -> None:
        f = self.facts(ev)
        if f is not None:
            self.apply(f)

    def facts(self, ev) -> tuple | None:
        """What an exchange tells the lag, as plain values (topics by name, or by id when the
        message names them so: resolved by :meth:`apply` with the names known then); None for
        an exchange that tells nothing. ``export -j``'s processes send these to the merge, which
        applies them in capture order as one run does."""
        if type(ev) is not Exchange:
            return None
        key = ev.api_key
        if key not in _KEYS or ev.response is None or ev.response.body is None:
            return None
        t = ev.response.frame.ts_first
        if key == ApiKey.FETCH:
            return (FETCH, t, self._fetch(ev), fetched_commits(ev.response))
        if key == ApiKey.PRODUCE:
            return (PRODUCE, t, self._produce(ev, t))
        if key == ApiKey.LIST_OFFSETS:
            return (LIST_OFFSETS, t, self._list_offsets(ev.request, ev.response))
        if ev.request is None or ev.request.body is None:
            return None
        gid = ev.request.body.get("group_id")
        if not isinstance(gid, str):
            return None
        return (COMMIT, t, gid, self._commit(ev.request, ev.response), fetcher_of(ev))

    def apply(self, facts: tuple) -> None:
        kind, t = facts[0], facts[1]
        self.last_ts = max(self.last_ts, t)
        ids = self.topic_ids
        if kind == FETCH:
            for ref, hw, batches in facts[2]:
                tp = topic_of(ref, ids)
                self._end(tp, hw)
                if batches:
                    appends = self.appends.setdefault(tp, _Appends())
                    for base, last, when in batches:
                        appends.add(base, last, when)
            for gid, topic, p, offset, when in facts[3] if len(facts) > 3 else ():
                self._committed(gid, when, [((topic, p), offset)], None, 1)
        elif kind == PRODUCE:
            for ref, base, n, when in facts[2]:
                tp = topic_of(ref, ids)
                self._end(tp, base + n)
                self.appends.setdefault(tp, _Appends()).add(base, base + n - 1, when)
        elif kind == LIST_OFFSETS:
            for ref, offset in facts[2]:
                self._end(topic_of(ref, ids), offset)
        else:
            self._committed(
                facts[2],
                t,
                [(topic_of(ref, ids), offset) for ref, offset in facts[3]],
                facts[4] if len(facts) > 4 else None,
                0,
            )

    def _end(self, tp: TP, offset) -> None:
        if isinstance(offset, int) and offset >= 0 and offset >= self.ends.get(tp, -1):
            self.ends[tp] = offset

    @staticmethod
    def _partitions(msg: Message | None):
        """((topic name or None, topic id or None, partition), partition struct) of a message."""
        for ref in topic_refs(msg):
            for p, f in ref.partitions:
                if p is not None and f is not None:
                    yield (ref.name, ref.topic_id, p), f

    @staticmethod
    def _fetch(ev: Exchange) -> list:
        out = []
        for fp in fetched(ev).answered:
            if fp.error != ErrorCode.NONE:
                continue
            batches = []
            for b in fp.batches:
                base, last, mts = b.get("base_offset"), b.get("last_offset"), b.get("max_timestamp")
                if isinstance(base, int) and isinstance(last, int) and isinstance(mts, int) and mts > 0:
                    batches.append((base, last, mts / 1000))
            out.append((fp.ref, fp.high_watermark, batches))
        return out

    @staticmethod
    def _produce(ev: Exchange, t: float) -> list:
        out = []
        for pp in produced(ev):
            n = mts = 0
            for b in pp.batches:
                n += b.get("record_count") or 0
                mts = max(mts, b.get("max_timestamp") or 0)
            base = pp.base_offset
            if pp.error != ErrorCode.NONE or base is None or base < 0 or not n:
                continue
            lat = pp.log_append_time
            when = t
            if lat is not None and lat >= 0 and abs(lat / 1000 - t) < PLAUSIBLE_S:
                when = lat / 1000  # LogAppendTime (the librdkafka mock answers a fixed 1234: not taken)
            elif mts > 0:
                when = mts / 1000
            out.append((pp.ref, base, n, when))
        return out

    def _list_offsets(self, req: Message | None, resp: Message) -> list:
        latest = {ref for ref, f in self._partitions(req) if f.get("timestamp") == -1}
        return [
            (ref, f.get("offset"))
            for ref, f in self._partitions(resp)
            if ref in latest and f.get("error_code") == ErrorCode.NONE
        ]

    def _commit(self, req: Message, resp: Message) -> list:
        ok = {ref for ref, f in self._partitions(resp) if f.get("error_code") == ErrorCode.NONE}
        out = []
        for ref, f in self._partitions(req):
            offset = f.get("committed_offset")
            if ref in ok and isinstance(offset, int) and offset >= 0:
                out.append((ref, offset))
        return out

    def _committed(
        self, gid: str, t: float, offsets: list[tuple[TP, int]], committer: Fetcher | None, source: int
    ) -> None:
        """``source``: 0 an OffsetCommit/TxnOffsetCommit answer, 1 a ``__consumer_offsets`` record."""
        if self.on_group is not None:
            self.on_group(gid, t)
        windows = self.windows.setdefault(gid, {})
        positions = self.positions
        for tp, offset in offsets:
            if self._seen(gid, tp, offset, t, source):
                continue
            end = self.ends.get(tp)
            lag = None if end is None else max(0, end - offset)
            pos, pos_lag = (
                (None, None) if positions is None or committer is None else positions.take(committer, tp)
            )
            row = LagRow(
                gid, tp[0], tp[1], t, offset, end, lag, self._seconds(tp, offset, lag, t), pos, pos_lag
            )
            self.rows.append(row)
            self.untold += 1
            if self.keep is not None:
                self._bound(gid)
            self.last[(gid, *tp)] = row
            w = windows.get(tp)
            if w is None:
                w = windows[tp] = Window(self.params)
            if end is not None:
                w.end_offset(end, t)
                w.commit(offset, t)
        self.committed.add(gid)

    def _bound(self, gid: str) -> None:
        """Keep the group's last ``keep`` rows when it has twice that (amortised), counted."""
        n = self.kept[gid] = self.kept.get(gid, 0) + 1
        if self.keep is None or n <= 2 * max(1, self.keep):
            return
        drop = n - self.keep
        self.kept[gid] = self.keep
        self.dropped[gid] = self.dropped.get(gid, 0) + drop
        told = len(self.rows) - self.untold  # rows before this index were given by news()
        rows: list[LagRow] = []
        for i, r in enumerate(self.rows):
            if drop and r.group == gid:
                drop -= 1
                self.untold -= i >= told
                continue
            rows.append(r)
        self.rows = rows

    def news(self) -> list[LagRow]:
        """The lag rows (commits) since the last call."""
        new = self.rows[len(self.rows) - self.untold :] if self.untold else []
        self.untold = 0
        return new

    def status_changes(self, now: float, every: bool = False) -> list[dict]:
        """The ``consumer_status`` at ``now`` of the groups whose status, or a partition's, changed
        since the last call; judged: the groups that committed since then, or ``every`` one."""
        judged = sorted(self.windows) if every else sorted(self.committed)
        self.committed.clear()
        out = []
        for gid in judged:
            if not self.windows[gid]:
                continue  # commits of no partition answered without error: nothing to judge
            st = self._status(gid, self.windows[gid], now)
            key = (st["status"], tuple((p["topic"], p["partition"], p["status"]) for p in st["partitions"]))
            if self.told.get(gid) != key:
                self.told[gid] = key
                out.append(st)
        return out

    def _seen(self, gid: str, tp: TP, offset: int, t: float, source: int) -> bool:
        """Whether the other source gave this commit already; this one is remembered."""
        key = (gid, *tp)
        other = self.recent[1 - source].get(key, ())
        if any(o == offset and abs(x - t) <= SAME_COMMIT_S for o, x in other):
            return True
        mine = self.recent[source].setdefault(key, [])
        mine.append((offset, t))
        if len(mine) > RECENT_KEPT:
            del mine[0]
        return False

    def _seconds(self, tp: TP, offset: int, lag: int | None, t: float) -> float | None:
        if lag is None:
            return None
        if lag == 0:
            return 0.0
        a = self.appends.get(tp)
        when = a.time_of(offset) if a is not None else None
        return None if when is None else max(0.0, t - when)

    # -- what it found ---------------------------------------------------------------------------------
    def status(self, now: float | None = None) -> list[dict]:
        """Each group's ``consumer_status`` at ``now`` (default: the last answer seen): Burrow's
        status and completeness, and per partition its status, lag and lag in seconds then."""
        at = self.last_ts if now is None else now
        return [self._status(gid, windows, at) for gid, windows in sorted(self.windows.items())]

    def _status(self, gid: str, windows: dict[TP, Window], now: float) -> dict:
        """A group's ``consumer_status`` at ``now`` (its windows left as they are: judging
        again, or at another time, judges the same commits and end offsets)."""
        parts = []
        judged = []
        for (topic, p), w in sorted(windows.items()):
            end = self.ends.get((topic, p))
            last = self.last[(gid, topic, p)]
            if end is not None and w.commits:
                w = Window(w.params, w.commits, deque(w.ends))
                w.end_offset(end, now)  # the newest end offset, as Burrow's evaluation reads it
            st = w.status(now) if w.commits else Status.OK
            lag = None if end is None else max(0, end - last.committed_offset)
            parts.append(
                {
                    "topic": topic,
                    "partition": p,
                    "status": str(st),
                    "lag": lag,
                    "lag_seconds": _round(self._seconds((topic, p), last.committed_offset, lag, now)),
                }
            )
            if w.commits:
                judged.append((st, w.complete))
        status, complete = group_status(judged)
        return {
            "group": gid,
            "time": now,
            "status": str(status),
            "complete": round(complete, 3),
            "partitions": parts,
            "coverage": self.coverage(gid),
        }

    def coverage(self, group: str) -> str:
        """What the capture could not see of a group's lag: partitions committed but with no end
        offset in any answer (their leaders' traffic is outside the capture)."""
        blind = sorted(f"{t}[{p}]" for (t, p) in self.windows.get(group, {}) if (t, p) not in self.ends)
        if not blind:
            return "end offsets seen for every committed partition"
        return f"no end offset seen for {', '.join(blind)} (their leaders' answers are outside the capture)"


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 6)
