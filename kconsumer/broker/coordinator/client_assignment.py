"""Client-side assignors on the coordinator (EXTENSIONS.md §2-§3; the KIP-848 seed's design).

Selection (§3.1): a client-side assignor is used when at least one member lists one and *every*
member lists an assignor of that name with overlapping version ranges; among several candidates
the one the members rank highest (smallest sum of list positions, then name) wins. Otherwise the
server-side assignor is used: the most common ServerAssignor, else the configured default.

The chosen member (§3.2) is one whose [MinimumVersion, MaximumVersion] covers every member's
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
from .context import ClientAssignmentRun, Context, PreparedSnapshot, client_assignment_timer
from .model import AssignorOutput, ConsumerGroup, TargetMember
from .target import install_target, subscribed_topic_ids


@dataclass(frozen=True)
class AssignorSelection:
    """Which assignor computes the group's next target."""

    name: str
    client_side: bool


def select_assignor(group: ConsumerGroup, default_server_assignor: str) -> AssignorSelection:
    """EXTENSIONS.md §3.1."""
    members = list(group.members.values())
    if members and any(m.metadata.client_assignors for m in members):
        for name in _client_candidates(group):
            if _choosable_members(group, name):
                return AssignorSelection(name, client_side=True)
    counts = Counter(m.metadata.server_assignor for m in members if m.metadata.server_assignor)
    if counts:
        best = max(counts.values())
        return AssignorSelection(min(n for n, c in counts.items() if c == best), client_side=False)
    return AssignorSelection(default_server_assignor, client_side=False)


def _client_candidates(group: ConsumerGroup) -> list[str]:
    """Assignor names every member lists, with overlapping version ranges, best ranked first."""
    members = list(group.members.values())
    common = set.intersection(*({a.name for a in m.metadata.client_assignors} for m in members))
    ranked: list[tuple[int, str]] = []
    for name in common:
        specs = [m.metadata.client_assignor(name) for m in members]
        low = max(s.minimum_version for s in specs if s is not None)
        high = min(s.maximum_version for s in specs if s is not None)
        if low > high:
            continue
        rank = sum(
            next(i for i, a in enumerate(m.metadata.client_assignors) if a.name == name) for m in members
        )
        ranked.append((rank, name))
    return [name for _rank, name in sorted(ranked)]


def _choosable_members(group: ConsumerGroup, name: str) -> list[str]:
    """Members whose version range covers every member's metadata version for `name`."""
    versions = []
    for member in group.members.values():
        spec = member.metadata.client_assignor(name)
        if spec is None:
            return []
        versions.append(spec.metadata_version)
    eligible = []
    for member_id in sorted(group.members):
        spec = group.members[member_id].metadata.client_assignor(name)
        if spec is not None and all(spec.covers(v) for v in versions):
            eligible.append(member_id)
    return eligible


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
    """The chosen member did not install in time: choose another (§3.2)."""
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
    """ConsumerGroupPrepareAssignment: the group as the assignor must see it (EXTENSIONS.md §2)."""
    group, run = _check_chosen(ctx, request.group_id, request.member_id, request.member_epoch)
    run.awaiting_prepare = False
    members = []
    subscriptions: dict[str, frozenset[Uuid]] = {}
    topics: dict[Uuid, PreparedTopic] = {}
    for member_id in sorted(group.members):
        member = group.members[member_id]
        topic_ids = subscribed_topic_ids(group, member.metadata, ctx.image)
        subscriptions[member_id] = frozenset(topic_ids)
        for topic_id in topic_ids:
            meta = ctx.image.topics_by_id[topic_id]
            topics[topic_id] = PreparedTopic(
                topic_id=topic_id, topic_name=meta.name, num_partitions=meta.num_partitions
            )
        spec = member.metadata.client_assignor(run.assignor)
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
    run.prepared[group.group_epoch] = PreparedSnapshot(
        group.group_epoch, subscriptions, {t: p.num_partitions for t, p in topics.items()}
    )
    return ConsumerGroupPrepareAssignmentResponse(
        group_epoch=group.group_epoch,
        assignor_name=run.assignor,
        members=members,
        topics=[topics[t] for t in sorted(topics)],
    )


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
    assignments = validate_assignment(snapshot, request)
    targets: dict[str, TargetMember] = {}
    for entry in request.members:
        targets[entry.member_id] = TargetMember(
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


def validate_assignment(
    snapshot: PreparedSnapshot, request: ConsumerGroupInstallAssignmentRequest
) -> dict[str, dict[Uuid, frozenset[int]]]:
    """Check the installed assignment against the prepared group; INVALID_REQUEST names the rule."""

    def invalid(rule: str, detail: str) -> KafkaApiError:
        return KafkaApiError(ErrorCode.INVALID_REQUEST, f"Invalid assignment (rule: {rule}): {detail}")

    owner: dict[tuple[Uuid, int], str] = {}
    result: dict[str, dict[Uuid, frozenset[int]]] = {}
    seen_members: set[str] = set()
    for entry in request.members:
        if entry.member_id not in snapshot.subscriptions:
            raise invalid(
                "only members of the group at the prepared epoch",
                f"member {entry.member_id} was not a member at epoch {snapshot.group_epoch}",
            )
        if entry.member_id in seen_members:
            raise invalid("one entry per member", f"member {entry.member_id} appears twice")
        seen_members.add(entry.member_id)
        assignment: dict[Uuid, set[int]] = {}
        for tp in entry.topic_partitions:
            count = snapshot.partitions.get(tp.topic_id)
            if count is None:
                raise invalid("only subscribed topics", f"topic {tp.topic_id} is not subscribed by the group")
            if tp.topic_id not in snapshot.subscriptions[entry.member_id]:
                raise invalid(
                    "only to members subscribed to the topic",
                    f"member {entry.member_id} does not subscribe to topic {tp.topic_id}",
                )
            for partition in tp.partitions:
                if not 0 <= partition < count:
                    raise invalid(
                        "only existing partitions",
                        f"topic {tp.topic_id} has {count} partitions, got partition {partition}",
                    )
                holder = owner.get((tp.topic_id, partition))
                if holder is not None:
                    raise invalid(
                        "each partition assigned exactly once",
                        f"{tp.topic_id}-{partition} is assigned to {holder} and {entry.member_id}",
                    )
                owner[(tp.topic_id, partition)] = entry.member_id
                assignment.setdefault(tp.topic_id, set()).add(partition)
        result[entry.member_id] = {t: frozenset(p) for t, p in assignment.items()}
    for topic_id, count in sorted(snapshot.partitions.items(), key=lambda item: str(item[0])):
        missing = [p for p in range(count) if (topic_id, p) not in owner]
        if missing:
            raise invalid(
                "every partition of every subscribed topic assigned",
                f"topic {topic_id} partitions {missing[:10]} are not assigned",
            )
    return result


def to_topic_partitions(items: Iterable[tuple[Uuid, Iterable[int]]]) -> list[TopicPartitions]:
    """Sorted wire form of an assignment."""
    return [
        TopicPartitions(topic_id=topic_id, partitions=sorted(parts))
        for topic_id, parts in sorted(items, key=lambda item: item[0])
        if parts
    ]
