"""Pairing requests with responses by CorrelationId, per connection (sans-IO).

Brokers answer the requests of one connection in order, and clients pipeline, so a connection
keeps its unanswered requests in arrival order. A response is decoded with its request's api key
and version. A response whose correlation id matches no captured request, and a request that is
never answered (a later request was answered first, or the connection ended), are reported as
exchanges with the missing side None and an issue.

Produce with acks=0 expects no response, but such a request waits among the unanswered ones all
the same, because some brokers (Tansu, the librdkafka mock cluster) answer it: an answer is
paired by correlation id and decoded with the request's version, and the connection gets one
``quirk.acks0_answered`` warning with the count when it closes. An acks=0 request that a later
answer overtakes, or that still waits when the connection ends, is the usual ``pairing.acks0``
note; at most :data:`ACKS0_HELD` of them wait at once.

After a successful SaslHandshake v0, the connection carries raw SASL tokens until the client
sends a Kafka request again; tokens are paired in order.
"""

from __future__ import annotations

import re
from collections import OrderedDict

from analyzer.dissect import schema
from analyzer.dissect.apikeys import API_VERSIONS, FETCH, OFFSET_COMMIT, PRODUCE, SASL_HANDSHAKE
from analyzer.dissect.constants import ErrorCode
from analyzer.dissect.decoder import snake
from analyzer.dissect.error_versions import error_field, fetch_max_magic, records_too_new, too_new
from analyzer.dissect.errors import ERRORS
from analyzer.dissect.framing import plausible_request_header
from analyzer.dissect.message import (
    DEFAULT_OPTIONS,
    Options,
    decode_request,
    decode_response,
    decode_sasl_token,
)
from analyzer.issues import (
    PAIRING_ACKS0,
    PAIRING_NO_REQUEST,
    PAIRING_NO_RESPONSE,
    QUIRK_ACKS0_ANSWERED,
    QUIRK_ERROR_TOO_NEW,
    QUIRK_FETCH_MAGIC_TOO_NEW,
    QUIRK_LEGACY_FORMAT_REJECTED,
    QUIRK_LIBRDKAFKA_TAGGED_HANGUP,
)
from analyzer.model import ConnInfo, Exchange, Field, Frame, Issue, Message, Severity
from analyzer.session.groups import MEMBER_APIS, simple_commit_rejected
from analyzer.session.knowledge import UNNAMED_BROKER

ACKS0_HELD = 256  # acks=0 Produce requests that wait for a possible answer, per connection


class ConnectionPairer:
    """Turns the frames of one connection into exchanges."""

    __slots__ = (
        "info",
        "opts",
        "pending",
        "sasl_mechanism",
        "sasl_raw",
        "raw_pending",
        "knowledge",
        "acks0",
        "acks0_answered",
        "acks0_first",
        "last",
    )

    def __init__(self, info: ConnInfo, opts: Options = DEFAULT_OPTIONS, knowledge=None):
        self.info = info
        self.opts = opts
        self.pending: OrderedDict[int, Message] = OrderedDict()
        self.sasl_mechanism: str | None = None
        self.sasl_raw = False
        self.raw_pending: list[Message] = []
        self.knowledge = knowledge
        self.acks0: OrderedDict[int, None] = OrderedDict()  # correlation ids of waiting acks=0 requests
        self.acks0_answered = 0
        self.acks0_first: int | None = None  # correlation id of the first answered acks=0 request
        # the connection's last exchange when it is an ApiVersions one (a reference to any other
        # would keep its frames' buffers alive for the connection's lifetime)
        self.last: Exchange | None = None

    def conn_issues(self) -> list[Issue]:
        """Connection-level findings, once the connection has been flushed."""
        out = []
        hang = _tagged_hangup(self.last, self.info)
        if hang is not None:
            out.append(hang)
        if not self.acks0_answered:
            return out
        n = self.acks0_answered
        first = self.acks0_first
        at = f" (the first: correlation id {first})" if first is not None else ""
        sw = self.knowledge.broker_software() if self.knowledge is not None else None
        return out + [
            QUIRK_ACKS0_ANSWERED(
                f"{sw or UNNAMED_BROKER} answered {n} Produce request{'s' if n != 1 else ''} sent with "
                f"acks=0{at}, which Kafka never answers (KafkaApis.handleProduceRequest sends no "
                "response for acks=0; Tansu and the librdkafka mock cluster do): paired by "
                "correlation id and decoded",
            )
        ]

    def feed(self, frame: Frame) -> list[Exchange]:
        if frame.kind == "request":
            return self._request(frame)
        return self._response(frame)

    def flush(self) -> list[Exchange]:
        """The connection ended: requests still waiting were never answered in the capture.

        That is a note, not a warning: the capture or the connection simply ended first (a
        consumer closing during a long-poll Fetch does this every time)."""
        how = {
            "fin": "the connection was closed before a response",
            "rst": "the connection was reset before a response",
            "end of capture": "the capture ended before a response",
        }.get(self.info.closed or "", "no response in the capture")
        out = []
        for corr, req in self.pending.items():
            if corr in self.acks0:
                out.append(self._acks0_alone(req))
                continue
            out.append(self._exchange(req, None, [PAIRING_NO_RESPONSE(f"request never answered: {how}")]))
        self.pending.clear()
        self.acks0.clear()
        for tok in self.raw_pending:
            out.append(self._exchange(tok, None, [PAIRING_NO_RESPONSE(f"SASL token never answered: {how}")]))
        self.raw_pending.clear()
        return out

    # -- internals ---------------------------------------------------------------------------
    def _exchange(self, req: Message | None, resp: Message | None, issues: list) -> Exchange:
        ex = Exchange(self.info, req, resp, issues)
        key = ex.api_key
        self.last = ex if key == API_VERSIONS else None
        if self.knowledge is not None:
            members = self.knowledge.members
            if key == OFFSET_COMMIT and resp is not None and resp.errors:
                quirk = simple_commit_rejected(ex, members, self._broker())
                if quirk is not None:
                    ex.issues.append(quirk)
            self.knowledge.learn(ex)
            if key in MEMBER_APIS:  # (GroupMembers.learn skips the others)
                members.learn(ex)
        return ex

    def _too_new(self, req: Message, resp: Message) -> list[Issue]:
        """Error codes the request's version cannot receive (error_versions.FIRST_VERSION)."""
        if req.api_key is None or req.api_version is None:
            return []
        found = too_new(req.api_key, req.api_version, resp.errors)
        if not found:
            return []
        who = self._broker()
        out = []
        for code, first, ref in found:
            name = ERRORS[code][0]
            api = schema.api_name(req.api_key)
            f = error_field(resp.body, code)
            out.append(
                QUIRK_ERROR_TOO_NEW(
                    f"{who} answered {api} v{req.api_version} with {name}, which {ref} defines for "
                    f"{api} v{first} and later only: a v{req.api_version} client cannot act on it",
                    f.offset if f is not None else None,
                    "response." + f.name if f is not None else None,
                )
            )
        return out

    def _broker(self) -> str:
        sw = self.knowledge.broker_software() if self.knowledge is not None else None
        return sw if sw is not None else UNNAMED_BROKER

    def _records_too_new(self, req: Message, resp: Message) -> list[Issue]:
        """Batches newer than the Fetch version reads (error_versions.records_too_new)."""
        if req.api_version is None:
            return []
        found = records_too_new(FETCH, req.api_version, resp.body)
        if found is None:
            return []
        entry, magic, count = found
        top = fetch_max_magic(req.api_version)
        what = ("record batch", "record batches") if magic == 2 else ("message", "messages")
        return [
            QUIRK_FETCH_MAGIC_TOO_NEW(
                f"{self._broker()} answered Fetch v{req.api_version} with {count} "
                f"{what[count != 1]} of magic {magic} (the first at "
                f"byte {entry.offset}), which a v{req.api_version} client does not read: Kafka "
                f"converts them to magic {top} for it",
                entry.offset + 16,  # the magic byte: after offset(8), length(4), epoch or crc(4)
                "response.records",
            )
        ]

    def _legacy_rejected(self, req: Message, resp: Message) -> list[Issue]:
        """UNSUPPORTED_VERSION to a Produce v0-v2 partition whose records are a legacy message set
        (magic 0/1): the format those versions carry, which Kafka accepts."""
        if req.api_version is None or req.api_version > 2 or req.body is None or resp.body is None:
            return []
        sent: dict[tuple[str, int], Field] = {}
        for t in req.body.elements("topic_data"):
            for p in t.elements("partition_data"):
                rec = p.child("records")
                if rec is not None and rec.children:
                    sent[(t.get("name"), p.get("index"))] = rec
        first: Field | None = None
        rejected: list[str] = []
        codecs: set[str] = set()
        magics: set[int] = set()
        for t in resp.body.elements("responses"):
            for p in t.elements("partition_responses"):
                err = p.child("error_code")
                if err is None or err.value != ErrorCode.UNSUPPORTED_VERSION:
                    continue
                rec = sent.get((t.get("name"), p.get("index")))
                entries = [e.value for e in rec.children or ()] if rec is not None else []
                if not entries or not all(isinstance(e, dict) and e.get("magic") in (0, 1) for e in entries):
                    continue
                first = first or err
                rejected.append(f"{t.get('name')}-{p.get('index')}")
                magics.update(e["magic"] for e in entries)
                codecs.update(e.get("codec") or "none" for e in entries)
        if first is None:
            return []
        n = len(rejected)
        magic = " and ".join(str(m) for m in sorted(magics))
        codec = ", ".join(sorted(codecs))
        return [
            QUIRK_LEGACY_FORMAT_REJECTED(
                f"{self._broker()} answered Produce v{req.api_version} with UNSUPPORTED_VERSION for "
                f"{n} partition{'s' if n != 1 else ''} ({', '.join(rejected)}) whose records are "
                f"magic {magic} message sets (codec {codec}), the format Produce v0-v2 carries: it "
                "rejected a valid message-set format, which Kafka accepts",
                first.offset,
                "response." + first.name,
            )
        ]

    def _acks0_alone(self, req: Message) -> Exchange:
        return self._exchange(req, None, [PAIRING_ACKS0("Produce with acks=0: no response expected")])

    def _unanswered(self, corr: int, old: Message, why: str) -> Exchange:
        if corr in self.acks0:
            del self.acks0[corr]
            return self._acks0_alone(old)
        return self._exchange(old, None, [PAIRING_NO_RESPONSE(f"{why} was captured")])

    def _request(self, frame: Frame) -> list[Exchange]:
        if self.sasl_raw:
            p = frame.payload
            if plausible_request_header(p, 0, len(p), len(p)):
                self.sasl_raw = False
            else:
                tok = decode_sasl_token(frame, self.sasl_mechanism, self.opts)
                self.raw_pending.append(tok)
                return []
        req = decode_request(frame, self.opts)
        out: list[Exchange] = []
        corr = req.correlation_id
        if req.api_key == PRODUCE and req.body is not None and req.body.get("acks") == 0 and corr is not None:
            # kept waiting: a broker that answers acks=0 (Tansu) gets its answer paired
            old = self.pending.pop(corr, None)
            if old is not None:
                out.append(self._unanswered(corr, old, f"correlation id {corr} reused before a response"))
            self.pending[corr] = req
            self.acks0[corr] = None
            if len(self.acks0) > ACKS0_HELD:
                first, _ = self.acks0.popitem(last=False)
                out.append(self._acks0_alone(self.pending.pop(first)))
            return out
        if corr is None:
            # too short for a request header (e.g. a 0-byte frame a hostile client sent): shown
            # with the decoder's issue rather than lost without a word
            out.append(self._exchange(req, None, []))
            return out
        old = self.pending.pop(corr, None)
        if old is not None:
            out.append(self._unanswered(corr, old, f"correlation id {corr} reused before a response"))
        self.pending[corr] = req
        return out

    def _response(self, frame: Frame) -> list[Exchange]:
        if self.raw_pending:
            tok_req = self.raw_pending.pop(0)
            resp = decode_sasl_token(frame, self.sasl_mechanism, self.opts)
            return [self._exchange(tok_req, resp, [])]
        p = frame.payload
        corr = int.from_bytes(p[:4], "big", signed=True) if len(p) >= 4 else None
        out: list[Exchange] = []
        req = self.pending.pop(corr, None) if corr is not None else None
        if req is None:
            resp = decode_response(frame, None, None, self.opts)
            out.append(
                self._exchange(
                    None,
                    resp,
                    [
                        PAIRING_NO_REQUEST(
                            f"response with correlation id {corr} has no request in the capture",
                            severity=Severity.WARNING if self.info.syn else Severity.NOTE,
                        )
                    ],
                )
            )
            return out
        # brokers answer in order: requests sent before this one will not be answered
        while self.pending:
            first_corr, first = next(iter(self.pending.items()))
            if first.frame.offset > req.frame.offset:
                break
            del self.pending[first_corr]
            if first_corr in self.acks0:
                del self.acks0[first_corr]
                out.append(self._acks0_alone(first))
                continue
            out.append(
                self._exchange(
                    first,
                    None,
                    [
                        PAIRING_NO_RESPONSE(
                            "no response captured (a later request was answered first)",
                            severity=Severity.WARNING,
                        )
                    ],
                )
            )
        resp = decode_response(frame, req.api_key, req.api_version, self.opts)
        if corr is not None and corr in self.acks0:
            del self.acks0[corr]
            self.acks0_answered += 1
            if self.acks0_first is None:
                self.acks0_first = corr
        extra = self._too_new(req, resp) if resp.errors else []
        if req.api_key == FETCH:
            extra += self._records_too_new(req, resp)
        elif req.api_key == PRODUCE and ErrorCode.UNSUPPORTED_VERSION in resp.errors:
            extra += self._legacy_rejected(req, resp)
        out.append(self._exchange(req, resp, extra))
        if (
            req.api_key == SASL_HANDSHAKE
            and resp.body is not None
            and resp.body.get("error_code") == ErrorCode.NONE
        ):
            self.sasl_mechanism = req.body.get("mechanism") if req.body is not None else None
            if req.api_version == 0:
                self.sasl_raw = True
        return out


_RDKAFKA_SUFFIX = re.compile(r"-rdkafka-(\d+(?:\.\d+)*)")


def librdkafka_version(name: str | None, version: str | None) -> tuple[int, ...] | None:
    """The librdkafka version an ApiVersions client software names: librdkafka itself, or a
    wrapper that appends ``-rdkafka-X.Y.Z`` (confluent-kafka-python, -go, -dotnet...)."""
    if not version:
        return None
    if name == "librdkafka":
        m = re.match(r"v?(\d+(?:\.\d+)*)", version)
    else:
        m = _RDKAFKA_SUFFIX.search(version)
    return tuple(int(x) for x in m.group(1).split(".")) if m else None


def _tagged_names(version: int) -> frozenset[str]:
    got = schema.message_fields(API_VERSIONS, "response", version)
    if got is None:
        return frozenset()
    return frozenset(snake(f.name) for f in got[0] if schema.in_versions(f.tagged, version))


def _tagged_hangup(ex: Exchange | None, info: ConnInfo) -> Issue | None:
    """librdkafka < 2.2 misread an ApiVersions v3+ answer with tagged fields and closed the
    connection right after it (librdkafka PR #4278): the connection's last exchange is that
    answer, the client closed, and its ApiVersions software says librdkafka before 2.2."""
    if ex is None or info.closed_by != "client" or ex.api_key != API_VERSIONS:
        return None
    req, resp = ex.request, ex.response
    if req is None or resp is None or req.body is None or resp.body is None or (req.api_version or 0) < 3:
        return None
    name, ver = req.body.get("client_software_name"), req.body.get("client_software_version")
    rdk = librdkafka_version(name, ver)
    if rdk is None or rdk >= (2, 2):
        return None
    known = _tagged_names(resp.api_version or 0)
    tags = [c.name for c in resp.body.children or () if c.name in known or c.type == "unknown_tagged"]
    if not tags:
        return None
    return QUIRK_LIBRDKAFKA_TAGGED_HANGUP(
        f"{name} {ver} (librdkafka {'.'.join(map(str, rdk))}) closed the connection right after an "
        f"ApiVersions v{req.api_version} answer with tagged fields ({', '.join(tags)}), which "
        "librdkafka before 2.2 misreads (librdkafka PR #4278): upgrade the client",
        resp.frame.offset,
        f"ApiVersions response correlation id {resp.correlation_id} (stream offset of its frame)",
    )
