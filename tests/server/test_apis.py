"""Each API the reference cluster serves, over the wire, checked against Kafka's behaviour."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from kconsumer.errors import ErrorCode, KafkaApiError
from kconsumer.protocol import records as rb
from kconsumer.protocol.api import API_SPECS, ApiKey
from kconsumer.protocol.messages.admin import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicState,
)
from kconsumer.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kconsumer.protocol.messages.fetch import (
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
)
from kconsumer.protocol.messages.list_offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from kconsumer.protocol.messages.metadata import (
    COORDINATOR_KEY_TYPE_SHARE,
    COORDINATOR_KEY_TYPE_TRANSACTION,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from kconsumer.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
)
from kconsumer.protocol.uuid import ZERO_UUID, Uuid
from kconsumer.testing import ReferenceCluster
from kconsumer.testing.wire import WireClient

Connect = Callable[..., WireClient]


def batch(*values: bytes, timestamp: int = 1_000) -> bytes:
    return rb.build_batch((None, v, (), timestamp) for v in values)


def produce(
    client: WireClient, topic: str, partition: int, data: bytes | None, version: int = 9, acks: int = -1
) -> ProduceResponse:
    request = ProduceRequest(
        acks=acks,
        timeout_ms=5000,
        topic_data=[
            TopicProduceData(name=topic, partition_data=[PartitionProduceData(index=partition, records=data)])
        ],
    )
    return client.call(request, ProduceResponse, version)


def fetch(
    client: WireClient,
    topic: str,
    offsets: dict[int, int],
    version: int = 11,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    max_bytes: int = 1 << 20,
    partition_max_bytes: int = 1 << 20,
    topic_id: Uuid = ZERO_UUID,
) -> FetchResponse:
    request = FetchRequest(
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        topics=[
            FetchTopic(
                topic=topic,
                topic_id=topic_id,
                partitions=[
                    FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=partition_max_bytes)
                    for p, o in offsets.items()
                ],
            )
        ],
    )
    return client.call(request, FetchResponse, version)


def values_of(response: FetchResponse) -> list[tuple[int, bytes | None]]:
    out = []
    for topic in response.responses:
        for partition in topic.partitions:
            out += [(r.offset, r.value) for r in rb.decode_records(partition.records)]
    return out


# -- ApiVersions -----------------------------------------------------------------------------------


def test_api_versions_lists_exactly_what_we_implement(connect: Connect) -> None:
    client = connect()
    expected = {key: (spec.versions.lo, spec.versions.hi) for key, spec in API_SPECS.items()}
    assert client.broker_versions == expected
    assert ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT in client.broker_versions
    assert ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT in client.broker_versions
    for version in range(5):
        response = client.call(ApiVersionsRequest(), ApiVersionsResponse, version)
        assert response.error_code == 0 and len(response.api_keys) == len(API_SPECS)


def test_unsupported_api_versions_version_gets_v0_answer_and_connection_stays(connect: Connect) -> None:
    client = connect(negotiate=False)
    # ApiVersions v9 does not exist: the broker answers UNSUPPORTED_VERSION with its own range, v0 body.
    raw = _raw_request(client, api_key=18, version=9, body=b"\x00")
    assert raw[:4] == (99).to_bytes(4, "big")  # correlation id, response header v0
    body = ApiVersionsResponse.decode(raw[4:], 0)
    assert body.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [(18, 0, 4)]
    assert client.call(MetadataRequest(topics=[]), MetadataResponse, 12).brokers  # still open


def _raw_request(client: WireClient, api_key: int, version: int, body: bytes) -> bytes:
    """Send a hand-made v1 header + body with correlation id 99 and return the response payload."""
    header = api_key.to_bytes(2, "big") + version.to_bytes(2, "big") + (99).to_bytes(4, "big") + b"\xff\xff"
    frame = len(header + body).to_bytes(4, "big") + header + body
    sock = client._socket()
    sock.sendall(frame)
    deadline = time.monotonic() + 5
    return client._read_exactly(
        int.from_bytes(client._read_exactly(4, deadline, "raw"), "big"), deadline, "raw"
    )


# -- Metadata and FindCoordinator ------------------------------------------------------------------


def test_metadata_all_topics_by_name_and_by_id(cluster: ReferenceCluster, connect: Connect) -> None:
    orders = cluster.create_topic("orders", 3)
    cluster.create_topic("payments", 1)
    client = connect()
    host, port = cluster.bootstrap_servers.rsplit(":", 1)
    everything = client.call(MetadataRequest(topics=None), MetadataResponse, 13)
    assert [(b.node_id, b.host, b.port) for b in everything.brokers] == [(1, host, int(port))]
    assert everything.controller_id == 1 and everything.cluster_id
    by_name = {t.name: t for t in everything.topics}
    assert set(by_name) == {"orders", "payments"}
    assert by_name["orders"].topic_id == orders
    partitions = by_name["orders"].partitions
    assert [
        (p.partition_index, p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes) for p in partitions
    ] == [(i, 1, 0, [1], [1]) for i in range(3)]
    # v0: an empty list means every topic; v1+: no topic.
    assert len(client.call(MetadataRequest(topics=[]), MetadataResponse, 0).topics) == 2
    assert client.call(MetadataRequest(topics=[]), MetadataResponse, 1).topics == []
    by_id = client.call(
        MetadataRequest(topics=[MetadataRequestTopic(topic_id=orders, name=None)]), MetadataResponse, 12
    )
    assert [(t.error_code, t.name) for t in by_id.topics] == [(0, "orders")]
    unknown_id = client.call(
        MetadataRequest(topics=[MetadataRequestTopic(topic_id=Uuid.from_int(7), name=None)]),
        MetadataResponse,
        12,
    )
    assert unknown_id.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
    # As Kafka: a non-zero id makes the request a lookup by id whatever the name says; the Java
    # client sends an empty name with each id (its regex subscriptions depend on it).
    empty_name = client.call(
        MetadataRequest(topics=[MetadataRequestTopic(topic_id=orders, name="")]), MetadataResponse, 12
    )
    assert [(t.error_code, t.name, t.topic_id) for t in empty_name.topics] == [(0, "orders", orders)]
    mixed = client.call(
        MetadataRequest(
            topics=[
                MetadataRequestTopic(topic_id=orders, name="payments"),
                MetadataRequestTopic(name="payments"),
                MetadataRequestTopic(topic_id=Uuid.from_int(7), name=""),
            ]
        ),
        MetadataResponse,
        12,
    )
    assert [(t.error_code, t.name) for t in mixed.topics] == [
        (0, "orders"),
        (ErrorCode.UNKNOWN_TOPIC_ID, None),
    ]


def test_metadata_unknown_topic_and_auto_creation(cluster: ReferenceCluster, connect: Connect) -> None:
    client = connect()
    wanted = [MetadataRequestTopic(name="nope"), MetadataRequestTopic(name="bad name")]
    response = client.call(MetadataRequest(topics=wanted), MetadataResponse, 12)
    assert [(t.name, t.error_code) for t in response.topics] == [
        ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ("bad name", ErrorCode.INVALID_TOPIC_EXCEPTION),
    ]
    assert cluster.topics() == {}
    with ReferenceCluster(auto_create_topics=True, default_partitions=3) as auto:
        host, port = auto.bootstrap_servers.rsplit(":", 1)
        with WireClient.connect(host, int(port)) as other:
            request = MetadataRequest(
                topics=[MetadataRequestTopic(name="fresh")], allow_auto_topic_creation=False
            )
            assert other.call(request, MetadataResponse, 12).topics[0].error_code == 3
            request.allow_auto_topic_creation = True
            created = other.call(request, MetadataResponse, 12).topics[0]
            assert created.error_code == 0 and len(created.partitions) == 3 and created.topic_id
        assert auto.topics() == {"fresh": 3}


@pytest.mark.parametrize("version", range(0, 7))
def test_find_coordinator_names_this_broker(
    cluster: ReferenceCluster, connect: Connect, version: int
) -> None:
    client = connect()
    host, port = cluster.bootstrap_servers.rsplit(":", 1)
    if version >= 4:
        request = FindCoordinatorRequest(coordinator_keys=["g", "h"])
    else:
        request = FindCoordinatorRequest(key="g")
    response = client.call(request, FindCoordinatorResponse, version)
    if version >= 4:
        assert [(c.key, c.node_id, c.host, c.port, c.error_code) for c in response.coordinators] == [
            ("g", 1, host, int(port), 0),
            ("h", 1, host, int(port), 0),
        ]
    else:
        assert (response.error_code, response.node_id, response.host, response.port) == (
            0,
            1,
            host,
            int(port),
        )
    if version >= 1:
        request.key_type = COORDINATOR_KEY_TYPE_TRANSACTION  # transactional ids are placed alike
        response = client.call(request, FindCoordinatorResponse, version)
        code = response.coordinators[0].error_code if version >= 4 else response.error_code
        assert code == ErrorCode.NONE
        request.key_type = COORDINATOR_KEY_TYPE_SHARE
        response = client.call(request, FindCoordinatorResponse, version)
        code = response.coordinators[0].error_code if version >= 4 else response.error_code
        assert code == ErrorCode.COORDINATOR_NOT_AVAILABLE


# -- admin -------------------------------------------------------------------------------------------


def test_create_topics_validation(cluster: ReferenceCluster, connect: Connect) -> None:
    cluster.create_topic("exists", 1)
    client = connect()
    topics = [
        CreatableTopic(name="ok", num_partitions=2, replication_factor=1),
        CreatableTopic(name="default", num_partitions=-1, replication_factor=-1),
        CreatableTopic(name="exists", num_partitions=1, replication_factor=1),
        CreatableTopic(name="zero", num_partitions=0, replication_factor=1),
        CreatableTopic(name="replicated", num_partitions=1, replication_factor=3),
        CreatableTopic(name="bad/name", num_partitions=1, replication_factor=1),
        CreatableTopic(
            name="manual",
            num_partitions=-1,
            replication_factor=-1,
            assignments=[CreatableReplicaAssignment(partition_index=i, broker_ids=[1]) for i in range(2)],
        ),
        CreatableTopic(
            name="elsewhere",
            num_partitions=-1,
            replication_factor=-1,
            assignments=[CreatableReplicaAssignment(partition_index=0, broker_ids=[2])],
        ),
    ]
    response = client.call(CreateTopicsRequest(topics=topics), CreateTopicsResponse, 7)
    codes = {t.name: t.error_code for t in response.topics}
    assert codes == {
        "ok": 0,
        "default": 0,
        "exists": ErrorCode.TOPIC_ALREADY_EXISTS,
        "zero": ErrorCode.INVALID_PARTITIONS,
        "replicated": ErrorCode.INVALID_REPLICATION_FACTOR,
        "bad/name": ErrorCode.INVALID_TOPIC_EXCEPTION,
        "manual": 0,
        "elsewhere": ErrorCode.INVALID_REPLICA_ASSIGNMENT,
    }
    ok = next(t for t in response.topics if t.name == "ok")
    assert ok.topic_id == cluster.topic_id("ok") and ok.num_partitions == 2 and ok.replication_factor == 1
    assert cluster.topics() == {"exists": 1, "ok": 2, "default": 1, "manual": 2}
    dry = CreateTopicsRequest(topics=[CreatableTopic(name="dry", num_partitions=1, replication_factor=1)])
    dry.validate_only = True
    assert client.call(dry, CreateTopicsResponse, 7).topics[0].error_code == 0
    assert "dry" not in cluster.topics()
    twice = [CreatableTopic(name="twice", num_partitions=1, replication_factor=1)] * 2
    response = client.call(CreateTopicsRequest(topics=twice), CreateTopicsResponse, 5)
    assert {t.error_code for t in response.topics} == {ErrorCode.INVALID_REQUEST}


def test_delete_topics_by_name_and_by_id(cluster: ReferenceCluster, connect: Connect) -> None:
    a = cluster.create_topic("a", 1)
    cluster.create_topic("b", 1)
    client = connect()
    by_name = client.call(DeleteTopicsRequest(topic_names=["b", "zz"]), DeleteTopicsResponse, 5)
    assert [(r.name, r.error_code) for r in by_name.responses] == [
        ("b", 0),
        ("zz", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    by_id = client.call(
        DeleteTopicsRequest(
            topics=[
                DeleteTopicState(name=None, topic_id=a),
                DeleteTopicState(name=None, topic_id=Uuid.from_int(5)),
            ]
        ),
        DeleteTopicsResponse,
        6,
    )
    assert [(r.name, r.topic_id, r.error_code) for r in by_id.responses] == [
        ("a", a, 0),
        (None, Uuid.from_int(5), ErrorCode.UNKNOWN_TOPIC_ID),
    ]
    assert cluster.topics() == {}
    with pytest.raises(KafkaApiError) as failure:
        cluster.delete_topic("a")
    assert failure.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_create_partitions_only_grows(cluster: ReferenceCluster, connect: Connect) -> None:
    cluster.create_topic("t", 2)
    client = connect()

    def grow(name: str, count: int) -> int:
        request = CreatePartitionsRequest(
            topics=[CreatePartitionsTopic(name=name, count=count, assignments=None)], timeout_ms=1000
        )
        return client.call(request, CreatePartitionsResponse, 3).results[0].error_code

    assert grow("t", 2) == ErrorCode.INVALID_PARTITIONS
    assert grow("t", 1) == ErrorCode.INVALID_PARTITIONS
    assert grow("u", 4) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert grow("t", 5) == 0
    assert cluster.topics() == {"t": 5}
    cluster.create_partitions("t", 6)
    with pytest.raises(KafkaApiError):
        cluster.create_partitions("t", 6)


# -- Produce ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [3, 8, 9, 12])
def test_produce_assigns_offsets(cluster: ReferenceCluster, connect: Connect, version: int) -> None:
    cluster.create_topic("t", 2)
    client = connect()
    first = produce(client, "t", 1, batch(b"a", b"b"), version)
    second = produce(client, "t", 1, batch(b"c"), version)
    results = [r.responses[0].partition_responses[0] for r in (first, second)]
    assert [(r.error_code, r.base_offset) for r in results] == [(0, 0), (0, 2)]
    assert cluster.watermarks("t") == [(0, 0), (0, 3)]


def test_produce_by_topic_id_v13(cluster: ReferenceCluster, connect: Connect) -> None:
    topic_id = cluster.create_topic("t", 1)
    client = connect()
    request = ProduceRequest(
        acks=1,
        timeout_ms=1000,
        topic_data=[
            TopicProduceData(
                topic_id=topic_id, partition_data=[PartitionProduceData(index=0, records=batch(b"x"))]
            ),
            TopicProduceData(
                topic_id=Uuid.from_int(9), partition_data=[PartitionProduceData(index=0, records=batch(b"y"))]
            ),
        ],
    )
    response = client.call(request, ProduceResponse, 13)
    assert [(t.topic_id, t.partition_responses[0].error_code) for t in response.responses] == [
        (topic_id, 0),
        (Uuid.from_int(9), ErrorCode.UNKNOWN_TOPIC_ID),
    ]


def test_produce_errors(cluster: ReferenceCluster, connect: Connect) -> None:
    cluster.create_topic("t", 1)
    client = connect()

    def code(topic: str, partition: int, data: bytes | None, acks: int = -1) -> int:
        return (
            produce(client, topic, partition, data, acks=acks).responses[0].partition_responses[0].error_code
        )

    assert code("nope", 0, batch(b"a")) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert code("t", 3, batch(b"a")) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert code("t", 0, b"garbage!" * 3) == ErrorCode.CORRUPT_MESSAGE
    assert code("t", 0, None) == ErrorCode.INVALID_RECORD
    assert code("t", 0, batch(b"a") + batch(b"b")) == ErrorCode.INVALID_RECORD
    assert code("t", 0, batch(b"a"), acks=2) == ErrorCode.INVALID_REQUIRED_ACKS
    assert code("t", 0, batch(b"v" * 1_100_000)) == ErrorCode.MESSAGE_TOO_LARGE
    assert cluster.watermarks("t") == [(0, 0)]


def test_acks_zero_appends_without_answering(cluster: ReferenceCluster, connect: Connect) -> None:
    cluster.create_topic("t", 1)
    client = connect()
    request = ProduceRequest(
        acks=0,
        timeout_ms=1000,
        topic_data=[
            TopicProduceData(name="t", partition_data=[PartitionProduceData(index=0, records=batch(b"a"))])
        ],
    )
    client.send(request, 9)
    # The next response on this connection is the Metadata answer: nothing was sent for acks=0.
    assert client.call(MetadataRequest(topics=None), MetadataResponse, 12).topics
    assert cluster.watermarks("t") == [(0, 1)]


# -- Fetch ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [4, 11, 12, 13, 16, 18])
def test_fetch_reads_what_was_produced(cluster: ReferenceCluster, connect: Connect, version: int) -> None:
    topic_id = cluster.create_topic("t", 2)
    cluster.produce("t", [b"a", b"b", b"c"], partition=0)
    cluster.produce("t", [b"x"], partition=1)
    client = connect()
    response = fetch(client, "t", {0: 1, 1: 0}, version, topic_id=topic_id)
    partitions = response.responses[0].partitions
    assert [(p.partition_index, p.error_code, p.high_watermark) for p in partitions] == [(0, 0, 3), (1, 0, 1)]
    # A fetch from inside a batch returns the whole batch: the client skips what it did not ask for.
    assert values_of(response) == [(0, b"a"), (1, b"b"), (2, b"c"), (0, b"x")]
    assert response.session_id == 0
    if version >= 13:
        assert response.responses[0].topic_id == topic_id


def test_fetch_errors(cluster: ReferenceCluster, connect: Connect) -> None:
    cluster.create_topic("t", 1)
    cluster.produce("t", [b"a", b"b"])
    client = connect()
    response = fetch(client, "t", {0: 3, 5: 0})
    assert [(p.partition_index, p.error_code) for p in response.responses[0].partitions] == [
        (0, ErrorCode.OFFSET_OUT_OF_RANGE),
        (5, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    assert fetch(client, "nope", {0: 0}).responses[0].partitions[0].error_code == 3
    by_id = fetch(client, "", {0: 0}, version=13, topic_id=Uuid.from_int(3))
    assert by_id.responses[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
    at_end = fetch(client, "t", {0: 2}).responses[0].partitions[0]
    assert (at_end.error_code, at_end.high_watermark, rb.read_batches(at_end.records)) == (0, 2, [])
    # A fetch naming a session we never created: FETCH_SESSION_ID_NOT_FOUND.
    request = FetchRequest(max_wait_ms=0, min_bytes=1, session_id=77, session_epoch=1, topics=[])
    assert client.call(request, FetchResponse, 12).error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_fetch_limits_and_at_least_one_batch(cluster: ReferenceCluster, connect: Connect) -> None:
    cluster.create_topic("t", 2)
    for i in range(4):
        cluster.produce("t", [b"v" * 1000] * 10, partition=0)  # four batches of ~10 kB
        cluster.produce("t", [b"w%d" % i], partition=1)
    client = connect()
    one = len(rb.build_batch([(None, b"v" * 1000, (), 0)] * 10))
    # PartitionMaxBytes below one batch: the first partition with data still gets one whole batch.
    response = fetch(client, "t", {0: 0, 1: 0}, partition_max_bytes=50)
    sizes = [len(p.records) for p in response.responses[0].partitions]
    assert sizes[0] >= one and sizes[1] == 0
    # PartitionMaxBytes caps each partition in whole batches.
    response = fetch(client, "t", {0: 0}, partition_max_bytes=2 * one + 10)
    assert values_of(response)[-1][0] == 19
    # MaxBytes caps the response.
    response = fetch(client, "t", {0: 0, 1: 0}, max_bytes=3 * one + 10, partition_max_bytes=1 << 20)
    partitions = response.responses[0].partitions
    assert len(rb.read_batches(partitions[0].records)) == 3 and partitions[1].records in (b"", [])


def test_fetch_long_poll_is_woken_by_an_append(cluster: ReferenceCluster, connect: Connect) -> None:
    cluster.create_topic("t", 1)
    client = connect()
    timer = threading.Timer(0.2, lambda: cluster.produce("t", [b"late"]))
    timer.start()
    started = time.monotonic()
    response = fetch(client, "t", {0: 0}, max_wait_ms=10_000)
    elapsed = time.monotonic() - started
    timer.join()
    assert values_of(response) == [(0, b"late")]
    assert elapsed < 5  # woken by the append, long before MaxWaitMs


def test_fetch_waits_max_wait_ms_then_answers_empty(cluster: ReferenceCluster, connect: Connect) -> None:
    cluster.create_topic("t", 1)
    client = connect()
    started = time.monotonic()
    response = fetch(client, "t", {0: 0}, max_wait_ms=300)
    assert time.monotonic() - started >= 0.29
    assert response.responses[0].partitions[0].error_code == 0 and values_of(response) == []


def test_fetch_min_bytes_waits_for_enough_data(cluster: ReferenceCluster, connect: Connect) -> None:
    cluster.create_topic("t", 1)
    cluster.produce("t", [b"small"])
    client = connect()
    stop = threading.Event()

    def trickle() -> None:
        while not stop.wait(0.05):
            cluster.produce("t", [b"x" * 200])

    thread = threading.Thread(target=trickle)
    thread.start()
    try:
        response = fetch(client, "t", {0: 0}, max_wait_ms=10_000, min_bytes=1000)
    finally:
        stop.set()
        thread.join()
    assert len(response.responses[0].partitions[0].records) >= 1000


def test_fetch_after_retention_moves_the_log_start(connect: Connect) -> None:
    with ReferenceCluster(retention_bytes=2_000) as small:
        small.create_topic("t", 1)
        for _ in range(20):
            small.produce("t", [b"v" * 500])
        start, end = small.watermarks("t")[0]
        assert end == 20 and 0 < start < 20
        host, port = small.bootstrap_servers.rsplit(":", 1)
        with WireClient.connect(host, int(port)) as client:
            assert (
                fetch(client, "t", {0: 0}).responses[0].partitions[0].error_code
                == ErrorCode.OFFSET_OUT_OF_RANGE
            )
            partition = fetch(client, "t", {0: start}).responses[0].partitions[0]
            assert partition.log_start_offset == start and values_of_partition(partition)[0] == start


def values_of_partition(partition: object) -> list[int]:
    return [r.offset for r in rb.decode_records(partition.records)]  # type: ignore[attr-defined]


# -- ListOffsets ----------------------------------------------------------------------------------------


def test_list_offsets(cluster: ReferenceCluster, connect: Connect) -> None:
    cluster.create_topic("t", 1)
    client = connect()
    for ts in (100, 300, 200):
        produce(client, "t", 0, batch(b"a", timestamp=ts))

    def lookup(timestamp: int, version: int = 7) -> tuple[int, int, int]:
        request = ListOffsetsRequest(
            topics=[
                ListOffsetsTopic(
                    name="t", partitions=[ListOffsetsPartition(partition_index=0, timestamp=timestamp)]
                )
            ]
        )
        p = client.call(request, ListOffsetsResponse, version).topics[0].partitions[0]
        return p.error_code, p.offset, p.timestamp

    assert lookup(EARLIEST_TIMESTAMP) == (0, 0, -1)
    assert lookup(LATEST_TIMESTAMP, 1) == (0, 3, -1)
    assert lookup(MAX_TIMESTAMP) == (0, 1, 300)
    assert lookup(150) == (0, 1, 300)
    assert lookup(300) == (0, 1, 300)
    assert lookup(301) == (0, -1, -1)
    unknown = ListOffsetsRequest(
        topics=[
            ListOffsetsTopic(name="u", partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)])
        ]
    )
    assert client.call(unknown, ListOffsetsResponse, 5).topics[0].partitions[0].error_code == 3


def test_trailing_request_bytes_are_ignored_like_kafka(cluster: ReferenceCluster, connect: Connect) -> None:
    """librdkafka's Metadata v9+ request for all topics leaves a 4-byte array count placeholder in
    place of the 1-byte compact count: Kafka reads the padding as the next fields and ignores the
    3 bytes left over. So do we."""
    cluster.create_topic("t", 1)
    client = connect()
    body = b"\x00\x00\x00\x00" + b"\x01\x00" + b"\x00"  # null topics (+3 zero bytes), flags, tags
    header = (
        (3).to_bytes(2, "big") + (12).to_bytes(2, "big") + (99).to_bytes(4, "big") + b"\xff\xff" + b"\x00"
    )
    sock = client._socket()
    sock.sendall(len(header + body).to_bytes(4, "big") + header + body)
    deadline = time.monotonic() + 5
    size = int.from_bytes(client._read_exactly(4, deadline, "raw"), "big")
    payload = client._read_exactly(size, deadline, "raw")
    response = MetadataResponse.decode(payload[5:], 12)  # correlation id + empty header tags
    assert [t.name for t in response.topics] == ["t"]
