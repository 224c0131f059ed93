"""The coordinator side of the simulation: the real `GroupCoordinator` on one of three brokers,
its timers, failover, and the broker-level answers (NOT_COORDINATOR, loading, election).

Failover: the coordinator's broker crashes (its connections drop and it refuses new ones for a
while) or loses leadership (it answers NOT_COORDINATOR). After an election delay, a fresh
`GroupCoordinator.replaying(log)` on another broker takes over; it loads for a short while
(COORDINATOR_LOAD_IN_PROGRESS), then serves. Clients find it again through FindCoordinator.
Every record a handler returns is already committed when its response leaves, so the new
coordinator's state is the old one's.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...assignment.classic_leader import assigned_partitions
from ...broker.coordinator import CoordinatorConfig, GroupCoordinator, MetadataImage
from ...broker.coordinator.classic.api import CLASSIC_APIS
from ...broker.coordinator.classic.model import ClassicGroup
from ...broker.coordinator.model import ConsumerGroup
from ...broker.coordinator.records import Record
from ...broker.server.error_responses import error_response
from ...broker.server.nodes import ClusterNodes
from ...errors import ErrorCode
from ...protocol.messages.consumer_group import ConsumerGroupHeartbeatRequest
from ...protocol.messages.extensions import (
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupPrepareAssignmentRequest,
)
from ...protocol.messages.offsets import OffsetCommitRequest, OffsetFetchRequest
from ...protocol.messages.transactions import TxnOffsetCommitRequest
from ...protocol.uuid import Uuid
from .brokers import BROKERS, answer, is_cluster_request
from .scheduler import Scheduler
from .topics import TopicStore
from .trace import Trace

if TYPE_CHECKING:
    from .invariants import Checker

GROUP = "g"
#: Short names of the group requests, as the checker and the trace know them.
_KINDS = {
    ConsumerGroupHeartbeatRequest: "hb",
    OffsetCommitRequest: "commit",
    OffsetFetchRequest: "fetch",
    TxnOffsetCommitRequest: "txn",
    ConsumerGroupPrepareAssignmentRequest: "prepare",
    ConsumerGroupInstallAssignmentRequest: "install",
}


def request_kind(request: Any) -> str:
    """The short name of a request ("hb", "commit", ...; cluster requests by their API name)."""
    return _KINDS.get(type(request), type(request).__name__.removesuffix("Request"))


class CoordinatorHost:
    """Runs the group coordinator on a broker; see the module docstring."""

    def __init__(
        self,
        sched: Scheduler,
        trace: Trace,
        rng: random.Random,
        config: CoordinatorConfig,
        topics: TopicStore,
    ) -> None:
        self.sched = sched
        self.trace = trace
        self.rng = rng
        self.config = config
        self.topics = topics
        # Member ids the coordinator makes up (classic joins) stay unique across failovers, as a
        # server's random ones are.
        ids = itertools.count(1)
        self._new_member_id = lambda: str(Uuid.from_int(next(ids)))
        self.coordinator: GroupCoordinator | None = GroupCoordinator(
            config, new_member_id=self._new_member_id
        )
        self.coordinator.update_metadata(topics.image(), sched.now)
        #: The last coordinator that served (its state stays readable during an election).
        self.last: GroupCoordinator = self.coordinator
        # Kafka's placement, shared with the reference cluster (broker indexes here count from 0).
        self.broker = ClusterNodes(range(1, BROKERS + 1), "").coordinator_of(GROUP) - 1
        self.down: set[int] = set()
        self.loading_until = 0
        self.failovers = 0
        self.checker: Checker | None = None
        #: Called when a broker crashes (the network drops its connections).
        self.on_broker_crash: Callable[[int], None] | None = None
        self._timer_gen = 0
        self._armed_at: int | None = None
        #: Deferred classic answers, by ticket.
        self._waiting: dict[int, Callable[[Any], None]] = {}
        self._early: dict[int, Any] = {}
        self._arm()

    # -- views ------------------------------------------------------------------------------------

    def group(self) -> ConsumerGroup | None:
        """The group as the newest coordinator knows it, while it is a consumer group."""
        return self.last.group(GROUP)

    def classic_group(self) -> ClassicGroup | None:
        """The group as the newest coordinator knows it, while it is a classic group."""
        return self.last.state.classic_groups.get(GROUP)

    def member_ids(self) -> frozenset[str]:
        """Ids of the members of the group (either kind), as the newest coordinator knows them."""
        group = self.group()
        if group is not None:
            return frozenset(group.members)
        classic = self.classic_group()
        return frozenset(classic.members) if classic is not None else frozenset()

    @property
    def tracks_ownership(self) -> bool:
        """Whether the coordinator knows who owns each partition: a consumer group does (the
        target and current assignments, revocations acknowledged); a classic group does not (its
        members give partitions up before rejoining, the coordinator only relays assignments)."""
        return self.classic_group() is None

    def owner_of(self, key: tuple[Uuid, int]) -> str | None:
        """The member holding a partition (assigned or pending revocation) on the coordinator."""
        group = self.group()
        return None if group is None else group.owner_of(key[0], key[1])

    def assignments(self) -> dict[str, set[tuple[Uuid, int]]]:
        """Each member's assignment: its target in a consumer group, its last SyncGroup
        assignment in a classic group."""
        group = self.group()
        if group is not None:
            return {
                member_id: {
                    (t, p) for t, parts in group.target_of(member_id).partitions.items() for p in parts
                }
                for member_id in group.members
            }
        classic = self.classic_group()
        if classic is None:
            return {}
        ids = {topic.name: topic.topic_id for topic in self.topics.live.values()}
        return {
            member_id: {
                (ids[name], p)
                for name, parts in assigned_partitions(member.assignment).items()
                if name in ids
                for p in parts
            }
            for member_id, member in classic.members.items()
        }

    @property
    def serving(self) -> bool:
        """A coordinator is elected and loaded."""
        return self.coordinator is not None and self.sched.now >= self.loading_until

    # -- requests ---------------------------------------------------------------------------------

    def find_coordinator(self) -> int | ErrorCode:
        """The coordinator's broker, or COORDINATOR_NOT_AVAILABLE during an election."""
        return self.broker if self.coordinator is not None else ErrorCode.COORDINATOR_NOT_AVAILABLE

    def serve(self, broker: int, request: Any, version: int, sender: str, client_id: str = "") -> Any:
        """The answer of `broker` to `request` (at `version`): cluster requests from any broker,
        group requests from the coordinator's broker (NOT_COORDINATOR elsewhere, and
        COORDINATOR_LOAD_IN_PROGRESS while it loads). `sender` is the member id of the process
        sending, `client_id` its client id (a classic member's id starts with it)."""
        if is_cluster_request(request):
            return answer(request, version, self.topics, self.find_coordinator())
        now = self.sched.now
        coordinator = self.coordinator
        if coordinator is None or broker != self.broker:
            return error_response(request, version, ErrorCode.NOT_COORDINATOR)
        if now < self.loading_until:
            return error_response(request, version, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        # Timers due now fire first (the real broker's timer would have run already).
        self._poll(now)
        kind = request_kind(request)
        result: Any
        if isinstance(request, ConsumerGroupHeartbeatRequest):
            result = coordinator.heartbeat(request, version, now, sender)
        elif isinstance(request, OffsetCommitRequest):
            result = coordinator.offset_commit(request, version, now)
        elif isinstance(request, OffsetFetchRequest):
            result = coordinator.offset_fetch(request, version, now)
        elif isinstance(request, TxnOffsetCommitRequest):
            result = coordinator.txn_offset_commit(request, version, now)
        elif isinstance(request, ConsumerGroupPrepareAssignmentRequest):
            result = coordinator.prepare_assignment(request, version, now)
        elif isinstance(request, ConsumerGroupInstallAssignmentRequest):
            result = coordinator.install_assignment(request, version, now)
        elif request.API_KEY in CLASSIC_APIS:
            result = coordinator.classic(request, version, now, client_id=client_id or sender)
        else:  # pragma: no cover - the session sends only these to the coordinator
            raise ValueError(f"unexpected request {type(request).__name__}")
        # The deferred answers first: a classic member is in the new generation from the moment
        # its JoinGroup is answered, before the checker looks.
        self._answer_waiting(coordinator.take_replies())
        self._after(result.records, kind, sender)
        self._arm()
        return result.response

    def when_answered(self, ticket: int, respond: Callable[[Any], None]) -> None:
        """Call `respond` with the answer of the deferred request `ticket` when it comes (at
        once if it came during the very call that deferred it)."""
        early = self._early.pop(ticket, None)
        if early is not None:
            respond(early)
        else:
            self._waiting[ticket] = respond

    def _answer_waiting(self, replies: list[tuple[int, Any]]) -> None:
        for ticket, response in replies:
            respond = self._waiting.pop(ticket, None)
            if respond is not None:
                respond(response)
            else:
                self._early[ticket] = response

    def complete_transaction(
        self, producer_id: int, committed: bool, sender: str, written: Callable[[], None] | None = None
    ) -> None:
        """A transaction marker reaches the group: the producer's pending offsets are committed or
        dropped (during an election, once a coordinator serves again: the markers are retried);
        `written` is called once it is."""
        coordinator = self.coordinator
        if coordinator is None or self.sched.now < self.loading_until:
            retry = max(self.loading_until, self.sched.now) + 100
            self.sched.at(retry, self.complete_transaction, producer_id, committed, sender, written)
            return
        records = coordinator.complete_transaction(GROUP, producer_id, committed, self.sched.now)
        self._after(records, "txn-end", sender)
        self._arm()
        if written is not None:
            written()

    def _after(self, records: list[Record], kind: str, sender: str) -> None:
        if self.checker is not None:
            self.checker.after_coordinator_step(records, kind, sender)

    # -- timers and metadata ------------------------------------------------------------------------

    def _arm(self) -> None:
        coordinator = self.coordinator
        deadline = None if coordinator is None else coordinator.next_deadline()
        if deadline is not None:
            deadline = max(deadline, self.loading_until)
        if deadline is not None and deadline == self._armed_at:
            return  # that timer is still pending
        self._timer_gen += 1
        self._armed_at = deadline
        if deadline is not None:
            self.sched.at(deadline, self._timer, self._timer_gen)

    def _timer(self, generation: int) -> None:
        if generation != self._timer_gen or self.coordinator is None:
            return
        self._armed_at = None
        self._poll(self.sched.now)
        self._arm()

    def _poll(self, now: int) -> None:
        coordinator = self.coordinator
        assert coordinator is not None
        if now < self.loading_until:
            return
        records = coordinator.poll(now)
        if records:
            self.trace.log(now, "coord", f"timers fired: {_summary(records)}")
        self._answer_waiting(coordinator.take_replies())
        if records:
            self._after(records, "timer", "")

    def publish_metadata(self) -> None:
        """The topics changed: the coordinator gets the new image (during an election, the new
        coordinator gets it when it takes over)."""
        coordinator = self.coordinator
        if coordinator is None:
            return
        records = coordinator.update_metadata(self.topics.image(), self.sched.now)
        if records:
            self.trace.log(self.sched.now, "coord", f"metadata v{self.topics.version}: {_summary(records)}")
        self._after(records, "metadata", "")
        self._answer_waiting(coordinator.take_replies())
        self._arm()

    # -- failover ---------------------------------------------------------------------------------

    def failover(self, crash: bool) -> None:
        """Start a failover; the new coordinator takes over after an election delay."""
        old = self.coordinator
        if old is None:
            return  # an election is already under way
        self.failovers += 1
        old_broker = self.broker
        self._answer_waiting(old.abandon_replies())
        self.coordinator = None
        self._timer_gen += 1
        self._armed_at = None
        election = self.rng.randint(0, 1_500)
        load = self.rng.randint(0, 800)
        candidates = [b for b in range(BROKERS) if b != old_broker and b not in self.down]
        new_broker = candidates[self.rng.randrange(len(candidates))] if candidates else old_broker
        self.trace.log(
            self.sched.now,
            "fault",
            f"coordinator failover ({'crash' if crash else 'leader move'}) broker {old_broker} -> "
            f"{new_broker} election={election} load={load}",
        )
        if crash:
            self.down.add(old_broker)
            if self.on_broker_crash is not None:
                self.on_broker_crash(old_broker)
            self.sched.after(election + self.rng.randint(500, 3_000), self._broker_up, old_broker)
        self.sched.after(election, self._take_over, old, new_broker, load)

    def _broker_up(self, broker: int) -> None:
        self.down.discard(broker)
        self.trace.log(self.sched.now, "fault", f"broker {broker} up again")

    def _take_over(self, old: GroupCoordinator, broker: int, load: int) -> None:
        now = self.sched.now
        assert old.log is not None
        new = GroupCoordinator.replaying(
            list(old.log), now, self.config, old.image, new_member_id=self._new_member_id
        )
        if self.checker is not None:
            self.checker.after_failover(old, new)
        self.coordinator = self.last = new
        self.broker = broker
        self.loading_until = now + load
        self.trace.log(now, "coord", f"new coordinator on broker {broker} (replayed {len(old.log)} records)")
        if new.image.version != self.topics.version:
            self.publish_metadata()
        self._arm()

    def end_faults(self) -> None:
        """Quiet phase: crashed brokers come back (an election under way still completes)."""
        for broker in sorted(self.down):
            self._broker_up(broker)


def _summary(records: list[Record]) -> str:
    """Record type names with counts, in first-seen order."""
    counts: dict[str, int] = {}
    for record in records:
        name = type(record).__name__.replace("Record", "").replace("Tombstone", "-")
        counts[name] = counts.get(name, 0) + 1
    return " ".join(f"{name}x{n}" if n > 1 else name for name, n in counts.items())


def coordinator_config(session_ms: int, heartbeat_ms: int, assignment_interval_ms: int) -> CoordinatorConfig:
    """The coordinator configuration of a seed."""
    return CoordinatorConfig(
        session_timeout_ms=session_ms,
        heartbeat_interval_ms=heartbeat_ms,
        assignment_interval_ms=assignment_interval_ms,
        # Classic members use the seed's session timeout too (3-6 s), and join in seconds.
        classic_min_session_timeout_ms=1_000,
        classic_initial_rebalance_delay_ms=500,
    )


__all__ = ["BROKERS", "GROUP", "CoordinatorHost", "MetadataImage", "coordinator_config"]
