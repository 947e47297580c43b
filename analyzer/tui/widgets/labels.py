"""Labels of the field tree and what the hex view shows for a node (rich Text, no Textual)."""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from rich.text import Text

from analyzer.dissect.message import masked_payload
from analyzer.model import Exchange, Field, Frame, Issue, Message, Severity
from analyzer.session.fieldtree import Parts, field_parts, issue_parts, message_parts

# -- labels ----------------------------------------------------------------------------------------
# (the text is :mod:`analyzer.session.fieldtree`'s, the one tree of every front end; here its style)

SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.NOTE: "dim"}
SEV_STYLES = {k: Style.parse(v) for k, v in SEVERITY_STYLE.items()}
ROLE_STYLE = {
    "name": "bold",
    "count": "cyan",
    "string": "green",
    "meta": "dim",
    "bad": "bold red",
    "annotation": "italic yellow",
    "kind": "bold magenta",
    **{str(sev): style for sev, style in SEVERITY_STYLE.items()},
}


def styled(parts: Parts) -> Text:
    """A label's parts as rich Text (never parsed as markup), one line."""
    t = Text(no_wrap=True, overflow="ellipsis")
    for text, role in parts:
        t.append(text, style=ROLE_STYLE.get(role, ""))
    return t


def field_label(f: Field) -> Text:
    """``name: value  (display)  type @offset+length``."""
    return styled(field_parts(f))


def issue_label(issue: Issue, kind: str | None) -> Text:
    return styled(issue_parts(issue, kind))


def message_label(m: Message) -> Text:
    return styled(message_parts(m))


# -- field tree --------------------------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class NodeData:
    """What a tree node stands for: a field of the request or response, a message, an issue."""

    kind: str | None = None  # "request" | "response" | None (exchange level)
    field: Field | None = None
    path: tuple[Field, ...] = ()  # from the header/body root down to ``field`` (inclusive)
    issue: Issue | None = None
    populated: bool = True


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
