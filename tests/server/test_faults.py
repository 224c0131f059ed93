"""Fault injection: injected errors, delayed and dropped responses, coordinator failover, dropped
connections."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from kconsumer.errors import ErrorCode
from kconsumer.protocol import records as rb
from kconsumer.protocol.api import ApiKey
from kconsumer.protocol.messages.consumer_group import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from kconsumer.protocol.messages.fetch import FetchPartition, FetchRequest, FetchResponse, FetchTopic
from kconsumer.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from kconsumer.protocol.messages.offsets import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchResponse,
)
from kconsumer.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
)
from kconsumer.testing import ReferenceCluster
from kconsumer.testing.wire import WireClient, WireError

Connect = Callable[..., WireClient]


def join(
    client: WireClient, member: str, group: str = "g", topics: tuple[str, ...] = ("t",)
) -> ConsumerGroupHeartbeatResponse:
    request = ConsumerGroupHeartbeatRequest(
        group_id=group,
        member_id=member,
        member_epoch=0,
        rebalance_timeout_ms=5000,
        subscribed_topic_names=list(topics),
        subscribed_topic_regex="",
        topic_partitions=[],
    )
    return client.call(request, ConsumerGroupHeartbeatResponse, 1)


def heartbeat(
    client: WireClient, member: str, epoch: int, owned: list[TopicPartitions] | None = None, group: str = "g"
) -> ConsumerGroupHeartbeatResponse:
    request = ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=epoch, topic_partitions=owned
    )
    return client.call(request, ConsumerGroupHeartbeatResponse, 1)


def produce_request(topic: str = "t") -> ProduceRequest:
    data = rb.build_batch([(None, b"v", (), 1)])
    return ProduceRequest(
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            TopicProduceData(name=topic, partition_data=[PartitionProduceData(index=0, records=data)])
        ],
    )


def test_injected_errors_go_where_each_api_carries_them(cluster: ReferenceCluster, connect: Connect) -> None:
    topic_id = cluster.create_topic("t", 1)
    client = connect()
    cluster.inject_error(ApiKey.PRODUCE, ErrorCode.NOT_LEADER_OR_FOLLOWER, count=2)
    for _ in range(2):
        response = client.call(produce_request(), ProduceResponse, 9)
        assert response.responses[0].partition_responses[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert cluster.watermarks("t") == [(0, 0)]  # not processed
    response = client.call(produce_request(), ProduceResponse, 9)
    assert response.responses[0].partition_responses[0].error_code == 0  # count exhausted

    fetch = FetchRequest(
        max_wait_ms=0,
        min_bytes=1,
        topics=[
            FetchTopic(
                topic="t",
                topic_id=topic_id,
                partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1000)],
            )
        ],
    )
    cluster.inject_error(ApiKey.FETCH, ErrorCode.NOT_LEADER_OR_FOLLOWER, count=2)
    old = client.call(fetch, FetchResponse, 12)  # before v13: top level and every partition
    assert old.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert old.responses[0].partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    new = client.call(fetch, FetchResponse, 16)  # v13+: top level only
    assert (new.error_code, new.responses) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, [])

    cluster.inject_error(ApiKey.METADATA, ErrorCode.LEADER_NOT_AVAILABLE)
    metadata = client.call(MetadataRequest(topics=[MetadataRequestTopic(name="t")]), MetadataResponse, 13)
    assert [t.error_code for t in metadata.topics] == [ErrorCode.LEADER_NOT_AVAILABLE]

    cluster.inject_error(ApiKey.CONSUMER_GROUP_HEARTBEAT, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    assert join(client, "m1").error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert cluster.describe_group("g") is None
    assert join(client, "m1").error_code == 0

    cluster.inject_error(ApiKey.OFFSET_FETCH, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    offsets = client.call(
        OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id="g", topics=None)]),
        OffsetFetchResponse,
        9,
    )
    assert [g.error_code for g in offsets.groups] == [ErrorCode.COORDINATOR_NOT_AVAILABLE]

    cluster.inject_error(ApiKey.OFFSET_COMMIT, ErrorCode.REBALANCE_IN_PROGRESS)
    commit = OffsetCommitRequest(
        group_id="admin",
        topics=[
            OffsetCommitRequestTopic(
                name="t", partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=1)]
            )
        ],
    )
    result = client.call(commit, OffsetCommitResponse, 9)
    assert result.topics[0].partitions[0].error_code == ErrorCode.REBALANCE_IN_PROGRESS
    assert cluster.committed("admin") == {}


def test_delayed_responses_are_processed_at_once_and_answered_later(
    cluster: ReferenceCluster, connect: Connect
) -> None:
    cluster.create_topic("t", 1)
    client = connect()
    cluster.delay_responses(ApiKey.PRODUCE, 300, count=1)
    started = time.monotonic()
    response = client.call(produce_request(), ProduceResponse, 9)
    assert time.monotonic() - started >= 0.29
    assert response.responses[0].partition_responses[0].error_code == 0
    started = time.monotonic()
    client.call(produce_request(), ProduceResponse, 9)
    assert time.monotonic() - started < 0.29  # count was 1
    cluster.delay_responses(ApiKey.METADATA, 200)  # until cleared
    for _ in range(2):
        started = time.monotonic()
        client.call(MetadataRequest(topics=[]), MetadataResponse, 12)
        assert time.monotonic() - started >= 0.19
    cluster.clear_faults()
    started = time.monotonic()
    client.call(MetadataRequest(topics=[]), MetadataResponse, 12)
    assert time.monotonic() - started < 0.19


def test_dropped_response_closes_the_connection_after_processing(
    cluster: ReferenceCluster, connect: Connect
) -> None:
    cluster.create_topic("t", 1)
    client = connect()
    cluster.drop_responses(ApiKey.PRODUCE)
    with pytest.raises(WireError):
        client.call(produce_request(), ProduceResponse, 9)
    assert cluster.watermarks("t") == [(0, 1)]  # it took effect
    again = connect()
    assert (
        again.call(produce_request(), ProduceResponse, 9).responses[0].partition_responses[0].base_offset == 1
    )


def test_coordinator_failover_keeps_the_group_and_answers_not_coordinator_once(
    cluster: ReferenceCluster, connect: Connect
) -> None:
    topic_id = cluster.create_topic("t", 2)
    client = connect()
    first = join(client, "m1")
    assert first.error_code == 0 and first.member_epoch > 0
    owned = first.assignment.topic_partitions if first.assignment else []
    client.call(
        OffsetCommitRequest(
            group_id="g",
            generation_id_or_member_epoch=first.member_epoch,
            member_id="m1",
            topics=[
                OffsetCommitRequestTopic(
                    name="t", partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=7)]
                )
            ],
        ),
        OffsetCommitResponse,
        9,
    )
    before = cluster.describe_group("g")
    bystander = connect()  # connected but has not talked to the coordinator yet
    cluster.fail_over_coordinator()
    assert cluster.describe_group("g") == before
    assert cluster.committed("g") == {("t", 0): 7}

    moved = heartbeat(client, "m1", first.member_epoch, owned)
    assert moved.error_code == ErrorCode.NOT_COORDINATOR
    again = heartbeat(client, "m1", first.member_epoch, owned)
    assert (again.error_code, again.member_epoch) == (0, first.member_epoch)
    # A connection that never talked to the old incarnation is served at once.
    assert join(bystander, "m2").error_code == 0
    assert {tp.topic_id for tp in owned} == {topic_id}


def test_drop_connections(cluster: ReferenceCluster, connect: Connect) -> None:
    clients = [connect(), connect()]
    assert cluster.drop_connections() == 2
    for client in clients:
        with pytest.raises(WireError):
            client.call(MetadataRequest(topics=[]), MetadataResponse, 12)
    assert connect().call(MetadataRequest(topics=[]), MetadataResponse, 12).brokers


def test_an_injected_error_on_an_acks_zero_produce_closes_the_connection(
    cluster: ReferenceCluster, connect: Connect
) -> None:
    cluster.create_topic("t", 1)
    client = connect()
    cluster.inject_error(ApiKey.PRODUCE, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    request = produce_request()
    request.acks = 0
    client.send(request, 9)  # no response is ever sent for acks=0: Kafka closes the connection
    with pytest.raises(WireError):
        client.call(MetadataRequest(topics=[]), MetadataResponse, 12)
    assert cluster.watermarks("t") == [(0, 0)]
