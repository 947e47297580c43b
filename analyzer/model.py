"""The decoded data: issues, fields, frames, messages, exchanges and what is known of a connection.

Packet -> Segment -> StreamData | Gap -> Frame -> Message -> Exchange. The events that carry
these between the stages (packets, segments, stream data, gaps, connection events) are in
:mod:`analyzer.events`. Decoded output (Field, Issue, Frame, Message, Exchange) are slotted
records (:mod:`analyzer.plain`; each writes its ``__init__``: they are made per field, per
message); the hot-path events are NamedTuples.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any, NamedTuple

from analyzer.plain import field, record


class Severity(IntEnum):
    """Ordered so that max() gives the worst."""

    NOTE = 0
    WARNING = 1
    ERROR = 2

    def __str__(self) -> str:  # "error", "warning", "note"
        return self.name.lower()


@record(frozen=True)
class Issue:
    """A fact about bad or unusual input: collected as data, never raised past a stage.

    ``code`` is a stable dotted identifier (``capture.truncated``, ``decode.truncated``,
    ``records.crc_mismatch``...), declared with its severity in :mod:`analyzer.issues`, which
    builds every Issue. ``offset`` is the byte offset inside the object the issue
    belongs to (the frame for dissector issues), ``where`` a human-readable location
    (a field path, a packet number).
    """

    severity: Severity
    code: str
    message: str
    offset: int | None = None
    where: str | None = None

    def __init__(
        self, severity: Severity, code: str, message: str, offset: int | None = None, where: str | None = None
    ) -> None:
        setter = object.__setattr__
        setter(self, "severity", severity)
        setter(self, "code", code)
        setter(self, "message", message)
        setter(self, "offset", offset)
        setter(self, "where", where)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"severity": str(self.severity), "code": self.code, "message": self.message}
        if self.offset is not None:
            d["offset"] = self.offset
        if self.where is not None:
            d["where"] = self.where
        return d


@record
class Field:
    """One decoded field: the tree every front end walks.

    ``offset``/``length`` are the byte span inside the frame payload (the bytes after the
    4-byte size prefix). ``children`` is a list for structs and arrays, None for leaves.
    ``value`` holds the decoded Python value for leaves (int, str, bytes, bool, float, None,
    uuid string); for arrays it is the element count (None for a null array).
    ``display`` optionally carries an annotation (an error code's name, a masked secret).
    """

    name: str
    type: str
    value: Any
    offset: int
    length: int
    children: list[Field] | None = None
    display: str | None = None

    def __init__(
        self,
        name: str,
        type: str,
        value: Any,
        offset: int,
        length: int,
        children: list[Field] | None = None,
        display: str | None = None,
    ) -> None:
        self.name = name
        self.type = type
        self.value = value
        self.offset = offset
        self.length = length
        self.children = children
        self.display = display

    def child(self, name: str) -> Field | None:
        if self.children:
            for c in self.children:
                if c.name == name:
                    return c
        return None

    def get(self, name: str, default: Any = None) -> Any:
        c = self.child(name)
        return default if c is None else c.value

    def elements(self, name: str) -> list[Field]:
        """The elements of the array child ``name``: [] when there is none or it is null."""
        c = self.child(name)
        return c.children or [] if c is not None else []

    def walk(self):
        """Yield this field and every descendant, depth first."""
        stack = [self]
        while stack:
            f = stack.pop()
            yield f
            if f.children:
                stack.extend(reversed(f.children))


class LazyField(Field):
    """A Field whose ``children`` are built by :meth:`build_children` the first time someone asks
    (the field tree, a filter), not when the bytes are decoded; a subclass's ``__init__`` sets
    ``children`` to None. ``children`` can still be assigned, as on any Field."""

    __slots__ = ()

    @property  # over the slot of Field
    def children(self) -> list[Field]:
        kids = _CHILDREN.__get__(self)
        if kids is None:
            kids = self.build_children()
            _CHILDREN.__set__(self, kids)
        return kids

    @children.setter
    def children(self, kids: list[Field] | None) -> None:
        _CHILDREN.__set__(self, kids)

    def build_children(self) -> list[Field]:
        raise NotImplementedError


_CHILDREN = Field.__dict__["children"]  # Field's slot, read and written under LazyField's property


class Endpoint(NamedTuple):
    ip: str
    port: int

    def __str__(self) -> str:
        return f"[{self.ip}]:{self.port}" if ":" in self.ip else f"{self.ip}:{self.port}"


@record
class Frame:
    """One size-prefixed Kafka frame; ``payload`` excludes the 4-byte size.

    ``packet_indexes`` are the packets whose bytes make up the frame, in stream order, and
    ``packet_offsets`` where each one's bytes start in the frame (counted from the size prefix:
    the first is 0; a later packet may start inside the size prefix). Empty offsets: not known
    (a frame not built from a capture, or over several packets when the framer was not asked
    to record them: ``Options.packet_offsets``)."""

    conn: int
    direction: int
    offset: int  # stream offset of the size prefix
    length: int  # payload length (the size field's value)
    payload: bytes | memoryview
    ts_first: float
    ts_last: float
    packet_indexes: tuple[int, ...]
    kind: str = "request"  # "request" | "response": decided by the connection's roles
    packet_offsets: tuple[int, ...] = ()

    def __init__(
        self,
        conn: int,
        direction: int,
        offset: int,
        length: int,
        payload: bytes | memoryview,
        ts_first: float,
        ts_last: float,
        packet_indexes: tuple[int, ...],
        kind: str = "request",
        packet_offsets: tuple[int, ...] = (),
    ) -> None:
        self.conn = conn
        self.direction = direction
        self.offset = offset
        self.length = length
        self.payload = payload
        self.ts_first = ts_first
        self.ts_last = ts_last
        self.packet_indexes = packet_indexes
        self.kind = kind
        self.packet_offsets = packet_offsets


@record
class Message:
    """A decoded request or response."""

    frame: Frame
    kind: str  # "request" | "response"
    api_key: int | None
    api_version: int | None
    correlation_id: int | None
    header: Field | None
    body: Field | None
    issues: list[Issue] = field(default_factory=list)
    client_id: str | None = None
    errors: list[int] = field(default_factory=list)  # non-zero error codes anywhere in the body
    # the topics the body names, walked once (analyzer.session.entities.topic_refs): a cache of
    # (TopicRefs, whether some name a topic by id alone)
    topic_refs: tuple | None = field(default=None, compare=False, repr=False)

    def __init__(
        self,
        frame: Frame,
        kind: str,
        api_key: int | None,
        api_version: int | None,
        correlation_id: int | None,
        header: Field | None,
        body: Field | None,
        issues: list[Issue] | None = None,
        client_id: str | None = None,
        errors: list[int] | None = None,
        topic_refs: tuple | None = None,
    ) -> None:
        self.frame = frame
        self.kind = kind
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.header = header
        self.body = body
        self.issues = [] if issues is None else issues
        self.client_id = client_id
        self.errors = [] if errors is None else errors
        self.topic_refs = topic_refs

    @property
    def severity(self) -> Severity | None:
        return max((i.severity for i in self.issues), default=None)


@record
class ConnInfo:
    """What is known of one TCP connection."""

    id: int
    a: Endpoint  # direction-0 sender
    b: Endpoint
    ts_first: float
    syn: bool
    client_direction: int | None = None
    ts_last: float = 0.0
    closed: str | None = None
    closed_by: str | None = None  # "client" or "broker": who sent the first FIN or the RST
    frames: list[int] = field(default_factory=lambda: [0, 0])
    bytes: list[int] = field(default_factory=lambda: [0, 0])
    gaps: list[int] = field(default_factory=lambda: [0, 0])
    not_kafka: str | None = None
    tls: dict | None = None  # a TLS connection's facts: version, cipher, sni, alpn, decrypted...
    first_packet: int = 0  # the number of the packet that opened it (its SYN when captured)

    def __init__(
        self,
        id: int,
        a: Endpoint,
        b: Endpoint,
        ts_first: float,
        syn: bool,
        client_direction: int | None = None,
        ts_last: float = 0.0,
        closed: str | None = None,
        closed_by: str | None = None,
        frames: list[int] | None = None,
        bytes: list[int] | None = None,
        gaps: list[int] | None = None,
        not_kafka: str | None = None,
        tls: dict | None = None,
        first_packet: int = 0,
    ) -> None:
        self.id = id
        self.a = a
        self.b = b
        self.ts_first = ts_first
        self.syn = syn
        self.client_direction = client_direction
        self.ts_last = ts_last
        self.closed = closed
        self.closed_by = closed_by
        self.frames = [0, 0] if frames is None else frames
        self.bytes = [0, 0] if bytes is None else bytes
        self.gaps = [0, 0] if gaps is None else gaps
        self.not_kafka = not_kafka
        self.tls = tls
        self.first_packet = first_packet

    @property
    def client(self) -> Endpoint:
        return self.b if self.client_direction == 1 else self.a

    @property
    def broker(self) -> Endpoint:
        return self.a if self.client_direction == 1 else self.b


@record
class Exchange:
    """A request paired with its response (either may be missing, with an issue saying why)."""

    conn: ConnInfo
    request: Message | None
    response: Message | None
    issues: list[Issue] = field(default_factory=list)
    # filled by the session layer from the messages and its per-capture knowledge
    topics: dict[str, list[int]] = field(default_factory=dict)

    def __init__(
        self,
        conn: ConnInfo,
        request: Message | None,
        response: Message | None,
        issues: list[Issue] | None = None,
        topics: dict[str, list[int]] | None = None,
    ) -> None:
        self.conn = conn
        self.request = request
        self.response = response
        self.issues = [] if issues is None else issues
        self.topics = {} if topics is None else topics

    @property
    def api_key(self) -> int | None:
        m = self.request or self.response
        return m.api_key if m else None

    @property
    def api_version(self) -> int | None:
        m = self.request or self.response
        return m.api_version if m else None

    @property
    def correlation_id(self) -> int | None:
        m = self.request or self.response
        return m.correlation_id if m else None

    @property
    def client_id(self) -> str | None:
        return self.request.client_id if self.request else None

    @property
    def latency(self) -> float | None:
        if self.request is None or self.response is None:
            return None
        return self.response.frame.ts_first - self.request.frame.ts_last

    @property
    def ts(self) -> float:
        m = self.request or self.response
        return m.frame.ts_first if m else 0.0

    def all_issues(self) -> list[Issue]:
        out = list(self.issues)
        for m in (self.request, self.response):
            if m is not None:
                out.extend(m.issues)
        return out
