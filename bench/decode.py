"""The "dissector": decoding speed of requests and responses, frames collected beforehand.

    python bench/decode.py CAPTURE... [--rounds 3] [--min-time 1.0] [--json]

Every Kafka frame of the captures is framed first (capture reading, reassembly and framing as
in ``bench/frames.py``, not timed); each response is paired with its request's api key and
version by correlation id, as the pipeline does. Then only
:func:`~analyzer.dissect.message.decode_request` / :func:`~analyzer.dissect.message.decode_response`
are timed, in-process, once with the default options (record batches summarised: CRCs and
counts, what ``stats`` needs) and once with record bodies (keys, values, headers: ``export
--records``). A round decodes all frames as many times as needed to last ``--min-time``
seconds; the median and best round are reported. MB/s counts frame bytes (size prefix
included), compressed record batches as they are on the wire.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import struct
import sys
import time

from analyzer.capture.files import CaptureFile
from analyzer.dissect.framing import KafkaConnection
from analyzer.dissect.message import Options, decode_request, decode_response
from analyzer.events import ConnClose, ConnOpen, Skip
from analyzer.pipeline import KAFKA_PORTS
from analyzer.reassembly.packet import decode_tcp
from analyzer.reassembly.tcp import Reassembler

_req_head = struct.Struct(">hhi").unpack_from  # api key, api version, correlation id


def collect(path: str) -> tuple[list, list]:
    """(request frames, [(response frame, api key, api version)]) of one capture."""
    reasm = Reassembler()
    framers: dict[int, KafkaConnection] = {}
    pending: dict[int, dict[int, tuple[int, int]]] = {}
    requests: list = []
    responses: list = []

    def take(events: list) -> None:
        for ev in events:
            t = type(ev)
            if t is ConnOpen:
                pc = 0 if ev.dport in KAFKA_PORTS else 1 if ev.sport in KAFKA_PORTS else None
                framers[ev.conn] = KafkaConnection(ev.conn, ev.syn, port_client=pc)
                pending[ev.conn] = {}
                continue
            if t is ConnClose:
                framers.pop(ev.conn, None)
                pending.pop(ev.conn, None)
                continue
            frames, _ = framers[ev.conn].feed(ev)
            waiting = pending[ev.conn]
            for f in frames:
                p = f.payload
                if f.kind == "request":
                    requests.append(f)
                    if len(p) >= 8:
                        key, ver, corr = _req_head(p, 0)
                        waiting[corr] = (key, ver)
                elif len(p) >= 4:
                    corr = int.from_bytes(p[:4], "big", signed=True)
                    key_ver = waiting.pop(corr, (None, None))
                    responses.append((f, *key_ver))

    for index, ts, linktype, data in CaptureFile(path):
        seg = decode_tcp(linktype, data)
        if type(seg) is Skip:
            continue
        evs = reasm.feed(ts, index, seg)
        if evs:
            take(evs)
    take(reasm.flush())
    return requests, responses


def _one_pass(requests: list, responses: list, opts: Options) -> None:
    for f in requests:
        decode_request(f, opts)
    for f, key, ver in responses:
        decode_response(f, key, ver, opts)


def time_decoding(requests: list, responses: list, opts: Options, rounds: int, min_time: float) -> dict:
    t = time.perf_counter()
    _one_pass(requests, responses, opts)  # warm-up, and a calibration of the passes per round
    once = max(time.perf_counter() - t, 1e-6)
    passes = max(1, round(min_time / once))
    per_pass = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(passes):
            _one_pass(requests, responses, opts)
        per_pass.append((time.perf_counter() - t) / passes)
    n = len(requests) + len(responses)
    nbytes = sum(f.length + 4 for f in requests) + sum(f.length + 4 for f, _, _ in responses)
    med, best = statistics.median(per_pass), min(per_pass)
    return {
        "passes_per_round": passes,
        "median_s": med,
        "min_s": best,
        "frames_per_s": n / med,
        "mb_per_s": nbytes / 1e6 / med,
        "best_frames_per_s": n / best,
        "best_mb_per_s": nbytes / 1e6 / best,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("captures", nargs="+")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=1.0, help="seconds per round at least")
    ap.add_argument("--json", action="store_true", help="print the results as one JSON object")
    args = ap.parse_args(argv)

    t = time.perf_counter()
    requests: list = []
    responses: list = []
    for path in args.captures:
        rq, rs = collect(path)
        requests += rq
        responses += rs
    collect_s = time.perf_counter() - t
    out: dict = {
        "captures": len(args.captures),
        "frames": len(requests) + len(responses),
        "requests": len(requests),
        "responses": len(responses),
        "unpaired_responses": sum(1 for _, k, _ in responses if k is None),
        "frame_bytes": sum(f.length + 4 for f in requests) + sum(f.length + 4 for f, _, _ in responses),
        "collect_s": collect_s,
    }
    # The collected frames live through every pass: keep the cyclic GC from rescanning them
    gc.collect()
    gc.freeze()
    out["summary"] = time_decoding(requests, responses, Options(), args.rounds, args.min_time)
    out["bodies"] = time_decoding(
        requests, responses, Options(records_bodies=True), args.rounds, args.min_time
    )
    if args.json:
        print(json.dumps(out))
        return 0
    print(
        f"{out['frames']} frames ({out['requests']} requests, {out['responses']} responses), "
        f"{out['frame_bytes'] / 1e6:.1f} MB from {out['captures']} capture(s)"
    )
    for mode in ("summary", "bodies"):
        r = out[mode]
        print(
            f"  {mode:<8} {r['frames_per_s']:>10,.0f} frames/s {r['mb_per_s']:>8.1f} MB/s"
            f"  (median of {args.rounds}; best {r['best_frames_per_s']:,.0f} frames/s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
