"""The reference cluster's in-memory log: topics with ids, partitions holding record batches as raw bytes.

A partition keeps the batches producers sent, byte for byte, except the BaseOffset (and
PartitionLeaderEpoch) that the append writes into each batch header; neither is covered by the
batch CRC. Appending and reading only look at batch headers (`kconsumer.protocol.records`): a
read returns the stored batches themselves as a list of chunks, which the Fetch response writes
out without re-encoding a single record.

Per partition: a high watermark (the next offset; every append is immediately "replicated"), a log
start offset, optional retention by bytes that drops whole batches from the start (as Kafka
deletes whole segments, never the newest one), idempotent producers' sequence state
(`producers`) and the transaction index with the last stable offset (`transaction_index`).

Everything here runs on the server's event loop thread; nothing blocks and nothing awaits. Waiters
(long-polling fetches) register a callback per partition and are called after each append.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ...errors import ErrorCode, ProtocolError
from ...protocol import records as batches
from ...protocol.uuid import Uuid
from ..coordinator import MetadataImage, TopicMetadata
from .producers import PartitionProducers
from .transaction_index import PartitionTransactions

Chunk = bytes | bytearray | memoryview
Waiter = Callable[[], None]

#: Kafka's topic name rule: 1-249 characters out of ASCII letters, digits, '.', '_' and '-'.
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")
#: Compact the per-batch index lists once this many dropped entries sit at their front.
_COMPACT_AFTER = 1024


def topic_name_error(name: str | None) -> str | None:
    """Why `name` is not a legal Kafka topic name, or None when it is."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'Topic name cannot be "." or ".."'
    if len(name) > 249:
        return f"Topic name is illegal, it can't be longer than 249 characters, topic name: {name}"
    if not _LEGAL_TOPIC.fullmatch(name):
        return (
            f'Topic name "{name}" is illegal, it contains a character other than '
            "ASCII alphanumerics, '.', '_' and '-'"
        )
    return None


class InvalidRecords(Exception):
    """A produced records blob the log refuses, with the Kafka error code to answer."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


class PartitionLog:
    """One partition: its batches in offset order, watermarks and waiters.

    The batch index is four parallel lists (base offset, next offset, running maximum of the max
    timestamps, bytes); `_head` is the index of the first batch still retained.
    """

    __slots__ = (
        "_bases",
        "_chunks",
        "_head",
        "_max_ts",
        "_nexts",
        "_running_max_ts",
        "high_watermark",
        "leader",
        "leader_epoch",
        "log_start_offset",
        "producers",
        "retention_bytes",
        "size_bytes",
        "transactions",
        "waiters",
    )

    def __init__(self, retention_bytes: int | None = None, leader: int = 1) -> None:
        #: The broker leading this partition, and its leader epoch (bumped at each move).
        self.leader = leader
        self.leader_epoch = 0
        self._bases: list[int] = []
        self._nexts: list[int] = []
        self._max_ts: list[int] = []
        self._running_max_ts: list[int] = []
        self._chunks: list[Chunk] = []
        self._head = 0
        self.high_watermark = 0
        self.log_start_offset = 0
        self.size_bytes = 0
        self.retention_bytes = retention_bytes
        self.waiters: set[Waiter] = set()
        #: Idempotent producers' sequence state (`producers.PartitionProducers`).
        self.producers = PartitionProducers()
        #: Open and aborted transactions (`transaction_index.PartitionTransactions`).
        self.transactions = PartitionTransactions()

    @property
    def batch_count(self) -> int:
        """Batches currently retained."""
        return len(self._bases) - self._head

    def append(self, blob: bytearray, headers: list[batches.BatchHeader], leader_epoch: int = 0) -> int:
        """Append the validated batches of `blob` (headers as `records.read_batches` gave them),
        writing their base offsets and `leader_epoch` into them in place. Returns the base offset
        of the first one."""
        first = self.high_watermark
        next_offset = first
        single = len(headers) == 1
        view = None if single else memoryview(blob)
        running = self._running_max_ts[-1] if self._running_max_ts else -(2**63)
        for header in headers:
            batches.set_base_offset(blob, header.position, next_offset)
            batches.set_partition_leader_epoch(blob, header.position, leader_epoch)
            self._bases.append(next_offset)
            next_offset += header.last_offset_delta + 1
            self._nexts.append(next_offset)
            self._max_ts.append(header.max_timestamp)
            running = max(running, header.max_timestamp)
            self._running_max_ts.append(running)
            self._chunks.append(blob if view is None else view[header.position : header.end])
            self.size_bytes += header.size
        self.high_watermark = next_offset
        if self.retention_bytes is not None:
            self._enforce_retention(self.retention_bytes)
        if self.waiters:
            for waiter in list(self.waiters):
                waiter()
        return first

    def _enforce_retention(self, limit: int) -> None:
        chunks = self._chunks
        last = len(chunks) - 1
        head = self._head
        while self.size_bytes > limit and head < last:
            self.size_bytes -= len(chunks[head])
            chunks[head] = b""
            head += 1
        if head != self._head:
            self._head = head
            self.log_start_offset = self._bases[head]
            self.transactions.forget_before(self.log_start_offset)
            if head >= _COMPACT_AFTER and head * 2 >= len(chunks):
                for index in (self._bases, self._nexts, self._max_ts, self._running_max_ts, self._chunks):
                    del index[:head]
                self._head = 0

    def truncate_all(self) -> None:
        """Drop every batch (the log start offset moves to the high watermark)."""
        self._bases.clear()
        self._nexts.clear()
        self._max_ts.clear()
        self._running_max_ts.clear()
        self._chunks.clear()
        self._head = 0
        self.size_bytes = 0
        self.log_start_offset = self.high_watermark

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the oldest open transaction, or the high watermark."""
        return self.transactions.stable_offset(self.high_watermark)

    def read(
        self, offset: int, max_bytes: int, min_one: bool, upper: int | None = None
    ) -> tuple[list[Chunk], int]:
        """The whole batches from the one holding `offset`, as stored, up to `max_bytes` in total
        (at least one batch when `min_one`), and only batches starting below `upper` when given
        (the last stable offset, for read_committed). `offset` must lie in [log start, high
        watermark]."""
        end = self.high_watermark if upper is None else min(upper, self.high_watermark)
        if offset >= end:
            return [], 0
        index = bisect.bisect_right(self._nexts, offset, self._head)
        chunks = self._chunks
        count = len(chunks)
        out: list[Chunk] = []
        total = 0
        if end < self.high_watermark:
            count = bisect.bisect_left(self._bases, end, index, count)
        while index < count:
            chunk = chunks[index]
            size = len(chunk)
            if total + size > max_bytes and not (min_one and not out):
                break
            out.append(chunk)
            total += size
            index += 1
        return out, total

    def batches(self) -> Iterator[tuple[int, Chunk]]:
        """(base offset, bytes) of every retained batch, oldest first."""
        for index in range(self._head, len(self._chunks)):
            yield self._bases[index], self._chunks[index]

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record whose timestamp is >= `timestamp`, or None.

        The batch is found by the batch max timestamps (a running maximum keeps that a binary
        search); the exact record inside it needs decoding that one batch.
        """
        index = bisect.bisect_left(self._running_max_ts, timestamp, self._head)
        while index < len(self._bases) and self._max_ts[index] < timestamp:
            index += 1
        if index >= len(self._bases):
            return None
        return self._record_at(index, lambda ts: ts >= timestamp)

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with the largest timestamp, or None when empty."""
        if self.batch_count == 0:
            return None
        best = max(range(self._head, len(self._bases)), key=lambda i: (self._max_ts[i], -i))
        target = self._max_ts[best]
        return self._record_at(best, lambda ts: ts == target)

    def _record_at(self, index: int, wanted: Callable[[int], bool]) -> tuple[int, int]:
        try:
            for record in batches.decode_records(self._chunks[index]):
                if wanted(record.timestamp):
                    return record.offset, record.timestamp
        except ProtocolError:
            pass  # a codec we cannot decode: the batch's own bounds are the best answer
        return self._bases[index], self._max_ts[index]


@dataclass
class TopicLog:
    """A topic: its name, id and partitions."""

    name: str
    topic_id: Uuid
    partitions: list[PartitionLog]

    def metadata(self) -> TopicMetadata:
        return TopicMetadata(self.topic_id, self.name, len(self.partitions))


class Topics:
    """Every topic of the cluster, by name and by id, and the metadata image the coordinator sees.

    `on_change` is called with a new `MetadataImage` after every creation, deletion or growth.
    """

    def __init__(
        self,
        new_topic_id: Callable[[], Uuid],
        retention_bytes: int | None = None,
        on_change: Callable[[MetadataImage], None] | None = None,
    ) -> None:
        self.by_name: dict[str, TopicLog] = {}
        self.by_id: dict[Uuid, TopicLog] = {}
        self._new_topic_id = new_topic_id
        self._retention_bytes = retention_bytes
        self._on_change = on_change
        self._version = 0
        self.image = MetadataImage()
        #: Leaders for a new topic's (or its new) partitions: `ClusterNodes.topic_leaders`.
        self.place: Callable[[int], list[int]] = lambda count: [1] * count

    def __iter__(self) -> Iterator[TopicLog]:
        return iter(list(self.by_name.values()))

    def __len__(self) -> int:
        return len(self.by_name)

    def get(self, name: str | None) -> TopicLog | None:
        return None if name is None else self.by_name.get(name)

    def get_by_id(self, topic_id: Uuid) -> TopicLog | None:
        return self.by_id.get(topic_id)

    def create(self, name: str, partitions: int) -> TopicLog:
        """A new topic with a fresh random id. The caller has validated `name` and `partitions`."""
        if name in self.by_name:
            raise ValueError(f"topic {name} already exists")
        topic_id = self._new_topic_id()
        while not topic_id or topic_id in self.by_id:
            topic_id = self._new_topic_id()
        leaders = self.place(partitions)
        topic = TopicLog(name, topic_id, [PartitionLog(self._retention_bytes, leader) for leader in leaders])
        self.by_name[name] = topic
        self.by_id[topic_id] = topic
        self._publish()
        return topic

    def delete(self, topic: TopicLog) -> None:
        """Remove a topic; its long-polling readers are woken (they then see it gone)."""
        del self.by_name[topic.name]
        del self.by_id[topic.topic_id]
        for partition in topic.partitions:
            for waiter in list(partition.waiters):
                waiter()
        self._publish()

    def grow(self, topic: TopicLog, total: int) -> None:
        """Add partitions so the topic has `total` (more than it has now)."""
        if total <= len(topic.partitions):
            raise ValueError(f"topic {topic.name} already has {len(topic.partitions)} partitions")
        topic.partitions.extend(
            PartitionLog(self._retention_bytes, leader)
            for leader in self.place(total - len(topic.partitions))
        )
        self._publish()

    def _publish(self) -> None:
        self._version += 1
        self.image = MetadataImage.of((t.metadata() for t in self.by_name.values()), self._version)
        if self._on_change is not None:
            self._on_change(self.image)


def validate_records(
    data: Chunk | None, verify_crc: bool, *, single_batch: bool = True
) -> tuple[bytearray, list[batches.BatchHeader]]:
    """Check a produced records blob as Kafka does for Produce v3+ and return a writable copy with
    its batch headers. Raises `InvalidRecords` with INVALID_RECORD (no batch, not magic v2, more
    than one batch) or CORRUPT_MESSAGE (sizes that do not add up, bad CRC)."""
    if data is None or len(data) == 0:
        raise InvalidRecords(ErrorCode.INVALID_RECORD, "Produce requests must have at least one record batch")
    blob = bytearray(data)
    try:
        headers = batches.read_batches(blob)
    except ProtocolError as exc:
        code = ErrorCode.INVALID_RECORD if exc.field == "Magic" else ErrorCode.CORRUPT_MESSAGE
        raise InvalidRecords(code, exc.reason) from None
    if single_batch and len(headers) != 1:
        raise InvalidRecords(
            ErrorCode.INVALID_RECORD,
            "Produce requests are only allowed to contain exactly one record batch per partition",
        )
    for header in headers:
        if header.is_control:
            raise InvalidRecords(ErrorCode.INVALID_RECORD, "clients may not produce control batches")
        if header.record_count <= 0 or header.record_count != header.last_offset_delta + 1:
            raise InvalidRecords(
                ErrorCode.INVALID_RECORD,
                f"batch at byte {header.position}: inconsistent batch offset range "
                f"({header.record_count} records, LastOffsetDelta {header.last_offset_delta})",
            )
        if verify_crc and not batches.crc_is_valid(blob, header):
            raise InvalidRecords(
                ErrorCode.CORRUPT_MESSAGE, f"batch at byte {header.position}: CRC-32C does not match"
            )
    return blob, headers
