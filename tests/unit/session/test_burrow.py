"""Burrow's lag rules (analyzer.session.burrow), table-driven: each row a window of commits
(offset, time s, lag), the end offsets seen, the current lag, 'now', and the status Burrow 1.2.1's
evaluator gives it (its rule order: STOP before the zero-lag check, then REWIND, STALL, WARN)."""

import pytest

from analyzer.session.burrow import Commit, Params, Status, Window, group_status, partition_status


def window(*rows):
    return [Commit(o, t, lag) for o, t, lag in rows]


ADVANCING = window((100, 10, 5), (200, 20, 10), (300, 30, 15), (400, 40, 20), (500, 50, 25))

CASES = [
    # (name, commits, end offsets seen (time, offset), current lag, now, status)
    ("no lag now: OK whatever the window", ADVANCING, [(1000, 500)], 0, 1000, Status.OK),
    ("lag growing, committing: WARN", ADVANCING, [(60, 525)], 25, 60, Status.WARN),
    ("quiet for exactly the window's span: not yet STOP", ADVANCING, [(90, 525)], 25, 90, Status.WARN),
    ("quiet for longer than the window's span: STOP", ADVANCING, [(91, 525)], 25, 91, Status.STOP),
    (
        "STOP even though the lag was 0 once (checked first)",
        window((100, 10, 0), (200, 20, 10), (300, 30, 15)),
        [(100, 315)],
        15,
        100,
        Status.STOP,
    ),
    (
        "not STOP while an end offset seen since the last commit shows it caught up (then WARN)",
        window((100, 10, 5), (200, 20, 10), (300, 30, 15)),
        [(40, 300), (100, 315)],
        15,
        100,
        Status.WARN,
    ),
    (
        "lag 0 at one commit: OK (WARN and STALL not reached)",
        window((100, 10, 0), (100, 20, 10), (100, 30, 20)),
        [(35, 120)],
        20,
        35,
        Status.OK,
    ),
    (
        "offset went back: REWIND (before STALL and WARN)",
        window((300, 10, 5), (200, 20, 110), (250, 30, 80)),
        [(35, 330)],
        80,
        35,
        Status.REWIND,
    ),
    (
        "same offset every commit, with lag: STALL",
        window((100, 10, 5), (100, 20, 10), (100, 30, 15)),
        [(35, 115)],
        15,
        35,
        Status.STALL,
    ),
    (
        "same offset, lag not moving: STALL all the same",
        window((100, 10, 7), (100, 20, 7), (100, 30, 7)),
        [(35, 107)],
        7,
        35,
        Status.STALL,
    ),
    (
        "lag decreased somewhere: OK",
        window((100, 10, 50), (200, 20, 40), (300, 30, 45)),
        [(35, 345)],
        45,
        35,
        Status.OK,
    ),
    ("one commit, quiet since: STOP (span 0)", window((100, 10, 5)), [(11, 105)], 5, 11, Status.STOP),
    (
        "an end offset at the last commit's own time is not 'since' it: STOP",
        window((100, 10, 5), (300, 30, 0)),
        [(30, 300), (100, 320)],
        20,
        100,
        Status.STOP,
    ),
]


@pytest.mark.parametrize("name,commits,ends,lag,now,status", CASES, ids=[c[0] for c in CASES])
def test_partition_rules(name, commits, ends, lag, now, status):
    assert partition_status(commits, ends, lag, now) == status


def test_the_window_keeps_intervals_commits_and_their_lag_against_the_end_offset():
    w = Window(Params(intervals=3))
    assert w.current_lag is None and w.status(0) == Status.OK  # nothing known: nothing said
    w.end_offset(50, 0.5)
    assert w.commit(40, 1.0).lag == 10
    w.end_offset(60, 1.5)
    assert w.commit(70, 2.0).lag == 0  # ahead of the end offset seen: 0, as Burrow has it
    for t in (3.0, 4.0, 5.0):
        w.end_offset(100, t)
        w.commit(80, t)
    assert [c.ts for c in w.commits] == [3.0, 4.0, 5.0] and w.complete == 1.0
    assert w.current_lag == 20 and w.status(5.5) == Status.STALL


def test_commits_closer_than_min_distance_replace_the_last_keeping_its_time():
    w = Window(Params(intervals=10, min_distance=5.0))
    w.end_offset(1000, 9.0)
    w.commit(100, 10.0)
    w.commit(150, 12.0)  # 2 s later: replaces the first, at its time
    w.commit(200, 16.0)  # 6 s after the kept time: a new one
    assert [(c.offset, c.ts) for c in w.commits] == [(150, 10.0), (200, 16.0)]
    assert w.complete == 0.2


def test_an_incomplete_window_below_minimum_complete_is_ok():
    w = Window(Params(intervals=10, minimum_complete=0.5))
    w.end_offset(500, 0.0)
    for i in range(4):
        w.commit(100, float(i))
    assert partition_status(list(w.commits), list(w.ends), w.current_lag, 4.0) == Status.STALL
    assert w.status(4.0) == Status.OK  # 4 of 10: not judged
    w.commit(100, 4.0)
    assert w.status(4.5) == Status.STALL


def test_group_status_is_the_worst_partition_with_errors_as_err():
    assert group_status([]) == (Status.NOTFOUND, 0.0)
    assert group_status([(Status.OK, 1.0), (Status.WARN, 1.0)]) == (Status.WARN, 1.0)
    for bad in (Status.STOP, Status.STALL, Status.REWIND, Status.ERR):
        assert group_status([(Status.OK, 1.0), (bad, 0.5)]) == (Status.ERR, 0.5)
    assert str(Status.REWIND) == "REWIND"
