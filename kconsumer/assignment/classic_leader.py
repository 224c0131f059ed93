"""The classic group leader's computation (seed 004): from the members JoinGroup listed (their
ConsumerProtocol subscriptions) and the subscribed topics' partition counts, every member's
ConsumerProtocol assignment bytes for SyncGroup, with one of the built-in classic strategies.

Pure: the member session fetches the partition counts and sends the result; the simulation runs
the same function.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from ..protocol.consumer_protocol import (
    ConsumerAssignment,
    ConsumerSubscription,
    ConsumerTopicPartitions,
    decode_consumer_protocol,
    encode_consumer_protocol,
)
from .assignor import AssignmentMemberSpec, AssignmentSpec, AssignmentTopicMetadata, MemberMetadata
from .classic_strategies import CLASSIC_STRATEGIES

log = logging.getLogger("kconsumer")

#: (member id, group instance id, ConsumerProtocol subscription bytes), as JoinGroup lists them.
JoinedMember = tuple[str, "str | None", bytes]


def subscriptions(members: Iterable[JoinedMember]) -> dict[str, ConsumerSubscription]:
    """Each member's decoded subscription, by member id (a member whose bytes do not decode
    subscribes to nothing, and is logged)."""
    decoded = {}
    for member_id, _instance, metadata in members:
        try:
            decoded[member_id] = decode_consumer_protocol(ConsumerSubscription, metadata)[0]
        except Exception as exc:
            log.warning("classic member %s sent a subscription that does not decode: %s", member_id, exc)
            decoded[member_id] = ConsumerSubscription(topics=[])
    return decoded


def subscribed_topics(members: Iterable[JoinedMember]) -> set[str]:
    """Every topic some member subscribes to."""
    return {topic for sub in subscriptions(members).values() for topic in sub.topics}


def classic_assignments(
    strategy: str, members: Iterable[JoinedMember], partition_counts: Mapping[str, int]
) -> dict[str, bytes]:
    """Every member's assignment bytes (ConsumerProtocol assignment v3) computed with `strategy`
    (a name of `CLASSIC_STRATEGIES`); topics without a known partition count are not assigned."""
    members = list(members)
    decoded = subscriptions(members)
    instances = {member_id: instance for member_id, instance, _metadata in members}
    topics = {t for sub in decoded.values() for t in sub.topics if partition_counts.get(t, 0) > 0}
    spec = AssignmentSpec(
        members={
            member_id: AssignmentMemberSpec(
                member_id=member_id,
                instance_id=instances[member_id],
                rack_id=sub.rack_id,
                subscribed_topics=frozenset(t for t in sub.topics if t in topics),
                reason=0,
                metadata=MemberMetadata(-1, sub.user_data or b""),
                target_partitions={o.topic: tuple(o.partitions) for o in sub.owned_partitions},
                member_epoch=sub.generation_id,
            )
            for member_id, sub in decoded.items()
        },
        topics={t: AssignmentTopicMetadata(t, partition_counts[t]) for t in sorted(topics)},
    )
    result = CLASSIC_STRATEGIES[strategy]().assign(spec)
    out = {}
    for member_id in decoded:
        assigned = result.members.get(member_id)
        partitions = {} if assigned is None else assigned.partitions
        value = ConsumerAssignment(
            assigned_partitions=[
                ConsumerTopicPartitions(topic=t, partitions=list(p))
                for t, p in sorted(partitions.items())
                if p
            ],
            user_data=None,
        )
        out[member_id] = encode_consumer_protocol(value)
    return out


def assigned_partitions(assignment: bytes) -> dict[str, list[int]]:
    """The partitions by topic name in SyncGroup assignment bytes (empty bytes: none)."""
    if not assignment:
        return {}
    decoded = decode_consumer_protocol(ConsumerAssignment, assignment)[0]
    return {a.topic: sorted(a.partitions) for a in decoded.assigned_partitions if a.partitions}
