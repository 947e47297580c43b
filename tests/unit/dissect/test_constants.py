"""ApiKey and ErrorCode: one member per API of the table and per error of the error table."""

from __future__ import annotations

from analyzer.dissect import protocol_table as pt
from analyzer.dissect import schema
from analyzer.dissect.constants import ApiKey, ErrorCode
from analyzer.dissect.decoder import snake
from analyzer.dissect.errors import ERRORS


def test_every_api_of_the_table_has_a_member_named_after_it():
    assert sorted(int(k) for k in ApiKey) == sorted(pt.API_NAMES)
    for key in pt.API_NAMES:
        assert ApiKey(key).name == snake(schema.api_name(key)).upper()


def test_known_api_keys():
    assert ApiKey.PRODUCE == 0
    assert ApiKey.FETCH == 1
    assert ApiKey.SASL_HANDSHAKE == 17
    assert ApiKey.API_VERSIONS == 18
    assert ApiKey.SASL_AUTHENTICATE == 36
    assert ApiKey.CONSUMER_GROUP_HEARTBEAT == 68
    assert ApiKey.DESCRIBE_TOPIC_PARTITIONS == 75
    assert ApiKey.SHARE_FETCH == 78
    assert ApiKey.LIST_CONFIG_RESOURCES == 74  # ListClientMetricsResources in 3.9: newest name wins


def test_error_codes_are_the_error_table():
    assert {e.value: e.name for e in ErrorCode} == {code: name for code, (name, _) in ERRORS.items()}
    assert ErrorCode.UNKNOWN_SERVER_ERROR == -1
    assert ErrorCode.NONE == 0
    assert ErrorCode.UNSUPPORTED_VERSION == 35
    assert max(ErrorCode) == 135


def test_members_are_plain_ints_where_it_matters():
    assert {ApiKey.PRODUCE: "x"}[0] == "x"  # hash/eq as int: usable as dict keys and in sets
    assert 78 in frozenset((ApiKey.FETCH, ApiKey.SHARE_FETCH))
