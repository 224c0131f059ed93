"""The multi-broker reference cluster on the wire: Kafka's group placement, the brokers and
leaders Metadata shows on every broker, FindCoordinator from any broker, and the errors a broker
answers for what it does not own (NOT_COORDINATOR, NOT_LEADER_OR_FOLLOWER), before and after
`move_coordinator`, `move_leader` and `stop_broker`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kconsumer.broker.server.nodes import java_string_hash, offsets_partition
from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.consumer_group import ConsumerGroupHeartbeatRequest
from kconsumer.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from kconsumer.protocol.messages.metadata import FindCoordinatorRequest, MetadataRequest, MetadataRequestTopic
from kconsumer.testing import ReferenceCluster
from kconsumer.testing.wire import WireClient, WireError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("hello", 99162322),
        ("my-group", -1906497762),
        ("polygenelubricants", -(2**31)),
        ("é€😀", 16752006),
    ],
)
def test_java_string_hash(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_offsets_partition_is_kafkas() -> None:
    assert offsets_partition("my-group") == 1906497762 % 50
    assert offsets_partition("polygenelubricants") == 0, "Utils.abs(Integer.MIN_VALUE) is 0"


@pytest.fixture(scope="module")
def cluster() -> Iterator[ReferenceCluster]:
    with ReferenceCluster(brokers=3, heartbeat_interval_ms=100, session_timeout_ms=3000) as running:
        running.create_topic("spread", 6)
        yield running


def _clients(cluster: ReferenceCluster) -> dict[int, WireClient]:
    return {
        node: WireClient.connect("127.0.0.1", int(address.rsplit(":", 1)[1]))
        for node, address in zip(cluster.brokers(), cluster.bootstrap_servers.split(","), strict=True)
    }


def test_every_broker_shows_the_same_brokers_leaders_and_coordinator(cluster: ReferenceCluster) -> None:
    clients = _clients(cluster)
    try:
        views = []
        for client in clients.values():
            metadata = client.request(MetadataRequest(topics=[MetadataRequestTopic(name="spread")]))
            found = client.request(FindCoordinatorRequest(key="orders"), version=3)
            views.append(
                (
                    sorted((b.node_id, b.port) for b in metadata.brokers),
                    [(p.partition_index, p.leader_id) for p in metadata.topics[0].partitions],
                    found.node_id,
                )
            )
        assert views[0] == views[1] == views[2]
        brokers, leaders, coordinator = views[0]
        assert [node for node, _port in brokers] == [1, 2, 3]
        assert {leader for _p, leader in leaders} == {1, 2, 3}, "leaders are spread"
        assert leaders == [(p, cluster.leader("spread", p)) for p in range(6)]
        assert coordinator == cluster.coordinator_node("orders") == [1, 2, 3][offsets_partition("orders") % 3]
    finally:
        for client in clients.values():
            client.close()


def _heartbeat(client: WireClient, group: str) -> int:
    request = ConsumerGroupHeartbeatRequest(
        group_id=group,
        member_id="m-1",
        member_epoch=0,
        rebalance_timeout_ms=5000,
        subscribed_topic_names=["spread"],
        topic_partitions=[],
    )
    return int(client.request(request, version=1).error_code)


def test_only_the_coordinator_answers_a_group_and_a_moved_coordinator_loads_it(
    cluster: ReferenceCluster,
) -> None:
    clients = _clients(cluster)
    try:
        group = "placed"
        home = cluster.coordinator_node(group)
        assert _heartbeat(clients[home], group) == ErrorCode.NONE
        for node in clients:
            if node != home:
                assert _heartbeat(clients[node], group) == ErrorCode.NOT_COORDINATOR
        target = next(node for node in clients if node != home)
        cluster.move_coordinator(group, target)
        assert cluster.coordinator_node(group) == target
        description = cluster.describe_group(group)
        assert description is not None and description.coordinator == target
        assert list(description.members) == ["m-1"], "the new coordinator replayed the group"
        assert _heartbeat(clients[home], group) == ErrorCode.NOT_COORDINATOR
    finally:
        for client in clients.values():
            client.close()


def _fetch(client: WireClient, topic_id: object, partition: int, leader_epoch: int = -1) -> int:
    request = FetchRequest(
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        topics=[
            FetchTopic(
                topic_id=topic_id,
                partitions=[
                    FetchPartition(
                        partition=partition,
                        fetch_offset=0,
                        partition_max_bytes=1 << 20,
                        current_leader_epoch=leader_epoch,
                    )
                ],
            )
        ],
    )
    return int(client.request(request).responses[0].partitions[0].error_code)


def test_a_moved_leader_answers_and_the_old_one_refuses(cluster: ReferenceCluster) -> None:
    clients = _clients(cluster)
    try:
        topic_id = cluster.topic_id("spread")
        old = cluster.leader("spread", 0)
        new = next(node for node in clients if node != old)
        assert _fetch(clients[old], topic_id, 0) == ErrorCode.NONE
        assert _fetch(clients[new], topic_id, 0) == ErrorCode.NOT_LEADER_OR_FOLLOWER
        cluster.move_leader("spread", 0, new)
        assert cluster.leader("spread", 0) == new
        assert _fetch(clients[old], topic_id, 0) == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert _fetch(clients[new], topic_id, 0) == ErrorCode.NONE
        assert _fetch(clients[new], topic_id, 0, leader_epoch=0) == ErrorCode.FENCED_LEADER_EPOCH
        metadata = clients[old].request(MetadataRequest(topics=[MetadataRequestTopic(name="spread")]))
        partition = metadata.topics[0].partitions[0]
        assert (partition.leader_id, partition.leader_epoch) == (new, 1)
    finally:
        for client in clients.values():
            client.close()


def test_a_stopped_broker_refuses_connections_and_its_leadership_moves() -> None:
    with ReferenceCluster(brokers=3) as cluster:
        cluster.create_topic("t", 3)
        group = "g"
        victim = cluster.coordinator_node(group)
        led = [p for p in range(3) if cluster.leader("t", p) == victim]
        address = cluster.bootstrap_servers.split(",")[victim - 1]
        cluster.stop_broker(victim)
        assert cluster.brokers_up() == [n for n in (1, 2, 3) if n != victim]
        with pytest.raises(WireError):
            WireClient.connect("127.0.0.1", int(address.rsplit(":", 1)[1]))
        assert cluster.coordinator_node(group) != victim
        assert all(cluster.leader("t", p) != victim for p in led)
        cluster.start_broker(victim)
        assert cluster.brokers_up() == [1, 2, 3]
        with WireClient.connect("127.0.0.1", int(address.rsplit(":", 1)[1])) as client:
            metadata = client.request(MetadataRequest(topics=None))
            assert sorted(b.node_id for b in metadata.brokers) == [1, 2, 3]
