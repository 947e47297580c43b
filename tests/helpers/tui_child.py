"""``python tests/helpers/tui_child.py HWM_FILE CAPTURE``: the TUI on a capture, headless (textual's
Pilot, 120x35): waits for the analysis, opens the first exchange (its field tree and hex), the
issues view, then prints one JSON line (exchanges listed, the issue codes of the opened
exchange and the issues view's text) and writes its own VmHWM in kB to HWM_FILE (see
:mod:`tests.helpers.peak`)."""

from __future__ import annotations

import asyncio
import json
import sys


async def main(capture: str) -> dict:
    from analyzer.tui.app import AnalyzerApp

    app = AnalyzerApp(capture)
    async with app.run_test(size=(120, 35)) as pilot:
        loop = asyncio.get_running_loop()
        end = loop.time() + 120
        while not app.done:
            if loop.time() > end:
                raise SystemExit("analysis did not finish in 120 s")
            await pilot.pause(0.05)
        await pilot.pause()
        codes: list[str] = []
        if app.rows:
            app.select_exchange(app.rows[0].index)
            await pilot.pause()
            view = app.view
            for m in (view.request, view.response) if view is not None else ():
                codes += [i.code for i in m.issues] if m is not None else []
        await pilot.press("colon", *"issues", "enter")
        await pilot.pause()
        text = "\n".join(str(getattr(w, "content", "")) for w in app.screen.query("*"))
        return {"exchanges": len(app.rows), "codes": codes, "issues_view": text, "exit": app.exit_code}


if __name__ == "__main__":
    hwm, capture = sys.argv[1], sys.argv[2]
    try:
        print(json.dumps(asyncio.run(main(capture))))
    finally:
        with open("/proc/self/status") as f:
            kb = next(line.split()[1] for line in f if line.startswith("VmHWM:"))
        with open(hwm, "w") as out:
            out.write(kb)
