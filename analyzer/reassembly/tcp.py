"""Sans-IO TCP stream reassembly.

Feed decoded segments in capture order with :meth:`Reassembler.feed`; it returns events:

* :class:`ConnOpen` when a connection is first seen (``syn`` says whether its start was captured),
* :class:`~analyzer.model.StreamData`: new contiguous bytes of one direction, in stream order,
* :class:`~analyzer.model.Gap`: bytes of one direction that were never captured,
* :class:`ConnClose` when a connection ends (FIN both ways, RST, or :meth:`flush`).

Retransmissions (exact or overlapping), duplicates, keep-alives and zero-window probes yield
only the bytes not delivered before. Out-of-order segments wait in a per-direction buffer ordered
by stream offset (a heap: any arrival order costs O(n log n)) whose size is bounded
(``max_buffer``); when it overflows, or when the peer acknowledges bytes that
were never captured, the missing range becomes a Gap and delivery goes on. Sequence numbers
wrap around (32-bit arithmetic); stream offsets are 64-bit and start at 0 for the first byte.
A SYN on a closed 4-tuple, or with a new initial sequence number, starts a new connection.
The buffer also holds at most ``max_segments`` segments (``max_buffer // 64`` by default), so
that tiny segments cannot make its bookkeeping outgrow its bytes. All the buffers together hold
at most ``max_total`` bytes: past it the direction whose hole is the oldest gives it up (a Gap,
counted in :attr:`Reassembler.memory_gaps`), as when its own buffer overflows. A live capture that
drops packets leaves holes that no retransmission fills; without this bound each connection could
keep ``max_buffer`` per direction until it ends or idles out. Buffered segments are copies, not
views into the reader's large chunks (a view would keep its whole chunk alive).
"""

from __future__ import annotations

from heapq import heappop, heappush

from analyzer.events import ConnClose, ConnOpen, Gap, Segment, StreamData
from analyzer.reassembly.packet import ACK, FIN, RST, SYN, ip_text

M32 = 0xFFFFFFFF


def _rel(a: int, b: int) -> int:
    """a - b in 32-bit sequence space, as a signed number."""
    return ((a - b + 0x80000000) & M32) - 0x80000000


class _Dir:
    __slots__ = ("next", "base", "ooo", "heap", "order", "ooo_bytes", "fin", "syn", "retrans", "gaps")

    def __init__(self) -> None:
        self.next: int | None = None  # next expected sequence number
        self.base = 0  # stream offset of `next`
        # out-of-order segments: stream offset -> (payload, ts, index, arrival number); the
        # arrival number stays when a longer copy replaces a buffered segment. An offset and
        # its sequence number differ by a constant (``next - base``) in 32-bit space
        self.ooo: dict[int, tuple] = {}
        self.heap: list[int] = []  # the stream offset of every buffered segment (plain ints)
        self.order = 0  # arrival numbers handed out
        self.ooo_bytes = 0
        self.fin: int | None = None  # sequence number of the FIN, once seen
        self.syn = False
        self.retrans = 0  # segments that carried only bytes already delivered
        self.gaps = 0


class Connection:
    __slots__ = ("id", "key", "dirs", "last_ts", "isn0", "closer")

    def __init__(self, cid: int, key: tuple) -> None:
        self.id = cid
        self.key = key  # (src, sport, dst, dport) of direction 0, raw addresses
        self.dirs = (_Dir(), _Dir())
        self.last_ts = 0.0
        self.isn0: int | None = None
        self.closer: int | None = None  # the direction of the first FIN or of the RST


class Reassembler:
    def __init__(
        self,
        max_buffer: int = 4 << 20,
        idle_timeout: float | None = None,
        max_segments: int | None = None,
        max_connections: int = 20_000,
        max_total: int = 256 << 20,
    ):
        self.max_buffer = max_buffer
        self.max_total = max(max_total, 1)
        self.ooo_total = 0  # bytes buffered out of order, all connections together
        self.memory_gaps = 0  # holes given up for max_total
        # directions with buffered bytes, the oldest hole first: (connection id, d) -> (conn, d)
        self.holes: dict[tuple[int, int], tuple[Connection, int]] = {}
        # each buffered segment costs ~300 bytes of bookkeeping whatever its size: a sender of
        # tiny shuffled segments must not make 4 MiB of payload cost a gigabyte
        self.max_segments = max(64, max_buffer // 64) if max_segments is None else max_segments
        self.idle_timeout = idle_timeout
        self.table: dict[tuple, tuple[Connection, int]] = {}
        self.next_id = 1
        self.connections = 0
        # connections tracked at once: past it the longest-idle tenth are closed ("evicted"),
        # so a flood of half-open connections costs bounded memory; sorting a tenth at a time
        # keeps eviction O(log n) per connection and the per-packet path untouched
        self.max_connections = max(max_connections, 1)
        self.evicted = 0

    # -- public -------------------------------------------------------------------------------
    @property
    def tracked(self) -> int:
        """Connections tracked now (:attr:`table` holds each under both directions' keys)."""
        return len(self.table) // 2

    def feed(self, ts: float, index: int, seg: Segment) -> list:
        src, sport, dst, dport, seq, ack, flags, payload = seg
        out: list = []
        hit = self.table.get((src, sport, dst, dport))
        if hit is not None and not flags & 0x07:
            # fast path: an established connection, no SYN/FIN/RST
            conn, d = hit
            conn.last_ts = ts
            # what the packet acknowledges of the other direction was sent before it: its bytes
            # (waiting behind bytes never captured) come first, then the packet's own
            if flags & ACK:
                other = conn.dirs[1 - d]
                if other.next is not None and other.next != ack:
                    self._acked(conn, 1 - d, other, ack, ts, index, out)
            if payload:
                me = conn.dirs[d]
                if me.next == seq and not me.ooo:
                    n = len(payload)
                    out.append(StreamData(conn.id, d, me.base, payload, ts, index))
                    me.next = (seq + n) & M32
                    me.base += n
                else:
                    self._data(conn, d, conn.dirs[d], seq, payload, ts, index, out)
            return out
        if hit is None or (flags & SYN and not flags & ACK and self._is_new_syn(hit, seq)):
            if hit is not None:
                self._close(hit[0], ts, "reused", out)
            if flags & RST or not (flags & SYN or payload):
                return out  # a lone ACK/FIN/RST (e.g. after the close) opens nothing
            conn = self._open(src, sport, dst, dport, ts, index, bool(flags & SYN), out)
            d = 0
        else:
            conn, d = hit
        conn.last_ts = ts
        me = conn.dirs[d]
        if flags & SYN:
            if not me.syn and me.next is None:
                me.syn = True
                me.next = (seq + 1) & M32
                if d == 0:
                    conn.isn0 = seq
            seq = (seq + 1) & M32  # data on a SYN (TFO) starts after it
        if flags & ACK:  # (first, as above)
            self._acked(conn, 1 - d, conn.dirs[1 - d], ack, ts, index, out)
        if payload:
            self._data(conn, d, me, seq, payload, ts, index, out)
        if flags & FIN:
            me.fin = (seq + len(payload)) & M32  # the FIN's own sequence number
            if conn.closer is None:
                conn.closer = d
        if flags & RST:
            if conn.closer is None:
                conn.closer = d
            self._close(conn, ts, "rst", out)
        elif conn.dirs[0].fin is not None and conn.dirs[1].fin is not None:
            self._close(conn, ts, "fin", out)
        return out

    def flush(self, ts: float | None = None) -> list:
        """End of input: deliver what is buffered (with gaps) and close every connection."""
        out: list = []
        for conn, d in list(self.table.values()):
            if d == 0:
                self._close(conn, conn.last_ts if ts is None else ts, "end of capture", out)
        return out

    def expire(self, now: float) -> list:
        """Close connections idle for longer than ``idle_timeout`` (live capture)."""
        out: list = []
        if self.idle_timeout is None:
            return out
        for conn, d in list(self.table.values()):
            if d == 0 and now - conn.last_ts > self.idle_timeout:
                self._close(conn, now, "idle", out)
        return out

    # -- internals ----------------------------------------------------------------------------
    def _is_new_syn(self, hit: tuple, seq: int) -> bool:
        conn, d = hit
        me = conn.dirs[d]
        return not (me.syn and d == 0 and conn.isn0 == seq)  # else: a retransmitted SYN

    def _open(self, src, sport, dst, dport, ts, index, syn, out) -> Connection:
        if len(self.table) >= 2 * self.max_connections:
            self._evict(ts, out)
        conn = Connection(self.next_id, (src, sport, dst, dport))
        self.next_id += 1
        self.connections += 1
        self.table[(src, sport, dst, dport)] = (conn, 0)
        self.table[(dst, dport, src, sport)] = (conn, 1)
        out.append(ConnOpen(conn.id, ip_text(src), sport, ip_text(dst), dport, ts, syn, index))
        return conn

    def _evict(self, ts: float, out: list) -> None:
        live = [conn for conn, d in self.table.values() if d == 0]
        live.sort(key=lambda c: c.last_ts)
        for conn in live[: max(1, len(live) // 10)]:
            self.evicted += 1
            self._close(conn, ts, "evicted", out)

    def _close(self, conn: Connection, ts: float, reason: str, out: list) -> None:
        for d in (0, 1):
            me = conn.dirs[d]
            while me.ooo:
                self._skip_to_buffered(conn, d, me, ts, 0, out)
        src, sport, dst, dport = conn.key
        if self.table.get((src, sport, dst, dport), (None,))[0] is conn:
            del self.table[(src, sport, dst, dport)]
            del self.table[(dst, dport, src, sport)]
        out.append(ConnClose(conn.id, ts, reason, conn.closer))

    def _data(self, conn, d, me: _Dir, seq, payload, ts, index, out) -> None:
        n = len(payload)
        nxt = me.next
        if nxt is None:  # mid-stream start in this direction
            me.next = nxt = seq
        r = ((seq - nxt + 0x80000000) & M32) - 0x80000000  # _rel(seq, nxt), inline: the hot path
        if r > 0:  # ahead of the next expected byte: into the buffer
            off = me.base + r
            ooo = me.ooo
            old = ooo.get(off)
            if type(payload) is not bytes:
                payload = bytes(payload)  # a view would keep the reader's whole chunk alive
            if old is None:
                if not ooo:
                    self.holes[(conn.id, d)] = (conn, d)
                ooo[off] = (payload, ts, index, me.order)
                me.order += 1
                heappush(me.heap, off)
            elif len(old[0]) >= n:
                me.retrans += 1
                return
            else:
                me.ooo_bytes -= len(old[0])
                self.ooo_total -= len(old[0])
                ooo[off] = (payload, ts, index, old[3])
            me.ooo_bytes += n
            self.ooo_total += n
            if self.ooo_total > self.max_total:
                self._over_total(ts, index, out)
            if me.ooo_bytes > self.max_buffer or len(ooo) > self.max_segments:
                while (me.ooo_bytes > self.max_buffer or len(ooo) > self.max_segments) and ooo:
                    self._skip_to_buffered(conn, d, me, ts, index, out)
            return
        if r < 0:
            if r + n <= 0:
                me.retrans += 1
                return
            payload = payload[-r:]
            n += r
        out.append(StreamData(conn.id, d, me.base, payload, ts, index))
        me.next = (nxt + n) & M32
        me.base += n
        if me.ooo:
            self._drain(conn, d, me, out)

    def _drain(self, conn, d, me: _Dir, out) -> None:
        """Deliver buffered segments that have become contiguous (trimming overlaps).

        Segments are taken from the heap once they start at or before the next expected byte,
        and delivered in passes over their arrival order, as a scan of the buffer in arrival
        order repeated until nothing moves would (which decides how overlapping copies are cut),
        but each segment costs O(log n) instead of a scan of the whole buffer.
        """
        heap = me.heap
        ooo = me.ooo
        cid = conn.id
        base = me.base
        nxt = me.next
        assert nxt is not None  # set by the first data, before anything is buffered
        ready: list[tuple[int, int]] = []  # (arrival, offset) still to visit in this pass
        later: list[tuple[int, int]] = []  # (arrival, offset) ready after this pass went past them
        pos = -1  # arrival number of the segment this pass is at
        while heap and heap[0] <= base:
            s = heappop(heap)
            heappush(ready, (ooo[s][3], s))
        while ready:
            pos, s = heappop(ready)
            while True:
                payload, ts, index, pos = ooo.pop(s)
                n = len(payload)
                me.ooo_bytes -= n
                self.ooo_total -= n
                r = s - base
                if r + n <= 0:
                    me.retrans += 1
                    break
                out.append(StreamData(cid, d, base, payload[-r:] if r else payload, ts, index))
                nxt = (nxt + n + r) & M32
                base += n + r
                if not heap or heap[0] > base:
                    break
                s = heappop(heap)
                if not ready and not later and (not heap or heap[0] > base):
                    continue  # the sole candidate, next whatever its arrival: deliver it now
                a = ooo[s][3]
                heappush(ready if a > pos else later, (a, s))
                while heap and heap[0] <= base:
                    s2 = heappop(heap)
                    a = ooo[s2][3]
                    heappush(ready if a > pos else later, (a, s2))
                break
            if not ready and later:  # the next pass
                ready, later = later, ready
                pos = -1
        me.base = base
        me.next = nxt
        if not ooo:
            self.holes.pop((cid, d), None)

    def _over_total(self, ts, index, out) -> None:
        """Past ``max_total``: the oldest holes given up until a tenth of it is free again."""
        goal = self.max_total - self.max_total // 10
        while self.ooo_total > goal and self.holes:
            conn, d = next(iter(self.holes.values()))
            me = conn.dirs[d]
            while me.ooo and self.ooo_total > goal:
                self.memory_gaps += 1
                self._skip_to_buffered(conn, d, me, ts, index, out)
            if me.ooo:  # still holding bytes: its next hole is now the newest
                del self.holes[(conn.id, d)]
                self.holes[(conn.id, d)] = (conn, d)

    def _skip_to_buffered(self, conn, d, me: _Dir, ts, index, out) -> None:
        """Declare the bytes up to the earliest buffered segment lost, then deliver."""
        off = me.heap[0]
        r = off - me.base
        if r > 0:
            _, gts, gidx, _order = me.ooo[off]
            out.append(Gap(conn.id, d, me.base, r, gts, gidx))
            me.gaps += 1
            me.base += r
            assert me.next is not None  # set by the first data, before anything is buffered
            me.next = (me.next + r) & M32
        self._drain(conn, d, me, out)

    def _acked(self, conn, d, me: _Dir, ack, ts, index, out) -> None:
        """The peer acknowledged up to ``ack`` in direction ``d``: bytes before it that we have
        not seen were sent and received, just not captured."""
        if me.next is None:
            return
        if me.fin is not None and ack == (me.fin + 1) & M32:
            ack = me.fin  # the FIN takes one sequence number but carries no byte
        r = _rel(ack, me.next)
        if r <= 0:
            return
        if me.ooo and me.heap[0] - me.base <= r:
            self._skip_to_buffered(conn, d, me, ts, index, out)
            return
        if r > self.max_buffer * 64:
            return  # not a plausible acknowledgement of this stream (e.g. a capture glitch)
        out.append(Gap(conn.id, d, me.base, r, ts, index))
        me.gaps += 1
        me.base += r
        me.next = ack
