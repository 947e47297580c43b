"""Display-filter syntax: a hand-written tokenizer and a recursive-descent parser with positions.

Grammar (EBNF; keywords are case-insensitive)::

    filter     = or_expr ;
    or_expr    = and_expr { ( "or" | "||" ) and_expr } ;
    and_expr   = not_expr { ( "and" | "&&" ) not_expr } ;
    not_expr   = ( "not" | "!" ) not_expr | primary ;
    primary    = "(" or_expr ")" | "all" "(" comparison ")" | test ;
    test       = field [ comparison_rest ] ;              (* a bare field: it exists *)
    comparison = field comparison_rest ;
    comparison_rest = relop value | "contains" value | "matches" value
                    | "in" "{" value { "," value } [ "," ] "}" ;
    relop      = "==" | "!=" | "<" | "<=" | ">" | ">=" ;
    value      = string | number | duration | address | word | "true" | "false" ;
    field      = word ;                                   (* dotted: produce.topic_data.name *)

    string   = '"' { char | escape } '"' ;                (* \\" \\\\ \\n \\t \\r \\0 \\xHH \\uHHHH *)
    number   = [ "-" ] ( digits [ "." digits ] | "0x" hexdigits ) ;
    duration = number ( "us" | "ms" | "s" | "m" ) ;        (* 50ms 1.5s 250us *)
    address  = ipv4 [ ":" port | "/" prefix ] | "[" ipv6 "]" [ ":" port ] | "[" ipv6 "]" "/" prefix ;
    word     = letter_or_underscore { letter | digit | "_" | "." | "-" } ;

Precedence, lowest first: ``or``, ``and``, ``not``. Every node and every error carries the
character range it came from, for a caret under the offending text.
"""

from __future__ import annotations

import ipaddress
import math
import re
from dataclasses import dataclass
from typing import Any


class FilterError(ValueError):
    """A filter that cannot be compiled: ``message`` about the text at ``position``..``end``."""

    def __init__(self, message: str, position: int = 0, end: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.position = position
        self.end = max(position + 1, end if end is not None else position + 1)

    def caret(self, text: str) -> str:
        """The expression and a caret line under the offending range."""
        width = max(1, min(self.end, len(text) + 1) - self.position)
        return f"{text}\n{' ' * self.position}{'^' * width}"

    def __str__(self) -> str:
        return f"{self.message} (at {self.position})"


# -- tokens -------------------------------------------------------------------------------------------

KEYWORDS = frozenset(("and", "or", "not", "contains", "matches", "in", "all", "true", "false"))
_OPS = ("==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "(", ")", "{", "}", ",")


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "op" "kw" "word" "string" "number" "duration" "address" "end"
    text: str  # the source text (the operator or keyword in lower case)
    pos: int
    end: int
    value: Any = None


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_LIT = re.compile(r"-?[0-9][0-9A-Za-z_.:/]*")  # numbers, durations, IPv4 addresses
_DOTLIT = re.compile(r"-?\.[0-9][0-9A-Za-z_.]*")  # .5, .5s
_WORD_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_INT = re.compile(r"-?[0-9]+")
_HEX = re.compile(r"-?0[xX][0-9a-fA-F]+")
_FLOAT = re.compile(r"-?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|-?[0-9]+[eE][-+]?[0-9]+")
_DURATION = re.compile(r"(-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(us|ms|s|m)")
_DUR_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}
_IPV4 = re.compile(r"([0-9]{1,3}(?:\.[0-9]{1,3}){3})(?::([0-9]+)|/([0-9]+))?")
_BRACKET = re.compile(r"\[([0-9A-Fa-f:.%a-zA-Z]+)\](?::([0-9]+)|/([0-9]+))?")


@dataclass(frozen=True, slots=True)
class Address:
    """An address literal: a network (a single host is a /32 or /128) and an optional port."""

    network: ipaddress.IPv4Network | ipaddress.IPv6Network
    port: int | None
    text: str


def _address(text: str, ip: str, port: str | None, prefix: str | None, pos: int, end: int) -> Address:
    try:
        if prefix is not None:
            net = ipaddress.ip_network(f"{ip}/{prefix}", strict=False)
        else:
            net = ipaddress.ip_network(ip)
    except ValueError as exc:
        raise FilterError(f"bad address {text!r}: {exc}", pos, end) from None
    p = None
    if port is not None:
        p = int(port)
        if p > 65535:
            raise FilterError(f"bad port in {text!r}: {p} > 65535", pos, end)
    return Address(net, p, text)


def _literal(text: str, pos: int, end: int) -> Token:
    if _HEX.fullmatch(text):
        return Token("number", text, pos, end, int(text, 16))
    if _INT.fullmatch(text):
        return Token("number", text, pos, end, int(text))
    if _FLOAT.fullmatch(text):
        return Token("number", text, pos, end, float(text))
    m = _DURATION.fullmatch(text)
    if m:
        return Token("duration", text, pos, end, float(m.group(1)) * _DUR_MS[m.group(2)])
    m = _IPV4.fullmatch(text)
    if m:
        return Token("address", text, pos, end, _address(text, m.group(1), m.group(2), m.group(3), pos, end))
    raise FilterError(
        f"cannot read {text!r}: expected a number (42, 1.5, 0x1f), a duration (50ms, 2s, 250us) "
        "or an address (10.0.0.5, 10.0.0.5:9092, 10.0.0.0/8)",
        pos,
        end,
    )


_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "0": "\0", "'": "'"}


def _string(src: str, start: int) -> tuple[str, int]:
    """The string literal opening at ``start``: (value, index after the closing quote)."""
    out: list[str] = []
    i = start + 1
    n = len(src)
    while i < n:
        c = src[i]
        if c == '"':
            return "".join(out), i + 1
        if c == "\\":
            if i + 1 >= n:
                break
            e = src[i + 1]
            if e in _ESCAPES:
                out.append(_ESCAPES[e])
                i += 2
                continue
            width = {"x": 2, "u": 4, "U": 8}.get(e)
            if width is not None:
                digits = src[i + 2 : i + 2 + width]
                if len(digits) == width and all(d in "0123456789abcdefABCDEF" for d in digits):
                    code = int(digits, 16)
                    if code > 0x10FFFF:
                        raise FilterError(f"bad escape \\{e}{digits}: beyond Unicode", i, i + 2 + width)
                    out.append(chr(code))
                    i += 2 + width
                    continue
                raise FilterError(f"bad escape: \\{e} needs {width} hex digits", i, i + 2 + width)
            raise FilterError(f"unknown escape \\{e} in a string", i, i + 2)
        out.append(c)
        i += 1
    raise FilterError("string not closed: missing '\"'", start, n)


def tokenize(src: str) -> list[Token]:
    toks: list[Token] = []
    i = 0
    n = len(src)
    while i < n:
        c = src[i]
        if c.isspace():
            i += 1
            continue
        if c == '"':
            value, j = _string(src, i)
            toks.append(Token("string", src[i:j], i, j, value))
            i = j
            continue
        if c == "[":
            m = _BRACKET.match(src, i)
            if m is None:
                j = src.find("]", i)
                raise FilterError("bad address: expected [IPv6] or [IPv6]:port", i, (j + 1) if j > 0 else n)
            text = m.group(0)
            addr = _address(text, m.group(1), m.group(2), m.group(3), i, m.end())
            toks.append(Token("address", text, i, m.end(), addr))
            i = m.end()
            continue
        m = _LIT.match(src, i) or _DOTLIT.match(src, i)
        if m is not None:
            j = m.end()
            toks.append(_literal(src[i:j], i, j))
            i = j
            continue
        if c in _WORD_START:
            m = _WORD.match(src, i)
            assert m is not None  # _WORD matches any character of _WORD_START
            j = m.end()
            word = src[i:j]
            # a word cannot end with "." or "-": "a." is a typo, give it back to the error path
            while j > i + 1 and src[j - 1] in ".-":
                j -= 1
                word = src[i:j]
            low = word.lower()
            if low in KEYWORDS:
                toks.append(Token("kw", low, i, j))
            else:
                toks.append(Token("word", word, i, j, word))
            i = j
            continue
        for op in _OPS:
            if src.startswith(op, i):
                toks.append(Token("op", op, i, i + len(op)))
                i += len(op)
                break
        else:
            if c == "=":
                raise FilterError("'=' is not an operator: use '=='", i, i + 1)
            if c == "&" or c == "|":
                raise FilterError(f"'{c}' is not an operator: use '{c}{c}'", i, i + 1)
            raise FilterError(f"unexpected character {c!r}", i, i + 1)
    toks.append(Token("end", "", n, n))
    return toks


# -- syntax tree ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FieldRef:
    path: str
    pos: int
    end: int


@dataclass(frozen=True, slots=True)
class Literal:
    kind: str  # "string" "word" "number" "duration" "address" "bool"
    value: Any
    text: str
    pos: int
    end: int


@dataclass(frozen=True, slots=True)
class Exists:
    field: FieldRef


@dataclass(frozen=True, slots=True)
class Compare:
    field: FieldRef
    op: str  # == != < <= > >= contains matches in
    values: tuple[Literal, ...]  # one, or the members of "in {...}"
    pos: int
    end: int
    every: bool = False  # inside all(...)


@dataclass(frozen=True, slots=True)
class Not:
    expr: Any
    pos: int


@dataclass(frozen=True, slots=True)
class BoolOp:
    op: str  # "and" | "or"
    left: Any
    right: Any


_RELOPS = frozenset(("==", "!=", "<", "<=", ">", ">="))
MAX_DEPTH = 64  # parentheses and "not"s inside each other


class _Parser:
    def __init__(self, src: str) -> None:
        self.src = src
        self.toks = tokenize(src)
        self.i = 0
        self.depth = 0

    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def take(self) -> Token:
        t = self.toks[self.i]
        if t.kind != "end":
            self.i += 1
        return t

    def is_(self, *texts: str) -> bool:
        t = self.tok
        return t.kind in ("op", "kw") and t.text in texts

    def expect(self, text: str, what: str) -> Token:
        if not self.is_(text):
            t = self.tok
            found = "the end of the filter" if t.kind == "end" else repr(t.text)
            raise FilterError(f"expected {what}, found {found}", t.pos, t.end)
        return self.take()

    def parse(self):
        if self.tok.kind == "end":
            raise FilterError("empty filter", 0, 1)
        node = self.or_expr()
        t = self.tok
        if t.kind != "end":
            hint = ""
            if t.kind in ("word", "string", "number", "duration", "address"):
                hint = " (missing 'and' / 'or' / a comparison operator?)"
            raise FilterError(f"unexpected {t.text!r}{hint}", t.pos, t.end)
        return node

    def or_expr(self):
        left = self.and_expr()
        while self.is_("or", "||"):
            self.take()
            left = BoolOp("or", left, self.and_expr())
        return left

    def and_expr(self):
        left = self.not_expr()
        while self.is_("and", "&&"):
            self.take()
            left = BoolOp("and", left, self.not_expr())
        return left

    def not_expr(self):
        if self.is_("not", "!"):
            t = self.take()
            self.nest(t)
            node = Not(self.not_expr(), t.pos)
            self.depth -= 1
            return node
        return self.primary()

    def nest(self, t: Token) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise FilterError(f"nested too deeply (more than {MAX_DEPTH} levels)", t.pos, t.end)

    def primary(self):
        if self.is_("("):
            self.nest(self.take())
            node = self.or_expr()
            self.expect(")", "')'")
            self.depth -= 1
            return node
        if self.is_("all"):
            self.take()
            self.expect("(", "'(' after all")
            field = self.field()
            if not self._at_operator():
                u = self.tok
                raise FilterError("all(...) needs a comparison: all(FIELD OP VALUE)", u.pos, u.end)
            node = self.rest(field, every=True)
            self.expect(")", "')' closing all(")
            return node
        field = self.field()
        if self._at_operator():
            return self.rest(field)
        return Exists(field)

    def _at_operator(self) -> bool:
        t = self.tok
        return (t.kind == "op" and t.text in _RELOPS) or (
            t.kind == "kw" and t.text in ("contains", "matches", "in")
        )

    def field(self) -> FieldRef:
        t = self.tok
        if t.kind == "word":
            self.take()
            return FieldRef(t.text, t.pos, t.end)
        found = "the end of the filter" if t.kind == "end" else repr(t.text)
        raise FilterError(f"expected a field name, found {found}", t.pos, t.end)

    def rest(self, field: FieldRef, every: bool = False) -> Compare:
        op_tok = self.take()
        op = op_tok.text
        if op == "in":
            self.expect("{", "'{' after in")
            values = [self.value()]
            while self.is_(","):
                self.take()
                if self.is_("}"):
                    break
                values.append(self.value())
            close = self.expect("}", "',' or '}'")
            return Compare(field, op, tuple(values), field.pos, close.end, every)
        v = self.value()
        return Compare(field, op, (v,), field.pos, v.end, every)

    def value(self) -> Literal:
        t = self.tok
        if t.kind in ("string", "number", "duration", "address"):
            self.take()
            return Literal(t.kind, t.value, t.text, t.pos, t.end)
        if t.kind == "word":
            self.take()
            return Literal("word", t.value, t.text, t.pos, t.end)
        if t.kind == "kw" and t.text in ("true", "false"):
            self.take()
            return Literal("bool", t.text == "true", t.text, t.pos, t.end)
        found = "the end of the filter" if t.kind == "end" else repr(t.text)
        raise FilterError(f"expected a value, found {found}", t.pos, t.end)


def parse(src: str):
    """The syntax tree of a filter expression; raises :class:`FilterError`."""
    if not isinstance(src, str):
        raise FilterError("a filter is a string", 0, 1)
    return _Parser(src).parse()


def quote(text: str) -> str:
    """``text`` as a string literal of the filter language."""
    out = ['"']
    for c in text:
        if c in '"\\':
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif c == "\r":
            out.append("\\r")
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\x{ord(c):02x}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def literal(v: object) -> str | None:
    """``v`` (a decoded value) written as a value of the filter language; None when it has none
    (bytes that are not printable UTF-8 text, an infinite or NaN float, a structured value)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v != v or v in (math.inf, -math.inf):
            return None
        return repr(v).replace("e+", "e")  # 1e+20: the tokenizer reads 1e20
    if isinstance(v, str):
        return quote(v)
    if isinstance(v, bytes | bytearray | memoryview):
        try:
            s = bytes(v).decode("utf-8")
        except UnicodeDecodeError:
            return None
        return quote(s) if s.isprintable() else None
    return None
