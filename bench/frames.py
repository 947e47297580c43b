"""The "foundation" of every command: capture reading, TCP reassembly and Kafka framing only.

    python bench/frames.py CAPTURE [--port PORT ...] [--json]

Drives :class:`~analyzer.capture.files.CaptureFile`, :func:`~analyzer.reassembly.packet.decode_tcp`,
:class:`~analyzer.reassembly.tcp.Reassembler` and :class:`~analyzer.dissect.framing.KafkaConnection`
the way :class:`analyzer.pipeline.Pipeline` chains them (same port hints, framers flushed when a
connection ends), but decodes nothing: it counts packets, connections, frames and frame bytes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from analyzer.capture.files import CaptureFile
from analyzer.dissect.framing import KafkaConnection
from analyzer.events import ConnClose, ConnOpen, Gap, Skip
from analyzer.pipeline import KAFKA_PORTS
from analyzer.reassembly.packet import decode_tcp
from analyzer.reassembly.tcp import Reassembler


def count_frames(path: str, ports: frozenset[int] = frozenset()) -> dict:
    cap = CaptureFile(path)
    reasm = Reassembler()
    framers: dict[int, KafkaConnection] = {}
    packets = skipped = conns = gaps = issues = 0
    frames = [0, 0]  # requests, responses
    frame_bytes = 0

    def take(events: list) -> None:
        nonlocal conns, gaps, issues, frame_bytes
        for ev in events:
            t = type(ev)
            if t is ConnOpen:
                conns += 1
                client = 0 if ev.dport in ports else 1 if ev.sport in ports else None
                port_client = 0 if ev.dport in KAFKA_PORTS else 1 if ev.sport in KAFKA_PORTS else None
                framers[ev.conn] = KafkaConnection(ev.conn, ev.syn, client=client, port_client=port_client)
                continue
            if t is ConnClose:
                f = framers.pop(ev.conn, None)
                if f is not None:
                    issues += len(f.flush())
                continue
            if t is Gap:
                gaps += 1
            got, found = framers[ev.conn].feed(ev)
            issues += len(found)
            for fr in got:
                frames[fr.kind == "response"] += 1
                frame_bytes += fr.length + 4

    feed = reasm.feed
    for index, ts, linktype, data in cap:
        packets += 1
        seg = decode_tcp(linktype, data)
        if type(seg) is Skip:
            skipped += 1
            continue
        evs = feed(ts, index, seg)
        if evs:
            take(evs)
    take(reasm.flush())
    return {
        "packets": packets,
        "non_tcp_packets": skipped,
        "connections": conns,
        "frames": frames[0] + frames[1],
        "requests": frames[0],
        "responses": frames[1],
        "frame_bytes": frame_bytes,
        "gaps": gaps,
        "stream_issues": issues,
        "capture_issues": [i.message for i in cap.issues],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("capture")
    ap.add_argument("--port", type=int, action="append", default=[], help="a broker port (repeatable)")
    ap.add_argument("--json", action="store_true", help="print the counts as one JSON object")
    args = ap.parse_args(argv)
    t = time.perf_counter()
    out = count_frames(args.capture, frozenset(args.port))
    out["seconds"] = round(time.perf_counter() - t, 3)
    if args.json:
        print(json.dumps(out))
    else:
        print(
            f"{out['frames']} frames ({out['requests']} requests, {out['responses']} responses, "
            f"{out['frame_bytes']} bytes) in {out['connections']} connections, {out['packets']} packets, "
            f"{out['seconds']} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
