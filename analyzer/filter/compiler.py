"""Display filters compiled into Python closures over :class:`~analyzer.model.Exchange`.

Names are resolved and literals checked against the field's type once, when the filter is
compiled (unknown names get the nearest valid ones as suggestions); evaluating the filter on an
exchange only calls the closures. A field with several values (an array element, every topic of
an exchange, every record) matches when ANY value matches; ``all(FIELD OP VALUE)`` needs every
value to match (and at least one value). ``a != b`` is ``not (a == b)``, as in Wireshark 4.
"""

from __future__ import annotations

import difflib
import ipaddress
import re
from collections.abc import Callable
from typing import Any

from analyzer.dissect.constants import ApiKey
from analyzer.dissect.errors import CODES, ERRORS
from analyzer.dissect.protocol_table import API_NAMES
from analyzer.dissect.records_view import RecordsField
from analyzer.filter import client_fields as CF
from analyzer.filter import fields as F
from analyzer.filter import producer_fields as PF
from analyzer.filter.syntax import (
    Address,
    BoolOp,
    Compare,
    Exists,
    FieldRef,
    FilterError,
    Literal,
    Not,
    parse,
)
from analyzer.filter.wireshark import native_name
from analyzer.issues import PAIRING_ACKS0
from analyzer.model import Endpoint, Exchange, Field, Severity

Pred = Callable[[Exchange], bool]

_RELOPS = ("==", "!=", "<", "<=", ">", ">=")
_ORDERED = ("<", "<=", ">", ">=")


class Filter:
    """A compiled display filter: call it with an exchange.

    ``needs_records``: the filter reads record bodies (keys, values, headers): decode with
    ``Options(records_bodies=True)``. ``needs_trees``: it reads decoded fields (an exchange whose
    trees were dropped must be decoded again). ``knowledge``: the run's
    :class:`~analyzer.session.knowledge.Knowledge`, for ``software``.
    """

    __slots__ = ("text", "_pred", "needs_records", "needs_trees", "knowledge", "fields")

    def __init__(self, text: str, pred: Pred, needs_records: bool, needs_trees: bool, names: list[str]):
        self.text = text
        self._pred = pred
        self.needs_records = needs_records
        self.needs_trees = needs_trees
        self.knowledge = None
        self.fields = names

    def __call__(self, ex: Exchange) -> bool:
        return self._pred(ex)

    def __repr__(self) -> str:
        return f"Filter({self.text!r})"


def compile_filter(text: str) -> Filter:
    """Compile ``text``; raises :class:`FilterError` (with the position) when it is not valid."""
    tree = parse(text)
    c = _Compiler()
    flt = Filter(text, lambda ex: False, False, False, [])
    c.flt = flt
    flt._pred = c.node(tree)
    flt.needs_records = c.needs_records
    flt.needs_trees = c.needs_trees
    flt.fields = sorted(c.names)
    return flt


def validate(text: str) -> FilterError | None:
    """None when ``text`` compiles, else the error."""
    try:
        compile_filter(text)
    except FilterError as exc:
        return exc
    return None


# -- values of the exchange-level fields -----------------------------------------------------------


def _client(ex: Exchange) -> Endpoint:
    c = ex.conn
    return c.client if c.client_direction is not None else c.a


def _broker(ex: Exchange) -> Endpoint:
    c = ex.conn
    return c.broker if c.client_direction is not None else c.b


def _latency_ms(ex: Exchange) -> float | None:
    lat = ex.latency
    return None if lat is None else lat * 1000.0


def _errors(ex: Exchange) -> list[int]:
    r = ex.response
    return r.errors if r is not None else []


def _partitions(ex: Exchange) -> list[int]:
    return [p for ps in ex.topics.values() for p in ps]


def _req_bytes(ex: Exchange) -> int | None:
    return ex.request.frame.length + 4 if ex.request is not None else None


def _resp_bytes(ex: Exchange) -> int | None:
    return ex.response.frame.length + 4 if ex.response is not None else None


def _issues(ex: Exchange) -> list[str]:
    return [i.code for i in ex.all_issues()]


def _severity(ex: Exchange) -> int | None:
    s = None
    for i in ex.all_issues():
        if s is None or i.severity > s:
            s = i.severity
    return None if s is None else int(s)


def _groups(ex: Exchange) -> list[str]:
    req = ex.request
    out: list[str] = []
    if req is None or req.body is None:
        return out
    stack = [req.body]
    while stack:
        f = stack.pop()
        if f.name == "group_id" and f.type == "string" and f.value is not None:
            out.append(f.value)
        elif f.name == "groups" and f.type == "[]string" and f.children:
            out.extend(c.value for c in f.children if c.value is not None)
        elif f.children and f.type != "records":  # never into record batches
            stack.extend(reversed(f.children))
    return out


# the group APIs whose members, instances and generations group.* fields read
_MEMBER_APIS = frozenset(
    (
        ApiKey.JOIN_GROUP,
        ApiKey.SYNC_GROUP,
        ApiKey.HEARTBEAT,
        ApiKey.LEAVE_GROUP,
        ApiKey.OFFSET_COMMIT,
        ApiKey.OFFSET_FETCH,
        ApiKey.TXN_OFFSET_COMMIT,
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        ApiKey.SHARE_GROUP_HEARTBEAT,
        ApiKey.STREAMS_GROUP_HEARTBEAT,
    )
)
_MEMBER_NAMES = frozenset(("member_id",))
_INSTANCE_NAMES = frozenset(("group_instance_id", "instance_id"))
_GENERATION_NAMES = frozenset(("generation_id", "generation_id_or_member_epoch", "member_epoch"))


def _named(body: Field | None, names: frozenset[str], skip: str = "") -> list:
    """The values of the fields called one of ``names`` anywhere in ``body`` (not in record
    batches, nor in the array called ``skip``)."""
    out: list = []
    stack = [body] if body is not None else []
    while stack:
        f = stack.pop()
        if f.name in names and f.value is not None and not f.children:
            out.append(f.value)
        elif f.children and f.type != "records" and f.name != skip:
            stack.extend(reversed(f.children))
    return out


def _top(body: Field | None, names: frozenset[str]) -> list:
    """The values of the top-level fields called one of ``names``."""
    if body is None:
        return []
    return [f.value for f in body.children or () if f.name in names and f.value is not None]


def _group_ids(ex: Exchange) -> list[str]:
    """``group``'s values, and a FindCoordinator's group keys (key type 0, or v0's key)."""
    out = _groups(ex)
    req = ex.request
    body = req.body if req is not None and ex.api_key == ApiKey.FIND_COORDINATOR else None
    if body is not None and (body.get("key_type") or 0) == 0:
        key = body.get("key")
        if isinstance(key, str):
            out.append(key)
        out.extend(c.value for c in body.elements("coordinator_keys") if isinstance(c.value, str))
    return out


def _member_ids(ex: Exchange) -> list[str]:
    """The members a group exchange is about: the request's (LeaveGroup's members too; not the
    leader's SyncGroup assignments of everyone), the id a JoinGroup or heartbeat answer gives."""
    if ex.api_key not in _MEMBER_APIS:
        return []
    req, resp = ex.request, ex.response
    out = _named(req.body if req is not None else None, _MEMBER_NAMES, skip="assignments")
    out += _top(resp.body if resp is not None else None, _MEMBER_NAMES)
    return [m for m in dict.fromkeys(out) if m]


def _instance_ids(ex: Exchange) -> list[str]:
    if ex.api_key not in _MEMBER_APIS or ex.request is None:
        return []
    return list(dict.fromkeys(_named(ex.request.body, _INSTANCE_NAMES)))


def _generations(ex: Exchange) -> list[int]:
    """The generation (classic) or member epoch (KIP-848) a group exchange names: the request's,
    and the one its answer gives (a JoinGroup's new generation, a heartbeat's new epoch)."""
    if ex.api_key not in _MEMBER_APIS:
        return []
    req, resp = ex.request, ex.response
    out = _named(req.body if req is not None else None, _GENERATION_NAMES)
    out += _top(resp.body if resp is not None else None, _GENERATION_NAMES)
    return list(dict.fromkeys(out))


def _unanswered(ex: Exchange) -> bool:
    req = ex.request
    if req is None or ex.response is not None or req.api_key is None:
        return False
    if req.api_key == ApiKey.PRODUCE and req.body is not None and req.body.get("acks") == 0:
        return False
    return not any(i.code == PAIRING_ACKS0.code for i in ex.issues)


def _records_fields(body: Field | None) -> list[Field]:
    """The ``records`` fields of a body: topic -> partition -> records (Produce, Fetch, ShareFetch)."""
    out: list[Field] = []
    if body is None:
        return out
    for arr in body.children or ():
        if not arr.type.startswith("[]") or not arr.children:
            continue
        for t in arr.children:
            for parts in t.children or ():
                if not parts.type.startswith("[]") or not parts.children:
                    continue
                for p in parts.children:
                    for x in p.children or ():
                        if x.type == "records" and x.children:
                            out.append(x)
    return out


def _batches(ex: Exchange) -> list[dict]:
    out = []
    for m in (ex.request, ex.response):
        if m is not None and m.body is not None and m.api_key in _RECORD_APIS:
            for rf in _records_fields(m.body):
                for b in rf.children or ():  # _records_fields keeps fields with children
                    if isinstance(b.value, dict):
                        out.append(b.value)
    return out


_RECORD_APIS = frozenset((0, 1, 78))  # Produce, Fetch, ShareFetch


# what a record yields for each records.* field that needs record bodies: from the rows of the
# records parser (no record Field is built), or from the Field of a malformed or control record
_ROW_PICK = {
    "key": lambda buf, bo, bts, row: None if row[8] < 0 else buf[row[8] : row[9]],
    "value": lambda buf, bo, bts, row: None if row[10] < 0 else buf[row[10] : row[11]],
    "offset": lambda buf, bo, bts, row: bo + row[6],
    "timestamp": lambda buf, bo, bts, row: None if bts is None else bts + row[4],
}
_FIELD_PICK = {
    "key": lambda rec, bo, bts: rec.get("key"),
    "value": lambda rec, bo, bts: rec.get("value"),
    "offset": lambda rec, bo, bts: (
        None if bo is None or rec.get("offset_delta") is None else bo + rec.get("offset_delta")
    ),
    "timestamp": lambda rec, bo, bts: (
        None if bts is None or rec.get("timestamp_delta") is None else bts + rec.get("timestamp_delta")
    ),
}


def _field_headers(rec: Field, what: str, out: list) -> None:
    hdrs = rec.child("headers")
    for h in hdrs.children or () if hdrs is not None else ():
        v = h.get(what)
        if v is not None:
            out.append(v)


def _v2_values(c: Field, bo, bts, what: str, out: list) -> None:
    """``what`` of every record under a batch's child ``c`` (its records, or its decompressed data)."""
    if c.name == "decompressed":
        for x in c.children or ():
            _v2_values(x, bo, bts, what, out)
        return
    if c.name != "records":
        return
    if type(c) is RecordsField and not c.batch[3] & 0x20:  # a RecordsField (not control records): its rows
        buf = c.buf
        kids: list[Field] | None = None
        header = what.startswith("headers.")
        pick = _ROW_PICK["key"] if header else _ROW_PICK[what]  # (not called for headers)
        for i, row in enumerate(c.rows):
            if not row[15]:  # malformed: whatever of it parsed, as its Field
                if kids is None:
                    kids = c.children
                _record_field_values(kids[i], bo, bts, what, out)
            elif header:
                if what == "headers.key":
                    out.extend(buf[h[1] : h[2]].decode("utf-8", "replace") for h in row[14])
                else:
                    out.extend(buf[h[3] : h[4]] for h in row[14] if h[3] >= 0)
            else:
                v = pick(buf, bo, bts, row)
                if v is not None:
                    out.append(v)
        return
    for rec in c.children or ():
        if rec.name == "record":
            _record_field_values(rec, bo, bts, what, out)


def _record_field_values(rec: Field, bo, bts, what: str, out: list) -> None:
    if what.startswith("headers."):
        _field_headers(rec, what[len("headers.") :], out)
        return
    v = _FIELD_PICK[what](rec, bo, bts)
    if v is not None:
        out.append(v)


def _entry_values(entry: Field, what: str, out: list) -> None:
    """``what`` of the records of one entry of a records field (a v2 batch or a legacy message)."""
    if entry.name == "record_batch":
        bo, bts = entry.get("base_offset"), entry.get("base_timestamp")
        for c in entry.children or ():
            _v2_values(c, bo, bts, what, out)
    elif entry.name == "message":
        dec = entry.child("decompressed")
        if dec is not None:
            for inner in dec.children or ():
                _entry_values(inner, what, out)
            return
        if what.startswith("headers."):
            return  # legacy messages have no headers
        if what == "offset":
            v = entry.get("absolute_offset", entry.get("offset"))
        else:
            v = entry.get(what)
        if v is not None:
            out.append(v)


def _record_getter(what: str):
    def get(ex: Exchange) -> list:
        out: list = []
        for m in (ex.request, ex.response):
            if m is not None and m.body is not None and m.api_key in _RECORD_APIS:
                for rf in _records_fields(m.body):
                    for entry in rf.children or ():  # _records_fields keeps fields with children
                        _entry_values(entry, what, out)
        return out

    return get


def _text(b) -> str:
    return bytes(b).decode("utf-8", "surrogateescape")


def _summary_getter(key: str, default=None):
    def get(ex: Exchange) -> list:
        return [v for v in (b.get(key, default) for b in _batches(ex)) if v is not None]

    return get


# -- decoded fields --------------------------------------------------------------------------------


def _leaf(c: Field, out: list) -> None:
    t = c.type
    if t.startswith("[]"):
        if c.value is None:
            return
        ch = c.children or ()
        if t[2:3].islower():  # array of primitives: its elements
            out.extend(e.value for e in ch if e.value is not None)
        else:
            out.append(True)
        return
    if t == "records" or t[:1].isupper():  # records, or a struct (CamelCase type names)
        out.append(True)
        return
    v = c.value  # a primitive (bytes with an embedded protocol below them keep their raw value)
    if v is not None:
        out.append(v)


def _collect(node: Field, comps: tuple[str, ...], i: int, out: list) -> None:
    name = comps[i]
    for c in node.children or ():
        if c.name != name:
            continue
        if i == len(comps) - 1:
            _leaf(c, out)
        elif c.type.startswith("[]"):
            for el in c.children or ():
                _collect(el, comps, i + 1, out)
        elif c.children:
            _collect(c, comps, i + 1, out)
        return


def _decoded_getter(by_key: dict[int, list[tuple[tuple[str, ...], bool, bool]]]):
    """Values of decoded paths: api key -> [(path, in request, in response)]."""

    def get(ex: Exchange) -> list:
        # the API first (the request's, else the response's): an exchange of another API is
        # not looked into (a front end that decodes on demand, the TUI, decodes it not at all)
        key = ex.api_key
        if key is None:  # (no key: no paths, as by_key has int keys only)
            return []
        paths = by_key.get(key)
        if not paths:
            return []
        out: list = []
        req, resp = ex.request, ex.response
        for comps, in_req, in_resp in paths:
            if in_req and req is not None and req.body is not None:
                _collect(req.body, comps, 0, out)
            if in_resp and resp is not None and resp.body is not None:
                _collect(resp.body, comps, 0, out)
        return out

    return get


# -- the compiler ----------------------------------------------------------------------------------


class _Resolved:
    __slots__ = ("name", "type", "get", "many", "decoded", "truth", "error_code")

    def __init__(self, name, type_, get, many, decoded=False, truth=False, error_code=False):
        self.name = name
        self.type = type_
        self.get = get
        self.many = many
        self.decoded = decoded
        self.truth = truth  # a bare mention tests the value's truth (bool exchange/records fields)
        self.error_code = error_code  # a decoded *error_code field: error names are accepted


_EXCHANGE_GETTERS: dict[str, Callable] = {
    "api": lambda ex: ex.api_key,
    "version": lambda ex: ex.api_version,
    "corr": lambda ex: ex.correlation_id,
    "client_id": lambda ex: ex.client_id,
    "client": _client,
    "broker": _broker,
    "conn": lambda ex: ex.conn.id,
    "latency": _latency_ms,
    "latency_ms": _latency_ms,
    "error": _errors,
    "topic": lambda ex: list(ex.topics),
    "partition": _partitions,
    "request_bytes": _req_bytes,
    "response_bytes": _resp_bytes,
    "issue": _issues,
    "severity": _severity,
    "group": _groups,
    "group.id": _group_ids,
    "group.member_id": _member_ids,
    "group.instance_id": _instance_ids,
    "group.generation": _generations,
    "producer.id": PF.producer_ids,
    "producer.epoch": PF.producer_epochs,
    "producer.sequence": PF.producer_sequences,
    "producer.transactional_id": PF.transactional_ids,
    "txn.id": PF.txn_ids,
    "txn.committed": PF.txn_committed,
    "unanswered": _unanswered,
    "client.removed": CF.removed,
    "client.all_topics": CF.metadata_all_topics,
}
# the client software the run knows: name and version (None), name (0), version (1)
_SOFTWARE = {"software": None, "client.software": 0, "client.software_version": 1}
_TREE_FIELDS = frozenset(
    (
        "group",
        "group.id",
        "group.member_id",
        "group.instance_id",
        "group.generation",
        "producer.id",
        "producer.epoch",
        "producer.sequence",
        "producer.transactional_id",
        "txn.id",
        "txn.committed",
        "unanswered",
        "client.all_topics",
    )
)

_SEVERITIES = {str(s): int(s) for s in Severity}


def _suggest(word: str, names) -> str:
    close = difflib.get_close_matches(word, list(names), n=3, cutoff=0.6)
    return f"; did you mean {', '.join(close)}?" if close else ""


class _Compiler:
    def __init__(self) -> None:
        self.needs_records = False
        self.needs_trees = False
        self.names: set[str] = set()
        self.flt: Filter | None = None

    # nodes --------------------------------------------------------------------------------------------
    def node(self, n) -> Pred:
        if isinstance(n, BoolOp):
            # a chain of the same operator is one flat list (no recursion, however long)
            operands, stack = [], [n]
            while stack:
                x = stack.pop()
                if isinstance(x, BoolOp) and x.op == n.op:
                    stack += (x.right, x.left)
                else:
                    operands.append(x)
            # the operands that read no decoded field first (and/or are commutative: filters
            # have no side effects), so that a front end decoding on demand (the TUI) decodes
            # only the exchanges the cheap operands did not decide
            costed = []
            for x in operands:
                outer, self.needs_trees = self.needs_trees, False
                p = self.node(x)
                costed.append((self.needs_trees, p))
                self.needs_trees = outer or self.needs_trees
            preds = [p for _, p in sorted(costed, key=lambda c: c[0])]
            if len(preds) == 2:
                a, b = preds
                if n.op == "and":
                    return lambda ex: a(ex) and b(ex)
                return lambda ex: a(ex) or b(ex)
            if n.op == "and":
                return lambda ex: all(p(ex) for p in preds)
            return lambda ex: any(p(ex) for p in preds)
        if isinstance(n, Not):
            a = self.node(n.expr)
            return lambda ex: not a(ex)
        if isinstance(n, Exists):
            return self.exists(n.field)
        return self.compare(n)

    def exists(self, ref: FieldRef) -> Pred:
        r = self.resolve(ref)
        get = r.get
        if r.truth:
            if r.many:
                return lambda ex: any(get(ex))
            return lambda ex: bool(get(ex))
        if r.many:
            return lambda ex: bool(get(ex))
        return lambda ex: get(ex) is not None

    def compare(self, n: Compare) -> Pred:
        r = self.resolve(n.field)
        op = n.op
        if r.type in (F.STRUCT, F.RECORDS):
            raise FilterError(
                f"{n.field.path} is a structure: test that it exists, or compare one of its fields",
                n.field.pos,
                n.field.end,
            )
        if op in _ORDERED and r.type in (F.BOOL, F.ADDRESS, F.ERROR):
            raise FilterError(f"{op} does not apply to {n.field.path} ({r.type})", n.field.pos, n.end)
        if op in ("contains", "matches") and r.type not in (F.STRING, F.BYTES, F.ADDRESS):
            raise FilterError(
                f"{op} applies to text and bytes; {n.field.path} is {_a(r.type)}", n.field.pos, n.end
            )
        negate = op == "!=" and not n.every  # not (a == b); inside all(): every value differs
        elem = self.element_pred(r, "==" if negate else op, n)
        get = r.get
        if r.many:
            if n.every:

                def p(ex, get=get, elem=elem):
                    vs = get(ex)
                    return bool(vs) and all(elem(v) for v in vs)
            else:

                def p(ex, get=get, elem=elem):
                    return any(elem(v) for v in get(ex))
        else:

            def p(ex, get=get, elem=elem):
                v = get(ex)
                return v is not None and elem(v)

        if negate:
            q = p
            return lambda ex: not q(ex)
        return p

    # one value against the literal(s) -----------------------------------------------------------------
    def element_pred(self, r: _Resolved, op: str, n: Compare) -> Callable[[Any], bool]:
        t = r.type
        lits = n.values
        if op == "matches":
            lit = lits[0]
            if lit.kind not in ("string", "word"):
                raise FilterError("matches needs a regular expression in a string", lit.pos, lit.end)
            try:
                rx = re.compile(lit.value)
            except re.error as exc:
                pos = lit.pos + 1 + (exc.pos or 0) if lit.kind == "string" else lit.pos
                raise FilterError(f"bad regular expression: {exc.msg}", pos, lit.end) from None
            search = rx.search
            if t == F.BYTES:
                return lambda v: search(_text(v)) is not None
            if t == F.ADDRESS:
                return lambda v: search(str(v)) is not None
            return lambda v: search(v) is not None
        if op == "contains":
            lit = lits[0]
            if lit.kind not in ("string", "word"):
                raise FilterError(f"contains needs a string, found {lit.text}", lit.pos, lit.end)
            s = lit.value
            if t == F.BYTES:
                b = s.encode("utf-8")
                return lambda v: b in v
            if t == F.ADDRESS:
                return lambda v: s in str(v)
            return lambda v: s in v
        if t == F.ADDRESS:
            addrs = [self.address(lit) for lit in lits]
            matchers = [_addr_matcher(a) for a in addrs]
            if len(matchers) == 1:
                return matchers[0]
            return lambda v: any(m(v) for m in matchers)
        vals = [self.coerce(r, lit) for lit in lits]
        if op == "in":
            if t in (F.API, F.ERROR, F.INT, F.SEVERITY, F.BOOL, F.STRING, F.BYTES):
                try:
                    s = frozenset(vals)
                    return lambda v: v in s
                except TypeError:
                    pass
            return lambda v: v in vals
        x = vals[0]
        if op == "==":
            return lambda v: v == x
        if op == "!=":  # inside all(): every value differs
            return lambda v: v != x
        if op == "<":
            return lambda v: v < x
        if op == "<=":
            return lambda v: v <= x
        if op == ">":
            return lambda v: v > x
        return lambda v: v >= x

    def address(self, lit: Literal) -> Address:
        if lit.kind == "address":
            return lit.value
        if lit.kind == "string":
            from analyzer.filter.syntax import tokenize

            try:
                toks = tokenize(lit.value)
            except FilterError:
                toks = []
            if len(toks) == 2 and toks[0].kind == "address":
                return toks[0].value
        raise FilterError(
            f"expected an address (10.0.0.5, 10.0.0.5:9092, [::1]:9092, 10.0.0.0/8), found {lit.text}",
            lit.pos,
            lit.end,
        )

    def coerce(self, r: _Resolved, lit: Literal):  # noqa: C901 - one flat case per field type; a dispatch table would scatter it
        t = r.type
        k = lit.kind
        if t == F.API:
            if k == "number" and isinstance(lit.value, int):
                return lit.value
            if k in ("word", "string"):
                key = F.api_key_of(lit.value)
                if key is None:
                    raise FilterError(
                        f"unknown API {lit.value!r}" + _suggest(lit.value, API_NAMES.values()),
                        lit.pos,
                        lit.end,
                    )
                return key
            raise FilterError(f"api needs an API name or key, found {lit.text}", lit.pos, lit.end)
        if t == F.ERROR or (r.error_code and k in ("word", "string")):
            if k == "number" and isinstance(lit.value, int):
                return lit.value
            if k in ("word", "string"):
                code = CODES.get(lit.value.upper())
                if code is None:
                    names = [n for n, _ in ERRORS.values()]
                    raise FilterError(
                        f"unknown Kafka error {lit.value!r}" + _suggest(lit.value.upper(), names),
                        lit.pos,
                        lit.end,
                    )
                return code
            raise FilterError(f"{r.name} needs an error name or code, found {lit.text}", lit.pos, lit.end)
        if t == F.SEVERITY:
            if k in ("word", "string") and lit.value.lower() in _SEVERITIES:
                return _SEVERITIES[lit.value.lower()]
            raise FilterError(
                f"severity is note, warning or error, found {lit.text}"
                + _suggest(str(lit.value).lower(), _SEVERITIES),
                lit.pos,
                lit.end,
            )
        if t in (F.INT, F.FLOAT):
            if k == "number":
                return lit.value
            raise FilterError(f"{r.name} is a number; {lit.text} is {_kind(k)}", lit.pos, lit.end)
        if t == F.DURATION:
            if k in ("number", "duration"):
                return float(lit.value)
            raise FilterError(
                f"{r.name} is a duration (50ms, 1.5s, 250us, or a number of ms); {lit.text} is {_kind(k)}",
                lit.pos,
                lit.end,
            )
        if t == F.BOOL:
            if k == "bool":
                return lit.value
            if k == "number" and lit.value in (0, 1):
                return bool(lit.value)
            raise FilterError(f"{r.name} is true or false, found {lit.text}", lit.pos, lit.end)
        if t == F.STRING:
            if k in ("string", "word"):
                return lit.value
            raise FilterError(f'{r.name} is text: write "{lit.text}" in quotes', lit.pos, lit.end)
        if t == F.BYTES:
            if k in ("string", "word"):
                return lit.value.encode("utf-8")
            raise FilterError(f'{r.name} is bytes: compare with a string, "{lit.text}"', lit.pos, lit.end)
        raise FilterError(f"cannot compare {r.name} ({t}) with {lit.text}", lit.pos, lit.end)

    # names --------------------------------------------------------------------------------------------
    def resolve(self, ref: FieldRef) -> _Resolved:
        path = ref.path.lower()
        native = native_name(path)
        if native is not None:  # a Wireshark name: its native field, named as typed in messages
            r = self.resolve(FieldRef(native, ref.pos, ref.end))
            r.name = path
            return r
        self.names.add(path)
        spec = F.EXCHANGE_FIELDS.get(path)
        if spec is not None:
            if path in _TREE_FIELDS:
                self.needs_trees = True
            if path in _SOFTWARE:
                flt, part = self.flt, _SOFTWARE[path]

                def software(ex: Exchange, flt=flt, part=part):
                    return CF.software(flt.knowledge, ex, part)

                return _Resolved(path, spec.type, software, False)
            return _Resolved(path, spec.type, _EXCHANGE_GETTERS[path], spec.many, truth=spec.type == F.BOOL)
        if path == "records" or path.startswith("records."):
            spec = F.RECORDS_FIELDS.get(path)
            if spec is None:
                raise FilterError(
                    f"unknown records field {ref.path!r}" + _suggest(path, F.RECORDS_FIELDS), ref.pos, ref.end
                )
            self.needs_trees = True
            if spec.bodies:
                self.needs_records = True
                return _Resolved(path, spec.type, _record_getter(path[len("records.") :]), True, truth=True)
            if path == "records":
                return _Resolved(path, F.BOOL, lambda ex: bool(_batches(ex)), False, truth=True)
            if path == "records.count":
                return _Resolved(
                    path,
                    F.INT,
                    lambda ex: sum(b.get("record_count") or 0 for b in bs) if (bs := _batches(ex)) else None,
                    False,
                )
            if path == "records.batches":
                return _Resolved(path, F.INT, lambda ex: len(bs) if (bs := _batches(ex)) else None, False)
            key = path[len("records.") :]
            return _Resolved(path, spec.type, _summary_getter(key), True, truth=spec.type == F.BOOL)
        comps = tuple(path.split("."))
        if any(not c for c in comps):
            raise FilterError(f"bad field name {ref.path!r}", ref.pos, ref.end)
        prefixes = F.api_prefixes()
        if len(comps) > 1 and comps[0] in prefixes:
            return self.prefixed(ref, prefixes[comps[0]], comps[0], comps[1:])
        found = F.suffix_index().get(comps)
        if found is None:
            raise FilterError(f"unknown field {ref.path!r}" + _suggest(path, F.all_names()), ref.pos, ref.end)
        by_key: dict[int, list] = {}
        types: set[str] = set()
        for api, paths in found.items():
            table = F.api_paths(api)
            for p in paths:
                d = table[p]
                types |= d.types
                by_key.setdefault(api, []).append((p, "request" in d.kinds, "response" in d.kinds))
        return self.decoded(ref, comps, types, by_key)

    def prefixed(self, ref: FieldRef, key: int, prefix: str, rest: tuple[str, ...]) -> _Resolved:
        table = F.api_paths(key)
        side = None
        if rest[0] in ("request", "response") and len(rest) > 1 and rest not in table:
            side, rest = rest[0], rest[1:]
        d = table.get(rest)
        if d is None or (side is not None and side not in d.kinds):
            names = [f"{prefix}.{'.'.join(p)}" for p in table]
            where = f" in the {side}" if side else ""
            raise FilterError(
                f"{API_NAMES[key]} has no field {'.'.join(rest)!r}{where}"
                + _suggest(ref.path.lower(), names),
                ref.pos,
                ref.end,
            )
        in_req = "request" in d.kinds and side != "response"
        in_resp = "response" in d.kinds and side != "request"
        return self.decoded(ref, rest, set(d.types), {key: [(rest, in_req, in_resp)]})

    def decoded(self, ref: FieldRef, comps, types: set[str], by_key) -> _Resolved:
        self.needs_trees = True
        prim = types - {F.STRUCT, F.RECORDS}
        if not prim:
            t = F.RECORDS if F.RECORDS in types else F.STRUCT
        elif prim <= {F.INT, F.FLOAT}:
            t = F.FLOAT if F.FLOAT in prim else F.INT
        elif len(prim) == 1:
            t = next(iter(prim))
        else:
            t = F.STRING if F.STRING in prim else sorted(prim)[0]
        get = _decoded_getter(by_key)
        py = _PY_TYPES.get(t)
        if py is not None and len(types) > 1:
            # the name has other types elsewhere (another API, version or struct): compare only
            # the values of the type the literal was checked against
            raw = get
            if t == F.BOOL:

                def get(ex: Exchange, raw=raw) -> list:
                    return [v for v in raw(ex) if v is True or v is False]
            else:

                def get(ex: Exchange, raw=raw, py=py) -> list:
                    return [v for v in raw(ex) if isinstance(v, py) and not isinstance(v, bool)]

        return _Resolved(
            ref.path.lower(),
            t,
            get,
            True,
            decoded=True,
            error_code=comps[-1].endswith("error_code"),
        )


_PY_TYPES = {F.INT: (int,), F.FLOAT: (int, float), F.STRING: (str,), F.BYTES: (bytes,), F.BOOL: (bool,)}


def _a(t: str) -> str:
    return {F.INT: "a number", F.FLOAT: "a number", F.BOOL: "a boolean", F.DURATION: "a duration"}.get(t, t)


def _kind(k: str) -> str:
    return {
        "string": "a string",
        "word": "a word",
        "number": "a number",
        "duration": "a duration",
        "address": "an address",
        "bool": "a boolean",
    }.get(k, k)


_IP_CACHE: dict[str, Any] = {}


def _ip(text: str):
    ip = _IP_CACHE.get(text)
    if ip is None:
        try:
            ip = ipaddress.ip_address(text.split("%", 1)[0])
        except ValueError:
            ip = False
        if len(_IP_CACHE) > 65536:
            _IP_CACHE.clear()
        _IP_CACHE[text] = ip
    return ip


def _addr_matcher(a: Address) -> Callable[[Endpoint], bool]:
    net, port = a.network, a.port

    def match(ep: Endpoint) -> bool:
        ip = _ip(ep.ip)
        return (
            ip is not False and ip.version == net.version and ip in net and (port is None or ep.port == port)
        )

    return match


class Values:
    """The values one field name gives for an exchange (a list, empty when absent): for
    aggregates over exchanges (``check``'s ``p99(latency)``, ``sum(records.count)``)."""

    __slots__ = ("name", "type", "get", "many", "needs_records", "needs_trees")

    def __init__(
        self, name: str, type_: str, get: Callable, many: bool, needs_records: bool, needs_trees: bool
    ):
        self.name, self.type, self.get, self.many = name, type_, get, many
        self.needs_records, self.needs_trees = needs_records, needs_trees

    def __call__(self, ex: Exchange) -> list:
        v = self.get(ex)
        if self.many:
            return list(v)
        return [] if v is None else [v]


def field_values(name: str) -> Values:
    """The getter of one field (any name a filter accepts); raises :class:`FilterError` for an
    unknown name, with suggestions."""
    from analyzer.filter.syntax import Exists as _Exists

    tree = parse(name)
    if not isinstance(tree, _Exists):
        raise FilterError(f"expected a field name, found {name!r}", 0, len(name))
    c = _Compiler()
    c.flt = Filter(name, lambda ex: False, False, False, [])
    r = c.resolve(tree.field)
    return Values(r.name, r.type, r.get, r.many, c.needs_records, c.needs_trees)
