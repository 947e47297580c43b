"""``live`` stopped by SIGTERM (a service's stop) exits 0 even with partial results (drops, gaps:
said on stderr, in the summary and the metrics); usage errors keep their code; without a SIGTERM
the partial results' code 1 stands (analyzer.cli.common.service_exit)."""

import os
import signal

from analyzer.cli import common


class Stopped:
    def __init__(self) -> None:
        self.stops = 0

    def stop(self) -> None:
        self.stops += 1


def test_sigterm_turns_partial_results_into_a_clean_stop():
    common.terminated.clear()
    try:
        assert common.service_exit(1) == 1 and common.service_exit(0) == 0
        a = Stopped()
        with common.graceful_interrupt(a):
            os.kill(os.getpid(), signal.SIGTERM)
        assert a.stops == 1 and common.terminated.is_set()
        assert common.service_exit(1) == 0 and common.service_exit(2) == 2
    finally:
        common.terminated.clear()
