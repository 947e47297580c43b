"""The field tree of an exchange as text, for every front end: the TUI's detail tree (which
styles the parts: :mod:`analyzer.tui.widgets.labels`) and ``read -V`` (plain lines).

A label is a list of ``(text, role)`` parts; the role says what the text is (``name``, ``count``,
``string``, ``meta``, ``bad``, ``annotation``, ``kind``, a severity's name, or ``""``), never how it
looks. :func:`tree_lines` walks a whole exchange: its request and response (header and body
fields, depth first) and its issues, in the order of the TUI's tree.
"""

from __future__ import annotations

from collections.abc import Iterator

from analyzer.model import Exchange, Field, Issue, Message, Severity
from analyzer.session.report import api_text

Parts = list[tuple[str, str]]

MAX_TEXT = 160
# a record batch / legacy message node: its ``batch`` object as the export writes it
_SUMMARY_KEYS = (
    "magic",
    "codec",
    "record_count",
    "bytes",
    "base_offset",
    "last_offset",
    "timestamp_type",
    "control_type",
)


def short(s: str, limit: int = MAX_TEXT) -> str:
    return s if len(s) <= limit else s[: limit - 1] + "…"


def value_text(v) -> str:
    """A leaf value as one line of text."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return short(repr(v))
    if isinstance(v, bytes | bytearray | memoryview):
        b = bytes(v[:32])
        more = "…" if len(v) > 32 else ""
        return f"{b.hex(' ')}{more} ({len(v)} bytes)" if len(v) else "(0 bytes)"
    if isinstance(v, dict):
        parts = [f"{k}={v[k]}" for k in _SUMMARY_KEYS if v.get(k) is not None]
        if v.get("crc_ok") is False:
            parts.append("CRC MISMATCH")
        if v.get("transactional"):
            parts.append("transactional")
        if v.get("partial"):
            parts.append("partial")
        return " ".join(parts)
    return short(str(v))


def field_parts(f: Field) -> Parts:
    """``name: value  (display)  type @offset+length``."""
    out: Parts = [(f.name, "name")]
    v = f.value
    is_array = f.type.startswith("[]") or f.type == "array"
    if is_array:
        out.append((f" [{'null' if v is None else v}]", "count"))
    elif isinstance(v, bytes | bytearray | memoryview) and f.display:
        out += [(": ", ""), (short(repr(f.display)), "string"), (f" ({len(v)} bytes)", "meta")]
    elif v is not None or f.children is None:
        out += [(": ", ""), (value_text(v), "string" if isinstance(v, str) else "")]
        if f.type == "records" and isinstance(v, int):
            out.append((" bytes", ""))
    if f.display and not (isinstance(v, bytes | bytearray | memoryview)):
        bad = bool(v) and f.type == "int16" and f.name.endswith("error_code")
        bad = bad or "mismatch" in f.display.lower()
        out.append((f"  ({short(f.display)})", "bad" if bad else "annotation"))
    elif f.type == "int16" and f.name.endswith("error_code") and v:
        out.append(("  (error)", "bad"))
    out.append((f"  {f.type} @{f.offset}+{f.length}", "meta"))
    return out


def issue_parts(issue: Issue, kind: str | None) -> Parts:
    sev = str(issue.severity)
    out: Parts = [(f"{sev} ", sev), (issue.code, "name"), (f": {issue.message}", "")]
    where = []
    if kind:
        where.append(kind)
    if issue.offset is not None:
        where.append(f"@{issue.offset}")
    if issue.where:
        where.append(issue.where)
    if where:
        out.append((f"  ({', '.join(where)})", "meta"))
    return out


def message_parts(m: Message) -> Parts:
    f = m.frame
    out: Parts = [(m.kind.capitalize(), "kind"), (f"  {api_text(m.api_key, m.api_version)}", "")]
    if m.correlation_id is not None:
        out.append((f"  corr={m.correlation_id}", ""))
    out.append((f"  {f.length + 4} bytes", "meta"))
    if f.packet_indexes:
        pk = ",".join(map(str, f.packet_indexes[:8])) + ("…" if len(f.packet_indexes) > 8 else "")
        out.append((f"  packets {pk}", "meta"))
    sev = m.severity
    if sev is not None and sev >= Severity.WARNING:
        out.append((f"  [{sev}]", str(sev)))
    return out


def message_roots(m: Message | None) -> list[Field]:
    if m is None:
        return []
    return [f for f in (m.header, m.body) if f is not None]


def field_path(roots: list[Field], target: Field) -> tuple[Field, ...] | None:
    """The chain of fields from one of ``roots`` down to ``target`` (identity match)."""
    for root in roots:
        stack: list[tuple[Field, tuple[Field, ...]]] = [(root, (root,))]
        while stack:
            f, path = stack.pop()
            if f is target:
                return path
            if f.children:
                stack.extend((c, (*path, c)) for c in reversed(f.children))
    return None


def exchange_issues(ex: Exchange) -> list[tuple[str | None, Issue]]:
    """The issues of an exchange, each with its side (None: the exchange's own)."""
    out: list[tuple[str | None, Issue]] = [(None, i) for i in ex.issues]
    for m, kind in ((ex.request, "request"), (ex.response, "response")):
        if m is not None:
            out.extend((kind, i) for i in m.issues)
    return out


def tree_lines(ex: Exchange) -> Iterator[tuple[int, Parts]]:
    """Every node of the exchange's tree as ``(depth, parts)``, depth first, every field
    expanded: the messages (depth 0), their fields, then the issues."""
    for m, kind in ((ex.request, "request"), (ex.response, "response")):
        if m is None:
            yield 0, [(f"{kind.capitalize()}: not captured", "meta")]
            continue
        yield 0, message_parts(m)
        if m.header is None and m.body is None:
            yield 1, [("(nothing decoded)", "meta")]
        for root in message_roots(m):
            stack = [(root, 1)]
            while stack:
                f, depth = stack.pop()
                yield depth, field_parts(f)
                if f.children:
                    stack.extend((c, depth + 1) for c in reversed(f.children))
    issues = exchange_issues(ex)
    if issues:
        worst = max(i.severity for _, i in issues)
        yield 0, [(f"Issues ({len(issues)})", str(worst))]
        for side, i in issues:
            yield 1, issue_parts(i, side)


def plain(parts: Parts) -> str:
    return "".join(text for text, _role in parts)
