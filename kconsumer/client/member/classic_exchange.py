"""The member's side of the classic group protocol (``group.protocol=classic``): JoinGroup,
SyncGroup, Heartbeat and LeaveGroup, as Kafka's classic consumer runs them (seed 004; KIP-429 for
the cooperative strategies).

It takes the place of `heartbeats.HeartbeatExchange` in `MemberCore` and answers it the same way:
the core asks it for "the next request" and acts on its verdicts. From the core's point of view a
rebalance is one long heartbeat: JoinGroup, then SyncGroup, answered by an `Accepted` that carries
the new target assignment (by topic id) and the generation as the member epoch; commits carry that
generation.

The conversation has three phases, in one table (`ALLOWED_PREDECESSORS`):

* JOIN: the next request is a JoinGroup. It goes only once the member owns nothing but `keep`:
  with an eager strategy nothing at all (every partition is revoked before joining), with a
  cooperative one the partitions it still owns and may keep. Until then `send` answers
  `ReleaseBeforeJoin` and the core revokes the rest through its ordinary reconciliation.
* SYNC: joined; the next request is the SyncGroup (the leader's carries every member's
  assignment, which the session computes).
* STABLE: heartbeats every ``heartbeat.interval.ms``. REBALANCE_IN_PROGRESS, a changed
  subscription or (cooperative) partitions revoked by the last assignment send it back to JOIN.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ...assignment.assignor import partitions_by_topic
from ...assignment.classic_leader import subscribed_topics
from ...errors import ErrorCode
from ...patterns import searched_topics
from ...protocol.consumer_protocol import (
    ConsumerSubscription,
    ConsumerTopicPartitions,
    encode_consumer_protocol,
)
from ...protocol.messages.classic_group import (
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    LeaveGroupRequest,
    MemberIdentity,
    SyncGroupRequest,
)
from ...protocol.schema import Message
from ...protocol.uuid import Uuid
from .backoff import ExponentialBackoff
from .effects import ClassicApi, RefreshMetadata, SendClassicRequest
from .errors import COORDINATOR_ERRORS
from .events import ClassicResponseReceived, HeartbeatFailed, HeartbeatResponseReceived
from .heartbeat_request import REGEX_VERSION
from .heartbeats import LeaveAnswered, Rejected, Verdict
from .model import (
    AssignmentMetadata,
    ClassicMember,
    ClassicSettings,
    ClientAssignor,
    Ids,
    MemberConfig,
    Subscription,
    TopicIdPartition,
)
from .schedule import HeartbeatSchedule
from .transitions import TransitionTable

#: What a waiting JoinGroup or SyncGroup is given on top of the rebalance timeout.
_JOIN_GRACE_MS = 5_000

#: The Heartbeat errors a classic member acts on; after any other it heartbeats again (backoff).
_HEARTBEAT_ACTS_ON = COORDINATOR_ERRORS | {
    ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.ILLEGAL_GENERATION,
    ErrorCode.UNKNOWN_MEMBER_ID,
    ErrorCode.FENCED_INSTANCE_ID,
}
#: The protocol type of consumer groups in JoinGroup.
CONSUMER_PROTOCOL_TYPE = "consumer"

log = logging.getLogger("kconsumer")


class ClassicPhase(enum.Enum):
    """Where the member stands in the classic rebalance conversation (module docstring)."""

    JOIN = "join"
    SYNC = "sync"
    STABLE = "stable"


P = ClassicPhase

#: Allowed predecessors of every phase (staying is always allowed).
ALLOWED_PREDECESSORS: Mapping[ClassicPhase, frozenset[ClassicPhase]] = {
    P.JOIN: frozenset({P.SYNC, P.STABLE}),
    P.SYNC: frozenset({P.JOIN}),
    P.STABLE: frozenset({P.SYNC}),
}
#: The conversation's table: every change of phase goes through it (`_to`).
PHASE_TRANSITIONS = TransitionTable("classic phase", ALLOWED_PREDECESSORS)


@dataclass(frozen=True)
class ClassicAccepted:
    """A classic answer that moves the member on: a SyncGroup's assignment (`target`), or a
    Heartbeat without error (`target` None). The same reading as `heartbeats.Accepted`."""

    member_id: str
    member_epoch: int
    target: dict[Uuid, list[int]] | None = None
    assignment_metadata: AssignmentMetadata | None = None
    pending: dict[Uuid, list[int]] = field(default_factory=dict)
    should_compute_assignment: bool = False


@dataclass(frozen=True)
class ReleaseBeforeJoin:
    """The member must give up everything but `keep` (by topic id) before it may join."""

    keep: dict[Uuid, list[int]]


class ClassicExchange:
    """Timing, contents and answers of the member's classic group requests."""

    def __init__(self, config: MemberConfig, backoff: ExponentialBackoff, ids: Ids) -> None:
        assert config.classic is not None
        self._config = config
        self._settings: ClassicSettings = config.classic
        self._ids = ids
        self.schedule = HeartbeatSchedule(backoff)
        #: The core checks features by heartbeat version: everything the classic path offers.
        self.version = REGEX_VERSION
        #: The member takes the id the coordinator gives it.
        self.adopts_member_id = True
        #: The subscription the last JoinGroup carried.
        self.announced: Subscription | None = None
        self.phase = P.JOIN
        self.member_id = ""
        self.generation = -1
        #: What the member may still own when it joins, by (topic id, partition); None: whatever
        #: it owns of its subscribed topics then (cooperative only).
        self._keep: frozenset[tuple[Uuid, int]] | None = frozenset()
        self._joined_with: frozenset[TopicIdPartition] = frozenset()
        #: What the member was asked to keep when it was asked to release the rest before
        #: joining (None: not asked).
        self._release_asked: frozenset[tuple[Uuid, int]] | None = None
        #: As the leader: since when (None: not yet seen) the generation whose assignment held
        #: partitions back (`held_back`) is still the group's, when it did.
        self._held_back: tuple[int, int | None] | None = None
        #: The generation of the last assignment naming topics the member did not subscribe to,
        #: and whether the one before was of the same generation (then it rejoins after a backoff:
        #: the coordinator did not rebalance for its rejoin).
        self._unsubscribed_at: int | None = None
        self._same_unsubscribed_again = False
        self._protocol = ""
        self._members: tuple[ClassicMember, ...] = ()
        self._in_flight: ClassicApi | None = None
        self._changed = False
        self._refreshed_at: int | None = None
        #: The subscribed topics' (id, partition count) when the last assignment arrived.
        self._synced_view: dict[str, tuple[Uuid | None, int | None]] | None = None
        #: A pattern subscription's matches: the topics that exist (None: not known yet).
        self._existing: frozenset[str] | None = None
        self._pattern: str | None = None
        #: Topic names by id as last learnt, and the ids by name the last JoinGroup went with.
        self._names: dict[Uuid, str] = {}
        self._ids_at_join: dict[str, Uuid] = {}

    # -- the phase ------------------------------------------------------------------------------

    def _to(self, phase: ClassicPhase) -> None:
        self.phase = PHASE_TRANSITIONS.check(self.phase, phase)

    def _rejoin(self, keep: frozenset[tuple[Uuid, int]] | None = None) -> None:
        """Back to JOIN, keeping `keep` at most (None: what it owns then); eager: nothing."""
        self._keep = keep if self._settings.cooperative else frozenset()
        self._release_asked = None
        self._to(P.JOIN)

    # -- the core's questions -------------------------------------------------------------------

    @property
    def urgent(self) -> bool:
        """Joining and syncing go at once (not while the member revokes before joining), and so
        does the request after a change."""
        return (self.phase is not P.STABLE and self._release_asked is None) or self._changed

    @urgent.setter
    def urgent(self, value: bool) -> None:
        """A change the coordinator must hear about (a new subscription) takes a rejoin, which
        `send` starts when it sees the subscription differ from the announced one."""
        self._changed = value

    def due_at(self, urgent: bool) -> int | None:
        """When the next request may go (None while one is in flight)."""
        return self.schedule.due_at(urgent or self.urgent)

    def send(
        self,
        now_ms: int,
        member_id: str,
        member_epoch: int,
        subscription: Subscription | None,
        owned: Iterable[TopicIdPartition],
        client_assignors: tuple[ClientAssignor, ...],
    ) -> SendClassicRequest | ReleaseBeforeJoin | None:
        """The next request, recorded as in flight; or what the member must release first (once,
        then None until it did)."""
        owned = frozenset(owned)
        self._changed = False
        subscription = self._resolved(subscription or self.announced or Subscription())
        if self.phase is P.STABLE and self.announced is not None and subscription != self.announced:
            self._rejoin()
        if self.phase is P.JOIN:
            keep = self._may_keep(owned, subscription)
            if not {tp.key for tp in owned} <= keep:
                if self._release_asked == keep:  # revoking: heartbeats keep the session meanwhile
                    return self._sent(now_ms, ClassicApi.HEARTBEAT, self._heartbeat_request())
                # Asked again when what it may keep changed meanwhile (a new subscription while
                # it released what the last assignment took away).
                self._release_asked = keep
                return ReleaseBeforeJoin(_by_topic_id(tp for tp in owned if tp.key in keep))
            self._release_asked = None
            self.announced = subscription
            self._joined_with = owned
            self._ids_at_join = {name: tid for tid, name in self._names.items()}
            unknown = (
                ()
                if subscription.pattern is not None
                else tuple(sorted(set(subscription.topics) - set(self._ids_at_join)))
            )
            join = self._join_request(subscription, owned)
            return self._sent(now_ms, ClassicApi.JOIN, join, unknown_topics=unknown)
        if self.phase is P.SYNC:
            request = SyncGroupRequest(
                group_id=self._config.group_id,
                generation_id=self.generation,
                member_id=self.member_id,
                group_instance_id=self._config.instance_id,
                protocol_type=CONSUMER_PROTOCOL_TYPE,
                protocol_name=self._protocol,
                assignments=[],
            )
            return self._sent(now_ms, ClassicApi.SYNC, request, self._members, self._protocol)
        return self._sent(now_ms, ClassicApi.HEARTBEAT, self._heartbeat_request())

    def _heartbeat_request(self) -> HeartbeatRequest:
        return HeartbeatRequest(
            group_id=self._config.group_id,
            generation_id=self.generation,
            member_id=self.member_id,
            group_instance_id=self._config.instance_id,
        )

    def _join_request(
        self, subscription: Subscription, owned: frozenset[TopicIdPartition]
    ) -> JoinGroupRequest:
        by_topic = partitions_by_topic(owned)
        settings = self._settings
        member = ConsumerSubscription(
            topics=sorted(set(subscription.topics)),
            user_data=None,
            owned_partitions=[
                ConsumerTopicPartitions(topic=t, partitions=list(p)) for t, p in sorted(by_topic.items())
            ],
            generation_id=self.generation,
            rack_id=self._config.rack_id,
        )
        plain = encode_consumer_protocol(member)

        def metadata(strategy: str) -> bytes:
            """The subscription, with the user data of the application's own strategies."""
            data = settings.local_strategies.get(strategy)
            return encode_consumer_protocol(member.replace(user_data=data)) if data else plain

        return JoinGroupRequest(
            group_id=self._config.group_id,
            session_timeout_ms=settings.session_timeout_ms,
            rebalance_timeout_ms=self._config.rebalance_timeout_ms,
            member_id=self.member_id,
            group_instance_id=self._config.instance_id,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocols=[
                JoinGroupRequestProtocol(name=name, metadata=metadata(name)) for name in settings.strategies
            ],
        )

    def send_leave(self, now_ms: int, *, member_id: str, member_epoch: int) -> SendClassicRequest:
        """The LeaveGroup, recorded as in flight. A static member, or one that never got an id,
        sends none (the effect carries no request; the session answers it at once)."""
        request = None
        if self._config.instance_id is None and self.member_id:
            request = LeaveGroupRequest(
                group_id=self._config.group_id,
                members=[
                    MemberIdentity(member_id=self.member_id, reason="the consumer is leaving the group")
                ],
            )
        return self._sent(now_ms, ClassicApi.LEAVE, request, leave=True)

    def _sent(
        self,
        now_ms: int,
        api: ClassicApi,
        request: Message | None,
        members: tuple[ClassicMember, ...] = (),
        strategy: str = "",
        leave: bool = False,
        unknown_topics: tuple[str, ...] = (),
    ) -> SendClassicRequest:
        request_id = self._ids.next()
        self.schedule.sent(request_id, now_ms, self.generation, leave=leave)
        self._in_flight = api
        # Kafka's consumer gives a JoinGroup the rebalance timeout and 5 s more; a SyncGroup
        # waits for the leader's assignment just as long.
        waits = api in (ClassicApi.JOIN, ClassicApi.SYNC)
        timeout = self._config.rebalance_timeout_ms + _JOIN_GRACE_MS if waits else None
        return SendClassicRequest(request_id, api, request, members, strategy, timeout, unknown_topics)

    # -- answers --------------------------------------------------------------------------------

    def answer(
        self,
        event: ClassicResponseReceived | HeartbeatFailed | HeartbeatResponseReceived,
        now_ms: int,
    ) -> Verdict | ClassicAccepted | None:
        """What an answer means (None: nothing for the core, or not the request in flight)."""
        schedule = self.schedule
        if event.request_id != schedule.in_flight or isinstance(event, HeartbeatResponseReceived):
            return None
        api, self._in_flight = self._in_flight, None
        assert api is not None
        if schedule.in_flight_leave:
            schedule.succeeded(self._settings.heartbeat_interval_ms)
            return LeaveAnswered()
        if isinstance(event, HeartbeatFailed):
            if api is ClassicApi.SYNC:
                self._rejoin()  # Kafka's consumer rejoins after a failed sync
            return Rejected(event.error, event.message, self.generation)
        code = event.error
        if code is ErrorCode.NONE:
            schedule.succeeded(self._settings.heartbeat_interval_ms)
            accepted = _ANSWERED[api](self, event)
            if api is ClassicApi.SYNC and self._same_unsubscribed_again:
                schedule.failed(now_ms)  # no tight loop of joins while the group will not change
            return accepted
        if code is ErrorCode.MEMBER_ID_REQUIRED and api is ClassicApi.JOIN:
            self.member_id = event.member_id  # KIP-394: join again at once with this id
            schedule.failed_no_backoff()
            return None
        if code is ErrorCode.REBALANCE_IN_PROGRESS:
            schedule.succeeded(self._settings.heartbeat_interval_ms)
            if self.phase is not P.JOIN:
                self._rejoin()
            return ClassicAccepted(self.member_id, self.generation) if api is ClassicApi.HEARTBEAT else None
        if api is ClassicApi.HEARTBEAT and code not in _HEARTBEAT_ACTS_ON:
            # Kafka's classic consumer (and librdkafka's) heartbeats again after any other error,
            # GROUP_AUTHORIZATION_FAILED included: a group the member may no longer use ends its
            # session at the coordinator, and the JoinGroup after that reports the refusal.
            return Rejected(code, event.message, self.generation, retry=True)
        if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
            self.member_id = ""
        if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            self.generation = -1
        return Rejected(code, event.message, self.generation)

    def _joined(self, event: ClassicResponseReceived) -> ClassicAccepted | None:
        self.member_id = event.member_id or self.member_id
        self.generation = event.generation
        self._protocol = event.protocol_name or ""
        leads = event.leader_id == self.member_id and not event.skip_assignment
        self._members = event.members if leads else ()
        self._synced_view = None
        self._to(P.SYNC)
        return None  # the SyncGroup goes next

    def _synced(self, event: ClassicResponseReceived) -> ClassicAccepted:
        self._held_back = (self.generation, None) if event.held_back else None
        target = {tid: sorted(parts) for tid, parts in (event.assignment or {}).items() if parts}
        recreated = self._recreated_since_join(target)
        target = {tid: parts for tid, parts in target.items() if tid not in recreated}
        unsubscribed = self._unsubscribed(target)
        self._same_unsubscribed_again = bool(unsubscribed) and self._unsubscribed_at == self.generation
        self._unsubscribed_at = self.generation if unsubscribed else None
        if unsubscribed:
            # As Kafka's consumer: an assignment that does not match the subscription is not
            # taken (the member keeps only what it owned and is still given) and it rejoins.
            names = sorted(self._names[t] for t in unsubscribed)
            log.info("classic member: assigned %s, which it does not subscribe to; rejoining", names)
            owned = {tp.key for tp in self._joined_with}
            kept = {tid: [p for p in parts if (tid, p) in owned] for tid, parts in target.items()}
            target = {tid: parts for tid, parts in kept.items() if parts and tid not in unsubscribed}
        assigned = frozenset((tid, p) for tid, parts in target.items() for p in parts)
        self._to(P.STABLE)
        if recreated or unsubscribed:
            self._rejoin()
        elif self._settings.cooperative and any(tp.key not in assigned for tp in self._joined_with):
            self._rejoin(assigned)  # KIP-429: rejoin once the revoked partitions are given up
        metadata = None
        if self._protocol in self._settings.local_strategies:  # for its on_assignment
            metadata = AssignmentMetadata(error=0, metadata_version=-1, metadata_bytes=event.user_data)
        return ClassicAccepted(self.member_id, self.generation, target, metadata)

    def _beat(self, event: ClassicResponseReceived) -> ClassicAccepted:
        return ClassicAccepted(self.member_id, self.generation)

    def _unsubscribed(self, target: Mapping[Uuid, list[int]]) -> set[Uuid]:
        """Assigned topics the member's JoinGroup did not subscribe to. A static member back with
        another subscription gets its stored assignment without a rebalance (Kafka's rule when the
        group's protocol stays the same); its rejoin carries the generation it was given, so its
        metadata differs and the coordinator rebalances (simulation seed 1461400, mixed)."""
        subscribed = set(self.announced.topics) if self.announced is not None else set()
        return {t for t in target if (name := self._names.get(t)) is not None and name not in subscribed}

    def _recreated_since_join(self, target: Mapping[Uuid, list[int]]) -> set[Uuid]:
        """Assigned topics whose name meant another topic id when the member joined (the ids it
        knew then, and those a lookup found before the JoinGroup went: `unknown_topics`). The
        assignment names topics: one deleted and created again since may be the old topic (gone)
        for the leader or the coordinator. The member does not take it; a rejoin assigns it anew
        (simulation seed 1381343, mixed)."""
        return {t for t in target if self._ids_at_join.get(self._names.get(t, ""), t) != t}

    def _may_keep(
        self, owned: frozenset[TopicIdPartition], subscription: Subscription
    ) -> frozenset[tuple[Uuid, int]]:
        """What the member may still own when it joins: what `_rejoin` allowed (eager: nothing;
        cooperative: what the last assignment left it, or all it owns), never a partition of a
        topic it no longer subscribes to (the leader would give that away at once)."""
        subscribed = frozenset(tp.key for tp in owned if tp.topic in subscription.topics)
        return subscribed if self._keep is None else self._keep & subscribed

    def _resolved(self, subscription: Subscription) -> Subscription:
        """A pattern subscription as the topic names it matches now. The member matches it itself
        (the classic protocol carries names), as librdkafka's classic consumer does: the pattern
        may match anywhere in a name (``^`` anchors it), internal topics (``__...``) excluded."""
        self._pattern = subscription.pattern
        if subscription.pattern is None:
            return subscription
        return Subscription(tuple(sorted(searched_topics(subscription.pattern, self._existing or ()))))

    # -- metadata -------------------------------------------------------------------------------

    def timers(self, now_ms: int, subscription: Subscription | None) -> list[RefreshMetadata]:
        """Re-read the subscribed topics' metadata every ``metadata_refresh_ms`` in the group;
        as the leader, rebalance when partitions it held back stay unassigned (`_check_held_back`)."""
        self._check_held_back(now_ms)
        if subscription is None or subscription.is_empty:
            self._refreshed_at = None
            return []
        if self._refreshed_at is None:
            self._refreshed_at = now_ms
            if subscription.pattern is None or self._existing is not None:
                return []
        elif now_ms < self._refreshed_at + self._settings.metadata_refresh_ms:
            return []
        self._refreshed_at = now_ms
        # A pattern's matches are found among every topic (no names: all of them). A leader also
        # watches the topics the other members subscribe to: it assigned them.
        if subscription.pattern is not None:
            return [RefreshMetadata(topic_names=())]
        return [RefreshMetadata(topic_names=tuple(sorted(set(subscription.topics) | self._led_topics())))]

    def _check_held_back(self, now_ms: int) -> None:
        """A cooperative leader holds back what a member reports owning and the assignment moves
        (KIP-429): the owner revokes it and rejoins, and the next rebalance hands it over. An
        owner that never does leaves it with nobody: a static member restarted meanwhile (its
        new incarnation owns nothing, and took over the old one's assignment without a
        rebalance), or a member that left. Still in that generation a rebalance timeout later,
        the leader rejoins itself: Kafka's consumers wait for the next rebalance instead."""
        if self._held_back is None:
            return
        generation, since = self._held_back
        if self.phase is not P.STABLE or generation != self.generation:
            self._held_back = None
        elif since is None:
            self._held_back = (generation, now_ms)
        elif now_ms >= since + self._config.rebalance_timeout_ms:
            log.info(
                "classic group leader: partitions held back at generation %d were not released: rebalancing",
                generation,
            )
            self._held_back = None
            self._rejoin(None)

    def next_refresh(self, in_group: bool) -> int | None:
        """When `timers` refreshes next (None: not in the group)."""
        if not in_group or self._refreshed_at is None:
            return None
        return self._refreshed_at + self._settings.metadata_refresh_ms

    def learn_metadata(self, names: Mapping[Uuid, str], partition_counts: Mapping[str, int]) -> None:
        """Metadata arrived. A member whose watched topics changed (a new id: deleted and created
        again; another partition count) since its assignment rejoins, so that the leader assigns
        them as they are now. The leader watches every member's topics, as it saw them when it
        computed the assignment (the first metadata of the SYNC phase: Kafka's leader keeps that
        snapshot too), so a topic that grew while the group synced gets its new partitions
        assigned even when no member that subscribes to it leads."""
        if self._pattern is not None:
            existing = frozenset(name for name, count in partition_counts.items() if count)
            self._changed = self._changed or existing != self._existing  # `send` compares the matches
            self._existing = existing
        self._names.update(names)
        if self._in_flight is ClassicApi.JOIN:  # what the names meant when the member joined
            for topic_id, name in names.items():
                self._ids_at_join.setdefault(name, topic_id)
        topics = set(self.announced.topics if self.announced is not None else ()) | self._led_topics()
        ids = {name: tid for tid, name in names.items()}
        view = {t: (ids.get(t), partition_counts.get(t)) for t in sorted(topics)}
        if self._synced_view is None and self.phase in (P.SYNC, P.STABLE):
            self._synced_view = view  # as the assignment saw them
        elif self.phase is P.STABLE and view != self._synced_view:
            self._synced_view = view
            self._rejoin()

    def _led_topics(self) -> set[str]:
        """The topics of the members this member assigned as the leader (none otherwise)."""
        return subscribed_topics((m.member_id, m.instance_id, m.metadata) for m in self._members)

    def full_next(self) -> None:
        """(Re)joining from scratch (first join, after a fence or a stale poll)."""
        self._keep = frozenset()
        self._release_asked = None
        self._to(P.JOIN)

    def rejected(self, now_ms: int, *, backoff: bool) -> None:
        """After a rejection: back off (unless fenced: rejoin at once)."""
        if backoff:
            self.schedule.failed(now_ms)
        else:
            self.schedule.failed_no_backoff()


def _by_topic_id(partitions: Iterable[TopicIdPartition]) -> dict[Uuid, list[int]]:
    target: dict[Uuid, list[int]] = {}
    for tp in partitions:
        target.setdefault(tp.topic_id, []).append(tp.partition)
    return {tid: sorted(parts) for tid, parts in target.items()}


_ANSWERED = {
    ClassicApi.JOIN: ClassicExchange._joined,
    ClassicApi.SYNC: ClassicExchange._synced,
    ClassicApi.HEARTBEAT: ClassicExchange._beat,
}

__all__ = ["ClassicAccepted", "ClassicExchange", "ClassicPhase", "ReleaseBeforeJoin"]
