"""Garbage on one connection closes only that connection; failing handlers never stop the server.

The fuzz test sends random, truncated, oversized and negative-size frames, unknown API keys,
unsupported versions, undecodable bodies and bit-flipped valid requests, each on a fresh socket,
while well-behaved clients (a `WireClient` and a confluent-kafka producer and consumer) keep
working on their own connections.
"""

from __future__ import annotations

import logging
import random
import socket
import struct
import threading
import time
from collections.abc import Callable

import confluent_kafka as ck
import pytest

from kconsumer.errors import ErrorCode
from kconsumer.protocol import records as rb
from kconsumer.protocol.api import encode_request
from kconsumer.protocol.messages.api_versions import ApiVersionsResponse
from kconsumer.protocol.messages.consumer_group import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from kconsumer.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from kconsumer.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from kconsumer.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from kconsumer.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
)
from kconsumer.protocol.schema import Message
from kconsumer.testing import ReferenceCluster
from kconsumer.testing.wire import WireClient

from .conftest import wait_for

Connect = Callable[..., WireClient]


def _valid_requests() -> list[bytes]:
    data = rb.build_batch([(b"k", b"v" * 20, (), 1)])
    messages: list[tuple[Message, int]] = [
        (MetadataRequest(topics=[MetadataRequestTopic(name="fuzz")]), 12),
        (
            ProduceRequest(
                acks=1,
                timeout_ms=100,
                topic_data=[
                    TopicProduceData(
                        name="fuzz", partition_data=[PartitionProduceData(index=0, records=data)]
                    )
                ],
            ),
            9,
        ),
        (
            FetchRequest(
                max_wait_ms=50,
                min_bytes=1,
                topics=[
                    FetchTopic(
                        topic="fuzz",
                        partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=9999)],
                    )
                ],
            ),
            11,
        ),
        (
            ConsumerGroupHeartbeatRequest(
                group_id="fuzz-group",
                member_id="fuzzer",
                member_epoch=0,
                rebalance_timeout_ms=100,
                subscribed_topic_names=["fuzz"],
                subscribed_topic_regex="",
                topic_partitions=[],
            ),
            1,
        ),
    ]
    return [encode_request(message, version, 7, "fuzzer") for message, version in messages]


def _garbage(rng: random.Random, valid: list[bytes]) -> bytes:
    kind = rng.randrange(9)
    if kind == 0:  # random bytes
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))
    if kind == 1:  # a frame of random bytes
        body: bytes = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 200)))
        return struct.pack(">i", len(body)) + body
    if kind == 2:  # truncated: announces more than it sends
        whole = rng.choice(valid)
        return whole[: rng.randrange(1, len(whole))]
    if kind == 3:  # oversized or negative size
        return struct.pack(">i", rng.choice([2**31 - 1, 200 * 1024 * 1024, -5, -1]))
    if kind == 4:  # unknown API key
        key = rng.choice([11, 12, 22, 50, 999, 32002, -7])
        header = struct.pack(">hhih", key, 0, 1, -1)
        return struct.pack(">i", len(header)) + header
    if kind == 5:  # unsupported version of an API we serve
        key, version = rng.choice([(3, 14), (0, 2), (1, 3), (68, 2), (18, 5), (18, 99), (2, 0)])
        header = struct.pack(">hhih", key, version, 1, -1) + b"\x00" * rng.randrange(0, 4)
        return struct.pack(">i", len(header)) + header
    if kind == 6:  # valid header, body cut short
        frame = bytearray(rng.choice(valid))
        cut = rng.randrange(14, len(frame))
        del frame[cut:]
        frame[0:4] = struct.pack(">i", len(frame) - 4)
        return bytes(frame)
    if kind == 7:  # trailing bytes after a valid body
        frame = bytearray(rng.choice(valid) + b"\x00\x01\x02")
        frame[0:4] = struct.pack(">i", len(frame) - 4)
        return bytes(frame)
    frame = bytearray(rng.choice(valid))  # bit flips anywhere after the size
    for _ in range(rng.randrange(1, 4)):
        position = rng.randrange(4, len(frame))
        frame[position] ^= 1 << rng.randrange(8)
    return bytes(frame)


def _send_garbage(address: tuple[str, int], payload: bytes) -> None:
    with socket.create_connection(address, timeout=5) as sock:
        sock.sendall(payload)
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(0.5)
        try:
            while sock.recv(65536):
                pass
        except (TimeoutError, OSError):
            pass


def test_fuzzed_connections_do_not_disturb_other_clients(
    cluster: ReferenceCluster, connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    cluster.create_topic("fuzz", 1)
    cluster.create_topic("steady", 2)
    host, port = cluster.bootstrap_servers.rsplit(":", 1)
    address = (host, int(port))
    valid = _valid_requests()
    stop = threading.Event()
    failures: list[BaseException] = []
    rounds = [0]

    def steady_wire_client() -> None:
        try:
            with WireClient.connect(*address) as client:
                data = rb.build_batch([(None, b"steady", (), 1)])
                while not stop.is_set():
                    request = ProduceRequest(
                        acks=1,
                        timeout_ms=1000,
                        topic_data=[
                            TopicProduceData(
                                name="steady", partition_data=[PartitionProduceData(index=0, records=data)]
                            )
                        ],
                    )
                    result = client.call(request, ProduceResponse, 9)
                    assert result.responses[0].partition_responses[0].error_code == 0
                    assert client.call(MetadataRequest(topics=None), MetadataResponse, 12).brokers
                    rounds[0] += 1
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    worker = threading.Thread(target=steady_wire_client)
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 1})
    consumer = ck.Consumer(
        {"bootstrap.servers": cluster.bootstrap_servers, "group.id": "steady", "enable.auto.commit": False}
    )
    consumer.assign([ck.TopicPartition("steady", 1, 0)])
    received: list[bytes] = []
    rng = random.Random(848)
    with caplog.at_level(logging.INFO, logger="kconsumer.broker.server"):
        worker.start()
        try:
            for i in range(300):
                _send_garbage(address, _garbage(rng, valid))
                producer.produce("steady", value=b"%d" % i, partition=1)
                producer.poll(0)
                for message in consumer.consume(100, 0):
                    assert message.error() is None, message.error()
                    received.append(message.value() or b"")
            assert producer.flush(10) == 0
            deadline = time.monotonic() + 10
            while len(received) < 300 and time.monotonic() < deadline:
                received += [m.value() or b"" for m in consumer.consume(100, 0.2) if m.error() is None]
        finally:
            stop.set()
            worker.join(10)
            consumer.close()
    assert not failures, failures
    assert rounds[0] > 0
    assert received == [b"%d" % i for i in range(300)]
    text = caplog.text
    for reason in (
        "unknown API key",
        "exceeds the",
        "negative frame size",
        "unsupported version",
        "closed inside",
    ):
        assert reason in text, reason
    assert "UNSUPPORTED_VERSION" in text  # the ApiVersions answers
    # The server still serves new connections.
    assert connect().call(MetadataRequest(topics=None), MetadataResponse, 12).topics


def test_unsupported_api_versions_is_answered_then_the_client_retries(cluster: ReferenceCluster) -> None:
    host, port = cluster.bootstrap_servers.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        header = struct.pack(">hhih", 18, 7, 41, -1) + b"\x00"  # v7 (flexible header shape)
        sock.sendall(struct.pack(">i", len(header)) + header)
        size = struct.unpack(">i", _recv(sock, 4))[0]
        payload = _recv(sock, size)
        assert struct.unpack(">i", payload[:4])[0] == 41
        response = ApiVersionsResponse.decode(payload[4:], 0)
        assert response.error_code == ErrorCode.UNSUPPORTED_VERSION
        sock.sendall(encode_request(MetadataRequest(topics=None), 1, 42, "c"))  # same connection
        size = struct.unpack(">i", _recv(sock, 4))[0]
        assert struct.unpack(">i", _recv(sock, size)[:4])[0] == 42


def _recv(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        assert chunk, "connection closed"
        data += chunk
    return data


def _list_offsets() -> ListOffsetsRequest:
    return ListOffsetsRequest(
        topics=[
            ListOffsetsTopic(name="t", partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)])
        ]
    )


def test_a_failing_handler_answers_unknown_server_error(
    cluster: ReferenceCluster,
    connect: Connect,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster.create_topic("t", 1)
    client = connect()

    def boom(*args: object, **kwargs: object) -> object:
        raise RuntimeError("handler bug")

    monkeypatch.setattr("kconsumer.broker.server.broker.handle_list_offsets", boom)
    with caplog.at_level(logging.ERROR, logger="kconsumer.broker.server"):
        response = client.call(_list_offsets(), ListOffsetsResponse, 5)
    assert response.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert "handler bug" in caplog.text and "ListOffsets v5" in caplog.text
    # A response that cannot be encoded is replaced by an UNKNOWN_SERVER_ERROR one.
    monkeypatch.setattr(
        "kconsumer.broker.server.broker.handle_list_offsets", lambda *a: ListOffsetsResponse(topics=[None])
    )
    response = client.call(_list_offsets(), ListOffsetsResponse, 5)
    assert response.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    # The group coordinator failing is answered the same way, and the server goes on.
    monkeypatch.setattr("kconsumer.broker.coordinator.GroupCoordinator.handle", boom)
    heartbeat = ConsumerGroupHeartbeatRequest(
        group_id="g",
        member_id="m",
        member_epoch=0,
        rebalance_timeout_ms=100,
        subscribed_topic_names=["t"],
        subscribed_topic_regex="",
        topic_partitions=[],
    )
    assert (
        client.call(heartbeat, ConsumerGroupHeartbeatResponse, 1).error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    )
    monkeypatch.undo()
    assert client.call(heartbeat, ConsumerGroupHeartbeatResponse, 1).error_code == 0
    assert client.call(_list_offsets(), ListOffsetsResponse, 5).topics[0].partitions[0].error_code == 0


def test_a_long_poll_ends_when_its_client_disconnects(cluster: ReferenceCluster) -> None:
    cluster.create_topic("t", 1)
    host, port = cluster.bootstrap_servers.rsplit(":", 1)
    request = FetchRequest(
        max_wait_ms=600_000,
        min_bytes=1,
        topics=[
            FetchTopic(
                topic="t", partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=99)]
            )
        ],
    )
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(encode_request(request, 11, 1, "c"))
        wait_for(
            lambda: cluster._call(
                lambda broker: any(p.waiters for p in broker.topics.by_name["t"].partitions)
            )
        )
    wait_for(
        lambda: cluster._call(
            lambda broker: not any(p.waiters for p in broker.topics.by_name["t"].partitions)
        ),
        timeout=5,
        what="the abandoned fetch to stop waiting",
    )
