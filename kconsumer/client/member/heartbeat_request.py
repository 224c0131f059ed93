"""Builds ConsumerGroupHeartbeat requests that carry only what changed (Kafka's ``HeartbeatState``).

Always sent: GroupId, MemberId, MemberEpoch, and InstanceId when the member is static. InstanceId
goes in every request, as Kafka's consumer does, because the coordinator takes the static-member
path only when it is present and a -2 leave without it is INVALID_REQUEST.

Sent only when changed since the last request, and all together in a *full* request (the join with
epoch 0, and the first request after `reset`, which the core calls after every error or failure):

====================  ===============================================================
RackId                ``client.rack``
RebalanceTimeoutMs    ``max.poll.interval.ms`` (-1 = unchanged)
SubscribedTopicNames  and SubscribedTopicRegex, always **together**: names with ``""`` as
                      the regex, or a pattern with ``[]`` as the names (librdkafka's mock
                      aborts on names with a null regex; ``""`` means "no regex" to Kafka)
ServerAssignor        ``group.remote.assignor``
TopicPartitions       the owned partitions, by topic id
ClientAssignors       tag 10000 (docs/assignor-protocol.md), the local assignors and their metadata
====================  ===============================================================

Version 0 has no SubscribedTopicRegex: a pattern subscription cannot be built at v0 (the core
turns that into a fatal "broker too old" error before asking).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ...protocol.messages.consumer_group import (
    JOIN_GROUP_MEMBER_EPOCH,
    Assignor,
    ConsumerGroupHeartbeatRequest,
    TopicPartitions,
)
from ...protocol.uuid import Uuid
from .model import ClientAssignor, MemberConfig, Subscription, TopicIdPartition

#: The first ConsumerGroupHeartbeat version with SubscribedTopicRegex and client-generated ids.
REGEX_VERSION = 1


@dataclass
class _Sent:
    """The values of the delta fields in the last request; None = never sent (send it)."""

    rack_id: str | None = None
    rebalance_timeout_ms: int | None = None
    subscription: Subscription | None = None
    server_assignor: str | None = None
    owned: frozenset[tuple[Uuid, int]] | None = None
    client_assignors: tuple[ClientAssignor, ...] | None = None


def topic_partitions(owned: Iterable[TopicIdPartition]) -> list[TopicPartitions]:
    """Owned partitions in the wire shape, ordered by topic id then partition."""
    by_topic: dict[Uuid, list[int]] = {}
    for tp in owned:
        by_topic.setdefault(tp.topic_id, []).append(tp.partition)
    return [
        TopicPartitions(topic_id=topic_id, partitions=sorted(parts))
        for topic_id, parts in sorted(by_topic.items(), key=lambda item: item[0].bytes)
    ]


class HeartbeatBuilder:
    """Remembers what the last heartbeat carried and builds the next one."""

    def __init__(self, config: MemberConfig) -> None:
        self._config = config
        self._sent = _Sent()

    def reset(self) -> None:
        """Make the next request full (after joining, and after any error or failed request)."""
        self._sent = _Sent()

    def build(
        self,
        *,
        member_id: str,
        member_epoch: int,
        subscription: Subscription,
        owned: Iterable[TopicIdPartition],
        client_assignors: tuple[ClientAssignor, ...],
        version: int,
    ) -> ConsumerGroupHeartbeatRequest:
        """A regular (join or in-group) heartbeat, recording what it carries."""
        if subscription.pattern is not None and version < REGEX_VERSION:
            raise ValueError("a pattern subscription needs ConsumerGroupHeartbeat v1")
        config = self._config
        if member_epoch == JOIN_GROUP_MEMBER_EPOCH:
            self.reset()
        sent = self._sent
        request = ConsumerGroupHeartbeatRequest(
            group_id=config.group_id,
            member_id=member_id,
            member_epoch=member_epoch,
            instance_id=config.instance_id,
        )
        if config.rack_id is not None and config.rack_id != sent.rack_id:
            request.rack_id = sent.rack_id = config.rack_id
        if config.rebalance_timeout_ms != sent.rebalance_timeout_ms:
            request.rebalance_timeout_ms = sent.rebalance_timeout_ms = config.rebalance_timeout_ms
        if subscription != sent.subscription:
            sent.subscription = subscription
            if subscription.pattern is not None:
                request.subscribed_topic_names = []
                request.subscribed_topic_regex = subscription.pattern
            else:
                request.subscribed_topic_names = sorted(set(subscription.topics))
                if version >= REGEX_VERSION:
                    request.subscribed_topic_regex = ""
        if config.server_assignor is not None and config.server_assignor != sent.server_assignor:
            request.server_assignor = sent.server_assignor = config.server_assignor
        owned = tuple(owned)
        owned_keys = frozenset(tp.key for tp in owned)
        if owned_keys != sent.owned:
            sent.owned = owned_keys
            request.topic_partitions = topic_partitions(owned)
        if client_assignors and client_assignors != sent.client_assignors:
            sent.client_assignors = client_assignors
            request.client_assignors = [
                Assignor(
                    name=a.name,
                    minimum_version=a.minimum_version,
                    maximum_version=a.maximum_version,
                    reason=a.reason,
                    metadata_version=a.metadata_version,
                    metadata_bytes=a.metadata_bytes,
                )
                for a in client_assignors
            ]
        return request

    def build_leave(self, *, member_id: str, member_epoch: int) -> ConsumerGroupHeartbeatRequest:
        """The leave heartbeat (epoch -1, or -2 for a static member's temporary leave)."""
        self.reset()
        return ConsumerGroupHeartbeatRequest(
            group_id=self._config.group_id,
            member_id=member_id,
            member_epoch=member_epoch,
            instance_id=self._config.instance_id,
        )
