"""Burrow's consumer lag status, evaluated over the commits and end offsets a capture shows.

Burrow (LinkedIn; Debian's ``burrow`` 1.2.1, whose rules these are) keeps per (group, topic,
partition) a window of the last ``intervals`` commits, each with its offset, time and lag (the
partition's end offset at the time minus the offset), and a window of the partition's end offsets.
A partition's status, with ``current lag`` = the newest end offset minus the newest commit:

1. current lag 0: OK;
2. STOP: the time since the last commit is longer than the window's span (last commit minus
   first) and no end offset seen since the last commit was at or below it (the partition moved
   on past the consumer: Burrow reads its recent broker offsets, sampled every offset-refresh;
   a capture has the ones its answers gave after the commit);
3. OK when the lag was 0 at any commit of the window; else, in this order:
4. REWIND: a commit's offset is lower than the one before;
5. STALL: every commit has the same offset (and there is lag);
6. WARN: the lag never decreases from one commit to the next;
7. otherwise OK.

A window with fewer commits than ``intervals`` is incomplete (complete = commits / intervals);
below ``minimum_complete`` its status is OK whatever the rules say. Commits closer than
``min_distance`` seconds to the last one replace it (keeping its time), so a fast auto-commit does
not flush the window. A group's status is its worst partition's, STOP, STALL and REWIND counting
as ERR; its completeness is the share of complete partitions.

Times are capture times in seconds (Burrow's are milliseconds and its ``now`` the wall clock:
here ``now`` is the capture's last time, so a capture can show STOP).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from enum import IntEnum

from analyzer.plain import field, record


class Status(IntEnum):
    """Burrow's status constants, in its order of severity (its API's strings)."""

    NOTFOUND = 0
    OK = 1
    WARN = 2
    ERR = 3
    STOP = 4
    STALL = 5
    REWIND = 6

    def __str__(self) -> str:
        return self.name


@record(frozen=True)
class Params:
    """Burrow's settings: ``intervals`` (storage), ``min_distance`` (storage, seconds),
    ``minimum_complete`` (evaluator); Burrow's defaults."""

    intervals: int = 10
    min_distance: float = 0.0
    minimum_complete: float = 0.0


DEFAULT_PARAMS = Params()


@record(frozen=True)
class Commit:
    """One commit in a partition's window: offset, capture time, lag at the time."""

    offset: int
    ts: float
    lag: int


@record
class Window:
    """One (group, topic, partition)'s windows: the last ``intervals`` commits and end offsets."""

    params: Params = DEFAULT_PARAMS
    commits: deque[Commit] = field(default_factory=deque)
    ends: deque[tuple[float, int]] = field(default_factory=deque)  # (time, end offset)

    def end_offset(self, offset: int, ts: float) -> None:
        """The partition's end offset seen at ``ts`` (a Fetch answer's high watermark, ListOffsets...)."""
        self.ends.append((ts, offset))
        if len(self.ends) > self.params.intervals:
            self.ends.popleft()

    def commit(self, offset: int, ts: float) -> Commit:
        """A commit answered without error, its lag against the newest end offset known (0 when
        the commit is ahead of it, as Burrow has it)."""
        end = self.ends[-1][1] if self.ends else offset
        lag = max(0, end - offset)
        c = self.commits
        if c and ts - c[-1].ts < self.params.min_distance:
            c[-1] = Commit(offset, c[-1].ts, lag)  # replaces the last, keeping its time
            return c[-1]
        c.append(Commit(offset, ts, lag))
        if len(c) > self.params.intervals:
            c.popleft()
        return c[-1]

    @property
    def current_lag(self) -> int | None:
        """The newest end offset minus the newest commit (0 when ahead); None without both."""
        if not self.commits or not self.ends:
            return None
        return max(0, self.ends[-1][1] - self.commits[-1].offset)

    @property
    def complete(self) -> float:
        return min(1.0, len(self.commits) / self.params.intervals)

    def status(self, now: float) -> Status:
        lag = self.current_lag
        if lag is None:
            return Status.OK
        if self.complete < self.params.minimum_complete:
            return Status.OK
        return partition_status(list(self.commits), list(self.ends), lag, now)


def partition_status(
    commits: Sequence[Commit], ends: Sequence[tuple[float, int]], current_lag: int, now: float
) -> Status:
    """The status of one partition's window (the rules of the module's docstring); ``ends`` are
    (time, end offset)."""
    if not commits or current_lag <= 0:
        return Status.OK
    first, last = commits[0], commits[-1]
    stopped = now - last.ts > last.ts - first.ts
    recently_caught_up = any(end <= last.offset for ts, end in ends if ts > last.ts)
    if stopped and not recently_caught_up:
        return Status.STOP
    if any(c.lag == 0 for c in commits):
        return Status.OK
    pairs = list(zip(commits, commits[1:], strict=False))
    if any(b.offset < a.offset for a, b in pairs):
        return Status.REWIND
    if all(b.offset == a.offset for a, b in pairs):
        return Status.STALL
    if all(b.lag >= a.lag for a, b in pairs):
        return Status.WARN
    return Status.OK


def group_status(partitions: Iterable[tuple[Status, float]]) -> tuple[Status, float]:
    """A group's status and completeness from its partitions' (status, completeness): the worst
    status, STOP, STALL and REWIND counted as ERR; the share of complete partitions."""
    worst = Status.OK
    n = complete = 0
    for status, done in partitions:
        n += 1
        complete += done >= 1.0
        worst = max(worst, min(status, Status.ERR))
    if n == 0:
        return Status.NOTFOUND, 0.0
    return worst, complete / n
