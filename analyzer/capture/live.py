"""Live capture with scapy: ``sniff(store=False)`` with a BPF filter, yielding the same
``(index, ts, linktype, data)`` packets as the file readers, optionally saved to a pcap.

scapy is imported here only (the ``live`` extra); the core never imports it.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Iterator

_STOP = object()


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
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)  # type: ignore[attr-defined]
            s.close()
        except (PermissionError, OSError):
            return (
                f"no permission to capture on {interface}: run as root, or give the Python "
                "interpreter CAP_NET_RAW (setcap cap_net_raw,cap_net_admin=eip $(realpath $(which python3)))"
            )
    return None


class LiveCapture:
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
        self.error: str | None = None
        self._q: queue.Queue = queue.Queue(maxsize=100_000)
        self._stop = threading.Event()
        self._writer = None
        self._thread: threading.Thread | None = None

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        from scapy.all import sniff

        def put(pkt) -> None:
            self._q.put((float(pkt.time), bytes(pkt), _linktype(pkt)))

        try:
            sniff(
                iface=self.interface,
                filter=self.bpf,
                store=False,
                prn=put,
                count=self.count or 0,
                timeout=self.duration,
                stop_filter=lambda _p: self._stop.is_set(),
            )
        except PermissionError:
            self.error = f"no permission to capture on {self.interface}: run as root or grant CAP_NET_RAW"
        except OSError as exc:
            self.error = f"capture on {self.interface} failed: {exc}"
        except Exception as exc:  # scapy raises Scapy_Exception for a bad BPF filter
            self.error = f"capture on {self.interface} failed: {exc}"
        finally:
            self._q.put(_STOP)

    def __iter__(self) -> Iterator[tuple]:
        if self.write:
            from scapy.utils import PcapWriter

            self._writer = PcapWriter(self.write, append=False, sync=True)
        self._thread = threading.Thread(target=self._run, name="sniff", daemon=True)
        self._thread.start()
        index = 0
        deadline = time.monotonic() + self.duration + 5 if self.duration else None
        while True:
            try:
                item = self._q.get(timeout=0.5)
            except queue.Empty:
                if deadline is not None and time.monotonic() > deadline:
                    return
                continue
            if item is _STOP:
                return
            ts, data, linktype = item
            index += 1
            if self._writer is not None:
                self._write(ts, data, linktype)
            yield (index, ts, linktype, data)

    def _write(self, ts: float, data: bytes, linktype: int) -> None:
        w = self._writer
        if w.linktype is None:
            w.linktype = linktype
        sec = int(ts)
        w.write_packet(data, sec=sec, usec=int(round((ts - sec) * 1e6)))

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def _linktype(pkt) -> int:
    from scapy.layers.l2 import CookedLinux, Ether

    if isinstance(pkt, Ether):
        return 1
    if isinstance(pkt, CookedLinux):
        return 113
    from scapy.layers.inet import IP
    from scapy.layers.inet6 import IPv6

    if isinstance(pkt, IP | IPv6):
        return 101
    return 1
