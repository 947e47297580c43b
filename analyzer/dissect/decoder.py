"""The one generic, table-driven Kafka message decoder.

Each (api key, request/response, version) entry of the generated protocol table is compiled
once into a *plan*: a tuple of small closures, one per field present in that version, each
reading its bytes and appending a :class:`~analyzer.model.Field` (name in snake_case, type,
value, byte offset and length in the frame payload) to its parent. Flexible versions use the
compact encodings and a tagged-field section at the end of every struct; tagged fields known to
the table are decoded by name, unknown ones are kept as raw bytes with their tag.

Nothing here raises on bad bytes: a fault stops decoding where it happens, the fields decoded so
far stay in the tree, and the fault becomes an :class:`~analyzer.model.Issue` with its offset.
Every length and count is checked against the bytes that remain before anything is allocated.
"""

from __future__ import annotations

import binascii
import re
import struct
from functools import cache, lru_cache

from analyzer.dissect import schema
from analyzer.dissect.apikeys import API_VERSIONS, CONTROLLED_SHUTDOWN
from analyzer.dissect.errors import ERRORS
from analyzer.dissect.protocol_table import INHERIT
from analyzer.issues import (
    DECODE_BAD_COUNT,
    DECODE_BAD_LENGTH,
    DECODE_BAD_UTF8,
    DECODE_BAD_VARINT,
    DECODE_ELEMENT_LIMIT,
    DECODE_TAGGED_SIZE,
    DECODE_TRAILING_BYTES,
    DECODE_TRUNCATED,
    DECODE_UNEXPECTED_NULL,
    DECODE_UNKNOWN_API,
    DECODE_UNKNOWN_ERROR_CODE,
    DECODE_UNSUPPORTED_VERSION,
    IssueKind,
)
from analyzer.model import Field, Issue, LazyField

OPEN = 0x7FFF


class _Stop(Exception):  # noqa: N818 - internal control flow
    """Internal: a budget stopped decoding at ``pos``; its issue is already recorded."""

    def __init__(self, pos: int) -> None:
        super().__init__()
        self.pos = pos


class Fault(Exception):
    """Internal: stops decoding at a malformed or truncated spot (caught in this module)."""

    def __init__(self, kind: IssueKind, message: str, offset: int, field: str | None = None):
        super().__init__(message)
        self.kind = kind  # the issue it becomes
        self.offset = offset
        self.field = field  # the field being decoded, when known


_FIXED = {
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "uint16": struct.Struct(">H"),
    "int32": struct.Struct(">i"),
    "uint32": struct.Struct(">I"),
    "int64": struct.Struct(">q"),
    "float64": struct.Struct(">d"),
}
_i16 = _FIXED["int16"].unpack_from
_i32 = _FIXED["int32"].unpack_from

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


@cache
def snake(name: str) -> str:
    return _CAMEL.sub("_", name).lower()


_URLSAFE = bytes.maketrans(b"+/", b"-_")


def kafka_uuid(raw: bytes) -> str:
    """Kafka's own text form of a Uuid (URL-safe base64, no padding), as its tools print it."""
    # base64.urlsafe_b64encode's own steps, without its two Python calls (a Fetch names every
    # topic by id)
    return binascii.b2a_base64(raw, newline=False).translate(_URLSAFE).rstrip(b"=").decode()


# -- primitive readers: (buf, pos, end) -> (value, new pos); raise Fault ---------------------


def _need(pos: int, n: int, end: int, what: str) -> None:
    if pos + n > end:
        raise Fault(DECODE_TRUNCATED, f"{what}: needs {n} bytes, {max(end - pos, 0)} left", pos, what)


def _short(name: str, ftype: str, size: int, pos: int, end: int) -> Fault:
    return Fault(
        DECODE_TRUNCATED, f"{name} ({ftype}): needs {size} bytes, {max(end - pos, 0)} left", pos, name
    )


def read_uvarint(buf, pos: int, end: int) -> tuple[int, int]:
    shift = 0
    value = 0
    start = pos
    while True:
        if pos >= end:
            raise Fault(DECODE_TRUNCATED, "varint runs past the end", start)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise Fault(DECODE_BAD_VARINT, "varint longer than 10 bytes", start)


def _error_display(v: int) -> str | None:
    e = ERRORS.get(v)
    return e[0] if e else f"UNKNOWN_ERROR_CODE({v})"


# -- plan compilation --------------------------------------------------------------------------


def _in(rng, v: int) -> bool:
    return rng is not None and rng[0] <= v <= rng[1]


class Ctx:
    """What a decode needs besides the bytes: options, where issues go, and the message's
    budgets (array elements left to decode; decompressed bytes left for its records fields,
    None until the first records field)."""

    __slots__ = (
        "issues",
        "errors",
        "records_bodies",
        "records_hook",
        "elements",
        "max_elements",
        "elements_said",
        "records_budget",
    )

    def __init__(self, records_bodies: bool = False, records_hook=None, max_elements: int = 100_000):
        self.issues: list[Issue] = []
        self.errors: list[int] = []  # every non-zero error code met, so front ends need no tree walk
        self.records_bodies = records_bodies
        self.records_hook = records_hook
        self.elements = max_elements
        self.max_elements = max_elements
        self.elements_said = False
        self.records_budget: int | None = None


class ScalarArrayField(LazyField):
    """An array of fixed-size scalars (``[]int32``...) kept compact: the values as one tuple,
    element Fields built only when someone asks for ``children`` (the field tree, a filter),
    exactly as the per-element decoding made them. The export reads ``values`` directly."""

    __slots__ = ("values", "elem", "size", "first")

    def __init__(
        self,
        name: str,
        ftype: str,
        offset: int,
        length: int,
        values: tuple,
        elem: str,
        size: int,
        first: int,
        count: int | None = None,
    ) -> None:
        self.name = name
        self.type = ftype
        # the count on the wire: ``values`` holds fewer when the element budget cut them
        self.value = len(values) if count is None else count
        self.offset = offset
        self.length = length
        self.display = None
        self.children = None
        self.values = values
        self.elem = elem
        self.size = size  # bytes per element; element i is at ``first + i * size``
        self.first = first

    def build_children(self) -> list[Field]:
        e, sz, p = self.elem, self.size, self.first
        return [Field(e, e, v, p + i * sz, sz) for i, v in enumerate(self.values)]


def compile_fields(fields: tuple, version: int, flexible: bool, path: str) -> tuple:
    """Compile the fields present in ``version`` into (ordered readers, tagged readers by tag)."""
    ordered = []
    tagged = {}
    for f in fields:
        if not _in(f.versions, version):
            continue
        name = f.name
        fflex = flexible if f.flexible == INHERIT else _in(f.flexible, version)
        reader = _compile_field(
            snake(name),
            f.type,
            _in(f.nullable, version),
            fflex,
            f.children,
            version,
            flexible,
            f"{path}.{name}",
        )
        if f.tag is not None and _in(f.tagged, version):
            tagged[f.tag] = (snake(name), reader)
        else:
            ordered.append(reader)
    return tuple(ordered), tagged


def _compile_field(name, ftype, nullable, flex, children, version, struct_flex, path):
    if ftype.startswith("[]"):
        elem = ftype[2:]
        if children is not None:
            sub = _compile_struct(children, version, struct_flex, path)
            elem_reader = _struct_reader(elem, sub, struct_flex)
        else:
            elem_reader = _primitive_reader(elem, elem.lower(), False, flex)
            if elem.lower() in _FIXED:
                return _array_reader(
                    name, ftype, elem_reader, nullable, flex, _FIXED[elem.lower()], elem.lower()
                )
        return _array_reader(name, ftype, elem_reader, nullable, flex)
    if children is not None:
        sub = _compile_struct(children, version, struct_flex, path)
        return _named_struct_reader(name, ftype, sub, struct_flex, nullable)
    return _primitive_reader(name, ftype, nullable, flex)


def _compile_struct(fields, version, flexible, path):
    return compile_fields(fields, version, flexible, path)


def _primitive_reader(name: str, ftype: str, nullable: bool, flex: bool):
    """A reader for one primitive field: (buf, pos, end, out, ctx) -> pos."""
    if ftype in _FIXED:
        st = _FIXED[ftype]
        size = st.size
        unpack = st.unpack_from
        if name == "error_code" or name.endswith("_error_code"):

            def read_error(buf, pos, end, out, ctx):
                if pos + size > end:
                    raise _short(name, ftype, size, pos, end)
                v = unpack(buf, pos)[0]
                if v:
                    out.append(Field(name, ftype, v, pos, size, None, _error_display(v)))
                    ctx.errors.append(v)
                    if v not in ERRORS:
                        ctx.issues.append(
                            DECODE_UNKNOWN_ERROR_CODE(
                                f"{name} {v} is not a Kafka error code",
                                pos,
                                name,
                            )
                        )
                else:
                    out.append(Field(name, ftype, v, pos, size))
                return pos + size

            return read_error

        def read_fixed(buf, pos, end, out, ctx):
            if pos + size > end:
                raise _short(name, ftype, size, pos, end)
            out.append(Field(name, ftype, unpack(buf, pos)[0], pos, size))
            return pos + size

        return read_fixed
    if ftype == "bool":

        def read_bool(buf, pos, end, out, ctx):
            _need(pos, 1, end, name)
            out.append(Field(name, "bool", buf[pos] != 0, pos, 1))
            return pos + 1

        return read_bool
    if ftype == "uuid":

        def read_uuid(buf, pos, end, out, ctx):
            _need(pos, 16, end, name)
            out.append(Field(name, "uuid", kafka_uuid(buf[pos : pos + 16]), pos, 16))
            return pos + 16

        return read_uuid
    if ftype in ("string", "bytes", "records"):
        return _varlen_reader(name, ftype, nullable, flex)
    raise ValueError(f"unknown primitive type {ftype!r} for {name}")


def _read_len(buf, pos, end, flex: bool, wide: bool, name: str):
    """Length prefix of field ``name``: compact (uvarint N+1) or int16/int32. Returns (length or
    -1, new pos); a Fault names the field. (The readers read a one-byte compact length
    themselves.)"""
    try:
        if flex:
            n, pos = read_uvarint(buf, pos, end)
            return n - 1, pos
        if wide:
            _need(pos, 4, end, "length")
            return _i32(buf, pos)[0], pos + 4
        _need(pos, 2, end, "length")
        return _i16(buf, pos)[0], pos + 2
    except Fault as exc:
        exc.field = name
        raise


def _varlen_reader(name: str, ftype: str, nullable: bool, flex: bool):
    wide = ftype != "string"
    is_string = ftype == "string"
    is_records = ftype == "records"

    def read_varlen(buf, pos, end, out, ctx):
        start = pos
        if flex and pos < end and buf[pos] < 0x80:  # a one-byte compact length: no call
            n = buf[pos] - 1
            pos += 1
        else:
            n, pos = _read_len(buf, pos, end, flex, wide, name)
        if n < 0:
            if n != -1:
                raise Fault(DECODE_BAD_LENGTH, f"{name}: negative length {n}", start, name)
            f = Field(name, ftype, None, start, pos - start)
            out.append(f)
            if not nullable:
                ctx.issues.append(
                    DECODE_UNEXPECTED_NULL(
                        f"{name} is null but not nullable in this version",
                        start,
                        name,
                    )
                )
            return pos
        if pos + n > end:
            raise Fault(
                DECODE_TRUNCATED, f"{name} ({ftype}): length {n} but {end - pos} bytes left", start, name
            )
        if is_string:
            try:
                v = str(buf[pos : pos + n], "utf-8")  # (bytes or memoryview alike, no copy first)
            except UnicodeDecodeError:
                v = bytes(buf[pos : pos + n]).decode("utf-8", "backslashreplace")
                ctx.issues.append(DECODE_BAD_UTF8(f"{name} is not valid UTF-8", pos, name))
            out.append(Field(name, ftype, v, start, pos + n - start))
        elif is_records:
            f = Field(name, ftype, n, start, pos + n - start, [])
            out.append(f)
            if ctx.records_hook is not None:
                ctx.records_hook(buf, pos, pos + n, f, ctx)
        else:
            out.append(Field(name, ftype, bytes(buf[pos : pos + n]), start, pos + n - start))
        return pos + n

    return read_varlen


_MANY: dict[tuple[str, int], struct.Struct] = {}


def _many(fmt: str, n: int) -> struct.Struct:
    key = (fmt, n)
    st = _MANY.get(key)
    if st is None:
        st = struct.Struct(f">{n}{fmt}")
        if len(_MANY) < 256:
            _MANY[key] = st
    return st


def _element_limit(ctx: Ctx, name: str, n: int, start: int) -> None:
    """Say once per message that an array of ``n`` elements outruns the element budget."""
    if not ctx.elements_said:
        ctx.elements_said = True
        ctx.issues.append(
            DECODE_ELEMENT_LIMIT(
                f"{name}: {n} elements, {max(ctx.elements, 0)} left of the message's budget of"
                f" {ctx.max_elements} (max_elements; raise it with --max-elements): decoding stops"
                " when it is spent",
                start,
                name,
            )
        )


def _array_reader(name, ftype, elem_reader, nullable: bool, flex: bool, scalar=None, elem: str = ""):
    fmt = scalar.format[-1] if scalar is not None else ""
    esize = scalar.size if scalar is not None else 0

    def read_array(buf, pos, end, out, ctx):
        start = pos
        if flex and pos < end and buf[pos] < 0x80:  # a one-byte compact count: no call
            n = buf[pos] - 1
            pos += 1
        else:
            n, pos = _read_len(buf, pos, end, flex, True, name)
        if n < 0:
            if n != -1:
                raise Fault(DECODE_BAD_LENGTH, f"{name}: negative array count {n}", start, name)
            out.append(Field(name, ftype, None, start, pos - start))
            if not nullable:
                ctx.issues.append(
                    DECODE_UNEXPECTED_NULL(
                        f"{name} is null but not nullable in this version",
                        start,
                        name,
                    )
                )
            return pos
        # every element takes at least one byte: a hostile count costs nothing
        if n > end - pos:
            raise Fault(
                DECODE_BAD_COUNT,
                f"{name}: {n} elements cannot fit in the {end - pos} bytes left",
                start,
                name,
            )
        if scalar is not None:
            if pos + n * esize > end:
                raise Fault(
                    DECODE_TRUNCATED,
                    f"{name} ({ftype}): {n} elements need {n * esize} bytes, {end - pos} left",
                    start,
                    name,
                )
            # compact: one unpack, element Fields only on demand; each element spends the
            # budget as a struct's does (consumers may build its element Fields): past it, the
            # values kept are cut (said once) and decoding goes on after the array's bytes
            keep = n
            if n > ctx.elements:
                keep = max(ctx.elements, 0)
                _element_limit(ctx, name, n, start)
            ctx.elements -= keep
            values = _many(fmt, keep).unpack_from(buf, pos) if keep else ()
            out.append(
                ScalarArrayField(name, ftype, start, pos + n * esize - start, values, elem, esize, pos, n)
            )
            return pos + n * esize
        items: list[Field] = []
        f = Field(name, ftype, n, start, 0, items)
        out.append(f)
        if n <= ctx.elements:
            ctx.elements -= n
            try:
                for _ in range(n):
                    pos = elem_reader(buf, pos, end, items, ctx)
            finally:
                f.length = pos - start
            return pos
        _element_limit(ctx, name, n, start)
        try:  # element by element (nested arrays spend the budget too), then stop
            for _ in range(n):
                if ctx.elements <= 0:
                    raise _Stop(pos)
                ctx.elements -= 1
                pos = elem_reader(buf, pos, end, items, ctx)
        finally:
            f.length = pos - start
        return pos

    return read_array


def _run_struct(sub, flex, buf, pos, end, children, ctx):
    ordered, tagged = sub
    for r in ordered:
        pos = r(buf, pos, end, children, ctx)
    if flex:
        if pos < end and not buf[pos]:  # no tagged fields (one 0 byte), the usual case: no call
            return pos + 1
        pos = _read_tagged(tagged, buf, pos, end, children, ctx)
    return pos


def _struct_reader(type_name: str, sub, flex: bool):
    ename = snake(type_name)
    ordered, tagged = sub

    def read_elem(buf, pos, end, out, ctx):
        # _run_struct inlined: one call less per element of every struct array
        children: list[Field] = []
        f = Field(ename, type_name, None, pos, 0, children)
        out.append(f)
        start = p = pos
        try:
            for r in ordered:
                p = r(buf, p, end, children, ctx)
            if flex:
                if p < end and not buf[p]:  # no tagged fields: no call
                    p += 1
                else:
                    p = _read_tagged(tagged, buf, p, end, children, ctx)
            pos = p  # (a fault leaves the element's length 0, as _run_struct did)
        finally:
            f.length = pos - start
        return pos

    return read_elem


def _named_struct_reader(name, type_name, sub, flex, nullable):
    def read_struct(buf, pos, end, out, ctx):
        start = pos
        if nullable:
            _need(pos, 1, end, name)
            if buf[pos] == 0xFF:
                out.append(Field(name, type_name, None, start, 1))
                return pos + 1
            pos += 1
        children: list[Field] = []
        f = Field(name, type_name, None, start, 0, children)
        out.append(f)
        try:
            pos = _run_struct(sub, flex, buf, pos, end, children, ctx)
        finally:
            f.length = pos - start
        return pos

    return read_struct


def _read_tagged(tagged: dict, buf, pos, end, out, ctx) -> int:
    start = pos
    count, pos = read_uvarint(buf, pos, end)
    if count > end - pos:
        raise Fault(DECODE_BAD_COUNT, f"{count} tagged fields cannot fit in {end - pos} bytes", start)
    for _ in range(count):
        tstart = pos
        tag, pos = read_uvarint(buf, pos, end)
        size, pos = read_uvarint(buf, pos, end)
        if pos + size > end:
            raise Fault(
                DECODE_TRUNCATED, f"tagged field {tag}: size {size} but {end - pos} bytes left", tstart
            )
        known = tagged.get(tag)
        if known is None:
            out.append(
                Field(
                    f"tag_{tag}", "unknown_tagged", bytes(buf[pos : pos + size]), tstart, pos + size - tstart
                )
            )
        else:
            name, reader = known
            sub_out: list[Field] = []
            try:
                used = reader(buf, pos, pos + size, sub_out, ctx)
            except Fault as exc:
                ctx.issues.append(exc.kind(f"tagged field {name} (tag {tag}): {exc}", exc.offset, name))
                used = pos + size
            out.extend(sub_out)
            if used != pos + size:
                ctx.issues.append(
                    DECODE_TAGGED_SIZE(
                        f"tagged field {name} (tag {tag}) has {pos + size - used} unread bytes",
                        used,
                        name,
                    )
                )
        pos += size
    return pos


@lru_cache(maxsize=4096)
def message_plan(api_key: int, kind: str, version: int):
    """Compiled readers of one message body version, or None if the table does not know it."""
    got = schema.message_fields(api_key, kind, version)
    if got is None:
        return None
    fields, flexible = got
    return compile_fields(fields, version, flexible, kind), flexible


@lru_cache(maxsize=64)
def header_plan(kind: str, header_version: int):
    got = schema.header_fields(kind, header_version)
    if got is None:
        return None
    fields, flexible = got
    return compile_fields(fields, header_version, flexible, kind + "_header"), flexible


@lru_cache(maxsize=256)
def data_plan(name: str, version: int):
    got = schema.data_fields(name, version)
    if got is None:
        return None
    fields, flexible = got
    return compile_fields(fields, version, flexible, name), flexible


@lru_cache(maxsize=256)
def coordinator_plan(name: str, version: int):
    """Compiled readers of a coordinator record key or value schema (``OffsetCommitKey``...) at
    ``version``, or None if the table does not know it."""
    got = schema.coordinator_fields(name, version)
    if got is None:
        return None
    fields, flexible = got
    return compile_fields(fields, version, flexible, name), flexible


def decode_struct(plan, buf, pos: int, end: int, name: str, type_name: str, ctx: Ctx) -> tuple[Field, int]:
    """Decode a compiled plan at ``pos``; on a fault the partial tree is kept and the issue
    recorded. Returns the struct Field and the position where decoding stopped."""
    sub, flex = plan
    children: list[Field] = []
    f = Field(name, type_name, None, pos, 0, children)
    start = pos
    try:
        pos = _run_struct(sub, flex, buf, pos, end, children, ctx)
    except Fault as exc:
        where = _path_at(f, exc.offset)
        if exc.field is not None and not where.endswith("." + exc.field):
            where += "." + exc.field
        ctx.issues.append(exc.kind(str(exc), exc.offset, where))
        f.length = max(exc.offset, start) - start
        return f, -1
    except _Stop as stop:  # a budget: its issue is recorded, the rest is not decoded
        f.length = stop.pos - start
        return f, -1
    f.length = pos - start
    return f, pos


def _path_at(root: Field, offset: int) -> str:
    """The dotted path of the deepest struct or array that was being decoded at ``offset``."""
    path = [root.name]
    node = root
    while node.children:
        last = node.children[-1]
        if last.children is None or not last.offset <= offset <= last.offset + last.length:
            break
        path.append(last.name)
        node = last
    return ".".join(path)


# -- messages ----------------------------------------------------------------------------------


def request_header_version(api_key: int, api_version: int) -> int:
    got = schema.message_fields(api_key, "request", api_version)
    if got is not None and got[1]:
        return 2
    if api_key == CONTROLLED_SHUTDOWN and api_version == 0:  # v0 had no client id
        return 0
    return 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == API_VERSIONS:  # responses always use header v0 (KIP-511)
        return 0
    got = schema.message_fields(api_key, "response", api_version)
    return 1 if got is not None and got[1] else 0


def peek_request(payload) -> tuple[int, int, int] | None:
    """(api_key, api_version, correlation_id) of a request frame payload, or None if too short."""
    if len(payload) < 8:
        return None
    return struct.unpack_from(">hhi", payload, 0)


def decode_header(payload, kind: str, header_version: int, ctx: Ctx) -> tuple[Field, int]:
    plan = header_plan(kind, header_version)
    return decode_struct(plan, payload, 0, len(payload), f"{kind}_header", f"{kind.capitalize()}Header", ctx)


def decode_body(payload, pos: int, api_key: int, kind: str, version: int, ctx: Ctx) -> Field | None:
    """Decode a message body from ``pos`` to the end of the payload; None if unknown."""
    plan = message_plan(api_key, kind, version)
    name = schema.api_name(api_key) or f"Api{api_key}"
    if plan is None:
        rng = schema.version_range(api_key)
        if rng is None:
            ctx.issues.append(DECODE_UNKNOWN_API(f"unknown api key {api_key}", pos))
        else:
            ctx.issues.append(
                DECODE_UNSUPPORTED_VERSION(
                    f"{name} {kind} v{version} is outside the known versions v{rng[0]}-v{rng[1]}",
                    pos,
                )
            )
        return None
    end = len(payload)
    body, stop = decode_struct(
        plan, payload, pos, end, snake(name) + "_" + kind, f"{name}{kind.capitalize()}", ctx
    )
    if stop != -1 and stop < end:
        ctx.issues.append(
            DECODE_TRAILING_BYTES(
                f"{end - stop} bytes after the end of the {name} {kind} v{version}",
                stop,
            )
        )
    return body


__all__ = [
    "Ctx",
    "Fault",
    "compile_fields",
    "coordinator_plan",
    "decode_body",
    "decode_header",
    "decode_struct",
    "data_plan",
    "kafka_uuid",
    "message_plan",
    "peek_request",
    "read_uvarint",
    "request_header_version",
    "response_header_version",
    "snake",
]
