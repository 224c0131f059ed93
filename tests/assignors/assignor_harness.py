"""Helpers for the client-side assignor tests: scripted assignors and a group of consumers polled
in turn by the test thread (so callbacks, errors and their order are easy to observe).

* `Scripted`: a `PartitionAssignor` whose ``assign`` runs a function the test chooses, recording
  every spec it gets, the thread it ran on, and every ``on_assignment`` call in its member's
  event log (next to the rebalance callbacks, to check their order).
* `Group`: consumers of one group on a `ReferenceCluster`; `Group.wait` polls every consumer
  until a condition holds or a deadline passes; `Group.settled` checks the group converged to an
  expected assignment on both sides (each consumer's ``assignment()`` and ``describe_group``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaException
from waiting import wait_until

from kconsumer import (
    AssignmentSpec,
    AssignorMetadata,
    Consumer,
    GroupAssignment,
    GroupMetadata,
    MemberAssignment,
    PartitionAssignor,
)
from kconsumer.testing import ReferenceCluster

Partitions = dict[str, tuple[int, ...]]
Compute = Callable[[AssignmentSpec], GroupAssignment]


def fast_cluster(**options: Any) -> ReferenceCluster:
    """A reference cluster (not started) with short group timers: heartbeat every 100 ms,
    session timeout 2 s, assignments computed at once."""
    options.setdefault("heartbeat_interval_ms", 100)
    options.setdefault("session_timeout_ms", 2000)
    options.setdefault("assignment_interval_ms", 0)
    return ReferenceCluster(**options)


def round_robin(spec: AssignmentSpec) -> GroupAssignment:
    """Every partition of every topic in turn to its subscribers (sorted by member id), with the
    member's id as its assignment metadata."""
    given: dict[str, list[tuple[str, int]]] = {m: [] for m in spec.members}
    for topic in sorted(spec.topics):
        subscribers = spec.subscribers(topic)
        for p in range(spec.topics[topic].num_partitions):
            given[subscribers[p % len(subscribers)]].append((topic, p))
    return GroupAssignment(members={m: MemberAssignment(tps, m.encode()) for m, tps in given.items()})


@dataclass
class Call:
    """One ``assign`` call: the spec, the thread it ran on and what it returned (or raised)."""

    spec: AssignmentSpec
    thread: str
    result: GroupAssignment | None = None
    error: BaseException | None = None


class Scripted(PartitionAssignor):
    """A test assignor: ``assign`` runs `compute` (default `round_robin`)."""

    def __init__(
        self,
        name: str = "scripted",
        compute: Compute = round_robin,
        *,
        low: int = 0,
        high: int = 0,
        meta: AssignorMetadata | None = None,
    ) -> None:
        self.name = name
        self.minimum_version = low
        self.maximum_version = high
        self.compute = compute
        self.meta = meta if meta is not None else AssignorMetadata(version=high)
        self.calls: list[Call] = []
        self.events: list[tuple[Any, ...]] = []
        self.lock = threading.Lock()

    def metadata(self) -> AssignorMetadata:
        return self.meta

    def assign(self, spec: AssignmentSpec) -> GroupAssignment:
        call = Call(spec, threading.current_thread().name)
        with self.lock:
            self.calls.append(call)
        try:
            call.result = self.compute(spec)
        except BaseException as exc:
            call.error = exc
            raise
        return call.result

    def on_assignment(self, error: int, assignment: MemberAssignment, group_metadata: GroupMetadata) -> None:
        self.events.append(("on_assignment", error, assignment, group_metadata))


@dataclass
class Member:
    """One consumer of the group and what the test observed of it."""

    consumer: Consumer
    assignor: Scripted | None
    events: list[tuple[Any, ...]]
    errors: list[KafkaException] = field(default_factory=list)
    closed: bool = False

    @property
    def id(self) -> str:
        return self.consumer.memberid()

    def owned(self) -> Partitions:
        """What ``assignment()`` says, by topic."""
        out: dict[str, list[int]] = {}
        for tp in self.consumer.assignment():
            out.setdefault(tp.topic, []).append(tp.partition)
        return {t: tuple(sorted(p)) for t, p in sorted(out.items())}

    def poll(self, timeout: float) -> None:
        try:
            self.consumer.poll(timeout)
        except KafkaException as exc:
            self.errors.append(exc)


class Group:
    """Consumers of group `group_id` subscribed to `topics`, polled by the test thread."""

    def __init__(
        self, cluster: ReferenceCluster, group_id: str = "g", topics: tuple[str, ...] = ("t",)
    ) -> None:
        self.cluster = cluster
        self.group_id = group_id
        self.topics = topics
        self.members: list[Member] = []

    def add(self, *assignors: Scripted, subscribe: bool = True, **config: Any) -> Member:
        """A new consumer with these local assignors (none: server-side assignment)."""
        settings: dict[str, Any] = {
            "bootstrap.servers": self.cluster.bootstrap_servers,
            "group.id": self.group_id,
            "enable.auto.commit": False,
            "log_level": 3,
        }
        if assignors:
            settings["group.local.assignors"] = list(assignors)
        settings.update(config)
        events: list[tuple[Any, ...]] = assignors[0].events if assignors else []
        member = Member(Consumer(settings), assignors[0] if assignors else None, events)
        if subscribe:
            member.consumer.subscribe(
                list(self.topics),
                on_assign=lambda _c, parts: events.append(
                    ("assigned", sorted((p.topic, p.partition) for p in parts))
                ),
                on_revoke=lambda _c, parts: events.append(
                    ("revoked", sorted((p.topic, p.partition) for p in parts))
                ),
            )
        self.members.append(member)
        return member

    @property
    def live(self) -> list[Member]:
        return [m for m in self.members if not m.closed]

    def poll(self, timeout: float = 0.01) -> None:
        for member in self.live:
            member.poll(timeout)

    def wait(self, condition: Callable[[], Any], timeout: float = 15.0, what: str = "") -> Any:
        """Poll every live consumer until `condition()` is truthy (returned) or fail after `timeout` s."""

        def state() -> str:
            return str({m.id: (m.owned(), [str(e) for e in m.errors]) for m in self.live})

        return wait_until(condition, timeout, what=what, before=self.poll, describe=state)

    def settled(self, expected: Mapping[str, Partitions]) -> bool:
        """Every live consumer owns exactly `expected[its id]` and the coordinator agrees: the
        group is stable with exactly these assignments and targets."""
        if any(m.owned() != dict(expected.get(m.id, {})) for m in self.live):
            return False
        group = self.cluster.describe_group(self.group_id)
        if group is None or group.state != "Stable" or set(group.members) != {m.id for m in self.live}:
            return False
        return all(
            {t: tuple(p) for t, p in d.assignment.items() if p} == dict(expected.get(mid, {}))
            and {t: tuple(p) for t, p in d.target.items() if p} == dict(expected.get(mid, {}))
            for mid, d in group.members.items()
        )

    def close(self, member: Member) -> None:
        if not member.closed:
            member.closed = True
            member.consumer.close(timeout=10)

    def close_all(self) -> None:
        for member in self.members:
            with contextlib.suppress(Exception):  # teardown: the test already failed or passed
                self.close(member)


def _pairs(partitions: list[Any]) -> list[tuple[str, int]]:
    return sorted((p.topic, p.partition) for p in partitions)


def expected_from(result: GroupAssignment) -> dict[str, Partitions]:
    """The assignment a `GroupAssignment` installs, member -> topic -> partitions."""
    return {m: dict(a.partitions) for m, a in result.members.items() if a.partitions}
