"""Mutation fuzzer for every decoder entry point, seeded with the bundled captures.

    PYTHONPATH=$PWD python bench/fuzz.py ENTRY [--execs N] [--seconds S] [--seed K] [--out DIR]
    PYTHONPATH=$PWD python bench/fuzz.py all --execs 1000000      # one process per entry point

Entry points (each takes bytes; nothing but the documented exceptions may escape):

    capture     pcap/pcapng reader (CaptureFile over the bytes)
    reassembly  decode_tcp + Reassembler over a list of packets (2-byte length prefixed)
    framing     KafkaConnection over two directions of stream bytes split in chunks
    message     decode_request / decode_response of one frame (api key and version in front)
    records     decode_records with bodies + entry_records (every codec)
    tls         TlsConnection over the two directions of a TLS connection
    filter      the display-filter compiler (FilterError is the one allowed exception)

The loop is a classic byte-level mutator (bit flips, interesting integers at random positions,
inserted / deleted / duplicated runs, splices with another corpus entry), not coverage guided
(atheris does not install on this Python). Every execution runs under a time limit (SIGALRM) and
the process under an address-space limit (RLIMIT_AS): an exception, a timeout or a MemoryError is
a finding, written to ``--out`` with the traceback. The last line printed is a JSON summary
(executions, seconds, execs/s, findings, peak RSS).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import resource
import signal
import struct
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / "captures"
ENTRIES = ("capture", "reassembly", "framing", "message", "records", "tls", "filter")

# -- seeds from the bundled captures ---------------------------------------------------------------


def _small_captures(limit: int = 40_000) -> list[Path]:
    return sorted(p for p in CAPTURES.glob("*.pcap*") if p.stat().st_size <= limit)


def _packets(path: Path) -> list[bytes]:
    from analyzer.capture.files import CaptureFile

    return [bytes(d) for _i, _ts, _lt, d in CaptureFile(path)]


def _streams(path: Path) -> list[tuple[bytes, bytes]]:
    """Each connection's two directions of stream bytes."""
    from analyzer.capture.files import CaptureFile
    from analyzer.events import StreamData
    from analyzer.reassembly.packet import decode_tcp
    from analyzer.reassembly.tcp import Reassembler

    r = Reassembler()
    out: dict[int, list[bytearray]] = {}
    evs: list = []
    for _i, ts, lt, d in CaptureFile(path):
        seg = decode_tcp(lt, d)
        if type(seg) is tuple:
            evs.extend(r.feed(ts, _i, seg))
    evs.extend(r.flush())
    for ev in evs:
        if type(ev) is StreamData:
            out.setdefault(ev.conn, [bytearray(), bytearray()])[ev.direction] += ev.data
    return [(bytes(a), bytes(b)) for a, b in out.values()]


def _messages(path: Path) -> list[tuple[str, int, int, bytes]]:
    from analyzer.dissect.message import Options
    from analyzer.model import Exchange
    from analyzer.pipeline import Analysis

    out = []
    for ev in Analysis(path, Options(records_bodies=True)).events():
        if type(ev) is Exchange:
            for m in (ev.request, ev.response):
                if m is not None and m.api_key is not None:
                    out.append((m.kind, m.api_key, m.api_version or 0, bytes(m.frame.payload)))
    return out


def _pack_message(kind: str, key: int, version: int, payload: bytes) -> bytes:
    return struct.pack(">bhh", kind == "request", key, version) + payload


def seeds(entry: str, max_captures: int | None = None) -> list[bytes]:
    caps = _small_captures()[:max_captures]
    if entry == "capture":
        out = []
        for p in caps:
            raw = p.read_bytes()
            out.append(raw[:6000])
        from analyzer.capture.files import CaptureFile  # noqa: F401 - fail early if missing

        return out
    if entry == "reassembly":
        out = []
        for p in caps[:12]:
            pk = _packets(p)[:40]
            out.append(b"".join(struct.pack(">H", len(x)) + x for x in pk))
        return out
    if entry in ("framing", "tls"):
        out = []
        pool = _small_captures(400_000) if entry == "tls" else _small_captures()
        names = [p for p in pool if ("tls" in p.name) == (entry == "tls")][:max_captures]
        for p in names:
            for a, b in _streams(p)[:3]:
                a, b = a[:2500], b[:2500]
                out.append(struct.pack(">I", len(a)) + a + b)
        return out
    if entry in ("message", "records"):
        from analyzer.dissect.decoder import Ctx
        from analyzer.model import Field

        msgs: dict[tuple, bytes] = {}
        for p in caps:
            if "tls" in p.name:
                continue
            for kind, key, ver, payload in _messages(p):
                msgs.setdefault((kind, key, ver), payload)  # one of each shape
        if entry == "message":
            return [_pack_message(k, key, v, pl[:8000]) for (k, key, v), pl in msgs.items()]
        out = []
        for (kind, key, ver), pl in msgs.items():
            from analyzer.dissect.message import Options, decode_request, decode_response
            from analyzer.model import Frame

            fr = Frame(1, 0, 0, len(pl), pl, 0.0, 0.0, ())
            m = decode_request(fr, Options(True)) if kind == "request" else decode_response(fr, key, ver)
            for f in m.body.walk() if m.body else ():
                if f.type == "records" and f.value:
                    end = f.offset + f.length
                    out.append(pl[end - f.value : end])
        del Ctx, Field
        return out or [b""]
    if entry == "filter":
        return [
            s.encode()
            for s in (
                'api == Produce and topic == "orders"',
                "latency > 50ms or error",
                "client in {10.0.0.0/8, [::1]:9092} && !unanswered",
                'records.key contains "x" and records.codec == gzip',
                'metadata.topics.name matches "^o.*s$"',
                "severity >= warning or issue == 0x1f",
                "produce.request.acks != -1 and all(partition < 4)",
                "(api in {Fetch, Produce}) and not (broker == 10.0.0.5:9092)",
                'records.headers.key == "a\\"b"',
            )
        ]
    raise SystemExit(f"unknown entry point {entry!r}")


# -- targets ---------------------------------------------------------------------------------------


def target(entry: str):  # noqa: C901 - one branch per entry point, each a small closure
    if entry == "capture":
        from analyzer.capture.files import CaptureFile

        def run(data: bytes) -> None:
            f = io.BytesIO(data)
            f.name = "fuzz.pcap"  # type: ignore[attr-defined]  # what CaptureFile names it by
            cap = CaptureFile(f)
            for _ in cap:
                pass

        return run
    if entry == "reassembly":
        from analyzer.reassembly.packet import decode_tcp
        from analyzer.reassembly.tcp import Reassembler

        def run(data: bytes) -> None:
            r = Reassembler(max_buffer=1 << 16)
            p = 0
            i = 0
            n = len(data)
            while p + 2 <= n:
                (ln,) = struct.unpack_from(">H", data, p)
                pk = data[p + 2 : p + 2 + ln]
                p += 2 + ln
                i += 1
                seg = decode_tcp(1, pk)
                if type(seg) is tuple:
                    r.feed(1.0 + i / 1000, i, seg)
            r.expire(1e9)
            r.flush()

        return run
    if entry == "framing":
        from analyzer.dissect.framing import KafkaConnection
        from analyzer.dissect.message import Options, decode_request
        from analyzer.events import StreamData

        opts = Options(records_bodies=True)

        def run(data: bytes) -> None:
            if len(data) < 5:
                return
            (la,) = struct.unpack_from(">I", data, 0)
            body = data[4:]
            la = min(la, len(body))
            dirs = (body[:la], body[la:])
            kc = KafkaConnection(1, data[0] & 1 == 0, max_frame=1 << 20)
            step = 48 + data[-1] * 16
            offs = [0, 0]
            chunks = []
            for d in (0, 1):
                b = dirs[d]
                for q in range(0, len(b), step):
                    chunks.append((d, q, b[q : q + step]))
            chunks.sort(key=lambda c: (c[1], c[0]))  # interleave the directions
            for d, q, c in chunks:
                frames, _ = kc.feed(StreamData(1, d, q, c, 1.0, 1))
                offs[d] = q
                for fr in frames:
                    if fr.kind == "request":
                        decode_request(fr, opts)
            kc.flush()

        return run
    if entry == "message":
        from analyzer.dissect.message import Options, decode_request, decode_response
        from analyzer.model import Frame

        opts = (Options(records_bodies=True), Options(), Options(True, True))

        def run(data: bytes) -> None:
            if len(data) < 5:
                return
            is_req, key, ver = struct.unpack_from(">bhh", data, 0)
            pl = data[5:]
            fr = Frame(1, 0, 0, len(pl), pl, 0.0, 0.0, ())
            o = opts[(key ^ ver) % 3]
            if is_req & 1:
                decode_request(fr, o)
            else:
                decode_response(fr, key, ver, o)

        return run
    if entry == "records":
        from analyzer.dissect.records import decode_records, entry_records

        def run(data: bytes) -> None:
            for bodies in (True, False):
                fields, _ = decode_records(data, 7, bodies=bodies)
                for f in fields:
                    for _ in entry_records(f):
                        pass
                    for _ in f.walk():  # builds the record Fields too
                        pass

        return run
    if entry == "tls":
        from analyzer.events import StreamData
        from analyzer.tls.layer import TlsConnection

        def run(data: bytes) -> None:
            if len(data) < 5:
                return
            (la,) = struct.unpack_from(">I", data, 0)
            body = data[4:]
            la = min(la, len(body))
            t = TlsConnection(1, None)
            step = 48 + data[-1] * 16
            for d, b in ((0, body[:la]), (1, body[la:])):
                for q in range(0, len(b), step):
                    t.feed(StreamData(1, d, q, b[q : q + step], 1.0, 1))
            t.info  # noqa: B018 - the facts every front end shows
            t.summary()

        return run
    if entry == "filter":
        from analyzer.filter import FilterError, compile_filter

        def run(data: bytes) -> None:
            with contextlib.suppress(FilterError):
                compile_filter(data.decode("utf-8", "replace"))

        return run
    raise SystemExit(f"unknown entry point {entry!r}")


# -- the mutator -----------------------------------------------------------------------------------

_INTERESTING = [
    b"\x00",
    b"\xff",
    b"\x7f",
    b"\x80",
    b"\x00\x00",
    b"\xff\xff",
    b"\x7f\xff",
    b"\x80\x00",
    b"\x00\x00\x00\x00",
    b"\xff\xff\xff\xff",
    b"\x7f\xff\xff\xff",
    b"\x80\x00\x00\x00",
    b"\x00\x00\x10\x00",
    b"\x00\x10\x00\x00",
    b"\xff\xff\xff\xff\x0f",
    b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01",
]
_FILTER_TOKENS = [
    b" and ",
    b" or ",
    b"not ",
    b"(",
    b")",
    b"{",
    b"}",
    b'"',
    b"\\",
    b"==",
    b" in ",
    b" matches ",
    b" contains ",
    b"records.",
    b"50ms",
    b"[::1]",
    b"10.0.0.0/8",
    b"all(",
    b"0x",
    b"1e999",
]


def mutate(rnd: random.Random, data: bytes, corpus: list[bytes], tokens: list[bytes]) -> bytes:
    b = bytearray(data)
    for _ in range(1 + int(rnd.expovariate(0.7))):
        op = rnd.randrange(8)
        n = len(b)
        if op == 0 and n:  # bit flip
            i = rnd.randrange(n)
            b[i] ^= 1 << rnd.randrange(8)
        elif op == 1 and n:  # random byte
            b[rnd.randrange(n)] = rnd.randrange(256)
        elif op == 2:  # interesting integer / token overwrite
            v = rnd.choice(tokens)
            i = rnd.randrange(n + 1)
            b[i : i + len(v)] = v
        elif op == 3:  # insert
            v = rnd.choice(tokens) if rnd.random() < 0.5 else rnd.randbytes(rnd.randrange(1, 16))
            i = rnd.randrange(n + 1)
            b[i:i] = v
        elif op == 4 and n:  # delete a run
            i = rnd.randrange(n)
            del b[i : i + rnd.randrange(1, 64)]
        elif op == 5 and n:  # duplicate a run
            i = rnd.randrange(n)
            j = min(n, i + rnd.randrange(1, 256))
            k = rnd.randrange(n + 1)
            b[k:k] = b[i:j]
        elif op == 6 and corpus:  # splice with another entry
            other = rnd.choice(corpus)
            if other:
                i = rnd.randrange(n + 1)
                j = rnd.randrange(len(other))
                b = b[:i] + bytearray(other[j : j + rnd.randrange(1, 512)])
        elif op == 7 and n:  # cut
            del b[rnd.randrange(n) :]
    return bytes(b)


class _Timeout(BaseException):
    pass


def _alarm(_sig, _frame):
    raise _Timeout


def fuzz(
    entry: str,
    execs: int,
    seconds: float,
    seed: int,
    out: Path,
    timeout: float,
    mem_mb: int,
    max_captures: int | None = None,
) -> dict:
    """Run one entry point; ``mem_mb`` 0 leaves the address space unlimited (in a test run)."""
    if mem_mb:
        resource.setrlimit(resource.RLIMIT_AS, (mem_mb << 20, mem_mb << 20))
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        return _fuzz(entry, execs, seconds, seed, out, timeout, mem_mb, max_captures)
    finally:
        signal.signal(signal.SIGALRM, old)


def _fuzz(entry, execs, seconds, seed, out, timeout, mem_mb, max_captures) -> dict:
    corpus = [s for s in seeds(entry, max_captures) if s is not None]
    run = target(entry)
    tokens = _FILTER_TOKENS + _INTERESTING[:4] if entry == "filter" else _INTERESTING
    rnd = random.Random(seed)
    findings: list[dict] = []
    kept = 0
    t0 = time.monotonic()
    slowest = 0.0
    done = 0
    for s in corpus:  # the seeds themselves first
        run(s)
    while done < execs and time.monotonic() - t0 < seconds:
        data = mutate(rnd, rnd.choice(corpus), corpus, tokens)
        t1 = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            run(data)
            problem = None
        except _Timeout:
            problem = f"timeout: over {timeout}s"
        except MemoryError:
            problem = "MemoryError"
        except Exception:  # noqa: BLE001 - any exception is the finding
            problem = traceback.format_exc()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        dt = time.perf_counter() - t1
        slowest = max(slowest, dt)
        done += 1
        if problem is not None:
            out.mkdir(parents=True, exist_ok=True)
            name = f"{entry}-{seed}-{done}"
            (out / f"{name}.bin").write_bytes(data)
            (out / f"{name}.txt").write_text(problem)
            findings.append({"input": f"{name}.bin", "problem": problem.strip().splitlines()[-1]})
            if len(findings) >= 20:
                break
        elif len(corpus) < 400 and done % 97 == 0 and data:
            corpus.append(data)  # keep some mutants: deeper mutations over time
            kept += 1
        if done % 50000 == 0:
            el = time.monotonic() - t0
            print(f"{entry}: {done} execs {el:.0f}s {done / el:.0f}/s findings {len(findings)}", flush=True)
    el = time.monotonic() - t0
    return {
        "entry": entry,
        "executions": done,
        "seconds": round(el, 1),
        "execs_per_s": round(done / el) if el else 0,
        "findings": findings,
        "seeds": len(corpus) - kept,
        "slowest_exec_s": round(slowest, 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "timeout_s": timeout,
        "mem_limit_mb": mem_mb,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("entry", choices=(*ENTRIES, "all"))
    ap.add_argument("--execs", type=int, default=1_000_000)
    ap.add_argument("--seconds", type=float, default=float("inf"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=10.0, help="per execution (a hang)")
    ap.add_argument("--mem-mb", type=int, default=1500, help="address-space limit (a blow-up)")
    ap.add_argument("--out", type=Path, default=Path("fuzz-findings"))
    a = ap.parse_args(argv)
    if a.entry == "all":
        procs = {
            e: subprocess.Popen(
                [sys.executable, __file__, e, "--execs", str(a.execs), "--seconds", str(a.seconds)]
                + ["--seed", str(a.seed), "--timeout", str(a.timeout), "--mem-mb", str(a.mem_mb)]
                + ["--out", str(a.out)],
                stdout=subprocess.PIPE,
                text=True,
                env=os.environ,
            )
            for e in ENTRIES
        }
        results = []
        for _e, p in procs.items():
            out, _ = p.communicate()
            results.append(json.loads(out.strip().splitlines()[-1]))
        print(json.dumps(results))
        return 1 if any(r["findings"] for r in results) else 0
    r = fuzz(a.entry, a.execs, a.seconds, a.seed, a.out, a.timeout, a.mem_mb)
    print(json.dumps(r), flush=True)
    return 1 if r["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
