"""The records table of an exchange: what a producer sent, what a consumer got."""

from __future__ import annotations

import datetime as dt

from textual.app import ComposeResult
from textual.widgets import DataTable, Footer, Static

from analyzer.model import Exchange
from analyzer.session.records import RecordView, iter_records
from analyzer.tui.screens.base import View, fill_table, table_text

COLUMNS = ["msg", "topic", "partition", "offset", "timestamp", "key", "value", "headers", "codec"]
MAX_TEXT = 80


def bytes_text(b: bytes | None) -> str:
    if b is None:
        return "null"
    try:
        s = b.decode("utf-8")
        if s.isprintable():
            return s if len(s) <= MAX_TEXT else s[: MAX_TEXT - 1] + "…"
    except UnicodeDecodeError:
        pass
    h = b[:24].hex(" ")
    return f"{h}{'…' if len(b) > 24 else ''} ({len(b)} bytes)"


def ts_text(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "-" if ms is None else str(ms)
    try:
        return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="milliseconds")[:-6] + "Z"
    except (OverflowError, OSError, ValueError):
        return str(ms)


def record_rows(ex: Exchange, topic_ids: dict[str, str] | None = None) -> list[dict]:
    """One dict per record of the exchange's request (Produce) and response (Fetch...)."""
    out = []
    for m in (ex.request, ex.response):
        if m is None or m.body is None:
            continue
        r: RecordView
        for r in iter_records(m, topic_ids):
            out.append(
                {
                    "msg": m.kind,
                    "topic": r.topic,
                    "partition": r.partition,
                    "offset": r.offset,
                    "timestamp": ts_text(r.timestamp),
                    "key": bytes_text(r.key) if not r.control else f"({r.control_type or 'control'})",
                    "value": bytes_text(r.value) if not r.control else f"({r.control_type or 'control'})",
                    "headers": ", ".join(f"{k}={bytes_text(v)}" for k, v in r.headers) or "-",
                    "codec": r.codec or "none",
                }
            )
    return out


class RecordsScreen(View):
    NAME = "records"

    def __init__(self, title: str, rows: list[dict]) -> None:
        super().__init__()
        self.title_text = title
        self.rows = rows

    def compose(self) -> ComposeResult:
        yield Static(f"Records of {self.title_text}: {len(self.rows)}  esc: back", classes="view-title")
        table: DataTable = DataTable(id="records-table", cursor_type="row", zebra_stripes=True)
        fill_table(table, COLUMNS, self.rows)
        yield table
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()

    def text(self) -> str:
        return table_text(self.query_one(DataTable))
