"""The stream's offsets (what Spark writes to the checkpoint's offset log), range planning, and
ranges packed into Spark tasks.

A micro-batch's end offset is a `SourceOffset`:

``{"offsets": {"orders": {"0": 120, "1": 98}}, "starts": {"orders": {"1": 40}}}``

- ``offsets``: per partition the query owned when it planned the batch, the next offset to read
  after the batch (the batch reads up to, not including, it).
- ``starts``: partitions (re)assigned to the query since the previous batch, with the offset their
  range starts at (the group's committed offset, or ``startingOffsets``). Every other partition's
  range starts at the previous batch's end. So a batch is fully described by (previous end, end):
  replaying it from the checkpoint reads exactly the same records.

A partition the query no longer owns is simply absent from ``offsets``.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Key = tuple[str, int]


def _nested(flat: Mapping[Key, int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(flat.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return out


def _flat(nested: Any, what: str) -> dict[Key, int]:
    if nested is None:
        return {}
    if not isinstance(nested, dict):
        raise ValueError(f"kconsumer source offset: {what} must be an object, got {nested!r}")
    flat: dict[Key, int] = {}
    for topic, partitions in nested.items():
        if not isinstance(partitions, dict):
            raise ValueError(f"kconsumer source offset: {what}[{topic!r}] must be an object")
        for partition, offset in partitions.items():
            flat[(str(topic), int(partition))] = int(offset)
    return flat


@dataclass(frozen=True)
class SourceOffset:
    """A micro-batch end offset (see the module docstring)."""

    offsets: Mapping[Key, int] = field(default_factory=dict)
    starts: Mapping[Key, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The JSON-able dict Spark stores (keys sorted, so equal offsets serialize equally)."""
        return {"offsets": _nested(self.offsets), "starts": _nested(self.starts)}

    @classmethod
    def from_json(cls, value: Mapping[str, Any] | None) -> SourceOffset:
        """Parse what `to_json` produced (None or {} is the empty offset)."""
        if not value:
            return cls()
        return cls(_flat(value.get("offsets"), "offsets"), _flat(value.get("starts"), "starts"))

    def range_start(self, key: Key, previous: SourceOffset) -> int | None:
        """Where `key`'s range in this batch starts, `previous` being the batch before."""
        if key in self.starts:
            return self.starts[key]
        return previous.offsets.get(key)


@dataclass(frozen=True)
class OffsetRange:
    """Records ``[start, until)`` of one partition, read by one Spark task (alone, or with other
    ranges of the batch: `pack`)."""

    topic: str
    partition: int
    start: int
    until: int

    @property
    def size(self) -> int:
        """How many offsets the range spans (records, unless compaction or transaction markers)."""
        return max(0, self.until - self.start)


def batch_ranges(previous: SourceOffset, end: SourceOffset) -> list[OffsetRange]:
    """The non-empty ranges of the batch (previous, end]. A partition of `end` with no known start
    (neither in ``starts`` nor in `previous`) is a corrupt offset: ValueError."""
    ranges = []
    for key, until in sorted(end.offsets.items()):
        start = end.range_start(key, previous)
        if start is None:
            raise ValueError(f"kconsumer source offset: no start for {key[0]}-{key[1]} in {end.to_json()}")
        if until > start:
            ranges.append(OffsetRange(key[0], key[1], start, until))
    return ranges


def admit(starts: Mapping[Key, int], latest: Mapping[Key, int], limit: int | None) -> dict[Key, int]:
    """The end offset of each partition: its `latest` offset (never below its start), with at most
    `limit` records in all when a limit is given, shared in proportion to each partition's backlog
    (as Spark's Kafka source does with maxOffsetsPerTrigger), the remainder to the largest backlogs.
    """
    backlog = {k: max(0, latest.get(k, s) - s) for k, s in starts.items()}
    total = sum(backlog.values())
    if limit is None or total <= limit:
        return {k: s + backlog[k] for k, s in starts.items()}
    share = {k: (limit * b) // total for k, b in backlog.items()}
    left = limit - sum(share.values())
    for k in sorted(backlog, key=lambda k: (share[k] - backlog[k], k)):
        if left == 0:
            break
        if share[k] < backlog[k]:
            share[k] += 1
            left -= 1
    return {k: s + share[k] for k, s in starts.items()}


#: A packed task holds about at most this many records, unless one range alone is larger: a big
#: batch keeps one task per range (Spark's own cost per task, 40-90 ms on two slots, is then small
#: against each task's read), and a failed task reads no more than this again.
PACKED_TASK_RECORDS = 1_000_000


def pack(ranges: Sequence[OffsetRange], slots: int | None) -> list[tuple[OffsetRange, ...]]:
    """The batch's ranges grouped into Spark tasks, each task's ranges read with one handle.

    One task per range when there are no more ranges than `slots` (Spark's task slots; None or 0:
    always). Otherwise as few tasks as `slots`, more when a task would hold over
    `PACKED_TASK_RECORDS` records, never more than one per range; the ranges are shared out
    largest first, each to the task with the fewest records so far (ties to the earlier task), so
    the tasks are balanced and the same ranges always give the same tasks (a replayed batch reads
    exactly the same)."""
    if not slots or len(ranges) <= slots:
        return [(r,) for r in ranges]
    total = sum(r.size for r in ranges)
    count = min(len(ranges), max(slots, -(-total // PACKED_TASK_RECORDS)))
    tasks: list[list[OffsetRange]] = [[] for _ in range(count)]
    loads = [(0, index) for index in range(count)]  # a heap of (records, task)
    for r in sorted(ranges, key=lambda r: (-r.size, r.topic, r.partition)):
        records, index = heapq.heappop(loads)
        tasks[index].append(r)
        heapq.heappush(loads, (records + r.size, index))
    return [tuple(sorted(task, key=lambda r: (r.topic, r.partition))) for task in tasks]
