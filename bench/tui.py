"""How fast the TUI indexes a capture, and how much memory it holds.

    python bench/tui.py CAPTURE [--size 120x35] [--rounds 3] [--json]

Runs ``--rounds`` times, alternating, each in its own process (peak RSS is each process's
``ru_maxrss``, from ``os.wait4``):

1. ``kafka-analyzer stats CAPTURE`` (the reference: reading, reassembly, decoding, statistics);
2. the TUI, headless (Textual's ``run_test`` at ``--size``): the time from start to the first
   rows drawn, to the whole capture indexed, and to select the exchange with the most bytes
   (decoded again from the spool with its records, its tree and hex view built), and the
   time to apply a few display filters to the whole index (decoding every row, as the filter
   bar did before, and as it does now: index fields first, decoded trees cached); not with
   ``--no-filters``.

Make a big capture from a bundled one with ``bench/pcapcat.py``, e.g.
``python bench/pcapcat.py captures/librdkafka-produce-consume-none.pcap -n 2000 -o /tmp/big.pcap``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child_rss(cmd: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MB of the child itself, stdout): ``os.wait4`` on the child."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    out = p.stdout.read() if p.stdout else b""
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed with exit code {p.returncode}")
    return wall, ru.ru_maxrss / 1024, out.decode()


# -- the TUI side (run in a child process: python bench/tui.py --child CAPTURE W H) -----------------

# field filters timed on the whole index (one field the index has, two decoded fields)
FILTERS = (
    "api == Produce",
    "produce.acks == -1",
    "fetch.max_wait_ms >= 100 and fetch.responses.partitions.error_code == 0",
)


def measure_filter(app, expr: str) -> dict:
    """Seconds to apply display filter ``expr`` to the whole index: decoding every row (what the
    filter bar did before: ``flt(index.exchange(row))``), then the filter bar as it is (the row
    answers what it can, decoded trees cached): first with an empty cache, then again."""
    from analyzer.filter import compile_filter
    from analyzer.tui.listview import ListView

    flt = compile_filter(expr)
    flt.knowledge = app.analysis.knowledge
    lv = ListView()
    lv.rows = app.rows
    index = app.index
    lv.predicate = lambda row: flt(index.exchange(row))
    t0 = time.perf_counter()
    lv.rebuild()
    every_row = time.perf_counter() - t0
    matched = len(lv.shown)
    app.session.cache.clear()
    app.set_filter("")
    t0 = time.perf_counter()
    app.set_filter(expr)
    cold = time.perf_counter() - t0
    assert len(app.shown) == matched, (expr, len(app.shown), matched)
    app.set_filter("")
    t0 = time.perf_counter()
    app.set_filter(expr)
    warm = time.perf_counter() - t0
    app.set_filter("")
    return {"matched": matched, "decode_every_row_s": every_row, "cold_s": cold, "again_s": warm}


def child(
    capture: str, width: int, height: int, filters: bool = True, spill_after: int | None = None
) -> None:
    import asyncio

    from analyzer.tui.app import AnalyzerApp

    async def go() -> dict:
        app = AnalyzerApp(capture, spill_after=spill_after)
        async with app.run_test(size=(width, height)) as pilot:
            while app.first_row_at is None and not app.done and app.is_running:
                await asyncio.sleep(0.005)  # (pilot.pause forces a repaint)
            first = (app.first_row_at or time.monotonic()) - app.started_at
            while not app.done and app.is_running:
                await asyncio.sleep(0.05)
            indexed = time.monotonic() - app.started_at
            await pilot.pause()
            biggest = max(app.rows, key=lambda r: max(r.req_bytes, 0) + max(r.resp_bytes, 0))
            app.set_filter("")
            t1 = time.perf_counter()
            app.select_exchange(biggest.index)
            await pilot.pause()
            select = time.perf_counter() - t1
            measured = {}
            for expr in FILTERS if filters else ():
                measured[expr] = measure_filter(app, expr)
                await pilot.pause()
            out = {
                "filters": measured,
                "first_row_s": first,
                "indexed_s": indexed,
                "select_s": select,
                "select_exchange": f"#{biggest.index + 1} {biggest.api} {biggest.sizes} bytes",
                "exchanges": len(app.rows),
                "packets": app.packets,
                "spool_mb": app.index.spool.size / 1e6,
                "spilled_rows": app.index.rows.spilled,
            }
            app.index.close()
        return out

    print(json.dumps(asyncio.run(go())))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("capture")
    ap.add_argument("--size", default="120x35")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--rounds", type=int, default=3, help="stats and TUI runs, alternating (medians)")
    ap.add_argument(
        "--no-filters",
        action="store_true",
        help="only the four figures (first rows, indexed, RSS, select): no display filter timings",
    )
    ap.add_argument(
        "--spill-after",
        type=int,
        default=None,
        help="rows the TUI keeps in memory (the rest in a temporary file)",
    )
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    w, h = (int(x) for x in args.size.split("x"))
    if args.child:
        child(args.capture, w, h, filters=not args.no_filters, spill_after=args.spill_after)
        return 0
    py = sys.executable
    size_mb = os.path.getsize(args.capture) / 2**20
    load_start = os.getloadavg()
    stats_runs, tui_runs = [], []
    for _ in range(args.rounds):  # alternating, so that both see the same load
        stats_runs.append(child_rss([py, "-m", "analyzer", "stats", args.capture]))
        cmd = [py, str(Path(__file__).resolve()), "--child", args.capture, "--size", args.size]
        if args.spill_after is not None:
            cmd += ["--spill-after", str(args.spill_after)]
        wall, rss, out = child_rss(cmd + (["--no-filters"] if args.no_filters else []))
        tui_runs.append((json.loads(out.strip().splitlines()[-1]), rss))
    stats_s = statistics.median(w for w, _, _ in stats_runs)
    stats_rss = max(m for _, m, _ in stats_runs)
    r = dict(tui_runs[0][0])
    for k in ("first_row_s", "indexed_s", "select_s"):
        r[k] = statistics.median(t[k] for t, _ in tui_runs)
    for expr in r["filters"]:
        r["filters"][expr] = {
            k: statistics.median(t["filters"][expr][k] for t, _ in tui_runs) if k.endswith("_s") else v
            for k, v in r["filters"][expr].items()
        }
    tui_rss = max(m for _, m in tui_runs)
    r.update(
        {
            "capture": args.capture,
            "capture_mib": round(size_mb, 1),
            "rounds": args.rounds,
            "stats_s": stats_s,
            "stats_s_all": [w for w, _, _ in stats_runs],
            "indexed_s_all": [t["indexed_s"] for t, _ in tui_runs],
            "stats_rss_mb": stats_rss,
            "tui_rss_mb": tui_rss,
            "indexed_vs_stats": r["indexed_s"] / stats_s,
            "load_average": os.getloadavg(),
            "load_average_start": load_start,
        }
    )
    if args.json:
        print(json.dumps(r, indent=1))
        return 0
    print(f"capture: {args.capture} ({size_mb:.1f} MiB, {r['packets']} packets, {r['exchanges']} exchanges)")
    print(f"medians of {args.rounds} rounds (stats and TUI alternating)")
    print(f"stats:               {stats_s:7.2f} s   peak RSS {stats_rss:6.0f} MB")
    print(f"tui first rows:      {r['first_row_s']:7.2f} s")
    print(
        f"tui fully indexed:   {r['indexed_s']:7.2f} s   = {r['indexed_vs_stats']:.2f}x stats; "
        f"peak RSS {tui_rss:6.0f} MB; spool {r['spool_mb']:.0f} MB; {r.get('spilled_rows', 0)} rows spilled"
    )
    print(f"tui select biggest:  {r['select_s']:7.2f} s   ({r['select_exchange']})")
    for expr, f in r["filters"].items():
        print(
            f"filter {expr!r}: {f['matched']} match; decoding every row {f['decode_every_row_s']:.2f} s, "
            f"now {f['cold_s']:.2f} s (cache empty), {f['again_s']:.2f} s (again)"
        )
    print(
        f"load average (1/5/15 min) at start: {' / '.join(f'{x:.2f}' for x in load_start)}, "
        f"at end: {' / '.join(f'{x:.2f}' for x in r['load_average'])}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
