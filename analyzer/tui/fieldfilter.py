"""The display filters ``f`` builds from a field of an exchange's tree."""

from __future__ import annotations

from analyzer.model import Field

HEADER_FIELDS = {
    "request_api_key": "api",
    "request_api_version": "version",
    "correlation_id": "corr",
    "client_id": "client_id",
}
# record fields -> the records fields of the filter language
RECORD_FIELDS = {
    ("record", "key"): "records.key",
    ("record", "value"): "records.value",
    ("header", "key"): "records.headers.key",
    ("header", "value"): "records.headers.value",
    ("record_batch", "magic"): "records.magic",
    ("record_batch", "producer_id"): "records.producer_id",
    ("message", "magic"): "records.magic",
    ("message", "key"): "records.key",
    ("message", "value"): "records.value",
}


def literal(v: object) -> str | None:
    """``v`` written as a value of the filter language (None: it has no literal)."""
    from analyzer.filter import quote

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return quote(v)
    if isinstance(v, bytes | bytearray | memoryview):
        try:
            s = bytes(v).decode("utf-8")
        except UnicodeDecodeError:
            return None
        return quote(s) if s.isprintable() else None
    return None


def field_expressions(api_key: int | None, kind: str, path: tuple[Field, ...]) -> list[str] | str:
    """Display filters that keep the exchanges whose ``kind`` message has the value of the tree
    field at the end of ``path`` (from its header or body root), most specific first; or why
    there is none (a str)."""
    from analyzer.dissect.decoder import snake
    from analyzer.dissect.protocol_table import API_NAMES

    if not path:
        return "select a field of the request or response"
    f = path[-1]
    root = path[0]
    if root.type.endswith("Header"):
        name = HEADER_FIELDS.get(f.name)
        if name is None:
            return f"{f.name}: the filter language has no header field of that name"
        if name == "api" and isinstance(f.value, int) and f.value in API_NAMES:
            return [f"api == {API_NAMES[f.value]}"]
        lit = literal(f.value)
        return [f"{name} == {lit}"] if lit is not None else f"{f.name}: no value to compare"
    inside = next((i for i, p in enumerate(path) if p.type == "records"), None)
    if inside is not None:
        if f.type == "record_batch" and isinstance(f.value, dict) and f.value.get("codec"):
            return [f"records.codec == {f.value['codec']}"]
        parent = path[-2] if len(path) >= 2 else None
        name = RECORD_FIELDS.get((parent.type if parent is not None else "", f.name))
        if name is None and parent is not None:
            name = RECORD_FIELDS.get((parent.name, f.name))
        if name is None:
            return f"{f.name}: a records field the filter language does not name"
        lit = literal(f.value)
        if lit is None:
            return f"{f.name}: a binary value (no text to compare)"
        return [f"{name} == {lit}"]
    if api_key is None or api_key not in API_NAMES:
        return "an exchange of an unknown API"
    names = [p.name for i, p in enumerate(path) if i and not path[i - 1].type.startswith("[]")]
    dotted = f"{snake(API_NAMES[api_key])}.{kind}.{'.'.join(names)}"
    if f.children is not None:
        return [dotted]  # a struct or an array: that it is there
    if f.value is None:
        return [f"not {dotted}"]
    lit = literal(f.value)
    if lit is None:
        return f"{f.name}: a binary value (no text to compare)"
    return [f"{dotted} == {lit}"]
