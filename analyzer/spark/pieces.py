"""What the tasks analyse (:class:`Piece`: one capture file, or the rotated files of one
recording) and how an executor opens its files: local paths directly, any other file system
through ``pyarrow.fs`` (:func:`open_uri` streamed, :func:`open_ranged` seekable for splits).
"""

from __future__ import annotations

import os
from typing import BinaryIO, NamedTuple

from analyzer.capture.sets import chain_name

# about this much capture per task: several tasks per core balance uneven pieces
TASK_BYTES = 128 << 20


class Piece(NamedTuple):
    """What one task analyses: one capture file, or the rotated files of one recording (in time
    order, analysed as their concatenation). ``uris`` as the Hadoop listing gives them
    (``file:/...``, ``hdfs://...``); ``sizes`` in bytes."""

    uris: tuple[str, ...]
    sizes: tuple[int, ...]

    @property
    def name(self) -> str:
        """The piece's ``capture`` value: its first file (``(+N more)`` for a chain)."""
        return chain_name(self.uris)

    @property
    def size(self) -> int:
        return sum(self.sizes)


def local_path(uri: str) -> str:
    """The local file path of a ``file:`` URI (or a plain path)."""
    if uri.startswith("file://"):
        return uri[len("file://") :]
    if uri.startswith("file:"):
        return uri[len("file:") :]
    if "://" in uri:
        raise ValueError(f"not a local file: {uri}")
    return uri


READ_BUFFER = 1 << 20  # bytes read from the file system at a time


def open_uri(uri: str) -> BinaryIO:
    """A binary stream of a file, opened on the executor: local files (``file:`` URIs, paths)
    directly; any other URI through ``pyarrow.fs`` (``hdfs://``, ``s3://``, ``gs://``...;
    ``s3a://`` is read as ``s3://``). Streamed in :data:`READ_BUFFER` reads: never held whole.
    Raises OSError with the reason (pyarrow missing, no such file, no access)."""
    if uri.startswith("file:") or "://" not in uri:
        return open(local_path(uri), "rb", buffering=READ_BUFFER)  # noqa: SIM115 - the caller closes it
    try:
        from pyarrow import fs as pafs
    except ImportError as exc:
        raise OSError(
            f"reading {uri.split('://')[0]}:// files on the executors needs pyarrow ({exc})"
        ) from exc
    target = "s3://" + uri[len("s3a://") :] if uri.startswith("s3a://") else uri
    try:
        filesystem, path = pafs.FileSystem.from_uri(target)
        return filesystem.open_input_stream(path, buffer_size=READ_BUFFER)
    except Exception as exc:  # pyarrow raises ArrowInvalid/ArrowIOError/OSError: one message
        raise OSError(str(exc).splitlines()[0] if str(exc) else repr(exc)) from exc


def open_ranged(uri: str) -> tuple[BinaryIO, int]:
    """A seekable file and its size (:data:`~analyzer.capture.split.Opener`), for reading byte
    ranges of a file cut into splits: a plain path directly; any URI (``file:`` included, so
    that the suite runs this way) through ``pyarrow.fs`` (``FileSystem.from_uri``; ``s3a://``
    read as ``s3://``), its size from the file system's file info. Only the ranges read are
    fetched. Raises OSError with one line naming the URI."""
    if "://" not in uri and not uri.startswith("file:"):
        return open(uri, "rb"), os.path.getsize(uri)  # noqa: SIM115 - the caller closes it
    try:
        from pyarrow import fs as pafs
    except ImportError as exc:
        raise OSError(f"{uri}: reading it in splits needs pyarrow ({exc})") from exc
    target = "s3://" + uri[len("s3a://") :] if uri.startswith("s3a://") else uri
    try:
        filesystem, path = pafs.FileSystem.from_uri(target)
        info = filesystem.get_file_info(path)
        if info.type != pafs.FileType.File:
            raise OSError("no such file" if info.type == pafs.FileType.NotFound else "not a file")
        return filesystem.open_input_file(path), info.size
    except Exception as exc:  # pyarrow raises ArrowInvalid/ArrowIOError/OSError: one line
        reason = str(exc).splitlines()[0] if str(exc) else repr(exc)
        raise OSError(f"{uri}: {reason}") from exc


class Named:
    """A stream with the file's URI as its ``name`` (pyarrow's streams have none)."""

    def __init__(self, f, name: str):
        self.f = f
        self.name = name

    def read(self, n: int = -1) -> bytes:
        return self.f.read(n)

    def tell(self) -> int:
        return self.f.tell()

    def close(self) -> None:
        self.f.close()


def open_named(uri: str):
    f = open_uri(uri)
    return f if uri.startswith("file:") or "://" not in uri else Named(f, uri)
