"""Labels of the field tree and what the hex view shows for a node (rich Text, no Textual)."""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from rich.text import Text

from analyzer.dissect.message import masked_payload
from analyzer.model import Exchange, Field, Frame, Issue, Message, Severity
from analyzer.session.report import api_text

# -- labels ----------------------------------------------------------------------------------------

_MAX_TEXT = 160
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
SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.NOTE: "dim"}
SEV_STYLES = {k: Style.parse(v) for k, v in SEVERITY_STYLE.items()}


def _short(s: str, limit: int = _MAX_TEXT) -> str:
    return s if len(s) <= limit else s[: limit - 1] + "…"


def value_text(v) -> str:
    """A leaf value as one line of text."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return _short(repr(v))
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
    return _short(str(v))


def field_label(f: Field) -> Text:
    """``name: value  (display)  type @offset+length`` as rich Text (never parsed as markup)."""
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(f.name, style="bold")
    v = f.value
    is_array = f.type.startswith("[]") or f.type == "array"
    if is_array:
        t.append(f" [{'null' if v is None else v}]", style="cyan")
    elif isinstance(v, bytes | bytearray | memoryview) and f.display:
        t.append(": ")
        t.append(_short(repr(f.display)), style="green")
        t.append(f" ({len(v)} bytes)", style="dim")
    elif v is not None or f.children is None:
        t.append(": ")
        t.append(value_text(v), style="green" if isinstance(v, str) else "")
        if f.type == "records" and isinstance(v, int):
            t.append(" bytes")
    if f.display and not (isinstance(v, bytes | bytearray | memoryview)):
        bad = bool(v) and f.type == "int16" and f.name.endswith("error_code")
        bad = bad or "mismatch" in f.display.lower()
        t.append(f"  ({_short(f.display)})", style="bold red" if bad else "italic yellow")
    elif f.type == "int16" and f.name.endswith("error_code") and v:
        t.append("  (error)", style="bold red")
    t.append(f"  {f.type} @{f.offset}+{f.length}", style="dim")
    return t


def issue_label(issue: Issue, kind: str | None) -> Text:
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(f"{issue.severity} ", style=SEVERITY_STYLE.get(issue.severity, ""))
    t.append(issue.code, style="bold")
    t.append(f": {issue.message}")
    where = []
    if kind:
        where.append(kind)
    if issue.offset is not None:
        where.append(f"@{issue.offset}")
    if issue.where:
        where.append(issue.where)
    if where:
        t.append(f"  ({', '.join(where)})", style="dim")
    return t


def message_label(m: Message) -> Text:
    f = m.frame
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(m.kind.capitalize(), style="bold magenta")
    t.append(f"  {api_text(m.api_key, m.api_version)}")
    if m.correlation_id is not None:
        t.append(f"  corr={m.correlation_id}")
    t.append(f"  {f.length + 4} bytes", style="dim")
    if f.packet_indexes:
        pk = ",".join(map(str, f.packet_indexes[:8])) + ("…" if len(f.packet_indexes) > 8 else "")
        t.append(f"  packets {pk}", style="dim")
    sev = m.severity
    if sev is not None and sev >= Severity.WARNING:
        t.append(f"  [{sev}]", style=SEVERITY_STYLE[sev])
    return t


# -- field tree --------------------------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class NodeData:
    """What a tree node stands for: a field of the request or response, a message, an issue."""

    kind: str | None = None  # "request" | "response" | None (exchange level)
    field: Field | None = None
    path: tuple[Field, ...] = ()  # from the header/body root down to ``field`` (inclusive)
    issue: Issue | None = None
    populated: bool = True


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


def message_roots(m: Message | None) -> list[Field]:
    if m is None:
        return []
    return [f for f in (m.header, m.body) if f is not None]


@dataclass(slots=True)
class HexTarget:
    data: bytes
    start: int | None  # highlighted span [start, end) inside ``data``
    end: int | None
    title: str
    # where each packet's bytes start in ``data``: (offset, packet number), by offset
    packets: tuple[tuple[int, int], ...] = ()


def packet_starts(frame: Frame) -> tuple[tuple[int, int], ...]:
    """Where the bytes of each of ``frame``'s packets start in its payload (the bytes after the
    4-byte size prefix): ``(offset, packet number)`` in stream order. A packet that starts in the
    size prefix starts the payload (it replaces the packet before it at offset 0). Empty when
    the packets' offsets are not known."""
    offs = frame.packet_offsets
    if not offs or len(offs) != len(frame.packet_indexes):
        return ()
    out: list[tuple[int, int]] = []
    for off, pk in zip(offs, frame.packet_indexes, strict=True):
        at = max(off - 4, 0)
        if out and out[-1][0] == at:
            out.pop()
        out.append((at, pk))
    return tuple(out)


def hex_target(
    ex: Exchange, kind: str, node: NodeData | None, show_secrets: bool = False
) -> HexTarget | None:
    """The bytes a hex view shows for a node of message ``kind`` and the span to highlight.

    Fields below a ``decompressed`` field have offsets in its (decompressed) value: the view
    then shows those bytes. A ``decompressed`` field itself spans the compressed bytes in the
    enclosing coordinates. SASL secrets are overwritten with ``*`` unless ``show_secrets``.
    """
    m = ex.request if kind == "request" else ex.response
    if m is None:
        return None
    data: bytes = masked_payload(m, show_secrets)
    title = f"{kind} frame payload"
    packets = packet_starts(m.frame)
    start = end = None
    if node is not None and node.kind == kind:
        if node.field is not None:
            for i in range(len(node.path) - 2, -1, -1):
                container = node.path[i]
                if container.type == "decompressed":
                    v = container.value
                    data = bytes(v) if isinstance(v, bytes | bytearray | memoryview) else b""
                    owner = node.path[i - 1].name if i else "records"
                    title = f"{kind}: decompressed data of {owner} @{container.offset}"
                    packets = ()  # (not the captured bytes)
                    break
            f = node.field
            start, end = f.offset, f.offset + max(f.length, 0)
        elif node.issue is not None and node.issue.offset is not None:
            start, end = node.issue.offset, node.issue.offset + 1
        if start is not None:
            start = max(0, min(start, len(data)))
            end = max(start, min(end or start, len(data)))
            if end == start:
                start = end = None
    return HexTarget(data, start, end, title, packets)
