"""Wireshark's Kafka field names (``packet-kafka.c``'s ``hf_kafka_*`` abbreviations, as
``tshark -G fields`` lists them) accepted in every display filter as aliases of the native
names: ``kafka.request_key == 0`` is ``api == 0``, ``kafka.topic_name == "x"`` is
``topic == "x"``.

An alias names exactly what its native field names (same values, same type, same any/all
rules); only the Wireshark fields with a counterpart are here. Left out: framing and dissector
bookkeeping (``kafka.len``, ``kafka.request_frame``, the ``kafka.bad_*`` expert items: see
``issue``), CRC values (``records.crc_ok`` says whether a CRC holds, not its value), and fields
whose counterpart is not one name (``kafka.batch_last_offset_delta``, tagged fields).
"""

from __future__ import annotations

# Wireshark name -> the native name (an exchange, records or decoded field); the order is that of
# ``kafka-analyzer filters``
ALIASES: dict[str, str] = {
    # the header and the exchange
    "kafka.request_key": "api",
    "kafka.response_key": "api",
    "kafka.api_key": "api",
    "kafka.api_version": "version",
    "kafka.request.version": "version",
    "kafka.response.version": "version",
    "kafka.correlation_id": "corr",
    "kafka.client_id": "client_id",
    "kafka.error": "error",
    "kafka.error_message": "error_message",
    "kafka.throttle_time": "throttle_time_ms",
    "kafka.topic_name": "topic",
    "kafka.partition_id": "partition",
    # producers and transactions
    "kafka.transactional_id": "producer.transactional_id",
    "kafka.producer_id": "producer.id",
    "kafka.producer_epoch": "producer.epoch",
    "kafka.batch_base_sequence": "producer.sequence",
    "kafka.transaction_result": "txn.committed",
    "kafka.transaction_timeout": "transaction_timeout_ms",
    "kafka.required_acks": "produce.acks",
    "kafka.timeout": "timeout_ms",
    # records
    "kafka.message_key": "records.key",
    "kafka.message_value": "records.value",
    "kafka.header_key": "records.headers.key",
    "kafka.header_value": "records.headers.value",
    "kafka.batch_codec": "records.codec",
    "kafka.message_codec": "records.codec",
    "kafka.message_magic": "records.magic",
    "kafka.batch_transactional": "records.transactional",
    "kafka.batch_control_batch": "records.control",
    "kafka.message_timestamp": "records.timestamp",
    # fetch and offsets
    "kafka.isolation_level": "isolation_level",
    "kafka.max_wait_time": "max_wait_ms",
    "kafka.min_bytes": "min_bytes",
    "kafka.max_bytes": "max_bytes",
    "kafka.fetch_session_id": "fetch.session_id",
    "kafka.fetch_session_epoch": "fetch.session_epoch",
    "kafka.forgotten_topic_name": "fetch.forgotten_topics_data.topic",
    "kafka.forgotten_topic_partition": "fetch.forgotten_topics_data.partitions",
    "kafka.offset": "offset",
    "kafka.offset_time": "list_offsets.topics.partitions.timestamp",
    "kafka.max_offsets": "max_num_offsets",
    "kafka.log_start_offset": "log_start_offset",
    "kafka.last_stable_offset": "last_stable_offset",
    "kafka.first_offset": "first_offset",
    "kafka.leader_epoch": "leader_epoch",
    "kafka.current_leader_epoch": "current_leader_epoch",
    "kafka.replica_id": "replica_id",
    "kafka.metadata": "committed_metadata",
    "kafka.commit_timestamp": "commit_timestamp",
    "kafka.retention_time": "retention_time_ms",
    "kafka.require_stable_offset": "require_stable",
    # groups and coordinators
    "kafka.consumer_group": "group",
    "kafka.member_id": "group.member_id",
    "kafka.consumer_group_instance": "group.instance_id",
    "kafka.generation_id": "generation_id",
    "kafka.coordinator_key": "find_coordinator.key",
    "kafka.coordinator_type": "find_coordinator.key_type",
    "kafka.group_state": "group_state",
    "kafka.group_leader_id": "join_group.leader",
    "kafka.session_timeout": "session_timeout_ms",
    "kafka.rebalance_timeout": "rebalance_timeout_ms",
    "kafka.protocol_type": "protocol_type",
    "kafka.protocol_name": "protocol_name",
    "kafka.protocol_metadata": "join_group.protocols.metadata",
    "kafka.member_metadata": "join_group.members.metadata",
    "kafka.member_assignment": "sync_group.assignment",
    "kafka.client_host": "client_host",
    # cluster metadata
    "kafka.node_id": "node_id",
    "kafka.host": "host",
    "kafka.port": "port",
    "kafka.rack": "rack",
    "kafka.listener_name": "listener",
    "kafka.broker_security_protocol_type": "security_protocol",
    "kafka.cluster_id": "cluster_id",
    "kafka.leader_id": "leader_id",
    "kafka.isr_id": "isr_nodes",
    "kafka.offline_id": "offline_replicas",
    "kafka.is_internal": "is_internal",
    "kafka.broker_epoch": "broker_epoch",
    "kafka.controller_epoch": "controller_epoch",
    "kafka.zk_version": "zk_version",
    "kafka.delete_partitions": "delete_partitions",
    "kafka.is_new_replica": "is_new",
    "kafka.allow_auto_topic_creation": "allow_auto_topic_creation",
    "kafka.include_cluster_authorized_ops": "include_cluster_authorized_operations",
    "kafka.include_topic_authorized_ops": "include_topic_authorized_operations",
    "kafka.include_group_authorized_ops": "include_authorized_operations",
    "kafka.cluster_authorized_ops": "cluster_authorized_operations",
    "kafka.topic_authorized_ops": "topic_authorized_operations",
    "kafka.group_authorized_ops": "describe_groups.groups.authorized_operations",
    # ApiVersions
    "kafka.api_versions.api_key": "api_versions.api_keys.api_key",
    "kafka.api_versions.min_version": "api_versions.api_keys.min_version",
    "kafka.api_versions.max_version": "api_versions.api_keys.max_version",
    "kafka.client_software_name": "client_software_name",
    "kafka.client_software_version": "client_software_version",
    # SASL (the bytes are masked in every output; a filter compares the wire's)
    "kafka.sasl_mechanism": "mechanism",
    "kafka.sasl_authentication": "auth_bytes",
    "kafka.session_lifetime_ms": "session_lifetime_ms",
    # administration
    "kafka.num_partitions": "num_partitions",
    "kafka.replication_factor": "replication_factor",
    "kafka.partition_count": "create_partitions.topics.count",
    "kafka.validate_only": "validate_only",
    "kafka.election_type": "election_type",
    "kafka.config_resource_type": "resource_type",
    "kafka.config_resource_name": "resource_name",
    "kafka.config_key": "configs.name",
    "kafka.config_value": "configs.value",
    "kafka.config_include_synonyms": "include_synonyms",
    "kafka.config_readonly": "read_only",
    "kafka.config_default": "is_default",
    "kafka.config_sensitive": "is_sensitive",
    "kafka.config_source": "config_source",
    "kafka.acl_resource_type": "describe_acls.resource_type_filter",
    "kafka.acl_resource_name": "describe_acls.resource_name_filter",
    "kafka.acl_resource_pattern_type": "pattern_type",
    "kafka.acl_principal": "principal",
    "kafka.acl_host": "describe_acls.host_filter",
    "kafka.acl_operation": "operation",
    "kafka.acl_permission_type": "permission_type",
    "kafka.log_dir": "log_dir",
    "kafka.segment_size": "describe_log_dirs.results.topics.partitions.partition_size",
    "kafka.offset_lag": "offset_lag",
    "kafka.future": "is_future_key",
    # delegation tokens
    "kafka.token_max_life_time": "max_lifetime_ms",
    "kafka.renew_time": "renew_period_ms",
    "kafka.expiry_time": "expiry_time_period_ms",
    "kafka.principal_type": "principal_type",
    "kafka.principal_name": "principal_name",
    "kafka.token_issue_timestamp": "issue_timestamp_ms",
    "kafka.token_expiry_timestamp": "expiry_timestamp_ms",
    "kafka.token_max_timestamp": "max_timestamp_ms",
    "kafka.token_id": "token_id",
    "kafka.token_hmac": "hmac",
}


def native_name(name: str) -> str | None:
    """The native field a Wireshark name (any case) stands for, or None."""
    return ALIASES.get(name.lower())
