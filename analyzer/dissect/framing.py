"""Sans-IO Kafka framing: byte streams of a TCP connection -> size-prefixed Kafka frames.

One :class:`KafkaConnection` per TCP connection takes the reassembler's StreamData and Gap
events for both directions (:meth:`KafkaConnection.feed`) and returns complete
:class:`~analyzer.model.Frame` objects plus :class:`~analyzer.model.Issue` objects.

* Which direction is the client is decided by content: the direction whose bytes parse as a
  plausible Kafka request header (known api key and version, sane client id). A port hint
  (``broker_ports``) settles it first when given; a captured SYN is the tie-breaker.
* Frames split over many segments and many frames in one segment are both normal. A frame that
  lies inside one StreamData chunk is sliced from it without copying.
* After a Gap, or when a direction starts mid-stream (no SYN captured), the direction is out of
  sync: the framer scans for the next plausible frame start (requests: header checks; responses:
  a correlation id that an unanswered request carried, else a chain of two plausible frames),
  reports how many bytes it skipped, and goes on.
* A negative size field, or one beyond ``max_frame`` (for a connection's first frame also one
  below 4, too small for a correlation id), is treated as garbage (resynchronisation), so a
  hostile 2 GB length never makes us buffer or allocate for it and the valid frames after it
  are still found.
* A connection whose first bytes are TLS, or in which no request appears in the first
  ``detect_limit`` bytes, is given up as not Kafka (with a note) and its bytes dropped.
"""

from __future__ import annotations

import re
import struct
from collections import deque
from functools import lru_cache

from analyzer.dissect import schema
from analyzer.events import Gap
from analyzer.issues import (
    FRAMING_BAD_SIZE,
    FRAMING_INCOMPLETE,
    FRAMING_NOT_KAFKA,
    FRAMING_RESYNC,
    STREAM_GAP,
)
from analyzer.model import Frame, Issue

_i32 = struct.Struct(">i").unpack_from
_req_head = struct.Struct(">hhih").unpack_from  # api_key, api_version, correlation_id, client id length

DEFAULT_MAX_FRAME = 256 << 20
_AT_START = (0,)  # the packet offsets of a frame inside one packet
MAX_PENDING = 4096  # awaited correlation ids kept per connection for resynchronisation


def plausible_request(buf, p: int, end: int, max_frame: int = DEFAULT_MAX_FRAME) -> bool:
    """Does ``buf[p:]`` start with the size prefix and header of a Kafka request?"""
    if end - p < 14:
        return False
    size = _i32(buf, p)[0]
    return 10 <= size <= max_frame and plausible_request_header(buf, p + 4, end, size)


def plausible_request_header(buf, p: int, end: int, size: int) -> bool:
    """Does ``buf[p:]`` (a frame payload of ``size`` bytes) start with a Kafka request header?

    Checks the api key and version against the protocol table, the correlation id's sign, and the
    client id's length and bytes (printable ASCII) as far as they are available.
    """
    if end - p < 10:
        return False
    key, ver, corr, clen = _req_head(buf, p)
    if corr < 0:
        return False
    rng = schema.version_range(key)
    if rng is None or not rng[0] <= ver <= rng[1]:
        return False
    if clen == -1:
        return True
    if clen < 0 or clen > size - 10:
        return False
    s = p + 10
    cid = bytes(buf[s : min(s + clen, end)])
    return all(32 <= b < 127 for b in cid)


def _byte_class(values) -> bytes:
    """A regular expression's class of the given byte values."""
    return b"[" + b"".join(re.escape(bytes([v])) for v in sorted(set(values))) + b"]"


def _size_top(max_frame: int) -> range:
    """The values of a non-negative big-endian int32's top byte that allow sizes up to ``max_frame``."""
    return range(min(0x7F, max(0, max_frame) >> 24) + 1)


@lru_cache(maxsize=8)
def _request_starts(max_frame: int) -> re.Pattern[bytes]:
    """Positions where :func:`plausible_request` may hold (a superset, found by C code): a
    size's top byte, a known api key, a version's high byte, a correlation id's sign bit.
    Resynchronising checks only these instead of every byte."""
    ranges = [(k, schema.version_range(k)) for k in schema.request_api_keys()]
    keys = [k for k, r in ranges if r is not None]
    top = max((r[1] for _k, r in ranges if r is not None), default=0)
    return re.compile(
        b"(?="
        + _byte_class(_size_top(max_frame))
        + b"..."
        + _byte_class(k >> 8 & 0xFF for k in keys)
        + _byte_class(k & 0xFF for k in keys)
        + _byte_class(v >> 8 & 0xFF for v in range(top + 1))
        + b"."
        + _byte_class(range(0x80))
        + b")",
        re.DOTALL,
    )


@lru_cache(maxsize=8)
def _response_starts(max_frame: int) -> re.Pattern[bytes]:
    """Positions where a response's size (4..``max_frame``) may start: its top byte."""
    return re.compile(_byte_class(_size_top(max_frame)))


def _decodes_cleanly(payload: bytes) -> bool:
    from analyzer.dissect.message import decode_request
    from analyzer.model import Severity

    msg = decode_request(Frame(0, 0, 0, len(payload), payload, 0.0, 0.0, ()))
    return msg.body is not None and not any(i.severity == Severity.ERROR for i in msg.issues)


def looks_like_tls(buf, p: int, end: int) -> bool:
    return end - p >= 3 and buf[p] == 0x16 and buf[p + 1] == 3 and buf[p + 2] <= 4


class _Direction:
    __slots__ = ("buf", "start", "chunks", "synced", "skipped", "skipping", "skip_from", "frames", "need")

    def __init__(self, synced: bool) -> None:
        self.buf = bytearray()
        self.start = 0  # stream offset of buf[0]
        self.chunks: deque = deque()  # (end offset, ts, packet index) of bytes in buf
        self.synced = synced
        self.skipped = 0  # bytes skipped in all
        self.skipping = 0  # bytes skipped since the last report
        self.skip_from = 0
        self.frames = 0
        # synced: the bytes buf must hold before a frame can end in it (the frame in progress's
        # size prefix and payload, or the prefix itself): a packet in the middle of a big frame
        # is only added (set by _extract_dir, read only while synced)
        self.need = 0


class KafkaConnection:
    """Frames of one TCP connection. ``client`` is the client's direction (0/1) once known."""

    def __init__(
        self,
        conn: int,
        syn: bool,
        client: int | None = None,
        port_client: int | None = None,
        max_frame: int = DEFAULT_MAX_FRAME,
        detect_limit: int = 1 << 20,
        offsets: bool = True,
    ) -> None:
        self.conn = conn
        self.offsets = offsets  # record Frame.packet_offsets (else: empty for frames over many packets)
        self.client = client
        self.port_client = port_client  # the direction towards a usual Kafka port, if any
        self.syn = syn
        self.max_frame = max_frame
        self.detect_limit = detect_limit
        self.dirs = (_Direction(syn), _Direction(syn))
        # correlation ids of requests not yet answered, oldest first (a dict as an ordered set);
        # bounded: requests that never get an answer (acks=0 Produce) must not pile up
        self.pending: dict[int, None] = {}
        self.not_kafka: str | None = None
        self.seen = 0
        self.bad_first: list[tuple[int, int, int]] = []  # (direction, size, offset) before roles

    # -- input -------------------------------------------------------------------------------
    def feed(self, ev) -> tuple[list[Frame], list[Issue]]:
        frames: list[Frame] = []
        issues: list[Issue] = []
        if self.not_kafka:
            return frames, issues
        d = ev.direction
        st = self.dirs[d]
        if type(ev) is Gap:
            self._gap(st, ev, d, issues)
            return frames, issues
        data = ev.data
        if self.client is None:
            self.seen += len(data)
        # Fast path: synced, nothing buffered, and whole frames inside this chunk: slice them.
        if st.synced and not st.buf and self.client is not None:
            p = 0
            n = len(data)
            while n - p >= 4:
                size = _i32(data, p)[0]
                if size < 0 or size > self.max_frame:
                    break
                e = p + 4 + size
                if e > n:
                    break
                frames.append(
                    self._frame(
                        d, ev.offset + p, size, data[p + 4 : e], ev.ts, ev.ts, (ev.packet_index,), _AT_START
                    )
                )
                p = e
            if p == n:
                return frames, issues
            if p:
                data = data[p:]
                st.start = ev.offset + p
            else:
                st.start = ev.offset
        elif not st.buf:
            st.start = ev.offset
        st.buf += data
        st.chunks.append((st.start + len(st.buf), ev.ts, ev.packet_index))
        if st.synced and len(st.buf) < st.need and self.client is not None:
            return frames, issues  # the frame in progress is still incomplete: nothing can end
        self._extract(d, frames, issues)
        return frames, issues

    def flush(self) -> list[Issue]:
        """End of the connection: bytes left in a direction are an incomplete frame."""
        issues: list[Issue] = []
        for d, st in enumerate(self.dirs):
            self._report_skip(d, st, issues, final=False)
            if st.buf and not self.not_kafka:
                what = "frame" if st.synced and self.client is not None else "unframed bytes"
                size = _i32(st.buf, 0)[0] if st.synced and len(st.buf) >= 4 else None
                more = f" of a {size}-byte frame" if size is not None and size >= 0 else ""
                issues.append(
                    FRAMING_INCOMPLETE(
                        f"{len(st.buf)} bytes{more} at the end of the "
                        f"{self._dir_name(d)} stream were not a complete {what}",
                        offset=st.start,
                        where=self._dir_name(d),
                    )
                )
                st.buf = bytearray()
        return issues

    # -- internals ---------------------------------------------------------------------------
    def _dir_name(self, d: int) -> str:
        if self.client is None:
            return f"direction {d}"
        return "client" if d == self.client else "broker"

    def _gap(self, st: _Direction, ev: Gap, d: int, issues: list[Issue]) -> None:
        self._report_skip(d, st, issues, final=False)
        lost_in_frame = len(st.buf)
        st.buf = bytearray()
        st.chunks.clear()
        st.start = ev.offset + ev.length
        st.synced = False
        issues.append(
            STREAM_GAP(
                f"{ev.length} bytes of the {self._dir_name(d)} stream were not captured"
                + (
                    f"; {lost_in_frame} buffered bytes of the frame in progress dropped"
                    if lost_in_frame
                    else ""
                ),
                offset=ev.offset,
                where=self._dir_name(d),
            )
        )

    def _frame(self, d, offset, size, payload, ts_first, ts_last, packets, offsets) -> Frame:
        st = self.dirs[d]
        st.frames += 1
        kind = "request" if d == self.client else "response"
        f = Frame(self.conn, d, offset, size, payload, ts_first, ts_last, packets, kind, offsets)
        if kind == "request" and size >= 8:
            pending = self.pending
            pending[_i32(payload, 4)[0]] = None
            if len(pending) > MAX_PENDING:
                del pending[next(iter(pending))]
        elif size >= 4:
            self.pending.pop(_i32(payload, 0)[0], None)
        return f

    def _decide_client(self, issues: list[Issue]) -> bool:
        """Try to decide which direction is the client; True once decided.

        Candidates are ranked: a clean request at the start of a direction's data or of a TCP
        segment beats one found by scanning bytes; ties go to the direction towards the hinted
        broker port, then to the SYN sender (direction 0).
        """
        if self.client is not None:
            return True
        for d in (0, 1):
            st = self.dirs[d]
            if looks_like_tls(st.buf, 0, len(st.buf)) and (st.synced or st.chunks):
                self._give_up("TLS", issues)
                return False
        for d in (0, 1):
            st = self.dirs[d]
            if st.synced and len(st.buf) >= 4:
                size = _i32(st.buf, 0)[0]
                if size < 4 or size > self.max_frame:
                    # an impossible first frame (too small for a correlation id, negative, or
                    # huge): resynchronise as after a gap, so the valid frames after it are
                    # found; said once the connection is known to be Kafka (HTTP's "GET " is
                    # such a size too)
                    st.synced = False
                    self.bad_first.append((d, size, st.start))
        found = []
        for d in (0, 1):
            st = self.dirs[d]
            if st.synced:
                if plausible_request(st.buf, 0, len(st.buf), self.max_frame):
                    found.append((0, d != self.port_client, d))
            else:
                got = self._scan_request(st, 0)
                if got is not None:
                    found.append((0 if got[1] else 1, d != self.port_client, d))
        if found:
            best = min(found)
            # a request found only by scanning bytes is weak evidence: wait for the other
            # direction to speak (or for plenty of bytes) before trusting it
            if best[0] == 0 or all(st.chunks for st in self.dirs) or self.seen > 65536:
                self.client = best[2]
                for d, size, offset in self.bad_first:
                    self._bad_size(d, self.dirs[d], size, offset, issues)
                self.bad_first.clear()
                return True
        if self.seen > self.detect_limit or (self.syn and all(len(st.buf) >= 14 for st in self.dirs)):
            self._give_up(f"no Kafka request in the first {self.seen} bytes", issues)
        return False

    def _give_up(self, why: str, issues: list[Issue]) -> None:
        self.not_kafka = why
        for st in self.dirs:
            st.buf = bytearray()
            st.chunks.clear()
        issues.append(FRAMING_NOT_KAFKA(f"connection is not decodable Kafka: {why}"))

    def _scan_request(self, st: _Direction, p: int) -> tuple[int, bool] | None:
        """Next plausible request start at or after ``p``, and whether it is at a TCP segment
        start. Segment starts are tried first: after a gap or a mid-stream start, frames usually
        begin there, and byte scans can find false headers inside other messages. A candidate
        whose whole frame is buffered must also decode without error."""
        buf = st.buf
        for q in self._segment_starts(st, p):
            if self._request_at(buf, q):
                return q, True
        end = len(buf)
        for m in _request_starts(self.max_frame).finditer(buf, p):
            q = m.start()
            if q + 14 > end:
                break
            if self._request_at(buf, q):
                return q, False
        return None

    def _request_at(self, buf, p: int) -> bool:
        end = len(buf)
        if not plausible_request(buf, p, end, self.max_frame):
            return False
        size = _i32(buf, p)[0]
        return p + 4 + size > end or _decodes_cleanly(bytes(buf[p + 4 : p + 4 + size]))

    @staticmethod
    def _segment_starts(st: _Direction, p: int) -> list[int]:
        """Buffer positions (>= p) where a captured TCP segment's bytes begin."""
        out = []
        prev = st.start
        for cend, _ts, _pi in st.chunks:
            q = prev - st.start
            if q >= p:
                out.append(q)
            prev = cend
        return out

    def _scan_response(self, st: _Direction, p: int) -> int | None:
        """Next plausible response start at or after ``p``.

        At a TCP segment start, a response is accepted when its correlation id is awaited, or
        when it chains: the next frame is awaited too, or plausible while nothing is awaited,
        or it ends exactly where the data ends (so responses to requests sent before the
        capture started are kept). Elsewhere (scanning bytes) only an awaited correlation id,
        or two chained frames while nothing is awaited, will do.
        """
        buf = st.buf
        for q in self._segment_starts(st, p):
            v = self._response_at(buf, q, True)
            if v:
                return q
        waiting = None
        end = len(buf)
        # only where the size's top byte fits: _response_at says False everywhere else
        for m in _response_starts(self.max_frame).finditer(buf, p):
            q = m.start()
            if q + 8 > end:
                break
            v = self._response_at(buf, q, False)
            if v is True:
                return q
            if v is None and waiting is None:
                waiting = q  # cannot tell yet: keep the bytes from here
        return waiting

    def _response_at(self, buf, p: int, segment_start: bool) -> bool | None:
        """True: a response starts at p; False: it does not; None: cannot tell yet."""
        end = len(buf)
        if p + 8 > end:
            return None
        size = _i32(buf, p)[0]
        mf = self.max_frame
        if not 4 <= size <= mf:
            return False
        corr = _i32(buf, p + 4)[0]
        pending = self.pending
        if corr in pending:
            return True
        if corr < 0 or (pending and not segment_start):
            return False
        nxt = p + 4 + size
        if nxt == end:
            return segment_start or not pending
        if nxt + 8 <= end:
            s2 = _i32(buf, nxt)[0]
            c2 = _i32(buf, nxt + 4)[0]
            if not 4 <= s2 <= mf:
                return False
            return c2 in pending if pending else c2 >= 0
        return None if nxt > end else False

    def _extract(self, d: int, frames: list[Frame], issues: list[Issue]) -> None:
        st = self.dirs[d]
        if self.client is None and not self._decide_client(issues):
            return
        if self.not_kafka:
            return
        other = self.dirs[1 - d]
        if other.buf and other is not st and not (other.synced and len(other.buf) < other.need):
            # the other direction may have waited for the roles to be known, or (not synced) for
            # the requests whose correlation ids its scan looks for
            self._extract_dir(1 - d, frames, issues)
        self._extract_dir(d, frames, issues)

    def _extract_dir(self, d: int, frames: list[Frame], issues: list[Issue]) -> None:
        st = self.dirs[d]
        buf = st.buf
        p = 0
        n = len(buf)
        is_req = d == self.client
        while True:
            if not st.synced:
                if is_req:
                    got = self._scan_request(st, p)
                    q = got[0] if got is not None else None
                else:
                    q = self._scan_response(st, p)
                if q is None:
                    # keep a tail that may hold the start of the next header
                    keep = 13 if is_req else 7
                    q = max(p, n - keep)
                    self._skip(st, st.start + p, q - p)
                    p = q
                    break
                self._skip(st, st.start + p, q - p)
                self._report_skip(d, st, issues)
                p = q
                st.synced = True
            if n - p < 4:
                st.need = 4
                break
            size = _i32(buf, p)[0]
            if size < 0 or size > self.max_frame:
                # the scan starts here: these bytes are counted in the resync's skipped bytes
                self._bad_size(d, st, size, st.start + p, issues)
                continue
            e = p + 4 + size
            if e > n:
                st.need = e - p  # (counted from p, the start of buf once p bytes are deleted)
                break
            ts_first, ts_last, packets, offsets = self._packets(st, st.start + p, st.start + e, self.offsets)
            frames.append(
                self._frame(d, st.start + p, size, bytes(buf[p + 4 : e]), ts_first, ts_last, packets, offsets)
            )
            p = e
        if p:
            del buf[:p]
            st.start += p
        self._trim_chunks(st)

    def _bad_size(self, d: int, st: _Direction, size: int, offset: int, issues: list[Issue]) -> None:
        issues.append(
            FRAMING_BAD_SIZE(
                f"implausible frame size {size} at offset {offset} of the {self._dir_name(d)} stream; "
                "resynchronising",
                offset=offset,
                where=self._dir_name(d),
            )
        )
        st.synced = False

    @staticmethod
    def _skip(st: _Direction, offset: int, count: int) -> None:
        if count > 0:
            if not st.skipping:
                st.skip_from = offset
            st.skipping += count
            st.skipped += count

    def _report_skip(self, d: int, st: _Direction, issues: list[Issue], final: bool = True) -> None:
        if st.skipping:
            how = "to resynchronise on the next Kafka frame" if final else "without finding a Kafka frame"
            issues.append(
                FRAMING_RESYNC(
                    f"skipped {st.skipping} bytes of the {self._dir_name(d)} stream at offset "
                    f"{st.skip_from} {how}",
                    offset=st.skip_from,
                    where=self._dir_name(d),
                )
            )
            st.skipping = 0

    @staticmethod
    def _packets(
        st: _Direction, start: int, end: int, want_offsets: bool
    ) -> tuple[float, float, tuple[int, ...], tuple[int, ...]]:
        """The first and last timestamps of the bytes ``start..end`` of the stream, the packets
        they came in and, with ``want_offsets``, where each packet's bytes start (relative to
        ``start``: the first packet's at 0, each later one's where the chunk before it ended;
        without, empty when there are several packets)."""
        ts_first = ts_last = None
        idx: list[int] = []
        if want_offsets:
            offs: list[int] = []
            prev = start
            for cend, ts, pi in st.chunks:
                if cend <= start:
                    continue
                if ts_first is None:
                    ts_first = ts
                    idx.append(pi)
                    offs.append(0)
                elif idx[-1] != pi:
                    idx.append(pi)
                    offs.append(prev - start)
                ts_last = ts
                if cend >= end:
                    break
                prev = cend
            return ts_first or 0.0, ts_last or 0.0, tuple(idx), tuple(offs)
        for cend, ts, pi in st.chunks:
            if cend <= start:
                continue
            if ts_first is None:
                ts_first = ts
            ts_last = ts
            if not idx or idx[-1] != pi:
                idx.append(pi)
            if cend >= end:
                break
        return ts_first or 0.0, ts_last or 0.0, tuple(idx), _AT_START if len(idx) == 1 else ()

    @staticmethod
    def _trim_chunks(st: _Direction) -> None:
        ch = st.chunks
        while ch and ch[0][0] <= st.start:
            ch.popleft()
