"""ConsumerGroupHeartbeat on the coordinator (Kafka 4.3.1 semantics).

One heartbeat: validate the request; take the leave path for epochs -1/-2; otherwise find or
create the group and the member (dynamic or static), check the epoch, update the member, bump
the group epoch when its subscription (or client-side assignor metadata, docs/assignor-protocol.md §5)
changed, compute a new target when due, reconcile the member towards its target, and answer.
Every validation happens before the first record is written.
"""

from __future__ import annotations

import dataclasses

from ...assignment.announcements import AnnouncedAssignor
from ...assignment.versions import VersionRange
from ...errors import ErrorCode, KafkaApiError
from ...patterns import InvalidPatternError, compile_pattern
from ...protocol.messages.consumer_group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Assignment,
    AssignmentMetadata,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from ...protocol.uuid import Uuid
from .classic.migration import upgrade
from .client_assignment import should_compute, to_topic_partitions
from .context import Context, rebalance_timer, regex_timer, session_timer
from .membership import bump_group_epoch, drop_unused_regexes, fence_member
from .model import (
    AssignedPartitions,
    ConsumerGroup,
    ConsumerGroupMember,
    CurrentAssignment,
    MemberRegistration,
)
from .progress import maybe_update_target, reconcile_member, replace_static_member
from .reconciliation import same_assigned_partitions
from .records import (
    ClassicGroupTombstone,
    CurrentAssignmentRecord,
    GroupEpochRecord,
    MemberMetadataRecord,
    SimpleGroupTombstone,
    TargetMetadataRecord,
)


def _invalid(message: str) -> KafkaApiError:
    return KafkaApiError(ErrorCode.INVALID_REQUEST, message)


def _blank(value: str | None) -> bool:
    return value is not None and not value.strip()


def validate(ctx: Context, request: ConsumerGroupHeartbeatRequest, version: int) -> None:
    """Kafka's request checks plus the extension's (docs/assignor-protocol.md §1)."""
    epoch = request.member_epoch
    if (version >= 1 or epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH) and not request.member_id.strip():
        raise _invalid("MemberId can't be empty.")
    if not request.group_id.strip():
        raise _invalid("GroupId can't be empty.")
    if _blank(request.instance_id):
        raise _invalid("InstanceId can't be empty.")
    if _blank(request.rack_id):
        raise _invalid("RackId can't be empty.")
    if epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise _invalid("RebalanceTimeoutMs must be provided in first request.")
        if request.topic_partitions is None or request.topic_partitions:
            raise _invalid("TopicPartitions must be empty when (re-)joining.")
        if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
            raise _invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
    if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH and request.instance_id is None:
        raise _invalid("InstanceId can't be null.")
    if epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise _invalid("MemberEpoch is invalid.")
    if request.server_assignor is not None and request.server_assignor not in ctx.assignors:
        raise KafkaApiError(
            ErrorCode.UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {request.server_assignor} is not supported. "
            f"Supported assignors: {', '.join(ctx.assignors)}.",
        )
    if request.client_assignors is not None:
        if request.server_assignor is not None:
            raise _invalid("ServerAssignor and ClientAssignors can't both be set.")
        names: set[str] = set()
        for assignor in request.client_assignors:
            if not assignor.name.strip() or assignor.name in names:
                raise _invalid(f"ClientAssignors names must be non-empty and unique: {assignor.name!r}.")
            names.add(assignor.name)
            low, high, used = assignor.minimum_version, assignor.maximum_version, assignor.metadata_version
            versions = VersionRange(low, high)
            if versions.problem() is not None or not versions.covers(used):
                raise _invalid(
                    f"ClientAssignor {assignor.name}: versions must satisfy -1 <= MinimumVersion <= "
                    f"MetadataVersion <= MaximumVersion and MaximumVersion >= 0 (got {low}, {used}, {high})."
                )


def _validate_new_regex(group: ConsumerGroup | None, regex: str | None) -> None:
    """Facts §5.2 rule 7: a regex the group does not use yet must compile. Kafka checks it inside
    the coordinator, after the group, member and epoch checks."""
    if regex and (group is None or regex not in group.resolved_regexes):
        try:
            compile_pattern(regex)
        except InvalidPatternError as exc:
            raise KafkaApiError(ErrorCode.INVALID_REGULAR_EXPRESSION, str(exc)) from None


def handle(
    ctx: Context, request: ConsumerGroupHeartbeatRequest, version: int, client_id: str, client_host: str
) -> ConsumerGroupHeartbeatResponse:
    """Handle one heartbeat; raises KafkaApiError for error responses (before any record)."""
    validate(ctx, request, version)
    if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
        return _leave(ctx, request)
    return _heartbeat(ctx, request, client_id, client_host)


# -- leave ---------------------------------------------------------------------------------------


def _leave(ctx: Context, request: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
    group = ctx.state.group(request.group_id)
    if group is None:
        raise KafkaApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {request.group_id} not found.")
    if request.instance_id is None:
        if request.member_id not in group.members:
            raise KafkaApiError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {request.member_id} is not a member of group {group.group_id}.",
            )
        fence_member(ctx, group, request.member_id)
        return ConsumerGroupHeartbeatResponse(
            member_id=request.member_id, member_epoch=LEAVE_GROUP_MEMBER_EPOCH
        )
    member = group.member_by_instance(request.instance_id)
    if member is None:
        raise KafkaApiError(
            ErrorCode.UNKNOWN_MEMBER_ID,
            f"Instance id {request.instance_id} is unknown in group {group.group_id}.",
        )
    if member.member_id != request.member_id:
        raise KafkaApiError(
            ErrorCode.FENCED_INSTANCE_ID,
            f"Instance id {request.instance_id} belongs to member {member.member_id}, "
            f"not {request.member_id}.",
        )
    if request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
        fence_member(ctx, group, member.member_id)
        return ConsumerGroupHeartbeatResponse(
            member_id=member.member_id, member_epoch=LEAVE_GROUP_MEMBER_EPOCH
        )
    # Temporary leave of a static member: keep its assignment and its session timer, no bump.
    current = member.current
    left = CurrentAssignment(
        member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
        previous_member_epoch=current.member_epoch,
        state=current.state,
        assigned={topic: dict.fromkeys(parts, 0) for topic, parts in current.assigned.items()},
        pending_revocation={},
    )
    ctx.writer.write(CurrentAssignmentRecord(group.group_id, member.member_id, left))
    ctx.timers.cancel(rebalance_timer(group.group_id, member.member_id))
    return ConsumerGroupHeartbeatResponse(
        member_id=member.member_id, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH
    )


# -- join / heartbeat ----------------------------------------------------------------------------


def _heartbeat(
    ctx: Context, request: ConsumerGroupHeartbeatRequest, client_id: str, client_host: str
) -> ConsumerGroupHeartbeatResponse:
    epoch = request.member_epoch
    _take_over_classic_group(ctx, request.group_id, epoch)
    group = ctx.state.group(request.group_id)
    if group is None and epoch != 0:
        raise KafkaApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {request.group_id} not found.")
    member_id = request.member_id or ctx.new_member_id()
    if (
        group is not None
        and member_id not in group.members
        and group.num_members >= ctx.config.max_group_size
    ):
        raise KafkaApiError(
            ErrorCode.GROUP_MAX_SIZE_REACHED,
            f"The consumer group has reached its maximum capacity of {ctx.config.max_group_size} members.",
        )
    member, replaced = _resolve_member(ctx, group, request, member_id)
    owned = _owned(request)
    if member is not None:
        _check_epoch(member, epoch, owned)
    _validate_new_regex(group, request.subscribed_topic_regex)
    assigned_before: AssignedPartitions = member.current.assigned if member is not None else {}

    # Every check passed: from here on, records are written.
    if group is None:
        group = _create_group(ctx, request.group_id)
    if replaced is not None:
        member = replace_static_member(ctx, group, replaced, member_id)
    old_metadata = member.metadata if member is not None else MemberRegistration(member_id)
    new_metadata = _updated_metadata(old_metadata, request, client_id, client_host)
    if member is None or new_metadata != old_metadata:
        ctx.writer.write(MemberMetadataRecord(group.group_id, new_metadata))
    member = group.members[member_id]

    names_changed = set(new_metadata.subscribed_topic_names) != set(old_metadata.subscribed_topic_names)
    regex_changed = new_metadata.subscribed_topic_regex != old_metadata.subscribed_topic_regex
    subscription_changed = names_changed or regex_changed
    if subscription_changed:
        drop_unused_regexes(ctx, group)
    # As Kafka: a regex the group has not resolved yet is resolved after this heartbeat is
    # answered (Kafka does it on a background thread), and that resolution bumps the epoch; until
    # then it subscribes the member to nothing, and changes no epoch by itself.
    waits_for_resolution = regex_changed and _schedule_resolution(
        ctx, group, new_metadata.subscribed_topic_regex
    )
    bump = (
        names_changed
        or (regex_changed and not waits_for_resolution)
        or _assignor_metadata_changed(old_metadata, new_metadata)
    )
    if bump or replaced is not None:
        new_hash = ctx.image.topics_hash(group.subscribed_topic_names())
        if bump or new_hash != group.metadata_hash:
            bump_group_epoch(ctx, group)

    error = maybe_update_target(ctx, group)
    if error is not None:
        raise error  # the caller rolls every record of this heartbeat back

    member = reconcile_member(ctx, group, member, owned, subscription_changed)
    ctx.timers.schedule(session_timer(group.group_id, member_id), ctx.now_ms + ctx.config.session_timeout_ms)
    return _response(ctx, group, member, request, assigned_before)


def _resolve_member(
    ctx: Context, group: ConsumerGroup | None, request: ConsumerGroupHeartbeatRequest, member_id: str
) -> tuple[ConsumerGroupMember | None, ConsumerGroupMember | None]:
    """(existing member or None for a new one, static member being replaced or None)."""
    epoch = request.member_epoch
    existing = None if group is None else group.members.get(member_id)
    if request.instance_id is None:
        if existing is None and epoch != 0:
            raise KafkaApiError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of the group."
            )
        return existing, None
    holder = None if group is None else group.member_by_instance(request.instance_id)
    if epoch == 0:
        if holder is None or holder.member_id == member_id:
            return existing, None
        # A classic holder is replaced at once (Kafka: only two consumer-protocol members need
        # the old one to have left first).
        if holder.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH and not holder.uses_classic_protocol:
            raise KafkaApiError(
                ErrorCode.UNRELEASED_INSTANCE_ID,
                f"Static member {member_id} with instance id {request.instance_id} cannot join the group "
                f"because the instance id is owned by member {holder.member_id}.",
            )
        return None, holder
    if holder is None:
        raise KafkaApiError(
            ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown in the group."
        )
    if holder.member_id != member_id:
        raise KafkaApiError(
            ErrorCode.FENCED_INSTANCE_ID,
            f"Instance id {request.instance_id} belongs to member {holder.member_id}, not {member_id}.",
        )
    return holder, None


def _owned(request: ConsumerGroupHeartbeatRequest) -> dict[Uuid, frozenset[int]] | None:
    if request.topic_partitions is None:
        return None
    owned: dict[Uuid, frozenset[int]] = {}
    for tp in request.topic_partitions:
        owned[tp.topic_id] = owned.get(tp.topic_id, frozenset()) | frozenset(tp.partitions)
    return owned


def _check_epoch(
    member: ConsumerGroupMember, received: int, owned: dict[Uuid, frozenset[int]] | None
) -> None:
    """Facts §5.5 (4.2+): epoch 0 always accepted; a lost response is tolerated."""
    current = member.current
    if received == 0 or received == current.member_epoch:
        return
    if received > current.member_epoch:
        raise KafkaApiError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a greater member epoch ({received}) than the one known by "
            f"the group coordinator ({current.member_epoch}). The member must abandon all its partitions "
            "and rejoin.",
        )
    if received == current.previous_member_epoch and owned is not None:
        assigned = current.assigned
        if all(p in assigned.get(topic, {}) for topic, parts in owned.items() for p in parts):
            return
    raise KafkaApiError(
        ErrorCode.FENCED_MEMBER_EPOCH,
        f"The consumer group member has a smaller member epoch ({received}) than the one known by the "
        f"group coordinator ({current.member_epoch}). The member must abandon all its partitions and rejoin.",
    )


def _take_over_classic_group(ctx: Context, group_id: str, epoch: int) -> None:
    """A classic group of that id: deleted if empty and the member joins; a
    non-empty one is converted into a consumer group if the migration policy allows it (Kafka's
    getOrMaybeCreateConsumerGroup), else it is not a consumer group."""
    if group_id in ctx.state.worker_groups:
        raise KafkaApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
    classic = ctx.state.classic_groups.get(group_id)
    if classic is None:
        return
    if epoch != 0:
        raise KafkaApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
    if classic.members:
        upgrade(ctx, classic)
    else:
        ctx.writer.write(ClassicGroupTombstone(group_id))


def _create_group(ctx: Context, group_id: str) -> ConsumerGroup:
    """Kafka 4.3 (KAFKA-20268): a new group starts at epoch 1 with an empty target at epoch 1."""
    if group_id in ctx.state.simple_groups:
        ctx.writer.write(SimpleGroupTombstone(group_id))  # an empty simple group is converted
    ctx.writer.write(GroupEpochRecord(group_id, 1, 0))
    ctx.writer.write(TargetMetadataRecord(group_id, 1, None))
    group = ctx.state.group(group_id)
    assert group is not None
    return group


def _updated_metadata(
    old: MemberRegistration, request: ConsumerGroupHeartbeatRequest, client_id: str, client_host: str
) -> MemberRegistration:
    """Facts §5.6 step 1: only the fields that were sent change; client id/host always."""
    changes: dict[str, object] = {"client_id": client_id, "client_host": client_host, "classic": None}
    if request.instance_id is not None:
        changes["instance_id"] = request.instance_id
    if request.rack_id is not None:
        changes["rack_id"] = request.rack_id
    if request.rebalance_timeout_ms != -1:
        changes["rebalance_timeout_ms"] = request.rebalance_timeout_ms
    if request.server_assignor is not None:
        changes["server_assignor"] = request.server_assignor
    if request.subscribed_topic_names is not None:
        changes["subscribed_topic_names"] = tuple(sorted(set(request.subscribed_topic_names)))
    if request.subscribed_topic_regex is not None:
        changes["subscribed_topic_regex"] = request.subscribed_topic_regex or None
    if request.client_assignors is not None:
        changes["client_assignors"] = tuple(
            AnnouncedAssignor(
                a.name, a.minimum_version, a.maximum_version, a.metadata_version, a.metadata_bytes, a.reason
            )
            for a in request.client_assignors
        )
    return dataclasses.replace(old, **changes)  # type: ignore[arg-type]


def _assignor_metadata_changed(old: MemberRegistration, new: MemberRegistration) -> bool:
    """docs/assignor-protocol.md §5: a Reason turning non-zero, or new metadata, asks for a new assignment;
    so does a change of the assignors themselves (names, order, versions), which may change the
    selection. A Reason going back to zero does not."""

    def without_reason(metadata: MemberRegistration) -> list[tuple[object, ...]]:
        return [dataclasses.astuple(dataclasses.replace(a, reason=0)) for a in metadata.client_assignors]

    if without_reason(old) != without_reason(new):
        return True
    for spec in new.client_assignors:
        before = old.client_assignor(spec.name)
        if before is None:
            continue
        if spec.reason != 0 and spec.reason != before.reason:
            return True
        if (spec.metadata_version, spec.metadata_bytes) != (before.metadata_version, before.metadata_bytes):
            return True
    return False


def _schedule_resolution(ctx: Context, group: ConsumerGroup, regex: str | None) -> bool:
    """Schedule the resolution of a regex the group has not resolved yet; whether it waits for one."""
    if not regex or regex in group.resolved_regexes:
        return False
    ctx.timers.schedule(regex_timer(group.group_id, regex), ctx.now_ms)
    return True


def _response(
    ctx: Context,
    group: ConsumerGroup,
    member: ConsumerGroupMember,
    request: ConsumerGroupHeartbeatRequest,
    assigned_before: AssignedPartitions,
) -> ConsumerGroupHeartbeatResponse:
    """Facts §5.8 step 7, plus the extension fields (docs/assignor-protocol.md §1)."""
    response = ConsumerGroupHeartbeatResponse(
        member_id=member.member_id,
        member_epoch=member.member_epoch,
        heartbeat_interval_ms=ctx.config.heartbeat_interval_ms,
        should_compute_assignment=should_compute(ctx, group.group_id, member.member_id),
    )
    full_request = (
        request.rebalance_timeout_ms != -1
        and (request.subscribed_topic_names is not None or request.subscribed_topic_regex is not None)
        and request.topic_partitions is not None
    )
    assigned = member.current.assigned
    target = group.target_of(member.member_id)
    # A member reaching the epoch of a client-side assignment with nothing left to receive gets
    # its AssignmentMetadata even if its partitions did not change (a member that only revoked):
    # on_assignment is called once per epoch (docs/assignor-protocol.md §6). One still waiting for
    # partitions gets it with them.
    reached_client_epoch = (
        target.assignor_output is not None
        and request.member_epoch != member.member_epoch
        and member.member_epoch == group.assignment_epoch
        and not any(frozenset(parts) - assigned.get(t, {}).keys() for t, parts in target.partitions.items())
    )
    if (
        request.member_epoch == 0
        or full_request
        or reached_client_epoch
        or not same_assigned_partitions(assigned_before, assigned)
    ):
        response.assignment = Assignment(topic_partitions=to_topic_partitions(assigned.items()))
        pending = [
            (topic, frozenset(parts) - assigned.get(topic, {}).keys())
            for topic, parts in target.partitions.items()
        ]
        response.pending_topic_partitions = to_topic_partitions(pending)
        output = target.assignor_output
        if output is not None and member.member_epoch == group.assignment_epoch:
            response.assignment_metadata = AssignmentMetadata(
                error=output.error,
                metadata_version=output.metadata_version,
                metadata_bytes=output.metadata_bytes,
            )
    return response
