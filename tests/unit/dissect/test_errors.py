"""Kafka error code table."""

from __future__ import annotations

import pytest

from analyzer.dissect.errors import CODES, ERRORS, error_name, is_retriable


@pytest.mark.parametrize(
    ("code", "name", "retriable"),
    [
        (-1, "UNKNOWN_SERVER_ERROR", False),
        (0, "NONE", False),
        (1, "OFFSET_OUT_OF_RANGE", False),
        (2, "CORRUPT_MESSAGE", True),
        (3, "UNKNOWN_TOPIC_OR_PARTITION", True),
        (6, "NOT_LEADER_OR_FOLLOWER", True),
        (7, "REQUEST_TIMED_OUT", True),
        (8, "BROKER_NOT_AVAILABLE", False),
        (9, "REPLICA_NOT_AVAILABLE", True),
        (13, "NETWORK_EXCEPTION", True),
        (16, "NOT_COORDINATOR", True),
        (27, "REBALANCE_IN_PROGRESS", False),
        (35, "UNSUPPORTED_VERSION", False),
        (41, "NOT_CONTROLLER", True),
        (47, "INVALID_PRODUCER_EPOCH", False),
        (51, "CONCURRENT_TRANSACTIONS", True),
        (56, "KAFKA_STORAGE_ERROR", True),
        (74, "FENCED_LEADER_EPOCH", True),
        (84, "ELECTION_NOT_NEEDED", True),
        (87, "INVALID_RECORD", False),
        (89, "THROTTLING_QUOTA_EXCEEDED", True),
        (90, "PRODUCER_FENCED", False),
        (100, "UNKNOWN_TOPIC_ID", True),
        (110, "FENCED_MEMBER_EPOCH", False),
        (113, "STALE_MEMBER_EPOCH", False),
        (120, "TRANSACTION_ABORTABLE", False),
        (121, "INVALID_RECORD_STATE", False),
        (122, "SHARE_SESSION_NOT_FOUND", True),
        (128, "INVALID_REGULAR_EXPRESSION", False),
        (129, "REBOOTSTRAP_REQUIRED", False),
        (130, "STREAMS_INVALID_TOPOLOGY", False),
        (133, "SHARE_SESSION_LIMIT_REACHED", True),
    ],
)
def test_known_codes(code, name, retriable):
    assert error_name(code) == name
    assert is_retriable(code) is retriable
    assert CODES[name] == code


def test_codes_are_contiguous_and_names_unique():
    assert sorted(ERRORS) == list(range(-1, max(ERRORS) + 1))
    assert max(ERRORS) >= 133
    all_names = [name for name, _ in ERRORS.values()]
    assert len(set(all_names)) == len(all_names)
    assert all(name.isupper() and " " not in name for name in all_names)
    assert all(isinstance(r, bool) for _, r in ERRORS.values())


def test_unknown_codes():
    assert error_name(-2) is None
    assert is_retriable(-2) is None
    assert error_name(30000) is None
    assert is_retriable(30000) is None
