"""Sending heartbeats and handling their answers: the member core's half of the exchange with the
group coordinator (`MemberCore` inherits it).

When a heartbeat is due (`schedule`), the request is built with only the changed fields
(`heartbeat`); a leave sends the leave epoch. An answer either carries the member's epoch and,
when it changed, its assignment (handed to the reconciler), or an error that the error table
(`errors.heartbeat_rule`) turns into a fence, a fatal error, a coordinator rediscovery or a
reported error, always after a backoff except for fencing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import ErrorCode, KConsumerError
from ...protocol.messages.consumer_group import ConsumerGroupHeartbeatResponse
from .effects import Effect, FindCoordinator, ReportError, SendHeartbeat
from .errors import HeartbeatAction, heartbeat_error, heartbeat_rule
from .events import HeartbeatFailed, HeartbeatResponseReceived
from .heartbeat import REGEX_VERSION
from .leaving import leave_epoch
from .model import AssignmentMetadata, Subscription, TopicIdPartition
from .state import HEARTBEATING, IN_GROUP, MemberState

if TYPE_CHECKING:
    from .assignors import ClientAssignorHooks
    from .commits import CommitManager, Ids, Membership
    from .heartbeat import HeartbeatBuilder
    from .leaving import Leave
    from .model import MemberConfig
    from .reconciler import Progress, Reconciler
    from .schedule import HeartbeatSchedule

S = MemberState


class HeartbeatExchange:
    """The heartbeat half of `MemberCore` (a mixin: it uses the core's state and methods)."""

    if TYPE_CHECKING:
        config: MemberConfig
        _state: MemberState
        _now: int
        _epoch: int
        _member_id: str
        _urgent: bool
        _closing: bool
        _hb_version: int
        _subscription: Subscription | None
        _announced: Subscription | None
        _leave: Leave | None
        _out: list[Effect]
        _ids: Ids
        _builder: HeartbeatBuilder
        _schedule: HeartbeatSchedule
        _commits: CommitManager
        _assignors: ClientAssignorHooks
        _recon: Reconciler

        def _to(self, state: MemberState) -> None: ...
        def _membership(self) -> Membership: ...
        def _progress(self, progress: Progress | None) -> None: ...
        def _reconcile(self) -> None: ...
        def _fence(self, previous: MemberState) -> None: ...
        def _fail(self, error: KConsumerError) -> None: ...
        def _finish_leave(self) -> None: ...

    def _heartbeat_urgent(self) -> bool:
        state = self._state
        return state in (S.JOINING, S.ACKNOWLEDGING, S.LEAVING) or (self._urgent and state in IN_GROUP)

    def _heartbeating(self) -> bool:
        """Whether the member sends heartbeats now: not once it was fenced while preparing to leave
        (it is out of the group; the leave only finishes its stop and callback)."""
        leave = self._leave
        return self._state in HEARTBEATING and not (leave is not None and leave.fenced)

    def _reported(self) -> frozenset[TopicIdPartition]:
        """The TopicPartitions a heartbeat reports: what the member owns or may still start fetching
        (`Reconciler.reported`) and, while preparing to leave, the partitions the application has
        not yet been told it gave up (assigned ones of an interrupted step included)."""
        reported = self._recon.reported
        if self._leave is not None:
            reported = reported | frozenset(self._leave.release.callback)
        return reported

    def _maybe_heartbeat(self) -> None:
        state = self._state
        schedule = self._schedule
        if not self._heartbeating() or schedule.in_flight is not None:
            return
        if state is S.LEAVING:
            self._send_leave()
            return
        due = schedule.due_at(self._heartbeat_urgent())
        if due is None or self._now < due:
            return
        subscription = self._subscription if state in IN_GROUP else self._announced
        if subscription is None:
            subscription = self._announced or Subscription()
        request = self._builder.build(
            member_id=self._member_id,
            member_epoch=self._epoch,
            subscription=subscription,
            owned=self._reported(),
            client_assignors=self._assignors.announced,
            version=self._hb_version,
        )
        self._announced = subscription
        request_id = self._ids.next()
        schedule.sent(request_id, self._now, self._epoch, leave=False)
        self._assignors.on_heartbeat_sent(request.client_assignors is not None)
        self._urgent = False
        self._out.append(SendHeartbeat(request_id, request, self._hb_version))
        if state is S.ACKNOWLEDGING:
            self._to(S.RECONCILING)
            self._progress(self._recon.advance())

    def _send_leave(self) -> None:
        leave = self._leave
        assert leave is not None
        epoch = leave_epoch(leave.reason, self.config.static, self._closing)
        request = self._builder.build_leave(member_id=self._member_id, member_epoch=epoch)
        request_id = self._ids.next()
        self._schedule.sent(request_id, self._now, epoch, leave=True)
        self._epoch = epoch
        self._out.append(SendHeartbeat(request_id, request, self._hb_version, leave=True))

    def _on_heartbeat_ok(self, response: ConsumerGroupHeartbeatResponse) -> None:
        self._schedule.succeeded(response.heartbeat_interval_ms)
        state = self._state
        if state is S.LEAVING:
            return  # the leave heartbeat goes next
        if self._hb_version < REGEX_VERSION and response.member_id:
            self._member_id = response.member_id
        self._epoch = response.member_epoch
        member = self._membership()
        self._commits.on_heartbeat_success(member, self._out)
        should_compute = response.should_compute_assignment and state in IN_GROUP
        self._assignors.on_heartbeat_success(self._epoch, should_compute, self._out)
        if state not in IN_GROUP:
            return
        assignment = response.assignment
        if assignment is None and state is not S.JOINING:
            return
        partitions = (
            {} if assignment is None else {tp.topic_id: tp.partitions for tp in assignment.topic_partitions}
        )
        meta = response.assignment_metadata
        metadata = (
            None
            if meta is None
            else AssignmentMetadata(meta.error, meta.metadata_version, meta.metadata_bytes)
        )
        pending = {tp.topic_id: tp.partitions for tp in response.pending_topic_partitions or ()}
        self._recon.receive(partitions, metadata, self._epoch, pending)
        if state is not S.ACKNOWLEDGING:
            self._reconcile()

    def _on_heartbeat_error(self, code: ErrorCode, message: str | None, epoch_sent: int) -> None:
        previous = self._state
        self._builder.reset()
        self._assignors.on_heartbeat_failed()
        rule = heartbeat_rule(code, epoch_sent)
        action = rule.action
        if action is HeartbeatAction.FENCE:
            if previous is S.JOINING:
                self._schedule.failed(self._now)  # fenced again while joining: back off
            else:
                self._schedule.failed_no_backoff()
            self._fence(previous)
            return
        self._schedule.failed(self._now)
        sub = self._subscription or self._announced
        error = heartbeat_error(
            code,
            rule,
            coordinator_message=message,
            group=self.config.group_id,
            instance_id=self.config.instance_id,
            assignor=self.config.server_assignor,
            pattern=None if sub is None else sub.pattern,
        )
        if action is HeartbeatAction.FATAL:
            self._fail(error)
        elif action is HeartbeatAction.FIND_COORDINATOR:
            self._out.append(FindCoordinator(f"ConsumerGroupHeartbeat failed with {code.name}"))
        elif action is HeartbeatAction.REPORT:
            self._out.append(ReportError(error, fatal=False))

    def _on_heartbeat_response(self, event: HeartbeatResponseReceived) -> None:
        schedule = self._schedule
        if event.request_id != schedule.in_flight:
            return  # late, duplicated, or abandoned
        response = event.response
        code = ErrorCode.of(response.error_code)
        if schedule.in_flight_leave:
            # Any answer ends the leave (GROUP_ID_NOT_FOUND or UNKNOWN_MEMBER_ID included).
            if code is ErrorCode.NONE:
                schedule.succeeded(response.heartbeat_interval_ms)
            else:
                schedule.failed(self._now)
            self._finish_leave()
        elif code is ErrorCode.NONE:
            self._on_heartbeat_ok(response)
        else:
            self._on_heartbeat_error(code, response.error_message, schedule.in_flight_epoch)

    def _on_heartbeat_failed(self, event: HeartbeatFailed) -> None:
        schedule = self._schedule
        if event.request_id != schedule.in_flight:
            return
        if schedule.in_flight_leave:
            schedule.failed(self._now)
            self._finish_leave()
            return
        self._on_heartbeat_error(event.error, event.message, schedule.in_flight_epoch)
