"""The fetch path: a confluent-kafka (librdkafka) consumer handle in manual-assign mode.

kconsumer owns group membership, offset commits and offset fetches; librdkafka only fetches. The
handle never calls ``subscribe()``, has auto-commit and the offset store off, and is told exactly
which partitions to fetch from which offsets (``incremental_assign`` / ``incremental_unassign``).
`poll` and `consume` return librdkafka's own `Message` objects (no per-record Python wrapper).

All methods are called from the application thread (inside `Consumer.poll` and friends), so the
order of assign, unassign, position and callbacks is exactly the order the member core chose.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, OFFSET_INVALID, Message, TopicPartition
from confluent_kafka import Consumer as _RdKafkaConsumer

#: librdkafka's logical offsets for "no committed offset: apply auto.offset.reset".
RESET_EARLIEST = OFFSET_BEGINNING
RESET_LATEST = OFFSET_END

#: Keys the fetch handle always sets itself (kconsumer's own semantics depend on them).
_FORCED = {
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
}


class Fetcher:
    """The librdkafka handle kconsumer fetches through."""

    def __init__(self, librdkafka_config: Mapping[str, Any], group_id: str | None) -> None:
        """`librdkafka_config` is `ConsumerConfig.librdkafka_config()`."""
        config = dict(librdkafka_config)
        # librdkafka requires a group id on a consumer handle; in manual-assign mode with commits
        # off it never joins or commits with it.
        config["group.id"] = group_id or "kconsumer-fetch"
        config.update(_FORCED)
        self._handle = _RdKafkaConsumer(config)
        self._assigned: set[tuple[str, int]] = set()
        self._closed = False

    @property
    def handle(self) -> _RdKafkaConsumer:
        """The underlying confluent-kafka Consumer (manual-assign mode)."""
        return self._handle

    # -- assignment ----------------------------------------------------------------------------

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Start fetching `partitions` at their `offset` (an offset, or a logical reset position)."""
        new = [tp for tp in partitions if (tp.topic, tp.partition) not in self._assigned]
        if new:
            self._handle.incremental_assign(new)
            self._assigned.update((tp.topic, tp.partition) for tp in new)

    def unassign(self, partitions: Iterable[tuple[str, int]]) -> None:
        """Stop fetching `partitions`; their queued, not yet returned records are dropped."""
        gone = [
            TopicPartition(topic, partition)
            for topic, partition in partitions
            if (topic, partition) in self._assigned
        ]
        if gone:
            self._handle.incremental_unassign(gone)
            self._assigned.difference_update((tp.topic, tp.partition) for tp in gone)

    def assigned(self) -> set[tuple[str, int]]:
        return set(self._assigned)

    def positions(
        self, partitions: Iterable[tuple[str, int]]
    ) -> dict[tuple[str, int], tuple[int, int | None]]:
        """(next offset the application will see, its leader epoch) of each fetched partition that
        has a position (a partition that returned nothing yet has none)."""
        wanted = [TopicPartition(t, p) for t, p in partitions if (t, p) in self._assigned]
        if not wanted:
            return {}
        result = {}
        for tp in self._handle.position(wanted):
            if tp.offset >= 0:
                epoch = tp.leader_epoch
                result[(tp.topic, tp.partition)] = (tp.offset, None if epoch is None or epoch < 0 else epoch)
        return result

    # -- records ---------------------------------------------------------------------------------

    def poll(self, timeout: float) -> Message | None:
        return self._handle.poll(timeout)

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        return self._handle.consume(num_messages, timeout)

    # -- flow control ----------------------------------------------------------------------------

    def pause(self, partitions: Sequence[TopicPartition]) -> None:
        self._handle.pause(list(partitions))

    def resume(self, partitions: Sequence[TopicPartition]) -> None:
        self._handle.resume(list(partitions))

    def seek(self, partition: TopicPartition) -> None:
        self._handle.seek(partition)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._assigned:
                self._handle.incremental_unassign([TopicPartition(t, p) for t, p in self._assigned])
                self._assigned.clear()
            self._handle.close()


__all__ = ["OFFSET_INVALID", "RESET_EARLIEST", "RESET_LATEST", "Fetcher"]
