"""Client-side assignors on the coordinator (docs/assignor-protocol.md §3-§5; the KIP-848 seed's design).

Selection (§5): a client-side assignor is used when at least one member lists one and *every*
member lists an assignor of that name with overlapping version ranges; among several candidates
the one the members rank highest (smallest sum of list positions, then name) wins
(`kconsumer.assignment.announcements`). Otherwise the server-side assignor is used: the most
common ServerAssignor, else the configured default.

The chosen member (§5) is one whose [MinimumVersion, MaximumVersion] covers every member's
MetadataVersion (the first such member by member id, rotating on retries). It learns it was
chosen through ShouldComputeAssignment in its heartbeat responses, until it calls
ConsumerGroupPrepareAssignment. It has its rebalance timeout to install; past that another
member is chosen (the first is not fenced). An assignment installed for an epoch the group has
moved past is installed anyway and a new computation is requested at once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from ...assignment.announcements import (
    AnnouncedAssignor,
    AssignorOutput,
    computing_members,
    ranked_candidates,
)
from ...assignment.conversions import installed_entries, snapshot_of
from ...assignment.validation import InvalidAssignmentError, validate_assignment
from ...errors import ErrorCode, KafkaApiError
from ...protocol.messages.consumer_group import TopicPartitions
from ...protocol.messages.extensions import (
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupPrepareAssignmentRequest,
    ConsumerGroupPrepareAssignmentResponse,
    MemberAssignorState,
    PreparedMember,
    PreparedTopic,
)
from ...protocol.uuid import Uuid
from .context import ClientAssignmentRun, Context, client_assignment_timer
from .model import ConsumerGroup, TargetMember
from .target import install_target, subscribed_topic_ids


@dataclass(frozen=True)
class AssignorSelection:
    """Which assignor computes the group's next target."""

    name: str
    client_side: bool


def select_assignor(group: ConsumerGroup, default_server_assignor: str) -> AssignorSelection:
    """docs/assignor-protocol.md §5: a client-side assignor every member can use, else a server-side one."""
    members = list(group.members.values())
    if members and any(m.metadata.client_assignors for m in members):
        for name in ranked_candidates([m.metadata.client_assignors for m in members]):
            if _choosable_members(group, name):
                return AssignorSelection(name, client_side=True)
    counts = Counter(m.metadata.server_assignor for m in members if m.metadata.server_assignor)
    if counts:
        best = max(counts.values())
        return AssignorSelection(min(n for n, c in counts.items() if c == best), client_side=False)
    return AssignorSelection(default_server_assignor, client_side=False)


def _choosable_members(group: ConsumerGroup, name: str) -> list[str]:
    """Members whose version range covers every member's metadata version for `name`."""
    announced: dict[str, tuple[AnnouncedAssignor, ...]] = {
        member_id: member.metadata.client_assignors for member_id, member in group.members.items()
    }
    return computing_members(announced, name)


def request_client_assignment(ctx: Context, group: ConsumerGroup, assignor: str) -> None:
    """Make sure some member is asked to compute the assignment for the current group epoch."""
    run = ctx.client_runs.get(group.group_id)
    if (
        run is not None
        and run.assignor == assignor
        and run.chosen_member in _choosable_members(group, assignor)  # it can still read everyone's metadata
    ):
        run.requested_epoch = max(run.requested_epoch, group.group_epoch)
        return
    _choose(ctx, group, assignor, tried=set())


def _choose(ctx: Context, group: ConsumerGroup, assignor: str, tried: set[str]) -> None:
    eligible = _choosable_members(group, assignor)
    if not eligible:
        ctx.client_runs.pop(group.group_id, None)
        ctx.timers.cancel(client_assignment_timer(group.group_id))
        return
    fresh = [m for m in eligible if m not in tried] or eligible
    if len(fresh) == len(eligible):
        tried = set()
    chosen = fresh[0]
    timeout = max(group.members[chosen].metadata.rebalance_timeout_ms, 1)
    deadline = ctx.now_ms + timeout
    ctx.client_runs[group.group_id] = ClientAssignmentRun(
        assignor=assignor,
        chosen_member=chosen,
        requested_epoch=group.group_epoch,
        deadline_ms=deadline,
        tried=tried | {chosen},
    )
    ctx.timers.schedule(client_assignment_timer(group.group_id), deadline)


def on_deadline(ctx: Context, group: ConsumerGroup) -> None:
    """The chosen member did not install in time: choose another (§5)."""
    run = ctx.client_runs.get(group.group_id)
    if run is None or group.group_epoch <= group.assignment_epoch:
        ctx.client_runs.pop(group.group_id, None)
        return
    _choose(ctx, group, run.assignor, tried=run.tried)


def should_compute(ctx: Context, group_id: str, member_id: str) -> bool:
    """Whether this member's heartbeat response must carry ShouldComputeAssignment."""
    run = ctx.client_runs.get(group_id)
    return run is not None and run.chosen_member == member_id and run.awaiting_prepare


def _check_chosen(
    ctx: Context, group_id: str, member_id: str, member_epoch: int
) -> tuple[ConsumerGroup, ClientAssignmentRun]:
    group = ctx.state.group(group_id)
    if group is None:
        raise KafkaApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
    member = group.members.get(member_id)
    if member is None:
        raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of {group_id}.")
    if member.member_epoch != member_epoch:
        raise KafkaApiError(
            ErrorCode.STALE_MEMBER_EPOCH,
            f"Member epoch {member_epoch} does not match the current epoch {member.member_epoch}.",
        )
    run = ctx.client_runs.get(group_id)
    if run is None or run.chosen_member != member_id:
        raise KafkaApiError(
            ErrorCode.UNKNOWN_MEMBER_ID,
            f"Member {member_id} is not the member chosen to compute the assignment.",
        )
    return group, run


def prepare(
    ctx: Context, request: ConsumerGroupPrepareAssignmentRequest
) -> ConsumerGroupPrepareAssignmentResponse:
    """ConsumerGroupPrepareAssignment: the group as the assignor must see it (assignor-protocol.md §3)."""
    group, run = _check_chosen(ctx, request.group_id, request.member_id, request.member_epoch)
    run.awaiting_prepare = False
    members = []
    topics: dict[Uuid, PreparedTopic] = {}
    for member_id in sorted(group.members):
        member = group.members[member_id]
        topic_ids = subscribed_topic_ids(group, member.metadata, ctx.image)
        for topic_id in topic_ids:
            meta = ctx.image.topics_by_id[topic_id]
            topics[topic_id] = PreparedTopic(
                topic_id=topic_id, topic_name=meta.name, num_partitions=meta.num_partitions
            )
        spec = member.metadata.client_assignor(run.assignor)
        if member.metadata.instance_id is not None:
            run.instances[member_id] = member.metadata.instance_id
        members.append(
            PreparedMember(
                member_id=member_id,
                member_epoch=member.member_epoch,
                instance_id=member.metadata.instance_id,
                rack_id=member.metadata.rack_id,
                subscribed_topic_ids=sorted(topic_ids),
                assignor=MemberAssignorState(
                    reason=spec.reason if spec else 0,
                    metadata_version=spec.metadata_version if spec else 0,
                    metadata_bytes=spec.metadata_bytes if spec else b"",
                ),
                topic_partitions=to_topic_partitions(group.target_of(member_id).partitions.items()),
            )
        )
    response = ConsumerGroupPrepareAssignmentResponse(
        group_epoch=group.group_epoch,
        assignor_name=run.assignor,
        members=members,
        topics=[topics[t] for t in sorted(topics)],
    )
    # The install is validated against the group as this response describes it (§4).
    run.prepared[group.group_epoch] = snapshot_of(response)
    return response


def install(ctx: Context, request: ConsumerGroupInstallAssignmentRequest) -> None:
    """ConsumerGroupInstallAssignment: validate against the prepared epoch, then install."""
    group, run = _check_chosen(ctx, request.group_id, request.member_id, request.member_epoch)
    snapshot = run.prepared.get(request.group_epoch)
    if snapshot is None:
        raise KafkaApiError(
            ErrorCode.INVALID_REQUEST,
            f"GroupEpoch {request.group_epoch} was not prepared: call ConsumerGroupPrepareAssignment first.",
        )
    if request.group_epoch <= group.assignment_epoch:
        raise KafkaApiError(
            ErrorCode.INVALID_REQUEST,
            f"An assignment for epoch {group.assignment_epoch} is already installed; "
            f"GroupEpoch {request.group_epoch} is too old.",
        )
    try:
        assignments = validate_assignment(snapshot, installed_entries(request.members))
    except InvalidAssignmentError as exc:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, str(exc)) from None
    targets: dict[str, TargetMember] = {}
    for entry in request.members:
        targets[_current_id(group, run, entry.member_id)] = TargetMember(
            assignments[entry.member_id],
            AssignorOutput(request.error, entry.metadata_version, entry.metadata_bytes),
        )
    for member_id in group.members:
        targets.setdefault(member_id, TargetMember({}, AssignorOutput(request.error)))
    install_target(ctx.writer, group, targets, request.group_epoch, ctx.now_ms)
    run.prepared = {e: s for e, s in run.prepared.items() if e > request.group_epoch}
    if group.group_epoch > request.group_epoch:
        # The group moved on while the assignment was computed: ask again at once (seed rule).
        run.awaiting_prepare = True
        run.requested_epoch = group.group_epoch
        run.tried = {run.chosen_member}
        run.deadline_ms = ctx.now_ms + max(group.members[run.chosen_member].metadata.rebalance_timeout_ms, 1)
        ctx.timers.schedule(client_assignment_timer(group.group_id), run.deadline_ms)
    else:
        del ctx.client_runs[group.group_id]
        ctx.timers.cancel(client_assignment_timer(group.group_id))


def _current_id(group: ConsumerGroup, run: ClientAssignmentRun, member_id: str) -> str:
    """The member an install's entry for `member_id` is for now: a static member replaced since
    the prepare (by its next incarnation, which takes over its assignment without a new group
    epoch) is its replacement; otherwise `member_id` itself."""
    instance = run.instances.get(member_id)
    if member_id in group.members or instance is None:
        return member_id
    replacement = group.member_by_instance(instance)
    return member_id if replacement is None else replacement.member_id


def to_topic_partitions(items: Iterable[tuple[Uuid, Iterable[int]]]) -> list[TopicPartitions]:
    """Sorted wire form of an assignment."""
    return [
        TopicPartitions(topic_id=topic_id, partitions=sorted(parts))
        for topic_id, parts in sorted(items, key=lambda item: item[0])
        if parts
    ]
