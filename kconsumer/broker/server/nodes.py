"""`ClusterNodes`: the reference cluster's brokers as one metadata view: their ids, which are up,
where each listens (per listener), which broker leads each `__consumer_offsets` partition (so
coordinates its groups), and how partition leadership is spread and moved.

Placement follows Kafka:

* A group lives on `__consumer_offsets` partition ``abs(javaHashCode(group_id)) %
  offsets.topic.num.partitions`` (50 by default; Kafka's ``Utils.abs`` maps Integer.MIN_VALUE
  to 0); the leader of that partition is the group's coordinator.
* Partitions (of `__consumer_offsets` and of every topic) get leaders round-robin over the brokers
  that are up, starting at a per-topic offset, as Kafka's replica placement spreads them (with
  replication factor 1 here).

When a broker stops, the partitions it led move to the brokers still up (each move bumps the
partition's leader epoch), as a controller elects new leaders; leadership does not move back when
it starts again (Kafka's preferred-leader election would, minutes later; `move_leader` and
`move_coordinator` do it at once).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

#: Kafka's ``offsets.topic.num.partitions`` default.
OFFSETS_PARTITIONS = 50
#: The node id of in-process requests (the cluster's own helpers): they act as every partition's leader.
ANY_NODE = 0


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (UTF-16 code units, 32-bit overflow), as a signed int."""
    value = 0
    for unit in text.encode("utf-16-be").hex(" ", 2).split():
        value = (31 * value + int(unit, 16)) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def offsets_partition(group_id: str, partitions: int = OFFSETS_PARTITIONS) -> int:
    """The `__consumer_offsets` partition of a group: ``Utils.abs(hashCode) % partitions``."""
    code = java_string_hash(group_id)
    positive = 0 if code == -(1 << 31) else abs(code)
    return positive % partitions


@dataclass
class Node:
    """One broker: its id, whether it is up, and its port on each listener."""

    node_id: int
    ports: dict[str, int] = field(default_factory=dict)
    up: bool = True


class ClusterNodes:
    """The brokers and the leaders of the `__consumer_offsets` partitions (see the module docstring)."""

    def __init__(
        self, node_ids: Iterable[int], host: str, offsets_partitions: int = OFFSETS_PARTITIONS
    ) -> None:
        self.host = host
        self.nodes = {node_id: Node(node_id) for node_id in node_ids}
        if not self.nodes:
            raise ValueError("a cluster needs at least one broker")
        self.offsets_partitions = offsets_partitions
        ids = sorted(self.nodes)
        #: `__consumer_offsets` partition -> the broker leading it (the coordinator of its groups).
        self.offsets_leaders = {p: ids[p % len(ids)] for p in range(offsets_partitions)}
        self._next_topic = 0

    @property
    def ids(self) -> list[int]:
        return sorted(self.nodes)

    def up(self) -> list[int]:
        """The ids of the brokers that are up."""
        return [node_id for node_id in sorted(self.nodes) if self.nodes[node_id].up]

    def is_up(self, node_id: int) -> bool:
        node = self.nodes.get(node_id)
        return node is not None and node.up

    def port(self, node_id: int, listener: str) -> int | None:
        return self.nodes[node_id].ports.get(listener)

    def coordinator_of(self, group_id: str) -> int:
        """The broker coordinating `group_id` (the leader of its offsets partition)."""
        return self.offsets_leaders[offsets_partition(group_id, self.offsets_partitions)]

    def topic_leaders(self, partitions: int) -> list[int]:
        """Leaders for a new topic's partitions: round-robin over the brokers up, each topic
        starting one broker further than the last."""
        candidates = self.up() or self.ids
        start = self._next_topic
        self._next_topic += 1
        return [candidates[(start + index) % len(candidates)] for index in range(partitions)]

    def successor(self, leaving: int, index: int) -> int | None:
        """Where partition number `index` led by `leaving` goes (None: no other broker is up)."""
        others = [node_id for node_id in self.up() if node_id != leaving]
        return others[index % len(others)] if others else None
