"""Hand-built byte layouts of the data-plane and admin messages (facts §1, §3), and Kafka's rule that a
field set in a version that lacks it is an encode error unless the field is ignorable."""

from __future__ import annotations

import struct

import pytest

from kconsumer.errors import ProtocolError
from kconsumer.protocol.api import API_SPECS, ApiKey
from kconsumer.protocol.messages.admin import (
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicState,
)
from kconsumer.protocol.messages.api_versions import (
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
    FinalizedFeatureKey,
    SupportedFeatureKey,
)
from kconsumer.protocol.messages.fetch import (
    HIGH_WATERMARK_UNSUPPORTED,
    FetchableTopicResponse,
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    PartitionData,
    ReplicaState,
)
from kconsumer.protocol.messages.list_offsets import ListOffsetsRequest
from kconsumer.protocol.messages.metadata import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from kconsumer.protocol.messages.produce import (
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionProduceData,
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
    TopicProduceResponse,
)
from kconsumer.protocol.uuid import Uuid

TOPIC_ID = Uuid(bytes(range(1, 17)))


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def cstr(s: str) -> bytes:
    """A compact (flexible) string of fewer than 127 bytes."""
    return bytes([len(s) + 1]) + s.encode()


def carr(n: int) -> bytes:
    """A compact array length of fewer than 127 elements."""
    return bytes([n + 1])


# -- version ranges ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "valid", "flexible"),
    [
        (ApiKey.PRODUCE, "3-13", "9+"),
        (ApiKey.FETCH, "4-18", "12+"),
        (ApiKey.LIST_OFFSETS, "1-11", "6+"),
        (ApiKey.METADATA, "0-13", "9+"),
        (ApiKey.FIND_COORDINATOR, "0-6", "3+"),
        (ApiKey.API_VERSIONS, "0-4", "3+"),
        (ApiKey.CREATE_TOPICS, "2-7", "5+"),
        (ApiKey.DELETE_TOPICS, "1-6", "4+"),
        (ApiKey.CREATE_PARTITIONS, "0-3", "2+"),
    ],
)
def test_kafka_4_3_version_ranges(key: int, valid: str, flexible: str) -> None:
    spec = API_SPECS[key]
    assert (str(spec.request.VALID_VERSIONS), str(spec.request.FLEXIBLE_VERSIONS)) == (valid, flexible)
    assert (str(spec.response.VALID_VERSIONS), str(spec.response.FLEXIBLE_VERSIONS)) == (valid, flexible)


# -- ApiVersions -------------------------------------------------------------------------------


def test_api_versions_request_bodies() -> None:
    request = ApiVersionsRequest(client_software_name="kc", client_software_version="1.0")
    assert ApiVersionsRequest().encode(0) == b""
    assert request.encode(2) == b""  # ignorable: dropped below v3
    assert request.encode(3) == cstr("kc") + cstr("1.0") + b"\x00"
    assert request.encode(4) == request.encode(3)


def test_api_versions_response_v3_tagged_fields() -> None:
    response = ApiVersionsResponse(
        api_keys=[ApiVersion(api_key=18, min_version=0, max_version=4)],
        throttle_time_ms=3,
        supported_features=[SupportedFeatureKey(name="f", min_version=1, max_version=2)],
        finalized_features_epoch=5,
        finalized_features=[FinalizedFeatureKey(name="g", max_version_level=3, min_version_level=1)],
        zk_migration_ready=True,
    )
    supported = carr(1) + cstr("f") + i16(1) + i16(2) + b"\x00"
    finalized = carr(1) + cstr("g") + i16(3) + i16(1) + b"\x00"
    expected = (
        i16(0)
        + carr(1)
        + i16(18)
        + i16(0)
        + i16(4)
        + b"\x00"
        + i32(3)
        + b"\x04"  # four tagged fields, in tag order
        + b"\x00"
        + bytes([len(supported)])
        + supported
        + b"\x01\x08"
        + i64(5)
        + b"\x02"
        + bytes([len(finalized)])
        + finalized
        + b"\x03\x01\x01"
    )
    assert response.encode(3) == expected
    assert ApiVersionsResponse.decode(expected, 3) == response
    # Defaults are not written; v0 has no throttle time and no tags.
    assert ApiVersionsResponse(api_keys=[]).encode(3) == i16(0) + carr(0) + i32(0) + b"\x00"
    v0 = ApiVersionsResponse(error_code=35, api_keys=[ApiVersion(api_key=18, min_version=0, max_version=2)])
    assert v0.encode(0) == i16(35) + i32(1) + i16(18) + i16(0) + i16(2)
    assert v0.version_range(18) == (0, 2) and v0.version_range(3) is None


# -- Metadata and FindCoordinator --------------------------------------------------------------


def test_metadata_v13_appends_the_top_level_error_code() -> None:
    response = MetadataResponse(error_code=29)
    v12 = i32(0) + carr(0) + b"\x00" + i32(-1) + carr(0) + b"\x00"  # null cluster id = compact 0
    assert response.replace(error_code=0).encode(12) == v12
    assert response.encode(13) == v12[:-1] + i16(29) + b"\x00"
    assert MetadataResponse.decode(response.encode(13), 13).error_code == 29
    assert response.encode(12) == v12  # ignorable: silently absent before v13


def test_metadata_request_topic_ids_and_null_names() -> None:
    request = MetadataRequest(topics=[MetadataRequestTopic(topic_id=TOPIC_ID, name=None)])
    assert request.encode(12) == carr(1) + TOPIC_ID.bytes + b"\x00" + b"\x00" + b"\x01" + b"\x00" + b"\x00"
    assert MetadataRequest(topics=None).encode(1) == i32(-1)
    with pytest.raises(ProtocolError) as info:
        request.encode(9)  # names are not nullable before v10
    assert info.value.field == "Topics[0].Name"
    with pytest.raises(ProtocolError) as info:
        MetadataRequest(topics=None).encode(0)  # v0 has no "all topics" null
    assert info.value.field == "Topics"
    with pytest.raises(ProtocolError) as info:
        MetadataRequest(include_cluster_authorized_operations=True).encode(11)
    assert info.value.field == "IncludeClusterAuthorizedOperations"


def test_find_coordinator_single_and_batched_layouts() -> None:
    assert FindCoordinatorRequest(key="g").encode(0) == i16(1) + b"g"
    assert FindCoordinatorRequest(key="g", key_type=1).encode(1) == i16(1) + b"g" + b"\x01"
    assert FindCoordinatorRequest(key="g").encode(3) == cstr("g") + b"\x00" + b"\x00"
    assert (
        FindCoordinatorRequest(coordinator_keys=["a", "b"]).encode(4)
        == b"\x00" + carr(2) + cstr("a") + cstr("b") + b"\x00"
    )
    for request, version, field in [
        (FindCoordinatorRequest(key="g", key_type=1), 0, "KeyType"),
        (FindCoordinatorRequest(coordinator_keys=["a"]), 3, "CoordinatorKeys"),
        (FindCoordinatorRequest(key="g"), 4, "Key"),
    ]:
        with pytest.raises(ProtocolError) as info:
            request.encode(version)
        assert info.value.field == field and "does not exist in version" in info.value.reason
    single = FindCoordinatorResponse(error_code=15, error_message="x", node_id=1, host="h", port=9)
    assert single.encode(0) == i16(15) + i32(1) + i16(1) + b"h" + i32(9)  # ErrorMessage is ignorable


# -- Produce -----------------------------------------------------------------------------------


def test_produce_v13_names_topics_by_id() -> None:
    data = [PartitionProduceData(index=2, records=b"RECORDS")]
    by_name = ProduceRequest(
        acks=-1, timeout_ms=100, topic_data=[TopicProduceData(name="t", partition_data=data)]
    )
    by_id = ProduceRequest(
        acks=-1, timeout_ms=100, topic_data=[TopicProduceData(topic_id=TOPIC_ID, partition_data=data)]
    )
    tail = carr(1) + i32(2) + bytes([len(b"RECORDS") + 1]) + b"RECORDS" + b"\x00" + b"\x00" + b"\x00"
    assert by_name.encode(12) == b"\x00" + i16(-1) + i32(100) + carr(1) + cstr("t") + tail
    assert by_id.encode(13) == b"\x00" + i16(-1) + i32(100) + carr(1) + TOPIC_ID.bytes + tail
    # v3: int16 strings, int32 records size; null transactional id is int16 -1.
    assert (
        by_name.encode(3)
        == i16(-1) + i16(-1) + i32(100) + i32(1) + i16(1) + b"t" + i32(1) + i32(2) + i32(7) + b"RECORDS"
    )
    # Name and TopicId are ignorable: each is dropped where it does not exist.
    decoded = ProduceRequest.decode(by_name.encode(13), 13)
    assert decoded.topic_data[0].name == "" and decoded.topic_data[0].topic_id == Uuid(bytes(16))


def test_produce_records_may_be_chunks_and_null() -> None:
    chunks = ProduceRequest(
        topic_data=[
            TopicProduceData(partition_data=[PartitionProduceData(records=[b"ab", memoryview(b"cd")])])
        ]
    )
    decoded = ProduceRequest.decode(chunks.encode(9), 9)
    assert decoded.topic_data[0].partition_data[0].records == b"abcd"
    null = ProduceRequest(topic_data=[TopicProduceData(partition_data=[PartitionProduceData(records=None)])])
    assert ProduceRequest.decode(null.encode(3), 3).topic_data[0].partition_data[0].records is None


def test_produce_response_current_leader_is_a_tagged_hint_from_v10() -> None:
    partition = PartitionProduceResponse(
        index=0, error_code=6, base_offset=-1, current_leader=LeaderIdAndEpoch(leader_id=3, leader_epoch=8)
    )
    response = ProduceResponse(responses=[TopicProduceResponse(name="t", partition_responses=[partition])])
    v10 = response.encode(10)
    leader = i32(3) + i32(8) + b"\x00"
    assert (b"\x01\x00" + bytes([len(leader)]) + leader) in v10
    assert ProduceResponse.decode(v10, 10) == response
    with pytest.raises(ProtocolError) as info:
        response.encode(9)  # CurrentLeader is not ignorable
    assert info.value.field == "Responses[0].PartitionResponses[0].CurrentLeader"


# -- Fetch -------------------------------------------------------------------------------------


def test_fetch_v18_partition_tags() -> None:
    partition = FetchPartition(partition=1, fetch_offset=10, partition_max_bytes=100)
    request = FetchRequest(
        max_wait_ms=500, min_bytes=1, topics=[FetchTopic(topic_id=TOPIC_ID, partitions=[partition])]
    )
    base_partition = i32(1) + i32(-1) + i64(10) + i32(-1) + i64(-1) + i32(100)
    head = (
        i32(500) + i32(1) + i32(0x7FFFFFFF) + b"\x00" + i32(0) + i32(-1) + carr(1) + TOPIC_ID.bytes + carr(1)
    )
    tail = carr(0) + cstr("") + b"\x00"
    assert partition.high_watermark == HIGH_WATERMARK_UNSUPPORTED
    assert request.encode(18) == head + base_partition + b"\x00" + b"\x00" + tail  # default: not written
    tagged = request.replace(
        topics=[
            FetchTopic(
                topic_id=TOPIC_ID,
                partitions=[partition.replace(high_watermark=77, replica_directory_id=TOPIC_ID)],
            )
        ],
        cluster_id="c",
        replica_state=ReplicaState(replica_id=-1, replica_epoch=4),
    )
    partition_tags = b"\x02" + b"\x00\x10" + TOPIC_ID.bytes + b"\x01\x08" + i64(77)
    top_tags = b"\x02" + b"\x00\x02" + cstr("c") + b"\x01\x0d" + i32(-1) + i64(4) + b"\x00"
    # Tagged fields follow a struct's regular fields: the partition's, then the request's at the end.
    assert (
        tagged.encode(18) == head + base_partition + partition_tags + b"\x00" + carr(0) + cstr("") + top_tags
    )
    assert FetchRequest.decode(tagged.encode(18), 18) == tagged
    # HighWatermark (ignorable) is silently not sent to a v17 broker; ReplicaState is not ignorable.
    assert b"\x01\x08" + i64(77) not in tagged.replace(replica_state=ReplicaState()).encode(17)
    with pytest.raises(ProtocolError) as info:
        tagged.encode(14)
    assert info.value.field == "ReplicaState"


def test_fetch_replica_id_is_gone_from_v15() -> None:
    assert FetchRequest(replica_id=-1).encode(15)  # the default is fine
    with pytest.raises(ProtocolError) as info:
        FetchRequest(replica_id=3).encode(15)
    assert info.value.field == "ReplicaId"
    assert FetchRequest(replica_id=3).encode(4)[:4] == i32(3)


def test_fetch_response_v4_layout_and_v16_node_endpoints() -> None:
    partition = PartitionData(
        partition_index=0, high_watermark=5, last_stable_offset=5, aborted_transactions=None, records=b"xy"
    )
    response = FetchResponse(responses=[FetchableTopicResponse(topic="t", partitions=[partition])])
    expected = (
        i32(0)
        + i32(1)
        + i16(1)
        + b"t"
        + i32(1)
        + i32(0)
        + i16(0)
        + i64(5)
        + i64(5)
        + i32(-1)
        + i32(2)
        + b"xy"
    )
    assert response.encode(4) == expected
    endpoints = FetchResponse(node_endpoints=[NodeEndpoint(node_id=1, host="h", port=9)])
    encoded = endpoints.encode(16)
    assert encoded.endswith(b"\x01\x00\x0d" + carr(1) + i32(1) + cstr("h") + i32(9) + b"\x00" + b"\x00")
    assert FetchResponse.decode(encoded, 16) == endpoints


# -- ListOffsets and admin ---------------------------------------------------------------------


def test_list_offsets_v1_has_no_isolation_level() -> None:
    assert ListOffsetsRequest().encode(1) == i32(-1) + i32(0)
    assert ListOffsetsRequest(isolation_level=1).encode(2) == i32(-1) + b"\x01" + i32(0)
    with pytest.raises(ProtocolError):
        ListOffsetsRequest(isolation_level=1).encode(1)
    assert ListOffsetsRequest(timeout_ms=5).encode(9) == ListOffsetsRequest().encode(9)  # ignorable


def test_delete_topics_by_name_then_by_id() -> None:
    assert DeleteTopicsRequest(topic_names=["a"], timeout_ms=1).encode(1) == i32(1) + i16(1) + b"a" + i32(1)
    by_id = DeleteTopicsRequest(topics=[DeleteTopicState(topic_id=TOPIC_ID)], timeout_ms=1)
    assert by_id.encode(6) == carr(1) + b"\x00" + TOPIC_ID.bytes + b"\x00" + i32(1) + b"\x00"
    with pytest.raises(ProtocolError):
        by_id.encode(5)
    with pytest.raises(ProtocolError) as info:  # names are nullable only from v6
        DeleteTopicsResponse(responses=[DeletableTopicResult(name=None)]).encode(5)
    assert info.value.field == "Responses[0].Name"


def test_create_topics_defaults_and_v7_topic_id() -> None:
    request = CreateTopicsRequest()
    assert (request.timeout_ms, request.validate_only) == (60000, False)
    assert request.encode(2) == i32(0) + i32(60000) + b"\x00"
    result = CreatableTopicResult(
        name="t", topic_id=TOPIC_ID, error_message=None, topic_config_error_code=3, configs=None
    )
    encoded = CreateTopicsResponse(topics=[result]).encode(7)
    assert TOPIC_ID.bytes in encoded and encoded.endswith(b"\x01\x00\x02" + i16(3) + b"\x00")
    assert CreateTopicsResponse.decode(encoded, 7).topics[0] == result
