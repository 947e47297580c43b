"""A live worker's backlog is bounded (analyzer.fanout.wait_backlog): past BACKLOG_MAX events
waiting for its sender thread, the worker waits (its ring fills and the kernel counts the drops)
instead of its memory growing while the parent falls behind; it goes on as soon as the sender takes
the backlog, and never waits on a sender that is gone."""

import threading
import time

from analyzer.fanout import BACKLOG_MAX, wait_backlog


def test_under_the_bound_nothing_waits():
    lock = threading.Lock()
    taken = threading.Condition(lock)
    pending, facts = [0] * (BACKLOG_MAX // 2), [0] * (BACKLOG_MAX // 2 - 1)
    t0 = time.monotonic()
    wait_backlog(taken, pending, facts, threading.current_thread())
    assert time.monotonic() - t0 < 0.05


def test_at_the_bound_the_worker_waits_for_the_sender():
    lock = threading.Lock()
    taken = threading.Condition(lock)
    pending, facts = [0] * BACKLOG_MAX, []
    took = []

    def sender() -> None:
        time.sleep(0.4)
        with lock:
            took.append(len(pending))
            pending.clear()
            taken.notify_all()
        time.sleep(0.5)  # still alive: the worker went on because the backlog was taken

    t = threading.Thread(target=sender)
    t.start()
    t0 = time.monotonic()
    wait_backlog(taken, pending, facts, t)
    waited = time.monotonic() - t0
    t.join()
    assert took == [BACKLOG_MAX] and 0.3 < waited < 0.8


def test_a_sender_gone_is_not_waited_for():
    lock = threading.Lock()
    taken = threading.Condition(lock)
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join()
    t0 = time.monotonic()
    wait_backlog(taken, [0] * BACKLOG_MAX, [0], t)
    assert time.monotonic() - t0 < 0.5
