"""`ReferenceCluster`'s own API: lifecycle, admin and data helpers, group views, thread safety."""

from __future__ import annotations

import socket
import threading

import pytest

from kconsumer.errors import ErrorCode, KafkaApiError
from kconsumer.protocol.messages.consumer_group import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from kconsumer.protocol.messages.offsets import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from kconsumer.testing import ReferenceCluster
from kconsumer.testing.wire import WireClient


def test_lifecycle_and_a_given_port() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    cluster = ReferenceCluster(port=port)
    with pytest.raises(RuntimeError):
        cluster.topics()  # not started
    with cluster:
        assert cluster.bootstrap_servers == f"127.0.0.1:{port}" and cluster.port == port
        with pytest.raises(OSError):
            ReferenceCluster(port=port).start()  # the port is taken
    cluster.stop()  # idempotent


def test_topics_and_produce(cluster: ReferenceCluster) -> None:
    topic_id = cluster.create_topic("t", 3)
    assert cluster.topic_id("t") == topic_id and topic_id
    with pytest.raises(KafkaApiError) as failure:
        cluster.create_topic("t", 1)
    assert failure.value.code == ErrorCode.TOPIC_ALREADY_EXISTS
    with pytest.raises(KafkaApiError) as failure:
        cluster.create_topic("u", 0)
    assert failure.value.code == ErrorCode.INVALID_PARTITIONS
    assert cluster.produce("t", [b"a", "b", None, b"d"]) == [0, 0, 0, 1]  # round robin: 0, 1, 2, 0
    assert cluster.produce("t", [b"x", b"y"], key="k", partition=2) == [1, 2]
    assert cluster.watermarks("t") == [(0, 2), (0, 1), (0, 3)]
    with pytest.raises(KafkaApiError):
        cluster.produce("nope", [b"a"])
    with pytest.raises(KafkaApiError):
        cluster.produce("t", [b"a"], partition=7)
    cluster.create_partitions("t", 4)
    assert cluster.topics() == {"t": 4}
    cluster.delete_topic("t")
    assert cluster.topics() == {}


def test_produced_records_have_keys_values_and_timestamps(cluster: ReferenceCluster) -> None:
    cluster.create_topic("t", 1)
    cluster.produce("t", [b"v1", "v2"], key=b"key")
    decoded = cluster.records("t", 0)
    assert [(r.offset, r.key, r.value) for r in decoded] == [(0, b"key", b"v1"), (1, b"key", b"v2")]
    assert all(r.timestamp > 1_600_000_000_000 for r in decoded)


def test_describe_group_and_committed(cluster: ReferenceCluster) -> None:
    cluster.create_topic("t", 4)
    assert cluster.describe_group("g") is None
    host, port = cluster.bootstrap_servers.rsplit(":", 1)
    with WireClient.connect(host, int(port), client_id="describe-me") as client:
        joined = client.call(
            ConsumerGroupHeartbeatRequest(
                group_id="g",
                member_id="m1",
                member_epoch=0,
                instance_id="i1",
                rebalance_timeout_ms=1000,
                subscribed_topic_names=["t"],
                subscribed_topic_regex="",
                topic_partitions=[],
            ),
            ConsumerGroupHeartbeatResponse,
            1,
        )
        commit = OffsetCommitRequest(
            group_id="g",
            generation_id_or_member_epoch=joined.member_epoch,
            member_id="m1",
            topics=[
                OffsetCommitRequestTopic(
                    name="t",
                    partitions=[
                        OffsetCommitRequestPartition(partition_index=1, committed_offset=5),
                        OffsetCommitRequestPartition(partition_index=3, committed_offset=9),
                    ],
                )
            ],
        )
        assert {p.error_code for p in client.call(commit, OffsetCommitResponse, 9).topics[0].partitions} == {
            0
        }
    group = cluster.describe_group("g")
    assert group is not None
    assert (group.group_id, group.state, group.epoch, group.assignment_epoch) == ("g", "Stable", 2, 2)
    member = group.members["m1"]
    assert (member.instance_id, member.member_epoch, member.state) == ("i1", 2, "stable")
    assert member.assignment == member.target == {"t": (0, 1, 2, 3)}
    assert member.pending_revocation == {}
    assert (member.client_id, member.client_host, member.subscribed_topics) == (
        "describe-me",
        "/127.0.0.1",
        ("t",),
    )
    assert group.owners == {("t", p): ["m1"] for p in range(4)}
    assert cluster.committed("g") == {("t", 1): 5, ("t", 3): 9}
    assert cluster.list_groups() == ["g"]


def test_calls_from_many_threads_at_once(cluster: ReferenceCluster) -> None:
    cluster.create_topic("t", 2)
    errors: list[BaseException] = []

    def work(index: int) -> None:
        try:
            for i in range(50):
                cluster.produce("t", [b"%d-%d" % (index, i)], partition=index % 2)
                cluster.watermarks("t")
                cluster.describe_group("none")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors, errors
    assert sum(end for _start, end in cluster.watermarks("t")) == 400


def test_options_reach_the_coordinator() -> None:
    with ReferenceCluster(
        heartbeat_interval_ms=123,
        session_timeout_ms=4567,
        assignment_interval_ms=0,
        assignors=["range"],
        max_group_size=3,
        auto_create_topics=True,
    ) as cluster:
        config = cluster.config
        coordinator = config.coordinator
        assert (coordinator.heartbeat_interval_ms, coordinator.session_timeout_ms) == (123, 4567)
        assert (coordinator.assignment_interval_ms, coordinator.assignors, coordinator.max_group_size) == (
            0,
            ("range",),
            3,
        )
        assert config.auto_create_topics
