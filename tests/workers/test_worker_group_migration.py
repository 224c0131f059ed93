"""Migration between classic ``connect`` groups and worker groups on the reference coordinator,
request by request (sans-IO): the upgrade when the first new-protocol worker joins, classic
workers reconciled inside the worker group (revoke first, then hand over), the downgrade when the
last new-protocol worker leaves, failover, and the refusals (docs/worker-protocol.md §9)."""

from __future__ import annotations

from test_worker_coordinator import GROUP, Cluster, assigned, units

from kconsumer.assignment.connect_protocol import (
    ConnectAssignment,
    ConnectWorkerState,
    decode_assignment,
    encode_assignment,
    encode_worker_state,
)
from kconsumer.assignment.work_units import WorkUnits
from kconsumer.broker.coordinator import GroupCoordinator
from kconsumer.broker.coordinator.classic.replies import Deferred
from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.classic_group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)
from kconsumer.protocol.schema import Message

NO_UNITS = WorkUnits()


class Classic:
    """One classic worker's requests to the cluster's coordinator."""

    def __init__(self, cluster: Cluster, instance: str | None = None) -> None:
        self.cluster = cluster
        self.instance = instance
        self.member_id = ""
        self.generation = -1

    def _ask(self, request: Message, version: int = 5) -> Message:
        cluster = self.cluster
        response = cluster.coordinator.handle(request, version, cluster.now).response
        if isinstance(response, Deferred):
            for _ in range(100):
                cluster.advance(500)
                ready = dict(cluster.coordinator.take_replies())
                if response.ticket in ready:
                    return ready[response.ticket]
            raise AssertionError("no answer")
        return response

    def join(self, runs: WorkUnits = NO_UNITS, offset: int = -1) -> JoinGroupResponse:
        metadata = encode_worker_state(ConnectWorkerState("url", offset, runs), 2)
        for _ in range(2):  # MEMBER_ID_REQUIRED first
            response = self._ask(
                JoinGroupRequest(
                    group_id=GROUP,
                    session_timeout_ms=10_000,
                    rebalance_timeout_ms=5_000,
                    member_id=self.member_id,
                    group_instance_id=self.instance,
                    protocol_type="connect",
                    protocols=[JoinGroupRequestProtocol(name="sessioned", metadata=metadata)],
                )
            )
            assert isinstance(response, JoinGroupResponse)
            if response.error_code != ErrorCode.MEMBER_ID_REQUIRED:
                break
            self.member_id = response.member_id
        if response.error_code == 0:
            self.member_id, self.generation = response.member_id, response.generation_id
        return response

    def sync(self, assignments: dict[str, WorkUnits] | None = None) -> ConnectAssignment:
        response = self._ask(
            SyncGroupRequest(
                group_id=GROUP,
                generation_id=self.generation,
                member_id=self.member_id,
                group_instance_id=self.instance,
                protocol_type="connect",
                protocol_name="sessioned",
                assignments=[
                    SyncGroupRequestAssignment(
                        member_id=m, assignment=encode_assignment(ConnectAssignment(assigned=u), 2)
                    )
                    for m, u in (assignments or {}).items()
                ],
            )
        )
        assert isinstance(response, SyncGroupResponse) and response.error_code == 0, response
        return decode_assignment(response.assignment)

    def heartbeat(self) -> int:
        request = HeartbeatRequest(
            group_id=GROUP,
            generation_id=self.generation,
            member_id=self.member_id,
            group_instance_id=self.instance,
        )
        response = self._ask(request, 4)
        assert isinstance(response, HeartbeatResponse)
        return response.error_code

    def leave(self) -> int:
        identity = MemberIdentity(member_id=self.member_id, group_instance_id=self.instance)
        response = self._ask(LeaveGroupRequest(group_id=GROUP, members=[identity]))
        return response.members[0].error_code  # type: ignore[attr-defined,no-any-return]


def classic_group(cluster: Cluster, runs: WorkUnits) -> Classic:
    """A classic connect group whose one worker (the leader) assigned itself `runs`."""
    worker = Classic(cluster)
    joined = worker.join()
    assert joined.error_code == 0 and joined.leader == worker.member_id, joined
    assert worker.sync({worker.member_id: runs}).assigned == runs
    return worker


def held(cluster: Cluster, member_id: str) -> WorkUnits:
    return cluster.coordinator.state.worker_groups[GROUP].workers[member_id].holds


def state(cluster: Cluster) -> str:
    s = cluster.coordinator.state
    return "worker" if GROUP in s.worker_groups else "classic" if GROUP in s.classic_groups else "none"


def test_the_first_new_protocol_worker_converts_the_group_at_its_generation() -> None:
    cluster = Cluster()
    a = classic_group(cluster, units("c", "c-0", "c-1"))
    generation = a.generation
    first = cluster.heartbeat("n")
    assert first.error_code == ErrorCode.COMPUTE_ASSIGNMENT, first
    group = cluster.coordinator.state.worker_groups[GROUP]
    assert group.assignment_epoch == generation and group.group_epoch == generation + 1
    converted = group.workers[a.member_id]
    assert converted.uses_classic and converted.member_epoch == generation
    assert converted.assigned == units("c", "c-0", "c-1")
    # The classic worker goes on at its generation: nothing to do until a new target.
    assert a.heartbeat() == 0


def test_a_classic_worker_revokes_before_a_new_protocol_worker_gets_its_units() -> None:
    cluster = Cluster()
    a = classic_group(cluster, units("c", "c-0", "c-1"))
    cluster.heartbeat("n")
    cluster.compute("n", {a.member_id: units("c", "c-0"), "n": units("c-1")})
    cluster.heartbeat("n")
    assert held(cluster, "n") == NO_UNITS  # a still runs c-1
    assert a.heartbeat() == ErrorCode.REBALANCE_IN_PROGRESS
    joined = a.join(runs=units("c", "c-0", "c-1"))
    assert joined.error_code == 0 and joined.leader == "" and joined.members == []
    told = a.sync()
    assert told.revoked == units("c-1") and told.assigned == units("c", "c-0")
    cluster.heartbeat("n")
    assert held(cluster, "n") == NO_UNITS  # not confirmed yet
    a.join(runs=units("c", "c-0"))  # stopped: its rejoin says so
    assert a.sync().revoked == NO_UNITS
    assert assigned(cluster.heartbeat("n")) == units("c-1")
    assert a.heartbeat() == 0


def test_the_last_new_protocol_worker_leaving_converts_the_group_back() -> None:
    cluster = Cluster()
    a = classic_group(cluster, units("c", "c-0"))
    cluster.heartbeat("n")
    cluster.compute("n", {a.member_id: units("c", "c-0"), "n": NO_UNITS})
    cluster.heartbeat("n")
    epoch = cluster.coordinator.state.worker_groups[GROUP].group_epoch
    left = cluster.heartbeat("n", epoch=-1)
    assert left.error_code == 0
    assert state(cluster) == "classic"
    group = cluster.coordinator.state.classic_groups[GROUP]
    assert group.generation == epoch + 1 and group.state.name == "PREPARING_REBALANCE"
    assert decode_assignment(group.members[a.member_id].assignment).assigned == units("c", "c-0")
    # The classic worker rejoins and leads the next generation with what it runs.
    assert a.heartbeat() in (ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION)
    joined = a.join(runs=units("c", "c-0"))
    assert joined.leader == a.member_id
    assert [m.member_id for m in joined.members] == [a.member_id]


def test_a_failover_keeps_the_classic_workers_of_a_worker_group() -> None:
    cluster = Cluster()
    a = classic_group(cluster, units("c"))
    cluster.heartbeat("n")
    old = cluster.coordinator
    cluster.coordinator = GroupCoordinator.replaying(list(old.log or ()), cluster.now, old.config)
    assert cluster.coordinator.state.worker_groups == old.state.worker_groups
    assert cluster.coordinator.state.worker_groups[GROUP].workers[a.member_id].uses_classic
    assert a.heartbeat() == 0


def test_a_new_protocol_worker_cannot_join_another_kind_of_classic_group() -> None:
    cluster = Cluster()
    request = JoinGroupRequest(
        group_id=GROUP,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=5_000,
        member_id="",
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name="range", metadata=b"\x00\x00\x00\x00\x00\x00")],
    )
    assert isinstance(cluster.coordinator.handle(request, 1, cluster.now).response, Deferred)
    assert state(cluster) == "classic"
    assert cluster.heartbeat("n").error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_a_static_classic_worker_s_leave_keeps_its_units_for_its_next_process() -> None:
    cluster = Cluster()
    cluster.heartbeat("n")
    a = Classic(cluster, instance="i1")
    assert a.join().error_code == 0
    cluster.compute("n", {a.member_id: units("c", "c-0"), "n": NO_UNITS})
    assert a.heartbeat() == ErrorCode.REBALANCE_IN_PROGRESS
    a.join()
    assert a.sync().assigned == units("c", "c-0")
    again = Classic(cluster, instance="i1")
    assert again.join().error_code == ErrorCode.UNRELEASED_INSTANCE_ID  # a still holds the instance
    assert a.leave() == 0
    assert again.join().error_code == 0
    assert again.sync().assigned == units("c", "c-0")
    assert cluster.heartbeat("n").error_code == 0


def test_a_classic_worker_whose_work_changed_asks_for_a_new_assignment() -> None:
    cluster = Cluster()
    cluster.heartbeat("n")
    a = Classic(cluster)
    a.join(offset=1)
    cluster.compute("n", {a.member_id: units("c"), "n": NO_UNITS})
    epoch = cluster.coordinator.state.worker_groups[GROUP].group_epoch
    a.join(offset=1)
    assert cluster.coordinator.state.worker_groups[GROUP].group_epoch == epoch
    a.join(offset=2)
    assert cluster.coordinator.state.worker_groups[GROUP].group_epoch == epoch + 1
    assert cluster.heartbeat("n").error_code == ErrorCode.COMPUTE_ASSIGNMENT


def test_a_downgrade_interrupted_by_a_failover_still_rebalances() -> None:
    """Mixed seed 52042: the downgrade writes the classic group (Stable, the assignments the
    coordinator gave) and starts a rebalance that is not written; a coordinator loading that
    group found it settled, and the units the last new-protocol worker had released stayed
    unassigned. A loaded connect group whose assignments no leader made rebalances."""
    cluster = Cluster()
    a = classic_group(cluster, units("c"))
    cluster.heartbeat("n")
    cluster.compute("n", {a.member_id: units("c"), "n": units("d")})
    cluster.heartbeat("n")
    cluster.heartbeat("n", epoch=-1)  # the last new-protocol worker leaves: downgraded
    assert state(cluster) == "classic"
    old = cluster.coordinator
    cluster.coordinator = GroupCoordinator.replaying(list(old.log or ()), cluster.now, old.config)
    group = cluster.coordinator.state.classic_groups[GROUP]
    assert group.state.name == "PREPARING_REBALANCE"
    joined = a.join(runs=units("c"))
    assert joined.leader == a.member_id  # its leader assigns "d" again
