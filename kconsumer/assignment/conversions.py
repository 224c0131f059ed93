"""Client-side assignment on the wire and in the assignor's terms (docs/assignor-protocol.md §3, §4).

The member chosen to compute calls ConsumerGroupPrepareAssignment and gets the group by topic id;
its `PartitionAssignor` works by topic name. This module converts, both ways, without I/O:

* `build_spec`: a PrepareAssignment response -> an `AssignmentSpec` (with the id <-> name maps);
  `unknown_topic_ids` says which ids need a Metadata lookup first;
* `install_members`: a `GroupAssignment` -> the members of the InstallAssignment request;
* `previous_target`: the group's current target, to install again when the assignor failed,
  if it is still a valid assignment of the prepared group;
* `snapshot_of` and `installed_entries`: the prepared group and an installed assignment as the
  validator (`kconsumer.assignment.validation`) takes them; the coordinator validates installs
  with the same two;
* `name_topic_ids`: the coordinator's error messages with topic names after the ids.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..protocol.messages.consumer_group import TopicPartitions
from ..protocol.messages.extensions import ConsumerGroupPrepareAssignmentResponse, InstalledMember
from ..protocol.uuid import Uuid
from .assignor import (
    AssignmentMemberSpec,
    AssignmentSpec,
    AssignmentTopicMetadata,
    AssignorFailedError,
    GroupAssignment,
    MemberMetadata,
)
from .validation import (
    SUBSCRIBED_TOPICS_ONLY,
    GroupSnapshot,
    InvalidAssignmentError,
    MemberEntry,
    validate_assignment,
)

log = logging.getLogger("kconsumer")


@dataclass(frozen=True)
class Prepared:
    """A PrepareAssignment response in the assignor's terms, with the id <-> name maps."""

    spec: AssignmentSpec
    ids: Mapping[str, Uuid]
    names: Mapping[Uuid, str]
    response: ConsumerGroupPrepareAssignmentResponse


def unknown_topic_ids(
    response: ConsumerGroupPrepareAssignmentResponse, known: Mapping[Uuid, str]
) -> list[Uuid]:
    """Topic ids of the response that neither its topic list nor `known` names."""
    named = {t.topic_id for t in response.topics} | set(known)
    found: set[Uuid] = set()
    for member in response.members:
        found.update(member.subscribed_topic_ids)
        found.update(tp.topic_id for tp in member.topic_partitions)
    return sorted(found - named)


def build_spec(
    group_id: str, response: ConsumerGroupPrepareAssignmentResponse, known: Mapping[Uuid, str]
) -> Prepared:
    """The `AssignmentSpec` of a PrepareAssignment response. Names come from the response's
    topics first, then from `known`; a topic id named by neither (a deleted topic in a target)
    is left out."""
    names: dict[Uuid, str] = {tid: name for tid, name in known.items()}
    names.update({t.topic_id: t.topic_name for t in response.topics})
    topics = {
        t.topic_name: AssignmentTopicMetadata(t.topic_name, t.num_partitions)
        for t in sorted(response.topics, key=lambda t: t.topic_name)
    }
    members: dict[str, AssignmentMemberSpec] = {}
    for m in response.members:
        target: dict[str, list[int]] = {}
        for tp in m.topic_partitions:
            if tp.topic_id in names:
                target.setdefault(names[tp.topic_id], []).extend(tp.partitions)
            else:
                log.info(
                    "group %s: target of %s names unknown topic id %s", group_id, m.member_id, tp.topic_id
                )
        members[m.member_id] = AssignmentMemberSpec(
            member_id=m.member_id,
            instance_id=m.instance_id,
            rack_id=m.rack_id,
            subscribed_topics=frozenset(names[t] for t in m.subscribed_topic_ids if t in names),
            reason=m.assignor.reason,
            metadata=MemberMetadata(m.assignor.metadata_version, bytes(m.assignor.metadata_bytes)),
            target_partitions={t: tuple(sorted(set(p))) for t, p in sorted(target.items())},
            member_epoch=m.member_epoch,
        )
    spec = AssignmentSpec(
        members=members,
        topics=topics,
        group_id=group_id,
        group_epoch=response.group_epoch,
        assignor_name=response.assignor_name,
    )
    ids = {t.topic_name: t.topic_id for t in response.topics}
    return Prepared(spec, ids, names, response)


def install_members(prepared: Prepared, result: Any) -> tuple[int, list[InstalledMember]]:
    """The (Error, Members) of the InstallAssignment request for an assignor's `result`. Raises
    `AssignorFailedError` for a result that cannot be sent (wrong type, topic not in the spec)."""
    if not isinstance(result, GroupAssignment):
        raise AssignorFailedError(f"assign() must return a GroupAssignment, got {type(result).__name__}")
    members = []
    for member_id, assignment in sorted(result.members.items()):
        topic_partitions = []
        for topic, partitions in sorted(assignment.partitions.items()):
            topic_id = prepared.ids.get(topic)
            if topic_id is None:
                raise AssignorFailedError(
                    f"invalid assignment (rule: {SUBSCRIBED_TOPICS_ONLY}): topic {topic!r} of member "
                    f"{member_id} is not subscribed by the group (not in spec.topics)"
                )
            topic_partitions.append(TopicPartitions(topic_id=topic_id, partitions=list(partitions)))
        version = assignment.version
        if version is None:
            member = prepared.spec.members.get(member_id)
            version = 0 if member is None else member.metadata.version
        members.append(
            InstalledMember(
                member_id=member_id,
                topic_partitions=topic_partitions,
                metadata_version=version,
                metadata_bytes=assignment.data,
            )
        )
    return result.error, members


def snapshot_of(response: ConsumerGroupPrepareAssignmentResponse) -> GroupSnapshot[Uuid]:
    """The group a PrepareAssignment response describes, as an assignment of it is validated."""
    return GroupSnapshot(
        response.group_epoch,
        {m.member_id: frozenset(m.subscribed_topic_ids) for m in response.members},
        {t.topic_id: t.num_partitions for t in response.topics},
    )


def installed_entries(members: Iterable[InstalledMember]) -> Iterable[MemberEntry[Uuid]]:
    """The members of an InstallAssignment request as `validate_assignment` takes them."""
    return ((m.member_id, ((tp.topic_id, tp.partitions) for tp in m.topic_partitions)) for m in members)


def previous_target(prepared: Prepared) -> list[InstalledMember] | None:
    """Every member's current target, as an install, if it is still a valid assignment of the
    prepared group (the coordinator's own rules); else None."""
    response = prepared.response
    members = [
        InstalledMember(
            member_id=m.member_id,
            topic_partitions=list(m.topic_partitions),
            metadata_version=m.assignor.metadata_version,
            metadata_bytes=b"",
        )
        for m in response.members
    ]
    try:
        validate_assignment(snapshot_of(response), installed_entries(members))
    except InvalidAssignmentError:
        return None
    return members


def name_topic_ids(message: str | None, names: Mapping[Uuid, str]) -> str | None:
    """`message` with each topic id it mentions followed by the topic's name."""
    if not message:
        return message
    for topic_id, name in names.items():
        message = message.replace(str(topic_id), f"{topic_id} ({name!r})")
    return message
