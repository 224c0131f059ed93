"""Coordinator scale: assignor time over Kafka's grid, heartbeats per second and memory per member.

* **Assignors**: `benchmarks.assignor_scale` (a colleague's mirror of Kafka's
  ``ServerSideAssignorBenchmark``), run over the chosen grid, each case next to Kafka's published
  JMH figure where one exists (as published with Kafka's benchmarks; other hardware, the JVM: orders of
  magnitude) and our targets.
* **Heartbeats**: a stable group of 10,000 members on `kconsumer.broker.coordinator.GroupCoordinator`
  (the sans-IO core, no network): built by 10,000 joins batched by the assignment interval (one
  target computation), one heartbeat per member to receive its partitions and one to acknowledge
  them; then stable heartbeats (member epoch only, every other field null = unchanged, as KIP-848
  clients send them) are timed, round-robin over the members.
* **Memory per member**: the same build under ``tracemalloc``: memory held after the group is
  stable, divided by the members (group state, target and current assignments, timers).
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kconsumer.broker.coordinator import CoordinatorConfig, GroupCoordinator, MetadataImage, TopicMetadata
from kconsumer.protocol.messages.consumer_group import ConsumerGroupHeartbeatRequest, TopicPartitions
from kconsumer.protocol.uuid import Uuid

from . import assignor_scale
from .common import log

GROUP = "scale"


@dataclass
class AssignorRow:
    assignor: str
    subscription: str
    assignment: str
    members: int
    ratio: int
    topics: int
    #: Median and best ms per assign().
    ms: float
    best_ms: float
    kafka_ms: float | None
    kafka_source: str | None
    target_ms: float | None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def assignors(
    members: Sequence[int], ratios: Sequence[int], topics: Sequence[int], names: Sequence[str], repeat: int
) -> list[AssignorRow]:
    """ms per assign() (median of `repeat`) over the grid, in `assignor_scale`'s order."""
    rows = []
    for name in names:
        for subscription in (assignor_scale.HOMOGENEOUS, assignor_scale.HETEROGENEOUS):
            for assignment in ("FULL", "INCREMENTAL"):
                for m in members:
                    for ratio in ratios:
                        for t in topics:
                            if m * ratio < t:
                                continue
                            case = assignor_scale.Case(name, subscription, assignment, m, ratio, t)
                            measured = assignor_scale.measure(case, repeat)
                            # (median, minimum) in newer versions of assignor_scale, the median before
                            ms = float(measured[0] if isinstance(measured, tuple) else measured)
                            best = float(measured[1]) if isinstance(measured, tuple) else ms
                            sub = subscription.value
                            kafka = assignor_scale.KAFKA_FIGURES.get((name, sub, assignment, m, ratio, t))
                            target = assignor_scale.TARGETS.get((name, sub, assignment, m, ratio))
                            rows.append(
                                AssignorRow(
                                    name,
                                    sub,
                                    assignment,
                                    m,
                                    ratio,
                                    t,
                                    ms,
                                    best,
                                    kafka[0] if kafka else None,
                                    kafka[1] if kafka else None,
                                    target,
                                )
                            )
                            log(f"coordinator: {name} {sub} {assignment} {m}x{ratio} {t} topics: {ms:.2f} ms")
    return rows


class StableGroup:
    """A consumer group of `members` members on a bare `GroupCoordinator`, brought to stable."""

    def __init__(self, members: int, ratio: int, topics: int) -> None:
        self.coordinator = GroupCoordinator(CoordinatorConfig(assignment_interval_ms=1000), keep_log=False)
        per_topic = max(1, members * ratio // topics)
        metadata = [TopicMetadata(Uuid.from_int(i + 1), f"topic-{i}", per_topic) for i in range(topics)]
        self.now = 1_000
        self.coordinator.update_metadata(MetadataImage.of(metadata, 1), self.now)
        names = [t.name for t in metadata]
        self.epochs: dict[str, int] = {}
        start = time.perf_counter()
        for i in range(members):
            member_id = f"member-{i:06d}"
            request = ConsumerGroupHeartbeatRequest(
                group_id=GROUP,
                member_id=member_id,
                member_epoch=0,
                rebalance_timeout_ms=60_000,
                subscribed_topic_names=names,
                subscribed_topic_regex="",
                topic_partitions=[],
            )
            self.epochs[member_id] = self._send(request)
        self.join_seconds = time.perf_counter() - start
        self.now += 1_001  # past the assignment interval: the next heartbeat computes the target once
        self.coordinator.poll(self.now)
        start = time.perf_counter()
        owned: dict[str, list[TopicPartitions] | None] = {}
        for _ in range(2):  # receive the assignment, then acknowledge it
            for member_id in self.epochs:
                request = ConsumerGroupHeartbeatRequest(
                    group_id=GROUP,
                    member_id=member_id,
                    member_epoch=self.epochs[member_id],
                    topic_partitions=owned.get(member_id),
                )
                response = self.coordinator.heartbeat(request, 1, self.now).response
                if response.error_code:
                    raise RuntimeError(f"heartbeat failed: {response.error_code} {response.error_message}")
                self.epochs[member_id] = response.member_epoch
                if response.assignment is not None:
                    owned[member_id] = [
                        TopicPartitions(topic_id=tp.topic_id, partitions=list(tp.partitions))
                        for tp in response.assignment.topic_partitions
                    ]
            self.now += 10
        self.reconcile_seconds = time.perf_counter() - start
        group = self.coordinator.group(GROUP)
        assert group is not None
        epochs = set(self.epochs.values())
        if len(epochs) != 1 or sum(
            len(p) for tps in owned.values() if tps for p in [t.partitions for t in tps]
        ) != (per_topic * topics):
            raise RuntimeError(f"the group did not become stable (member epochs {sorted(epochs)[:5]})")

    def _send(self, request: ConsumerGroupHeartbeatRequest) -> int:
        response = self.coordinator.heartbeat(request, 1, self.now).response
        if response.error_code:
            raise RuntimeError(f"heartbeat failed: {response.error_code} {response.error_message}")
        return int(response.member_epoch)

    def stable_heartbeats(self, count: int) -> float:
        """Heartbeats per second for `count` stable heartbeats (round-robin over the members)."""
        requests = [
            ConsumerGroupHeartbeatRequest(group_id=GROUP, member_id=member_id, member_epoch=epoch)
            for member_id, epoch in self.epochs.items()
        ]
        heartbeat = self.coordinator.heartbeat
        now = self.now
        gc.collect()
        start = time.perf_counter()
        for i in range(count):
            request = requests[i % len(requests)]
            response = heartbeat(request, 1, now + i // len(requests)).response
            if response.error_code:
                raise RuntimeError(f"stable heartbeat failed: {response.error_code}")
        return count / (time.perf_counter() - start)


@dataclass
class HeartbeatResult:
    members: int
    ratio: int
    topics: int
    join_s: float
    reconcile_s: float
    heartbeats_per_s: float
    bytes_per_member: float

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def heartbeats(members: int = 10_000, ratio: int = 10, topics: int = 100, rounds: int = 5) -> HeartbeatResult:
    """Stable heartbeats/s (median of three timings of `rounds` heartbeats per member) and the
    memory held per member."""
    group = StableGroup(members, ratio, topics)
    rates = sorted(group.stable_heartbeats(members * rounds) for _ in range(3))
    log(
        f"coordinator: {members} members built in {group.join_seconds:.1f}"
        f" + {group.reconcile_seconds:.1f} s; {rates[1]:,.0f} stable heartbeats/s"
    )
    del group
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        traced = StableGroup(members, ratio, topics)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    per_member = held / members
    log(f"coordinator: {held / 2**20:.1f} MiB held, {per_member:,.0f} bytes per member")
    return HeartbeatResult(
        members, ratio, topics, traced.join_seconds, traced.reconcile_seconds, rates[1], per_member
    )
