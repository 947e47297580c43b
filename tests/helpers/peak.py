"""Peak resident memory of one command, measured so that nothing else's memory counts.

``ru_maxrss`` will not do in a test suite: Linux carries a process's peak RSS over ``fork`` and
``exec`` (``wait4`` and ``RUSAGE_SELF`` report at least the RSS of the parent at the fork), so
once pytest itself has grown past a limit every child "peaks" there. ``VmHWM`` in
``/proc/PID/status`` belongs to the current address space (reset by ``exec``), and writing 5 to
``/proc/self/clear_refs`` resets it for an in-process measurement.
"""

from __future__ import annotations

import sys

# python -c CHILD HWM_FILE ARGS...: runs ``kafka-analyzer ARGS...`` (as ``python -m analyzer``
# does) and writes its own VmHWM in kB to HWM_FILE when it exits
CHILD = """
import atexit, sys
from analyzer.cli import main

def _hwm(path=sys.argv[1]):
    with open("/proc/self/status") as f:
        kb = next(line.split()[1] for line in f if line.startswith("VmHWM:"))
    with open(path, "w") as out:
        out.write(kb)

atexit.register(_hwm)
sys.exit(main(sys.argv[2:]))
"""


def child_argv(hwm_file: str, args: list[str]) -> list[str]:
    """The argv of a ``kafka-analyzer ARGS`` process that reports its peak RSS to ``hwm_file``."""
    return [sys.executable, "-c", CHILD, hwm_file, *args]


def read_child_mb(hwm_file: str) -> float:
    with open(hwm_file) as f:
        return int(f.read()) / 1024


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as f:
        return int(next(line.split()[1] for line in f if line.startswith(field))) / 1024


def reset_peak() -> float:
    """Resets this process's VmHWM to its current RSS; returns that RSS in MB."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _status_mb("VmRSS:")


def peak_mb() -> float:
    """This process's VmHWM in MB: its peak since the last :func:`reset_peak`."""
    return _status_mb("VmHWM:")
