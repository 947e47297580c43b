"""The TUI tests' live source and waits: a capture replayed as a live interface in two parts
(:class:`GatedLive`), and the Pilot waits for its first part and for the end of the analysis."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path


class GatedLive:
    """A live source (as :class:`~analyzer.capture.ring.RingCapture` is to the TUI) replaying a
    capture: its packets before ``cut`` at once, the rest once ``gate`` is set; meanwhile idle
    ticks (None), as a quiet interface gives."""

    live = True
    interface = "replay"
    name = "live:replay"
    received = dropped = 0

    def __init__(self, path: Path, cut: float) -> None:
        self.path, self.cut = path, cut
        self.gate = threading.Event()
        self.stopped = threading.Event()
        self.sent_before_cut = threading.Event()

    def stop(self) -> None:
        self.stopped.set()

    def __iter__(self):
        from analyzer.capture.files import CaptureFile

        for pkt in CaptureFile(str(self.path)):
            if pkt[1] >= self.cut:
                self.sent_before_cut.set()
                while not self.gate.wait(0.02):
                    if self.stopped.is_set():
                        return
                    yield None
            if self.stopped.is_set():
                return
            yield pkt


async def until_first_part(src: GatedLive, pilot, timeout: float = 20.0) -> float:
    """Wait until ``src`` has given its packets before the cut (and the app a moment to show
    them); returns the loop time the wait started, for the waits after it."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    while not src.sent_before_cut.is_set():
        assert loop.time() < start + timeout, "the first part was not read"
        await pilot.pause(0.05)
    await pilot.pause(0.5)
    return start


async def until_done(app, pilot, timeout: float = 30.0, step: float = 0.02) -> None:
    """Wait until the app's analysis has read the whole capture."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not app.done:
        assert loop.time() < end, "analysis did not finish"
        await pilot.pause(step)
    await pilot.pause()
