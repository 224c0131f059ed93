"""Online migration between classic and consumer groups on the sans-IO coordinator (Kafka's
GroupMetadataManager: convertToConsumerGroup, classic members inside a consumer group,
convertToClassicGroup), with the migration policy and the conservative ownership hand-over."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from kconsumer.broker.coordinator import GroupCoordinator
from kconsumer.broker.coordinator.classic.model import ClassicState
from kconsumer.broker.coordinator.model import MemberAssignmentState
from kconsumer.errors import ErrorCode
from kconsumer.protocol.consumer_protocol import (
    ConsumerAssignment,
    ConsumerSubscription,
    ConsumerTopicPartitions,
    decode_consumer_protocol,
    encode_consumer_protocol,
)
from kconsumer.protocol.messages.classic_group import (
    LeaveGroupRequest,
    MemberIdentity,
)
from kconsumer.protocol.messages.offsets import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)

from .classic_calls import REBALANCE, SESSION, ClassicCalls
from .conftest import Driver


def subscription(topics: list[str], owned: dict[str, Iterable[int]] | None = None) -> bytes:
    owned_list = [ConsumerTopicPartitions(topic=t, partitions=sorted(p)) for t, p in (owned or {}).items()]
    return encode_consumer_protocol(
        ConsumerSubscription(topics=topics, user_data=None, owned_partitions=owned_list)
    )


def assignment(parts: dict[str, Iterable[int]], user_data: bytes | None = None) -> bytes:
    entries = [ConsumerTopicPartitions(topic=t, partitions=sorted(p)) for t, p in parts.items()]
    return encode_consumer_protocol(ConsumerAssignment(assigned_partitions=entries, user_data=user_data))


def decoded(data: bytes) -> dict[str, list[int]]:
    value = decode_consumer_protocol(ConsumerAssignment, data)[0]
    return {e.topic: sorted(e.partitions) for e in value.assigned_partitions if e.partitions}


class MixedDriver(Driver, ClassicCalls):
    """The consumer-group driver plus classic requests (ConsumerProtocol bytes) and deferred answers."""

    def __init__(self, **config: Any) -> None:
        config.setdefault("classic_initial_rebalance_delay_ms", 0)
        super().__init__(**config)
        self.answers: dict[int, Any] = {}
        self.create_topic("foo", 4)

    advance = ClassicCalls.advance

    def cjoin(
        self,
        member_id: str = "",
        owned: dict[str, Iterable[int]] | None = None,
        protocol: str = "range",
        instance_id: str | None = None,
        protocol_type: str = "consumer",
        topics: list[str] | None = None,
    ) -> Any:
        protocols = ((protocol, subscription(topics or ["foo"], owned)),)
        return self.join_group(member_id, protocols, instance_id=instance_id, protocol_type=protocol_type)

    csync = ClassicCalls.sync_group
    cheartbeat = ClassicCalls.classic_heartbeat

    def cleave(self, member_id: str) -> int:
        request = LeaveGroupRequest(group_id="g", members=[MemberIdentity(member_id=member_id)])
        return int(self.call(request, 5).members[0].error_code)

    def classic_group(self) -> Any:
        return self.coordinator.state.classic_groups.get("g")

    def classic_pair(
        self, protocol: str = "range", static: bool = False, user_data: bytes | None = None
    ) -> tuple[str, str, int]:
        """Two classic members, Stable: a has foo 0-1, b has foo 2-3, each assignment with the
        leader's `user_data`. (a, b, generation)."""
        ids = []
        for name in ("a", "b"):
            if static:
                ids.append(name)  # placeholder: static members get their id from the join
            else:
                response = self.cjoin(protocol=protocol)
                assert response.error_code == ErrorCode.MEMBER_ID_REQUIRED
                ids.append(response.member_id)
        if static:
            pa = self.cjoin(protocol=protocol, instance_id="a")
            pb = self.cjoin(protocol=protocol, instance_id="b")
        else:
            pa, pb = self.cjoin(ids[0], protocol=protocol), self.cjoin(ids[1], protocol=protocol)
        self.advance(1)
        ja, jb = self.answer(pa), self.answer(pb)
        leader, follower = (ja, jb) if ja.leader == ja.member_id else (jb, ja)
        a, b = ja.member_id, jb.member_id
        gen = ja.generation_id
        self.csync(follower.member_id, gen)
        shares = {a: assignment({"foo": [0, 1]}, user_data), b: assignment({"foo": [2, 3]}, user_data)}
        self.csync(leader.member_id, gen, shares)
        self._collect()
        assert self.classic_group().state == ClassicState.STABLE
        return a, b, gen

    def owners(self) -> dict[int, str]:
        group = self.coordinator.group("g")
        assert group is not None
        return dict(group.owners.get(self.topic_id("foo"), {}))


@pytest.fixture
def d() -> MixedDriver:
    return MixedDriver()


def test_a_consumer_member_upgrades_a_classic_group_and_partitions_move_only_after_release(
    d: MixedDriver,
) -> None:
    a, b, gen = d.classic_pair()
    response = d.join("c")
    assert response.error_code == 0
    assert d.classic_group() is None
    group = d.coordinator.group("g")
    assert group is not None and set(group.members) == {a, b, "c"}
    # The classic members were carried over at their generation with what they hold.
    assert d.member(a).member_epoch == gen and d.assigned(a) == {"foo": [0, 1]}
    assert d.member(a).uses_classic_protocol and not d.member("c").uses_classic_protocol
    assert d.assigned("c") == {}  # nothing is free yet
    assert d.owners() == {0: a, 1: a, 2: b, 3: b}
    # The classic members are told to rejoin; an eager member rejoins owning nothing.
    assert d.cheartbeat(a, gen) == ErrorCode.REBALANCE_IN_PROGRESS
    joined = d.cjoin(a)
    assert joined.error_code == 0 and joined.leader == "" and joined.members == []
    assert joined.generation_id == d.member(a).member_epoch > gen
    synced = d.csync(a, joined.generation_id)
    assert synced.error_code == 0
    kept = decoded(synced.assignment)["foo"]
    assert len(kept) <= 2 and set(kept) <= {0, 1}
    assert d.cheartbeat(b, gen) == ErrorCode.REBALANCE_IN_PROGRESS
    jb = d.cjoin(b)
    d.csync(b, jb.generation_id)
    response = d.heartbeat("c", d.member("c").member_epoch)
    assert d.assigned("c") and set(d.assigned("c")["foo"]).isdisjoint(d.assigned(a).get("foo", []))
    # Commits from a classic member carry its member epoch as the generation.
    assert _commit(d, a, joined.generation_id) == 0
    assert _commit(d, a, joined.generation_id - 1) == ErrorCode.ILLEGAL_GENERATION


def _commit(d: MixedDriver, member_id: str, generation: int) -> int:
    request = OffsetCommitRequest(
        group_id="g",
        generation_id_or_member_epoch=generation,
        member_id=member_id,
        topics=[
            OffsetCommitRequestTopic(
                name="foo", partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=5)]
            )
        ],
    )
    response = d.coordinator.offset_commit(request, 8, d.now).response
    return int(response.topics[0].partitions[0].error_code)


def test_a_cooperative_member_revokes_before_its_partitions_move(d: MixedDriver) -> None:
    a, b, gen = d.classic_pair(protocol="cooperative-sticky")
    held = {a: [0, 1], b: [2, 3]}
    d.join("c")
    # The member whose target shrinks rejoins still owning its partitions: it must revoke first.
    member = next(m for m in (a, b) if len(d.target(m)["foo"]) < 2)
    assert d.cheartbeat(member, gen) == ErrorCode.REBALANCE_IN_PROGRESS
    joined = d.cjoin(member, owned={"foo": held[member]}, protocol="cooperative-sticky")
    assert joined.error_code == 0 and joined.generation_id == gen  # same epoch while revoking
    assert d.member(member).state == MemberAssignmentState.UNREVOKED_PARTITIONS
    kept = decoded(d.csync(member, gen).assignment).get("foo", [])
    revoked = set(d.pending(member)["foo"])
    assert revoked and revoked.isdisjoint(kept) and set(kept) | revoked == set(held[member])
    assert all(d.owners()[p] == member for p in revoked)  # still its own until it says so
    d.heartbeat("c", d.member("c").member_epoch)
    assert d.assigned("c") == {}
    assert d.cheartbeat(member, gen) == ErrorCode.REBALANCE_IN_PROGRESS
    joined = d.cjoin(member, owned={"foo": kept}, protocol="cooperative-sticky")
    assert joined.generation_id == d.member(member).member_epoch > gen
    assert d.pending(member) == {}
    d.heartbeat("c", d.member("c").member_epoch)
    assert d.assigned("c") == {"foo": sorted(revoked)}


def test_upgrade_is_refused_by_the_policy_and_for_other_protocol_types() -> None:
    for policy in ("disabled", "downgrade"):
        d = MixedDriver(migration_policy=policy)
        d.classic_pair()
        assert d.join("c").error_code == ErrorCode.GROUP_ID_NOT_FOUND
        assert d.classic_group() is not None and d.coordinator.group("g") is None
    d = MixedDriver()
    first = d.cjoin(protocol_type="connect")
    d.cjoin(first.member_id, protocol_type="connect")
    assert d.join("c").error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_upgrade_is_refused_while_an_assignment_carries_the_assignors_user_data() -> None:
    """Kafka 4.x does not convert a classic group whose members' assignments carry user data
    (the consumer protocol would drop it); librdkafka's cooperative-sticky leader writes some
    once its members have had an assignment. An empty user data field converts as usual."""
    refused = MixedDriver()
    refused.classic_pair(protocol="cooperative-sticky", user_data=b"\x00\x00\x00\x01")
    answer = refused.join("c")
    assert answer.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert "user data" in answer.error_message
    assert refused.classic_group().state == ClassicState.STABLE and refused.coordinator.group("g") is None
    converted = MixedDriver()
    converted.classic_pair(protocol="cooperative-sticky", user_data=b"")
    assert converted.join("c").error_code == ErrorCode.NONE
    assert converted.coordinator.group("g") is not None


def test_upgrade_carries_over_what_a_rebalancing_member_said_it_owned(d: MixedDriver) -> None:
    a, b, _gen = d.classic_pair(protocol="cooperative-sticky")
    # b rejoins (a rebalance starts) reporting it owns foo 2-3; a has not rejoined yet.
    pending = d.cjoin(b, owned={"foo": [2, 3]}, protocol="cooperative-sticky")
    assert d.classic_group().state == ClassicState.PREPARING_REBALANCE
    d.join("c")
    assert d.answer(pending).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    assert d.owners() == {0: a, 1: a, 2: b, 3: b}


def test_conflicting_claims_postpone_the_upgrade_with_a_retriable_error(d: MixedDriver) -> None:
    """b rejoins claiming a's partition 0 as well: converting now could hand it to neither or
    both, so the consumer-protocol member is told to retry (not refused for good)."""
    _a, b, _gen = d.classic_pair(protocol="cooperative-sticky")
    d.cjoin(b, owned={"foo": [0, 2, 3]}, protocol="cooperative-sticky")
    assert d.join("c").error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert d.coordinator.group("g") is None and d.classic_group() is not None


def test_the_last_consumer_member_leaving_downgrades_and_the_group_rebalances(d: MixedDriver) -> None:
    a, b, _gen = d.classic_pair()
    d.join("c")
    epoch = d.coordinator.group("g").group_epoch  # type: ignore[union-attr]
    response = d.heartbeat("c", -1)
    assert response.error_code == 0
    classic = d.classic_group()
    assert classic is not None and d.coordinator.group("g") is None
    assert classic.state == ClassicState.PREPARING_REBALANCE and set(classic.members) == {a, b}
    assert classic.generation == epoch and classic.protocol_name == "range"
    # Each member's stored assignment is what it may hold (it had not revoked anything yet).
    assert decoded(classic.members[a].assignment) == {"foo": [0, 1]}
    ja, jb = d.cjoin(a), d.cjoin(b)
    ja, jb = d.answer(ja), d.answer(jb)
    assert ja.error_code == jb.error_code == 0 and ja.generation_id == epoch + 1


def test_a_consumer_members_session_expiry_downgrades_too(d: MixedDriver) -> None:
    a, b, _gen = d.classic_pair()
    d.join("c")
    generations = {}
    for member in (a, b):  # the classic members rejoin, sync and keep their sessions alive
        joined = d.cjoin(member)
        d.csync(member, joined.generation_id)
        generations[member] = joined.generation_id
    for _ in range(12):
        d.advance(SESSION // 2)
        if d.coordinator.group("g") is None:
            break
        for member in (a, b):
            generations[member] = d.member(member).member_epoch
            if d.cheartbeat(member, generations[member]) == ErrorCode.REBALANCE_IN_PROGRESS:
                joined = d.cjoin(member)
                d.csync(member, joined.generation_id)
    assert d.coordinator.group("g") is None
    assert set(d.classic_group().members) == {a, b}


def test_a_static_classic_member_replacing_the_last_consumer_member_downgrades(d: MixedDriver) -> None:
    _a, b, _gen = d.classic_pair(static=True)
    # a restarts with the consumer protocol (a static classic member never leaves): it replaces
    # the classic holder of its instance id at once.
    response = d.join("a2", instance_id="a")
    assert response.error_code == 0
    group = d.coordinator.group("g")
    assert group is not None and group.static_members["a"] == "a2"
    assert d.assigned("a2") == {"foo": [0, 1]}
    # Let the group settle: b rejoins, a2 reconciles.
    jb = d.cjoin(b, instance_id="b")
    d.csync(b, jb.generation_id, group_instance_id="b")
    d.heartbeat("a2", d.member("a2").member_epoch, owned={"foo": [0, 1]})
    assert d.coordinator.group("g").state().value == "Stable"  # type: ignore[union-attr]
    # a2 leaves temporarily (static) and comes back with the classic protocol: downgrade.
    d.heartbeat("a2", -2, instance_id="a")
    rejoined = d.cjoin(instance_id="a")
    rejoined = d.answer(rejoined)
    assert rejoined.error_code == 0
    classic = d.classic_group()
    assert classic is not None and d.coordinator.group("g") is None
    assert classic.state == ClassicState.STABLE
    assert decoded(classic.members[rejoined.member_id].assignment) == {"foo": [0, 1]}


def test_a_classic_member_that_never_rejoins_or_syncs_is_fenced(d: MixedDriver) -> None:
    a, b, gen = d.classic_pair()
    d.join("c")
    assert d.cheartbeat(a, gen) == ErrorCode.REBALANCE_IN_PROGRESS
    ja = d.cjoin(b)  # b rejoins but never syncs
    assert ja.error_code == 0
    d.advance(REBALANCE + 1)
    group = d.coordinator.group("g")
    assert group is not None and a not in group.members and b not in group.members
    assert set(group.members) == {"c"}


def test_classic_leave_bumps_the_epoch_and_checks_the_member(d: MixedDriver) -> None:
    a, b, gen = d.classic_pair()
    d.join("c")
    epoch = d.coordinator.group("g").group_epoch  # type: ignore[union-attr]
    assert d.cleave("c") == ErrorCode.UNKNOWN_MEMBER_ID  # not a classic member
    assert d.cleave(a) == 0
    assert d.coordinator.group("g").group_epoch == epoch + 1  # type: ignore[union-attr]
    assert d.cheartbeat(a, gen) == ErrorCode.UNKNOWN_MEMBER_ID
    assert d.csync(b, gen + 5).error_code == ErrorCode.ILLEGAL_GENERATION


def test_protocols_of_a_joining_classic_member_must_fit(d: MixedDriver) -> None:
    d.classic_pair()
    d.join("c")
    assert d.cjoin(protocol="roundrobin").error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert d.cjoin(protocol_type="connect").error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    new = d.cjoin()
    assert new.error_code == ErrorCode.MEMBER_ID_REQUIRED
    assert d.cjoin(new.member_id).error_code == 0


def test_a_removed_classic_member_rejoining_with_its_old_id_is_unknown(d: MixedDriver) -> None:
    """Stricter than Kafka (which adds it back): its partitions were handed over meanwhile, so
    it must give them up and join as a new member; an id just handed out is accepted once."""
    a, _b, _gen = d.classic_pair()
    d.join("c")
    assert d.cleave(a) == 0
    assert d.cjoin(a).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert d.cjoin("never-handed-out").error_code == ErrorCode.UNKNOWN_MEMBER_ID
    new = d.cjoin()
    assert new.error_code == ErrorCode.MEMBER_ID_REQUIRED
    assert d.cjoin(new.member_id).error_code == 0


def test_a_mixed_group_survives_failover_with_the_classic_session_timeouts(d: MixedDriver) -> None:
    a, _b, _gen = d.classic_pair()
    d.join("c")
    log = d.coordinator.log
    assert log is not None
    replayed = GroupCoordinator.replaying(list(log), d.now, d.config, d.coordinator.image)
    assert replayed.state.snapshot() == d.coordinator.state.snapshot()
    deadline = replayed.timers.get(("session", "g", a))
    assert deadline is not None and deadline[0] == d.now + SESSION


def test_partitions_a_topic_no_longer_has_are_not_carried_into_a_converted_group() -> None:
    """Simulation seed 7300490 (mixed): a classic member's last JoinGroup said it owned t0-0..2;
    t0 was deleted and created again with 2 partitions; the conversion carried t0-2 of the new
    topic into the member's assignment and target, which the member could never reach."""
    from kconsumer.assignment.interface import TopicMetadata
    from kconsumer.broker.coordinator.classic.migration import partition_ids
    from kconsumer.broker.coordinator.metadata import MetadataImage
    from kconsumer.protocol.consumer_protocol import ConsumerTopicPartitions
    from kconsumer.protocol.uuid import Uuid

    topic = TopicMetadata(topic_id=Uuid.from_int(7), name="t0", num_partitions=2)
    image = MetadataImage.of([topic], 3)
    named = [
        ConsumerTopicPartitions(topic="t0", partitions=[0, 1, 2]),
        ConsumerTopicPartitions(topic="gone", partitions=[0]),
    ]
    assert partition_ids(image, named) == {topic.topic_id: frozenset({0, 1})}
