"""Pairing requests with responses by CorrelationId, per connection (sans-IO).

Brokers answer the requests of one connection in order, and clients pipeline, so a connection
keeps its unanswered requests in arrival order. A response is decoded with its request's api key
and version. Produce with acks=0 expects no response. A response whose correlation id matches no
captured request, and a request that is never answered (a later request was answered first, or
the connection ended), are reported as exchanges with the missing side None and an issue.

After a successful SaslHandshake v0, the connection carries raw SASL tokens until the client
sends a Kafka request again; tokens are paired in order.
"""

from __future__ import annotations

from collections import OrderedDict

from analyzer.dissect.constants import ApiKey, ErrorCode
from analyzer.dissect.framing import plausible_request_header
from analyzer.dissect.message import (
    DEFAULT_OPTIONS,
    Options,
    decode_request,
    decode_response,
    decode_sasl_token,
)
from analyzer.issues import PAIRING_ACKS0, PAIRING_NO_REQUEST, PAIRING_NO_RESPONSE
from analyzer.model import ConnInfo, Exchange, Frame, Message, Severity


class ConnectionPairer:
    """Turns the frames of one connection into exchanges."""

    __slots__ = ("info", "opts", "pending", "sasl_mechanism", "sasl_raw", "raw_pending", "knowledge")

    def __init__(self, info: ConnInfo, opts: Options = DEFAULT_OPTIONS, knowledge=None):
        self.info = info
        self.opts = opts
        self.pending: OrderedDict[int, Message] = OrderedDict()
        self.sasl_mechanism: str | None = None
        self.sasl_raw = False
        self.raw_pending: list[Message] = []
        self.knowledge = knowledge

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
        for req in self.pending.values():
            out.append(self._exchange(req, None, [PAIRING_NO_RESPONSE(f"request never answered: {how}")]))
        self.pending.clear()
        for tok in self.raw_pending:
            out.append(self._exchange(tok, None, [PAIRING_NO_RESPONSE(f"SASL token never answered: {how}")]))
        self.raw_pending.clear()
        return out

    # -- internals ---------------------------------------------------------------------------
    def _exchange(self, req: Message | None, resp: Message | None, issues: list) -> Exchange:
        ex = Exchange(self.info, req, resp, issues)
        if self.knowledge is not None:
            self.knowledge.learn(ex)
        return ex

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
        if req.api_key == ApiKey.PRODUCE and req.body is not None and req.body.get("acks") == 0:
            out.append(
                self._exchange(req, None, [PAIRING_ACKS0("Produce with acks=0: no response expected")])
            )
            return out
        corr = req.correlation_id
        if corr is None:
            # too short for a request header (e.g. a 0-byte frame a hostile client sent): shown
            # with the decoder's issue rather than lost without a word
            out.append(self._exchange(req, None, []))
            return out
        old = self.pending.pop(corr, None)
        if old is not None:
            out.append(
                self._exchange(
                    old,
                    None,
                    [
                        PAIRING_NO_RESPONSE(
                            f"correlation id {corr} reused before a response was captured",
                        )
                    ],
                )
            )
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
        out.append(self._exchange(req, resp, []))
        if (
            req.api_key == ApiKey.SASL_HANDSHAKE
            and resp.body is not None
            and resp.body.get("error_code") == ErrorCode.NONE
        ):
            self.sasl_mechanism = req.body.get("mechanism") if req.body is not None else None
            if req.api_version == 0:
                self.sasl_raw = True
        return out
