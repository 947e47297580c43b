"""Checksums used by Kafka record formats.

* ``crc32``: CRC-32 (IEEE, the zlib one) protects magic 0/1 messages.
* ``crc32c``: CRC-32C (Castagnoli) protects magic 2 record batches.

Choice of CRC-32C backend: the ``crc32c`` package (ICRAR) is preferred. It uses the SSE4.2 /
ARMv8 CRC instructions when the CPU has them (``crc32c.hardware_based``) and a C slicing-by-8
implementation otherwise, accepts any buffer (bytes, bytearray, memoryview slices: no copy
when checking a batch inside a larger frame) and releases the GIL. ``google_crc32c`` is the
fallback: also C-backed, but it only accepts ``bytes`` (a memoryview would need a copy) and
was measured about 1.5x slower on 1 MiB here. When neither imports, a table-driven
pure-Python implementation keeps the analyzer working (slowly: roughly 10 MB/s).

``CRC32C_IMPLEMENTATION`` names the backend in use ("crc32c", "google_crc32c", "python").
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import zlib
from collections.abc import Callable

__all__ = ["crc32", "crc32c", "crc32c_python", "CRC32C_IMPLEMENTATION"]

Buffer = bytes | bytearray | memoryview


def crc32(data: Buffer) -> int:
    """CRC-32 (IEEE 802.3, as zlib computes it), unsigned."""
    return zlib.crc32(data) & 0xFFFFFFFF


def _make_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _make_table()


def crc32c_python(data: Buffer) -> int:
    """CRC-32C, table-driven pure Python: the last-resort fallback (and a test oracle)."""
    table = _TABLE
    crc = 0xFFFFFFFF
    for b in bytes(data):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _crc32c_extension() -> Callable[[Buffer], int]:
    """The ``crc32c`` package's C function. Its ``__init__`` imports ``importlib.metadata`` for
    the package's ``__version__`` (with email, zipfile, csv...: more than a third of the
    analyzer's start-up), so the extension module is loaded from the package's directory as
    ``crc32c._crc32c``, the name under which a later ``import crc32c`` finds and reuses it.
    Raises ImportError when the package is missing (or blocked in ``sys.modules``)."""
    if "crc32c" in sys.modules or "crc32c._crc32c" in sys.modules:
        import crc32c as _ic  # imported already (None there: blocked, raises ImportError)

        return _ic.crc32c
    spec = importlib.util.find_spec("crc32c")
    for folder in (spec.submodule_search_locations or ()) if spec is not None else ():
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "_crc32c" + suffix)
            if os.path.isfile(path):
                ext = importlib.util.spec_from_file_location("crc32c._crc32c", path)
                if ext is None or ext.loader is None:
                    break
                mod = importlib.util.module_from_spec(ext)
                ext.loader.exec_module(mod)
                sys.modules["crc32c._crc32c"] = mod
                return mod.crc32c
    import crc32c as _ic  # an unusual layout: the package's own import

    return _ic.crc32c


def _select() -> tuple[Callable[[Buffer], int], str]:
    try:
        fn = _crc32c_extension()
    except ImportError:
        pass
    else:
        return fn, "crc32c"
    try:
        import google_crc32c as _g
    except ImportError:
        pass
    else:
        gvalue = _g.value

        def _google(data: Buffer) -> int:
            return gvalue(data if type(data) is bytes else bytes(data))

        return _google, "google_crc32c"
    return crc32c_python, "python"


#: ``crc32c(data) -> int``: CRC-32C (Castagnoli), unsigned. Bound directly to the backend's
#: function (no wrapper call on the hot path).
crc32c: Callable[[Buffer], int]
crc32c, CRC32C_IMPLEMENTATION = _select()
