"""The coordinator's record log, compacted by key as Kafka compacts ``__consumer_offsets``.

Every record has a key (the group, the member, the partition, ... it is about); a newer record
replaces the older one of its key and a tombstone removes the key. What is left, in the order the
surviving records were written, replays into the same state as the whole history: a key's latest
record says everything about that key, and because each survivor keeps its place relative to the
others, no prefix of the compacted log ever shows a partition owned twice (a member not replayed
yet owns nothing). So failover stays possible while the log's size follows the state's, not the
coordinator's age.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from .records import (
    ClassicGroupRecord,
    ClassicGroupTombstone,
    ConsumerGroupTombstone,
    CurrentAssignmentRecord,
    CurrentAssignmentTombstone,
    GroupEpochRecord,
    MemberMetadataRecord,
    MemberMetadataTombstone,
    OffsetCommitRecord,
    OffsetTombstone,
    PendingOffsetRecord,
    PendingOffsetTombstone,
    Record,
    RegexRecord,
    RegexTombstone,
    SimpleGroupRecord,
    SimpleGroupTombstone,
    TargetMemberRecord,
    TargetMemberTombstone,
    TargetMetadataRecord,
    WorkerGroupRecord,
    WorkerGroupTombstone,
)

_TOMBSTONES = (
    MemberMetadataTombstone,
    TargetMemberTombstone,
    CurrentAssignmentTombstone,
    RegexTombstone,
    OffsetTombstone,
    PendingOffsetTombstone,
    SimpleGroupTombstone,
    ClassicGroupTombstone,
    ConsumerGroupTombstone,
    WorkerGroupTombstone,
)

#: Keys of records about a consumer group (not its offsets).
_CONSUMER_GROUP_KEYS = frozenset({"group", "member", "target", "target-metadata", "current", "regex"})


def record_key(record: Record) -> tuple[Any, ...]:
    """The compaction key of a record (a tombstone has the key of what it removes)."""
    if isinstance(record, GroupEpochRecord):
        return ("group", record.group_id)
    if isinstance(record, MemberMetadataRecord):
        return ("member", record.group_id, record.metadata.member_id)
    if isinstance(record, MemberMetadataTombstone):
        return ("member", record.group_id, record.member_id)
    if isinstance(record, TargetMemberRecord | TargetMemberTombstone):
        return ("target", record.group_id, record.member_id)
    if isinstance(record, TargetMetadataRecord):
        return ("target-metadata", record.group_id)
    if isinstance(record, CurrentAssignmentRecord | CurrentAssignmentTombstone):
        return ("current", record.group_id, record.member_id)
    if isinstance(record, RegexRecord | RegexTombstone):
        return ("regex", record.group_id, record.regex)
    if isinstance(record, OffsetCommitRecord | OffsetTombstone):
        return ("offset", record.group_id, record.topic, record.partition)
    if isinstance(record, PendingOffsetRecord | PendingOffsetTombstone):
        return ("pending-offset", record.group_id, record.producer_id, record.topic, record.partition)
    if isinstance(record, SimpleGroupRecord | SimpleGroupTombstone):
        return ("simple-group", record.group_id)
    if isinstance(record, ClassicGroupRecord | ClassicGroupTombstone):
        return ("classic-group", record.group_id)
    if isinstance(record, ConsumerGroupTombstone):
        return ("group", record.group_id)
    if isinstance(record, WorkerGroupRecord | WorkerGroupTombstone):
        return ("worker-group", record.group_id)
    raise TypeError(f"not a coordinator record: {record!r}")


class RecordLog:
    """An append-only view of the records, kept compacted; iterate it to replay."""

    def __init__(self, records: Iterable[Record] = ()) -> None:
        self._latest: dict[tuple[Any, ...], Record] = {}
        #: Records ever appended (compaction does not lower it).
        self.appended = 0
        self.extend(records)

    def append(self, record: Record) -> None:
        if isinstance(record, ClassicGroupRecord) and not record.durable:
            return  # in-memory rebalance progress: a coordinator taking over does not see it
        key = record_key(record)
        if isinstance(record, ConsumerGroupTombstone):  # the whole group goes, offsets excepted
            for doomed in [
                k for k in self._latest if k[0] in _CONSUMER_GROUP_KEYS and k[1] == record.group_id
            ]:
                del self._latest[doomed]
        self._latest.pop(key, None)  # the survivor moves to the end, where it was written
        if not isinstance(record, _TOMBSTONES):
            self._latest[key] = record
        self.appended += 1

    def extend(self, records: Iterable[Record]) -> None:
        for record in records:
            self.append(record)

    def __iter__(self) -> Iterator[Record]:
        return iter(list(self._latest.values()))

    def __eq__(self, other: object) -> bool:
        """Two logs are equal when they retain the same records in the same order."""
        if not isinstance(other, RecordLog):
            return NotImplemented
        return list(self._latest.values()) == list(other._latest.values())

    __hash__ = None  # type: ignore[assignment]

    def __len__(self) -> int:
        """Records retained after compaction."""
        return len(self._latest)
