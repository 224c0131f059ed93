"""The test helpers of `ApacheKafka` (topics, records, groups), spoken over the Kafka protocol
with kconsumer's own codec (`kconsumer.testing.wire`) on each node's PLAINTEXT harness listener.

Every helper waits until its effect is visible: a topic created is returned once every one of its
partitions has a leader, a deleted one once Metadata no longer lists it, so a test can use the
result at once, as with the reference cluster.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from ...errors import ErrorCode, KafkaApiError, error_for
from ...protocol import records
from ...protocol.messages.admin import (
    CreatableTopic,
    CreatableTopicConfig,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicState,
)
from ...protocol.messages.classic_group import DescribeGroupsRequest, DescribeGroupsResponse
from ...protocol.messages.consumer_group import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedAssignment,
)
from ...protocol.messages.fetch import FetchPartition, FetchRequest, FetchResponse, FetchTopic
from ...protocol.messages.list_groups import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from ...protocol.messages.list_offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from ...protocol.messages.metadata import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponsePartition,
)
from ...protocol.messages.offsets import OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchResponse
from ...protocol.messages.produce import (
    ACKS_ALL,
    PartitionProduceData,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
)
from ...protocol.schema import Message
from ...protocol.uuid import Uuid
from ..descriptions import (
    ClassicGroupDescription,
    ClassicMemberDescription,
    GroupDescription,
    MemberDescription,
)
from ..partitioner import RoundRobin
from ..wire import WireClient, WireError

T = TypeVar("T")
R = TypeVar("R", bound=Message)

#: How long a helper waits for its effect to show (topic leaders, deletions, coordinators).
SETTLE_TIMEOUT_S = 60.0
#: Records per Produce batch: Kafka refuses batches over message.max.bytes (1 MB by default).
_BATCH_BYTES = 512 * 1024


class Retry(Exception):
    """Raised inside `KafkaAdmin.retrying` to try again (after a short pause)."""


class KafkaAdmin:
    """Wire connections to the nodes' harness listeners and the helpers built on them."""

    def __init__(self, addresses: Callable[[], Mapping[int, tuple[str, int]]]) -> None:
        #: node id → (host, port) of the nodes that are up now.
        self._addresses = addresses
        self._clients: dict[int, WireClient] = {}
        self._lock = threading.RLock()
        self._round_robin = RoundRobin()

    def close(self) -> None:
        """Close every connection."""
        with self._lock:
            for client in self._clients.values():
                client.close()
            self._clients.clear()

    # -- plumbing ------------------------------------------------------------------------------

    def request(self, message: Message, expect: type[R], node_id: int | None = None) -> R:
        """Send `message` to `node_id` (any node that is up when None) and return the answer; one
        reconnect when the connection failed."""
        with self._lock:
            for attempt in (1, 2):
                node, client = self._client(node_id)
                try:
                    return client.call(message, expect)
                except WireError:
                    client.close()
                    self._clients.pop(node, None)
                    if attempt == 2:
                        raise
        raise AssertionError("unreachable")

    def _client(self, node_id: int | None) -> tuple[int, WireClient]:
        addresses = self._addresses()
        if not addresses:
            raise WireError("no broker of the cluster is running (stopped?)")
        if node_id is None:
            live = [n for n in self._clients if n in addresses and not self._clients[n].closed]
            node_id = live[0] if live else min(addresses)
        client = self._clients.get(node_id)
        if client is None or client.closed:
            if node_id not in addresses:
                raise WireError(f"broker {node_id} is not up")
            host, port = addresses[node_id]
            client = WireClient.connect(host, port, client_id="kconsumer-apache-kafka-harness")
            self._clients[node_id] = client
        return node_id, client

    def forget(self, node_id: int) -> None:
        """Drop the connection to a node (it stopped)."""
        with self._lock:
            client = self._clients.pop(node_id, None)
            if client is not None:
                client.close()

    @staticmethod
    def retrying(what: str, attempt: Callable[[], T], timeout: float = SETTLE_TIMEOUT_S) -> T:
        """Call `attempt` until it returns without raising `Retry` (or a retriable Kafka error,
        or a connection failure), for up to `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return attempt()
            except (Retry, WireError) as exc:
                last: BaseException = exc
            except KafkaApiError as exc:
                if not ErrorCode.of(exc.code).retriable:
                    raise
                last = exc
            if time.monotonic() > deadline:
                raise TimeoutError(f"Apache Kafka: {what} did not settle in {timeout:.0f} s ({last})")
            time.sleep(0.05)

    # -- metadata ------------------------------------------------------------------------------

    def metadata(self, topics: Iterable[str] | None = None, node_id: int | None = None) -> MetadataResponse:
        """Metadata for `topics` (every topic when None), never creating one."""
        wanted = None if topics is None else [MetadataRequestTopic(name=t) for t in topics]
        request = MetadataRequest(topics=wanted, allow_auto_topic_creation=False)
        return self.request(request, MetadataResponse, node_id)

    def broker_ids(self, node_id: int | None = None) -> list[int]:
        """The brokers Metadata lists (registered and not fenced), as `node_id` sees them."""
        return sorted(b.node_id for b in self.metadata([], node_id).brokers)

    def wait_in_sync(self, running: set[int], timeout: float) -> None:
        """Wait until every partition (Kafka's internal topics too) with a replica on a `running`
        broker has a leader and counts each of its running replicas in sync, as an operator
        waits between the steps of a rolling restart: otherwise stopping the next broker can
        take the last in-sync replica of a partition (of the group's offsets, say) away."""

        def attempt() -> None:
            behind = []
            for topic in self.metadata().topics:
                for partition in topic.partitions:
                    up = set(partition.replica_nodes) & running
                    if up and (partition.leader_id < 0 or not up <= set(partition.isr_nodes)):
                        behind.append(f"{topic.name}-{partition.partition_index}")
            if behind:
                raise Retry(f"{len(behind)} partitions catching up, such as {', '.join(sorted(behind)[:4])}")

        self.retrying("the replicas of the running brokers", attempt, timeout)

    def _partitions(self, topic: str) -> list[MetadataResponsePartition]:
        """The partitions Metadata describes for `topic`, by index; KafkaApiError for an unknown
        topic."""
        described = self.metadata([topic]).topics[0]
        if described.error_code:
            raise error_for(described.error_code, f"topic {topic!r}")
        return sorted(described.partitions, key=lambda p: p.partition_index)

    def partition_leaders(self, topic: str) -> list[int]:
        """Each partition's leader (-1 while it has none); KafkaApiError for an unknown topic."""
        return [p.leader_id for p in self._partitions(topic)]

    def in_sync_replicas(self, topic: str) -> list[list[int]]:
        """Each partition's in-sync replicas (node ids, sorted); KafkaApiError for an unknown topic."""
        return [sorted(p.isr_nodes) for p in self._partitions(topic)]

    def _settled_leaders(self, topic: str, count: int | None = None) -> list[int]:
        def attempt() -> list[int]:
            leaders = self.partition_leaders(topic)
            if not leaders or min(leaders) < 0 or (count is not None and len(leaders) != count):
                raise Retry(f"partitions of {topic!r} without a leader yet")
            return leaders

        return self.retrying(f"the leaders of {topic!r}", attempt)

    # -- topics --------------------------------------------------------------------------------

    def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int = -1,
        config: Mapping[str, str] | None = None,
    ) -> Uuid:
        """Create a topic and wait until every partition has a leader; returns its id."""
        configs = [CreatableTopicConfig(name=k, value=v) for k, v in (config or {}).items()]
        topic = CreatableTopic(
            name=name, num_partitions=partitions, replication_factor=replication_factor, configs=configs
        )
        response = self.request(
            CreateTopicsRequest(topics=[topic], timeout_ms=int(SETTLE_TIMEOUT_S * 1000)), CreateTopicsResponse
        )
        result = response.topics[0]
        if result.error_code:
            raise error_for(result.error_code, result.error_message)
        self._settled_leaders(name, partitions)
        return result.topic_id

    def delete_topic(self, name: str) -> None:
        """Delete a topic and wait until Metadata no longer lists it."""
        response = self.request(
            DeleteTopicsRequest(
                topics=[DeleteTopicState(name=name)], timeout_ms=int(SETTLE_TIMEOUT_S * 1000)
            ),
            DeleteTopicsResponse,
        )
        result = response.responses[0]
        if result.error_code:
            raise error_for(result.error_code, result.error_message)

        def gone() -> None:
            if name in self.topics():
                raise Retry(f"{name!r} still listed")

        self.retrying(f"the deletion of {name!r}", gone)

    def create_partitions(self, name: str, total: int) -> None:
        """Grow a topic to `total` partitions and wait until each has a leader."""
        request = CreatePartitionsRequest(
            topics=[CreatePartitionsTopic(name=name, count=total, assignments=None)],
            timeout_ms=int(SETTLE_TIMEOUT_S * 1000),
        )
        result = self.request(request, CreatePartitionsResponse).results[0]
        if result.error_code:
            raise error_for(result.error_code, result.error_message)
        self._settled_leaders(name, total)

    def topics(self) -> dict[str, int]:
        """Every topic but Kafka's internal ones: name → partition count."""
        response = self.metadata()
        return {
            t.name: len(t.partitions)
            for t in response.topics
            if t.name is not None and not t.is_internal and not t.error_code
        }

    def topic_id(self, name: str) -> Uuid:
        """The id of topic `name` (KeyError if it does not exist)."""
        described = self.metadata([name]).topics[0]
        if described.error_code:
            raise KeyError(name)
        return described.topic_id

    # -- records -------------------------------------------------------------------------------

    def produce(
        self, topic: str, values: list[bytes | None], key: bytes | None, partition: int | None
    ) -> list[int]:
        """Append `values` (see `ApacheKafka.produce`); each record's offset, in order."""
        if not values:
            return []
        leaders = self._settled_leaders(topic)
        plan = self._round_robin.plan(topic, len(leaders), len(values), partition)
        offsets = [0] * len(values)
        now = int(time.time() * 1000)
        for target, positions in plan.items():
            for chunk in _chunks(positions, values):
                batch = records.build_batch((key, values[i], (), now) for i in chunk)
                base = self._append(topic, target, batch)
                for delta, position in enumerate(chunk):
                    offsets[position] = base + delta
        return offsets

    def _append(self, topic: str, partition: int, batch: bytes) -> int:
        def attempt() -> int:
            described = self.metadata([topic]).topics[0]
            if described.error_code:
                raise error_for(described.error_code, f"topic {topic!r}")
            leaders = {p.partition_index: p.leader_id for p in described.partitions}
            if partition not in leaders:
                raise error_for(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{partition}")
            data = TopicProduceData(
                name=topic,
                topic_id=described.topic_id,
                partition_data=[PartitionProduceData(index=partition, records=batch)],
            )
            request = ProduceRequest(
                acks=ACKS_ALL, timeout_ms=int(SETTLE_TIMEOUT_S * 1000), topic_data=[data]
            )
            answer = self.request(request, ProduceResponse, leaders[partition])
            result = answer.responses[0].partition_responses[0]
            if result.error_code:
                raise error_for(result.error_code, result.error_message)
            return int(result.base_offset)

        return self.retrying(f"a produce to {topic}-{partition}", attempt)

    def list_offsets(self, topic: str, timestamp: int) -> list[int]:
        """Each partition's offset for `timestamp` (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, ...)."""
        leaders = self._settled_leaders(topic)
        found: list[int] = []
        for index, leader in enumerate(leaders):
            request = ListOffsetsRequest(
                topics=[
                    ListOffsetsTopic(
                        name=topic,
                        partitions=[ListOffsetsPartition(partition_index=index, timestamp=timestamp)],
                    )
                ]
            )
            answer = self.request(request, ListOffsetsResponse, leader).topics[0].partitions[0]
            if answer.error_code:
                raise error_for(answer.error_code, f"{topic}-{index}")
            found.append(int(answer.offset))
        return found

    def watermarks(self, topic: str) -> list[tuple[int, int]]:
        """(log start offset, high watermark) of each partition."""
        return list(
            zip(
                self.list_offsets(topic, EARLIEST_TIMESTAMP),
                self.list_offsets(topic, LATEST_TIMESTAMP),
                strict=True,
            )
        )

    def records(self, topic: str, partition: int) -> list[records.Record]:
        """Every retained record of a partition, decoded."""
        start, end = self.watermarks(topic)[partition]
        topic_id = self.topic_id(topic)
        leader = self.partition_leaders(topic)[partition]
        out: list[records.Record] = []
        position = start
        while position < end:
            request = FetchRequest(
                max_wait_ms=0,
                min_bytes=1,
                max_bytes=16 << 20,
                topics=[
                    FetchTopic(
                        topic=topic,
                        topic_id=topic_id,
                        partitions=[
                            FetchPartition(
                                partition=partition, fetch_offset=position, partition_max_bytes=8 << 20
                            )
                        ],
                    )
                ],
            )
            answer = self.request(request, FetchResponse, leader).responses[0].partitions[0]
            if answer.error_code:
                raise error_for(answer.error_code, f"{topic}-{partition}")
            batch = [r for r in records.decode_records(answer.records) if r.offset >= position]
            if not batch:
                break
            out.extend(batch)
            position = batch[-1].offset + 1
        return out

    # -- groups --------------------------------------------------------------------------------

    def coordinator(self, group_id: str) -> int:
        """The node id coordinating `group_id` (waiting while it is being elected or loaded)."""

        def attempt() -> int:
            response = self.request(
                FindCoordinatorRequest(coordinator_keys=[group_id]), FindCoordinatorResponse
            )
            if response.coordinators:
                found = response.coordinators[0]
                code, node = found.error_code, found.node_id
            else:
                code, node = response.error_code, response.node_id
            if code:
                raise error_for(code, f"the coordinator of {group_id!r}")
            return int(node)

        return self.retrying(f"the coordinator of {group_id!r}", attempt)

    def on_coordinator(self, group_id: str, call: Callable[[int], T]) -> T:
        """`call(coordinator node)`, again when the coordinator moved meanwhile."""
        return self.retrying(
            f"a request to the coordinator of {group_id!r}", lambda: call(self.coordinator(group_id))
        )

    def describe_group(self, group_id: str) -> GroupDescription | None:
        """The consumer group from ConsumerGroupDescribe (None: no such consumer group)."""

        def describe(node: int) -> GroupDescription | None:
            request = ConsumerGroupDescribeRequest(group_ids=[group_id])
            group = self.request(request, ConsumerGroupDescribeResponse, node).groups[0]
            if group.error_code == ErrorCode.GROUP_ID_NOT_FOUND:
                return None
            if group.error_code:
                raise error_for(group.error_code, group.error_message)
            if group.group_state == "Dead":
                return None
            members = {
                m.member_id: MemberDescription(
                    member_id=m.member_id,
                    instance_id=m.instance_id,
                    member_epoch=m.member_epoch,
                    state=_member_state(
                        m.member_epoch, group.assignment_epoch, m.assignment, m.target_assignment
                    ),
                    assignment=_by_name(m.assignment),
                    pending_revocation={},
                    target=_by_name(m.target_assignment),
                    client_id=m.client_id,
                    client_host=m.client_host,
                    subscribed_topics=tuple(m.subscribed_topic_names),
                    subscribed_regex=m.subscribed_topic_regex or None,
                )
                for m in group.members
            }
            return GroupDescription(
                group_id=group_id,
                epoch=group.group_epoch,
                state=group.group_state,
                assignment_epoch=group.assignment_epoch,
                members=dict(sorted(members.items())),
                coordinator=node,
            )

        return self.on_coordinator(group_id, describe)

    def describe_classic_group(self, group_id: str) -> ClassicGroupDescription | None:
        """The classic group from DescribeGroups (None: none, or a consumer group)."""
        if self.describe_group(group_id) is not None:
            return None

        def describe(node: int) -> ClassicGroupDescription | None:
            request = DescribeGroupsRequest(groups=[group_id])
            group = self.request(request, DescribeGroupsResponse, node).groups[0]
            if group.error_code == ErrorCode.GROUP_ID_NOT_FOUND or group.group_state in ("Dead", ""):
                return None
            if group.error_code:
                raise error_for(group.error_code, group.error_message)
            members = {
                m.member_id: ClassicMemberDescription(
                    member_id=m.member_id,
                    instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    protocol_metadata=m.member_metadata,
                    assignment=m.member_assignment,
                )
                for m in group.members
            }
            return ClassicGroupDescription(
                group_id=group_id,
                state=group.group_state,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_data,
                members=dict(sorted(members.items())),
            )

        return self.on_coordinator(group_id, describe)

    def list_groups(self, nodes: Iterable[int], types: Iterable[str] = ()) -> list[str]:
        """The ids of the groups of every node (of the given types: ``consumer``, ``classic``);
        retriable errors (a coordinator still loading after a broker's restart) are retried."""
        found: set[str] = set()

        def listed(node: int) -> list[str]:
            response = self.request(ListGroupsRequest(types_filter=list(types)), ListGroupsResponse, node)
            if response.error_code:
                raise error_for(response.error_code, "ListGroups")
            return [g.group_id for g in response.groups]

        for node in nodes:
            found.update(self.retrying(f"ListGroups on broker {node}", functools.partial(listed, node)))
        return sorted(found)

    def delete_group(self, group_id: str, timeout: float = 120.0) -> None:
        """Delete an empty group and its offsets; waits (up to `timeout`) while it still has
        members (those that left or crashed are being removed). Nothing to delete is fine."""

        def attempt() -> None:
            def delete(node: int) -> int:
                request = DeleteGroupsRequest(groups_names=[group_id])
                return int(self.request(request, DeleteGroupsResponse, node).results[0].error_code)

            code = self.on_coordinator(group_id, delete)
            if code == ErrorCode.NON_EMPTY_GROUP:
                raise Retry(f"group {group_id!r} still has members")
            if code not in (ErrorCode.NONE, ErrorCode.GROUP_ID_NOT_FOUND):
                raise error_for(code, f"deleting group {group_id!r}")

        self.retrying(f"the deletion of group {group_id!r}", attempt, timeout)

    def committed(self, group_id: str) -> dict[tuple[str, int], int]:
        """The group's committed offsets by (topic name, partition)."""

        def fetch(node: int) -> dict[tuple[str, int], int]:
            request = OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=group_id, topics=None)])
            response = self.request(request, OffsetFetchResponse, node)
            names = {t.topic_id: t.name for t in self.metadata().topics if t.name}
            out: dict[tuple[str, int], int] = {}
            if response.groups:
                group = response.groups[0]
                if group.error_code:
                    raise error_for(group.error_code, f"committed offsets of {group_id!r}")
                for topic in group.topics:
                    name = topic.name or names.get(topic.topic_id, str(topic.topic_id))
                    out.update(
                        {
                            (name, p.partition_index): p.committed_offset
                            for p in topic.partitions
                            if p.committed_offset >= 0
                        }
                    )
            else:
                if response.error_code:
                    raise error_for(response.error_code, f"committed offsets of {group_id!r}")
                for old in response.topics:
                    out.update(
                        {
                            (old.name, p.partition_index): p.committed_offset
                            for p in old.partitions
                            if p.committed_offset >= 0
                        }
                    )
            return dict(sorted(out.items()))

        return self.on_coordinator(group_id, fetch)


def _member_state(
    epoch: int, assignment_epoch: int, assigned: DescribedAssignment, target: DescribedAssignment
) -> str:
    """What Kafka's describe lets one tell of a member's reconciliation: ``stable`` once it is at
    the assignment epoch and holds exactly its target, ``reconciling`` before that (Kafka does not
    show whether it still has partitions to revoke or waits for partitions to be released)."""
    if epoch == assignment_epoch and _by_name(assigned) == _by_name(target):
        return "stable"
    return "reconciling"


def _by_name(assignment: DescribedAssignment) -> dict[str, tuple[int, ...]]:
    out = {t.topic_name: tuple(sorted(t.partitions)) for t in assignment.topic_partitions if t.partitions}
    return dict(sorted(out.items()))


def _chunks(positions: list[int], values: list[bytes | None]) -> Iterable[list[int]]:
    """`positions` cut into runs whose values add up to about `_BATCH_BYTES`."""
    chunk: list[int] = []
    size = 0
    for position in positions:
        value = values[position]
        length = 0 if value is None else len(value)
        if chunk and size + length > _BATCH_BYTES:
            yield chunk
            chunk, size = [], 0
        chunk.append(position)
        size += length + 16
    if chunk:
        yield chunk
