"""The application's own assignors with ``group.protocol=classic``: `PartitionAssignor`s in
``partition.assignment.strategy``, run by the group's leader over the members' subscriptions, on
the reference cluster, with the ledger checking that no partition is read by two members at once
and that every record is consumed.

What the assignor API promises there: every member's ``metadata()`` bytes reach the leader's
``assign(spec)`` as the member's user data (version -1), the bytes ``assign`` writes for a
member reach that member's ``on_assignment``; a cooperative assignor (``rebalance_protocol =
"cooperative"``) never hands a partition to a new owner while another member still owns it,
whatever it returns; an assignor that raises or returns an invalid assignment is reported from
``poll()`` on the leader, which joins again (after a backoff) until it succeeds."""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from backends import Cluster, open_cluster, stable_classic_group
from consumer_harness import Feeder, Ledger, Member, cluster_committed, config, wait_until

from kconsumer import (
    AssignmentSpec,
    AssignorMetadata,
    GroupAssignment,
    GroupMetadata,
    MemberAssignment,
    PartitionAssignor,
)

pytestmark = pytest.mark.timeout(240)

_names = itertools.count()


def _dealt(spec: AssignmentSpec, order: Sequence[str]) -> dict[str, list[tuple[str, int]]]:
    """Every partition of every topic dealt in turn to the subscribers in `order`."""
    dealt: dict[str, list[tuple[str, int]]] = {m: [] for m in spec.members}
    for topic in sorted(spec.topics):
        subscribers = [m for m in order if topic in spec.members[m].subscribed_topics]
        for partition in range(spec.topics[topic].num_partitions):
            dealt[subscribers[partition % len(subscribers)]].append((topic, partition))
    return dealt


class LabelOrder(PartitionAssignor):
    """Eager: partitions dealt to the members in the order of their labels (their user data);
    each member's assignment carries ``label:<its label>``."""

    name = "label-order"

    def __init__(self, label: str) -> None:
        self.label = label
        self.specs: list[AssignmentSpec] = []
        self.assignments: list[tuple[int, MemberAssignment, GroupMetadata]] = []

    def metadata(self) -> AssignorMetadata:
        return AssignorMetadata(data=self.label.encode())

    def assign(self, spec: AssignmentSpec) -> GroupAssignment:
        self.specs.append(spec)
        order = sorted(spec.members, key=lambda m: spec.members[m].metadata.data)
        return GroupAssignment(
            members={
                m: MemberAssignment(parts, data=b"label:" + spec.members[m].metadata.data)
                for m, parts in _dealt(spec, order).items()
            }
        )

    def on_assignment(self, error: int, assignment: MemberAssignment, group_metadata: GroupMetadata) -> None:
        self.assignments.append((error, assignment, group_metadata))


class ShuffledCooperative(PartitionAssignor):
    """Cooperative by declaration, but careless: deals the partitions by member id (random ids,
    so every rebalance moves partitions between members that still own them)."""

    name = "shuffled"
    rebalance_protocol = "cooperative"

    def assign(self, spec: AssignmentSpec) -> GroupAssignment:
        dealt = _dealt(spec, sorted(spec.members))
        return GroupAssignment(members={m: MemberAssignment(parts) for m, parts in dealt.items()})


class FailsAtFirst(PartitionAssignor):
    """Raises for its first `failures` calls, then returns an invalid assignment `broken` times (a
    partition that does not exist), then deals the partitions in member order."""

    name = "fails-at-first"

    def __init__(self, failures: int, broken: int) -> None:
        self.failures = failures
        self.broken = broken
        self.calls = 0
        self._lock = threading.Lock()

    def assign(self, spec: AssignmentSpec) -> GroupAssignment:
        with self._lock:
            self.calls += 1
            call = self.calls
        if call <= self.failures:
            raise RuntimeError(f"assignor outage #{call}")
        dealt = _dealt(spec, sorted(spec.members))
        if call <= self.failures + self.broken:
            first = min(dealt)
            dealt[first].append((sorted(spec.topics)[0], 99))
        return GroupAssignment(members={m: MemberAssignment(parts) for m, parts in dealt.items()})


def _settings(bootstrap: str, group: str, strategy: Any) -> dict[str, Any]:
    return config(
        bootstrap,
        group,
        verbatim={
            "group.protocol": "classic",
            "partition.assignment.strategy": strategy,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 200,
            "retry.backoff.ms": 50,
        },
    )


def _owned_all(members: Sequence[Member], partitions: int) -> bool:
    owned = [m.owned() for m in members]
    return sum(len(o) for o in owned) == partitions and all(owned)


@contextlib.contextmanager
def _topic_and_group(
    backend: str, prefix: str, partitions: int
) -> Iterator[tuple[Cluster, str, Ledger, Feeder]]:
    """A cluster of `backend` with a topic of `partitions` being fed, and a group of the same name:
    (cluster, name, ledger, feeder)."""
    with open_cluster(backend, initial_rebalance_delay_ms=200) as cluster:
        name = f"{prefix}-{next(_names)}"
        cluster.create_topic(name, partitions)
        yield cluster, name, Ledger(cluster_committed(cluster, name)), Feeder(cluster, name)


def _partitions(member: Member) -> set[int]:
    return {p for _topic, p in member.owned()}


def _finish(feeder: Feeder, ledger: Ledger, running: Sequence[Member], everyone: Sequence[Member]) -> None:
    """Every record produced is consumed, the running members close, nobody saw an error, and
    the ledger holds."""
    produced = feeder.stop()
    wait_until(lambda: ledger.has_all(produced), timeout=60, what="every record")
    for member in running:
        member.close()
    for member in everyone:
        assert member.errors == [], member.errors
    ledger.check(produced)


def test_a_user_assignor_sees_the_members_user_data_and_its_bytes_reach_each_member(backend: str) -> None:
    with _topic_and_group(backend, "user-eager", 6) as (cluster, topic, ledger, feeder):
        bootstrap, group = cluster.bootstrap_servers, topic
        assignors = {label: LabelOrder(label) for label in ("b", "a", "c")}
        members = []
        for label, assignor in assignors.items():
            settings = _settings(bootstrap, group, [assignor])
            members.append(Member(ledger, label, settings, [topic]))
            wait_until(lambda: _owned_all(members, 6), timeout=60, what=f"{len(members)} members")
        # Labels a, b, c deal partitions 0/3, 1/4, 2/5 (members b and a joined first).
        by_label = {m.name: _partitions(m) for m in members}
        assert by_label == {"a": {0, 3}, "b": {1, 4}, "c": {2, 5}}
        assert stable_classic_group(cluster, group).protocol_name == "label-order"
        leader_specs = [s for a in assignors.values() for s in a.specs]
        last = leader_specs[-1]
        assert sorted(m.metadata.data for m in last.members.values()) == [b"a", b"b", b"c"]
        assert {m.metadata.version for m in last.members.values()} == {-1}
        for label, assignor in assignors.items():
            error, assignment, metadata = assignor.assignments[-1]
            assert error == 0 and assignment.data == b"label:" + label.encode()
            assert {p for ps in assignment.partitions.values() for p in ps} == by_label[label]
            assert metadata.group_id == group and metadata.member_epoch > 0
        members[1].close()  # "a" leaves: b and c share the six partitions
        running = [members[0], members[2]]
        wait_until(lambda: _owned_all(running, 6), timeout=60, what="b and c")
        assert {m.name: _partitions(m) for m in running} == {"b": {0, 2, 4}, "c": {1, 3, 5}}
        _finish(feeder, ledger, running, members)


def test_a_careless_cooperative_assignor_never_hands_over_a_partition_still_owned(backend: str) -> None:
    with _topic_and_group(backend, "user-coop", 8) as (cluster, topic, ledger, feeder):
        bootstrap, group = cluster.bootstrap_servers, topic
        settings = _settings(bootstrap, group, "test_classic_user_assignors:ShuffledCooperative")
        members: list[Member] = []
        for name in ("k1", "k2", "k3", "k4"):
            members.append(Member(ledger, name, settings, [topic]))
            wait_until(lambda: _owned_all(members, 8), timeout=60, what=f"{len(members)} members")
        members[0].close()
        members[2].close()
        running = [members[1], members[3]]
        wait_until(lambda: _owned_all(running, 8), timeout=60, what="k2 and k4")
        _finish(feeder, ledger, running, members)


def test_a_failing_assignor_is_reported_and_the_leader_retries_until_it_assigns(backend: str) -> None:
    with _topic_and_group(backend, "user-fails", 4) as (cluster, topic, ledger, feeder):
        bootstrap, group = cluster.bootstrap_servers, topic
        assignor = FailsAtFirst(failures=2, broken=1)
        member = Member(ledger, "k1", _settings(bootstrap, group, [assignor]), [topic])
        wait_until(lambda: _owned_all([member], 4), timeout=60, what="the partitions after the failures")
        texts = [str(e) for e in member.errors]
        assert len(texts) == 3, texts
        assert all("assignor 'fails-at-first'" in t for t in texts), texts
        assert "RuntimeError: assignor outage #1" in texts[0] and "outage #2" in texts[1]
        assert "only existing partitions" in texts[2] and "partition 99" in texts[2]
        assert assignor.calls == 4
        member.errors.clear()
        _finish(feeder, ledger, [member], [member])
