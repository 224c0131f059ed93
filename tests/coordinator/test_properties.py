"""Property test of the coordinator: random joins, leaves, heartbeats with arbitrary
acknowledgements, timeouts, topic changes and failovers.

After every step: no partition is in two members' assigned-or-pending-revocation sets, member
epochs never exceed the group epoch, and a failed-over coordinator (replaying the log) has the same
state. At the end, once members keep heartbeating and acknowledging honestly, every member
converges to its target assignment with nothing pending.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kconsumer.broker.coordinator import CoordinatorConfig, GroupCoordinator, MetadataImage, TopicMetadata
from kconsumer.broker.coordinator.model import GroupState, MemberAssignmentState
from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.consumer_group import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from kconsumer.protocol.uuid import Uuid

MEMBERS = ["m0", "m1", "m2", "m3", "m4"]
STATIC = {"m3": "instance-3", "m4": "instance-4"}
TOPICS = ["t0", "t1", "t2"]
SESSION_MS = 10_000


@dataclass
class Client:
    """What a well-behaved client believes: its epoch, what it owns, the last assignment it got."""

    member_id: str
    epoch: int = 0
    joined: bool = False
    owned: dict[Uuid, frozenset[int]] = field(default_factory=dict)
    assignment: dict[Uuid, frozenset[int]] = field(default_factory=dict)
    subscription: tuple[str, ...] = ("t0",)


class CoordinatorMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.config = CoordinatorConfig(
            session_timeout_ms=SESSION_MS, heartbeat_interval_ms=1_000, assignment_interval_ms=0
        )
        self.coordinator = GroupCoordinator(self.config)
        self.now = 0
        self.version = 0
        self.serial = 0
        self.topics: dict[str, TopicMetadata] = {}
        self.clients = {m: Client(m) for m in MEMBERS}
        self.failovers = 0
        self._create("t0", 3)
        self._create("t1", 2)

    # -- helpers -------------------------------------------------------------------------------

    def _publish(self) -> None:
        self.version += 1
        self.coordinator.update_metadata(MetadataImage.of(self.topics.values(), self.version), self.now)

    def _create(self, name: str, partitions: int) -> None:
        self.serial += 1
        self.topics[name] = TopicMetadata(Uuid.from_int(self.serial), name, partitions)
        self._publish()

    def _send(
        self, client: Client, epoch: int, owned: dict[Uuid, frozenset[int]] | None, full: bool
    ) -> ConsumerGroupHeartbeatResponse:
        fields: dict[str, object] = {}
        if full or epoch == 0:
            fields.update(rebalance_timeout_ms=5_000, subscribed_topic_names=list(client.subscription))
        if client.member_id in STATIC:
            fields["instance_id"] = STATIC[client.member_id]
        if owned is not None:
            fields["topic_partitions"] = [
                TopicPartitions(topic_id=t, partitions=sorted(p)) for t, p in sorted(owned.items()) if p
            ]
        request = ConsumerGroupHeartbeatRequest(
            group_id="g", member_id=client.member_id, member_epoch=epoch, **fields
        )
        return self.coordinator.heartbeat(request, 1, self.now).response

    def _apply(self, client: Client, response: ConsumerGroupHeartbeatResponse) -> None:
        if response.error_code in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
            client.epoch, client.joined, client.owned, client.assignment = 0, False, {}, {}
            return
        assert response.error_code in (0, ErrorCode.UNRELEASED_INSTANCE_ID), response
        if response.error_code:
            return
        client.epoch = response.member_epoch
        client.joined = True
        if response.assignment is not None:
            client.assignment = {
                tp.topic_id: frozenset(tp.partitions) for tp in response.assignment.topic_partitions
            }
            # Newly granted partitions are owned at once; revoked ones only after an acknowledgement.
            for topic, parts in client.assignment.items():
                client.owned[topic] = client.owned.get(topic, frozenset()) | parts

    def _revoke(self, client: Client) -> None:
        client.owned = {t: p & client.assignment.get(t, frozenset()) for t, p in client.owned.items()}
        client.owned = {t: p for t, p in client.owned.items() if p}

    # -- rules -----------------------------------------------------------------------------------

    @rule(
        member=st.sampled_from(MEMBERS),
        topics=st.lists(st.sampled_from([*TOPICS, "missing"]), min_size=0, max_size=3),
    )
    def join(self, member: str, topics: list[str]) -> None:
        client = self.clients[member]
        if client.joined:
            return
        client.subscription = tuple(sorted(set(topics))) or ("t0",)
        client.owned, client.assignment = {}, {}
        self._apply(client, self._send(client, 0, {}, full=True))

    @rule(member=st.sampled_from(MEMBERS), acknowledge=st.booleans(), send_owned=st.booleans())
    def heartbeat(self, member: str, acknowledge: bool, send_owned: bool) -> None:
        client = self.clients[member]
        if not client.joined:
            return
        if acknowledge:
            self._revoke(client)
        self._apply(
            client, self._send(client, client.epoch, client.owned if send_owned else None, full=False)
        )

    @rule(member=st.sampled_from(MEMBERS), topics=st.lists(st.sampled_from(TOPICS), min_size=1, max_size=3))
    def change_subscription(self, member: str, topics: list[str]) -> None:
        client = self.clients[member]
        if not client.joined:
            return
        client.subscription = tuple(sorted(set(topics)))
        self._apply(client, self._send(client, client.epoch, client.owned, full=True))

    @rule(member=st.sampled_from(MEMBERS), static_leave=st.booleans())
    def leave(self, member: str, static_leave: bool) -> None:
        client = self.clients[member]
        if not client.joined:
            return
        epoch = -2 if static_leave and member in STATIC else -1
        response = self._send(client, epoch, None, full=False)
        assert response.error_code in (0, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.GROUP_ID_NOT_FOUND), response
        client.epoch, client.joined, client.owned, client.assignment = 0, False, {}, {}

    @rule(ms=st.integers(100, 2 * SESSION_MS))
    def advance(self, ms: int) -> None:
        self.now += ms
        self.coordinator.poll(self.now)

    @rule(name=st.sampled_from(TOPICS), extra=st.integers(1, 2))
    def grow_or_create_topic(self, name: str, extra: int) -> None:
        topic = self.topics.get(name)
        if topic is None:
            self._create(name, extra)
        else:
            self.topics[name] = TopicMetadata(topic.topic_id, name, topic.num_partitions + extra)
            self._publish()

    @rule(name=st.sampled_from(TOPICS), recreate=st.booleans())
    def delete_topic(self, name: str, recreate: bool) -> None:
        if name not in self.topics:
            return
        del self.topics[name]
        self._publish()
        if recreate:
            self._create(name, 2)

    @precondition(lambda self: self.failovers < 3)
    @rule()
    def failover(self) -> None:
        assert self.coordinator.log is not None
        replayed = GroupCoordinator.replaying(
            self.coordinator.log, self.now, self.config, MetadataImage.of(self.topics.values(), self.version)
        )
        assert replayed.state.snapshot() == self.coordinator.state.snapshot()
        self.coordinator = replayed
        self.failovers += 1

    # -- invariants -------------------------------------------------------------------------------

    @invariant()
    def no_partition_has_two_owners(self) -> None:
        group = self.coordinator.group("g")
        if group is None:
            return
        seen: dict[tuple[Uuid, int], str] = {}
        for member in group.members.values():
            current = member.current
            for topic, parts in [*current.assigned.items(), *current.pending_revocation.items()]:
                for partition in parts:
                    holder = seen.setdefault((topic, partition), member.member_id)
                    assert holder == member.member_id, (
                        f"{topic}-{partition} held by {holder} and {member.member_id}"
                    )

    @invariant()
    def member_epochs_never_exceed_group_epoch(self) -> None:
        group = self.coordinator.group("g")
        if group is None:
            return
        assert group.assignment_epoch <= group.group_epoch
        for member in group.members.values():
            assert member.member_epoch <= group.group_epoch

    @invariant()
    def clients_own_only_what_the_coordinator_granted(self) -> None:
        # A client owns a partition only if the coordinator lists it as the client's (assigned or
        # pending revocation), unless the coordinator already removed the member (a zombie the
        # session timeout dealt with; it learns it is fenced at its next heartbeat).
        group = self.coordinator.group("g")
        for client in self.clients.values():
            if not client.joined or group is None or client.member_id not in group.members:
                continue
            current = group.members[client.member_id].current
            for topic, parts in client.owned.items():
                held = set(current.assigned.get(topic, {})) | set(current.pending_revocation.get(topic, ()))
                assert parts <= held, (client.member_id, topic, parts, held)

    def teardown(self) -> None:
        """Liveness: with every client heartbeating and acknowledging, the group converges."""
        group = self.coordinator.group("g")
        if group is None:
            return
        # Long enough for members that left without coming back (static -2) to time out.
        for _ in range(2 * SESSION_MS // 500 + 4):
            self.now += 500
            self.coordinator.poll(self.now)
            for client in self.clients.values():
                if client.joined:
                    self._revoke(client)
                    self._apply(client, self._send(client, client.epoch, client.owned, full=False))
        live = [c for c in self.clients.values() if c.joined and c.member_id in group.members]
        assert group.state() in (GroupState.STABLE, GroupState.EMPTY), group.state()
        for client in live:
            member = group.members[client.member_id]
            assert member.current.state == MemberAssignmentState.STABLE
            assert member.member_epoch == group.group_epoch == group.assignment_epoch
            assert member.current.assigned_sets() == dict(group.target_of(client.member_id).partitions)
            assert not member.current.pending_revocation
            assert client.owned == dict(group.target_of(client.member_id).partitions)
        replayed = GroupCoordinator.replaying(self.coordinator.log or [], self.now, self.config)
        assert replayed.state.snapshot() == self.coordinator.state.snapshot()


CoordinatorMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=50, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_coordinator_properties = CoordinatorMachine.TestCase
