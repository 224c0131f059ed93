"""Group events in the server log, derived from the records the coordinator writes.

Joins, leaves, removals by timeout, epoch bumps, new target assignments and member epochs are
logged at INFO under ``kconsumer.broker.server``; offset commits and other member updates at DEBUG.
Fencing shows up as a heartbeat answered FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from ...errors import ErrorCode
from ...protocol.messages.consumer_group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from ...protocol.schema import Message
from ...protocol.uuid import Uuid
from ..coordinator import GroupCoordinator
from ..coordinator.records import (
    CurrentAssignmentRecord,
    GroupEpochRecord,
    MemberMetadataRecord,
    MemberMetadataTombstone,
    OffsetCommitRecord,
    Record,
    RegexRecord,
    TargetMetadataRecord,
)

logger = logging.getLogger("kconsumer.broker.server")

#: Heartbeat errors that mean the member lost its membership.
_FENCING_ERRORS = (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID)

#: Why records were written, for the wording of removals.
CAUSE_REQUEST = "request"
CAUSE_TIMER = "timer"
CAUSE_METADATA = "metadata"


class GroupEventLog:
    """Turns coordinator records (and fencing errors) into log lines."""

    def __init__(self) -> None:
        #: (group, member) → (member epoch, reconciliation state) last seen.
        self._epochs: dict[tuple[str, str], tuple[int, int]] = {}
        self._groups: set[str] = set()

    def observe(
        self,
        coordinator: GroupCoordinator,
        records: Iterable[Record],
        cause: str,
        request: Message | None = None,
        response: Message | None = None,
    ) -> None:
        """Log what `records` (already applied to `coordinator`) changed."""
        if isinstance(response, ConsumerGroupHeartbeatResponse) and response.error_code in _FENCING_ERRORS:
            assert isinstance(request, ConsumerGroupHeartbeatRequest)
            logger.info(
                "group %s: member %s (epoch %d) fenced: %s",
                request.group_id,
                request.member_id,
                request.member_epoch,
                ErrorCode.of(response.error_code).name,
            )
        leaving = isinstance(request, ConsumerGroupHeartbeatRequest) and request.member_epoch in (
            LEAVE_GROUP_MEMBER_EPOCH,
            LEAVE_GROUP_STATIC_MEMBER_EPOCH,
        )
        if not logger.isEnabledFor(logging.INFO):
            self._track(records)
            return
        names = coordinator.image.topics_by_id
        targets: dict[str, int] = {}
        for record in records:
            if isinstance(record, MemberMetadataRecord):
                self._member(record)
            elif isinstance(record, MemberMetadataTombstone):
                key = (record.group_id, record.member_id)
                self._epochs.pop(key, None)
                if cause == CAUSE_TIMER:
                    how = "removed: its session or rebalance timeout expired"
                elif leaving:
                    how = "left the group"
                else:
                    how = "removed (replaced by a new member with its instance id)"
                logger.info("group %s: member %s %s", record.group_id, record.member_id, how)
            elif isinstance(record, GroupEpochRecord):
                if record.group_id not in self._groups:
                    self._groups.add(record.group_id)
                    logger.info("group %s: created at epoch %d", record.group_id, record.epoch)
                else:
                    logger.info("group %s: group epoch is now %d", record.group_id, record.epoch)
            elif isinstance(record, TargetMetadataRecord):
                if record.timestamp_ms is not None:  # None: the empty target of a new group
                    targets[record.group_id] = record.assignment_epoch
            elif isinstance(record, CurrentAssignmentRecord):
                self._current(record, names)
            elif isinstance(record, RegexRecord):
                logger.info(
                    "group %s: regex %r matches %s",
                    record.group_id,
                    record.regex,
                    sorted(record.resolved.topics),
                )
            elif isinstance(record, OffsetCommitRecord):
                logger.debug(
                    "group %s: committed %s-%d at offset %d",
                    record.group_id,
                    record.topic,
                    record.partition,
                    record.value.offset,
                )
        for group_id, epoch in targets.items():
            group = coordinator.group(group_id)
            if group is not None:
                target = {m: _named(t.partitions, names) for m, t in sorted(group.target.items())}
                logger.info("group %s: target assignment for epoch %d: %s", group_id, epoch, target)

    def _track(self, records: Iterable[Record]) -> None:
        for record in records:
            if isinstance(record, GroupEpochRecord):
                self._groups.add(record.group_id)
            elif isinstance(record, MemberMetadataRecord):
                self._epochs.setdefault((record.group_id, record.metadata.member_id), (0, 0))
            elif isinstance(record, MemberMetadataTombstone):
                self._epochs.pop((record.group_id, record.member_id), None)
            elif isinstance(record, CurrentAssignmentRecord):
                current = record.current
                self._epochs[(record.group_id, record.member_id)] = (current.member_epoch, current.state)

    def _member(self, record: MemberMetadataRecord) -> None:
        metadata = record.metadata
        key = (record.group_id, metadata.member_id)
        if key in self._epochs:
            logger.debug("group %s: member %s updated: %s", record.group_id, metadata.member_id, metadata)
            return
        self._epochs[key] = (0, 0)
        subscription: object = list(metadata.subscribed_topic_names)
        if metadata.subscribed_topic_regex:
            subscription = f"regex {metadata.subscribed_topic_regex!r}"
        logger.info(
            "group %s: member %s joined (client %s at %s%s), subscribed to %s",
            record.group_id,
            metadata.member_id,
            metadata.client_id,
            metadata.client_host,
            f", instance {metadata.instance_id}" if metadata.instance_id else "",
            subscription,
        )

    def _current(self, record: CurrentAssignmentRecord, names: Mapping[Uuid, object]) -> None:
        key = (record.group_id, record.member_id)
        current = record.current
        now = (current.member_epoch, int(current.state))
        level = logging.INFO if self._epochs.get(key) != now else logging.DEBUG
        self._epochs[key] = now
        logger.log(
            level,
            "group %s: member %s at epoch %d (%s): assigned %s%s",
            record.group_id,
            record.member_id,
            current.member_epoch,
            current.state.name.lower(),
            _named({t: frozenset(p) for t, p in current.assigned.items()}, names),
            f", revoking {_named(current.pending_revocation, names)}" if current.pending_revocation else "",
        )


def _named(assignment: Mapping[Uuid, Iterable[int]], names: Mapping[Uuid, object]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for topic_id, partitions in assignment.items():
        meta = names.get(topic_id)
        name = getattr(meta, "name", None) or str(topic_id)
        if partitions:
            out[name] = sorted(partitions)
    return dict(sorted(out.items()))
