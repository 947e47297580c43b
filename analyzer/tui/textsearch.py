"""The exchange list's quick filter: plain words searched as text in the rows (API, topics,
client id; ``errors``; ``api:X``, ``topic:X``, ``client:X``), for a filter-bar text that is not
a display filter (:mod:`analyzer.filter`), and the view's connection scope."""

from __future__ import annotations

from collections.abc import Callable, Container
from functools import lru_cache

from analyzer.tui.rows import Row

ERROR_WORDS = ("errors", "error", "err")


@lru_cache(maxsize=64)
def parse_filter(text: str) -> tuple[str, ...]:
    return tuple(t for t in text.lower().split() if t)


def matches(row: Row, text: str) -> bool:
    """Whether the filter ``text`` keeps ``row``. Every term must match: ``errors`` keeps
    exchanges with error codes or problems; ``api:X``, ``topic:X``, ``client:X`` look for
    substring X in that column only; any other term is a substring of the API name
    (``produce``, ``fetch v12``), a topic or the client id. (The one place the filter language
    lives: swap in a compiled display filter here.)"""
    for t in parse_filter(text):
        if t in ERROR_WORDS:
            if not row.has_errors:
                return False
            continue
        col, sep, value = t.partition(":")
        client = (row.client_id or "").lower()
        if sep and col in ("api", "topic", "client"):
            if col == "api":
                ok = value in row.api.lower()
            elif col == "topic":
                ok = any(value in topic.lower() for topic, _ in row.topics)
            else:
                ok = value in client
        else:
            ok = t in row.api.lower() or t in client or any(t in topic.lower() for topic, _ in row.topics)
        if not ok:
            return False
    return True


def keep(
    row: Row,
    text: str,
    conn: int | None = None,
    predicate: Callable[[Row], bool] | None = None,
    picked: Container[int] | None = None,
) -> bool:
    """Whether a view scoped to connection ``conn`` and to the exchanges ``picked`` (row
    indexes: a rebalance's, say), filtered by ``predicate`` (a compiled display filter over the
    row's exchange) or else by the text search ``text`` shows ``row``."""
    if conn is not None and row.conn.id != conn:
        return False
    if picked is not None and row.index not in picked:
        return False
    if predicate is not None:
        return predicate(row)
    return not text or matches(row, text)
