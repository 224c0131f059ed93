"""The ``uniform`` assignment algorithm: Kafka's default server-side assignor, run on a
member by `kconsumer.assignors.UniformAssignor`.

It picks its algorithm from the group's subscription type: `assign_homogeneous` when every member
subscribes to the same topics, `HeterogeneousBuilder` otherwise. Both put balance before
stickiness. Like Kafka 4.3 it ignores racks.
"""

from __future__ import annotations

from ..interface import GroupSpec, PartitionsByTopicId
from ._common import check_topics_exist, common_subscription
from .uniform_heterogeneous import HeterogeneousBuilder
from .uniform_homogeneous import assign_homogeneous


class UniformServerAssignor:
    """Balanced, then sticky: member partition counts differ by at most one when subscriptions agree."""

    #: The name members ask for (``ServerAssignor`` in the heartbeat) and the config lists.
    name = "uniform"

    def assign(self, spec: GroupSpec) -> dict[str, PartitionsByTopicId]:
        """The new target of every member of `spec` (see `ServerAssignor.assign`).

        Raises `PartitionAssignorError` when a member subscribes to a topic id missing from
        ``spec.topics``.
        """
        if not spec.members:
            return {}
        member_ids = sorted(spec.members)
        members = [spec.members[member_id] for member_id in member_ids]
        subscribed = common_subscription(spec, members)
        if subscribed is not None:
            check_topics_exist(subscribed, spec.topics)
            return assign_homogeneous(member_ids, members, subscribed, spec.topics)
        return HeterogeneousBuilder(member_ids, members, spec.topics).build()

    def __repr__(self) -> str:
        return "UniformServerAssignor()"
