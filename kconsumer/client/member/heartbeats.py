"""The member's side of the heartbeat exchange: when the next heartbeat is due, what it carries, and
what its answer means. A part of `MemberCore` (it holds no reference to the core): the core asks it
for the next request with what the member looks like now, and acts on its `Verdict`.

* `schedule` decides when a heartbeat is due (interval, urgency, backoff; one in flight at most).
* `heartbeat.HeartbeatBuilder` puts in only what changed since the last acknowledged request.
* An answer to anything but the heartbeat in flight is late, duplicated or abandoned: ignored.
  Any answer to the leave heartbeat ends the leave; otherwise the answer is `Accepted` (no error)
  or `Rejected` (an error code, or no response at all), which the core turns into a fence, a fatal
  error, a coordinator rediscovery or a reported error through the error table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ...errors import ErrorCode, KafkaApiError
from ...protocol.messages.consumer_group import ConsumerGroupHeartbeatResponse
from ...protocol.uuid import Uuid
from .backoff import ExponentialBackoff
from .effects import RefreshMetadata, SendHeartbeat
from .errors import ErrorRule, HeartbeatAction, heartbeat_error, heartbeat_rule
from .events import ClassicResponseReceived, HeartbeatFailed, HeartbeatResponseReceived
from .grid import HeartbeatGrid
from .heartbeat_request import REGEX_VERSION, HeartbeatBuilder
from .model import AssignmentMetadata, ClientAssignor, Ids, MemberConfig, Subscription, TopicIdPartition
from .schedule import HeartbeatSchedule


@dataclass(frozen=True)
class Accepted:
    """The heartbeat in flight was answered without error."""

    response: ConsumerGroupHeartbeatResponse

    @property
    def member_id(self) -> str:
        """The member id the coordinator answered with."""
        return self.response.member_id or ""

    @property
    def member_epoch(self) -> int:
        """The member's epoch."""
        return self.response.member_epoch

    @property
    def should_compute_assignment(self) -> bool:
        """The coordinator asks this member to run the client-side assignment."""
        return bool(self.response.should_compute_assignment)

    @property
    def target(self) -> dict[Uuid, list[int]] | None:
        """The member's new target by topic id (None: the response carries none)."""
        assignment = self.response.assignment
        if assignment is None:
            return None
        return {tp.topic_id: tp.partitions for tp in assignment.topic_partitions}

    @property
    def assignment_metadata(self) -> AssignmentMetadata | None:
        """What the client-side assignor computed for this member (tag 10001), if sent."""
        meta = self.response.assignment_metadata
        if meta is None:
            return None
        return AssignmentMetadata(meta.error, meta.metadata_version, meta.metadata_bytes)

    @property
    def pending(self) -> dict[Uuid, list[int]]:
        """Target partitions not yet released by their previous owners (tag 10002)."""
        return {tp.topic_id: tp.partitions for tp in self.response.pending_topic_partitions or ()}


@dataclass(frozen=True)
class Rejected:
    """The heartbeat in flight failed: an error code, or no response (`code` says which)."""

    code: ErrorCode
    message: str | None
    epoch_sent: int
    retry: bool = False
    """Send again after the backoff whatever the table says (a classic Heartbeat's error)."""

    @property
    def rule(self) -> ErrorRule:
        """What the error table says to do."""
        return ErrorRule(HeartbeatAction.RETRY) if self.retry else heartbeat_rule(self.code, self.epoch_sent)

    def error(self, config: MemberConfig, subscription: Subscription | None) -> KafkaApiError:
        """The exception the application sees, worded by the rule's advice."""
        return heartbeat_error(
            self.code,
            self.rule,
            coordinator_message=self.message,
            group=config.group_id,
            instance_id=config.instance_id,
            assignor=config.server_assignor,
            pattern=None if subscription is None else subscription.pattern,
        )


@dataclass(frozen=True)
class LeaveAnswered:
    """The leave heartbeat got an answer (whatever it was) or failed: the leave is over."""


#: What an answer means; None for an answer to nothing in flight.
Verdict = Accepted | Rejected | LeaveAnswered


class HeartbeatExchange:
    """Timing, contents and answers of the member's heartbeats."""

    def __init__(self, config: MemberConfig, backoff: ExponentialBackoff, ids: Ids) -> None:
        """`ids` is the core's id source (request ids are unique across all the core's effects)."""
        self._ids = ids
        self._builder = HeartbeatBuilder(config)
        grid = HeartbeatGrid(config.group_id) if config.align_heartbeats else None
        self.schedule = HeartbeatSchedule(backoff, grid)
        #: The ConsumerGroupHeartbeat version the coordinator speaks (assumed 1 until told).
        self.version = REGEX_VERSION
        #: Something changed that the coordinator must hear about at once (subscription, metadata).
        self.urgent = False
        #: The subscription the last heartbeat carried (what the coordinator knows).
        self.announced: Subscription | None = None

    @property
    def adopts_member_id(self) -> bool:
        """With heartbeat v0 the coordinator chooses the member id; from v1 the member does."""
        return self.version < REGEX_VERSION

    def due_at(self, urgent: bool) -> int | None:
        """When the next heartbeat may go (`urgent`: at once, backoff allowing), None while one
        is in flight. The urgency of a change (`self.urgent`) is the caller's to weigh: it only
        counts while the member is in the group."""
        return self.schedule.due_at(urgent)

    def send(
        self,
        now_ms: int,
        member_id: str,
        member_epoch: int,
        subscription: Subscription | None,
        owned: Iterable[TopicIdPartition],
        client_assignors: tuple[ClientAssignor, ...],
    ) -> SendHeartbeat:
        """The next heartbeat, recorded as in flight. Without a `subscription` (the member is not
        in the group) it repeats the last one announced."""
        subscription = subscription or self.announced or Subscription()
        request = self._builder.build(
            member_id=member_id,
            member_epoch=member_epoch,
            subscription=subscription,
            owned=owned,
            client_assignors=client_assignors,
            version=self.version,
        )
        self.announced = subscription
        self.urgent = False
        return self._sent(now_ms, SendHeartbeat(0, request, self.version))

    def send_leave(self, now_ms: int, *, member_id: str, member_epoch: int) -> SendHeartbeat:
        """The leave heartbeat (epoch -1 or -2), recorded as in flight."""
        request = self._builder.build_leave(member_id=member_id, member_epoch=member_epoch)
        return self._sent(now_ms, SendHeartbeat(0, request, self.version, leave=True))

    def _sent(self, now_ms: int, template: SendHeartbeat) -> SendHeartbeat:
        request_id = self._ids.next()
        self.schedule.sent(request_id, now_ms, template.request.member_epoch, leave=template.leave)
        return SendHeartbeat(request_id, template.request, template.version, template.leave)

    def answer(
        self, event: HeartbeatResponseReceived | ClassicResponseReceived | HeartbeatFailed, now_ms: int
    ) -> Verdict | None:
        """What an answer means (None: not the heartbeat in flight). A leave's answer and an
        accepted heartbeat update the schedule here; a rejection waits for `rejected`."""
        schedule = self.schedule
        if event.request_id != schedule.in_flight or isinstance(event, ClassicResponseReceived):
            return None
        if isinstance(event, HeartbeatResponseReceived):
            response = event.response
            code = ErrorCode.of(response.error_code)
            message = response.error_message
        else:
            response = None
            code, message = event.error, event.message
        if schedule.in_flight_leave:
            if response is not None and code is ErrorCode.NONE:
                schedule.succeeded(response.heartbeat_interval_ms)
            else:
                schedule.failed(now_ms)
            return LeaveAnswered()
        if response is not None and code is ErrorCode.NONE:
            # A new epoch or an assignment: the group is changing (a join's answer always counts,
            # whatever it holds: the schedule knows which heartbeat was a join).
            news = response.member_epoch != schedule.in_flight_epoch or response.assignment is not None
            schedule.succeeded(response.heartbeat_interval_ms, now_ms, news, response.member_epoch)
            return Accepted(response)
        return Rejected(code, message, schedule.in_flight_epoch)

    def timers(self, now_ms: int, subscription: Subscription | None) -> list[RefreshMetadata]:
        """Nothing: the coordinator follows the topics' metadata itself."""
        return []

    def next_refresh(self, in_group: bool) -> int | None:
        """None: no refresh of its own."""
        return None

    def learn_metadata(self, names: Mapping[Uuid, str], partition_counts: Mapping[str, int]) -> None:
        """Nothing to do: the coordinator follows the topics' metadata itself."""

    def full_next(self) -> None:
        """Make the next request full (after (re)joining)."""
        self._builder.reset()

    def rejected(self, now_ms: int, *, backoff: bool) -> None:
        """After a rejection: the next request is full, and waits for the backoff unless `backoff`
        is False (fenced: rejoin at once)."""
        self._builder.reset()
        if backoff:
            self.schedule.failed(now_ms)
        else:
            self.schedule.failed_no_backoff()
