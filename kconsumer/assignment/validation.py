"""Checking a computed assignment: one set of rules for every assignor, each rule named.

A valid assignment of a group gives every partition of every subscribed topic to exactly one
member, a member of the group that subscribes to that topic. `validate_assignment` checks it and
raises `InvalidAssignmentError`, whose message names the broken rule:

* the coordinator checks an installed client-side assignment with it (ConsumerGroupInstallAssignment
  answers INVALID_REQUEST with that message, docs/assignor-protocol.md §4);
* `validate_result` checks a server-side algorithm's result (the `ServerAssignor.assign` contract,
  useful for custom ones) with the same rules, plus the shape of that result;
* a member uses it to decide whether the group's current target is still a valid assignment to
  install again when its own assignor failed (`kconsumer.assignment.conversions.previous_target`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..protocol.uuid import Uuid
from .algorithms._common import check_topics_exist
from .interface import GroupSpec, PartitionAssignorError, PartitionsByTopicId

#: The rules, in the words the error messages use (part of the wire contract: peers may match them).
EVERY_PARTITION_ASSIGNED = "every partition of every subscribed topic assigned"
EXACTLY_ONCE = "each partition assigned exactly once"
SUBSCRIBED_MEMBERS_ONLY = "only to members subscribed to the topic"
GROUP_MEMBERS_ONLY = "only members of the group at the prepared epoch"
SUBSCRIBED_TOPICS_ONLY = "only subscribed topics"
EXISTING_PARTITIONS_ONLY = "only existing partitions"
ONE_ENTRY_PER_MEMBER = "one entry per member"
#: Only for `validate_result` (a server-side algorithm's result).
EVERY_MEMBER_LISTED = "an entry for every member"
NON_EMPTY_FROZENSETS = "partitions as non-empty frozensets"

#: How topics are named: by id (consumer protocol) or by name (the classic protocol's leader).
Topic = TypeVar("Topic", Uuid, str)

#: One member's entry: its id and its partitions as (topic id, partition numbers) pairs.
MemberEntry = tuple[str, Iterable[tuple[Topic, Iterable[int]]]]


class InvalidAssignmentError(PartitionAssignorError):
    """A computed assignment breaks `rule`; the message is ``Invalid assignment (rule: ...): ...``."""

    def __init__(self, rule: str, detail: str) -> None:
        super().__init__(f"Invalid assignment (rule: {rule}): {detail}")
        self.rule = rule
        self.detail = detail


@dataclass(frozen=True)
class GroupSnapshot(Generic[Topic]):
    """The group an assignment is computed for and checked against.

    `epoch` is the group epoch it describes (None when unknown), `subscriptions` every member's
    subscribed topic ids and `partitions` the partition count of every subscribed topic.
    """

    epoch: int | None
    subscriptions: Mapping[str, frozenset[Topic]]
    partitions: Mapping[Topic, int]


def validate_assignment(
    group: GroupSnapshot[Topic],
    members: Iterable[MemberEntry[Topic]],
    also_covered: Collection[tuple[Topic, int]] = (),
) -> dict[str, dict[Topic, frozenset[int]]]:
    """Every member's partitions by topic id, if `members` is a valid assignment of `group`;
    raises `InvalidAssignmentError` naming the first rule broken (in the order of `members`).

    Members of `group` left out of `members` get nothing. A topic listed twice for one member is
    merged; a partition listed twice breaks "each partition assigned exactly once". Partitions in
    `also_covered` need not be assigned (a cooperative classic group's partitions still owned:
    they are handed over in the next rebalance).
    """

    owner: dict[tuple[Topic, int], str] = {}
    result: dict[str, dict[Topic, frozenset[int]]] = {}
    for member_id, topic_partitions in members:
        subscribed = group.subscriptions.get(member_id)
        if subscribed is None:
            at = "was not a member" if group.epoch is None else f"was not a member at epoch {group.epoch}"
            raise InvalidAssignmentError(GROUP_MEMBERS_ONLY, f"member {member_id} {at}")
        if member_id in result:
            raise InvalidAssignmentError(ONE_ENTRY_PER_MEMBER, f"member {member_id} appears twice")
        assignment: dict[Topic, set[int]] = {}
        for topic_id, partitions in topic_partitions:
            count = group.partitions.get(topic_id)
            if count is None:
                raise InvalidAssignmentError(
                    SUBSCRIBED_TOPICS_ONLY, f"topic {topic_id} is not subscribed by the group"
                )
            if topic_id not in subscribed:
                raise InvalidAssignmentError(
                    SUBSCRIBED_MEMBERS_ONLY, f"member {member_id} does not subscribe to topic {topic_id}"
                )
            for partition in partitions:
                if not 0 <= partition < count:
                    raise InvalidAssignmentError(
                        EXISTING_PARTITIONS_ONLY,
                        f"topic {topic_id} has {count} partitions, got partition {partition}",
                    )
                holder = owner.get((topic_id, partition))
                if holder is not None:
                    raise InvalidAssignmentError(
                        EXACTLY_ONCE, f"{topic_id}-{partition} is assigned to {holder} and {member_id}"
                    )
                owner[(topic_id, partition)] = member_id
                assignment.setdefault(topic_id, set()).add(partition)
        result[member_id] = {t: frozenset(p) for t, p in assignment.items()}
    for topic_id, count in sorted(group.partitions.items(), key=lambda item: str(item[0])):
        missing = [
            p for p in range(count) if (topic_id, p) not in owner and (topic_id, p) not in also_covered
        ]
        if missing:
            raise InvalidAssignmentError(
                EVERY_PARTITION_ASSIGNED, f"topic {topic_id} partitions {missing[:10]} are not assigned"
            )
    return result


def validate_result(spec: GroupSpec, result: Mapping[str, PartitionsByTopicId]) -> None:
    """Raise `PartitionAssignorError` unless `result` is a valid target for `spec` (the
    `ServerAssignor.assign` contract).

    Every subscribed topic must exist (as `assign` itself checks), `result` must list exactly the
    members of `spec`, each topic's partitions as a non-empty frozenset, and be a valid assignment
    (`validate_assignment`; members are checked in id order).
    """
    subscriptions = {member_id: member.subscribed_topic_ids for member_id, member in spec.members.items()}
    subscribed_topics = frozenset().union(*subscriptions.values())
    check_topics_exist(subscribed_topics, spec.topics)
    missing = sorted(spec.members.keys() - result.keys())
    if missing:
        raise InvalidAssignmentError(EVERY_MEMBER_LISTED, f"members missing from the result: {missing}")
    for member_id in sorted(result):
        for topic_id, partitions in result[member_id].items():
            if not isinstance(partitions, frozenset) or not partitions:
                raise InvalidAssignmentError(
                    NON_EMPTY_FROZENSETS, f"member {member_id}, topic {topic_id}: {partitions!r}"
                )
    counts = {topic_id: spec.topics[topic_id].num_partitions for topic_id in subscribed_topics}
    group = GroupSnapshot(None, subscriptions, counts)
    validate_assignment(group, ((member_id, result[member_id].items()) for member_id in sorted(result)))
