"""Idempotent producers on the reference cluster: InitProducerId, and Produce's sequence checks
(duplicates answered with their first offset, gaps and old epochs refused), as Kafka does; and
two producers nobody here wrote (librdkafka's and the Java client's, with their defaults)."""

from __future__ import annotations

import confluent_kafka as ck
import pytest

from kconsumer.errors import ErrorCode
from kconsumer.protocol import records
from kconsumer.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
)
from kconsumer.protocol.messages.producer_ids import InitProducerIdRequest, InitProducerIdResponse
from kconsumer.testing import ReferenceCluster
from kconsumer.testing.wire import WireClient


def _batch(producer_id: int, epoch: int, sequence: int, count: int = 2) -> bytes:
    return records.build_batch(
        ((None, b"v%d" % i, (), 1) for i in range(count)),
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
    )


@pytest.fixture
def wire() -> object:
    with ReferenceCluster() as cluster:
        cluster.create_topic("t", 1)
        host, port = cluster.bootstrap_servers.rsplit(":", 1)
        with WireClient.connect(host, int(port)) as client:
            yield cluster, client


def _produce(client: WireClient, batch: bytes) -> tuple[int, int]:
    request = ProduceRequest(
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            TopicProduceData(name="t", partition_data=[PartitionProduceData(index=0, records=batch)])
        ],
    )
    answer = client.call(request, ProduceResponse, 9).responses[0].partition_responses[0]
    return answer.error_code, answer.base_offset


def test_init_producer_id_gives_new_ids_and_bumps_epochs(wire: tuple[ReferenceCluster, WireClient]) -> None:
    _cluster, client = wire
    first = client.call(InitProducerIdRequest(), InitProducerIdResponse)
    second = client.call(InitProducerIdRequest(), InitProducerIdResponse)
    assert (first.error_code, first.producer_epoch) == (0, 0) and second.producer_id != first.producer_id
    bumped = client.call(
        InitProducerIdRequest(producer_id=first.producer_id, producer_epoch=0), InitProducerIdResponse
    )
    assert (bumped.error_code, bumped.producer_id, bumped.producer_epoch) == (0, first.producer_id, 1)
    stale = client.call(
        InitProducerIdRequest(producer_id=first.producer_id, producer_epoch=0), InitProducerIdResponse
    )
    assert stale.error_code == ErrorCode.INVALID_PRODUCER_EPOCH


def test_sequences_are_checked_and_duplicates_not_appended_twice(
    wire: tuple[ReferenceCluster, WireClient],
) -> None:
    cluster, client = wire
    pid = client.call(InitProducerIdRequest(), InitProducerIdResponse).producer_id
    assert _produce(client, _batch(pid, 0, 0)) == (0, 0)
    assert _produce(client, _batch(pid, 0, 2)) == (0, 2)
    assert _produce(client, _batch(pid, 0, 0)) == (0, 0)  # a retry: its first offset, not appended
    assert _produce(client, _batch(pid, 0, 2)) == (0, 2)
    assert _produce(client, _batch(pid, 0, 7))[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # a gap
    assert _produce(client, _batch(pid, 1, 3))[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # new epoch: 0
    assert _produce(client, _batch(pid, 1, 0)) == (0, 4)
    assert _produce(client, _batch(pid, 0, 4))[0] == ErrorCode.INVALID_PRODUCER_EPOCH
    assert _produce(client, _batch(999, 0, 5))[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # unknown: 0
    assert cluster.watermarks("t") == [(0, 6)]


def test_librdkafkas_idempotent_producer_writes_each_record_once() -> None:
    with ReferenceCluster() as cluster:
        cluster.create_topic("idempotent", 3)
        producer = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True})
        errors: list[object] = []
        for i in range(300):
            producer.produce(
                "idempotent", b"%d" % i, on_delivery=lambda e, m: errors.append(e) if e else None
            )
        assert producer.flush(30) == 0 and errors == []
        assert sum(high for _low, high in cluster.watermarks("idempotent")) == 300
