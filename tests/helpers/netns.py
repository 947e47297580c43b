"""Running a test module inside a network namespace of its own (root only).

:func:`isolated` creates the namespace (``ip netns add``, its ``lo`` up) and moves the test
process's main thread into it with ``setns(2)``: the sockets, threads (a librdkafka mock
cluster's) and subprocesses (``kafka-analyzer live``, tcpdump) made afterwards live in it, so the
live tests' ``lo`` carries their traffic only, whatever else runs on the machine. At the end the
thread goes back to its namespace and the namespace is deleted. Its name is
``$KLA_TEST_NETNS_PREFIX-NAME-PID-RANDOM`` (prefix ``kla-test`` by default). The one namespace
helper of the tests (the live tests' mock cluster, :mod:`tests.helpers.kafkamock`, runs in it)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import subprocess
import uuid

CLONE_NEWNET = 0x40000000


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


@contextlib.contextmanager
def isolated(name: str):
    """Yield the namespace's name, the calling thread inside it; None (nothing done) when not
    root or without ``ip``."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        yield None
        return
    prefix = os.environ.get("KLA_TEST_NETNS_PREFIX", "kla-test")
    ns = f"{prefix}-{name}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True)
    try:
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True, capture_output=True)
        with entered(ns):
            yield ns
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


@contextlib.contextmanager
def entered(ns: str):
    """The calling thread inside the named namespace ``ns`` (``ip netns add``-ed) until the end,
    then back in its own (other threads stay where they are)."""
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
        try:
            _setns(fd)
        finally:
            os.close(fd)
        try:
            yield
        finally:
            _setns(home)
    finally:
        os.close(home)


@contextlib.contextmanager
def veth_pair(name: str, sender: str, sniffed: str):
    """:func:`isolated` with a veth pair ``sender`` - ``sniffed`` up in it (IPv6 off, so no
    router solicitations join the replay): the live tests replay on one end, capture the other."""
    with isolated(name) as ns:
        assert ns is not None
        subprocess.run(["ip", "link", "add", sender, "type", "veth", "peer", "name", sniffed], check=True)
        for dev in (sender, sniffed):
            subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1"], check=False)
            subprocess.run(["ip", "link", "set", dev, "up"], check=True)
        yield ns
