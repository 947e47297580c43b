"""Per-capture knowledge learnt from the exchanges, and what each exchange is about.

* brokers (node id -> host:port, rack) and partition leaders, from Metadata responses;
* topic ids -> names (Metadata, CreateTopics, DescribeTopicPartitions responses), so that
  Fetch v13+, Produce v13+ and other topic-id APIs show topic names;
* client ids -> client software name and version (ApiVersions v3+ requests);
* consumer groups: protocol type and name, generation, leader, members (JoinGroup/SyncGroup/
  Heartbeat/LeaveGroup and KIP-848 ConsumerGroupHeartbeat).

:func:`topics_of` lists the topics and partitions a message names (from the entity walker,
:mod:`analyzer.session.entities`).
"""

from __future__ import annotations

from analyzer.dissect.apikeys import (
    API_VERSIONS,
    CONSUMER_GROUP_HEARTBEAT,
    JOIN_GROUP,
    LEAVE_GROUP,
    METADATA,
    PRODUCE,
)
from analyzer.dissect.constants import ApiKey
from analyzer.model import Exchange, Field, Message
from analyzer.plain import field, record
from analyzer.session.bounded import MAX_ENTRIES, Evictions
from analyzer.session.entities import topic_refs
from analyzer.session.groups import GroupMembers
from analyzer.session.sequences import SequenceTracker

# The arrays whose topics label an exchange (Exchange.topics: the `read` line, `--topic`, the
# TUI's topic column, per-topic request counts): topic structs in these arrays, not inside
# another array, as the labels were before the entity walker. The walker finds topics in more
# places (AddPartitionsToTxn v0-3 `v3_and_below_topics`, OffsetFetch v8+ `groups[].topics`,
# WriteTxnMarkers `markers[].topics`, Fetch `forgotten_topics_data`, ConsumerGroupHeartbeat
# `subscribed_topic_names`, LeaderAndIsr/StopReplica/UpdateMetadata `topic_states`...); labelling
# exchanges with those too means widening this list and re-pinning the golden outputs.
EXCHANGE_TOPIC_ARRAYS = frozenset(
    (
        "topics",
        "topic_data",
        "responses",
        "partitions_data",
        "topic_partitions",
        "assigned_topic_partitions",
        "data",
        "topic_errors",
    )
)

# responses that map topic ids to names (besides Metadata's)
_TOPIC_ID_ANSWERS = frozenset((ApiKey.CREATE_TOPICS, ApiKey.DESCRIBE_TOPIC_PARTITIONS))
# the classic group protocol and KIP-848's heartbeat: what Group is learnt from
_GROUP_APIS = frozenset(
    (
        ApiKey.JOIN_GROUP,
        ApiKey.HEARTBEAT,
        ApiKey.LEAVE_GROUP,
        ApiKey.SYNC_GROUP,
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
    )
)
# every API whose exchanges Knowledge.learn learns from (the others only get their topics named)
LEARNS_FROM = frozenset((ApiKey.METADATA, ApiKey.API_VERSIONS)) | _TOPIC_ID_ANSWERS | _GROUP_APIS


@record
class Group:
    group_id: str
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation: int | None = None
    leader: str | None = None
    members: set[str] = field(default_factory=set)
    generations_seen: list[int] = field(default_factory=list)


# What an issue calls the broker while its software is not known (yet), and in a share of the
# connections: export -j's merge and Spark's stitching name it where one run would have known it
# (export/parallel.py, spark/stitch.py).
UNNAMED_BROKER = "the broker"


@record
class Knowledge:
    brokers: dict[int, str] = field(default_factory=dict)
    racks: dict[int, str] = field(default_factory=dict)
    topic_ids: dict[str, str] = field(default_factory=dict)
    leaders: dict[tuple[str, int], int] = field(default_factory=dict)
    clients: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    groups: dict[str, Group] = field(default_factory=dict)
    cluster_id: str | None = None
    # idempotent producers' sequences per partition (records.bad_sequence on the request)
    sequences: SequenceTracker = field(default_factory=SequenceTracker)
    # live members of the classic groups (quirk.simple_commit_rejected)
    members: GroupMembers = field(default_factory=GroupMembers)
    # False in a share of the connections (export -j, Spark owners): its issues call the broker
    # UNNAMED_BROKER, and the merge names it as one run knew it then, from every connection's
    # answers (a share's own last cluster id may be older than another share's)
    names_broker: bool = True
    # the names learnt (topic ids, leaders, client software, groups) stay within `most` entries
    # per table, the oldest learnt let go first, counted (their order is the tables' order)
    most: int = MAX_ENTRIES
    evictions: Evictions = field(default_factory=Evictions)

    def _cap(self, table: dict, name: str) -> None:
        """Let the oldest learnt entries of ``table`` go past :attr:`most`."""
        n = len(table) - self.most
        if n > 0:
            for k in list(table)[:n] if n > 1 else (next(iter(table)),):
                del table[k]
            self.evictions.add(name, full=n)

    def entries(self) -> dict[str, int]:
        """Entries per bounded table now."""
        return {
            "topic_ids": len(self.topic_ids),
            "leaders": len(self.leaders),
            "client_software": len(self.clients),
            "known_groups": len(self.groups),
        }

    def merge(self, other: Knowledge) -> None:
        """Take in what another part of the run learnt (a live worker, a share of the
        connections): its names are added, what this one knew first stays."""
        self.brokers.update(other.brokers)
        self.racks.update(other.racks)
        self.topic_ids.update(other.topic_ids)
        self.leaders.update(other.leaders)
        self.clients.update(other.clients)
        for g, v in other.groups.items():
            self.groups.setdefault(g, v)
        self.cluster_id = self.cluster_id or other.cluster_id
        for table, name in (
            (self.topic_ids, "topic_ids"),
            (self.leaders, "leaders"),
            (self.clients, "client_software"),
            (self.groups, "known_groups"),
        ):
            self._cap(table, name)

    def broker_software(self) -> str | None:
        """The broker implementation, when its answers say it: the cluster id its Metadata
        responses carry by default (Tansu's ``tansu_cluster``, librdkafka's mock ``mockCluster…``)."""
        if not self.names_broker:
            return None
        cid = self.cluster_id or ""
        if cid == "tansu_cluster":
            return "Tansu"
        if cid.startswith("mockCluster"):
            return "the librdkafka mock cluster"
        return None

    def learn(self, ex: Exchange) -> None:
        """Learn from one exchange, then name its topics and partitions."""
        req, resp = ex.request, ex.response
        key = ex.api_key
        if resp is not None and resp.body is not None:
            if key == METADATA:
                self._metadata(resp)
            elif key in _TOPIC_ID_ANSWERS:
                self._topic_ids(resp)
        if req is not None and req.body is not None:
            if key == API_VERSIONS and req.client_id is not None:
                name = req.body.get("client_software_name")
                ver = req.body.get("client_software_version")
                if name or ver:
                    self.clients[req.client_id] = (name, ver)
                    self._cap(self.clients, "client_software")
            if key in _GROUP_APIS:
                self._group(key, req.body, resp.body if resp is not None else None)
            elif key == PRODUCE:
                self.sequences.check(req)
        msg = req if req is not None and req.body is not None else resp
        if msg is not None and msg.body is not None:
            ex.topics = topics_of(msg, self.topic_ids)

    def _metadata(self, resp: Message) -> None:
        body = resp.body
        assert body is not None  # learn() calls this for decoded responses only
        cid = body.get("cluster_id")
        if cid:
            self.cluster_id = cid
        for b in body.elements("brokers"):
            node = b.get("node_id")
            if node is not None:
                self.brokers[node] = f"{b.get('host')}:{b.get('port')}"
                if b.get("rack"):
                    self.racks[node] = b.get("rack")
        self._topic_ids(resp)
        for t in body.elements("topics"):
            name = t.get("name")
            if name is None:
                continue
            for p in t.elements("partitions"):
                idx, leader = p.get("partition_index"), p.get("leader_id")
                if idx is not None and leader is not None:
                    self.leaders[(name, idx)] = leader
            self._cap(self.leaders, "leaders")

    def _topic_ids(self, resp: Message) -> None:
        """Learn the topic ids of the structs that name a topic both ways."""
        for t in topic_refs(resp):
            if t.topic_id and t.name:
                self.topic_ids[t.topic_id] = t.name
        self._cap(self.topic_ids, "topic_ids")

    def _group(self, key: int, req: Field, resp: Field | None) -> None:
        gid = req.get("group_id")
        if gid is None:
            return
        g = self.groups.get(gid)
        if g is None:
            g = self.groups[gid] = Group(gid)
            self._cap(self.groups, "known_groups")
        if key == JOIN_GROUP:
            g.protocol_type = req.get("protocol_type") or g.protocol_type
        if resp is None:
            return
        gen = resp.get("generation_id", resp.get("member_epoch"))
        if gen is not None and gen >= 0 and (not g.generations_seen or g.generations_seen[-1] != gen):
            g.generations_seen.append(gen)
            g.generation = gen
        if key == JOIN_GROUP:
            g.protocol_name = resp.get("protocol_name") or g.protocol_name
            g.leader = resp.get("leader") or g.leader
            for m in resp.elements("members"):
                if m.get("member_id"):
                    g.members.add(m.get("member_id"))
            if resp.get("member_id"):
                g.members.add(resp.get("member_id"))
        elif key == LEAVE_GROUP:
            mid = req.get("member_id")
            if mid:
                g.members.discard(mid)
            for m in req.elements("members"):
                g.members.discard(m.get("member_id"))
        elif key == CONSUMER_GROUP_HEARTBEAT and resp.get("member_id"):
            g.members.add(resp.get("member_id"))


def topics_of(msg: Message, topic_ids: dict[str, str] | None = None) -> dict[str, list[int]]:
    """Topic name (or topic id when its name is unknown) -> partition indexes that label the
    exchange of ``msg`` (the topic structs of EXCHANGE_TOPIC_ARRAYS, in body order)."""
    out: dict[str, list[int]] = {}
    for t in topic_refs(msg, topic_ids):
        if t.element is not None and not t.nested and t.array in EXCHANGE_TOPIC_ARRAYS:
            parts = out.get(t.topic)
            if parts is None:
                parts = out[t.topic] = []
            for p, _ in t.partitions:  # TopicRef.partition_indexes, without a list per topic
                if p is not None:
                    parts.append(p)
    return out
