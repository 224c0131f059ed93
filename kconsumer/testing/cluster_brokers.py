"""The multi-broker part of `ReferenceCluster`: where groups and partitions live, and the broker
faults tests and users call by these names: `stop_broker` / `start_broker`, `move_coordinator`,
`move_leader` (see `kconsumer.broker.server.nodes` for Kafka's placement rules they follow)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from ..broker.server import Broker, ReferenceServer

T = TypeVar("T")


class ClusterBrokers:
    """Mixed into `ReferenceCluster` (which provides `_call`, `_loop` and `_server`)."""

    _server: ReferenceServer
    _loop: asyncio.AbstractEventLoop | None

    def _call(self, fn: Callable[[Broker], T]) -> T:  # pragma: no cover - provided by the cluster
        raise NotImplementedError

    def _run_on_loop(self, coroutine: Callable[[], Coroutine[Any, Any, None]]) -> None:
        loop = self._loop
        if loop is None:
            raise RuntimeError("the cluster is not running (use it as a context manager or call start())")
        asyncio.run_coroutine_threadsafe(coroutine(), loop).result(30)

    def brokers(self) -> list[int]:
        """The node ids of every broker (1..N)."""
        return self._call(lambda broker: broker.nodes.ids)

    def brokers_up(self) -> list[int]:
        """The node ids of the brokers that are up."""
        return self._call(lambda broker: broker.nodes.up())

    def coordinator_node(self, group_id: str) -> int:
        """The node id of the broker coordinating `group_id` now."""
        return self._call(lambda broker: broker.nodes.coordinator_of(group_id))

    def leader(self, topic: str, partition: int) -> int:
        """The node id of the broker leading the partition now."""
        return self._call(lambda broker: broker.topics.by_name[topic].partitions[partition].leader)

    def stop_broker(self, node_id: int) -> None:
        """Take a broker down: its ports refuse connections, its connections drop, the groups it
        coordinated move to another broker (which loads them by replaying their records) and the
        partitions it led get new leaders (with the next leader epoch)."""
        self._run_on_loop(lambda: self._server.stop_node(node_id))

    def start_broker(self, node_id: int) -> None:
        """Bring a stopped broker back on its ports (leadership stays where it moved)."""
        self._run_on_loop(lambda: self._server.start_node(node_id))

    def move_coordinator(self, group_id: str, node_id: int) -> None:
        """Move the group's coordinator (its `__consumer_offsets` partition, so every group on
        that partition) to broker `node_id`; the old one answers NOT_COORDINATOR from then on."""
        self._call(lambda broker: broker.move_coordinator(group_id, node_id))

    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        """Make broker `node_id` the partition's leader; fetches to the old leader get
        NOT_LEADER_OR_FOLLOWER and Metadata shows the new one."""
        self._call(lambda broker: broker.move_leader(topic, partition, node_id))
