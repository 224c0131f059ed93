"""The fetch path: a confluent-kafka (librdkafka) consumer handle in manual-assign mode.

kconsumer owns group membership, offset commits and offset fetches; librdkafka only fetches. The
handle never calls ``subscribe()``, has auto-commit and the offset store off, and is told exactly
which partitions to fetch from which offsets (``incremental_assign`` / ``incremental_unassign``).
`poll` and `consume` return librdkafka's own `Message` objects (no per-record Python wrapper).

Records are taken from librdkafka in small batches (`consume(n, 0)`, which returns what is already
queued without waiting) into `buffer`, and `Consumer.poll()` hands them out one by one: a single
record through librdkafka's ``poll()`` costs more than a batch's share plus a deque pop. The buffer
holds records librdkafka already counts as delivered, so every position reported here is the
offset of the first record the *application* has not received: buffered records count as not
delivered. Stopping, seeking or pausing a partition drops its buffered records (and a pause seeks
librdkafka back to the first of them, so none is skipped on resume).

All methods are called from the application thread (inside `Consumer.poll` and friends), so the
order of assign, unassign, position and callbacks is exactly the order the member core chose.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)
from confluent_kafka import Consumer as _RdKafkaConsumer

from .librdkafka_log import librdkafka_logger
from .member.model import PartitionOffset, TopicIdPartition

#: librdkafka's logical offsets for "no committed offset: apply auto.offset.reset".
RESET_EARLIEST = OFFSET_BEGINNING
RESET_LATEST = OFFSET_END

#: How long the first assignment of a topic may wait for its metadata (`Fetcher.assign`).
METADATA_TIMEOUT_S = 1.0

#: Records taken from librdkafka at a time to serve `poll()` from (see the module docstring).
POLL_BATCH = 256

Key = tuple[str, int]

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
        config.setdefault("logger", librdkafka_logger())  # not raw lines on stderr
        self._handle = _RdKafkaConsumer(config)
        self._assigned: set[tuple[str, int]] = set()
        #: Records taken from librdkafka, not yet handed to the application (in order).
        self.buffer: deque[Message] = deque()
        #: Where `pause` sent partitions back to (librdkafka reports no position after a seek
        #: until it delivers a record again: this one stands in for it until then).
        self._rewound: dict[Key, tuple[int, int | None]] = {}
        #: Topics whose metadata this handle has fetched (see `learn_topics`).
        self._known_topics: set[str] = set()
        #: Topics named to librdkafka ahead of their assignment (see `announce_topics`).
        self._announced: set[str] = set()
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
            self.learn_topics({tp.topic for tp in new})
            self._handle.incremental_assign(new)
            self._assigned.update((tp.topic, tp.partition) for tp in new)

    def start(self, starts: Sequence[PartitionOffset]) -> None:
        """Start fetching partitions at the offsets given (the application core's `FetchPath`)."""
        self.assign([_at(s.partition.topic, s.partition.partition, s.offset, s.leader_epoch) for s in starts])

    def stop(self, partitions: Sequence[TopicIdPartition]) -> None:
        """Stop fetching `partitions` (the application core's `FetchPath`)."""
        self.unassign([(tp.topic, tp.partition) for tp in partitions])

    def learn_topics(self, topics: set[str]) -> None:
        """Have the handle fetch the metadata of topics it is about to fetch for the first time.

        Assigned a partition of a topic it has no metadata for, librdkafka finds no leader, asks
        for metadata and retries its offset lookup on a 500 ms timer: 0.5 to 1 s from the
        assignment to the first record (a few ms with the metadata known; see docs/benchmarks.md).
        One metadata request per new topic, on this thread, avoids that. If it fails or times
        out, librdkafka still finds the leaders by itself, only later.
        """
        unknown = topics - self._known_topics
        if not unknown:
            return
        if unknown <= self._announced and not self._can_reach_a_broker(next(iter(unknown))):
            return  # librdkafka asks for them itself with its first connection (`announce_topics`)
        try:
            if len(unknown) == 1:
                metadata = self._handle.list_topics(next(iter(unknown)), timeout=METADATA_TIMEOUT_S)
            else:
                metadata = self._handle.list_topics(timeout=METADATA_TIMEOUT_S)
        except KafkaException:
            return
        # Not a topic the answer lacks or has an error for (not created yet): asked again later.
        found = metadata.topics
        self._known_topics.update(t for t in unknown if t in found and found[t].error is None)

    def announce_topics(self, topics: Iterable[str]) -> None:
        """Name topics this handle will probably fetch (the subscribed ones), without waiting.

        A new handle drops its bootstrap connection once the first metadata names the brokers,
        and librdkafka connects to a broker "of its choice" again only half of
        ``reconnect.backoff.ms`` after the first such connection: a metadata request made in
        that window (`learn_topics` when a new member gets its partitions 10-30 ms after it
        starts) waits 30-50 ms for it. A topic librdkafka knows of before then (this call makes
        it create the topic at once; its answer is "no broker yet", expected and ignored) is in
        the metadata request of the handle's first connection, so its leaders are known when
        the assignment comes. `learn_topics` then does not ask again while no broker can be
        reached (docs/benchmarks.md, "A young fetch handle")."""
        for topic in set(topics) - self._known_topics - self._announced:
            self._can_reach_a_broker(topic)  # either way librdkafka now knows the topic
            self._announced.add(topic)

    def _can_reach_a_broker(self, topic: str) -> bool:
        """Ask for `topic`'s metadata without waiting for the answer: whether the request went
        out now (a broker is connected), not waiting for librdkafka's next connection."""
        try:
            self._handle.list_topics(topic, timeout=0)
        except KafkaException as exc:
            return bool(exc.args[0].code() != KafkaError._TRANSPORT)
        return True

    def unassign(self, partitions: Iterable[tuple[str, int]]) -> None:
        """Stop fetching `partitions`; their queued, not yet returned records are dropped."""
        gone = [
            TopicPartition(topic, partition)
            for topic, partition in partitions
            if (topic, partition) in self._assigned
        ]
        if gone:
            self._drop_buffered({(tp.topic, tp.partition) for tp in gone})
            for tp in gone:
                self._rewound.pop((tp.topic, tp.partition), None)
            self._handle.incremental_unassign(gone)
            self._assigned.difference_update((tp.topic, tp.partition) for tp in gone)

    def assigned(self) -> set[tuple[str, int]]:
        return set(self._assigned)

    def positions(self, partitions: Iterable[Key]) -> dict[Key, tuple[int, int | None]]:
        """(next offset the application will see, its leader epoch) of each fetched partition that
        has a position (a partition that returned nothing yet has none)."""
        wanted = {(t, p) for t, p in partitions if (t, p) in self._assigned}
        if not wanted:
            return {}
        result = self._buffered_positions(wanted)
        rest = [TopicPartition(t, p) for t, p in wanted if (t, p) not in result]
        if rest:
            for tp in self._handle.position(rest):
                key = (tp.topic, tp.partition)
                if tp.offset >= 0:
                    self._rewound.pop(key, None)
                    epoch = tp.leader_epoch
                    result[key] = (tp.offset, None if epoch is None or epoch < 0 else epoch)
                elif key in self._rewound:
                    result[key] = self._rewound[key]
        return result

    # -- records ---------------------------------------------------------------------------------

    def poll(self, timeout: float) -> Message | None:
        """The next record: from the buffer, else from what librdkafka has queued (a batch), else
        waiting up to `timeout` seconds for one."""
        buffer = self.buffer
        if buffer:
            return buffer.popleft()
        batch = self._handle.consume(POLL_BATCH, 0)
        if batch:
            buffer.extend(batch)
            return buffer.popleft()
        return self._handle.poll(timeout)

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        """Up to `num_messages` records: buffered ones first (topped up with what librdkafka has
        queued, without waiting), else a batch from librdkafka waiting up to `timeout` seconds."""
        buffer = self.buffer
        if not buffer:
            return self._handle.consume(num_messages, timeout)
        take = min(num_messages, len(buffer))
        messages = [buffer.popleft() for _ in range(take)]
        if take < num_messages:
            messages.extend(self._handle.consume(num_messages - take, 0))
        return messages

    def _buffered_positions(self, wanted: set[Key]) -> dict[Key, tuple[int, int | None]]:
        """The offset (and leader epoch) of the first buffered record of each wanted partition."""
        first: dict[Key, tuple[int, int | None]] = {}
        for message in self.buffer:
            if message.error() is not None:
                continue
            key = (message.topic(), message.partition())
            if key in wanted and key not in first:
                offset = message.offset()
                if offset is not None:
                    epoch = message.leader_epoch()
                    first[key] = (offset, None if epoch is None or epoch < 0 else epoch)
        return first

    def _drop_buffered(self, keys: set[Key]) -> dict[Key, tuple[int, int | None]]:
        """Remove the buffered records of `keys`; returns where each dropped run started."""
        if not self.buffer:
            return {}
        first = self._buffered_positions(keys)
        if first:
            kept = [m for m in self.buffer if (m.topic(), m.partition()) not in keys or m.error() is not None]
            self.buffer.clear()
            self.buffer.extend(kept)
        return first

    # -- flow control ----------------------------------------------------------------------------

    def pause(self, partitions: Sequence[TopicPartition]) -> None:
        """Stop returning records of `partitions`; buffered ones are dropped and librdkafka goes
        back to the first of them, so resuming loses nothing."""
        self._handle.pause(list(partitions))
        dropped = self._drop_buffered({(tp.topic, tp.partition) for tp in partitions})
        for (topic, partition), (offset, epoch) in dropped.items():
            self._handle.seek(_at(topic, partition, offset, epoch))
            self._rewound[(topic, partition)] = (offset, epoch)

    def resume(self, partitions: Sequence[TopicPartition]) -> None:
        self._handle.resume(list(partitions))

    def seek(self, partition: TopicPartition) -> None:
        self._drop_buffered({(partition.topic, partition.partition)})
        self._rewound.pop((partition.topic, partition.partition), None)
        self._handle.seek(partition)

    def position_of(self, partitions: Sequence[TopicPartition]) -> list[TopicPartition]:
        """Confluent-style positions (buffered records count as not delivered)."""
        result = list(self._handle.position(list(partitions)))
        buffered = self._buffered_positions({(tp.topic, tp.partition) for tp in partitions})
        for index, tp in enumerate(result):
            found = buffered.get((tp.topic, tp.partition))
            if found is None and tp.offset < 0:
                found = self._rewound.get((tp.topic, tp.partition))
            if found is not None:
                result[index] = _at(tp.topic, tp.partition, *found)
        return result

    def list_topics(self, topic: str | None, timeout: float) -> Any:
        return self._handle.list_topics(topic, timeout)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.buffer.clear()
            if self._assigned:
                self._handle.incremental_unassign([TopicPartition(t, p) for t, p in self._assigned])
                self._assigned.clear()
            self._handle.close()


def _at(topic: str, partition: int, offset: int, leader_epoch: int | None) -> TopicPartition:
    if leader_epoch is None:
        return TopicPartition(topic, partition, offset)
    return TopicPartition(topic, partition, offset, leader_epoch=leader_epoch)


class MembershipOnlyFetcher:
    """A fetch path that fetches nothing: for a group member whose records are read elsewhere (the
    PySpark source's driver is the member; executors read offset ranges themselves).

    It keeps the assigned partitions and a position per partition: where fetching would start (a
    committed offset, or the offset ``auto.offset.reset`` resolved to; none if that lookup
    failed), moved by `seek`. `poll` and
    `consume` only wait.
    """

    def __init__(self) -> None:
        self._positions: dict[tuple[str, int], int | None] = {}
        #: Always empty (nothing is fetched); the consumer's poll() checks it like the real one.
        self.buffer: deque[Message] = deque()

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self._positions[(tp.topic, tp.partition)] = tp.offset if tp.offset >= 0 else None

    def unassign(self, partitions: Iterable[tuple[str, int]]) -> None:
        for key in partitions:
            self._positions.pop(key, None)

    def start(self, starts: Sequence[PartitionOffset]) -> None:
        for start in starts:
            tp = start.partition
            self._positions[(tp.topic, tp.partition)] = start.offset if start.offset >= 0 else None

    def stop(self, partitions: Sequence[TopicIdPartition]) -> None:
        self.unassign([(tp.topic, tp.partition) for tp in partitions])

    def assigned(self) -> set[tuple[str, int]]:
        return set(self._positions)

    def positions(
        self, partitions: Iterable[tuple[str, int]]
    ) -> dict[tuple[str, int], tuple[int, int | None]]:
        result: dict[tuple[str, int], tuple[int, int | None]] = {}
        for key in partitions:
            offset = self._positions.get(key)
            if offset is not None:
                result[key] = (offset, None)
        return result

    def poll(self, timeout: float = -1) -> Message | None:
        if timeout > 0:
            time.sleep(timeout)
        return None

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        if timeout > 0:
            time.sleep(timeout)
        return []

    def pause(self, partitions: Sequence[TopicPartition]) -> None:
        pass

    def learn_topics(self, topics: set[str]) -> None:
        pass

    def announce_topics(self, topics: Iterable[str]) -> None:
        pass

    def resume(self, partitions: Sequence[TopicPartition]) -> None:
        pass

    def seek(self, partition: TopicPartition) -> None:
        key = (partition.topic, partition.partition)
        if key in self._positions:
            self._positions[key] = partition.offset

    def position_of(self, partitions: Sequence[TopicPartition]) -> list[TopicPartition]:
        result = []
        for tp in partitions:
            offset = self._positions.get((tp.topic, tp.partition))
            result.append(
                TopicPartition(tp.topic, tp.partition, OFFSET_INVALID if offset is None else offset)
            )
        return result

    def close(self) -> None:
        self._positions.clear()


__all__ = ["OFFSET_INVALID", "RESET_EARLIEST", "RESET_LATEST", "Fetcher", "MembershipOnlyFetcher"]
