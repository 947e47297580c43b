"""Generate analyzer/dissect/protocol_table.py from the Apache Kafka message schemas.

Reads the JSON message definitions of every snapshot folder ``kafka-X.Y`` under ``--schemas``
(by default ``../shared/kafka-schemas`` next to the project root) and writes a compact Python
module holding only the protocol facts the decoder needs: names, types, version ranges,
nullable/tagged versions, tags, defaults, map keys, entity types and field-level
flexibleVersions overrides. No descriptions ("about" texts) and no licence text are copied.

Merge rule: for a given (apiKey, version) the newest snapshot whose validVersions contains the
version supplies its definition; an older snapshot only supplies the versions no newer one has.

The coordinator record schemas of ``coordinator/`` (the records of ``__consumer_offsets``,
``__transaction_state`` and ``__share_group_state``) go into a second module,
analyzer/dissect/coordinator_table.py (next to ``--out``): the record types of each internal topic
(the key's leading int16) and the key and value schemas, as segments like the messages'.

Usage: python tools/gen_protocol.py [--schemas DIR] [--out FILE] [--coordinator-out FILE] [--quiet]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SCHEMAS = PROJECT_ROOT.parent / "shared" / "kafka-schemas"
DEFAULT_OUT = PROJECT_ROOT / "analyzer" / "dissect" / "protocol_table.py"
COORDINATOR_MODULE = "coordinator_table.py"  # written next to the protocol table
# the one hand-kept error table (names from Kafka's Errors.java, not in the JSON schemas)
ERRORS_MODULE = PROJECT_ROOT / "analyzer" / "dissect" / "errors.py"

OPEN = 0x7FFF
INHERIT = "inherit"  # a field without flexibleVersions of its own
LINE_LENGTH = 110
INDENT = "    "
SNAPSHOT_RE = re.compile(r"^kafka-(\d+)\.(\d+)$")
PRIMITIVES = frozenset(
    ("int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "bool", "string", "bytes", "uuid")
    + ("records",)
)

Range = tuple[int, int] | None


# --------------------------------------------------------------------------- reading


def strip_comments(text: str) -> str:
    """Remove ``//`` comments that are outside JSON strings (a "//" inside a string stays)."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            if c == "\\":
                out.append(text[i : i + 2])
                i += 2
                continue
            if c == '"':
                in_string = False
            out.append(c)
            i += 1
        elif c == '"':
            in_string = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        else:
            out.append(c)
            i += 1
    return "".join(out)


def load_schema(path: Path) -> dict:
    return json.loads(strip_comments(path.read_text(encoding="utf-8")))


def parse_versions(spec: str | None) -> Range:
    """ "3+" -> (3, OPEN), "0-2" -> (0, 2), "1" -> (1, 1), "none"/None -> None."""
    if spec is None:
        return None
    spec = spec.strip()
    if spec == "none":
        return None
    if spec.endswith("+"):
        return (int(spec[:-1]), OPEN)
    if "-" in spec:
        lo, hi = spec.split("-", 1)
        return (int(lo), int(hi))
    return (int(spec), int(spec))


def find_snapshots(schemas: Path) -> list[tuple[str, Path]]:
    """Snapshot folders, newest first: [("4.2", path), ("3.9", path)]."""
    found = []
    for d in schemas.iterdir():
        m = SNAPSHOT_RE.match(d.name)
        if d.is_dir() and m:
            found.append(((int(m.group(1)), int(m.group(2))), d))
    found.sort(reverse=True)
    return [(f"{major}.{minor}", d) for (major, minor), d in found]


def load_errors() -> dict[int, tuple[str, bool]]:
    """ERRORS of analyzer/dissect/errors.py, loaded from its file (no package import needed)."""
    spec = importlib.util.spec_from_file_location("_kafka_errors", ERRORS_MODULE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ERRORS


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def upper_snake(name: str) -> str:
    """ "SaslHandshake" -> "SASL_HANDSHAKE" (the decoder's snake_case rule, upper-cased)."""
    return _CAMEL.sub("_", name).upper()


# --------------------------------------------------------------------------- converting


def overlaps(a: Range, b: Range) -> bool:
    return a is not None and b is not None and a[0] <= b[1] and b[0] <= a[1]


def convert_fields(fields: list[dict], common: dict[str, dict], segment: tuple[int, int]) -> tuple:
    """Field tuples of the fields that exist in some version of ``segment`` (others are dropped)."""
    result = []
    for f in fields:
        # a field without "versions" has its taggedVersions (Kafka's FieldSpec: the tagged-only
        # fields of TransactionLogValue)
        versions = parse_versions(f.get("versions", f.get("taggedVersions")))
        if not overlaps(versions, segment):
            continue
        ftype = f["type"]
        base = ftype.removeprefix("[]")
        children = None
        if base not in PRIMITIVES:
            if "fields" in f:
                sub = f["fields"]
            elif base in common:
                sub = common[base]["fields"]
            else:
                raise ValueError(f"unresolved struct type {ftype!r} of field {f['name']!r}")
            children = convert_fields(sub, common, segment)
        elif "fields" in f:
            raise ValueError(f"primitive field {f['name']!r} has nested fields")
        tag = f.get("tag")
        result.append(
            (
                f["name"],
                ftype,
                versions,
                parse_versions(f.get("nullableVersions")),
                parse_versions(f.get("taggedVersions")),
                None if tag is None else int(tag),
                f.get("default"),
                f.get("entityType"),
                bool(f.get("mapKey")),
                parse_versions(f["flexibleVersions"]) if "flexibleVersions" in f else INHERIT,
                children,
            )
        )
    return tuple(result)


def subtract(rng: tuple[int, int], taken: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Parts of ``rng`` not covered by any range in ``taken`` (as contiguous ranges)."""
    parts = [rng]
    for t_lo, t_hi in taken:
        nxt = []
        for lo, hi in parts:
            if t_hi < lo or t_lo > hi:
                nxt.append((lo, hi))
                continue
            if lo < t_lo:
                nxt.append((lo, t_lo - 1))
            if hi > t_hi:
                nxt.append((t_hi + 1, hi))
        parts = nxt
    return parts


def build_segments(schemas_by_snapshot: list[dict]) -> tuple:
    """Segments (lo, hi, flexible, fields), newest snapshot first, following the merge rule."""
    segments = []
    taken: list[tuple[int, int]] = []
    for schema in schemas_by_snapshot:
        valid = parse_versions(schema.get("validVersions"))
        if valid is None:
            continue
        common = {c["name"]: c for c in schema.get("commonStructs", [])}
        flexible = parse_versions(schema.get("flexibleVersions"))
        for lo, hi in subtract(valid, taken):
            fields = convert_fields(schema.get("fields", []), common, (lo, hi))
            segments.append((lo, hi, flexible, fields))
        taken.append(valid)
    return tuple(segments)


def collect(schemas: Path) -> dict:
    snapshots = find_snapshots(schemas)
    if not snapshots:
        raise SystemExit(f"no kafka-X.Y snapshot folders in {schemas}")
    # (type, apiKey or schema name) -> [schema of each snapshot that has it, newest first]; keyed
    # by apiKey rather than file name because an API may be renamed (ListClientMetricsResources ->
    # ListConfigResources, api key 74)
    by_key: dict[tuple, list[dict]] = {}
    for snap, folder in snapshots:
        for path in sorted(folder.glob("*.json")):
            schema = load_schema(path)
            schema["_snapshot"] = snap
            key = (schema["type"], schema.get("apiKey", schema["name"]))
            by_key.setdefault(key, []).append(schema)

    api_names: dict[int, str] = {}
    listeners: dict[int, tuple[str, ...]] = {}
    by_api: dict[tuple[int, str], list[dict]] = {}
    headers: dict[str, tuple] = {}
    data: dict[str, tuple] = {}
    for key in sorted(by_key, key=str):
        versions = by_key[key]
        newest = versions[0]
        kind = newest["type"]
        if kind in ("request", "response"):
            api_key = int(newest["apiKey"])
            by_api[(api_key, kind)] = versions
        elif kind == "header":
            header_kind = {"RequestHeader": "request", "ResponseHeader": "response"}[newest["name"]]
            headers[header_kind] = build_segments(versions)
        elif kind == "data":
            data[newest["name"]] = build_segments(versions)
        else:
            raise ValueError(f"{newest['name']}: unknown schema type {kind!r}")

    current: dict[int, tuple[int, int]] = {}  # request versions of the newest release
    messages: dict[tuple[int, str], tuple] = {}
    for key in sorted(by_api):
        versions = by_api[key]
        messages[key] = build_segments(versions)
        if key[1] == "request":
            newest = versions[0]
            if newest["_snapshot"] == snapshots[0][0]:
                valid = parse_versions(newest.get("validVersions"))
                if valid is not None:
                    current[key[0]] = valid
            api_names[key[0]] = newest["name"].removesuffix("Request")
            for schema in versions:
                if "listeners" in schema:
                    listeners[key[0]] = tuple(schema["listeners"])
                    break
    return {
        "snapshots": [name for name, _ in snapshots],
        "current": current,
        "api_names": api_names,
        "listeners": listeners,
        "messages": messages,
        "headers": headers,
        "data": data,
        "errors": load_errors(),
    }


# --------------------------------------------------------------------------- writing
# The tables are plain constant data: nested tuples of literals (no names, no calls), which
# CPython folds into the code object's constants, so importing the module unmarshals them from
# the .pyc and runs no per-field code. A table's FieldSpecs are built on first use of each key
# (``Table``). Layout: one field tuple per line (wrapped with a hanging indent only when longer
# than the line length), a struct field's children follow its head line "(..., (" one level
# deeper. This is far more compact than `ruff format`'s one-element-per-line explosion of nested
# tuples, so the tables sit in a "# fmt: off" region (`ruff format --check` leaves them alone).


# a field's tuple: (name, type, versions, children, nullable, tagged, tag, default, entity,
# map_key, flexible) with the trailing ones equal to these defaults left out
FIELD_DEFAULTS = (None, None, None, None, None, None, False, INHERIT)


def literal(value) -> str:
    if value is None or isinstance(value, bool | int):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, tuple):
        if len(value) == 1:
            return f"({literal(value[0])},)"
        return "(" + ", ".join(literal(v) for v in value) + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {type(value).__name__}")


def fill(out: list[str], indent: str, items: list[str], end: str, opening: str = "(") -> None:
    """Write ``opening`` + ``item, item, ..., item`` + ``end`` at ``indent``, wrapping with a
    hanging indent."""
    pieces = [item + ", " for item in items[:-1]] + [items[-1] + end]
    line = indent + opening
    hang = indent + " " * len(opening)
    for piece in pieces:
        if len(line) + len(piece.rstrip()) > LINE_LENGTH and line != indent + opening:
            out.append(line.rstrip())
            line = hang
        line += piece
    out.append(line)


def write_fields(out: list[str], fields: tuple, depth: int) -> None:
    indent = INDENT * depth
    for field in fields:
        name, ftype, versions, *rest, children = field
        tail = [children, *rest]
        while tail and tail[-1] == FIELD_DEFAULTS[len(tail) - 1]:
            tail.pop()
        items = [literal(name), literal(ftype), literal(versions)]
        if not children:  # a primitive (None) or an empty struct (())
            fill(out, indent, items + [literal(v) for v in tail], "),")
            continue
        fill(out, indent, [*items, "("], "")
        write_fields(out, children, depth + 1)
        after = [literal(v) for v in tail[1:]]
        out.append(indent + "), " + ", ".join(after) + ")," if after else indent + ")),")


def write_segments(out: list[str], prefix: str, segments: tuple, depth: int) -> None:
    indent = INDENT * depth
    out.append(f"{indent}{prefix}(")
    for lo, hi, flexible, fields in segments:
        head = f"{indent}{INDENT}({literal(lo)}, {literal(hi)}, {literal(flexible)}, "
        if not fields:
            out.append(head + "()),")
            continue
        out.append(head + "(")
        write_fields(out, fields, depth + 2)
        out.append(f"{indent}{INDENT})),")
    out.append(f"{indent}),")


def write_segment_dict(out: list[str], name: str, key_type: str, table: dict) -> None:
    out.append(f"{name}: Mapping[{key_type}, Segments] = Table({{")
    for key, segments in table.items():
        write_segments(out, f"{literal(key)}: ", segments, 1)
    out.append("})")


def write_enum(out: list[str], name: str, doc: str, members: dict[str, int]) -> None:
    out.append(f"class {name}(IntEnum):")
    out.append(f'{INDENT}"""{doc}"""')
    out.append("")
    out.extend(f"{INDENT}{member} = {value}" for member, value in members.items())


def write_flat_dict(out: list[str], name: str, table: dict) -> None:
    out.append(f"{name} = {{")
    out.extend(f"{INDENT}{literal(k)}: {literal(v)}," for k, v in table.items())
    out.append("}")


HEADER_COMMENT = """\
from __future__ import annotations

from collections.abc import Iterator, Mapping
from enum import IntEnum
from typing import Any, NamedTuple

OPEN = 0x7FFF  # "N+" version ranges end here (written 32767 in the tables)
INHERIT = "inherit"  # FieldSpec.flexible of a field without flexibleVersions of its own

Range = tuple[int, int] | None


class FieldSpec(NamedTuple):
    \"\"\"One field of a schema version segment.\"\"\"

    name: str  # the schema's field name (CamelCase, as in the JSON)
    # primitive type name ("int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "bool",
    # "string", "bytes", "uuid", "records"), "[]<primitive>" for arrays of primitives, or
    # "[]<StructName>" / "<StructName>" for structs
    type: str
    # versions / nullable / tagged: (lo, hi) inclusive with hi=OPEN for "N+", None for "none"/absent
    versions: Range
    nullable: Range = None
    tagged: Range = None
    tag: int | None = None
    default: str | int | bool | None = None  # the schema's "default" value as given
    entity: str | None = None  # the schema's entityType: "topicName", "groupId", "brokerId"...
    map_key: bool = False
    # a field-level "flexibleVersions" override ((lo, hi), or None for "none": RequestHeader's
    # ClientId is never compact), INHERIT when the field has none
    flexible: Range | str = INHERIT
    # None for primitives / arrays of primitives, else the struct's FieldSpecs (commonStructs
    # resolved and inlined); fields that exist in no version of their segment are left out
    children: tuple[FieldSpec, ...] | None = None


# (lo, hi, flexible, fields): versions lo..hi, flexibleVersions (lo, hi) or None, the fields
Segment = tuple[int, int, Range, tuple[FieldSpec, ...]]
Segments = tuple[Segment, ...]

# the tables write a field as a tuple of constants: (name, type, versions, children, nullable,
# tagged, tag, default, entity, map_key, flexible), the trailing ones equal to these left out
_DEFAULTS = (None, None, None, None, None, None, False, INHERIT)


def _field(raw: tuple) -> FieldSpec:
    full = raw + _DEFAULTS[len(raw) - 3 :]
    children = full[3]
    if children is not None:
        children = tuple(map(_field, children))
    return tuple.__new__(FieldSpec, (*full[:3], *full[4:], children))


class Table(Mapping[Any, Segments]):
    \"\"\"A generated table (key -> segments): constant tuples when imported, each key's
    FieldSpecs built on its first look-up.\"\"\"

    __slots__ = ("_built", "_raw")

    def __init__(self, raw: dict) -> None:
        self._raw = raw
        self._built: dict[Any, Segments] = {}

    def __getitem__(self, key: Any) -> Segments:
        segments = self._built.get(key)
        if segments is None:
            segments = tuple(
                (lo, hi, flexible, tuple(map(_field, fields))) for lo, hi, flexible, fields in self._raw[key]
            )
            self._built[key] = segments
        return segments

    def __contains__(self, key: object) -> bool:
        return key in self._raw

    def __iter__(self) -> Iterator[Any]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

"""


def render(model: dict) -> str:
    snaps = " + ".join(sorted(model["snapshots"], key=lambda s: tuple(int(p) for p in s.split("."))))
    docstring = (
        f"Generated by tools/gen_protocol.py from the Apache Kafka message schemas ({snaps}). Do not edit."
    )
    out = [
        f'"""{docstring}"""',
        "",
        HEADER_COMMENT,
        "# fmt: off",
        "",
    ]
    write_enum(
        out,
        "ApiKey",
        "Kafka API keys, named after the schemas' message names (SaslHandshake -> SASL_HANDSHAKE).",
        {upper_snake(name): key for key, name in model["api_names"].items()},
    )
    out += ["", ""]
    write_enum(
        out,
        "ErrorCode",
        "Kafka error codes, named as in analyzer/dissect/errors.py (Kafka's Errors enum).",
        {name: code for code, (name, _) in sorted(model["errors"].items())},
    )
    out += [
        "",
        "",
        "# apiKey -> API name without the Request/Response suffix (newest snapshot's name)",
    ]
    write_flat_dict(out, "API_NAMES", model["api_names"])
    out += ["", "# apiKey -> listeners of the newest snapshot that lists them"]
    write_flat_dict(out, "API_LISTENERS", model["listeners"])
    out += [
        "",
        "# the newest release of the schemas, and the request versions it still accepts (apiKey ->",
        "# (lo, hi)); versions below lo, and APIs missing here, were removed (KIP-896 in Kafka 4.0)",
        f"CURRENT_RELEASE = {literal(model['snapshots'][0])}",
    ]
    write_flat_dict(out, "CURRENT_VERSIONS", model["current"])
    out += [
        "",
        '# MESSAGES[(api_key, "request" | "response")] = segments, newest snapshot first:',
        "#   (lo, hi, flexible, fields): versions lo..hi come from this snapshot (merge rule: the newest",
        "#   snapshot whose validVersions has the version), flexible = flexibleVersions (lo, hi) or None",
    ]
    write_segment_dict(out, "MESSAGES", "tuple[int, str]", model["messages"])
    out += ["", '# HEADERS["request" | "response"] = segments of RequestHeader / ResponseHeader']
    write_segment_dict(out, "HEADERS", "str", model["headers"])
    out += ["", '# DATA[name] = segments of every schema of type "data" (embedded payloads, control records)']
    write_segment_dict(out, "DATA", "str", model["data"])
    out += ["", "# fmt: on"]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- coordinator records
# The internal topic each coordinator writes its records into. The schema files do not say it
# (Kafka keeps them in one source folder per coordinator: group-coordinator, transaction-coordinator,
# share-coordinator); the group coordinator's records (OffsetCommit, GroupMetadata, ConsumerGroup*,
# ShareGroup*) are the default.
COORDINATOR_TOPICS = {
    "TransactionLog": "__transaction_state",
    "ShareSnapshot": "__share_group_state",
    "ShareUpdate": "__share_group_state",
}
GROUP_TOPIC = "__consumer_offsets"


def collect_coordinator(folder: Path) -> dict:
    """Record types per internal topic and the segments of every key and value schema.

    A key schema's record type: its ``apiKey`` when it has one (the "coordinator-key" schemas of
    Kafka 4.x, whose key is then read at version 0), else every version of its ``validVersions``
    (the older "data" schemas, whose key is read at the version that names its type)."""
    schemas: dict[str, dict] = {}
    for path in sorted(folder.glob("*.json")):
        schema = load_schema(path)
        schemas[schema["name"]] = schema
    types: dict[str, dict[int, tuple[str, int]]] = {}
    tables: dict[str, tuple] = {}
    for name in sorted(schemas):
        schema = schemas[name]
        if not name.endswith("Key"):
            continue
        record = name.removesuffix("Key")
        if record + "Value" not in schemas:
            raise ValueError(f"{name}: no {record}Value schema")
        topic = COORDINATOR_TOPICS.get(record, GROUP_TOPIC)
        if "apiKey" in schema:
            numbers = [(int(schema["apiKey"]), 0)]
        else:
            valid = parse_versions(schema.get("validVersions"))
            if valid is None:
                raise ValueError(f"{name}: no validVersions")
            numbers = [(v, v) for v in range(valid[0], valid[1] + 1)]
        for number, key_version in numbers:
            known = types.setdefault(topic, {})
            if number in known:
                raise ValueError(f"{topic}: record type {number} is both {known[number][0]} and {record}")
            known[number] = (record, key_version)
        tables[name] = build_segments([schema])
        tables[record + "Value"] = build_segments([schemas[record + "Value"]])
    strays = sorted(set(schemas) - set(tables))
    if strays:
        raise ValueError(f"coordinator schemas without a key/value pair: {strays}")
    ordered_types = {topic: dict(sorted(types[topic].items())) for topic in sorted(types)}
    return {"types": ordered_types, "schemas": tables}


COORDINATOR_HEADER = """\
from __future__ import annotations

from collections.abc import Mapping

from analyzer.dissect.protocol_table import Segments, Table

"""


def render_coordinator(model: dict) -> str:
    out = [
        '"""Generated by tools/gen_protocol.py from the Apache Kafka coordinator record schemas '
        '(coordinator/). Do not edit."""',
        "",
        COORDINATOR_HEADER,
        "# fmt: off",
        "",
        "# RECORD_TYPES[topic][record type] = (record name, key version): the record type is the int16",
        "# a key starts with; the key's fields are those of <name>Key at the key version, the value's",
        "# (after its own int16 version) those of <name>Value",
        "RECORD_TYPES = {",
    ]
    for topic, known in model["types"].items():
        out.append(f"{INDENT}{literal(topic)}: {{")
        out.extend(f"{INDENT * 2}{n}: {literal(entry)}," for n, entry in known.items())
        out.append(f"{INDENT}}},")
    out += ["}", "", "# SCHEMAS[name] = segments (lo, hi, flexible, fields) of each key and value schema"]
    write_segment_dict(out, "SCHEMAS", "str", model["schemas"])
    out += ["", "# fmt: on"]
    return "\n".join(out) + "\n"


def generate(schemas: Path) -> tuple[str, dict]:
    model = collect(schemas)
    return render(model), model


def summary(model: dict) -> str:
    lines = [f"snapshots: {', '.join(model['snapshots'])}; APIs: {len(model['api_names'])}"]
    for api_key, name in model["api_names"].items():
        segs = model["messages"].get((api_key, "request"), ())
        parts = [f"v{lo}-{hi}" if lo != hi else f"v{lo}" for lo, hi, _, _ in segs]
        if segs:
            rng = f"{min(s[0] for s in segs)}..{max(s[1] for s in segs)}"
        else:
            rng = "none"
        lines.append(f"  {api_key:3d} {name:<34} {rng:<7} segments: {' + '.join(parts) or '-'}")
    lines.append(f"headers: {', '.join(sorted(model['headers']))}; data schemas: {len(model['data'])}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schemas", type=Path, default=DEFAULT_SCHEMAS, help="folder with kafka-X.Y folders")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="module to write")
    parser.add_argument(
        "--coordinator-out",
        type=Path,
        help=f"coordinator records module (default: {COORDINATOR_MODULE} beside --out)",
    )
    parser.add_argument("--quiet", action="store_true", help="do not print the summary")
    args = parser.parse_args(argv)
    text, model = generate(args.schemas)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    if not args.quiet:
        print(summary(model))
        print(f"wrote {args.out} ({len(text.encode())} bytes)")
    folder = args.schemas / "coordinator"
    if folder.is_dir():
        coord = collect_coordinator(folder)
        coord_text = render_coordinator(coord)
        coord_out = args.coordinator_out or args.out.with_name(COORDINATOR_MODULE)
        coord_out.write_text(coord_text, encoding="utf-8")
        if not args.quiet:
            counts = ", ".join(f"{topic}: {len(known)}" for topic, known in coord["types"].items())
            print(f"coordinator record types: {counts}; schemas: {len(coord['schemas'])}")
            print(f"wrote {coord_out} ({len(coord_text.encode())} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
