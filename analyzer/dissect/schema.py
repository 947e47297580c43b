"""Look-ups over the generated protocol table (analyzer/dissect/protocol_table.py).

A segment is ``(lo, hi, flexible, fields)`` with ``fields`` a tuple of
:class:`~analyzer.dissect.protocol_table.FieldSpec`; these helpers pick the segment that holds a
given version and say whether that version uses the flexible (compact + tagged fields) encoding.
"""

from __future__ import annotations

from functools import lru_cache

from analyzer.dissect.coordinator_table import RECORD_TYPES, SCHEMAS
from analyzer.dissect.protocol_table import API_NAMES, CURRENT_VERSIONS, DATA, HEADERS, MESSAGES

Range = tuple[int, int] | None


def in_versions(rng: Range, version: int) -> bool:
    """True when ``version`` lies in the inclusive range ``rng`` ((lo, hi) or None = never)."""
    return rng is not None and rng[0] <= version <= rng[1]


def _pick(segments: tuple, version: int) -> tuple[tuple, bool] | None:
    for lo, hi, flexible, fields in segments:
        if lo <= version <= hi:
            return fields, in_versions(flexible, version)
    return None


@lru_cache(maxsize=1024)
def message_fields(api_key: int, kind: str, version: int) -> tuple[tuple, bool] | None:
    """Field tuples of ``kind`` ("request"/"response") of ``api_key`` at ``version`` and whether
    that version is flexible; None for an unknown api key or version."""
    segments = MESSAGES.get((api_key, kind))
    return None if segments is None else _pick(segments, version)


@lru_cache(maxsize=16)
def header_fields(kind: str, version: int) -> tuple[tuple, bool] | None:
    """Field tuples of the request/response header at header ``version``, and its flexibility."""
    segments = HEADERS.get(kind)
    return None if segments is None else _pick(segments, version)


@lru_cache(maxsize=128)
def data_fields(name: str, version: int) -> tuple[tuple, bool] | None:
    """Field tuples of the "data" schema ``name`` (e.g. "ConsumerProtocolSubscription")."""
    segments = DATA.get(name)
    return None if segments is None else _pick(segments, version)


@lru_cache(maxsize=128)
def coordinator_fields(name: str, version: int) -> tuple[tuple, bool] | None:
    """Field tuples of the coordinator record key or value schema ``name`` ("OffsetCommitKey",
    "GroupMetadataValue"...) at ``version`` (analyzer/dissect/coordinator_table.py)."""
    segments = SCHEMAS.get(name)
    return None if segments is None else _pick(segments, version)


def coordinator_record_type(topic: str, record_type: int) -> tuple[str, int] | None:
    """(record name, key version) of the record type a key of internal ``topic`` starts with;
    None when the topic is not an internal one or the type is unknown."""
    known = RECORD_TYPES.get(topic)
    return None if known is None else known.get(record_type)


@lru_cache(maxsize=256)
@lru_cache(maxsize=1024)  # per resynchronisation candidate and per counted exchange: any 16-bit key
def version_range(api_key: int) -> tuple[int, int] | None:
    """Lowest and highest known request version of ``api_key`` over all snapshots."""
    segments = MESSAGES.get((api_key, "request"))
    if not segments:
        return None
    return min(s[0] for s in segments), max(s[1] for s in segments)


@lru_cache(maxsize=1)
def request_api_keys() -> tuple[int, ...]:
    """The api keys that have a request schema, ascending."""
    return tuple(sorted({k for k, kind in MESSAGES if kind == "request"}))


def api_name(api_key: int) -> str | None:
    """API name without the Request/Response suffix ("Produce", "Fetch"...); None if unknown."""
    return API_NAMES.get(api_key)


def removed(api_key: int, version: int) -> bool:
    """Was this request version (or the whole API) removed by the newest release the table knows
    (``CURRENT_RELEASE``; Kafka 4.0 removed the oldest versions of many APIs, KIP-896)?"""
    if version_range(api_key) is None:
        return False  # an API the schemas do not know: nothing to say
    rng = CURRENT_VERSIONS.get(api_key)
    return rng is None or not rng[0] <= version <= rng[1]
