"""The classic protocol's assignment strategies, ``partition.assignment.strategy``: ``range``,
``roundrobin`` and ``cooperative-sticky``, as the group leader of a classic group runs them over
the members' ConsumerProtocol subscriptions (seed 004; KIP-429 for the cooperative one).

They are `PartitionAssignor`s like any client-side assignor: a classic member's subscription
arrives as an `AssignmentMemberSpec` whose `target_partitions` are the partitions it reported
owning (ConsumerProtocol v1+) and whose `member_epoch` is the generation it reported (v2+).

Members are ordered as Kafka's and librdkafka's assignors order them: static members (with a
``group.instance.id``) by instance id, before dynamic ones by member id
(``tests/assignors/test_classic_strategies.py`` compares the results with librdkafka's).
"""

from __future__ import annotations

from collections.abc import Mapping

from .assignor import (
    AssignmentMemberSpec,
    AssignmentSpec,
    GroupAssignment,
    MemberAssignment,
    PartitionAssignor,
)

__all__ = [
    "CLASSIC_STRATEGIES",
    "CooperativeStickyStrategy",
    "RangeStrategy",
    "RoundRobinStrategy",
    "is_cooperative",
]

TopicPartition = tuple[str, int]


def _order(member: AssignmentMemberSpec) -> tuple[int, str]:
    """Static members by instance id first, then dynamic members by member id."""
    if member.instance_id is not None:
        return (0, member.instance_id)
    return (1, member.member_id)


def _sorted_members(spec: AssignmentSpec) -> list[AssignmentMemberSpec]:
    return sorted(spec.members.values(), key=_order)


def _result(spec: AssignmentSpec, assigned: Mapping[str, list[TopicPartition]]) -> GroupAssignment:
    members = {}
    for member_id in spec.members:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in assigned.get(member_id, ()):
            by_topic.setdefault(topic, []).append(partition)
        members[member_id] = MemberAssignment(by_topic)
    return GroupAssignment(members=members)


class RangeStrategy(PartitionAssignor):
    """Per topic, its subscribers in order each get a contiguous range; the first
    ``partitions % subscribers`` get one more (eager)."""

    name = "range"

    def assign(self, spec: AssignmentSpec) -> GroupAssignment:
        """The range assignment of `spec`."""
        assigned: dict[str, list[TopicPartition]] = {}
        members = _sorted_members(spec)
        for topic in sorted(spec.topics):
            subscribers = [m for m in members if topic in m.subscribed_topics]
            if not subscribers:
                continue
            count = spec.topics[topic].num_partitions
            per, extra = divmod(count, len(subscribers))
            start = 0
            for index, member in enumerate(subscribers):
                length = per + (1 if index < extra else 0)
                assigned.setdefault(member.member_id, []).extend(
                    (topic, p) for p in range(start, start + length)
                )
                start += length
        return _result(spec, assigned)


class RoundRobinStrategy(PartitionAssignor):
    """Every partition of every subscribed topic, by topic name then number, dealt to the members
    in turn, skipping members not subscribed to its topic (eager)."""

    name = "roundrobin"

    def assign(self, spec: AssignmentSpec) -> GroupAssignment:
        """The round-robin assignment of `spec`."""
        assigned: dict[str, list[TopicPartition]] = {}
        members = _sorted_members(spec)
        if not members:
            return _result(spec, assigned)
        turn = 0
        for topic in sorted(spec.topics):
            if not any(topic in m.subscribed_topics for m in members):
                continue
            for partition in range(spec.topics[topic].num_partitions):
                while topic not in members[turn % len(members)].subscribed_topics:
                    turn += 1
                assigned.setdefault(members[turn % len(members)].member_id, []).append((topic, partition))
                turn += 1
        return _result(spec, assigned)


class CooperativeStickyStrategy(PartitionAssignor):
    """Balanced and sticky, and cooperative (KIP-429): members keep what they own up to their
    share, free partitions go to the least loaded subscribers, and a partition that another member
    still owns is left out of this assignment: its owner revokes it, rejoins, and the next
    rebalance hands it over. So no partition is ever assigned while another member owns it."""

    name = "cooperative-sticky"

    def assign(self, spec: AssignmentSpec) -> GroupAssignment:
        """The cooperative-sticky assignment of `spec`."""
        claims = _claims(spec)
        owners = _valid_owners(claims)
        members = _sorted_members(spec)
        load: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
        for key in sorted(owners):
            load[owners[key]].append(key)
        eligible = {
            (topic, p): [m.member_id for m in members if topic in m.subscribed_topics]
            for topic, metadata in spec.topics.items()
            for p in range(metadata.num_partitions)
        }
        _trim_to_shares(spec, members, load)
        held = {key for keys in load.values() for key in keys}
        # Free partitions, the most constrained first (fewest subscribers), each to the least
        # loaded subscriber, the one with the fewest topics first: a member that can take few
        # partitions gets them before others fill up, so the result needs no further moves.
        free = sorted(
            (k for k, candidates in eligible.items() if candidates and k not in held),
            key=lambda k: (len(eligible[k]), k),
        )
        for key in free:
            target = min(
                eligible[key],
                key=lambda m: (len(load[m]), len(spec.members[m].subscribed_topics), _order(spec.members[m])),
            )
            load[target].append(key)
        _balance(spec, eligible, load, claims)
        return _result(spec, not_owned_by_others(spec, load))


def not_owned_by_others(
    spec: AssignmentSpec, assigned: Mapping[str, list[TopicPartition]]
) -> dict[str, list[TopicPartition]]:
    """`assigned` without what another member still reports owning (KIP-429: such a partition
    is handed over in the next rebalance, once its owner revoked it and rejoined). A member keeps
    what it claims itself, even when another claims it too."""
    claims = _claims(spec)
    return {
        member: [k for k in keys if not claims.get(k) or member in {m for _g, m in claims[k]}]
        for member, keys in assigned.items()
    }


def _claims(spec: AssignmentSpec) -> dict[TopicPartition, list[tuple[int, str]]]:
    """Who reports owning what, as (generation, member id) per partition: partitions that exist,
    of topics the member still subscribes to."""
    claims: dict[TopicPartition, list[tuple[int, str]]] = {}
    for member in spec.members.values():
        for topic, partitions in member.target_partitions.items():
            metadata = spec.topics.get(topic)
            if metadata is None or topic not in member.subscribed_topics:
                continue
            for partition in partitions:
                if partition < metadata.num_partitions:
                    claims.setdefault((topic, partition), []).append((member.member_epoch, member.member_id))
    return claims


def _valid_owners(claims: Mapping[TopicPartition, list[tuple[int, str]]]) -> dict[TopicPartition, str]:
    """Who keeps what: a partition's only claimant or, when several claim it, the one that
    reported the highest generation (a tie: neither)."""
    owners = {}
    for key, claimed in claims.items():
        claimants = sorted(claimed, reverse=True)
        if len(claimants) == 1 or claimants[0][0] > claimants[1][0]:
            owners[key] = claimants[0][1]
    return owners


def _trim_to_shares(
    spec: AssignmentSpec, members: list[AssignmentMemberSpec], load: dict[str, list[TopicPartition]]
) -> None:
    """With equal subscriptions, nobody keeps more than its share (the first ``partitions %
    members`` in order may keep one more)."""
    subscriptions = {m.subscribed_topics for m in members}
    if len(subscriptions) != 1 or not members:
        return
    (topics,) = subscriptions
    total = sum(spec.topics[t].num_partitions for t in topics if t in spec.topics)
    per, extra = divmod(total, len(members))
    with_extra = 0
    for member in sorted(members, key=lambda m: (-len(load[m.member_id]), _order(m))):
        keys = load[member.member_id]
        share = per
        if with_extra < extra and len(keys) > per:
            share, with_extra = per + 1, with_extra + 1
        keys.sort()
        del keys[share:]


def _balance(
    spec: AssignmentSpec,
    eligible: Mapping[TopicPartition, list[str]],
    load: dict[str, list[TopicPartition]],
    claims: Mapping[TopicPartition, list[tuple[int, str]]],
) -> None:
    """Move partitions from a member to a less loaded subscriber while that narrows the gap by
    two or more (heterogeneous subscriptions end as even as their overlap allows). A member
    gives up partitions it does not own yet before those it owns (sticky: an assignment is a
    fixed point of the next rebalance)."""

    def owns(member: str, key: TopicPartition) -> bool:
        return any(claimant == member for _generation, claimant in claims.get(key, ()))

    moved = True
    while moved:
        moved = False
        for giver in sorted(load, key=lambda m: (-len(load[m]), _order(spec.members[m]))):
            candidates = sorted(load[giver], reverse=True)
            candidates.sort(key=lambda key: owns(giver, key))  # stable: not owned first
            for key in candidates:
                taker = min(eligible[key], key=lambda m: (len(load[m]), _order(spec.members[m])))
                if len(load[taker]) + 1 < len(load[giver]):
                    load[giver].remove(key)
                    load[taker].append(key)
                    moved = True
                    break
            if moved:
                break


#: The built-in strategies by ``partition.assignment.strategy`` name.
CLASSIC_STRATEGIES: Mapping[str, type[PartitionAssignor]] = {
    RangeStrategy.name: RangeStrategy,
    RoundRobinStrategy.name: RoundRobinStrategy,
    CooperativeStickyStrategy.name: CooperativeStickyStrategy,
}


def is_cooperative(strategy_name: str) -> bool:
    """Whether members of a group using this strategy rebalance cooperatively (KIP-429)."""
    return strategy_name == CooperativeStickyStrategy.name
