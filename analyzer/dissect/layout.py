"""Misalignment diagnosis: when a body does not fit its version, find the layout the sender used.

A client that writes the fields of another version, or leaves fields out, produces bytes that
the decoder reads misaligned: the symptoms (a null in a non-nullable field, a count larger than
the bytes left, trailing bytes) are knock-on effects far from the cause. When a body decodes with
``decode.*`` issues, :func:`diagnose` tries, in order:

1. the neighbouring versions' layouts (v-1, v+1, v-2, v+2);
2. the labelled version's layout with one or two fields of one struct left out (a client that
   omits fields, e.g. two fields of every Fetch v17 partition).

The first that decodes the body cleanly, to its last byte, is what the sender wrote: the body is
decoded that way and one ``decode.layout_mismatch`` error replaces the knock-on issues, naming the
fields and the byte offset where the sender's layout leaves the version's. Search attempts decode
without records (a records hook only for the winner) and are bounded: bodies over
:data:`MAX_BODY` bytes are not searched, and a (api, kind, version) whose searches failed
:data:`MAX_MISSES` times is not searched again in the run (the layout found last is tried first),
and all the attempts of a run decode at most :data:`BUDGET` body bytes.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import combinations

from analyzer.dissect import schema
from analyzer.dissect.decoder import Ctx, compile_fields, decode_struct, message_plan, snake
from analyzer.issues import DECODE_LAYOUT_MISMATCH
from analyzer.model import Field, Issue

MAX_BODY = 64 * 1024
BUDGET = 64 * 1024 * 1024  # body bytes all searches of a run may decode
MAX_MISSES = 8
MAX_OMIT = 2  # fields of one struct left out
NEIGHBOURS = (-1, 1, -2, 2)


class Memory:
    """Per-run search memory: layouts that explained a body, misses per message kind, and the
    bytes the searches may still decode (:data:`BUDGET`: hostile input cannot make them slow)."""

    __slots__ = ("found", "misses", "budget")

    def __init__(self) -> None:
        self.found: dict[tuple, tuple] = {}  # (api, kind, version) -> candidate
        self.misses: dict[tuple, int] = {}
        self.budget = BUDGET


def _clean(ctx: Ctx) -> bool:
    return not any(i.code.startswith("decode.") for i in ctx.issues)


def _struct_name(api_key: int, kind: str) -> tuple[str, str]:
    name = schema.api_name(api_key) or f"Api{api_key}"
    return snake(name) + "_" + kind, f"{name}{kind.capitalize()}"


def _try(plan, payload, pos: int, api_key: int, kind: str) -> bool:
    ctx = Ctx()
    name, tname = _struct_name(api_key, kind)
    _, stop = decode_struct(plan, payload, pos, len(payload), name, tname, ctx)
    return stop == len(payload) and _clean(ctx)


def _omit(fields: tuple, path: tuple[str, ...], names: tuple[str, ...]) -> tuple:
    """``fields`` with ``names`` of the struct at ``path`` made absent from every version."""
    if not path:
        return tuple(f._replace(versions=None) if f.name in names else f for f in fields)
    out = []
    for f in fields:
        if f.name == path[0] and f.children is not None:
            f = f._replace(children=_omit(f.children, path[1:], names))
        out.append(f)
    return tuple(out)


def _runs(fields: tuple, version: int, path: tuple[str, ...] = ()):
    """(struct path, names, score) of every set of 1..MAX_OMIT present, untagged fields of one
    struct (a client may leave out fields that are not neighbours). The score ranks the sets
    that fit: the newest fields are the likeliest to be missing (a client that writes an older
    layout of the struct), so the set whose oldest field is newest wins, then the smaller set."""
    inv = schema.in_versions
    present = [f for f in fields if inv(f.versions, version) and not inv(f.tagged, version)]
    for k in range(1, MAX_OMIT + 1):
        for combo in combinations(present, k):
            yield path, tuple(f.name for f in combo), (min(f.versions[0] for f in combo), -k)
    for f in present:
        if f.children is not None:
            yield from _runs(f.children, version, (*path, f.name))


def _plan_for(api_key: int, kind: str, version: int, candidate: tuple):
    """Compiled plan of a candidate: ("version", v) or ("omit", path, names)."""
    if candidate[0] == "version":
        return message_plan(api_key, kind, candidate[1])
    return _omit_plan(api_key, kind, version, candidate[1], candidate[2])


@lru_cache(maxsize=2048)
def _omit_plan(api_key: int, kind: str, version: int, path: tuple, names: tuple):
    got = schema.message_fields(api_key, kind, version)
    if got is None:
        return None
    fields, flexible = got
    return compile_fields(_omit(fields, path, names), version, flexible, kind), flexible


def diagnose(payload, pos: int, api_key: int, kind: str, version: int, memory: Memory | None):
    """(candidate, plan) of the layout that decodes the body at ``pos`` cleanly, or None: the
    layout found last for this message kind, else the first neighbouring version that fits, else
    the best-ranked set of left-out fields that fits."""
    if len(payload) - pos > MAX_BODY:
        return None
    key = (api_key, kind, version)
    if memory is not None and memory.misses.get(key, 0) >= MAX_MISSES:
        return None

    size = len(payload) - pos

    def fits(cand):
        if memory is not None:
            if memory.budget < size:
                return None
            memory.budget -= size
        plan = _plan_for(api_key, kind, version, cand)
        return plan if plan is not None and _try(plan, payload, pos, api_key, kind) else None

    found: tuple | None = None
    if memory is not None and key in memory.found:
        cand = memory.found[key]
        plan = fits(cand)
        if plan is not None:
            return cand, plan
    rng = schema.version_range(api_key)
    for d in NEIGHBOURS:
        v = version + d
        if rng is not None and rng[0] <= v <= rng[1] and schema.message_fields(api_key, kind, v) is not None:
            plan = fits(("version", v))
            if plan is not None:
                found = (("version", v), plan)
                break
    got = schema.message_fields(api_key, kind, version)
    if found is None and got is not None:
        best: tuple | None = None
        for path, names, score in _runs(got[0], version):
            if best is not None and score <= best[0]:
                continue
            plan = fits(("omit", path, names))
            if plan is not None:
                best = (score, ("omit", path, names), plan)
        if best is not None:
            found = best[1], best[2]
    if memory is not None:
        if found is None:
            memory.misses[key] = memory.misses.get(key, 0) + 1
        else:
            memory.found[key] = found[0]
    return found


def _leaves(f: Field, path: str = "") -> list[tuple[str, Field]]:
    out = []
    stack = [(f, path)]
    while stack:
        node, p = stack.pop()
        kids = node.children if node.type not in ("records",) else None
        if kids:
            for c in reversed(kids):
                stack.append((c, f"{p}.{c.name}" if p else c.name))
        else:
            out.append((p, node))
    return out


def describe(
    api_key: int,
    kind: str,
    version: int,
    cand: tuple,
    body: Field,
    original: Field | None,
    pos: int,
    cut_short: bool = False,
) -> Issue | None:
    """The layout_mismatch issue: what the sender wrote and where its layout leaves ``version``'s;
    None when the two decodes lay out the same fields at the same bytes (the versions differ only
    in what they allow, e.g. nullability: that is no misalignment) and the labelled version's
    decode was not ``cut_short`` (out of bytes: then the sender's layout ends where ``version``'s
    goes on with more fields)."""
    name = schema.api_name(api_key) or f"Api{api_key}"
    # where the layouts part: the first leaf whose path or offset differs between the labelled
    # version's (partial) decode and the sender's layout
    at, first = pos, None
    mine = _leaves(original) if original is not None else []
    theirs = _leaves(body)
    for (pa, fa), (pb, fb) in zip(mine, theirs, strict=False):
        if pa != pb or fa.offset != fb.offset:
            at, first = fb.offset, pa
            break
    if first is None and len(mine) == len(theirs) and cand[0] == "version":
        if not cut_short:
            return None
        v = cand[1]
        more = _only_in(api_key, kind, version, v)
        msg = f"{name} {kind} labelled v{version} is written in the v{v} layout: it decodes cleanly as v{v}"
        msg += f" and ends where v{version} goes on with {', '.join(more[:6])}" if more else ""
        return DECODE_LAYOUT_MISMATCH(msg, body.offset + body.length, f"{kind} body")
    if cand[0] == "version":
        v = cand[1]
        lacks = sorted({p.rsplit(".", 1)[-1] for p, _ in mine} - {p.rsplit(".", 1)[-1] for p, _ in theirs})
        msg = f"{name} {kind} labelled v{version} is written in the v{v} layout: it decodes cleanly as v{v}"
        if lacks:
            msg += f" (no {', '.join(lacks[:6])})"
        if first:
            msg += f"; the layouts part at {first}"
        return DECODE_LAYOUT_MISMATCH(msg, at, f"{kind} body")
    _, path, names = cand
    where = ".".join(snake(p) for p in path) or "body"
    fields = ", ".join(snake(n) for n in names)
    got = schema.message_fields(api_key, kind, version)
    short = _size_of(got[0], path, names) if got is not None else None
    size = f"{short} bytes short" if short else "short"
    per = f"in every {where} element" if path else ""
    msg = (
        f"{name} {kind} v{version} is {size} {per} from {snake(names[0])} on: the sender omitted "
        f"{fields} ({len(names)} field{'s' if len(names) > 1 else ''} of {name} v{version}); "
        "decoded without them"
    ).replace("  ", " ")
    return DECODE_LAYOUT_MISMATCH(msg, at, f"{kind}.{where}.{snake(names[0])}")


def _only_in(api_key: int, kind: str, version: int, other: int) -> list[str]:
    """Top-level untagged fields of ``version`` that ``other`` lacks, snake_case, in order."""
    got = schema.message_fields(api_key, kind, version)
    theirs = schema.message_fields(api_key, kind, other)
    if got is None or theirs is None:
        return []
    inv = schema.in_versions
    have = {f.name for f in theirs[0] if inv(f.versions, other) and not inv(f.tagged, other)}
    return [
        snake(f.name)
        for f in got[0]
        if inv(f.versions, version) and not inv(f.tagged, version) and f.name not in have
    ]


_FIXED_SIZES = {
    "int8": 1,
    "bool": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "uint32": 4,
    "int64": 8,
    "float64": 8,
    "uuid": 16,
}


def _size_of(fields: tuple, path: tuple[str, ...], names: tuple[str, ...]) -> int | None:
    """Bytes the omitted fields take per struct when all are fixed-size, else None."""
    for p in path:
        nxt = next((f for f in fields if f.name == p and f.children is not None), None)
        if nxt is None:
            return None
        fields = nxt.children
    total = 0
    for f in fields:
        if f.name in names:
            s = _FIXED_SIZES.get(f.type)
            if s is None:
                return None
            total += s
    return total
