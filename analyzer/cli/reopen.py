"""``live`` as a service: its output file (``--output``) and its pcap (``--write``) reopened on
``SIGHUP``, the way logrotate wants it (rename the file, then signal): writing goes on in a new
file under the old name. A ``SIGHUP`` without a rename changes nothing (the file is flushed)."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator

_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC


class ReopenFile(io.RawIOBase):
    """A file appended to (``path``); after :meth:`reopen`, the next write first checks that
    ``path`` still names the open file and, if not (renamed, removed), opens ``path`` anew.
    A file that cannot be opened anew is said on stderr and writing goes on in the old one."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = os.open(path, _FLAGS, 0o640)
        self.pending = False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def reopen(self) -> None:
        """Ask for the check at the next write (safe in a signal handler)."""
        self.pending = True

    def _reopen(self) -> None:
        self.pending = False
        try:
            if os.path.samestat(os.stat(self.path), os.fstat(self.fd)):
                return
        except FileNotFoundError:
            pass
        try:
            fd = os.open(self.path, _FLAGS, 0o640)
        except OSError as exc:
            print(
                f"kafka-analyzer: cannot reopen {self.path}: {exc}; still writing the old file",
                file=sys.stderr,
            )
            return
        os.close(self.fd)
        self.fd = fd

    def write(self, b) -> int:
        if self.pending:
            self._reopen()
        view = memoryview(b).cast("B")
        done = 0
        while done < len(view):
            done += os.write(self.fd, view[done:])
        return done

    def close(self) -> None:
        if not self.closed:
            os.close(self.fd)
        super().close()


def output_to(path: str) -> ReopenFile:
    """Send what ``live`` prints on stdout (lines, NDJSON, tables) to ``path`` instead; the
    file to reopen on ``SIGHUP``. Raises OSError when it cannot be opened."""
    raw = ReopenFile(path)
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", errors="replace")
    return raw


@contextlib.contextmanager
def on_hangup(*actions: Callable[[], None]) -> Iterator[None]:
    """Call each of ``actions`` on ``SIGHUP`` (each only sets a flag: the work is done by the
    writer at its next write) instead of ending the process; nothing outside the main thread."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGHUP"):
        yield
        return

    def hup(*_) -> None:
        for act in actions:
            act()

    old = signal.signal(signal.SIGHUP, hup)
    try:
        yield
    finally:
        signal.signal(signal.SIGHUP, old)
