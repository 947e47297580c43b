"""Every issue code the analyzer reports, declared once.

Each declaration is an :class:`IssueKind`: the code, its default severity, the stage that
reports it and a one-line summary of what it means for a user. Calling a kind builds the
:class:`~analyzer.model.Issue`::

    DECODE_TRUNCATED("topics: needs 4 bytes, 2 left", offset=12, where="produce_request.topics")

A few codes have a severity that depends on where they happen (a cut-off batch is normal at the
end of a Fetch response, damage in a Produce request). Their declaration lists the other
severities and when they apply; ``severity=`` accepts only those, so a call site cannot pick a
severity the registry does not document.

Code compares issues by code: ``issue.code == CAPTURE_UNKNOWN_FORMAT.code``; ``REGISTRY[code]``
gives the declaration of a code (its stage, summary...) to front ends.
``tools/gen_issues.py`` writes the README's table of issue codes and the export schema's list
of codes from this module.

Severity policy (every declaration follows it; the README repeats it above its table):

* **error**: bytes that violate the schema or the protocol's rules and that no known peer
  explains (a field cut short, a length that cannot be, a body that fits another version's
  layout, a damaged capture). ``check`` fails on them by default (``kafka.protocol-errors``).
* **warning**: a *named, recognised peer behaviour* (a ``quirk.*`` code): the message says what
  the peer did, which implementation does it (from the ApiVersions client software, the
  broker's answers, or the exact byte signature) and a reference (an upstream issue, a KIP);
  the bytes are decoded as the peer meant them (``kafka.peer-quirks``). Also a warning: bytes
  that parse but that Kafka's own validation rejects (``records.*`` checks of LogValidator /
  DefaultRecordBatch, sequence continuity per producer and partition: ``kafka.invalid-batches``),
  and capture conditions that lose data (gaps, drops).
* **note**: facts (acks=0 without an answer, a connection seen mid-stream, TLS not decrypted).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from analyzer.model import Issue, Severity

# The stages that report issues, in pipeline order (the README table follows this order).
STAGES = ("capture", "reassembly", "tls", "framing", "decode", "records", "pairing", "spark")

CODE_RE = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)*\.[a-z0-9]+(_[a-z0-9]+)*$")


class IssueKind:
    """One declared issue code; calling it builds an :class:`Issue` of that code."""

    __slots__ = ("code", "severity", "stage", "summary", "overrides")

    def __init__(
        self,
        code: str,
        severity: Severity,
        stage: str,
        summary: str,
        overrides: Mapping[Severity, str] | None = None,
    ) -> None:
        self.code = code
        self.severity = severity
        self.stage = stage
        self.summary = summary
        # other severities this code is reported with -> when (documentation and a guard)
        self.overrides: Mapping[Severity, str] = MappingProxyType(dict(overrides or {}))

    def __call__(
        self,
        message: str,
        offset: int | None = None,
        where: str | None = None,
        *,
        severity: Severity | None = None,
    ) -> Issue:
        if severity is None or severity is self.severity:
            return Issue(self.severity, self.code, message, offset, where)
        if severity not in self.overrides:
            raise ValueError(
                f"{self.code} is declared {self.severity}; {severity} is not a documented override"
            )
        return Issue(severity, self.code, message, offset, where)

    @property
    def severities(self) -> frozenset[Severity]:
        """Every severity an issue of this code may have."""
        return frozenset((self.severity, *self.overrides))

    def __repr__(self) -> str:
        return f"IssueKind({self.code!r}, {self.severity})"


_REGISTRY: dict[str, IssueKind] = {}

# Every declared code, in declaration order (grouped by stage in pipeline order).
REGISTRY: Mapping[str, IssueKind] = MappingProxyType(_REGISTRY)


def _declare(
    code: str,
    severity: Severity,
    stage: str,
    summary: str,
    overrides: Mapping[Severity, str] | None = None,
) -> IssueKind:
    if code in _REGISTRY:
        raise ValueError(f"issue code {code} declared twice")
    if not CODE_RE.match(code):
        raise ValueError(f"issue code {code!r} is not of the form stage.snake_name")
    if stage not in STAGES:
        raise ValueError(f"issue code {code}: unknown stage {stage!r}")
    kind = _REGISTRY[code] = IssueKind(code, severity, stage, summary, overrides)
    return kind


ERROR = Severity.ERROR
WARNING = Severity.WARNING
NOTE = Severity.NOTE

# -- capture files ------------------------------------------------------------------------------

CAPTURE_UNKNOWN_FORMAT = _declare(
    "capture.unknown_format",
    ERROR,
    "capture",
    "The file is not a pcap or pcapng capture (or is empty); nothing is analysed.",
)
CAPTURE_TRUNCATED = _declare(
    "capture.truncated",
    ERROR,
    "capture",
    "The capture file ends in the middle of a header or packet; every packet before is analysed.",
)
CAPTURE_CORRUPT = _declare(
    "capture.corrupt",
    ERROR,
    "capture",
    "The capture file is damaged (impossible record length, bad byte-order magic, broken gzip or "
    "zstd data); reading stops there.",
)
CAPTURE_BAD_BLOCK = _declare(
    "capture.bad_block",
    ERROR,
    "capture",
    "A pcapng packet block names an unknown interface or has a bad length: that packet is skipped.",
)
CAPTURE_NO_TCP = _declare(
    "capture.no_tcp",
    ERROR,
    "capture",
    "The capture holds packets but no TCP traffic, so no Kafka.",
)
CAPTURE_UNREADABLE = _declare(
    "capture.unreadable",
    ERROR,
    "capture",
    "The file could not be opened or read (Spark front end).",
)
CAPTURE_BAD_OPTION = _declare(
    "capture.bad_option",
    WARNING,
    "capture",
    "An option of a pcapng Interface Description Block runs past its block: the options after it "
    "are ignored, the packets still read.",
)
CAPTURE_SNAPLEN = _declare(
    "capture.snaplen",
    WARNING,
    "capture",
    "Packets were cut short of their original length by the capture's snaplen: the Kafka frames "
    "in them are incomplete (capture with tcpdump -s 0).",
)
CAPTURE_CONCATENATED = _declare(
    "capture.concatenated",
    WARNING,
    "capture",
    "Another pcap file header in the middle of the file (captures concatenated with cat): reading "
    "goes on with its byte order and link type.",
)
CAPTURE_PACKETS_DROPPED = _declare(
    "capture.packets_dropped",
    WARNING,
    "capture",
    "The live capture lost packets (the kernel's ring was full, or the analysis fell behind): "
    "the results are partial and stream gaps after it may come from the drops.",
)
CAPTURE_DROPS_UNKNOWN = _declare(
    "capture.drops_unknown",
    NOTE,
    "capture",
    "The live capture backend (scapy) cannot count the packets the kernel dropped: losses "
    "show only as stream gaps.",
)
CAPTURE_WORKER_FAILED = _declare(
    "capture.worker_failed",
    ERROR,
    "capture",
    "A live capture worker process ended without its results: the flows it handled are missing.",
)
CAPTURE_SOURCE_FAILED = _declare(
    "capture.source_failed",
    ERROR,
    "capture",
    "A live capture could not start or stopped (no such interface, no permission, a bad BPF "
    "filter): a usage error.",
)

# -- TCP reassembly -----------------------------------------------------------------------------

STREAM_GAP = _declare(
    "stream.gap",
    WARNING,
    "reassembly",
    "Bytes of one direction of a connection were never captured; the frame in progress is lost.",
)

STREAM_EVICTED = _declare(
    "stream.evicted",
    WARNING,
    "reassembly",
    "More TCP connections were open at once than are tracked (``max_connections``, "
    "``--max-connections``): the longest-idle ones were closed early, their frames in progress lost.",
)

# -- TLS -----------------------------------------------------------------------------------------

TLS_NOT_DECRYPTED = _declare(
    "tls.not_decrypted",
    NOTE,
    "tls",
    "A TLS connection is not decrypted: no key log was given (a note), or the key log has no "
    "secrets for it (a warning).",
    {WARNING: "the key log was given but has no secrets for this connection"},
)
TLS_NO_HANDSHAKE = _declare(
    "tls.no_handshake",
    NOTE,
    "tls",
    "A TLS connection whose handshake was not captured (it started before the capture): its "
    "records cannot be decrypted.",
)
TLS_PARTIAL_KEYS = _declare(
    "tls.partial_keys",
    NOTE,
    "tls",
    "The key log lacks one of a TLS 1.3 connection's secrets: the records protected with it "
    "are not decrypted.",
)
TLS_WRONG_KEY = _declare(
    "tls.wrong_key",
    ERROR,
    "tls",
    "A TLS record does not decrypt with the key log's secret for its connection: the key is "
    "wrong (that direction stops).",
)
TLS_BAD_RECORD = _declare(
    "tls.bad_record",
    ERROR,
    "tls",
    "A TLS record fails authentication (damaged bytes): its plaintext is a gap for the Kafka framer.",
)
TLS_DECRYPT_FAILED = _declare(
    "tls.decrypt_failed",
    ERROR,
    "tls",
    "Several TLS records in a row failed authentication: decryption of that direction stops.",
)
TLS_BAD_RECORD_HEADER = _declare(
    "tls.bad_record_header",
    ERROR,
    "tls",
    "A TLS record header is impossible (length beyond 2^14+2048 or a bad content type): that "
    "direction stops.",
)
TLS_RESYNC_FAILED = _declare(
    "tls.resync_failed",
    ERROR,
    "tls",
    "After a TCP gap no later TLS record could be found and decrypted: the rest of that direction is lost.",
)
TLS_BAD_HELLO = _declare(
    "tls.bad_hello",
    ERROR,
    "tls",
    "A ClientHello or ServerHello is malformed: the connection's TLS facts are unknown.",
)
TLS_INCOMPLETE_RECORD = _declare(
    "tls.incomplete_record", WARNING, "tls", "The connection ended inside a TLS record: its bytes are lost."
)
TLS_GAP = _declare(
    "tls.gap",
    WARNING,
    "tls",
    "Bytes of a TLS stream were never captured: decryption resynchronises on the next record.",
)
TLS_RESYNC = _declare(
    "tls.resync",
    WARNING,
    "tls",
    "After a TCP gap the next TLS record and its sequence number were found: decryption goes on.",
)
TLS_UNSUPPORTED_SUITE = _declare(
    "tls.unsupported_suite",
    WARNING,
    "tls",
    "The negotiated TLS version or cipher suite is not one the analyzer decrypts.",
)
TLS_KEYLOG_BAD_LINE = _declare(
    "tls.keylog_bad_line",
    WARNING,
    "tls",
    "A line of the key log file is not in the NSS key log format: it is ignored.",
)
TLS_ALERT = _declare(
    "tls.alert",
    WARNING,
    "tls",
    "A TLS alert other than close_notify: a warning alert (an error when the alert is fatal).",
    {ERROR: "the alert is fatal"},
)

# -- Kafka framing ------------------------------------------------------------------------------

FRAMING_NOT_KAFKA = _declare(
    "framing.not_kafka",
    NOTE,
    "framing",
    "A TCP connection does not carry decodable Kafka; it is left out.",
)
FRAMING_RESYNC = _declare(
    "framing.resync",
    WARNING,
    "framing",
    "Bytes were skipped to find the next Kafka frame (after a gap or a connection seen mid-stream).",
)
FRAMING_BAD_SIZE = _declare(
    "framing.bad_size",
    WARNING,
    "framing",
    "A frame size prefix is negative or beyond the maximum frame size; framing resynchronises.",
)
FRAMING_INCOMPLETE = _declare(
    "framing.incomplete",
    WARNING,
    "framing",
    "A direction ends with bytes that are not a complete frame (the capture or connection ended).",
)

# -- message decoding ---------------------------------------------------------------------------

DECODE_TRUNCATED = _declare(
    "decode.truncated",
    ERROR,
    "decode",
    "A message ends before a field it declares: decoding stops there, the fields before are kept.",
    {WARNING: "when the frame is too short for a request or response header"},
)
DECODE_BAD_VARINT = _declare(
    "decode.bad_varint",
    ERROR,
    "decode",
    "A varint is longer than 10 bytes: decoding stops there.",
)
DECODE_BAD_LENGTH = _declare(
    "decode.bad_length",
    ERROR,
    "decode",
    "A string, bytes or array length is negative (other than -1 for null): decoding stops there.",
)
DECODE_BAD_COUNT = _declare(
    "decode.bad_count",
    ERROR,
    "decode",
    "An array or tagged-field count cannot fit in the bytes left: decoding stops there.",
)
DECODE_ELEMENT_LIMIT = _declare(
    "decode.element_limit",
    WARNING,
    "decode",
    "A message holds more array elements than are decoded (the per-message ``max_elements`` "
    "budget, ``--max-elements``): decoding stops at the limit, the rest of the message is not shown "
    "(an array of fixed-size scalars keeps the values within the budget; the fields after it are "
    "still decoded).",
)
DECODE_UNEXPECTED_NULL = _declare(
    "decode.unexpected_null",
    WARNING,
    "decode",
    "A field is null although it is not nullable in this version.",
)
DECODE_BAD_UTF8 = _declare(
    "decode.bad_utf8",
    WARNING,
    "decode",
    "A string field is not valid UTF-8 (shown with backslash escapes).",
)
DECODE_UNKNOWN_ERROR_CODE = _declare(
    "decode.unknown_error_code",
    WARNING,
    "decode",
    "An error code field holds a value that is not a Kafka error code.",
)
DECODE_TAGGED_SIZE = _declare(
    "decode.tagged_size",
    WARNING,
    "decode",
    "A known tagged field is longer than its decoded content.",
)
DECODE_UNKNOWN_API = _declare(
    "decode.unknown_api",
    WARNING,
    "decode",
    "The API key is not in the protocol table: only the header is decoded.",
)
DECODE_UNSUPPORTED_VERSION = _declare(
    "decode.unsupported_version",
    WARNING,
    "decode",
    "The API version is outside the versions the protocol table knows: only the header is decoded.",
)
DECODE_TRAILING_BYTES = _declare(
    "decode.trailing_bytes",
    WARNING,
    "decode",
    "Bytes are left after the end of a decoded message body.",
)
DECODE_API_VERSIONS_FALLBACK = _declare(
    "decode.api_versions_fallback",
    NOTE,
    "decode",
    "An UNSUPPORTED_VERSION ApiVersions answer fits neither the v0 nor the requested layout; decoded as v0.",
)

QUIRK_MOCK_API_VERSIONS = _declare(
    "quirk.mock_api_versions",
    WARNING,
    "decode",
    "The librdkafka mock cluster answers an ApiVersions request it rejects with a body of no Kafka "
    "layout (the array count written as N, not N+1; entries and body without tagged fields): "
    "decoded as the mock meant it.",
)

QUIRK_MOCK_METADATA_TRAILING_BYTE = _declare(
    "quirk.mock_metadata_trailing_byte",
    WARNING,
    "decode",
    "The librdkafka mock cluster (its cluster id says mockCluster...) ends its flexible (v9+) "
    "Metadata responses with one zero byte more than the layout holds: the response decodes whole before it.",
)
QUIRK_MOCK_LEAVE_GROUP_LAYOUT = _declare(
    "quirk.mock_leave_group_layout",
    WARNING,
    "decode",
    "A LeaveGroup v3+ response written in the v1-v2 layout (throttle_time_ms, error_code; no members "
    "array), as the librdkafka mock cluster answers every LeaveGroup (it reads each request as v0-v2, "
    "so a v3+ request's member is not found and it answers UNKNOWN_MEMBER_ID): decoded as v2.",
)
QUIRK_LIBRDKAFKA_METADATA_PLACEHOLDER = _declare(
    "quirk.librdkafka_metadata_placeholder",
    WARNING,
    "decode",
    "A flexible (v9+) Metadata request for all topics whose null topic array is the 4-byte "
    "placeholder librdkafka never shrinks to a varint (librdkafka issue #5049): the broker reads "
    "allow_auto_topic_creation from the placeholder; decoded as the client meant it.",
)
QUIRK_KAFKA_GO_SUBSCRIPTION = _declare(
    "quirk.kafka_go_subscription",
    WARNING,
    "decode",
    "A consumer-protocol subscription labelled version 1 or later but written in the version-0 "
    "layout (owned_partitions missing), as segmentio/kafka-go 0.2 writes it: decoded as v0.",
)
DECODE_LAYOUT_MISMATCH = _declare(
    "decode.layout_mismatch",
    ERROR,
    "decode",
    "A message body does not fit the layout of its version but fits another (a neighbouring "
    "version, or its version with fields left out): reported once by its cause, decoded as sent.",
)

# -- record batches and message sets ------------------------------------------------------------

RECORDS_UNKNOWN_MAGIC = _declare(
    "records.unknown_magic",
    ERROR,
    "records",
    "A record batch or message has a magic byte other than 0, 1 or 2: the rest of the set is skipped.",
)
RECORDS_BAD_LENGTH = _declare(
    "records.bad_length",
    ERROR,
    "records",
    "A batch or message size is below the minimum for its magic: the rest of the set is skipped.",
)
RECORDS_INNER_MAGIC_MISMATCH = _declare(
    "records.inner_magic_mismatch",
    WARNING,
    "records",
    "A message inside a compressed wrapper has another magic than its wrapper.",
)
RECORDS_TRUNCATED = _declare(
    "records.truncated",
    ERROR,
    "records",
    "A batch or message inside decompressed data is cut short.",
)
RECORDS_PARTIAL_BATCH = _declare(
    "records.partial_batch",
    NOTE,
    "records",
    "The last record batch of a records field is cut short (brokers do this at the end of a Fetch response).",
    {ERROR: "in a request, where a cut-off batch is damage"},
)
RECORDS_PARTIAL_MESSAGE = _declare(
    "records.partial_message",
    NOTE,
    "records",
    "The last legacy message of a message set is cut short (brokers do this at the end of a Fetch response).",
    {ERROR: "in a request, where a cut-off message is damage"},
)
RECORDS_BAD_RECORD = _declare(
    "records.bad_record",
    ERROR,
    "records",
    "A record or legacy message does not parse (a length or count does not fit, bytes are left over, "
    "a compressed wrapper is null).",
)
RECORDS_BAD_VARINT = _declare(
    "records.bad_varint",
    ERROR,
    "records",
    "A record varint is too long or cut by the end of the data.",
)
RECORDS_CRC_MISMATCH = _declare(
    "records.crc_mismatch",
    ERROR,
    "records",
    "A batch CRC-32C or message CRC-32 does not match its bytes.",
)
RECORDS_DECOMPRESSION_FAILED = _declare(
    "records.decompression_failed",
    ERROR,
    "records",
    "Compressed records could not be decompressed (bad data or unknown codec).",
)
RECORDS_DECOMPRESSION_LIMIT = _declare(
    "records.decompression_limit",
    ERROR,
    "records",
    "Compressed records would expand beyond the size, ratio or nesting limits: not decompressed.",
)
RECORDS_LZ4_LEGACY_CHECKSUM = _declare(
    "records.lz4_legacy_checksum",
    NOTE,
    "records",
    "An LZ4 frame header checksum covers the magic bytes (Kafka 0.8/0.9 framing, KAFKA-3160); accepted. "
    "Not reported for a magic 0 message, where it is the norm (codecs.decompress returns it as a note).",
    {WARNING: "in a magic 1 message or a magic 2 batch, whose producers should frame LZ4 correctly"},
)
RECORDS_RECORD_COUNT_MISMATCH = _declare(
    "records.record_count_mismatch",
    ERROR,
    "records",
    "A batch's record count is negative or more than its data holds.",
)
RECORDS_TRAILING_BYTES = _declare(
    "records.trailing_bytes",
    ERROR,
    "records",
    "Bytes are left in a batch after its last declared record.",
)
RECORDS_BAD_HEADER_KEY = _declare(
    "records.bad_header_key",
    WARNING,
    "records",
    "A record header key is not valid UTF-8.",
)
RECORDS_BAD_CONTROL_RECORD = _declare(
    "records.bad_control_record",
    ERROR,
    "records",
    "A control record (transaction marker...) has a key or value too short for its type.",
)

RECORDS_BAD_CONTROL_COUNT = _declare(
    "records.bad_control_count",
    ERROR,
    "records",
    "A control batch declares other than one record: Kafka's control batches hold exactly one "
    "control record (the transaction marker), so the count is damage or a hostile claim.",
)

RECORDS_RECORD_LIMIT = _declare(
    "records.record_limit",
    WARNING,
    "records",
    "A batch or compressed wrapper holds more records than are decoded one by one (the "
    "``max_records`` limit, ``--max-records``): the rest are counted, not decoded.",
)
RECORDS_ISSUES_SUPPRESSED = _declare(
    "records.issues_suppressed",
    WARNING,
    "records",
    "A records field repeats the same problem many times: the first few are listed, the rest "
    "counted in this one issue.",
)
RECORDS_DECOMPRESSION_BUDGET = _declare(
    "records.decompression_budget",
    ERROR,
    "records",
    "The records of one request or response (all its partitions and nested wrappers) would "
    "decompress to more than the per-message budget (``max_total_output``, "
    "``--max-decompressed``): the rest is not decompressed.",
)

QUIRK_MOCK_ZERO_CRC = _declare(
    "quirk.mock_zero_crc",
    WARNING,
    "records",
    "A control batch (a transaction marker) with CRC 0: the librdkafka mock cluster writes its "
    "markers without computing the CRC. Any other CRC mismatch is records.crc_mismatch.",
)

RECORDS_EMPTY_BATCH = _declare(
    "records.empty_batch",
    WARNING,
    "records",
    "A producer's record batch declares 0 records (Kafka's LogValidator: 'Invalid reported count "
    "for record batch'): the broker rejects it with INVALID_RECORD.",
)
RECORDS_BAD_OFFSET_RANGE = _declare(
    "records.bad_offset_range",
    WARNING,
    "records",
    "A producer's record batch whose last_offset_delta is not record_count - 1 (LogValidator: "
    "'Inconsistent batch offset range'): its offsets would overlap the next batch's.",
)
RECORDS_BAD_OFFSET_DELTA = _declare(
    "records.bad_offset_delta",
    WARNING,
    "records",
    "The records of a producer's batch do not carry offset deltas 0..n-1 in order (LogValidator "
    "rejects non-contiguous inner offsets); checked when record bodies are decoded.",
)
RECORDS_BAD_TIMESTAMP = _declare(
    "records.bad_timestamp",
    WARNING,
    "records",
    "A producer's CreateTime batch whose max_timestamp is before its base_timestamp, or a record "
    "timestamp outside the batch's [base, max] range.",
)
RECORDS_CLIENT_CONTROL_BATCH = _declare(
    "records.client_control_batch",
    WARNING,
    "records",
    "A Produce request carries a control batch (LogValidator: 'Clients are not allowed to write "
    "control records').",
)
RECORDS_MIXED_MAGIC = _declare(
    "records.mixed_magic",
    WARNING,
    "records",
    "The batches of one partition in a Produce request have different magic bytes (LogValidator: "
    "'Batch magic is not the same as the first batch's').",
)
RECORDS_PRODUCE_BATCHES = _declare(
    "records.produce_batches",
    WARNING,
    "records",
    "A partition of a Produce v3+ request holds other than exactly one magic 2 batch "
    "(ProduceRequest.validateRecords): the broker answers INVALID_RECORD.",
)
RECORDS_TRANSACTIONAL_WITHOUT_ID = _declare(
    "records.transactional_without_id",
    WARNING,
    "records",
    "A Produce request carries a transactional batch but no transactional_id: the broker cannot "
    "check the transaction and rejects it.",
)
RECORDS_BAD_SEQUENCE = _declare(
    "records.bad_sequence",
    WARNING,
    "records",
    "An idempotent producer's base sequence does not continue its previous batch for that "
    "partition and epoch across the capture (a gap or a step back that is not a retry), or is "
    "negative: the broker answers OUT_OF_ORDER_SEQUENCE_NUMBER or INVALID_RECORD.",
)

RECORDS_COORDINATOR_BAD_KEY = _declare(
    "records.coordinator_bad_key",
    ERROR,
    "records",
    "A record of an internal topic (__consumer_offsets, __transaction_state, __share_group_state) "
    "without a key, or with a key too short for the int16 that names its record type: the "
    "coordinators write no such record.",
)
RECORDS_COORDINATOR_UNKNOWN_TYPE = _declare(
    "records.coordinator_unknown_type",
    WARNING,
    "records",
    "A record of an internal topic whose key starts with a record type the coordinator record "
    "schemas do not know (a newer Kafka's record): its key and value are left undecoded.",
)
RECORDS_COORDINATOR_UNKNOWN_VERSION = _declare(
    "records.coordinator_unknown_version",
    WARNING,
    "records",
    "A record of an internal topic whose value starts with a version its record type's value "
    "schema does not have (a newer Kafka's record): the value is left undecoded.",
)

# -- request/response pairing -------------------------------------------------------------------

PAIRING_NO_RESPONSE = _declare(
    "pairing.no_response",
    NOTE,
    "pairing",
    "A request has no response in the capture (the capture or the connection ended first).",
    {WARNING: "when a later request was answered first or its correlation id was reused"},
)
PAIRING_NO_REQUEST = _declare(
    "pairing.no_request",
    NOTE,
    "pairing",
    "A response has no request in the capture (the connection was seen mid-stream).",
    {WARNING: "when the connection's SYN was captured, so the request should have been seen"},
)
PAIRING_ACKS0 = _declare(
    "pairing.acks0",
    NOTE,
    "pairing",
    "A Produce request with acks=0: no response is expected.",
)

QUIRK_ACKS0_ANSWERED = _declare(
    "quirk.acks0_answered",
    WARNING,
    "pairing",
    "The broker answers Produce requests sent with acks=0, which Kafka never answers (Tansu and the "
    "librdkafka mock cluster do): "
    "the answers are paired by correlation id and decoded; one warning per connection with the count.",
)
QUIRK_ERROR_TOO_NEW = _declare(
    "quirk.error_too_new",
    WARNING,
    "pairing",
    "A response carries an error code that the request's version cannot receive (e.g. "
    "MEMBER_ID_REQUIRED below JoinGroup v4, KIP-394): the broker, named when known, ignored the "
    "version the client asked for.",
)
QUIRK_FETCH_MAGIC_TOO_NEW = _declare(
    "quirk.fetch_magic_too_new",
    WARNING,
    "pairing",
    "A Fetch response carries record batches in a newer format than the request's version reads "
    "(magic 2 to a Fetch v0-v3 client, magic 1 to v0-v1), where Kafka converts them down: the "
    "broker, named when known (Tansu does this), sent what it stored; decoded as sent.",
)
QUIRK_LEGACY_FORMAT_REJECTED = _declare(
    "quirk.legacy_format_rejected",
    WARNING,
    "pairing",
    "A Produce v0-v2 response answers UNSUPPORTED_VERSION for a partition whose request records are "
    "a legacy message set (magic 0 or 1), the format those versions carry and Kafka accepts: the "
    "broker, named when known (the librdkafka mock cluster rejects compressed ones), refused a "
    "valid message-set format.",
)
QUIRK_SIMPLE_COMMIT_REJECTED = _declare(
    "quirk.simple_commit_rejected",
    WARNING,
    "pairing",
    "An OffsetCommit v1+ with generation -1 and an empty member id (a simple or admin commit) "
    "answered UNKNOWN_MEMBER_ID for a group the capture shows empty (its members left with "
    "LeaveGroup, or none was seen): Kafka accepts such a commit for an empty group; the broker, "
    "named when known (the librdkafka mock cluster does this), rejected it.",
)
QUIRK_LIBRDKAFKA_TAGGED_HANGUP = _declare(
    "quirk.librdkafka_tagged_hangup",
    WARNING,
    "pairing",
    "A librdkafka client before 2.2 closed the connection right after an ApiVersions v3+ answer with tagged "
    "fields, which it misreads (librdkafka PR #4278).",
)

# -- Spark front end ----------------------------------------------------------------------------

SPARK_ANALYSIS_FAILED = _declare(
    "spark.analysis_failed",
    ERROR,
    "spark",
    "The analysis of a file stopped on an internal error; everything before it is kept.",
)

del ERROR, WARNING, NOTE
