"""The indexing loop: the driver's events into the statistics and the row index, handed to the
UI in batches of rows (no Textual here: the app runs :meth:`Indexer.run` in a worker thread)."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from analyzer.capture.files import check_readable
from analyzer.pipeline import Analysis
from analyzer.session.stats import Stats
from analyzer.tui.model import Index
from analyzer.tui.rows import Row
from analyzer.tui.spool import SpoolError


@dataclass(slots=True)
class Progress:
    """New rows and how far the analysis is."""

    rows: list[Row] = field(default_factory=list)
    packets: int = 0
    fraction: float | None = None
    done: bool = False
    error: str | None = None
    connections: int = 0


class Indexer:
    """Runs ``analysis`` into ``stats`` and ``index`` (holding ``lock`` while it changes them).

    ``post(progress)`` hands a batch to the UI and returns False to stop (it may block until
    the UI took the previous one); the first rows come after ``first_batch`` seconds, then
    batches every ``batch`` seconds, every ``late_batch`` seconds after ``late_after`` seconds
    (each batch costs the UI a layout and a repaint, the same for 10 rows as for 10,000, and
    the UI thread shares the GIL with this one: fewer batches on a long capture leave more of
    the CPU to the indexing)."""

    def __init__(
        self,
        analysis: Analysis,
        index: Index,
        stats: Stats,
        lock: AbstractContextManager,
        *,
        first_batch: float = 0.02,
        batch: float = 0.25,
        late_batch: float | None = None,
        late_after: float = 2.0,
        slice_seconds: float = 0.05,
        freeze_rows: int = 4000,
    ) -> None:
        self.analysis = analysis
        self.index = index
        self.stats = stats
        self.lock = lock
        self.first_batch = first_batch
        self.batch = batch
        self.late_batch = late_batch if late_batch is not None else batch
        self.late_after = late_after
        self.slice_seconds = slice_seconds
        self.freeze_rows = freeze_rows

    def run(
        self,
        post: Callable[[Progress], bool],
        cancelled: Callable[[], bool],
        path: str | None,
        ready: Callable[[], bool] | None = None,
        idle_posts: bool = False,
    ) -> None:
        """Index until the source ends or ``cancelled()``. With ``ready``, the indexing never
        waits for the UI: a batch is posted only when ``ready()`` says the UI took the last
        one; until then its rows wait for the next. With ``idle_posts`` (a live source) a batch
        is posted every interval even without new rows (the counters move)."""
        if path is not None and path != "-":
            problem = check_readable(path)
            if problem:
                post(Progress(done=True, error=problem))
                return
        a, index, stats = self.analysis, self.index, self.stats
        a.cancel = cancelled
        rows: list[Row] = []
        last_post = start = time.monotonic()
        wait = self.first_batch
        frozen = 0
        # (the events of a slice live until the slice is indexed: the analysis's batches keep
        # the cyclic GC's young generation big enough for them, pipeline.YOUNG_GC, from the
        # first batch until the last)
        try:
            for events in a.steps(stats, seconds=self.slice_seconds):
                if cancelled():
                    return
                with self.lock:
                    if index.origin is None:
                        index.origin = a.first_ts
                    rows.extend(index.add(events))
                if len(index.rows) - frozen >= self.freeze_rows:
                    # The rows live as long as the app: keep them out of the cyclic GC's full
                    # collections, whose cost would otherwise grow with every row indexed
                    # (the decoder's garbage triggers many: 1.5x the indexing time at 40k rows).
                    gc.freeze()
                    frozen = len(index.rows)
                now = time.monotonic()
                if ready is not None and not ready():
                    continue
                if (rows or idle_posts) and now - last_post >= wait and not a.finished:
                    if not post(Progress(rows, a.packets, a.fraction, connections=a.connections)):
                        return
                    rows = []
                    last_post = now
                    wait = self.batch if now - start < self.late_after else self.late_batch
            if not cancelled():
                with self.lock:
                    index.finish()
                post(Progress(rows, a.packets, 1.0, done=True, connections=a.connections))
        except SpoolError as e:  # a full disk: what was indexed stays browsable
            post(Progress(rows, a.packets, None, done=True, error=str(e), connections=a.connections))
        except Exception as e:  # a bug must not take the UI down: say what happened
            error = f"analysis failed after {a.packets} packets: {type(e).__name__}: {e}"
            post(Progress(rows, a.packets, None, done=True, error=error, connections=a.connections))
        finally:
            gc.unfreeze()  # indexing is over: cycles frozen on the way may be collected again
