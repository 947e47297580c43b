"""Error codes a request version cannot receive: the first version of an API that can carry each;
and record batches a Fetch version cannot receive (:func:`records_too_new`).

Kafka's message schemas say which fields each version has, never which error codes it may
return, so the generated protocol table cannot answer this: the rows below are taken from the
KIPs that introduced each error together with the request version that made it possible (a
broker must not send a client an error its version predates: the client cannot know what to do,
e.g. a JoinGroup v1-v3 client does not rejoin with the member id MEMBER_ID_REQUIRED hands out).
Kept small and sourced; an API/error pair that is not here is never reported.
"""

from __future__ import annotations

from analyzer.dissect.constants import ApiKey, ErrorCode
from analyzer.model import Field

K, E = ApiKey, ErrorCode

# (api key, error code) -> (first request version that can receive it, reference)
FIRST_VERSION: dict[tuple[int, int], tuple[int, str]] = {
    (K.JOIN_GROUP, E.MEMBER_ID_REQUIRED): (4, "KIP-394"),
    # producer ids exist from Produce v3 (record batch v2): a v0-v2 request's message sets have none
    (K.PRODUCE, E.UNKNOWN_PRODUCER_ID): (3, "KIP-98"),
    (K.JOIN_GROUP, E.FENCED_INSTANCE_ID): (5, "KIP-345"),
    (K.SYNC_GROUP, E.FENCED_INSTANCE_ID): (3, "KIP-345"),
    (K.HEARTBEAT, E.FENCED_INSTANCE_ID): (3, "KIP-345"),
    (K.OFFSET_COMMIT, E.FENCED_INSTANCE_ID): (7, "KIP-345"),
    (K.OFFSET_FETCH, E.UNSTABLE_OFFSET_COMMIT): (7, "KIP-447"),
    (K.CREATE_TOPICS, E.THROTTLING_QUOTA_EXCEEDED): (6, "KIP-599"),
    (K.DELETE_TOPICS, E.THROTTLING_QUOTA_EXCEEDED): (5, "KIP-599"),
    (K.CREATE_PARTITIONS, E.THROTTLING_QUOTA_EXCEEDED): (3, "KIP-599"),
    (K.FETCH, E.FENCED_LEADER_EPOCH): (9, "KIP-320"),
    (K.FETCH, E.UNKNOWN_LEADER_EPOCH): (9, "KIP-320"),
    (K.LIST_OFFSETS, E.FENCED_LEADER_EPOCH): (4, "KIP-320"),
    (K.LIST_OFFSETS, E.UNKNOWN_LEADER_EPOCH): (4, "KIP-320"),
    (K.FETCH, E.UNKNOWN_TOPIC_ID): (13, "KIP-516"),
    (K.FETCH, E.INCONSISTENT_TOPIC_ID): (13, "KIP-516"),
}


def too_new(api_key: int, version: int, errors: list[int]) -> list[tuple[int, int, str]]:
    """(error code, first version, reference) of each distinct error ``version`` cannot receive."""
    out = []
    for code in dict.fromkeys(errors):
        got = FIRST_VERSION.get((api_key, code))
        if got is not None and version < got[0]:
            out.append((code, got[0], got[1]))
    return out


def error_field(body: Field | None, code: int) -> Field | None:
    """The first error-code field holding ``code`` (records are not walked)."""
    if body is None:
        return None
    stack = [body]
    while stack:
        f = stack.pop()
        if f.value == code and f.name.endswith("error_code"):
            return f
        if f.type != "records" and f.children:
            stack.extend(reversed(f.children))
    return None


def fetch_max_magic(version: int) -> int:
    """The newest record format a Fetch ``version`` client reads: magic 0 for v0-v1, 1 for v2-v3
    (timestamps, KIP-32), 2 from v4 (record batches, KIP-98); Kafka's broker converts what it
    stored down to it (KafkaApis: ``if (versionId <= 1) MAGIC_VALUE_V0 else if (versionId <= 3)
    MAGIC_VALUE_V1``)."""
    return 0 if version <= 1 else 1 if version <= 3 else 2


def records_too_new(api_key: int, version: int, body: Field | None) -> tuple[Field, int, int] | None:
    """In a Fetch response of ``version``: the first batch or message whose magic is newer than
    the version reads, with that magic and the count of such entries; None when there is none
    (and for every other API)."""
    if api_key != K.FETCH or body is None:
        return None
    top = fetch_max_magic(version)
    if top >= 2:
        return None
    first: tuple[Field, int] | None = None
    count = 0
    stack = [body]
    while stack:
        f = stack.pop()
        if f.type == "records":
            for entry in f.children or ():
                magic = entry.value.get("magic") if isinstance(entry.value, dict) else None
                if isinstance(magic, int) and magic > top:
                    count += 1
                    if first is None:
                        first = (entry, magic)
        elif f.children:
            stack.extend(reversed(f.children))
    return None if first is None else (first[0], first[1], count)
