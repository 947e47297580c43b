"""One display-filter language for every front end (``read/stats/export/live -Y``, the TUI's
filter bar, ``check -Y/--assert``, Spark's ``analyze(where=...)``): a safe expression language
over exchanges, compiled once into closures. See :mod:`analyzer.filter.syntax` for the grammar,
:mod:`analyzer.filter.fields` for the names, :mod:`analyzer.filter.compiler` for the semantics."""

from __future__ import annotations

from analyzer.filter.compiler import Filter, Values, compile_filter, field_values, validate
from analyzer.filter.fields import field_expressions
from analyzer.filter.syntax import FilterError, literal, quote

__all__ = [
    "Filter",
    "FilterError",
    "Values",
    "compile_filter",
    "field_expressions",
    "field_values",
    "literal",
    "plain_words",
    "quote",
    "shorthand",
    "validate",
]


def _split(values) -> list[str]:
    return [p.strip() for v in values or () for p in v.split(",") if p.strip()]


def shorthand(
    expr: str | None = None,
    api=None,
    topic=None,
    client=None,
    errors: bool = False,
    slower_than: float | None = None,
) -> str | None:
    """The one expression for ``-Y EXPR`` and the old ``read`` flags, joined with ``and``:
    ``--api Produce,Fetch`` -> ``api in {Produce, Fetch}``, ``--topic T`` -> ``topic in {"T"}``,
    ``--client ID`` -> ``client_id in {"ID"}``, ``--errors`` -> ``(error or severity >= warning)``,
    ``--slower-than MS`` -> ``latency >= MS``. None when nothing filters."""
    parts: list[str] = []
    if expr is not None and expr.strip():
        parts.append(f"({expr})")
    apis = _split(api)
    if apis:
        parts.append("api in {" + ", ".join(a if a.lstrip("-").isdigit() else quote(a) for a in apis) + "}")
    if topic:
        parts.append("topic in {" + ", ".join(quote(t) for t in topic) + "}")
    if client:
        parts.append("client_id in {" + ", ".join(quote(c) for c in client) + "}")
    if errors:
        parts.append("(error or severity >= warning)")
    if slower_than is not None:
        parts.append(f"latency >= {float(slower_than)!r}")
    return " and ".join(parts) if parts else None


_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:/- \t")


def plain_words(text: str) -> bool:
    """True when ``text`` is only words (letters, digits, ``_ . : / -``), none of them an
    operator keyword: what a front end may search for as text when it is not a valid filter
    (and must say so)."""
    from analyzer.filter.syntax import KEYWORDS

    words = text.split()
    return bool(words) and all(c in _PLAIN for c in text) and not any(w.lower() in KEYWORDS for w in words)
