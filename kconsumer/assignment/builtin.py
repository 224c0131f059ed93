"""The built-in client-side assignors ``range`` and ``uniform``: the assignment algorithms of
`kconsumer.assignment.algorithms` run by a member, as `PartitionAssignor` adapters.

`ServerAlgorithmAssignor` runs any `ServerAssignor` (by topic id) as a client-side assignor (by
topic name): the spec by topic name becomes a `GroupSpec` by topic id and the result comes back by
name. Users import them from `kconsumer.assignors` (or `kconsumer`).
"""

from __future__ import annotations

from ..protocol.uuid import Uuid
from .algorithms import RangeServerAssignor, UniformServerAssignor
from .assignor import AssignmentSpec, GroupAssignment, MemberAssignment, PartitionAssignor
from .interface import GroupSpec, MemberSpec, ServerAssignor, SubscriptionType, TopicMetadata

__all__ = ["RangeAssignor", "ServerAlgorithmAssignor", "UniformAssignor", "to_group_spec"]


def to_group_spec(spec: AssignmentSpec) -> tuple[GroupSpec, dict[Uuid, str]]:
    """The server-side `GroupSpec` of `spec`, with stand-in topic ids (ascending in name order),
    and the name of each stand-in id. Subscriptions to topics missing from ``spec.topics`` and
    target partitions outside them are left out."""
    ids = {name: Uuid.from_int(i + 1) for i, name in enumerate(sorted(spec.topics))}
    topics = {ids[n]: TopicMetadata(ids[n], n, t.num_partitions) for n, t in spec.topics.items()}
    members = {}
    for member_id, member in spec.members.items():
        subscribed = frozenset(ids[t] for t in member.subscribed_topics if t in ids)
        target = {
            ids[t]: frozenset(p for p in parts if p < spec.topics[t].num_partitions)
            for t, parts in member.target_partitions.items()
            if t in ids
        }
        members[member_id] = MemberSpec(
            member_id, member.instance_id, member.rack_id, subscribed, {t: p for t, p in target.items() if p}
        )
    kind = SubscriptionType.of(m.subscribed_topic_ids for m in members.values())
    return GroupSpec(members, topics, kind), {topic_id: name for name, topic_id in ids.items()}


class ServerAlgorithmAssignor(PartitionAssignor):
    """A client-side assignor computing with a server-side `algorithm`. Its name is the
    algorithm's unless the subclass sets one; metadata is not used (version 0, no bytes)."""

    def __init__(self, algorithm: ServerAssignor) -> None:
        self.algorithm = algorithm
        if "name" not in type(self).__dict__:
            self.name = algorithm.name

    def assign(self, spec: AssignmentSpec) -> GroupAssignment:
        """The algorithm's assignment of `spec` (see the server-side assignor of that name)."""
        group, names = to_group_spec(spec)
        result = self.algorithm.assign(group)
        return GroupAssignment(
            members={
                member_id: MemberAssignment({names[t]: parts for t, parts in assignment.items()})
                for member_id, assignment in sorted(result.items())
            }
        )


class RangeAssignor(ServerAlgorithmAssignor):
    """``range``: for each topic, its subscribers (static members first, by instance id, then
    by member id) take contiguous ranges of partitions, so topics with the same partition count
    and subscribers are co-partitioned. Not sticky.

    >>> from kconsumer.assignment.assignor import *
    >>> member = lambda m: AssignmentMemberSpec(m, None, None, frozenset({"t"}), 0, MemberMetadata(0))
    >>> spec = AssignmentSpec({m: member(m) for m in "ab"}, {"t": AssignmentTopicMetadata("t", 5)})
    >>> {m: a.partitions for m, a in RangeAssignor().assign(spec).members.items()}
    {'a': {'t': (0, 1, 2)}, 'b': {'t': (3, 4)}}
    """

    name = "range"

    def __init__(self) -> None:
        super().__init__(RangeServerAssignor())


class UniformAssignor(ServerAlgorithmAssignor):
    """``uniform``: balanced (member partition counts differ by at most one when subscriptions
    agree), then sticky: members keep as much of their current target as balance allows."""

    name = "uniform"

    def __init__(self) -> None:
        super().__init__(UniformServerAssignor())
