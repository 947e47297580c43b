"""Per-capture knowledge learnt from the exchanges, and what each exchange is about.

* brokers (node id -> host:port, rack) and partition leaders, from Metadata responses;
* topic ids -> names (Metadata, CreateTopics, DescribeTopicPartitions responses), so that
  Fetch v13+, Produce v13+ and other topic-id APIs show topic names;
* client ids -> client software name and version (ApiVersions v3+ requests);
* consumer groups: protocol type and name, generation, leader, members (JoinGroup/SyncGroup/
  Heartbeat/LeaveGroup and KIP-848 ConsumerGroupHeartbeat).

:func:`topics_of` lists the topics and partitions a message body names.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from analyzer.dissect.constants import ApiKey
from analyzer.model import Exchange, Field
from analyzer.session.records import PARTITION_FIELDS, ZERO_UUID, topic_name

_TOPIC_ARRAYS = frozenset(
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


@dataclass(slots=True)
class Group:
    group_id: str
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation: int | None = None
    leader: str | None = None
    members: set[str] = field(default_factory=set)
    generations_seen: list[int] = field(default_factory=list)


@dataclass(slots=True)
class Knowledge:
    brokers: dict[int, str] = field(default_factory=dict)
    racks: dict[int, str] = field(default_factory=dict)
    topic_ids: dict[str, str] = field(default_factory=dict)
    leaders: dict[tuple[str, int], int] = field(default_factory=dict)
    clients: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    groups: dict[str, Group] = field(default_factory=dict)
    cluster_id: str | None = None

    def learn(self, ex: Exchange) -> None:
        """Learn from one exchange, then name its topics and partitions."""
        req, resp = ex.request, ex.response
        key = ex.api_key
        if resp is not None and resp.body is not None:
            if key == ApiKey.METADATA:
                self._metadata(resp.body)
            elif key in _TOPIC_ID_ANSWERS:
                self._topic_ids(resp.body)
        if req is not None and req.body is not None:
            if key == ApiKey.API_VERSIONS and req.client_id is not None:
                name = req.body.get("client_software_name")
                ver = req.body.get("client_software_version")
                if name or ver:
                    self.clients[req.client_id] = (name, ver)
            if key in _GROUP_APIS:
                self._group(key, req.body, resp.body if resp is not None else None)
        msg = req if req is not None and req.body is not None else resp
        if msg is not None and msg.body is not None:
            ex.topics = topics_of(msg.body, self.topic_ids)

    def _metadata(self, body: Field) -> None:
        cid = body.get("cluster_id")
        if cid:
            self.cluster_id = cid
        for b in _elements(body, "brokers"):
            node = b.get("node_id")
            if node is not None:
                self.brokers[node] = f"{b.get('host')}:{b.get('port')}"
                if b.get("rack"):
                    self.racks[node] = b.get("rack")
        self._topic_ids(body)
        for t in _elements(body, "topics"):
            name = t.get("name")
            if name is None:
                continue
            for p in _elements(t, "partitions"):
                idx, leader = p.get("partition_index"), p.get("leader_id")
                if idx is not None and leader is not None:
                    self.leaders[(name, idx)] = leader

    def _topic_ids(self, body: Field) -> None:
        for t in _elements(body, "topics"):
            tid, name = t.get("topic_id"), t.get("name")
            if tid and name and tid != ZERO_UUID:
                self.topic_ids[tid] = name

    def _group(self, key: int, req: Field, resp: Field | None) -> None:
        gid = req.get("group_id")
        if gid is None:
            return
        g = self.groups.get(gid)
        if g is None:
            g = self.groups[gid] = Group(gid)
        if key == ApiKey.JOIN_GROUP:
            g.protocol_type = req.get("protocol_type") or g.protocol_type
        if resp is None:
            return
        gen = resp.get("generation_id", resp.get("member_epoch"))
        if gen is not None and gen >= 0 and (not g.generations_seen or g.generations_seen[-1] != gen):
            g.generations_seen.append(gen)
            g.generation = gen
        if key == ApiKey.JOIN_GROUP:
            g.protocol_name = resp.get("protocol_name") or g.protocol_name
            g.leader = resp.get("leader") or g.leader
            for m in _elements(resp, "members"):
                if m.get("member_id"):
                    g.members.add(m.get("member_id"))
            if resp.get("member_id"):
                g.members.add(resp.get("member_id"))
        elif key == ApiKey.LEAVE_GROUP:
            mid = req.get("member_id")
            if mid:
                g.members.discard(mid)
            for m in _elements(req, "members"):
                g.members.discard(m.get("member_id"))
        elif key == ApiKey.CONSUMER_GROUP_HEARTBEAT and resp.get("member_id"):
            g.members.add(resp.get("member_id"))


def _elements(f: Field, name: str) -> list[Field]:
    c = f.child(name)
    return c.children or [] if c is not None else []


def topics_of(body: Field, topic_ids: dict[str, str] | None = None) -> dict[str, list[int]]:
    """Topic name (or topic id when its name is unknown) -> partition indexes a body names."""
    out: dict[str, list[int]] = {}
    _collect(body, topic_ids or {}, out, 0)
    return out


def _collect(f: Field, ids: dict[str, str], out: dict[str, list[int]], depth: int) -> None:
    if depth > 3 or not f.children:
        return
    for c in f.children:
        if c.children is None or c.type == "records":
            continue
        if c.name in _TOPIC_ARRAYS and c.type.startswith("[]"):
            for t in c.children:
                name = topic_name(t, ids)
                if name is None:
                    continue
                parts = out.setdefault(name, [])
                for pc in t.children or ():
                    if pc.type.startswith("[]") and pc.children:
                        for p in pc.children:
                            if p.children:
                                for x in p.children:
                                    if x.name in PARTITION_FIELDS and isinstance(x.value, int):
                                        parts.append(x.value)
                                        break
                            elif p.type == "int32":
                                parts.append(p.value)
        elif not c.type.startswith("[]"):
            _collect(c, ids, out, depth + 1)
