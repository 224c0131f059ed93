"""Checking an assignor's result against the `ServerAssignor.assign` contract.

The built-in assignors meet it by construction; a custom assignor (``module:Class`` in
``group.consumer.assignors``) may not. `validate_assignment` lets the coordinator refuse a broken
result (as `PartitionAssignorError`, which Kafka answers with UNKNOWN_SERVER_ERROR) instead of
installing a target that gives a partition to two members or to none.
"""

from __future__ import annotations

from collections.abc import Mapping

from ....protocol.uuid import Uuid
from ..assignor_api import Assignment, GroupSpec, PartitionAssignorError
from ._common import check_topics_exist, sorted_topics


def validate_assignment(spec: GroupSpec, result: Mapping[str, Assignment]) -> None:
    """Raise `PartitionAssignorError` unless `result` is a valid target for `spec`.

    Valid means: every subscribed topic exists (as `assign` itself checks); exactly the members
    of `spec`; every partition of every topic some member
    subscribes to assigned to exactly one member, which subscribes to it; nothing else assigned
    (no unknown topic, no partition outside ``[0, num_partitions)``, no empty partition set).
    """
    subscribed_topics: set[Uuid] = set()
    for member in spec.members.values():
        subscribed_topics |= member.subscribed_topic_ids
    check_topics_exist(subscribed_topics, spec.topics)
    if result.keys() != spec.members.keys():
        missing = sorted(spec.members.keys() - result.keys())
        unknown = sorted(result.keys() - spec.members.keys())
        raise PartitionAssignorError(f"members missing from the result: {missing}, unknown: {unknown}")
    seen: dict[Uuid, set[int]] = {}
    for member_id in sorted(result):
        subscribed = spec.members[member_id].subscribed_topic_ids
        for topic_id, partitions in result[member_id].items():
            where = f"{member_id!r}, topic {topic_id}"
            if topic_id not in subscribed:
                raise PartitionAssignorError(f"{where}: the member does not subscribe to the topic")
            if not isinstance(partitions, frozenset) or not partitions:
                raise PartitionAssignorError(f"{where}: not a non-empty frozenset: {partitions!r}")
            count = spec.topics[topic_id].num_partitions
            if min(partitions) < 0 or max(partitions) >= count:
                raise PartitionAssignorError(f"{where}: partitions beyond 0..{count - 1}")
            held = seen.setdefault(topic_id, set())
            if not held.isdisjoint(partitions):
                raise PartitionAssignorError(
                    f"{where}: partitions {sorted(held & partitions)} assigned twice"
                )
            held |= partitions
    for topic_id in sorted_topics(subscribed_topics):
        count = spec.topics[topic_id].num_partitions
        assigned = len(seen.get(topic_id, ()))
        if assigned != count:
            raise PartitionAssignorError(f"topic {topic_id}: {count - assigned} partitions not assigned")
