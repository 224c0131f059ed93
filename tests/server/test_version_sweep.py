"""Every API at every version we advertise gets a proper answer (no handler or encoding failure)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from kconsumer.protocol import records as rb
from kconsumer.protocol.api import API_SPECS, ApiKey
from kconsumer.protocol.messages import classic_group as classic
from kconsumer.protocol.messages import worker_group
from kconsumer.protocol.messages.admin import (
    CreatableTopic,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DeleteTopicState,
)
from kconsumer.protocol.messages.api_versions import ApiVersionsRequest
from kconsumer.protocol.messages.consumer_group import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
)
from kconsumer.protocol.messages.extensions import (
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupPrepareAssignmentRequest,
)
from kconsumer.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from kconsumer.protocol.messages.list_groups import DeleteGroupsRequest, ListGroupsRequest
from kconsumer.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from kconsumer.protocol.messages.metadata import FindCoordinatorRequest, MetadataRequest, MetadataRequestTopic
from kconsumer.protocol.messages.offsets import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)
from kconsumer.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from kconsumer.protocol.messages.producer_ids import InitProducerIdRequest
from kconsumer.protocol.messages.sasl import SaslAuthenticateRequest, SaslHandshakeRequest
from kconsumer.protocol.messages.transactions import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
    DescribeTransactionsRequest,
    EndTxnRequest,
    ListTransactionsRequest,
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from kconsumer.protocol.schema import Message
from kconsumer.protocol.uuid import Uuid
from kconsumer.testing import ReferenceCluster
from kconsumer.testing.wire import WireClient

Builder = Callable[[int, Uuid], Message]


def _produce(v: int, tid: Uuid) -> Message:
    data = rb.build_batch([(b"k", b"v", (), 1)])
    topic = TopicProduceData(name="t" if v < 13 else "", topic_id=tid if v >= 13 else Uuid.from_int(0))
    topic.partition_data = [PartitionProduceData(index=0, records=data)]
    return ProduceRequest(acks=1, timeout_ms=1000, topic_data=[topic])


def _fetch(v: int, tid: Uuid) -> Message:
    topic = FetchTopic(topic="t" if v < 13 else "", topic_id=tid if v >= 13 else Uuid.from_int(0))
    topic.partitions = [FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)]
    return FetchRequest(max_wait_ms=0, min_bytes=1, topics=[topic])


def _metadata(v: int, tid: Uuid) -> Message:
    return MetadataRequest(topics=[MetadataRequestTopic(name="t")] if v else [])


def _commit(v: int, tid: Uuid) -> Message:
    topic = OffsetCommitRequestTopic(
        name="t" if v < 10 else "", topic_id=tid if v >= 10 else Uuid.from_int(0)
    )
    topic.partitions = [OffsetCommitRequestPartition(partition_index=0, committed_offset=1)]
    return OffsetCommitRequest(group_id="g", topics=[topic])


def _offset_fetch(v: int, tid: Uuid) -> Message:
    if v >= 8:
        topics = [
            OffsetFetchRequestTopics(
                name="t" if v < 10 else "",
                topic_id=tid if v >= 10 else Uuid.from_int(0),
                partition_indexes=[0],
            )
        ]
        return OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id="g", topics=topics)])
    return OffsetFetchRequest(group_id="g", topics=[OffsetFetchRequestTopic(name="t", partition_indexes=[0])])


def _find(v: int, tid: Uuid) -> Message:
    return FindCoordinatorRequest(coordinator_keys=["g"]) if v >= 4 else FindCoordinatorRequest(key="g")


def _heartbeat(v: int, tid: Uuid) -> Message:
    return ConsumerGroupHeartbeatRequest(
        group_id=f"hb{v}",
        member_id=f"member-{v}",
        member_epoch=0,
        rebalance_timeout_ms=1000,
        subscribed_topic_names=["t"],
        subscribed_topic_regex="" if v >= 1 else None,
        topic_partitions=[],
    )


def _create(v: int, tid: Uuid) -> Message:
    return CreateTopicsRequest(
        topics=[CreatableTopic(name=f"new{v}", num_partitions=1, replication_factor=1)]
    )


def _delete(v: int, tid: Uuid) -> Message:
    if v >= 6:
        return DeleteTopicsRequest(topics=[DeleteTopicState(name="missing", topic_id=Uuid.from_int(0))])
    return DeleteTopicsRequest(topic_names=["missing"])


BUILDERS: dict[int, Builder] = {
    ApiKey.PRODUCE: _produce,
    ApiKey.FETCH: _fetch,
    ApiKey.LIST_OFFSETS: lambda v, tid: ListOffsetsRequest(
        topics=[
            ListOffsetsTopic(name="t", partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)])
        ]
    ),
    ApiKey.METADATA: _metadata,
    ApiKey.OFFSET_COMMIT: _commit,
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.FIND_COORDINATOR: _find,
    ApiKey.LIST_GROUPS: lambda v, tid: ListGroupsRequest(),
    ApiKey.API_VERSIONS: lambda v, tid: ApiVersionsRequest(),
    ApiKey.CREATE_TOPICS: _create,
    ApiKey.DELETE_TOPICS: _delete,
    ApiKey.CREATE_PARTITIONS: lambda v, tid: CreatePartitionsRequest(
        topics=[CreatePartitionsTopic(name="t", count=1, assignments=None)]
    ),
    # On this plaintext listener both are answered ILLEGAL_SASL_STATE, as Kafka's non-SASL listeners do.
    ApiKey.SASL_HANDSHAKE: lambda v, tid: SaslHandshakeRequest(mechanism="PLAIN"),
    ApiKey.SASL_AUTHENTICATE: lambda v, tid: SaslAuthenticateRequest(auth_bytes=b"\x00u\x00p"),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: _heartbeat,
    ApiKey.CONSUMER_GROUP_DESCRIBE: lambda v, tid: ConsumerGroupDescribeRequest(group_ids=["g", "hb0"]),
    ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT: lambda v, tid: ConsumerGroupPrepareAssignmentRequest(
        group_id="g", member_id="m", member_epoch=1
    ),
    ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT: lambda v, tid: ConsumerGroupInstallAssignmentRequest(
        group_id="g", member_id="m", member_epoch=1
    ),
    # Worker groups (docs/worker-protocol.md): a worker joining, then two requests of a worker
    # that was never chosen (UNKNOWN_MEMBER_ID).
    ApiKey.CONNECT_GROUP_HEARTBEAT: lambda v, tid: worker_group.ConnectGroupHeartbeatRequest(
        group_id="workers",
        member_id="w",
        member_epoch=0,
        rebalance_timeout_ms=10_000,
        client_assignors=[
            worker_group.WorkerAssignor(
                name="rr",
                minimum_version=0,
                maximum_version=0,
                reason=0,
                metadata_version=0,
                metadata_bytes=b"",
            )
        ],
    ),
    ApiKey.CONNECT_GROUP_PREPARE_ASSIGNMENT: lambda v, tid: worker_group.ConnectGroupPrepareAssignmentRequest(
        group_id="workers", member_id="nobody", member_epoch=1
    ),
    ApiKey.CONNECT_GROUP_INSTALL_ASSIGNMENT: lambda v, tid: worker_group.ConnectGroupInstallAssignmentRequest(
        group_id="workers", member_id="nobody", member_epoch=1
    ),
    # Classic APIs naming a member of a group that does not exist: answered at once, UNKNOWN_MEMBER_ID.
    ApiKey.JOIN_GROUP: lambda v, tid: classic.JoinGroupRequest(
        group_id="classic",
        session_timeout_ms=10_000,
        member_id="nobody",
        protocol_type="consumer",
        protocols=[classic.JoinGroupRequestProtocol(name="range", metadata=b"")],
    ),
    ApiKey.SYNC_GROUP: lambda v, tid: classic.SyncGroupRequest(
        group_id="classic", generation_id=1, member_id="nobody"
    ),
    ApiKey.HEARTBEAT: lambda v, tid: classic.HeartbeatRequest(
        group_id="classic", generation_id=1, member_id="nobody"
    ),
    ApiKey.LEAVE_GROUP: lambda v, tid: (
        classic.LeaveGroupRequest(group_id="classic", members=[classic.MemberIdentity(member_id="nobody")])
        if v >= 3
        else classic.LeaveGroupRequest(group_id="classic", member_id="nobody")
    ),
    ApiKey.DESCRIBE_GROUPS: lambda v, tid: classic.DescribeGroupsRequest(groups=["g", "classic"]),
    ApiKey.OFFSET_DELETE: lambda v, tid: OffsetDeleteRequest(
        group_id="g",
        topics=[
            OffsetDeleteRequestTopic(name="t", partitions=[OffsetDeleteRequestPartition(partition_index=0)])
        ],
    ),
    ApiKey.DELETE_GROUPS: lambda v, tid: DeleteGroupsRequest(groups_names=["nobody", "g"]),
    ApiKey.INIT_PRODUCER_ID: lambda v, tid: InitProducerIdRequest(transaction_timeout_ms=60000),
    # Transaction APIs naming a producer the coordinator never gave out: INVALID_PRODUCER_ID_MAPPING.
    ApiKey.ADD_PARTITIONS_TO_TXN: lambda v, tid: AddPartitionsToTxnRequest(
        transactional_id="tx",
        producer_id=99,
        producer_epoch=0,
        topics=[AddPartitionsToTxnTopic(name="t", partitions=[0])],
    ),
    ApiKey.ADD_OFFSETS_TO_TXN: lambda v, tid: AddOffsetsToTxnRequest(
        transactional_id="tx", producer_id=99, producer_epoch=0, group_id="g"
    ),
    ApiKey.END_TXN: lambda v, tid: EndTxnRequest(
        transactional_id="tx", producer_id=99, producer_epoch=0, committed=True
    ),
    ApiKey.DESCRIBE_TRANSACTIONS: lambda v, tid: DescribeTransactionsRequest(
        transactional_ids=["tx", "nobody"]
    ),
    ApiKey.LIST_TRANSACTIONS: lambda v, tid: ListTransactionsRequest(state_filters=["Ongoing"]),
    ApiKey.TXN_OFFSET_COMMIT: lambda v, tid: TxnOffsetCommitRequest(
        transactional_id="tx",
        group_id="txn-group",
        producer_id=99,
        producer_epoch=0,
        topics=[
            TxnOffsetCommitRequestTopic(
                name="t", partitions=[TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=0)]
            )
        ],
    ),
}

CASES = [
    (key, version)
    for key, spec in sorted(API_SPECS.items())
    for version in range(spec.versions.lo, (spec.versions.hi or 0) + 1)
]


def test_every_api_has_a_builder() -> None:
    assert set(BUILDERS) == set(API_SPECS)


@pytest.fixture(scope="module")
def shared() -> object:
    with ReferenceCluster(assignment_interval_ms=0) as cluster:
        topic_id = cluster.create_topic("t", 1)
        host, port = cluster.bootstrap_servers.rsplit(":", 1)
        with WireClient.connect(host, int(port)) as client:
            yield client, topic_id


@pytest.mark.parametrize(("api_key", "version"), CASES, ids=[f"{API_SPECS[k].name}-v{v}" for k, v in CASES])
def test_every_version_is_answered(
    shared: tuple[WireClient, Uuid], api_key: int, version: int, caplog: pytest.LogCaptureFixture
) -> None:
    client, topic_id = shared
    request = BUILDERS[api_key](version, topic_id)
    with caplog.at_level(logging.WARNING, logger="kconsumer.broker.server"):
        response = client.request(request, version)
    assert api_key == response.API_KEY
    assert not [r for r in caplog.records if r.name == "kconsumer.broker.server"], caplog.text
    codes = _error_codes(response)
    assert -1 not in codes, f"UNKNOWN_SERVER_ERROR in {response}"


def _error_codes(value: object) -> set[int]:
    """Every error code anywhere in a response."""
    found: set[int] = set()
    if isinstance(value, list):
        for item in value:
            found |= _error_codes(item)
    elif hasattr(value, "__kafka_fields__"):
        for name, item in vars(value).items():
            if name == "error_code" and isinstance(item, int):
                found.add(item)
            else:
                found |= _error_codes(item)
    return found
