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
from .assignor import (
    AssignmentMemberSpec,
    AssignmentSpec,
    AssignmentTopicMetadata,
    AssignorFailedError,
    GroupAssignment,
    MemberMetadata,
)
from .classic_strategies import CLASSIC_STRATEGIES, is_cooperative, not_owned_by_others
from .validation import GroupSnapshot, InvalidAssignmentError, validate_assignment

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


def classic_spec(
    members: Iterable[JoinedMember], partition_counts: Mapping[str, int], strategy: str = ""
) -> AssignmentSpec:
    """What a strategy assigns from: every member JoinGroup listed (its subscription, rack, user
    data as version -1 metadata, owned partitions as `target_partitions`, reported generation as
    `member_epoch`) and every subscribed topic with a known partition count."""
    members = list(members)
    decoded = subscriptions(members)
    instances = {member_id: instance for member_id, instance, _metadata in members}
    topics = {t for sub in decoded.values() for t in sub.topics if partition_counts.get(t, 0) > 0}
    return AssignmentSpec(
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
        assignor_name=strategy,
    )


def classic_assignments(
    strategy: str, members: Iterable[JoinedMember], partition_counts: Mapping[str, int]
) -> dict[str, bytes]:
    """Every member's assignment bytes computed with the built-in `strategy` (a name of
    `CLASSIC_STRATEGIES`); topics without a known partition count are not assigned."""
    spec = classic_spec(members, partition_counts, strategy)
    assignor = CLASSIC_STRATEGIES[strategy]()
    return encode_result(spec, assignor.assign(spec), cooperative=is_cooperative(strategy))


def encode_result(spec: AssignmentSpec, result: object, *, cooperative: bool) -> dict[str, bytes]:
    """Every member's SyncGroup assignment bytes (ConsumerProtocol v3, with the strategy's user
    data) for a strategy's `result`, checked with the rules every assignor obeys
    (`kconsumer.assignment.validation`); cooperative (KIP-429): what another member still
    reports owning is left for the next rebalance, and such a partition need not be assigned.
    Raises `AssignorFailedError` naming the broken rule."""
    if not isinstance(result, GroupAssignment):
        raise AssignorFailedError(f"assign() must return a GroupAssignment, got {type(result).__name__}")
    snapshot = GroupSnapshot(
        None,
        {m.member_id: m.subscribed_topics for m in spec.members.values()},
        {name: topic.num_partitions for name, topic in spec.topics.items()},
    )
    entries = [(member_id, list(a.partitions.items())) for member_id, a in result.members.items()]
    try:
        validate_assignment(snapshot, entries, also_covered=owned_partitions(spec) if cooperative else ())
    except InvalidAssignmentError as exc:
        raise AssignorFailedError(str(exc)) from exc
    assigned = {
        m: sorted((t, p) for t, ps in a.partitions.items() for p in ps) for m, a in result.members.items()
    }
    if cooperative:
        assigned = not_owned_by_others(spec, assigned)
    out = {}
    for member_id in spec.members:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in assigned.get(member_id, ()):
            by_topic.setdefault(topic, []).append(partition)
        member_result = result.members.get(member_id)
        value = ConsumerAssignment(
            assigned_partitions=[
                ConsumerTopicPartitions(topic=t, partitions=p) for t, p in sorted(by_topic.items())
            ],
            user_data=(member_result.data or None) if member_result is not None else None,
        )
        out[member_id] = encode_consumer_protocol(value)
    return out


def held_back(spec: AssignmentSpec, assignments: Mapping[str, bytes]) -> list[tuple[str, int]]:
    """Partitions a member reports owning that the leader's `assignments` give to nobody: with a
    cooperative strategy, left for the next rebalance, which their owner starts once it revoked
    them (KIP-429)."""
    given = {
        (topic, p)
        for data in assignments.values()
        for topic, partitions in assigned_partitions(data).items()
        for p in partitions
    }
    return sorted(owned_partitions(spec) - given)


def owned_partitions(spec: AssignmentSpec) -> set[tuple[str, int]]:
    """Every existing partition of a subscribed topic some member reports owning."""
    return {
        (topic, p)
        for member in spec.members.values()
        for topic, partitions in member.target_partitions.items()
        if topic in spec.topics
        for p in partitions
        if p < spec.topics[topic].num_partitions
    }


def decode_assignment(assignment: bytes) -> tuple[dict[str, list[int]], bytes]:
    """The partitions by topic name and the strategy's user data in SyncGroup assignment bytes
    (empty bytes: none of either)."""
    if not assignment:
        return {}, b""
    decoded = decode_consumer_protocol(ConsumerAssignment, assignment)[0]
    partitions = {a.topic: sorted(a.partitions) for a in decoded.assigned_partitions if a.partitions}
    return partitions, decoded.user_data or b""


def assigned_partitions(assignment: bytes) -> dict[str, list[int]]:
    """The partitions by topic name in SyncGroup assignment bytes (empty bytes: none)."""
    return decode_assignment(assignment)[0]
