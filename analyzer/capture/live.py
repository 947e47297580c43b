"""Live capture with scapy: ``sniff(store=False)`` with a BPF filter, yielding the same
``(index, ts, linktype, data)`` packets as the file readers, optionally saved to a pcap.

scapy is imported here only (the ``live`` extra); the core never imports it.
"""

from __future__ import annotations

import contextlib
import os
import queue
import struct
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from analyzer.capture.failure import SourceFailure
from analyzer.issues import CAPTURE_DROPS_UNKNOWN
from analyzer.model import Issue
from analyzer.netconst import LinkType


def check_privileges(interface: str) -> str | None:
    """A clear sentence when live capture cannot work here, else None."""
    try:
        import scapy.all  # noqa: F401
    except ImportError:
        return "live capture needs scapy: pip install 'kafka-analyzer[live]'"
    from scapy.arch import get_if_list

    try:
        names = get_if_list()
    except OSError as exc:
        return f"cannot list interfaces: {exc}"
    if interface not in names:
        return f"no interface named {interface!r} (interfaces: {', '.join(sorted(names))})"
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        import socket

        try:
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)  # type: ignore[attr-defined,unused-ignore]  # AF_PACKET: Linux only
            s.close()
        except (PermissionError, OSError):
            return (
                f"no permission to capture on {interface}: run as root, or give the Python "
                "interpreter CAP_NET_RAW (setcap cap_net_raw,cap_net_admin=eip $(realpath $(which python3)))"
            )
    return None


class LiveCapture(SourceFailure):
    """Iterate packets as they arrive; ``stop()`` (or Ctrl-C) ends the iteration cleanly."""

    def __init__(
        self,
        interface: str,
        bpf: str | None = None,
        write: str | None = None,
        count: int | None = None,
        duration: float | None = None,
    ):
        self.interface = interface
        self.bpf = bpf
        self.write = write
        self.count = count
        self.duration = duration
        self.name = f"live:{interface}"
        self.live = True
        self.issues: list[Issue] = []  # the capture's failure, as a capture.source_failed issue
        self.bytes_read = 0
        self._q: queue.Queue = queue.Queue(maxsize=100_000)
        self._stop = threading.Event()
        self._writer: PcapFileWriter | None = None
        self._sniffer: Any = None  # scapy's AsyncSniffer (the core imports scapy lazily, untyped)

    def stop(self) -> None:
        self._stop.set()
        sn = self._sniffer
        if sn is not None and getattr(sn, "running", False):
            with contextlib.suppress(Exception):  # already stopping
                sn.stop(join=False)

    def _started(self) -> None:
        what = f" ({self.bpf})" if self.bpf else ""
        print(f"kafka-analyzer: capturing on {self.interface}{what}", file=sys.stderr, flush=True)

    def _start(self) -> None:
        from scapy.all import AsyncSniffer

        def put(pkt) -> None:
            self._q.put((float(pkt.time), bytes(pkt), _linktype(pkt)))

        self._sniffer = AsyncSniffer(  # --duration is enforced by __iter__
            iface=self.interface,
            filter=self.bpf,
            store=False,
            prn=put,
            count=self.count or 0,
            started_callback=self._started,
        )
        try:
            self._sniffer.start()
        except PermissionError:
            self._fail(f"no permission to capture on {self.interface}: run as root or grant CAP_NET_RAW")
        except Exception as exc:  # noqa: BLE001 - scapy raises Scapy_Exception for a bad BPF filter
            self._fail(f"capture on {self.interface} failed: {exc}")

    def _running(self) -> bool:
        sn = self._sniffer
        if sn is None or self.error:
            return False
        t = getattr(sn, "thread", None)
        return t is not None and t.is_alive()

    def __iter__(self) -> Iterator[tuple]:
        if self.write:
            self._writer = PcapFileWriter(self.write)
        self._start()
        index = 0
        deadline = time.monotonic() + self.duration if self.duration else None
        while True:
            if deadline is not None and time.monotonic() >= deadline:
                self.stop()
                deadline = None
            try:
                item = self._q.get(timeout=0.2)
            except queue.Empty:
                if not self._running():
                    exc = getattr(self._sniffer, "exception", None)
                    if exc is not None and not self.error:
                        self._fail(f"capture on {self.interface} failed: {exc}")
                    return
                continue
            ts, data, linktype = item
            index += 1
            self.bytes_read += len(data)
            if self._writer is not None:
                self._write(ts, data, linktype)
            yield (index, ts, linktype, data)

    def _write(self, ts: float, data: bytes, linktype: int) -> None:
        assert self._writer is not None  # called only when a writer is open
        self._writer.write(ts, data, linktype)

    def close(self) -> None:
        self.stop()
        t = getattr(self._sniffer, "thread", None)
        if t is not None:
            t.join(timeout=5)
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if not self.error and not any(i.code == CAPTURE_DROPS_UNKNOWN.code for i in self.issues):
            self.issues.append(
                CAPTURE_DROPS_UNKNOWN(
                    "the scapy backend cannot count the packets the kernel dropped: stream gaps may "
                    "be losses of the capture (the ring backend, Linux, counts them)",
                )
            )


def _linktype(pkt) -> int:
    from scapy.layers.l2 import CookedLinux, Ether

    if isinstance(pkt, Ether):
        return int(LinkType.ETHERNET)
    if isinstance(pkt, CookedLinux):
        return int(LinkType.LINUX_SLL)
    from scapy.layers.inet import IP
    from scapy.layers.inet6 import IPv6

    if isinstance(pkt, IP | IPv6):
        return int(LinkType.RAW)
    return int(LinkType.ETHERNET)


class PcapFileWriter:
    """A classic pcap file (little-endian, microseconds), written as packets arrive and flushed
    every second, so an interrupted capture still leaves a readable file."""

    def __init__(self, path: str):
        self.f = open(path, "wb")  # noqa: SIM115 - closed by close()
        self.linktype: int | None = None
        self.last_flush = 0.0

    def write(self, ts: float, data: bytes, linktype: int) -> None:
        if self.linktype is None:
            self.linktype = linktype
            self.f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, linktype))
        sec = int(ts)
        usec = min(int(round((ts - sec) * 1e6)), 999_999)
        self.f.write(struct.pack("<IIII", sec, usec, len(data), len(data)))
        self.f.write(data)
        now = time.monotonic()
        if now - self.last_flush > 1.0:
            self.f.flush()
            self.last_flush = now

    def close(self) -> None:
        if self.linktype is None:  # no packet: still a valid, empty capture
            self.f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        self.f.close()
