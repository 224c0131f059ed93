"""A small driver for coordinator tests: a coordinator, a clock and topics by name."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from kconsumer.broker.coordinator import CoordinatorConfig, GroupCoordinator, MetadataImage, TopicMetadata
from kconsumer.broker.coordinator.model import ConsumerGroupMember
from kconsumer.protocol.messages.consumer_group import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from kconsumer.protocol.uuid import Uuid


class Driver:
    """Drives a GroupCoordinator: topics by name, a manual clock, heartbeats with sensible defaults."""

    def __init__(self, **config: Any) -> None:
        config.setdefault("assignment_interval_ms", 0)
        config.setdefault("session_timeout_ms", 45_000)
        self.config = CoordinatorConfig(**config)
        self.coordinator = GroupCoordinator(self.config)
        self.now = 1_000
        self.topics: dict[str, TopicMetadata] = {}
        self._version = 0
        self._next_id = 1

    # -- topics ----------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int) -> Uuid:
        topic_id = Uuid.from_int(0xF000 + self._next_id)
        self._next_id += 1
        self.topics[name] = TopicMetadata(topic_id, name, partitions)
        self._publish()
        return topic_id

    def delete_topic(self, name: str) -> None:
        del self.topics[name]
        self._publish()

    def set_partitions(self, name: str, partitions: int) -> None:
        topic = self.topics[name]
        self.topics[name] = TopicMetadata(topic.topic_id, name, partitions)
        self._publish()

    def topic_id(self, name: str) -> Uuid:
        return self.topics[name].topic_id

    def _publish(self) -> None:
        self._version += 1
        self.coordinator.update_metadata(MetadataImage.of(self.topics.values(), self._version), self.now)

    # -- requests ----------------------------------------------------------------------------

    def tps(self, assignment: dict[str, Iterable[int]]) -> list[TopicPartitions]:
        """Wire form of {topic name: partitions}."""
        return [
            TopicPartitions(topic_id=self.topic_id(name), partitions=sorted(parts))
            for name, parts in sorted(assignment.items())
        ]

    def join(
        self,
        member_id: str,
        topics: list[str] | None = None,
        group: str = "g",
        version: int = 1,
        **fields: Any,
    ) -> ConsumerGroupHeartbeatResponse:
        fields.setdefault("rebalance_timeout_ms", 60_000)
        fields.setdefault("subscribed_topic_names", topics if topics is not None else ["foo"])
        fields.setdefault("topic_partitions", [])
        return self.heartbeat(member_id, 0, group=group, version=version, **fields)

    def heartbeat(
        self,
        member_id: str,
        epoch: int,
        owned: dict[str, Iterable[int]] | None = None,
        group: str = "g",
        version: int = 1,
        **fields: Any,
    ) -> ConsumerGroupHeartbeatResponse:
        if owned is not None:
            fields["topic_partitions"] = self.tps(owned)
        request = ConsumerGroupHeartbeatRequest(
            group_id=group, member_id=member_id, member_epoch=epoch, **fields
        )
        response = self.coordinator.heartbeat(request, version, self.now, "client", "/127.0.0.1").response
        # Timers due now (a new regex's resolution) fire after the answer, as the server fires them.
        self.coordinator.poll(self.now)
        return response

    def advance(self, ms: int) -> None:
        self.now += ms
        self.coordinator.poll(self.now)

    # -- inspection ---------------------------------------------------------------------------

    def member(self, member_id: str, group: str = "g") -> ConsumerGroupMember:
        g = self.coordinator.group(group)
        assert g is not None
        return g.members[member_id]

    def assigned(self, member_id: str, group: str = "g") -> dict[str, list[int]]:
        """A member's current assigned partitions by topic name."""
        names = {t.topic_id: n for n, t in self.topics.items()}
        current = self.member(member_id, group).current
        return {names[t]: sorted(p) for t, p in current.assigned.items() if p}

    def pending(self, member_id: str, group: str = "g") -> dict[str, list[int]]:
        """Partitions pending revocation, by topic name."""
        names = {t.topic_id: n for n, t in self.topics.items()}
        current = self.member(member_id, group).current
        return {names[t]: sorted(p) for t, p in current.pending_revocation.items() if p}

    def target(self, member_id: str, group: str = "g") -> dict[str, list[int]]:
        names = {t.topic_id: n for n, t in self.topics.items()}
        g = self.coordinator.group(group)
        assert g is not None
        return {names[t]: sorted(p) for t, p in g.target_of(member_id).partitions.items() if p}

    def response_assignment(self, response: ConsumerGroupHeartbeatResponse) -> dict[str, list[int]] | None:
        if response.assignment is None:
            return None
        names = {t.topic_id: n for n, t in self.topics.items()}
        return {names[tp.topic_id]: sorted(tp.partitions) for tp in response.assignment.topic_partitions}


@pytest.fixture
def driver() -> Driver:
    return Driver()


@pytest.fixture
def make_driver() -> Any:
    """A factory for drivers with a custom coordinator configuration: ``make_driver(max_group_size=2)``."""
    return Driver
