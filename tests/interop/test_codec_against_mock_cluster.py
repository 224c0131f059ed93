"""Our codec and `WireClient` against a Kafka implementation nobody here wrote: librdkafka's mock
cluster, started inside a confluent-kafka Producer handle (it lives as long as that handle).

Facts about the mock these tests rely on or work around (confluent-kafka 2.16.1 / librdkafka 2.16):
* It implements ApiVersions 0-2 only, so it answers our v3 with UNSUPPORTED_VERSION and the client
  falls back to v0 (its v3 error answer mixes both encodings; only the error code is read).
* It advertises ConsumerGroupHeartbeat v1 only, OffsetCommit up to v9, OffsetFetch up to v6 (no
  member id, epoch or topic ids there), FindCoordinator up to v3, Metadata up to v13, Fetch up to
  v16, Produce up to v10 and ListOffsets up to v7.
* It ABORTS THE WHOLE PROCESS on a heartbeat with SubscribedTopicNames and a null regex, so every
  join below sends an empty regex with the names (as librdkafka itself does).
* Its Metadata responses end with one stray byte (the top-level tagged-field section is written
  twice), so the client runs with ``allow_trailing_bytes`` and the tests check nothing else is
  padded. Its Produce v5 response lacks LogStartOffset (it writes it from v6), so v5 is not sent.
* Topics auto-create with 4 partitions on first use.
"""

from __future__ import annotations

import os
import socket
import struct
from collections.abc import Iterator

import pytest

from kconsumer.errors import ErrorCode
from kconsumer.protocol import records as rb
from kconsumer.protocol.api import ApiKey, encode_request
from kconsumer.protocol.messages.api_versions import ApiVersionsRequest
from kconsumer.protocol.messages.consumer_group import (
    Assignor,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from kconsumer.protocol.messages.fetch import FetchPartition, FetchRequest, FetchResponse, FetchTopic
from kconsumer.protocol.messages.list_offsets import (
    LATEST_TIMESTAMP,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from kconsumer.protocol.messages.metadata import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from kconsumer.protocol.messages.offsets import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
)
from kconsumer.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
)
from kconsumer.protocol.uuid import Uuid
from kconsumer.testing.wire import WireClient

confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def mock_address() -> Iterator[tuple[str, int]]:
    producer = confluent_kafka.Producer({"test.mock.num.brokers": 1, "log_level": 3})
    brokers = producer.list_topics(timeout=5).brokers
    assert len(brokers) == 1
    broker = next(iter(brokers.values()))
    yield broker.host, broker.port
    del producer  # the mock cluster dies with its handle, after the last test of the module


@pytest.fixture
def client(mock_address: tuple[str, int]) -> Iterator[WireClient]:
    with WireClient.connect(*mock_address, timeout=10, allow_trailing_bytes=True) as wire:
        yield wire
        # Only the known Metadata quirk may have needed the leniency.
        assert all(name.startswith("Metadata ") and count == 1 for name, count in wire.trailing_bytes)


def _unique(prefix: str) -> str:
    return f"{prefix}-{os.urandom(4).hex()}"


def _topic(client: WireClient, name: str) -> tuple[Uuid, int]:
    """Create (by first use) `name` and return its id and partition count, checked."""
    response = client.call(MetadataRequest(topics=[MetadataRequestTopic(name=name)]), MetadataResponse)
    (topic,) = response.topics
    assert topic.error_code == 0 and topic.name == name
    return topic.topic_id, len(topic.partitions)


def _member_id() -> str:
    # Kafka's text form of a random Uuid (KIP-1082: v1 members generate their own id).
    return str(Uuid(os.urandom(16)))


def _join(
    client: WireClient, group: str, member_id: str, topics: list[str]
) -> ConsumerGroupHeartbeatResponse:
    request = ConsumerGroupHeartbeatRequest(
        group_id=group,
        member_id=member_id,
        member_epoch=0,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=topics,
        subscribed_topic_regex="",  # never null together with names: the mock would abort
        topic_partitions=[],
    )
    return client.call(request, ConsumerGroupHeartbeatResponse, version=1)


# -- ApiVersions -------------------------------------------------------------------------------


def test_api_versions_v3_is_refused_and_the_client_falls_back_to_v0(mock_address: tuple[str, int]) -> None:
    # The raw exchange: the mock answers v3 with UNSUPPORTED_VERSION (error code leads the body).
    with socket.create_connection(mock_address, timeout=5) as sock:
        sock.sendall(encode_request(ApiVersionsRequest(client_software_name="t"), 3, 77, "raw"))
        size, correlation_id, error_code = struct.unpack(">iih", sock.recv(10))
    assert correlation_id == 77 and size >= 6
    assert error_code in (ErrorCode.UNSUPPORTED_VERSION, ErrorCode.NONE)

    with WireClient.connect(*mock_address, allow_trailing_bytes=True) as client:
        expected = 0 if error_code == ErrorCode.UNSUPPORTED_VERSION else 3
        assert client.api_versions_version == expected
        response = client.api_versions_response
        assert response is not None and response.error_code == 0
        assert response.version_range(ApiKey.API_VERSIONS) is not None
        for key in (ApiKey.METADATA, ApiKey.FIND_COORDINATOR, ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH):
            assert client.supports(key)
        assert client.supports(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1)


# -- Metadata and FindCoordinator --------------------------------------------------------------


def test_metadata_auto_creates_topics_with_ids(client: WireClient) -> None:
    assert client.version_for(ApiKey.METADATA) >= 12
    name = _unique("md")
    topic_id, partitions = _topic(client, name)
    assert topic_id  # not the zero Uuid
    assert partitions == 4
    response = client.call(MetadataRequest(topics=[MetadataRequestTopic(name=name)]), MetadataResponse)
    assert response.brokers[0].host == client.address[0]
    assert response.brokers[0].port == client.address[1]
    (topic,) = response.topics
    assert topic.topic_id == topic_id
    assert sorted(p.partition_index for p in topic.partitions) == [0, 1, 2, 3]
    assert all(p.leader_id == response.brokers[0].node_id for p in topic.partitions)


def test_metadata_lookup_by_topic_id_at_v12(client: WireClient) -> None:
    name = _unique("byid")
    topic_id, _ = _topic(client, name)
    request = MetadataRequest(topics=[MetadataRequestTopic(topic_id=topic_id, name=None)])
    response = client.call(request, MetadataResponse, version=12)
    (topic,) = response.topics
    assert (topic.error_code, topic.name, topic.topic_id) == (0, name, topic_id)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_find_coordinator_single_key_versions(client: WireClient, version: int) -> None:
    response = client.call(FindCoordinatorRequest(key=_unique("g")), FindCoordinatorResponse, version=version)
    assert response.error_code == 0
    assert (response.host, response.port) == client.address
    assert response.node_id >= 0


def test_find_coordinator_negotiates_the_mocks_highest(client: WireClient) -> None:
    version = client.version_for(ApiKey.FIND_COORDINATOR)
    assert version <= 3  # the mock lacks the batched v4+
    response = client.call(FindCoordinatorRequest(key=_unique("g")), FindCoordinatorResponse)
    assert response.error_code == 0 and response.port == client.address[1]


# -- the consumer group protocol ---------------------------------------------------------------


def test_heartbeat_join_then_heartbeat_with_the_extension_tags(client: WireClient) -> None:
    topic = _unique("cg")
    topic_id, partitions = _topic(client, topic)
    group, member_id = _unique("group"), _member_id()

    joined = _join(client, group, member_id, [topic])
    assert joined.error_code == 0, joined.error_message
    assert joined.member_id == member_id
    assert joined.member_epoch > 0
    assert joined.heartbeat_interval_ms > 0
    assert joined.assignment is not None
    (assigned,) = joined.assignment.topic_partitions
    assert assigned.topic_id == topic_id
    assert sorted(assigned.partitions) == list(range(partitions))
    # A real broker knows nothing of our extension tags, so nothing comes back in them.
    assert not joined.should_compute_assignment and joined.pending_topic_partitions is None

    # The next heartbeat carries ClientAssignors (tag 10000): a peer must skip it and accept.
    heartbeat = ConsumerGroupHeartbeatRequest(
        group_id=group,
        member_id=member_id,
        member_epoch=joined.member_epoch,
        client_assignors=[
            Assignor(
                name="sticky-local",
                minimum_version=0,
                maximum_version=2,
                reason=0,
                metadata_version=1,
                metadata_bytes=b"\x00\x01meta",
            )
        ],
    )
    assert b"sticky-local" in heartbeat.encode(1)  # the tag really is on the wire
    answered = client.call(heartbeat, ConsumerGroupHeartbeatResponse, version=1)
    assert answered.error_code == 0, answered.error_message
    assert answered.member_epoch == joined.member_epoch
    assert answered.member_id == member_id

    # Leave (epoch -1): the mock acknowledges with epoch -1.
    leave = ConsumerGroupHeartbeatRequest(group_id=group, member_id=member_id, member_epoch=-1)
    left = client.call(leave, ConsumerGroupHeartbeatResponse, version=1)
    assert left.error_code == 0 and left.member_epoch == -1


def test_offset_commit_and_fetch_negotiate_down_and_read_back(client: WireClient) -> None:
    topic = _unique("off")
    _topic(client, topic)
    group, member_id = _unique("group"), _member_id()
    joined = _join(client, group, member_id, [topic])
    assert joined.error_code == 0 and joined.member_epoch > 0

    commit_version = client.version_for(ApiKey.OFFSET_COMMIT)
    fetch_version = client.version_for(ApiKey.OFFSET_FETCH)
    assert commit_version == 9  # the mock's highest; v10 (topic ids) is not there
    assert fetch_version < 8  # no member id/epoch or batching there: v6 semantics

    commit = OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=joined.member_epoch,
        member_id=member_id,
        topics=[
            OffsetCommitRequestTopic(
                name=topic,
                partitions=[
                    OffsetCommitRequestPartition(
                        partition_index=0, committed_offset=42, committed_metadata="m0"
                    ),
                    OffsetCommitRequestPartition(
                        partition_index=3,
                        committed_offset=7,
                        committed_leader_epoch=0,
                        committed_metadata=None,
                    ),
                ],
            )
        ],
    )
    committed = client.call(commit, OffsetCommitResponse)
    (topic_result,) = committed.topics
    assert topic_result.name == topic
    assert [(p.partition_index, p.error_code) for p in topic_result.partitions] == [(0, 0), (3, 0)]

    fetch = OffsetFetchRequest(
        group_id=group, topics=[OffsetFetchRequestTopic(name=topic, partition_indexes=[0, 1, 3])]
    )
    fetched = client.call(fetch, OffsetFetchResponse)
    assert fetched.error_code == 0
    (topic_offsets,) = fetched.topics
    by_partition = {p.partition_index: p for p in topic_offsets.partitions}
    assert by_partition[0].committed_offset == 42 and by_partition[0].metadata == "m0"
    assert by_partition[3].committed_offset == 7
    assert by_partition[1].committed_offset == -1  # never committed
    assert all(p.error_code == 0 for p in topic_offsets.partitions)


# -- the data plane: Produce, Fetch, ListOffsets with our record batches -----------------------


def test_produce_fetch_and_list_offsets_round_trip_our_batches(client: WireClient) -> None:
    topic = _unique("data")
    topic_id, _ = _topic(client, topic)
    rows = [
        (f"k{i}".encode(), f"v{i}".encode() * 10, [("n", str(i).encode())], 1_700_000_000_000 + i)
        for i in range(7)
    ]
    produce = ProduceRequest(
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            TopicProduceData(
                name=topic, partition_data=[PartitionProduceData(index=2, records=rb.build_batch(rows))]
            )
        ],
    )
    produced = client.call(produce, ProduceResponse)
    (partition_result,) = produced.responses[0].partition_responses
    assert (partition_result.index, partition_result.error_code, partition_result.base_offset) == (2, 0, 0)
    # A second batch at an older version, to see the broker assign offsets after the first one.
    again = client.call(produce, ProduceResponse, version=3)
    assert again.responses[0].partition_responses[0].base_offset == len(rows)

    def fetch(version: int, offset: int) -> FetchResponse:
        partitions = [FetchPartition(partition=2, fetch_offset=offset, partition_max_bytes=1 << 20)]
        fetch_topic = (
            FetchTopic(topic_id=topic_id, partitions=partitions)
            if version >= 13
            else FetchTopic(topic=topic, partitions=partitions)
        )
        request = FetchRequest(max_wait_ms=100, min_bytes=1, topics=[fetch_topic])
        return client.call(request, FetchResponse, version=version)

    for version in (client.version_for(ApiKey.FETCH), 12, 4):
        records: list[rb.Record] = []
        while len(records) < 2 * len(rows):  # the mock answers one batch per fetch
            fetched = fetch(version, len(records))
            (topic_data,) = fetched.responses
            assert topic_data.topic_id == (topic_id if version >= 13 else Uuid(bytes(16)))
            assert topic_data.topic == ("" if version >= 13 else topic)
            (partition,) = topic_data.partitions
            assert partition.error_code == 0 and partition.high_watermark == 2 * len(rows)
            headers = rb.read_batches(partition.records)
            assert headers and headers[0].base_offset == len(records)
            assert all(rb.crc_is_valid(partition.records, h) for h in headers)
            records += rb.decode_records(partition.records)
        assert [r.offset for r in records] == list(range(2 * len(rows)))
        expected = [(k, v, h, t) for k, v, h, t in rows] * 2
        assert [(r.key, r.value, r.headers, r.timestamp) for r in records] == expected

    listed = client.call(
        ListOffsetsRequest(
            topics=[
                ListOffsetsTopic(
                    name=topic,
                    partitions=[ListOffsetsPartition(partition_index=2, timestamp=LATEST_TIMESTAMP)],
                )
            ]
        ),
        ListOffsetsResponse,
    )
    (offset,) = listed.topics[0].partitions
    assert (offset.error_code, offset.offset) == (0, 2 * len(rows))
