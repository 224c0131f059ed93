"""The coordinator's durable state and the one function that changes it: `CoordinatorState.replay`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from .classic.model import ClassicGroup
from .model import ConsumerGroup, ConsumerGroupMember, CurrentAssignment, MemberRegistration
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
    OffsetValue,
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
from .workers.model import WorkerGroup


class CoordinatorState:
    """Groups, committed offsets and simple (admin) groups, as rebuilt from records."""

    def __init__(self) -> None:
        self.groups: dict[str, ConsumerGroup] = {}
        self.offsets: dict[str, dict[tuple[str, int], OffsetValue]] = {}
        #: Offsets committed inside open transactions: group -> producer id -> (topic, partition).
        self.pending_offsets: dict[str, dict[int, dict[tuple[str, int], OffsetValue]]] = {}
        self.simple_groups: set[str] = set()
        self.classic_groups: dict[str, ClassicGroup] = {}
        #: Each classic group as its last durable record has it (what a coordinator taking over
        #: loads; the in-memory rebalance progress since then is not logged).
        self.classic_durable: dict[str, ClassicGroup] = {}
        self.worker_groups: dict[str, WorkerGroup] = {}
        self._handlers: dict[type[Any], Callable[[Any], None]] = {
            GroupEpochRecord: self._group_epoch,
            MemberMetadataRecord: self._member_metadata,
            MemberMetadataTombstone: self._member_tombstone,
            TargetMemberRecord: self._target_member,
            TargetMemberTombstone: self._target_member_tombstone,
            TargetMetadataRecord: self._target_metadata,
            CurrentAssignmentRecord: self._current_assignment,
            CurrentAssignmentTombstone: self._current_assignment_tombstone,
            RegexRecord: self._regex,
            RegexTombstone: self._regex_tombstone,
            OffsetCommitRecord: self._offset_commit,
            OffsetTombstone: self._offset_tombstone,
            PendingOffsetRecord: self._pending_offset,
            PendingOffsetTombstone: self._pending_offset_tombstone,
            SimpleGroupRecord: self._simple_group,
            SimpleGroupTombstone: self._simple_group_tombstone,
            ClassicGroupRecord: self._classic_group,
            ClassicGroupTombstone: self._classic_group_tombstone,
            ConsumerGroupTombstone: self._consumer_group_tombstone,
            WorkerGroupRecord: self._worker_group,
            WorkerGroupTombstone: self._worker_group_tombstone,
        }

    def replay(self, record: Record) -> None:
        """Apply one record. The only way the state changes."""
        self._handlers[type(record)](record)

    def group(self, group_id: str) -> ConsumerGroup | None:
        return self.groups.get(group_id)

    def undo_of(self, record: Record) -> Callable[[], None]:
        """A function restoring what `record` is about to change (call it right before replaying it)."""
        if isinstance(record, (OffsetCommitRecord, OffsetTombstone)):
            offsets = self.offsets.get(record.group_id)
            key = (record.topic, record.partition)
            previous = None if offsets is None else offsets.get(key)
            return lambda: self._restore_offset(record.group_id, key, previous, offsets is not None)
        if isinstance(record, (PendingOffsetRecord, PendingOffsetTombstone)):
            pending = self.pending_offsets.get(record.group_id, {}).get(record.producer_id, {})
            was = pending.get((record.topic, record.partition))
            return lambda: self._restore_pending(record, was)
        if isinstance(record, (SimpleGroupRecord, SimpleGroupTombstone)):
            add = record.group_id in self.simple_groups
            return lambda: (self.simple_groups.add if add else self.simple_groups.discard)(record.group_id)
        if isinstance(record, (ClassicGroupRecord, ClassicGroupTombstone)):
            classic = self.classic_groups.get(record.group_id)
            durable = self.classic_durable.get(record.group_id)

            def undo_classic() -> None:
                _restore(self.classic_groups, record.group_id, classic)
                _restore(self.classic_durable, record.group_id, durable)

            return undo_classic
        if isinstance(record, (WorkerGroupRecord, WorkerGroupTombstone)):
            workers = self.worker_groups.get(record.group_id)
            return lambda: _restore(self.worker_groups, record.group_id, workers)
        group = self.groups.get(record.group_id)
        if isinstance(record, ConsumerGroupTombstone):
            return lambda: _restore(self.groups, record.group_id, group)
        if group is None:
            return lambda: self._forget_group(record.group_id)
        epochs = (group.group_epoch, group.metadata_hash, group.assignment_epoch, group.last_assignment_ms)
        member_id = record.metadata.member_id if isinstance(record, MemberMetadataRecord) else None
        member_id = getattr(record, "member_id", member_id)
        member = None if member_id is None else group.members.get(member_id)
        target = None if member_id is None else group.target.get(member_id)
        regex = getattr(record, "regex", None)
        resolved = None if regex is None else group.resolved_regexes.get(regex)

        def undo() -> None:
            group.group_epoch, group.metadata_hash, group.assignment_epoch, group.last_assignment_ms = epochs
            if member_id is not None:
                _restore_member(group, member_id, member)
                _restore(group.target, member_id, target)
            if regex is not None:
                _restore(group.resolved_regexes, regex, resolved)

        return undo

    def _forget_group(self, group_id: str) -> None:
        self.groups.pop(group_id, None)

    def _restore_offset(
        self, group_id: str, key: tuple[str, int], value: OffsetValue | None, group_existed: bool
    ) -> None:
        offsets = self.offsets.setdefault(group_id, {})
        _restore(offsets, key, value)
        if not offsets and not group_existed:
            del self.offsets[group_id]

    def _restore_pending(
        self, record: PendingOffsetRecord | PendingOffsetTombstone, value: OffsetValue | None
    ) -> None:
        if value is None:
            self._pending_offset_tombstone(record)
        else:
            self._pending_offset(PendingOffsetRecord(*_pending_key(record), value))

    def pending_producers(self, group_id: str, topic: str, partition: int) -> list[int]:
        """The producers with an offset of (topic, partition) pending in an open transaction."""
        return [
            producer
            for producer, offsets in self.pending_offsets.get(group_id, {}).items()
            if (topic, partition) in offsets
        ]

    def snapshot(self) -> dict[str, Any]:
        """The durable state as plain values, for comparing two coordinators (failover tests)."""
        groups = {}
        for group_id, group in sorted(self.groups.items()):
            groups[group_id] = {
                "epoch": group.group_epoch,
                "metadata_hash": group.metadata_hash,
                "assignment_epoch": group.assignment_epoch,
                "last_assignment_ms": group.last_assignment_ms,
                "members": {mid: group.members[mid] for mid in sorted(group.members)},
                "target": {mid: group.target[mid] for mid in sorted(group.target)},
                "regexes": dict(sorted(group.resolved_regexes.items())),
                "static": dict(sorted(group.static_members.items())),
                "owners": {str(t): dict(sorted(p.items())) for t, p in sorted(group.owners.items())},
            }
        return {
            "groups": groups,
            "offsets": {g: dict(sorted(o.items())) for g, o in sorted(self.offsets.items()) if o},
            "pending_offsets": {
                g: {p: dict(sorted(o.items())) for p, o in sorted(by_producer.items())}
                for g, by_producer in sorted(self.pending_offsets.items())
            },
            "simple_groups": sorted(self.simple_groups),
            "classic_groups": dict(sorted(self.classic_durable.items())),
            "worker_groups": dict(sorted(self.worker_groups.items())),
        }

    # -- replay handlers ---------------------------------------------------------------------

    def _get_or_create(self, group_id: str) -> ConsumerGroup:
        group = self.groups.get(group_id)
        if group is None:
            group = ConsumerGroup(group_id)
            self.groups[group_id] = group
        return group

    def _group_epoch(self, record: GroupEpochRecord) -> None:
        group = self._get_or_create(record.group_id)
        group.group_epoch = record.epoch
        group.metadata_hash = record.metadata_hash

    def _member_metadata(self, record: MemberMetadataRecord) -> None:
        group = self._get_or_create(record.group_id)
        metadata = record.metadata
        existing = group.members.get(metadata.member_id)
        if existing is not None:
            group._index_subscription(existing.metadata, -1)
            if existing.instance_id and group.static_members.get(existing.instance_id) == metadata.member_id:
                del group.static_members[existing.instance_id]
            member = dataclasses.replace(existing, metadata=metadata)
        else:
            member = ConsumerGroupMember(metadata)
        group._index_subscription(metadata, +1)
        if metadata.instance_id:
            group.static_members[metadata.instance_id] = metadata.member_id
        group.members[metadata.member_id] = member

    def _member_tombstone(self, record: MemberMetadataTombstone) -> None:
        group = self.groups.get(record.group_id)
        if group is None:
            return
        member = group.members.pop(record.member_id, None)
        if member is None:
            return
        group._index_subscription(member.metadata, -1)
        group._index_ownership(member.member_id, member.current, add=False)
        if member.instance_id and group.static_members.get(member.instance_id) == member.member_id:
            del group.static_members[member.instance_id]

    def _target_member(self, record: TargetMemberRecord) -> None:
        self._get_or_create(record.group_id).target[record.member_id] = record.target

    def _target_member_tombstone(self, record: TargetMemberTombstone) -> None:
        group = self.groups.get(record.group_id)
        if group is not None:
            group.target.pop(record.member_id, None)

    def _target_metadata(self, record: TargetMetadataRecord) -> None:
        group = self._get_or_create(record.group_id)
        group.assignment_epoch = record.assignment_epoch
        group.last_assignment_ms = record.timestamp_ms

    def _current_assignment(self, record: CurrentAssignmentRecord) -> None:
        group = self._get_or_create(record.group_id)
        member = group.members.get(record.member_id)
        if member is None:  # a record for a member whose metadata comes later; keep it
            member = ConsumerGroupMember(MemberRegistration(record.member_id))
            group.members[record.member_id] = member
        group._index_ownership(member.member_id, member.current, add=False)
        group._index_ownership(member.member_id, record.current, add=True)
        group.members[record.member_id] = dataclasses.replace(member, current=record.current)

    def _current_assignment_tombstone(self, record: CurrentAssignmentTombstone) -> None:
        group = self.groups.get(record.group_id)
        member = None if group is None else group.members.get(record.member_id)
        if group is None or member is None:
            return
        group._index_ownership(member.member_id, member.current, add=False)
        group.members[record.member_id] = dataclasses.replace(member, current=CurrentAssignment())

    def _regex(self, record: RegexRecord) -> None:
        self._get_or_create(record.group_id).resolved_regexes[record.regex] = record.resolved

    def _regex_tombstone(self, record: RegexTombstone) -> None:
        group = self.groups.get(record.group_id)
        if group is not None:
            group.resolved_regexes.pop(record.regex, None)

    def _offset_commit(self, record: OffsetCommitRecord) -> None:
        self.offsets.setdefault(record.group_id, {})[(record.topic, record.partition)] = record.value

    def _pending_offset(self, record: PendingOffsetRecord) -> None:
        by_producer = self.pending_offsets.setdefault(record.group_id, {})
        by_producer.setdefault(record.producer_id, {})[(record.topic, record.partition)] = record.value

    def _pending_offset_tombstone(self, record: PendingOffsetRecord | PendingOffsetTombstone) -> None:
        by_producer = self.pending_offsets.get(record.group_id, {})
        offsets = by_producer.get(record.producer_id)
        if offsets is None:
            return
        offsets.pop((record.topic, record.partition), None)
        if not offsets:
            del by_producer[record.producer_id]
            if not by_producer:
                del self.pending_offsets[record.group_id]

    def _offset_tombstone(self, record: OffsetTombstone) -> None:
        offsets = self.offsets.get(record.group_id)
        if offsets is not None:
            offsets.pop((record.topic, record.partition), None)

    def _simple_group(self, record: SimpleGroupRecord) -> None:
        self.simple_groups.add(record.group_id)

    def _simple_group_tombstone(self, record: SimpleGroupTombstone) -> None:
        self.simple_groups.discard(record.group_id)

    def _classic_group(self, record: ClassicGroupRecord) -> None:
        self.classic_groups[record.group_id] = record.group
        if record.durable:
            self.classic_durable[record.group_id] = record.group

    def _classic_group_tombstone(self, record: ClassicGroupTombstone) -> None:
        self.classic_groups.pop(record.group_id, None)
        self.classic_durable.pop(record.group_id, None)

    def _consumer_group_tombstone(self, record: ConsumerGroupTombstone) -> None:
        self.groups.pop(record.group_id, None)

    def _worker_group(self, record: WorkerGroupRecord) -> None:
        self.worker_groups[record.group_id] = record.group

    def _worker_group_tombstone(self, record: WorkerGroupTombstone) -> None:
        self.worker_groups.pop(record.group_id, None)


class RecordWriter:
    """Collects the records a handler writes, replaying each one at once so the handler sees its
    own changes (and nothing else ever mutates the state).

    An operation that fails after writing is `rollback`-ed: like a failed Kafka write operation,
    it leaves no record and no state change behind."""

    def __init__(self, state: CoordinatorState) -> None:
        self.state = state
        self.records: list[Record] = []
        self._undo: list[Callable[[], None]] = []

    def write(self, record: Record) -> None:
        self._undo.append(self.state.undo_of(record))
        self.state.replay(record)
        self.records.append(record)

    def rollback(self) -> None:
        """Undo every record written so far, newest first, and forget them."""
        while self._undo:
            self._undo.pop()()
        self.records.clear()


def _restore(mapping: dict[Any, Any], key: Any, value: Any) -> None:
    if value is None:
        mapping.pop(key, None)
    else:
        mapping[key] = value


def _restore_member(group: ConsumerGroup, member_id: str, previous: ConsumerGroupMember | None) -> None:
    """Put a member back as it was (None: absent), keeping the group's indexes in step."""
    current = group.members.pop(member_id, None)
    if current is not None:
        group._index_subscription(current.metadata, -1)
        group._index_ownership(member_id, current.current, add=False)
        if current.instance_id and group.static_members.get(current.instance_id) == member_id:
            del group.static_members[current.instance_id]
    if previous is not None:
        group._index_subscription(previous.metadata, +1)
        group._index_ownership(member_id, previous.current, add=True)
        if previous.instance_id:
            group.static_members[previous.instance_id] = member_id
        group.members[member_id] = previous


def _pending_key(record: PendingOffsetRecord | PendingOffsetTombstone) -> tuple[str, int, str, int]:
    return record.group_id, record.producer_id, record.topic, record.partition
