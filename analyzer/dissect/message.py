"""Frames -> Messages: headers with the protocol's special cases, bodies, embedded protocols.

* Request header v2 for flexible request versions, v1 otherwise, v0 for ControlledShutdown v0;
  the client id is never compact (the table carries that field-level override).
* Response header v1 for flexible versions, except ApiVersions (always v0). A broker answers an
  ApiVersions request newer than it supports with a v0 response (error UNSUPPORTED_VERSION);
  that response is decoded as v0.
* Responses are decoded with their request's api key and version (:func:`decode_response`);
  without them only the correlation id is known.
* After SaslHandshake v0 the connection carries raw SASL tokens (:func:`decode_sasl_token`).
* Embedded payloads: the consumer protocol's Subscription/Assignment inside JoinGroup and
  SyncGroup; SASL secrets (PLAIN passwords, SCRAM proofs and server signatures, OAUTHBEARER
  tokens, tokens of unknown mechanisms) are masked unless ``show_secrets``, in the Field values
  and (:func:`masked_payload`) in the bytes a hex view shows.
* Records fields (Produce, Fetch, ShareFetch...) go to :mod:`analyzer.dissect.records`; the
  batches of a Produce request are then validated as Kafka's brokers do
  (:mod:`analyzer.dissect.validate`).
* A body with decode faults is first matched against known peer quirks (librdkafka #5049's
  Metadata placeholder, the mock cluster's extra Metadata byte, kafka-go's v0 subscription
  labelled v1), then against the layouts a sender may have used instead
  (:mod:`analyzer.dissect.layout`): one finding of the cause replaces the knock-on faults.
"""

from __future__ import annotations

import re
import struct

from analyzer.dissect import layout, schema
from analyzer.dissect.apikeys import (
    API_VERSIONS,
    JOIN_GROUP,
    METADATA,
    PRODUCE,
    SASL_AUTHENTICATE,
    SYNC_GROUP,
)
from analyzer.dissect.codecs import DEFAULT_LIMITS
from analyzer.dissect.constants import ApiKey, ErrorCode
from analyzer.dissect.decoder import (
    Ctx,
    data_plan,
    decode_body,
    decode_header,
    decode_struct,
    message_plan,
    request_header_version,
    response_header_version,
    snake,
)
from analyzer.dissect.errors import error_name
from analyzer.dissect.validate import validate_produce
from analyzer.issues import (
    DECODE_API_VERSIONS_FALLBACK,
    DECODE_BAD_COUNT,
    DECODE_BAD_LENGTH,
    DECODE_BAD_VARINT,
    DECODE_TRAILING_BYTES,
    DECODE_TRUNCATED,
    DECODE_UNEXPECTED_NULL,
    QUIRK_KAFKA_GO_SUBSCRIPTION,
    QUIRK_LIBRDKAFKA_METADATA_PLACEHOLDER,
    QUIRK_MOCK_API_VERSIONS,
    QUIRK_MOCK_LEAVE_GROUP_LAYOUT,
    QUIRK_MOCK_METADATA_TRAILING_BYTE,
    RECORDS_PARTIAL_BATCH,
    RECORDS_PARTIAL_MESSAGE,
)
from analyzer.model import Field, Frame, Message, Severity

_i16 = struct.Struct(">h").unpack_from
_i32 = struct.Struct(">i").unpack_from

_PARTIAL = {k.code: k for k in (RECORDS_PARTIAL_BATCH, RECORDS_PARTIAL_MESSAGE)}


class Options:
    """Decoding options shared by a whole run."""

    __slots__ = ("records_bodies", "show_secrets", "limits", "_hook", "layouts", "packet_offsets")

    def __init__(
        self,
        records_bodies: bool = False,
        show_secrets: bool = False,
        limits=None,
        packet_offsets: bool = False,
    ):
        self.records_bodies = records_bodies
        self.show_secrets = show_secrets
        self.limits = limits
        # the framer records where each packet starts in a frame (Frame.packet_offsets: for the
        # TUI's hex view; a few per cent of the framing's cost, so off unless asked for)
        self.packet_offsets = packet_offsets
        self._hook = None  # the records hook, made once per Options
        self.layouts = layout.Memory()  # the misalignment search's memory for the run


DEFAULT_OPTIONS = Options()


def _records_hook(opts: Options):
    from analyzer.dissect import records

    limits = opts.limits or records.DEFAULT_LIMITS

    def hook(buf, start, end, field: Field, ctx: Ctx) -> None:
        # one decompression budget for the whole message: every partition's records field
        entries, issues, ctx.records_budget = records.decode_records_budget(
            memoryview(buf)[start:end],
            start,
            limits=limits,
            bodies=ctx.records_bodies,
            budget=ctx.records_budget,
        )
        field.children = entries
        ctx.issues.extend(issues)

    return hook


def _ctx(opts: Options) -> Ctx:
    hook = opts._hook
    if hook is None:
        hook = opts._hook = _records_hook(opts)
    limits = opts.limits
    return Ctx(
        records_bodies=opts.records_bodies,
        records_hook=hook,
        max_elements=(limits or DEFAULT_LIMITS).max_elements,
    )


def decode_request(frame: Frame, opts: Options = DEFAULT_OPTIONS) -> Message:
    payload = frame.payload
    ctx = _ctx(opts)
    if len(payload) < 8:
        ctx.issues.append(
            DECODE_TRUNCATED(
                f"request of {len(payload)} bytes is too short for a header", 0, severity=Severity.WARNING
            )
        )
        return Message(frame, "request", None, None, None, None, None, ctx.issues)
    api_key, api_version, corr = struct.unpack_from(">hhi", payload, 0)
    header, pos = decode_header(payload, "request", request_header_version(api_key, api_version), ctx)
    client_id = header.get("client_id")
    body = None
    if pos >= 0:
        nhead = len(ctx.issues)
        body = decode_body(payload, pos, api_key, "request", api_version, ctx)
        if body is not None and len(ctx.issues) > nhead and _misaligned(ctx.issues, nhead):
            body, ctx = _realign(payload, pos, api_key, "request", api_version, body, ctx, nhead, opts)
        if body is not None:
            _embedded(api_key, "request", body, payload, ctx, opts)
            if api_key == PRODUCE:
                ctx.issues.extend(validate_produce(body, api_version, payload))
    issues = ctx.issues
    if issues and any(i.code in _PARTIAL for i in issues):  # (no generator for a clean request)
        # Only a Fetch response may end with a cut-off batch; in a Produce request it is damage
        issues = [
            _PARTIAL[i.code](i.message, i.offset, i.where, severity=Severity.ERROR)
            if i.code in _PARTIAL
            else i
            for i in issues
        ]
    return Message(frame, "request", api_key, api_version, corr, header, body, issues, client_id, ctx.errors)


def decode_response(
    frame: Frame, api_key: int | None, api_version: int | None, opts: Options = DEFAULT_OPTIONS
) -> Message:
    payload = frame.payload
    ctx = _ctx(opts)
    if len(payload) < 4:
        ctx.issues.append(
            DECODE_TRUNCATED(
                f"response of {len(payload)} bytes is too short for a header", 0, severity=Severity.WARNING
            )
        )
        return Message(frame, "response", api_key, api_version, None, None, None, ctx.issues)
    corr = _i32(payload, 0)[0]
    if api_key is None or api_version is None:
        header, _ = decode_header(payload, "response", 0, ctx)
        return Message(frame, "response", None, None, corr, header, None, ctx.issues)
    version = api_version
    if (
        api_key == API_VERSIONS
        and version > 0
        and len(payload) >= 6
        and _i16(payload, 4)[0] == ErrorCode.UNSUPPORTED_VERSION
    ):
        # The broker did not know the requested version: Kafka answers in v0. Take the layout
        # (v0, else the requested one) that decodes cleanly.
        msg = _decode_response_as(payload, ctx, opts, api_key, 0)
        if msg[3]:
            alt = _decode_response_as(payload, _ctx(opts), opts, api_key, version)
            if not alt[3]:
                return Message(
                    frame, "response", api_key, version, corr, alt[0], alt[1], alt[2], None, alt[4]
                )
            mock = _mock_api_versions(payload, version)
            if mock is not None:
                return Message(
                    frame, "response", api_key, version, corr, *mock, None, [ErrorCode.UNSUPPORTED_VERSION]
                )
            msg[2].append(
                DECODE_API_VERSIONS_FALLBACK(
                    f"UNSUPPORTED_VERSION answer to an ApiVersions "
                    f"v{version} request matches neither the v0 nor the v{version} layout",
                    4,
                )
            )
        return Message(frame, "response", api_key, 0, corr, msg[0], msg[1], msg[2], None, msg[4])
    header, body, issues, _, errors = _decode_response_as(payload, ctx, opts, api_key, version)
    return Message(frame, "response", api_key, version, corr, header, body, issues, None, errors)


def _mock_api_versions(payload, version: int) -> tuple[Field, Field, list] | None:
    """librdkafka's mock cluster (rdkafka_mock_handlers.c) answers an ApiVersions request it
    rejects as: error_code, the entry count as one byte holding N (a compact array would hold
    N+1), N entries of (api_key, min_version, max_version) without tagged fields, then
    throttle_time_ms, without the body's tagged fields. Only that exact shape is taken."""
    n = len(payload)
    if n < 11:
        return None
    count = payload[6]
    if count == 0 or n != 11 + 6 * count:
        return None
    header = Field(
        "header", "ResponseHeader", None, 0, 4, [Field("correlation_id", "int32", _i32(payload, 0)[0], 0, 4)]
    )
    keys = []
    for i in range(count):
        o = 7 + 6 * i
        key, lo, hi = struct.unpack_from(">hhh", payload, o)
        keys.append(
            Field(
                "api_version",
                "ApiVersion",
                None,
                o,
                6,
                [
                    Field("api_key", "int16", key, o, 2),
                    Field("min_version", "int16", lo, o + 2, 2),
                    Field("max_version", "int16", hi, o + 4, 2),
                ],
            )
        )
    end = 7 + 6 * count
    body = Field(
        "api_versions_response",
        "ApiVersionsResponse",
        None,
        4,
        n - 4,
        [
            Field("error_code", "int16", ErrorCode.UNSUPPORTED_VERSION, 4, 2, display="UNSUPPORTED_VERSION"),
            Field("api_keys", "[]ApiVersion", count, 6, 1 + 6 * count, keys),
            Field("throttle_time_ms", "int32", _i32(payload, end)[0], end, 4),
        ],
    )
    issue = QUIRK_MOCK_API_VERSIONS(
        f"ApiVersions v{version} answered UNSUPPORTED_VERSION in librdkafka mock cluster's layout: "
        f"{count} entr{'y' if count == 1 else 'ies'} counted as {count} (a compact array says "
        f"{count + 1}), no tagged fields",
        6,
        "body.api_keys",
    )
    return header, body, [issue]


def _decode_response_as(payload, ctx: Ctx, opts: Options, api_key: int, version: int):
    """(header, body, issues, not a clean fit, error codes) of a response decoded as ``version``."""
    header, pos = decode_header(payload, "response", response_header_version(api_key, version), ctx)
    body = None
    if pos >= 0:
        nhead = len(ctx.issues)
        body = decode_body(payload, pos, api_key, "response", version, ctx)
        if (
            body is not None
            and len(ctx.issues) > nhead
            and _misaligned(ctx.issues, nhead)
            and api_key != API_VERSIONS
            and not (api_key == METADATA and _mock_metadata_byte(payload, version, body, ctx, nhead))
        ):
            body, ctx = _realign(payload, pos, api_key, "response", version, body, ctx, nhead, opts)
        if body is not None:
            _embedded(api_key, "response", body, payload, ctx, opts)
    clean = not ctx.issues or not any(
        i.severity == Severity.ERROR or i.code == DECODE_TRAILING_BYTES.code for i in ctx.issues
    )
    return header, body, ctx.issues, not clean, ctx.errors


# the decode faults a misaligned body shows (not unknown api keys, versions or error codes)
_KNOCK_ON = frozenset(
    k.code
    for k in (
        DECODE_TRUNCATED,
        DECODE_BAD_COUNT,
        DECODE_BAD_LENGTH,
        DECODE_BAD_VARINT,
        DECODE_UNEXPECTED_NULL,
        DECODE_TRAILING_BYTES,
    )
)


def _misaligned(issues: list, start: int) -> bool:
    return any(issues[i].code in _KNOCK_ON for i in range(start, len(issues)))


def _realign(
    payload, pos: int, api_key: int, kind: str, version: int, body: Field, ctx: Ctx, nhead: int, opts
):
    """A body with decode faults: the layout the sender used, when one fits (layout.py); else as is."""
    if api_key == METADATA and kind == "request":
        got = _metadata_placeholder(payload, pos, version, ctx, nhead, opts)
        if got is not None:
            return got
    if api_key == ApiKey.LEAVE_GROUP and kind == "response" and version >= 3:
        got = _mock_leave_group(payload, pos, version, ctx, nhead, opts)
        if got is not None:
            return got
    found = layout.diagnose(payload, pos, api_key, kind, version, opts.layouts)
    if found is None:
        return body, ctx
    cand, plan = found
    new = _ctx(opts)
    new.issues.extend(ctx.issues[:nhead])
    name = schema.api_name(api_key) or f"Api{api_key}"
    fixed, _ = decode_struct(
        plan, payload, pos, len(payload), snake(name) + "_" + kind, f"{name}{kind.capitalize()}", new
    )
    cut_short = any(i.code == DECODE_TRUNCATED.code for i in ctx.issues[nhead:])
    issue = layout.describe(api_key, kind, version, cand, fixed, body, pos, cut_short)
    if issue is None:
        return body, ctx
    new.issues.append(issue)
    return fixed, new


def _mock_metadata_byte(payload, version: int, body: Field, ctx: Ctx, nhead: int) -> bool:
    """The librdkafka mock cluster's flexible (v9+) Metadata response: whole, then one zero byte
    (seen in v10 and v13 answers). When the body names the mock's cluster id and that is its
    only fault, the trailing-bytes warning becomes the named quirk (True)."""
    tail = ctx.issues[nhead:]
    if (
        version < 9
        or len(tail) != 1
        or tail[0].code != DECODE_TRAILING_BYTES.code
        or tail[0].offset != len(payload) - 1
        or payload[-1] != 0
        or not str(body.get("cluster_id") or "").startswith("mockCluster")
    ):
        return False
    ctx.issues[nhead:] = [
        QUIRK_MOCK_METADATA_TRAILING_BYTE(
            f"Metadata v{version} response of the librdkafka mock cluster ({body.get('cluster_id')}) "
            "ends with one zero byte after its last field (rdkafka_mock_handlers.c)",
            len(payload) - 1,
            "body",
        )
    ]
    return True


def _mock_leave_group(payload, pos: int, version: int, ctx: Ctx, nhead: int, opts):
    """The librdkafka mock cluster answers every LeaveGroup in the v1-v2 layout (rdkafka_mock_handlers.c
    writes throttle_time_ms and error_code only): a v3+ response that decodes cleanly, to its last
    byte, as v2 is decoded so, with the named quirk where its members array should start."""
    plan = message_plan(ApiKey.LEAVE_GROUP, "response", 2)
    if plan is None:
        return None
    new = _ctx(opts)
    new.issues.extend(ctx.issues[:nhead])
    body, stop = decode_struct(
        plan, payload, pos, len(payload), "leave_group_response", "LeaveGroupResponse", new
    )
    if stop != len(payload) or _misaligned(new.issues, nhead):
        return None
    err = body.get("error_code")
    new.issues.append(
        QUIRK_MOCK_LEAVE_GROUP_LAYOUT(
            f"LeaveGroup v{version} response in the v1-v2 layout (throttle_time_ms, error_code "
            f"{error_name(err) or err}; no members array), as the librdkafka mock cluster answers every "
            "LeaveGroup (it reads a v3+ request's members array as a v0-v2 member id): decoded as v2",
            stop,
            "body.members",
        )
    )
    return body, new


def _metadata_placeholder(payload, pos: int, version: int, ctx: Ctx, nhead: int, opts):
    """librdkafka issue #5049: a flexible Metadata request for all topics keeps the 4-byte array
    count placeholder (zeros) instead of the compact varint 0 (null): the body decodes cleanly
    from the placeholder's last byte on."""
    if version < 9 or bytes(payload[pos : pos + 4]) != b"\0\0\0\0":
        return None
    plan = message_plan(METADATA, "request", version)
    if plan is None:
        return None
    new = _ctx(opts)
    new.issues.extend(ctx.issues[:nhead])
    body, stop = decode_struct(
        plan, payload, pos + 3, len(payload), "metadata_request", "MetadataRequest", new
    )
    if stop != len(payload) or _misaligned(new.issues, nhead):
        return None
    body.offset, body.length = pos, body.length + 3
    topics = body.child("topics")
    if topics is not None:
        topics.offset, topics.length = pos, 4
        topics.display = "null (all topics), written as a 4-byte placeholder"
    new.issues.append(
        QUIRK_LIBRDKAFKA_METADATA_PLACEHOLDER(
            f"Metadata v{version} request for all topics writes its null topic array as librdkafka's "
            "4-byte placeholder 00 00 00 00, not the compact varint 00 (librdkafka issue #5049): "
            "a broker reads the last 3 bytes as allow_auto_topic_creation and the next fields; "
            "decoded as the client meant it",
            pos,
            "body.topics",
        )
    )
    return body, new


def decode_sasl_token(frame: Frame, mechanism: str | None, opts: Options = DEFAULT_OPTIONS) -> Message:
    """A raw SASL token frame (after SaslHandshake v0): the whole payload is the token."""
    payload = frame.payload
    f = Field("sasl_token", "bytes", bytes(payload), 0, len(payload))
    _mask_sasl(f, mechanism, opts)
    body = Field("sasl_token", "SaslToken", None, 0, len(payload), [f])
    return Message(frame, frame.kind, None, None, None, None, body, [])


# -- embedded protocols ------------------------------------------------------------------------


def _embedded(api_key: int, kind: str, body: Field, payload, ctx: Ctx, opts: Options) -> None:
    if api_key == JOIN_GROUP:
        ptype = body.get("protocol_type")
        if kind == "request":
            for p in _items(body, "protocols"):
                decode_consumer_protocol(
                    p.child("metadata"), "ConsumerProtocolSubscription", ptype, payload, ctx
                )
        else:
            for m in _items(body, "members"):
                decode_consumer_protocol(
                    m.child("metadata"), "ConsumerProtocolSubscription", ptype, payload, ctx
                )
    elif api_key == SYNC_GROUP:
        ptype = body.get("protocol_type")
        if kind == "request":
            for a in _items(body, "assignments"):
                decode_consumer_protocol(
                    a.child("assignment"), "ConsumerProtocolAssignment", ptype, payload, ctx
                )
        else:
            decode_consumer_protocol(
                body.child("assignment"), "ConsumerProtocolAssignment", ptype, payload, ctx
            )
    elif api_key == SASL_AUTHENTICATE:
        _mask_sasl(body.child("auth_bytes"), None, opts)


def _items(body: Field, name: str) -> list[Field]:
    f = body.child(name)
    return f.children or [] if f is not None else []


def decode_consumer_protocol(f: Field | None, schema_name: str, ptype: str | None, payload, ctx: Ctx) -> None:
    """Decode consumer-protocol bytes in place (children of the bytes field).

    Decoded when the group's protocol type is "consumer", or, when the message does not say
    (older versions), when the bytes parse cleanly as the consumer protocol.
    """
    if f is None or not f.value or ptype not in (None, "consumer"):
        return
    raw = f.value
    n = len(raw)
    if n < 2:
        return
    start = f.offset + f.length - n
    version = _i16(raw, 0)[0]
    # v0-v3 are defined; newer versions are read as the newest we know (fields are only added)
    known = schema.data_fields(schema_name, version) is not None
    if version < 0 or (not known and ptype is None):
        return
    plan = data_plan(schema_name, version if known else 3)
    if plan is None:
        return
    sub = Ctx(ctx.records_bodies, ctx.records_hook, ctx.elements)
    vfield = Field("version", "int16", version, start, 2)
    decoded, stop = decode_struct(
        plan, payload, start + 2, start + n, schema_name[16:].lower(), schema_name, sub
    )
    if (sub.issues or stop != start + n) and schema_name == "ConsumerProtocolSubscription" and version >= 1:
        v0 = _subscription_v0(payload, start, n, version, ctx)
        if v0 is not None:
            f.children = [vfield, v0[0]]
            f.display = schema_name
            ctx.issues.append(v0[1])
            return
    if ptype is None and (sub.issues or stop != start + n):
        return  # not the consumer protocol after all
    f.children = [vfield, decoded]
    f.display = schema_name
    ctx.issues.extend(sub.issues)


def _subscription_v0(payload, start: int, n: int, version: int, ctx: Ctx):
    """segmentio/kafka-go 0.2 labels its subscription version 1 but writes the version-0 layout
    (topics, user_data; no owned_partitions): (the v0 decode, the quirk) when exactly that fits."""
    plan = data_plan("ConsumerProtocolSubscription", 0)
    if plan is None:
        return None
    sub = Ctx(ctx.records_bodies, ctx.records_hook, ctx.elements)
    decoded, stop = decode_struct(
        plan, payload, start + 2, start + n, "subscription", "ConsumerProtocolSubscription", sub
    )
    if sub.issues or stop != start + n:
        return None
    return decoded, QUIRK_KAFKA_GO_SUBSCRIPTION(
        f"consumer subscription labelled version {version} but written in the version-0 layout "
        "(owned_partitions and later fields missing), as segmentio/kafka-go 0.2 writes it: "
        "decoded as v0",
        start,
        "subscription",
    )


_OAUTH = re.compile(rb"auth=Bearer ([^\x01]*)")
_SCRAM_VALUE = re.compile(rb"(?:^|,)(p|v)=([^,]*)")
_KNOWN_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


def secret_spans(raw: bytes, mechanism: str | None = None) -> list[tuple[int, int, str]]:
    """Where a SASL token holds a secret: ``(start, end, what)`` in ``raw``.

    PLAIN's password (after the second NUL), SCRAM's client proof (``p=`` of the
    client-final-message) and server signature (``v=`` of the server-final-message: with the
    salt and iteration count of the server-first-message it allows the same offline guessing as
    the proof), OAUTHBEARER's token (``auth=Bearer ...``); the whole token of a mechanism this
    analyzer does not know (GSSAPI...: opaque, possibly a credential)."""
    if not raw:
        return []
    if mechanism is not None and mechanism.upper() not in _KNOWN_MECHANISMS:
        return [(0, len(raw), f"{mechanism} token")]
    parts = raw.split(b"\x00")
    if len(parts) == 3 and mechanism in (None, "PLAIN"):
        start = len(parts[0]) + len(parts[1]) + 2
        return [(start, len(raw), "password")] if start < len(raw) else []
    if mechanism in (None, "OAUTHBEARER") and (m := _OAUTH.search(raw)) is not None:
        return [(m.start(1), m.end(1), "token")]
    if raw.startswith((b"c=", b"v=")) or (b",p=" in raw and raw.startswith(b"c=")):
        out = []
        for m in _SCRAM_VALUE.finditer(raw):
            out.append((m.start(2), m.end(2), "proof" if m.group(1) == b"p" else "signature"))
        return out
    return []


def _mask_sasl(f: Field | None, mechanism: str | None, opts: Options) -> None:
    """Mask the secrets of a SASL token (:func:`secret_spans`) in its Field's value; its
    display says what it is and what was masked."""
    if f is None or not f.value or opts.show_secrets:
        return
    raw: bytes = f.value
    spans = secret_spans(raw, mechanism)
    kind = _sasl_kind(raw, mechanism)
    if not spans:
        f.display = kind
        return
    out = bytearray()
    p = 0
    for a, b, _what in spans:
        out += raw[p:a] + b"*" * 8
        p = b
    out += raw[p:]
    f.value = bytes(out)
    what = ", ".join(sorted({w for _a, _b, w in spans}))
    if kind.startswith("PLAIN"):
        parts = raw.split(b"\x00")
        f.display = (
            f"PLAIN authzid={parts[0].decode(errors='replace')!r} "
            f"user={parts[1].decode(errors='replace')!r} password=********"
        )
    elif spans == [(0, len(raw), f"{mechanism} token")]:
        f.display = f"{kind} (masked)"  # a mechanism this analyzer does not know: all of it
    else:
        f.display = f"{kind} ({what} masked)"


def _sasl_kind(raw: bytes, mechanism: str | None) -> str:
    if mechanism is not None and mechanism.upper() not in _KNOWN_MECHANISMS:
        return f"{mechanism} token"
    if len(raw.split(b"\x00")) == 3 and mechanism in (None, "PLAIN"):
        return "PLAIN"
    if _OAUTH.search(raw) is not None:
        return "OAUTHBEARER client-first-message"
    if raw.startswith(b"c=") and b",p=" in raw:
        return "SCRAM client-final-message"
    if raw.startswith(b"v="):
        return "SCRAM server-final-message"
    if raw.startswith((b"n,", b"y,", b"p=")):
        return "SCRAM client-first-message"
    if raw.startswith(b"r=") and b",s=" in raw:
        return "SCRAM server-first-message"
    return "SASL token"


def masked_payload(m: Message, show_secrets: bool = False) -> bytes:
    """A message's frame payload with the bytes of its SASL secrets overwritten by ``*`` (same
    length, so every span still points at the right bytes): what a hex view shows."""
    data = bytes(m.frame.payload)
    if show_secrets or m.body is None:
        return data
    f = m.body.child("auth_bytes") or m.body.child("sasl_token")
    if f is None or f.value is None:
        return data
    end = f.offset + f.length
    start = _data_start(data, f)
    if start is None:
        return data
    # a token of a mechanism the decoder did not know was masked whole (its display says so)
    unknown = (f.display or "").endswith(" token (masked)")
    spans = [(0, end - start, "token")] if unknown else secret_spans(data[start:end])
    out = bytearray(data)
    for a, b, _ in spans:
        out[start + a : start + b] = b"*" * (b - a)
    return bytes(out)


def _data_start(payload: bytes, f: Field) -> int | None:
    """Where the bytes of a length-prefixed bytes Field start in the payload."""
    if f.name == "sasl_token":
        return f.offset
    end = f.offset + f.length
    if f.length >= 4 and _i32(payload, f.offset)[0] + 4 == f.length:
        return f.offset + 4
    p = f.offset  # compact: uvarint N+1
    while p < end and payload[p] & 0x80:
        p += 1
    return p + 1 if p < end else None
