"""`CoordinatorShards`: the group coordinator as Kafka runs it, one shard per `__consumer_offsets`
partition. A shard is a sans-IO `GroupCoordinator` holding the groups that hash to its partition
(`nodes.offsets_partition`); it is created when a group first lands on it, its timers run on the
event loop (re-armed after every request, timer and metadata change), and what its records change
is logged by the `GroupEventLog`.

`reload(partition)` is a coordinator move: a new incarnation replays the shard's record log (as a
broker taking over a `__consumer_offsets` partition loads it), with session timers restarting.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator

from ...protocol.schema import Message
from ..coordinator import GroupCoordinator, MetadataImage
from ..coordinator.classic.replies import Deferred
from ..coordinator.records import Record
from .config import ServerConfig
from .events import CAUSE_METADATA, CAUSE_REQUEST, CAUSE_TIMER, GroupEventLog
from .nodes import offsets_partition

logger = logging.getLogger("kconsumer.broker.server")


class _Shard:
    """One partition's coordinator and its timer."""

    __slots__ = ("coordinator", "deadline", "timer")

    def __init__(self, coordinator: GroupCoordinator) -> None:
        self.coordinator = coordinator
        self.timer: asyncio.TimerHandle | None = None
        self.deadline: int | None = None


class CoordinatorShards:
    """Every shard of the group coordinator (see the module docstring)."""

    def __init__(
        self,
        config: ServerConfig,
        loop: asyncio.AbstractEventLoop,
        image: Callable[[], MetadataImage],
        new_member_id: Callable[[], str],
        events: GroupEventLog,
        partitions: int,
    ) -> None:
        self._config = config
        self._loop = loop
        self._image = image
        self._new_member_id = new_member_id
        self._events = events
        self.partitions = partitions
        self._shards: dict[int, _Shard] = {}
        #: Deferred classic answers, by (partition, ticket of that partition's coordinator).
        self._waiting: dict[tuple[int, int], asyncio.Future[Message]] = {}

    def now_ms(self) -> int:
        return int(self._loop.time() * 1000)

    def partition_of(self, group_id: str) -> int:
        return offsets_partition(group_id, self.partitions)

    def of_partition(self, partition: int) -> GroupCoordinator:
        """The shard of `partition` (created empty if no group landed there yet)."""
        shard = self._shards.get(partition)
        if shard is None:
            coordinator = GroupCoordinator(
                self._config.coordinator,
                new_member_id=self._new_member_id,
                keep_log=self._config.keep_coordinator_log,
            )
            coordinator.update_metadata(self._image(), self.now_ms())
            shard = self._shards[partition] = _Shard(coordinator)
        return shard.coordinator

    def of_group(self, group_id: str) -> GroupCoordinator:
        """The shard holding `group_id`."""
        return self.of_partition(self.partition_of(group_id))

    def items(self) -> Iterator[tuple[int, GroupCoordinator]]:
        """(partition, shard) of every shard created so far."""
        for partition, shard in list(self._shards.items()):
            yield partition, shard.coordinator

    def handle(
        self, partition: int, request: Message, version: int, client_id: str, host: str
    ) -> Message | asyncio.Future[Message]:
        """Let the shard of `partition` answer a group request: a response, or a future one (a
        classic JoinGroup waiting for the join phase, a SyncGroup for the leader)."""
        coordinator = self.of_partition(partition)
        result = coordinator.handle(request, version, self.now_ms(), client_id, host)
        response = result.response
        answer: Message | asyncio.Future[Message]
        if isinstance(response, Deferred):
            answer = self._loop.create_future()
            self._waiting[(partition, response.ticket)] = answer
            self._observe(coordinator, result.records, CAUSE_REQUEST, request, None)
        else:
            answer = response
            self._observe(coordinator, result.records, CAUSE_REQUEST, request, response)
        self._deliver(partition, coordinator.take_replies())
        self._arm(partition)
        return answer

    def complete_transaction(self, group_id: str, producer_id: int, committed: bool) -> None:
        """A transaction marker for `group_id`: the producer's pending offsets are committed or dropped."""
        partition = self.partition_of(group_id)
        coordinator = self.of_partition(partition)
        records = coordinator.complete_transaction(group_id, producer_id, committed, self.now_ms())
        self._observe(coordinator, records, CAUSE_REQUEST)
        self._arm(partition)

    def _deliver(self, partition: int, replies: list[tuple[int, Message]]) -> None:
        """Send deferred answers to the requests waiting for them."""
        for ticket, response in replies:
            future = self._waiting.pop((partition, ticket), None)
            if future is not None and not future.done():
                future.set_result(response)

    def update_metadata(self, image: MetadataImage) -> None:
        """Topics changed: every shard sees the new image."""
        for partition, coordinator in self.items():
            records = coordinator.update_metadata(image, self.now_ms())
            self._observe(coordinator, records, CAUSE_METADATA)
            self._deliver(partition, coordinator.take_replies())
            self._arm(partition)

    def reload(self, partition: int) -> None:
        """A new incarnation of the shard replays its record log (a coordinator move)."""
        shard = self._shards.get(partition)
        if shard is None:
            return
        old = shard.coordinator
        self._deliver(partition, old.abandon_replies())
        if old.log is None:
            raise RuntimeError(
                "moving a coordinator needs its record log (ServerConfig.keep_coordinator_log)"
            )
        shard.coordinator = GroupCoordinator.replaying(
            list(old.log),
            self.now_ms(),
            self._config.coordinator,
            image=self._image(),
            new_member_id=self._new_member_id,
        )
        logger.info(
            "coordinator of offsets partition %d reloaded: replayed %d records", partition, len(old.log)
        )
        self._arm(partition)

    def close(self) -> None:
        """Stop every shard's timer; waiting classic requests are answered NOT_COORDINATOR."""
        for partition, shard in self._shards.items():
            self._deliver(partition, shard.coordinator.abandon_replies())
            if shard.timer is not None:
                shard.timer.cancel()
            shard.timer = None
            shard.deadline = None

    def _observe(
        self,
        coordinator: GroupCoordinator,
        records: list[Record],
        cause: str,
        request: Message | None = None,
        response: Message | None = None,
    ) -> None:
        try:
            self._events.observe(coordinator, records, cause, request, response)
        except Exception:  # logging must never break the broker
            logger.exception("could not log group events")

    def _arm(self, partition: int) -> None:
        shard = self._shards[partition]
        deadline = shard.coordinator.next_deadline()
        if deadline == shard.deadline:
            return
        if shard.timer is not None:
            shard.timer.cancel()
        shard.deadline = deadline
        shard.timer = (
            None
            if deadline is None
            else self._loop.call_at(deadline / 1000, lambda: self._on_timer(partition))
        )

    def _on_timer(self, partition: int) -> None:
        shard = self._shards[partition]
        deadline = shard.deadline or 0
        shard.timer = None
        shard.deadline = None
        try:
            # asyncio may run a timer up to its clock resolution early: never poll before the deadline.
            records = shard.coordinator.poll(max(self.now_ms(), deadline))
            self._observe(shard.coordinator, records, CAUSE_TIMER)
            self._deliver(partition, shard.coordinator.take_replies())
        except Exception:
            logger.exception("the group coordinator's timers failed")
        self._arm(partition)
