"""The status line under the list: the file (or LIVE interface), progress, counts, the filter."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from analyzer.tui.session import Session
from analyzer.tui.widgets.status import live_text, status_text


class StatusBar(Static):
    """``file  done  N packets  N exchanges ...``; a live session starts with ``LIVE``/``stopped``,
    packets/s and the drops."""

    def show(self, session: Session, name: str, follow: bool) -> None:
        se, lv = session, session.list
        t = status_text(
            name,
            se.done,
            se.fraction,
            se.packets,
            len(lv.rows),
            se.error_rows,
            lv.text,
            lv.conn,
            len(lv.shown),
            bool(se.capture_issues or se.load_error),
            lv.picked_label if lv.picked is not None else "",
        )
        if se.live:
            received, dropped = se.kernel_drops
            head = live_text(
                name,
                not se.done,
                se.rate(),
                max(se.packets, se.analysis.packets),
                len(lv.rows),
                received,
                dropped,
                se.ring_full,
                se.index.dropped,
                following=follow,
            )
            cut = t.plain.find(" exchanges")
            rest = t[cut + len(" exchanges") :] if cut >= 0 else Text()
            if lv.text or lv.conn is not None or lv.picked is not None:  # the match count first
                first = t.plain.find("  ")
                t = t[: first + 2] + head + rest
            else:
                t = head + rest
        self.update(t)
