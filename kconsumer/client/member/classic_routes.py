"""The member session's side of the classic group requests (`SendClassicRequest`): what it must
fetch or compute before it can send them, and how their answers become events for the core.

* A leader's SyncGroup needs the subscribed topics' partition counts: Metadata first, then the
  assignments (`assignment.classic_leader`), then the request. A built-in strategy assigns at
  once; the application's own strategy runs off the session (`RunAssignor`, `StrategyRuns`), and
  when it raises or returns an invalid assignment the error is reported to the application and
  the member joins again after a backoff (Kafka's leader raises it from ``poll()`` and rejoins).
* A SyncGroup answer names topics; the core works by topic id: the names are resolved after a
  Metadata request for them (the ids of a topic deleted and created again under its name
  change). The core hears of the names (`MetadataUpdated`) before the answer, so it reconciles
  without another round trip. So that it can tell such a topic from the one it joined for, a
  JoinGroup whose subscribed topics include names without a known id looks them up first.
* A LeaveGroup a static member does not send is answered at once.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from ...assignment.assignor import AssignmentSpec, AssignorFailedError
from ...assignment.classic_leader import (
    assigned_partitions,
    classic_assignments,
    classic_spec,
    decode_assignment,
    encode_result,
    held_back,
    subscribed_topics,
)
from ...errors import ErrorCode
from ...protocol.messages.classic_group import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    JoinGroupResponse,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)
from ...protocol.schema import Message
from ...protocol.uuid import Uuid
from . import events as ev
from .calls import ClassicCall, ForClassic, MetadataCall
from .cluster import ClusterView
from .effects import ClassicApi, ReportError, RunAssignor, SendClassicRequest
from .model import ClassicMember, ClassicSettings
from .steps import SessionStep

log = logging.getLogger("kconsumer")


class StrategyRuns:
    """The strategy the group chose (`protocol`, from the last JoinGroup answer: its
    ``on_assignment`` is called), the leader's computations by the application's own strategies
    until they return, and a returning static leader's check of the group's assignment (after a
    JoinGroup v9 ``skip_assignment``: `skipped`, then `checks` until DescribeGroups answers)."""

    def __init__(self, settings: ClassicSettings | None) -> None:
        self._settings = settings or ClassicSettings()
        self._runs: dict[int, tuple[SendClassicRequest, AssignmentSpec]] = {}
        self.protocol: str | None = None
        #: The members a JoinGroup listed with ``skip_assignment`` (this member leads), until the
        #: SyncGroup answer; then what that answer gave, while the group's assignment is checked.
        self.skipped: tuple[ClassicMember, ...] | None = None
        self.checks: dict[int, tuple[Mapping[str, list[int]], bytes, tuple[ClassicMember, ...]]] = {}
        #: The leader's SyncGroup requests whose assignment held partitions back (`held_back`).
        self.held_back: set[int] = set()

    def assign(self, core_id: int, effect: SendClassicRequest, cluster: ClusterView) -> SessionStep:
        """The leader's SyncGroup for `effect`, or the run of the strategy that computes it."""
        members = _joined(effect.members)
        spec = classic_spec(members, cluster.partition_counts, effect.strategy)
        if effect.strategy not in self._settings.local_strategies:
            assignments = classic_assignments(effect.strategy, members, cluster.partition_counts)
            return self._sync(core_id, effect, spec, assignments)
        self._runs[core_id] = (effect, spec)
        return SessionStep(effects=[RunAssignor(core_id, effect.strategy, spec)])

    def synced(self, core_id: int) -> bool:
        """The SyncGroup `core_id` was answered: whether its assignment held partitions back."""
        held = core_id in self.held_back
        self.held_back.discard(core_id)
        return held

    def assigned(self, event: ev.AssignorFinished) -> SessionStep:
        """The application's strategy returned (or raised): the SyncGroup, or the error."""
        run = self._runs.pop(event.run_id, None)
        if run is None:
            return SessionStep()
        effect, spec = run
        try:
            if event.error is not None:
                error = event.error
                raise AssignorFailedError(f"raised {type(error).__name__}: {error}") from error
            assignments = encode_result(spec, event.result, cooperative=self._settings.cooperative)
        except AssignorFailedError as exc:
            failure = AssignorFailedError(f"assignor {effect.strategy!r}: {exc}")
            failure.__cause__ = exc.__cause__
            log.error("classic group leader: %s; joining again", failure)
            # The failed SyncGroup makes the member rejoin, after a backoff (a retriable error).
            again = ev.HeartbeatFailed(event.run_id, ErrorCode.REBALANCE_IN_PROGRESS)
            return SessionStep(events=[again], effects=[ReportError(failure, fatal=False)])
        return self._sync(event.run_id, effect, spec, assignments)

    def _sync(
        self, core_id: int, effect: SendClassicRequest, spec: AssignmentSpec, assignments: Mapping[str, bytes]
    ) -> SessionStep:
        if held_back(spec, assignments):
            self.held_back.add(core_id)
        return _sync(core_id, effect, assignments)


def start(effect: SendClassicRequest) -> SessionStep:
    """Carry out `effect`."""
    if effect.request is None:  # a static member's leave: nothing to send
        return SessionStep(events=[ev.ClassicResponseReceived(effect.request_id)])
    if effect.api is ClassicApi.SYNC and effect.members:
        topics = tuple(sorted(subscribed_topics(_joined(effect.members))))
        metadata = MetadataCall(topics, None, ForClassic(effect.request_id, effect=effect))
        return SessionStep(to_any=[metadata])
    if effect.api is ClassicApi.JOIN and effect.unknown_topics:
        purpose = ForClassic(effect.request_id, join=effect)
        return SessionStep(to_any=[MetadataCall(effect.unknown_topics, None, purpose)])
    return SessionStep(to_coordinator=[_call(effect)])


def _call(effect: SendClassicRequest) -> ClassicCall:
    assert effect.request is not None  # (a static member's unsent leave is answered in `start`)
    return ClassicCall(effect.request_id, effect.api, effect.request, effect.timeout_ms)


def metadata_learnt(
    purpose: ForClassic, cluster: ClusterView, runs: StrategyRuns, failed: bool = False
) -> SessionStep:
    """The Metadata `purpose` asked for arrived, or failed: the leader then assigns with the
    partition counts it knows. Assigned names are only turned into topic ids with metadata
    asked for as the answer came (a topic created again under its name has a new id); when that
    request fails, the member joins again instead of resolving the names later: by the time a
    retry answers, a name may mean a topic created since, which the assignment never gave it
    (simulation seed 1301784, mixed). A JoinGroup's lookup (`ForClassic.join`) tells the core
    the ids, then sends the request (as it is when the lookup failed)."""
    if purpose.join is not None:  # the core learns the ids, then the JoinGroup goes (failed: as is)
        known: list[ev.Event] = [] if failed else [cluster.topics_known()]
        return SessionStep(events=known, to_coordinator=[_call(purpose.join)])
    effect = purpose.effect
    if failed and effect is None:
        log.info("the assigned topics' metadata failed: joining the group again")
        runs.synced(purpose.core_id)
        return SessionStep(
            events=[ev.ClassicResponseReceived(purpose.core_id, ErrorCode.REBALANCE_IN_PROGRESS)]
        )
    if effect is not None:  # the leader assigns with these counts: the exchange keeps them
        step = runs.assign(purpose.core_id, effect, cluster)
        step.events.insert(0, cluster.topics_known())
        return step
    if purpose.check is not None:
        missing = unassigned(purpose.check, cluster.partition_counts)
        gone = assigned_but_gone(purpose.check, cluster.partition_counts)
        if missing or gone:
            log.info(
                "classic group leader: partitions %s are assigned to nobody, %s no longer exist: rebalancing",
                missing[:10],
                gone[:10],
            )
            return SessionStep(
                events=[ev.ClassicResponseReceived(purpose.core_id, ErrorCode.REBALANCE_IN_PROGRESS)]
            )
    return _synced(purpose.core_id, purpose.names, cluster, purpose.user_data, runs)


def _sync(core_id: int, effect: SendClassicRequest, assignments: Mapping[str, bytes]) -> SessionStep:
    assert isinstance(effect.request, SyncGroupRequest)
    request = effect.request.replace(
        assignments=[
            SyncGroupRequestAssignment(member_id=member_id, assignment=data)
            for member_id, data in assignments.items()
        ]
    )
    return SessionStep(to_coordinator=[ClassicCall(core_id, ClassicApi.SYNC, request, effect.timeout_ms)])


def answered(call: ClassicCall, response: Message, cluster: ClusterView, runs: StrategyRuns) -> SessionStep:
    """The coordinator answered `call`."""
    code = ErrorCode.of(getattr(response, "error_code", 0))
    if isinstance(response, JoinGroupResponse):
        members = tuple(ClassicMember(m.member_id, m.group_instance_id, m.metadata) for m in response.members)
        if code is ErrorCode.NONE:
            runs.protocol = response.protocol_name
            runs.skipped = members if response.skip_assignment else None
        event = ev.ClassicResponseReceived(
            call.core_id,
            code,
            member_id=response.member_id,
            generation=response.generation_id,
            protocol_name=response.protocol_name,
            leader_id=response.leader,
            members=members,
            skip_assignment=response.skip_assignment,
        )
        return SessionStep(events=[event])
    if isinstance(response, DescribeGroupsResponse):
        return _described(call.core_id, response, cluster, runs)
    if isinstance(response, SyncGroupResponse) and code is ErrorCode.NONE:
        try:
            names, data = decode_assignment(response.assignment)
        except Exception as exc:
            log.warning("the group leader's assignment does not decode (%s): rejoining", exc)
            return SessionStep(
                events=[ev.ClassicResponseReceived(call.core_id, ErrorCode.REBALANCE_IN_PROGRESS)]
            )
        skipped, runs.skipped = runs.skipped, None
        if skipped is not None and isinstance(call.request, SyncGroupRequest):
            # A static leader back without a rebalance: is the group's assignment still complete
            # (partitions created while no leader watched)? DescribeGroups has every member's.
            runs.checks[call.core_id] = (names, data, skipped)
            describe = DescribeGroupsRequest(groups=[call.request.group_id])
            return SessionStep(to_coordinator=[ClassicCall(call.core_id, ClassicApi.DESCRIBE, describe)])
        if not names:
            return _synced(call.core_id, names, cluster, data, runs)
        # Fresh ids for the names: a topic deleted and created again under its name has a new id.
        topics = tuple(sorted(names))
        purpose = ForClassic(call.core_id, names=names, user_data=data)
        return SessionStep(to_any=[MetadataCall(topics, None, purpose)])
    runs.synced(call.core_id)
    return SessionStep(events=[ev.ClassicResponseReceived(call.core_id, code)])


def unassigned(
    check: tuple[frozenset[str], frozenset[tuple[str, int]]], partition_counts: Mapping[str, int]
) -> list[tuple[str, int]]:
    """The partitions of the members' topics (as they are now) the group's assignment leaves out."""
    topics, covered = check
    return sorted((t, p) for t in topics for p in range(partition_counts.get(t, 0)) if (t, p) not in covered)


def assigned_but_gone(
    check: tuple[frozenset[str], frozenset[tuple[str, int]]], partition_counts: Mapping[str, int]
) -> list[tuple[str, int]]:
    """Partitions of the members' topics the group's assignment gives out that no longer exist
    (the topic was deleted and created again with fewer partitions while the leader was away)."""
    topics, covered = check
    return sorted((t, p) for t, p in covered if t in topics and p >= partition_counts.get(t, 0))


def _described(
    core_id: int, response: DescribeGroupsResponse, cluster: ClusterView, runs: StrategyRuns
) -> SessionStep:
    """The group's members and assignments: fresh metadata for the members' topics next."""
    names, data, members = runs.checks.pop(core_id)
    group = response.groups[0] if response.groups else None
    check = None
    if group is not None and not group.error_code:
        covered = frozenset(
            (topic, p)
            for member in group.members
            for topic, partitions in assigned_partitions(member.member_assignment).items()
            for p in partitions
        )
        check = (frozenset(subscribed_topics(_joined(members))), covered)
    else:
        log.info("classic group leader: DescribeGroups failed (%s): not checked", group and group.error_code)
    topics = tuple(sorted(set(names) | (check[0] if check else frozenset())))
    if not topics:
        return _synced(core_id, names, cluster, data, runs)
    purpose = ForClassic(core_id, names=names, user_data=data, check=check)
    return SessionStep(to_any=[MetadataCall(topics, None, purpose)])


def _synced(
    core_id: int, names: Mapping[str, list[int]], cluster: ClusterView, data: bytes, runs: StrategyRuns
) -> SessionStep:
    assignment: dict[Uuid, tuple[int, ...]] = {}
    for name, partitions in names.items():
        topic_id = cluster.topic_ids.get(name)
        if topic_id is None:
            log.warning("assigned topic %s is unknown to the cluster: left out", name)
            continue
        # A topic created again under its name may have fewer partitions than the one assigned.
        count = cluster.partition_counts.get(name, 0)
        assignment[topic_id] = tuple(p for p in partitions if p < count)
    return SessionStep(
        events=[
            cluster.topics_known(),
            ev.ClassicResponseReceived(
                core_id, assignment=assignment, user_data=data, held_back=runs.synced(core_id)
            ),
        ]
    )


def _joined(members: tuple[ClassicMember, ...]) -> list[tuple[str, str | None, bytes]]:
    return [(m.member_id, m.instance_id, m.metadata) for m in members]


__all__ = [
    "SessionStep",
    "StrategyRuns",
    "answered",
    "assigned_but_gone",
    "metadata_learnt",
    "start",
    "unassigned",
]
