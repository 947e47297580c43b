"""The Kafka protocol's named numbers, in one place: :class:`ApiKey` and :class:`ErrorCode`.

Both enums are generated into :mod:`analyzer.dissect.protocol_table` by ``tools/gen_protocol.py``
(API keys from the schemas' message names, error codes from :mod:`analyzer.dissect.errors`);
import them from here.
"""

from __future__ import annotations

from analyzer.dissect.protocol_table import ApiKey, ErrorCode

__all__ = ["ApiKey", "ErrorCode"]
