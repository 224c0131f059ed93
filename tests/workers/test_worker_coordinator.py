"""The reference coordinator's worker groups, driven request by request (sans-IO): the seed's
rules for ConnectGroupHeartbeat, PrepareAssignment and InstallAssignment."""

from __future__ import annotations

import pytest

from kconsumer.assignment.work_units import WorkUnits
from kconsumer.broker.coordinator import GroupCoordinator
from kconsumer.broker.coordinator.config import CoordinatorConfig
from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.classic_group import DescribeGroupsRequest, JoinGroupRequest
from kconsumer.protocol.messages.list_groups import ListGroupsRequest
from kconsumer.protocol.messages.worker_group import (
    ConnectGroupHeartbeatRequest,
    ConnectGroupHeartbeatResponse,
    ConnectGroupInstallAssignmentRequest,
    ConnectGroupPrepareAssignmentRequest,
    ConnectGroupPrepareAssignmentResponse,
    InstalledWorker,
    WorkerAssignor,
    decode_units,
)

GROUP = "workers"


def assignor(lo: int = 0, hi: int = 0, version: int | None = None, reason: int = 0) -> WorkerAssignor:
    return WorkerAssignor(
        name="rr",
        minimum_version=lo,
        maximum_version=hi,
        reason=reason,
        metadata_version=hi if version is None else version,
        metadata_bytes=b"",
    )


class Cluster:
    """A coordinator and a clock."""

    def __init__(self, session_timeout_ms: int = 10_000) -> None:
        self.coordinator = GroupCoordinator(
            CoordinatorConfig(session_timeout_ms=session_timeout_ms, heartbeat_interval_ms=1_000)
        )
        self.now = 0
        self.epochs: dict[str, int] = {}

    def advance(self, ms: int) -> None:
        self.now += ms
        self.coordinator.poll(self.now)

    def heartbeat(
        self,
        member: str,
        *,
        epoch: int | None = None,
        owned: WorkUnits | None = None,
        assignors: list[WorkerAssignor] | None = None,
        instance: str | None = None,
    ) -> ConnectGroupHeartbeatResponse:
        epoch = self.epochs.get(member, 0) if epoch is None else epoch
        joining = epoch == 0
        request = ConnectGroupHeartbeatRequest(
            group_id=GROUP,
            member_id=member,
            member_epoch=epoch,
            instance_id=instance,
            rebalance_timeout_ms=5_000 if joining else -1,
            client_assignors=assignors if assignors is not None else ([assignor()] if joining else None),
            owned=None if owned is None else owned.to_wire(),
        )
        response = self.coordinator.handle(request, 0, self.now).response
        assert isinstance(response, ConnectGroupHeartbeatResponse)
        if response.error_code in (0, ErrorCode.COMPUTE_ASSIGNMENT):
            self.epochs[member] = response.member_epoch
        return response

    def prepare(self, member: str) -> ConnectGroupPrepareAssignmentResponse:
        request = ConnectGroupPrepareAssignmentRequest(
            group_id=GROUP, member_id=member, member_epoch=self.epochs[member]
        )
        response = self.coordinator.handle(request, 0, self.now).response
        assert isinstance(response, ConnectGroupPrepareAssignmentResponse)
        return response

    def install(self, member: str, group_epoch: int, target: dict[str, WorkUnits]) -> int:
        request = ConnectGroupInstallAssignmentRequest(
            group_id=GROUP,
            member_id=member,
            member_epoch=self.epochs[member],
            group_epoch=group_epoch,
            error=0,
            members=[
                InstalledWorker(member_id=m, units=u.to_wire(), metadata_version=0, metadata_bytes=b"")
                for m, u in target.items()
            ],
            assignor_state_version=0,
            assignor_state=b"",
        )
        return self.coordinator.handle(request, 0, self.now).response.error_code  # type: ignore[attr-defined]

    def compute(self, member: str, target: dict[str, WorkUnits]) -> None:
        """`member` was chosen: prepare and install `target`."""
        prepared = self.prepare(member)
        assert prepared.error_code == 0, prepared
        assert self.install(member, prepared.group_epoch, target) == 0


def units(*labels: str) -> WorkUnits:
    """WorkUnits from labels: ``c`` a connector, ``c-1`` a task."""
    connectors: list[str] = []
    tasks: list[tuple[str, int]] = []
    for label in labels:
        name, _, task = label.rpartition("-")
        if name and task.isdigit():
            tasks.append((name, int(task)))
        else:
            connectors.append(label)
    return WorkUnits.of(connectors, tasks)


def assigned(response: ConnectGroupHeartbeatResponse) -> WorkUnits:
    assert response.assignment is not None, response
    return WorkUnits.from_wire(response.assignment.units)


def test_a_lone_worker_is_chosen_and_gets_what_it_installs() -> None:
    cluster = Cluster()
    first = cluster.heartbeat("a")
    assert first.error_code == ErrorCode.COMPUTE_ASSIGNMENT
    assert first.member_epoch == 1
    cluster.compute("a", {"a": units("c", "c-0", "c-1")})
    response = cluster.heartbeat("a")
    assert response.error_code == 0
    assert response.member_epoch == 2
    assert assigned(response) == units("c", "c-0", "c-1")


def _two_workers(cluster: Cluster) -> None:
    cluster.heartbeat("a")
    cluster.compute("a", {"a": units("c", "c-0", "c-1")})
    cluster.heartbeat("a")
    joined = cluster.heartbeat("b")
    # It is at the current target's epoch at once, with nothing (the target has no part for it).
    assert joined.error_code == 0 and joined.member_epoch == 2 and assigned(joined) == units()
    asked = cluster.heartbeat("a", owned=units("c", "c-0", "c-1"))
    assert asked.error_code == ErrorCode.COMPUTE_ASSIGNMENT
    cluster.compute("a", {"a": units("c", "c-0"), "b": units("c-1")})


def test_revocation_comes_first_and_assignment_only_after_it_is_confirmed() -> None:
    cluster = Cluster()
    _two_workers(cluster)
    # b's target holds c-1, which a still runs: b gets nothing yet.
    waiting = cluster.heartbeat("b")
    assert waiting.member_epoch == 3 and assigned(waiting) == units()
    # a is told only what it keeps (never new units in the same step), at its old epoch.
    revoking = cluster.heartbeat("a")
    assert revoking.member_epoch == 2 and assigned(revoking) == units("c", "c-0")
    assert cluster.heartbeat("b").assignment is None  # still unreleased
    confirmed = cluster.heartbeat("a", owned=units("c", "c-0"))
    assert confirmed.member_epoch == 3 and assigned(confirmed) == units("c", "c-0")
    released = cluster.heartbeat("b")
    assert assigned(released) == units("c-1")


def test_a_worker_that_does_not_confirm_its_revocation_in_time_is_removed() -> None:
    cluster = Cluster()
    _two_workers(cluster)
    cluster.heartbeat("a")  # told to revoke c-1
    cluster.advance(5_001)  # its rebalance timeout
    assert cluster.heartbeat("a").error_code == ErrorCode.UNKNOWN_MEMBER_ID
    asked = cluster.heartbeat("b")
    assert asked.error_code == ErrorCode.COMPUTE_ASSIGNMENT


def test_a_wrong_epoch_fences_and_removes_the_worker() -> None:
    cluster = Cluster()
    _two_workers(cluster)
    fenced = cluster.heartbeat("b", epoch=7)
    assert fenced.error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert "b" not in cluster.coordinator.state.worker_groups[GROUP].workers


def test_a_lost_answer_is_forgiven_when_what_it_runs_is_a_subset_of_its_assignment() -> None:
    cluster = Cluster()
    _two_workers(cluster)
    cluster.heartbeat("a")
    cluster.heartbeat("a", owned=units("c", "c-0"))  # moves a to epoch 3; say the answer was lost
    again = cluster.heartbeat("a", epoch=2, owned=units("c", "c-0"))
    assert again.error_code == 0 and again.member_epoch == 3
    # Claiming more than its assignment is not forgiven.
    fenced = cluster.heartbeat("a", epoch=2, owned=units("c", "c-0", "c-1"))
    assert fenced.error_code == ErrorCode.FENCED_MEMBER_EPOCH


def test_the_worker_whose_versions_cover_every_other_range_is_chosen() -> None:
    """The seed's example: A [1-5], B [3-4], C [2-4]: A must compute."""
    cluster = Cluster()
    assert cluster.heartbeat("b", assignors=[assignor(3, 4)]).error_code == ErrorCode.COMPUTE_ASSIGNMENT
    cluster.compute("b", {"b": units()})
    cluster.heartbeat("c", assignors=[assignor(2, 4)])
    cluster.heartbeat("a", assignors=[assignor(1, 5, version=3)])
    chosen = [m for m in ("a", "b", "c") if cluster.heartbeat(m).error_code == ErrorCode.COMPUTE_ASSIGNMENT]
    assert chosen == ["a"]
    assert cluster.prepare("a").error_code == 0


def test_versions_that_do_not_overlap_are_unsupported() -> None:
    cluster = Cluster()
    cluster.heartbeat("a", assignors=[assignor(1, 2)])
    refused = cluster.heartbeat("b", assignors=[assignor(3, 4)])
    assert refused.error_code == ErrorCode.UNSUPPORTED_ASSIGNOR


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"member_id": ""}, "MemberId"),
        ({"group_id": ""}, "GroupId"),
        ({"member_epoch": -3}, "MemberEpoch"),
        ({"instance_id": ""}, "InstanceId"),
        ({"rebalance_timeout_ms": 0}, "RebalanceTimeoutMs"),
        ({"client_assignors": []}, "ClientAssignors"),
        ({"client_assignors": [assignor(2, 1, version=1)]}, "versions"),
        ({"owned": units("c").to_wire()}, "runs nothing"),
    ],
)
def test_invalid_heartbeats_are_refused_naming_the_field(change: dict[str, object], why: str) -> None:
    cluster = Cluster()
    fields: dict[str, object] = {
        "group_id": GROUP,
        "member_id": "a",
        "member_epoch": 0,
        "rebalance_timeout_ms": 5_000,
        "client_assignors": [assignor()],
    }
    request = ConnectGroupHeartbeatRequest(**{**fields, **change})  # type: ignore[arg-type]
    response = cluster.coordinator.handle(request, 0, 0).response
    assert response.error_code == ErrorCode.INVALID_REQUEST  # type: ignore[attr-defined]
    assert why in (response.error_message or "")  # type: ignore[attr-defined]
    assert GROUP not in cluster.coordinator.state.worker_groups


def test_a_server_assignor_is_unsupported() -> None:
    cluster = Cluster()
    request = ConnectGroupHeartbeatRequest(
        group_id=GROUP, member_id="a", member_epoch=0, rebalance_timeout_ms=5_000, server_assignor="uniform"
    )
    response = cluster.coordinator.handle(request, 0, 0).response
    assert response.error_code == ErrorCode.UNSUPPORTED_ASSIGNOR  # type: ignore[attr-defined]


def test_only_the_chosen_worker_may_prepare_and_install() -> None:
    cluster = Cluster()
    _two_workers(cluster)
    cluster.heartbeat("b")
    assert cluster.prepare("b").error_code == ErrorCode.UNKNOWN_MEMBER_ID
    cluster.epochs["a"] = 9
    assert cluster.prepare("a").error_code == ErrorCode.FENCED_MEMBER_EPOCH


def test_an_install_giving_a_unit_twice_is_refused() -> None:
    cluster = Cluster()
    cluster.heartbeat("a")
    prepared = cluster.prepare("a")
    code = cluster.install("a", prepared.group_epoch, {"a": units("c"), "ghost": units("c")})
    assert code == ErrorCode.INVALID_REQUEST


def test_a_static_worker_back_within_its_session_keeps_its_units() -> None:
    cluster = Cluster()
    cluster.heartbeat("a", instance="i-a")
    cluster.compute("a", {"a": units("c", "c-0")})
    cluster.heartbeat("a")
    left = cluster.heartbeat("a", epoch=-2)
    assert left.member_epoch == -2
    back = cluster.heartbeat("a2", instance="i-a")
    assert back.error_code == 0
    assert assigned(back) == units("c", "c-0")
    group = cluster.coordinator.state.worker_groups[GROUP]
    assert set(group.workers) == {"a2"} and group.group_epoch == 2  # no rebalance


def test_a_static_worker_not_back_in_time_is_removed() -> None:
    cluster = Cluster()
    cluster.heartbeat("a", instance="i-a")
    cluster.heartbeat("b")
    cluster.heartbeat("a", epoch=-2)
    cluster.advance(6_000)
    cluster.heartbeat("b")
    cluster.advance(4_001)
    assert "a" not in cluster.coordinator.state.worker_groups[GROUP].workers


def test_a_leave_frees_the_units_and_a_failover_keeps_the_group() -> None:
    cluster = Cluster()
    _two_workers(cluster)
    cluster.heartbeat("a")
    cluster.heartbeat("a", owned=units("c", "c-0"))
    cluster.heartbeat("b")
    old = cluster.coordinator
    replayed = GroupCoordinator.replaying(list(old.log or ()), cluster.now, old.config)
    assert replayed.state.snapshot() == old.state.snapshot()
    cluster.coordinator = replayed
    assert cluster.heartbeat("a", epoch=-1).member_epoch == -1
    assert cluster.heartbeat("b").error_code == ErrorCode.COMPUTE_ASSIGNMENT


def test_worker_groups_are_listed_and_described_and_refuse_classic_joins() -> None:
    cluster = Cluster()
    cluster.heartbeat("a")
    cluster.compute("a", {"a": units("c")})
    cluster.heartbeat("a")
    listed = cluster.coordinator.handle(ListGroupsRequest(types_filter=["connect"]), 5, 0).response
    assert [(g.group_id, g.group_type, g.group_state) for g in listed.groups] == [  # type: ignore[attr-defined]
        (GROUP, "connect", "Stable")
    ]
    described = cluster.coordinator.handle(DescribeGroupsRequest(groups=[GROUP]), 5, 0).response
    (group,) = described.groups  # type: ignore[attr-defined]
    assert group.protocol_type == "connect" and group.protocol_data == "rr"
    assert WorkUnits.from_wire(decode_units(group.members[0].member_assignment)) == units("c")
    join = JoinGroupRequest(
        group_id=GROUP,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        member_id="",
        protocol_type="connect",
    )
    refused = cluster.coordinator.handle(join, 5, 0).response
    assert refused.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL  # type: ignore[union-attr]


def test_an_install_may_carry_the_epoch_the_worker_prepared_at() -> None:
    """The chosen worker heartbeats while it computes; a heartbeat that moves it to a newer epoch
    does not void its computation."""
    cluster = Cluster()
    _two_workers(cluster)  # a is chosen again by the join of b and installs
    cluster.heartbeat("b", assignors=[assignor(reason=1)])  # asks for a new assignment
    assert cluster.heartbeat("a").error_code == ErrorCode.COMPUTE_ASSIGNMENT
    prepared_at = cluster.epochs["a"]
    prepared = cluster.prepare("a")
    cluster.heartbeat("a", owned=units("c", "c-0"))  # confirms its revocation: a newer epoch
    assert cluster.epochs["a"] > prepared_at
    target = {"a": units("c"), "b": units("c-0", "c-1")}
    cluster.epochs["a"] = prepared_at - 1  # neither its epoch nor the one it prepared at
    assert cluster.install("a", prepared.group_epoch, target) == ErrorCode.FENCED_MEMBER_EPOCH
    cluster.epochs["a"] = prepared_at
    assert cluster.install("a", prepared.group_epoch, target) == 0


def test_an_install_naming_a_static_worker_replaced_since_the_prepare_gives_its_part_to_the_replacement() -> (
    None
):
    """Worker simulation: a static worker left (-2) and came back under a new member id while
    another computed; the install still named the old id. Its units went to nobody, and no
    epoch bump was coming to mend it."""
    cluster = Cluster()
    cluster.heartbeat("a")
    cluster.compute("a", {"a": units()})
    cluster.heartbeat("s", instance="i-s")
    assert cluster.heartbeat("a").error_code == ErrorCode.COMPUTE_ASSIGNMENT
    prepared = cluster.prepare("a")
    cluster.heartbeat("s", epoch=-2)
    cluster.heartbeat("s2", instance="i-s")  # replaces s, no epoch bump
    assert cluster.install("a", prepared.group_epoch, {"a": units("c"), "s": units("c-0")}) == 0
    assert assigned(cluster.heartbeat("s2")) == units("c-0")


def test_a_fenced_worker_s_units_stay_reserved_until_its_session_times_out() -> None:
    """Worker simulation seed 15037: a worker fenced for a stale epoch (its answers were lost)
    still ran its units until it heard of it, but they went to another worker at once."""
    cluster = Cluster(session_timeout_ms=3_000)
    _two_workers(cluster)
    cluster.heartbeat("a")
    cluster.heartbeat("a", owned=units("c", "c-0"))
    fenced = cluster.heartbeat("a", epoch=9, owned=units("c", "c-0"))  # an epoch it never had
    assert fenced.error_code == ErrorCode.FENCED_MEMBER_EPOCH
    group = cluster.coordinator.state.worker_groups[GROUP]
    assert group.workers["a"].holds == units("c", "c-0") and not group.workers["a"].active
    asked = cluster.heartbeat("b")
    assert asked.error_code == ErrorCode.COMPUTE_ASSIGNMENT
    prepared = cluster.prepare("b")
    assert [m.member_id for m in prepared.members] == ["b"]  # the fenced worker is out
    cluster.install("b", prepared.group_epoch, {"b": units("c", "c-0", "c-1")})
    assert assigned(cluster.heartbeat("b")) == units("c-1")  # c and c-0 wait for a's session
    cluster.advance(2_000)
    assert cluster.heartbeat("b").assignment is None  # still waiting
    cluster.advance(1_001)
    assert assigned(cluster.heartbeat("b")) == units("c", "c-0", "c-1")


def test_units_a_worker_never_heard_it_was_given_need_no_revocation() -> None:
    """Worker simulation seed 17076: the answer giving a worker more units was lost; a new target
    took them back before it heard of them. The coordinator waited for it to confirm stopping
    units it never ran, and removed it at its rebalance timeout while it ran the others."""
    cluster = Cluster()
    cluster.heartbeat("a")
    cluster.compute("a", {"a": units("c")})
    cluster.heartbeat("a")
    cluster.heartbeat("b")
    cluster.heartbeat("a", owned=units("c"))
    cluster.compute("a", {"a": units("c", "c-0"), "b": units()})
    old_epoch = cluster.epochs["a"]
    cluster.heartbeat("a")  # gives a c-0: say this answer was lost
    cluster.heartbeat("b", assignors=[assignor(reason=1)])  # chooses a to compute again
    cluster.compute("a", {"a": units("c"), "b": units("c-0")})  # (a's computing part is fine)
    cluster.epochs["a"] = old_epoch
    retry = cluster.heartbeat("a", owned=units("c"))  # its retry after the lost answer
    assert retry.error_code == 0 and assigned(retry) == units("c")
    worker = cluster.coordinator.state.worker_groups[GROUP].workers["a"]
    assert worker.state.name == "STABLE" and not worker.pending_revocation
    assert assigned(cluster.heartbeat("b")) == units("c-0")
