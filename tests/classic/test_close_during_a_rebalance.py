"""A cooperative classic member closed while its JoinGroup waits for the rest of the group: the
commit its on_revoke makes then, with kconsumer and with confluent-kafka, on the same cluster.

The group: the member (it leads and owns both partitions of ``t``) and a scripted member B that
subscribes to another topic and, once synced, stays silent. A scripted member C joins: the group
prepares a rebalance, the member rejoins at once (cooperative: it keeps what it owns) and its
JoinGroup waits for B. The member is closed then: its on_revoke commits synchronously. B rejoins
two seconds later and the join phase ends with a new generation. The commit carried the old
generation and reached the coordinator behind the JoinGroup (one request at a time per
connection, as Kafka serves them), so it is refused with ILLEGAL_GENERATION: with kconsumer as
with confluent-kafka (librdkafka), whose close revokes the same way. Kafka's Java consumer calls
onPartitionsLost instead in this case. Nothing is lost: the next owner reads from the last
commit that succeeded."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import confluent_kafka as ck
import pytest
from backends import Cluster, open_cluster
from consumer_harness import wait_until

from kconsumer import Consumer, KafkaException, TopicPartition
from kconsumer.protocol.consumer_protocol import ConsumerSubscription, encode_consumer_protocol
from kconsumer.protocol.messages.classic_group import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kconsumer.testing.wire import WireClient

pytestmark = pytest.mark.timeout(120)

STRATEGY = "cooperative-sticky"
CLIENTS: dict[str, Callable[[dict[str, Any]], Any]] = {"kconsumer": Consumer, "confluent-kafka": ck.Consumer}


class ScriptedMember:
    """A classic member spoken for on the wire: joins (in a thread: a JoinGroup waits for the
    group), syncs as a follower, then says nothing until told to rejoin or leave."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        self.wire = WireClient.connect(host, int(port), client_id="scripted", timeout=60)
        self.group, self.member_id, self.generation = group, "", -1
        self.metadata = encode_consumer_protocol(ConsumerSubscription(topics=[topic]), 3)
        self._thread: threading.Thread | None = None

    def join_in_background(self, then_sync: bool) -> None:
        self._thread = threading.Thread(target=self._join, args=(then_sync,), daemon=True)
        self._thread.start()

    def joined(self, timeout: float = 60) -> None:
        assert self._thread is not None
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the scripted member's join did not end"

    def _join(self, then_sync: bool) -> None:
        for _ in range(2):  # the first JoinGroup without an id is answered MEMBER_ID_REQUIRED
            answer = self.wire.call(self._join_request(), JoinGroupResponse)
            self.member_id = answer.member_id or self.member_id
            if answer.error_code == 0:
                break
        assert answer.error_code == 0, answer
        self.generation = answer.generation_id
        if then_sync:
            synced = self.wire.call(self._sync_request(), SyncGroupResponse)
            assert synced.error_code == 0, synced

    def _join_request(self) -> JoinGroupRequest:
        return JoinGroupRequest(
            group_id=self.group,
            session_timeout_ms=30_000,
            rebalance_timeout_ms=30_000,
            member_id=self.member_id,
            protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name=STRATEGY, metadata=self.metadata)],
        )

    def _sync_request(self) -> SyncGroupRequest:
        return SyncGroupRequest(
            group_id=self.group,
            generation_id=self.generation,
            member_id=self.member_id,
            protocol_type="consumer",
            protocol_name=STRATEGY,
            assignments=[],
        )

    def leave(self) -> None:
        request = LeaveGroupRequest(group_id=self.group, members=[MemberIdentity(member_id=self.member_id)])
        self.wire.request(request)
        self.wire.close()


class ClosingMember:
    """The member under test, polling in its own thread; its on_revoke commits offset 0 of what
    it gives up, synchronously, and records how that went."""

    def __init__(self, make: Callable[[dict[str, Any]], Any], bootstrap: str, group: str, topic: str) -> None:
        self.consumer = make(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "group.protocol": "classic",
                "partition.assignment.strategy": STRATEGY,
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 200,
                "enable.auto.commit": False,
                "log_level": 3,
            }
        )
        self.revoke_commits: list[str] = []
        self.assigned: set[int] = set()
        self._close = threading.Event()
        self.closed = threading.Event()
        self.consumer.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke)
        threading.Thread(target=self._run, daemon=True).start()

    def _on_assign(self, consumer: Any, partitions: list[Any]) -> None:
        self.assigned |= {p.partition for p in partitions}

    def _on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        offsets = [TopicPartition(p.topic, p.partition, 0) for p in partitions]
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
            self.revoke_commits.append("committed")
        except (KafkaException, ck.KafkaException) as exc:
            self.revoke_commits.append(exc.args[0].name())

    def _run(self) -> None:
        while not self._close.is_set():
            self.consumer.poll(0.05)
        self.consumer.close()
        self.closed.set()

    def close(self) -> None:
        self._close.set()


def _state(cluster: Cluster, group: str) -> str | None:
    description = cluster.describe_classic_group(group)
    return None if description is None else description.state


def _scenario(cluster: Cluster, client: str) -> list[str]:
    topic, group = "t", f"closing-{client}"
    cluster.create_topic(topic, 2)
    cluster.create_topic("other", 1)
    bootstrap = cluster.bootstrap_servers
    member = ClosingMember(CLIENTS[client], bootstrap, group, topic)
    silent, joining = (ScriptedMember(bootstrap, group, t) for t in ("other", "other"))
    try:
        wait_until(lambda: member.assigned == {0, 1}, timeout=30, what="the member owning t")
        silent.join_in_background(then_sync=True)
        silent.joined()
        joining.join_in_background(then_sync=False)  # the group prepares a rebalance
        wait_until(lambda: _state(cluster, group) == "PreparingRebalance", timeout=30, what="a rebalance")
        time.sleep(2.0)  # ten heartbeat intervals: the member's JoinGroup is waiting for B
        member.close()
        time.sleep(2.0)
        assert not member.closed.is_set(), "the close did not wait for its on_revoke's commit"
        silent.join_in_background(then_sync=False)  # the join phase ends
        wait_until(member.closed.is_set, timeout=30, what="the member to close")
        joining.joined()
        silent.joined()
    finally:
        member.close()
        for scripted in (silent, joining):
            scripted.leave()
    return member.revoke_commits


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_a_revocation_commit_while_the_join_waits_is_refused_by_generation(backend: str, client: str) -> None:
    with open_cluster(backend, initial_rebalance_delay_ms=0) as cluster:
        assert _scenario(cluster, client) == ["ILLEGAL_GENERATION"]
