"""Streaming JSON / NDJSON writer of pipeline events (orjson: the export is on the hot path).

NDJSON: one object per line, each with a ``type``: ``capture`` (first line), ``exchange``,
``connection`` (when a connection ends), ``gap``, ``issue``, and ``summary`` (last line).
JSON: one object ``{"capture", "exchanges", "connections", "gaps", "issues", "summary"}``,
written as a stream too (arrays are kept open while events arrive, memory stays flat).
"""

from __future__ import annotations

from typing import BinaryIO

import orjson

from analyzer import __version__
from analyzer.events import CaptureIssue, ConnectionEnd, ConnIssue
from analyzer.export.jsonout import connection_json, exchange_json, stream_event_json
from analyzer.model import Exchange
from analyzer.session.insights import OBJECT_TYPES

_OPTS = orjson.OPT_NON_STR_KEYS
# the JSON document's section of each object type
SECTION_OF = {
    "generation": "generations",
    "rebalance": "rebalances",
    "lag": "lag",
    "consumer_status": "consumer_status",
    "producer": "producers",
    "retry": "retries",
    "transaction": "transactions",
    "held_back": "held_back",
    "e2e": "e2e",
    "client": "clients",
    "edge": "edges",
}


class Writer:
    def __init__(self, out: BinaryIO, fmt: str = "ndjson", spans: bool = True, records: bool = False):
        """``records``: the events were decoded with record bodies (``--records``): record
        batches carry their ``record_list``."""
        if fmt not in ("json", "ndjson"):
            raise ValueError(fmt)
        self.out = out
        self.fmt = fmt
        self.spans = spans
        self.records = records
        # json: buffered sections other than exchanges (small: one entry per connection/issue)
        self.sections: dict[str, list[bytes]] = {"connections": [], "gaps": [], "issues": []}
        for kind in OBJECT_TYPES:
            self.sections[SECTION_OF[kind]] = []
        self.first_exchange = True
        self.capture_issues: list[dict] = []  # written in the summary

    def begin(self, capture: str) -> None:
        head = {"type": "capture", "file": capture, "analyzer": f"kafka-analyzer {__version__}"}
        if self.fmt == "ndjson":
            self.out.write(orjson.dumps(head, option=_OPTS | orjson.OPT_APPEND_NEWLINE))
        else:
            del head["type"]
            self.out.write(b'{"capture":' + orjson.dumps(head) + b',\n"exchanges":[\n')

    def event(self, ev) -> None:
        t = type(ev)
        if t is Exchange:
            obj = exchange_json(ev, self.spans, self.records)
            section = None
        elif t is ConnIssue:
            obj = stream_event_json(ev)
            section = "gaps" if obj["type"] == "gap" else "issues"
        elif t is ConnectionEnd:
            obj = connection_json(ev.conn)
            section = "connections"
        elif t is CaptureIssue:
            self.capture_issues.append(ev.issue.to_dict())
            return
        else:
            return
        if self.fmt == "ndjson":
            self.out.write(orjson.dumps(obj, option=_OPTS | orjson.OPT_APPEND_NEWLINE))
            return
        data = orjson.dumps(obj, option=_OPTS)
        if section is None:
            self.out.write(data if self.first_exchange else b",\n" + data)
            self.first_exchange = False
        else:
            self.sections[section].append(data)

    def raw(self, section: str | None, data: bytes) -> None:
        """A line :meth:`event` would write, already rendered (``export -j``: the processes that
        analyse the capture render their events): ``section`` None for an exchange, else
        ``connections``, ``gaps`` or ``issues``."""
        if self.fmt == "ndjson":
            self.out.write(data + b"\n")
        elif section is None:
            self.out.write(data if self.first_exchange else b",\n" + data)
            self.first_exchange = False
        else:
            self.sections[section].append(data)

    def objects(self, objects: list[dict]) -> None:
        """Objects with a ``type`` of :data:`~analyzer.session.insights.OBJECT_TYPES` (the
        consumer groups over time), written before the summary: NDJSON lines, or the JSON
        document's sections of that type."""
        for obj in objects:
            if self.fmt == "ndjson":
                self.out.write(orjson.dumps(obj, option=_OPTS | orjson.OPT_APPEND_NEWLINE))
            else:
                self.sections[SECTION_OF[obj["type"]]].append(orjson.dumps(obj, option=_OPTS))

    def end(self, summary: dict) -> None:
        summary = {**summary, "capture_issues": self.capture_issues}
        if self.fmt == "ndjson":
            self.out.write(
                orjson.dumps({"type": "summary", **summary}, option=_OPTS | orjson.OPT_APPEND_NEWLINE)
            )
            return
        self.out.write(b"\n]")
        for name, items in self.sections.items():
            self.out.write(b',\n"' + name.encode() + b'":[' + b",\n".join(items) + b"]")
        self.out.write(b',\n"summary":' + orjson.dumps(summary, option=_OPTS) + b"}\n")
