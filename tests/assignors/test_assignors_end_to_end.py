"""Client-side assignors end to end: real `Consumer`s against the in-process reference cluster.

The coordinator picks a member, which prepares, runs its `PartitionAssignor` off the application
thread and the event loop, and installs; every member reconciles to exactly that assignment and
gets ``on_assignment`` before ``on_partitions_assigned``. Also: metadata changes and reasons ask
for a new assignment, version ranges decide who computes, invalid assignments and failing
assignors are reported to the application, a member without the assignor means server-side
assignment, and a computing member that leaves is replaced.
"""

from __future__ import annotations

import threading
import time

import pytest
from assignor_harness import Call, Compute, Group, Member, Scripted, expected_from, round_robin
from confluent_kafka import KafkaError

from kconsumer import AssignmentSpec, AssignorMetadata, GroupAssignment, MemberAssignment
from kconsumer.protocol.messages.consumer_group import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from kconsumer.testing import ReferenceCluster
from kconsumer.testing.wire import WireClient


def all_calls(group: Group) -> list[Call]:
    return [c for m in group.members if m.assignor is not None for c in m.assignor.calls]


def latest(group: Group, members: set[str] | None = None) -> Call | None:
    """The successful computation of the highest group epoch (for exactly `members`, if given)."""
    calls = [
        c
        for c in all_calls(group)
        if c.result is not None and (members is None or set(c.spec.members) == members)
    ]
    return max(calls, key=lambda c: c.spec.group_epoch, default=None)


def settled_on_latest(group: Group) -> Call | None:
    """The latest computation for the live members once the group converged to it."""
    call = latest(group, {m.id for m in group.live})
    if call is not None and call.result is not None and group.settled(expected_from(call.result)):
        return call
    return None


def assignor_name(cluster: ReferenceCluster, group_id: str = "g") -> str:
    host, port = cluster.bootstrap_servers.rsplit(":", 1)
    with WireClient.connect(host, int(port)) as client:
        response = client.call(
            ConsumerGroupDescribeRequest(group_ids=[group_id]), ConsumerGroupDescribeResponse
        )
    name: str = response.groups[0].assignor_name
    return name


def on_assignments(member: Member) -> list[tuple[int, MemberAssignment]]:
    return [(e[1], e[2]) for e in member.events if e[0] == "on_assignment"]


# -- the basic flow ------------------------------------------------------------------------------------


def test_a_group_of_three_gets_exactly_what_the_assignor_computed(group: Group) -> None:
    members = [group.add(Scripted()) for _ in range(3)]
    call = group.wait(lambda: settled_on_latest(group), what="the group to settle on its latest computation")
    ids = sorted(m.id for m in members)
    assert call.result == round_robin(call.spec)
    assert expected_from(call.result) == {
        ids[0]: {"t": (0, 3)},
        ids[1]: {"t": (1, 4)},
        ids[2]: {"t": (2, 5)},
    }
    assert call.spec.topics["t"].num_partitions == 6 and call.spec.assignor_name == "scripted"
    assert all(c.thread.startswith("kconsumer-assignor") for c in all_calls(group))
    # Every member got its own assignment metadata (its id) with its partitions.
    for member in members:
        group.wait(lambda m=member: on_assignments(m) and on_assignments(m)[-1][1].partitions == m.owned())
        error, assignment = on_assignments(member)[-1]
        assert (error, assignment.data, assignment.version) == (0, member.id.encode(), 0)
    assert assignor_name(group.cluster) == "scripted"
    assert not any(m.errors for m in members)


def test_case_study_client_side_assignment(group: Group) -> None:
    """The seed's client-side flow with real consumers: the coordinator asks A, A prepares,
    computes (everything to itself) and installs; B joins, A is asked again and installs a split;
    A revokes before B gets anything; both end with exactly the installed assignment, each
    member's on_assignment (with what the assignor wrote for it) before its partitions arrive."""

    def case_study(spec: AssignmentSpec) -> GroupAssignment:
        if len(spec.members) == 1:
            (only,) = spec.members
            return GroupAssignment(members={only: MemberAssignment({"t": range(6)}, b"tasks=6")})
        first = next(m for m, s in spec.members.items() if s.target_partitions)  # A holds everything
        (second,) = set(spec.members) - {first}
        return GroupAssignment(
            members={
                first: MemberAssignment({"t": [0, 2, 4]}, b"a"),
                second: MemberAssignment({"t": [1, 3, 5]}, b"b"),
            }
        )

    # 1-4. A alone: asked, prepares, installs everything to itself, reconciles.
    a = group.add(Scripted(compute=case_study, meta=AssignorMetadata(version=0, data=b"lag=0")))
    group.wait(lambda: group.settled({a.id: {"t": tuple(range(6))}}), what="A to own everything")
    (first,) = a.assignor.calls if a.assignor else []
    assert [(m, s.metadata.data, s.target_partitions) for m, s in first.spec.members.items()] == [
        (a.id, b"lag=0", {})
    ]
    # Joining gives epoch 1 and nothing (told once); then the installed epoch, on_assignment first.
    assert a.events[:3] == [
        ("assigned", []),
        ("on_assignment", 0, MemberAssignment({"t": range(6)}, b"tasks=6", 0), a.events[1][3]),
        ("assigned", [("t", p) for p in range(6)]),
    ]
    group_metadata = a.events[1][3]
    assert (group_metadata.group_id, group_metadata.member_id, group_metadata.member_epoch) == ("g", a.id, 2)

    # 5-9. B joins; a member is asked again (the coordinator picks the first by member id: A or
    # B), sees both members with their metadata and current targets, and installs the split.
    b = group.add(Scripted(compute=case_study, meta=AssignorMetadata(version=0, data=b"lag=7")))
    split = {a.id: {"t": (0, 2, 4)}, b.id: {"t": (1, 3, 5)}}
    group.wait(lambda: group.settled(split), what="the split")
    second = latest(group)
    assert second is not None and len(all_calls(group)) == 2
    assert {m: (s.metadata.data, s.target_partitions) for m, s in second.spec.members.items()} == {
        a.id: (b"lag=0", {"t": tuple(range(6))}),
        b.id: (b"lag=7", {}),
    }
    # A revoked 1, 3, 5 (and was told its new metadata); B got them after, its metadata first.
    assert ("revoked", [("t", 1), ("t", 3), ("t", 5)]) in a.events
    group.wait(lambda: len(on_assignments(a)) == 2, what="A's on_assignment for the new epoch")
    assert on_assignments(a)[1] == (0, MemberAssignment({"t": [0, 2, 4]}, b"a", 0))
    b_events = [e[:3] if e[0] == "on_assignment" else e for e in b.events]
    assert b_events[-2:] == [
        ("on_assignment", 0, MemberAssignment({"t": [1, 3, 5]}, b"b", 0)),
        ("assigned", [("t", 1), ("t", 3), ("t", 5)]),
    ]
    assert not a.errors and not b.errors


# -- asking for a new assignment -------------------------------------------------------------------


def weighted(spec: AssignmentSpec) -> GroupAssignment:
    """Partitions in proportion to the integer each member sends as metadata (sorted by id)."""
    weight = {m: int(s.metadata.data or b"1") for m, s in sorted(spec.members.items())}
    total, count = sum(weight.values()), spec.topics["t"].num_partitions
    out, start = {}, 0
    for m, w in weight.items():
        share = count * w // total
        out[m] = MemberAssignment({"t": range(start, start + share)})
        start += share
    last = max(out)
    out[last] = MemberAssignment({"t": [*out[last].partitions.get("t", ()), *range(start, count)]})
    return GroupAssignment(members=out)


def test_a_metadata_change_triggers_a_new_assignment(group: Group) -> None:
    a = group.add(Scripted(compute=weighted, meta=AssignorMetadata(version=0, data=b"1")))
    b = group.add(Scripted(compute=weighted, meta=AssignorMetadata(version=0, data=b"1")))
    group.wait(lambda: (call := settled_on_latest(group)) and len(call.spec.members) == 2)
    assert sorted(len(m.owned()["t"]) for m in (a, b)) == [3, 3]
    computations = len(all_calls(group))

    assert a.assignor is not None
    a.assignor.meta = AssignorMetadata(version=0, data=b"2")
    a.consumer.update_assignor_metadata("scripted")
    group.wait(lambda: len(a.owned().get("t", ())) == 4 and settled_on_latest(group), what="A to get 4")
    assert len(b.owned()["t"]) == 2 and len(all_calls(group)) > computations
    call = latest(group)
    assert call is not None and call.spec.members[a.id].metadata.data == b"2"


def test_a_reason_triggers_a_new_assignment(group: Group) -> None:
    a = group.add(Scripted())
    group.wait(lambda: settled_on_latest(group))
    before = len(all_calls(group))
    a.consumer.request_assignment(reason=5)
    group.wait(lambda: len(all_calls(group)) > before, what="a new computation")
    call = all_calls(group)[-1]
    assert call.spec.members[a.id].reason == 5
    with pytest.raises(ValueError, match="non-zero"):
        a.consumer.request_assignment(reason=0)
    with pytest.raises(ValueError, match="no local assignor named"):
        a.consumer.update_assignor_metadata("nope")


# -- who computes -----------------------------------------------------------------------------------


def test_the_member_covering_every_metadata_version_computes(group: Group) -> None:
    """B reads versions 0-2 and sends v2; A reads 0-1 (sends v1), C reads 0-1 (sends v0): only
    B covers every member's version, so B computes, and writes each member's metadata in that
    member's own version."""
    b = group.add(Scripted(low=0, high=2, meta=AssignorMetadata(version=2, data=b"B")))
    group.wait(lambda: settled_on_latest(group))
    a = group.add(Scripted(low=0, high=1, meta=AssignorMetadata(version=1, data=b"A")))
    c = group.add(Scripted(low=0, high=1, meta=AssignorMetadata(version=0, data=b"C")))
    call = group.wait(lambda: (call := settled_on_latest(group)) and len(call.spec.members) == 3 and call)
    assert a.assignor is not None and c.assignor is not None and b.assignor is not None
    assert not a.assignor.calls and not c.assignor.calls and call in b.assignor.calls
    assert {m: s.metadata.version for m, s in call.spec.members.items()} == {a.id: 1, b.id: 2, c.id: 0}
    for member, version in ((a, 1), (b, 2), (c, 0)):
        group.wait(lambda m=member: on_assignments(m) and on_assignments(m)[-1][1].partitions == m.owned())
        assert on_assignments(member)[-1][1].version == version


def test_a_member_without_the_assignor_means_server_side_assignment(group: Group) -> None:
    """docs/assignor-protocol.md §5: every member must list the assignor; C lists none, so the group uses
    the server-side default (uniform) until C leaves, then the client-side one again."""
    a, b = group.add(Scripted("custom")), group.add(Scripted("custom"))
    group.wait(lambda: (call := settled_on_latest(group)) and len(call.spec.members) == 2)
    c = group.add()
    group.wait(
        lambda: (
            all(len(m.owned().get("t", ())) == 2 for m in (a, b, c)) and group.cluster.describe_group("g")
        ),
        what="a uniform assignment of the three",
    )
    assert assignor_name(group.cluster) == "uniform"
    computed = len(all_calls(group))
    until = time.monotonic() + 0.3
    group.wait(lambda: time.monotonic() > until)  # heartbeats go on: no member is asked to compute
    assert len(all_calls(group)) == computed

    group.close(c)
    call = group.wait(
        lambda: (call := settled_on_latest(group)) and len(all_calls(group)) > computed and call
    )
    assert set(call.spec.members) == {a.id, b.id} and assignor_name(group.cluster) == "custom"


def test_a_computing_member_that_leaves_is_replaced(group: Group) -> None:
    """The first computation blocks; meanwhile its member keeps heartbeating (assign runs off the
    event loop), then closes: the coordinator asks another member, whose result is installed."""
    release = threading.Event()
    blocked: list[Scripted] = []
    gate = threading.Lock()

    class Gated(Scripted):
        def assign(self, spec: AssignmentSpec) -> GroupAssignment:
            with gate:
                first = not blocked
                if first:
                    blocked.append(self)
            if first:
                release.wait(30)
            return super().assign(spec)

    try:
        members = [group.add(Gated()) for _ in range(3)]
        group.wait(lambda: blocked, what="a computation to start")
        group.wait(lambda: len((group.cluster.describe_group("g") or group).members) == 3)
        stuck = next(m for m in members if m.assignor is blocked[0])
        session_ms = 2000
        until = time.monotonic() + session_ms / 1000 + 0.5
        group.wait(lambda: time.monotonic() > until)  # longer than the session timeout
        description = group.cluster.describe_group("g")
        assert description is not None and stuck.id in description.members  # still heartbeating

        group.close(stuck)
        call = group.wait(lambda: settled_on_latest(group), what="another member's assignment")
        assert set(call.spec.members) == {m.id for m in members if m is not stuck}
        assert stuck.assignor is not None and call not in stuck.assignor.calls
        assert not stuck.errors
    finally:
        release.set()


# -- failures reported to the application --------------------------------------------------------------


def double_assigns(spec: AssignmentSpec) -> GroupAssignment:
    (member,) = spec.members
    everything = MemberAssignment({"t": range(6)})
    return GroupAssignment(members={member: everything, "someone-else": everything})


def skips_one(spec: AssignmentSpec) -> GroupAssignment:
    (member,) = spec.members
    return GroupAssignment(members={member: MemberAssignment({"t": range(5)})})


def double_assigns_within_the_group(spec: AssignmentSpec) -> GroupAssignment:
    return GroupAssignment(members={m: MemberAssignment({"t": range(6)}) for m in spec.members})


@pytest.mark.parametrize(
    ("compute", "rule", "members"),
    [
        (skips_one, "every partition of every subscribed topic assigned", 1),
        (double_assigns, "only members of the group at the prepared epoch", 1),
        (double_assigns_within_the_group, "each partition assigned exactly once", 2),
    ],
)
def test_an_invalid_assignment_is_rejected_naming_the_rule(
    group: Group, compute: Compute, rule: str, members: int
) -> None:
    consumers = [group.add(Scripted(compute=compute)) for _ in range(members)]
    if members == 2:  # wait for both to be in the group before judging the computation
        group.wait(lambda: any(c.spec.members.keys() == {m.id for m in consumers} for c in all_calls(group)))
    failed = group.wait(lambda: [m for m in consumers if m.errors], what="the rejection to reach poll()")
    error = failed[0].errors[-1].args[0]
    assert error.code() == KafkaError.INVALID_REQUEST and not error.fatal()
    assert rule in error.str() and "rejected the client-side assignment" in error.str()
    if rule != "only members of the group at the prepared epoch":
        assert "('t')" in error.str()  # topic ids are followed by their names
    rejected = max(c.spec.group_epoch for c in all_calls(group))
    description = group.cluster.describe_group("g")
    assert description is not None and description.assignment_epoch < rejected


def test_an_assignor_that_raises_is_reported_and_keeps_the_assignment(group: Group) -> None:
    """An exception in assign() reaches the computing member's poll(); the current target, still
    valid, is installed again with ASSIGNMENT_ERROR, so every member learns of the failure."""
    a = group.add(Scripted())
    group.wait(lambda: group.settled({a.id: {"t": tuple(range(6))}}))
    assert a.assignor is not None

    def broken(spec: AssignmentSpec) -> GroupAssignment:
        raise RuntimeError("cannot decode member metadata")

    a.assignor.compute = broken
    a.consumer.request_assignment()
    group.wait(lambda: a.errors, what="the failure to reach poll()")
    error = a.errors[-1].args[0]
    assert "assignor 'scripted' raised RuntimeError: cannot decode member metadata" in error.str()
    group.wait(lambda: on_assignments(a)[-1][0] == 2, what="on_assignment with ASSIGNMENT_ERROR")
    assert on_assignments(a)[-1][1].partitions == {"t": tuple(range(6))}
    assert group.settled({a.id: {"t": tuple(range(6))}})


def test_the_capacity_example_runs() -> None:
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "examples" / "capacity_assignor.py"
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "capacities 3, 1, 2 over 12 partitions:" in lines
    assert sum(1 for line in lines if line.strip().startswith("capacity ")) == 6
