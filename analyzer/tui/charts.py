"""The pictures' numbers: the I/O series (requests, bytes, errors per second), a timeline bar's
place, the latency histogram."""

from __future__ import annotations

import math
from collections.abc import Iterable

from analyzer.tui.rows import Row


def io_series(rows: Iterable[Row], buckets: int = 60) -> dict:
    """Requests, bytes (both directions) and exchanges with errors per second, in ``buckets``
    equal time slices over the span of the rows' request times. ``rows`` is read twice when
    it is a sequence (an index's rows are made again on each pass, not all kept)."""
    if not hasattr(rows, "__len__"):
        rows = list(rows)
    if not len(rows):  # type: ignore[arg-type]
        return {"seconds": 0.0, "step": 0.0, "requests": [], "bytes": [], "errors": []}
    t0, t1, count = math.inf, -math.inf, 0
    for r in rows:
        ts = r.ts
        t0 = min(t0, ts)
        t1 = max(t1, ts)
        count += 1
    span = max(t1 - t0, 1e-6)
    n = max(1, min(buckets, count))
    step = span / n
    req = [0.0] * n
    byt = [0.0] * n
    err = [0.0] * n
    for r in rows:
        b = min(n - 1, int((r.ts - t0) / step))
        req[b] += 1
        byt[b] += max(r.req_bytes, 0) + max(r.resp_bytes, 0)
        if r.has_errors:
            err[b] += 1
    scale = 1.0 / step
    return {
        "seconds": span,
        "step": step,
        "requests": [v * scale for v in req],
        "bytes": [v * scale for v in byt],
        "errors": [v * scale for v in err],
    }


def timeline_bar(row: Row, t0: float, span: float, width: int) -> tuple[int, int]:
    """Where the bar of ``row`` starts (columns from ``t0``) and how long it is (at least one
    column; an unanswered request runs to the end) on an axis of ``width`` columns for
    ``span`` seconds."""
    start = min(width - 1, max(0, int((row.ts - t0) / span * width)))
    if row.latency is None:
        return start, width - start
    return start, max(1, min(width - start, round(row.latency / span * width)))


def latency_histogram(latencies: list[float], bins: int = 12) -> list[tuple[float, float, int]]:
    """(low ms, high ms, count) over log-spaced bins from the smallest to the largest latency."""
    import math

    vals = sorted(v * 1000.0 for v in latencies if v is not None and v >= 0)
    if not vals:
        return []
    lo, hi = max(vals[0], 0.001), max(vals[-1], 0.001)
    if hi <= lo * 1.0001:
        return [(lo, hi, len(vals))]
    edges = [lo * (hi / lo) ** (i / bins) for i in range(bins + 1)]
    counts = [0] * bins
    llo, lspan = math.log(lo), math.log(hi / lo)
    for v in vals:
        i = int((math.log(max(v, lo)) - llo) / lspan * bins)
        counts[min(bins - 1, max(0, i))] += 1
    return [(edges[i], edges[i + 1], counts[i]) for i in range(bins)]


def step_series(points: list[tuple[float, float]], t0: float, t1: float, width: int) -> list[float | None]:
    """A value that holds until the next point (a partition's lag from one commit to the next),
    on ``width`` equal columns from ``t0`` to ``t1``: each column the largest value that held
    in it (None before the first point)."""
    if width <= 0:
        return []
    pts = sorted(points)
    span = max(t1 - t0, 1e-9)
    step = span / width
    out: list[float | None] = [None] * width
    i, held = 0, None
    for c in range(width):
        hi = t0 + (c + 1) * step
        best = held
        while i < len(pts) and (pts[i][0] < hi or c == width - 1):
            held = pts[i][1]
            best = held if best is None else max(best, held)
            i += 1
        out[c] = best
    return out


BLOCKS = " ▁▂▃▄▅▆▇█"


def column_plot(values: list[float | None], height: int, top: float | None = None) -> list[str]:
    """Columns of eighth blocks, ``height`` rows from the top, each column ``values[i]`` of
    ``top`` (default: the largest value); None leaves a column blank, a positive value shows at
    least one eighth."""
    top = top if top is not None else max((v for v in values if v is not None), default=0.0)
    rows = [[" "] * len(values) for _ in range(height)]
    if height <= 0 or not top or top <= 0:
        return ["".join(r) for r in rows]
    for c, v in enumerate(values):
        if v is None or v <= 0:
            continue
        eighths = max(1, round(min(v, top) / top * height * 8))
        for r in range(height):
            fill = min(8, max(0, eighths - r * 8))
            if fill:
                rows[height - 1 - r][c] = BLOCKS[fill]
    return ["".join(r) for r in rows]
