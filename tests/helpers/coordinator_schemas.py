"""An independent encoder of Kafka's coordinator records, straight from the JSON schemas.

Neither kio nor kafka-python knows the records of ``__consumer_offsets`` and
``__transaction_state`` (OffsetCommitKey/Value, GroupMetadataKey/Value, TransactionLogKey/Value...),
so this module reads ``coordinator/*.json`` of ../shared/kafka-schemas itself (not through
tools/gen_protocol.py or the generated table) and writes records with kio's primitive writers
(``kio.serial.writers``: int16 lengths or compact uvarint ones, tagged-field sections), as Kafka's
generated ``*Key.write`` / ``*Value.write`` do: a key is its int16 record type then the key
schema's fields, a value its int16 version then the value schema's fields.

Values are plain Python: a dict per struct keyed by the schema's field names, lists for arrays,
None for nulls; a tagged field is written when its key is in the dict. :func:`values` gives a
hypothesis strategy of such dicts for a schema version.

``KAFKA_SCHEMAS`` (a folder holding ``coordinator/``) overrides the default location.
"""

from __future__ import annotations

import io
import json
import os
import re
import uuid
from base64 import urlsafe_b64encode
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from kio.serial import writers as w

from analyzer.model import Field
from tests.helpers.captures import ROOT

# where each record type lives (Kafka keeps one source folder per coordinator; the files do not
# say it): the transaction coordinator's and the share coordinator's, the rest the group's
TOPIC_OF = {
    "TransactionLog": "__transaction_state",
    "ShareSnapshot": "__share_group_state",
    "ShareUpdate": "__share_group_state",
}
OPEN = 1 << 15


def coordinator_dir() -> Path:
    base = os.environ.get("KAFKA_SCHEMAS")
    return (Path(base) if base else ROOT.parent / "shared" / "kafka-schemas") / "coordinator"


def available() -> bool:
    return coordinator_dir().is_dir()


def _without_comments(text: str) -> str:
    # the schema files carry comments only as whole "//" lines (the licence header)
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))


@cache
def schemas() -> dict[str, dict]:
    out = {}
    for path in sorted(coordinator_dir().glob("*.json")):
        s = json.loads(_without_comments(path.read_text(encoding="utf-8")))
        out[s["name"]] = s
    return out


def versions(spec: str | None) -> tuple[int, int] | None:
    if spec is None or spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), OPEN
    lo, _, hi = spec.partition("-")
    return int(lo), int(hi or lo)


def has(spec: str | None, v: int) -> bool:
    r = versions(spec)
    return r is not None and r[0] <= v <= r[1]


def field_versions(f: dict) -> str | None:
    return f.get("versions", f.get("taggedVersions"))  # Kafka: versions default to taggedVersions


@cache
def record_types() -> tuple[tuple[str, int, str, int], ...]:
    """(topic, record type, record name, key version) of every key schema and record type."""
    out = []
    for name, s in schemas().items():
        if not name.endswith("Key"):
            continue
        record = name.removesuffix("Key")
        topic = TOPIC_OF.get(record, "__consumer_offsets")
        if "apiKey" in s:
            out.append((topic, int(s["apiKey"]), record, 0))
        else:
            rng = versions(s["validVersions"])
            assert rng is not None
            out += [(topic, v, record, v) for v in range(rng[0], rng[1] + 1)]
    return tuple(sorted(out))


def value_versions(record: str) -> range:
    rng = versions(schemas()[record + "Value"]["validVersions"])
    assert rng is not None
    return range(rng[0], rng[1] + 1)


def struct_fields(f: dict, schema: dict) -> list[dict] | None:
    """The fields of a struct-typed field (inline, or a commonStruct); None for primitives."""
    if "fields" in f:
        return f["fields"]
    base = f["type"].removeprefix("[]")
    for c in schema.get("commonStructs", ()):
        if c["name"] == base:
            return c["fields"]
    return None


# -- encoding -------------------------------------------------------------------------------------


def encode(schema_name: str, version: int, data: dict, lead: int | None = None) -> bytes:
    """int16 ``lead`` (default: ``version``; a key's record type) then the fields of
    ``schema_name`` at ``version``."""
    s = schemas()[schema_name]
    flexible = has(s.get("flexibleVersions"), version)
    buf = io.BytesIO()
    w.write_int16(buf, version if lead is None else lead)
    _struct(buf, s["fields"], s, version, flexible, data)
    return buf.getvalue()


def _struct(buf, fields: list[dict], schema: dict, v: int, flexible: bool, data: dict) -> None:
    tagged = []
    for f in fields:
        if not has(field_versions(f), v):
            continue
        if "tag" in f and has(f.get("taggedVersions"), v):
            if f["name"] in data:
                tagged.append(f)
            continue
        _field(buf, f, schema, v, flexible, data[f["name"]])
    if flexible:
        w.write_unsigned_varint(buf, len(tagged))
        for f in sorted(tagged, key=lambda f: int(f["tag"])):
            inner = io.BytesIO()
            _field(inner, f, schema, v, flexible, data[f["name"]])
            w.write_unsigned_varint(buf, int(f["tag"]))
            w.write_unsigned_varint(buf, len(inner.getvalue()))
            buf.write(inner.getvalue())


_FIXED = {
    "int8": w.write_int8,
    "int16": w.write_int16,
    "uint16": w.write_uint16,
    "int32": w.write_int32,
    "uint32": w.write_uint32,
    "int64": w.write_int64,
    "float64": w.write_float64,
    "bool": w.write_boolean,
}


def _field(buf, f: dict, schema: dict, v: int, flexible: bool, value: Any) -> None:
    assert "flexibleVersions" not in f  # (no coordinator field overrides it)
    ftype: str = f["type"]
    sub = struct_fields(f, schema)
    if ftype.startswith("[]"):
        if value is None:
            (w.write_compact_array_length(buf, None) if flexible else w.write_int32(buf, -1))
            return
        (w.write_compact_array_length(buf, len(value)) if flexible else w.write_int32(buf, len(value)))
        for item in value:
            if sub is not None:
                _struct(buf, sub, schema, v, flexible, item)
            else:
                _primitive(buf, ftype[2:], flexible, item)
        return
    if sub is not None:
        if has(f.get("nullableVersions"), v):
            w.write_int8(buf, -1 if value is None else 1)
            if value is None:
                return
        _struct(buf, sub, schema, v, flexible, value)
        return
    _primitive(buf, ftype, flexible, value)


def _primitive(buf, ftype: str, flexible: bool, value: Any) -> None:
    if ftype in _FIXED:
        _FIXED[ftype](buf, value)
    elif ftype == "uuid":
        w.write_uuid(buf, value)
    elif ftype == "string":
        if flexible:
            w.write_nullable_compact_string(buf, value)
        else:
            w.write_nullable_legacy_string(buf, value)
    elif ftype == "bytes":
        if flexible:
            w.write_nullable_compact_string(buf, value)
        else:
            w.write_nullable_legacy_bytes(buf, value)
    else:
        raise ValueError(f"no writer for {ftype}")


# -- values ---------------------------------------------------------------------------------------

_INTS = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "uint32": (0, (1 << 32) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
}


def _primitive_values(ftype: str) -> st.SearchStrategy:
    if ftype in _INTS:
        return st.integers(*_INTS[ftype])
    if ftype == "float64":
        return st.floats(allow_nan=False)
    if ftype == "bool":
        return st.booleans()
    if ftype == "uuid":
        return st.uuids().map(lambda u: uuid.UUID(bytes=u.bytes))
    if ftype == "string":
        return st.text(max_size=12)
    if ftype == "bytes":
        return st.binary(max_size=12)
    raise ValueError(ftype)


def _field_values(f: dict, schema: dict, v: int) -> st.SearchStrategy:
    ftype: str = f["type"]
    sub = struct_fields(f, schema)
    if ftype.startswith("[]"):
        elem = _struct_values(sub, schema, v) if sub is not None else _primitive_values(ftype[2:])
        base = st.lists(elem, max_size=3)
    elif sub is not None:
        base = _struct_values(sub, schema, v)
    else:
        base = _primitive_values(ftype)
    if has(f.get("nullableVersions"), v) and not ("tag" in f and has(f.get("taggedVersions"), v)):
        return st.none() | base
    return base


def _struct_values(fields: list[dict], schema: dict, v: int) -> st.SearchStrategy:
    required = {}
    optional = {}
    for f in fields:
        if not has(field_versions(f), v):
            continue
        target = optional if "tag" in f and has(f.get("taggedVersions"), v) else required
        target[f["name"]] = _field_values(f, schema, v)
    return st.fixed_dictionaries(required, optional=optional)


def values(schema_name: str, version: int) -> st.SearchStrategy[dict]:
    """Dicts of every field of ``schema_name`` at ``version`` (tagged fields sometimes absent)."""
    s = schemas()[schema_name]
    return _struct_values(s["fields"], s, version)


# -- field for field: a decoded record against what was encoded -----------------------------------

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake(name: str) -> str:
    return _CAMEL.sub("_", name).lower()


def _uuid_text(u) -> str:
    return urlsafe_b64encode(u.bytes).rstrip(b"=").decode()


def check_struct(f: Field, fields: list[dict], schema: dict, v: int, data: dict, path: str) -> None:
    assert f.children is not None, path
    got = {c.name: c for c in f.children}
    assert len(got) == len(f.children), f"{path}: duplicate names"
    expected = []
    for spec in fields:
        if not has(field_versions(spec), v):
            continue
        tagged = "tag" in spec and has(spec.get("taggedVersions"), v)
        if tagged and spec["name"] not in data:
            continue
        name = snake(spec["name"])
        expected.append(name)
        assert name in got, f"{path}.{name} missing"
        check_field(got[name], spec, schema, v, data[spec["name"]], f"{path}.{name}")
    assert sorted(got) == sorted(expected), path
    # spans: contiguous fields inside the struct
    kids = [c for c in f.children]
    for a, b in zip(kids, kids[1:], strict=False):
        assert a.offset + a.length <= b.offset, f"{path}: {a.name} overlaps {b.name}"


def check_field(f: Field, spec: dict, schema: dict, v: int, value: Any, path: str) -> None:
    ftype: str = spec["type"]
    sub = struct_fields(spec, schema)
    if ftype.startswith("[]"):
        if value is None:
            assert f.value is None, path
            return
        assert f.value == len(value), path
        items = f.children or []
        assert len(items) == len(value), path
        for i, (item, expected) in enumerate(zip(items, value, strict=True)):
            if sub is not None:
                check_struct(item, sub, schema, v, expected, f"{path}[{i}]")
            else:
                check_leaf(item, ftype[2:], expected, f"{path}[{i}]")
        return
    if sub is not None:
        if value is None:
            assert f.value is None and not f.children, path
            return
        check_struct(f, sub, schema, v, value, path)
        return
    check_leaf(f, ftype, value, path)


def check_leaf(f: Field, ftype: str, value: Any, path: str) -> None:
    assert f.type == ftype, path
    if ftype == "uuid":
        assert f.value == _uuid_text(value), path
    else:
        assert f.value == value, path


def check_record(rec: Any, record: str, key_version: int, kdata: dict, vv: int | None, vdata) -> None:
    """A decoded CoordinatorRecord against the encoder's input: every field of the key and the
    value (names, values, nulls, array counts, tagged fields); ``vv`` None: a tombstone."""
    all_schemas = schemas()
    kschema = all_schemas[record + "Key"]
    assert rec.name == record
    assert rec.key is not None and rec.key.type == record + "Key"
    assert rec.key.children and rec.key.children[0].name == "version"
    key_rest = Field("key", rec.key.type, None, 0, 0, rec.key.children[1:])
    check_struct(key_rest, kschema["fields"], kschema, key_version, kdata, "key")
    if vv is None:
        assert rec.tombstone and rec.value is None
        return
    vschema = all_schemas[record + "Value"]
    assert rec.value is not None and rec.value_version == vv
    assert rec.value.children and rec.value.children[0].value == vv
    value_rest = Field("value", rec.value.type, None, 0, 0, rec.value.children[1:])
    check_struct(value_rest, vschema["fields"], vschema, vv, vdata, "value")
