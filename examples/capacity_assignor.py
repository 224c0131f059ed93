"""A client-side assignor that weighs members by the capacity each one advertises.

Why a client-side assignor: the coordinator's assignors know only members and subscriptions.
Here every consumer announces its *capacity* (say, how many cores it has) in its assignor
metadata, and the assignor gives each member a share of the partitions proportional to it: a
member with capacity 3 gets about three times the partitions of one with capacity 1. When a
member's capacity changes it calls ``consumer.update_assignor_metadata()`` and the group is
reassigned.

Run it by itself; it starts an in-process reference cluster, three consumers in threads with
capacities 3, 1 and 2, prints who got what, lowers the first one's capacity to 1, prints again
and exits::

    python examples/capacity_assignor.py
"""

from __future__ import annotations

import queue
import struct
import sys
import threading
import time
from collections.abc import Callable

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

_CAPACITY = struct.Struct(">i")


class CapacityAssignor(PartitionAssignor):
    """Partitions in proportion to the capacity each member advertises (metadata version 0: a
    big-endian int32). Members keep the partitions of their current target while that does not
    exceed their share, so a change moves as few partitions as it can."""

    name = "capacity"
    minimum_version = 0
    maximum_version = 0

    def __init__(self, capacity: int = 1) -> None:
        self.capacity = capacity
        self.received: list[tuple[int, MemberAssignment]] = []

    def metadata(self) -> AssignorMetadata:
        """This member's capacity, announced to the group."""
        return AssignorMetadata(version=0, data=_CAPACITY.pack(self.capacity))

    @staticmethod
    def capacity_of(data: bytes) -> int:
        """A member's capacity from its metadata (1 when it sent none)."""
        return max(_CAPACITY.unpack(data)[0], 1) if len(data) == _CAPACITY.size else 1

    def assign(self, spec: AssignmentSpec) -> GroupAssignment:
        """Each partition goes to the subscribed member with the lowest load per capacity after
        taking it; current owners keep their partitions while they are under their share."""
        capacity = {m: self.capacity_of(s.metadata.data) for m, s in spec.members.items()}
        load = dict.fromkeys(spec.members, 0)
        owned: dict[str, dict[str, list[int]]] = {m: {} for m in spec.members}
        partitions = [(t.name, p) for t in spec.topics.values() for p in range(t.num_partitions)]
        quota = _quotas(len(partitions), capacity)
        free = []
        for topic, partition in sorted(partitions):
            holder = next(
                (m for m, s in spec.members.items() if partition in s.target_partitions.get(topic, ())),
                None,
            )
            if (
                holder is not None
                and load[holder] < quota[holder]
                and topic in spec.members[holder].subscribed_topics
            ):
                owned[holder].setdefault(topic, []).append(partition)
                load[holder] += 1
            else:
                free.append((topic, partition))
        for topic, partition in free:
            candidates = spec.subscribers(topic)
            member = min(candidates, key=lambda m: ((load[m] + 1) / capacity[m], m))
            owned[member].setdefault(topic, []).append(partition)
            load[member] += 1
        total = len(partitions)
        return GroupAssignment(
            members={
                m: MemberAssignment(owned[m], f"share={load[m]}/{total}".encode())
                for m in sorted(spec.members)
            }
        )

    def on_assignment(self, error: int, assignment: MemberAssignment, group_metadata: GroupMetadata) -> None:
        """Remember what this member was given (and the note the assignor wrote for it)."""
        self.received.append((error, assignment))


def _quotas(total: int, capacity: dict[str, int]) -> dict[str, int]:
    """Each member's whole share of `total` partitions (largest remainders get one more)."""
    weight = sum(capacity.values()) or 1
    exact = {m: total * c / weight for m, c in capacity.items()}
    quota = {m: int(share) for m, share in exact.items()}
    for m in sorted(exact, key=lambda m: (quota[m] - exact[m], m))[: total - sum(quota.values())]:
        quota[m] += 1
    return quota


class Worker(threading.Thread):
    """One consumer polling in its own thread; other threads send it commands."""

    def __init__(self, bootstrap: str, capacity: int, topic: str) -> None:
        super().__init__(name=f"consumer-capacity-{capacity}", daemon=True)
        self.assignor = CapacityAssignor(capacity)
        self.topic = topic
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "capacity-demo",
                "group.local.assignors": [self.assignor],
            }
        )
        self.commands: queue.SimpleQueue[Callable[[Consumer], None]] = queue.SimpleQueue()
        self.partitions: list[int] = []
        self.stop = threading.Event()

    def run(self) -> None:
        self.consumer.subscribe([self.topic])
        try:
            while not self.stop.is_set():
                while not self.commands.empty():
                    self.commands.get()(self.consumer)
                self.consumer.poll(0.05)
                self.partitions = [tp.partition for tp in self.consumer.assignment()]
        finally:
            self.consumer.close()


def wait_for(
    cluster: ReferenceCluster, workers: list[Worker], shares: list[int], timeout: float = 15.0
) -> None:
    """Wait until the group is stable with the workers owning partitions in the counts `shares`."""
    deadline = time.monotonic() + timeout
    while True:
        group = cluster.describe_group("capacity-demo")
        stable = group is not None and group.state == "Stable"
        if stable and [len(w.partitions) for w in workers] == shares:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"expected shares {shares}, got {[len(w.partitions) for w in workers]}")
        time.sleep(0.05)


def show(workers: list[Worker]) -> None:
    for w in workers:
        note = w.assignor.received[-1][1].data.decode() if w.assignor.received else "-"
        print(f"  capacity {w.assignor.capacity}: partitions {sorted(w.partitions)}  ({note})")


def main() -> int:
    with ReferenceCluster(
        heartbeat_interval_ms=100, session_timeout_ms=3000, assignment_interval_ms=0
    ) as cluster:
        cluster.create_topic("jobs", partitions=12)
        workers = [Worker(cluster.bootstrap_servers, capacity, "jobs") for capacity in (3, 1, 2)]
        for w in workers:
            w.start()
        try:
            wait_for(cluster, workers, [6, 2, 4])
            print("capacities 3, 1, 2 over 12 partitions:")
            show(workers)

            def shrink(consumer: Consumer) -> None:
                workers[0].assignor.capacity = 1
                consumer.update_assignor_metadata("capacity")

            workers[0].commands.put(shrink)
            wait_for(cluster, workers, [3, 3, 6])
            print("after the first consumer announced capacity 1:")
            show(workers)
        finally:
            for w in workers:
                w.stop.set()
            for w in workers:
                w.join(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
