"""A consumer's local (client-side) assignors, on the application side: their metadata for the
member session, ``on_assignment`` on the application thread, and ``assign()`` for the runtime's
assignor thread. The computation itself (Prepare, names, assign, Install) is the member session's
(`kconsumer.client.member.client_assignment`); the runtime only runs ``assign()`` off its loop.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ..assignment.assignor import AssignmentSpec, GroupMetadata, MemberAssignment, assignor_metadata
from ..errors import ConfigError
from .config import ConsumerConfig
from .member.effects import InvokeCallback
from .member.events import AssignorMetadataUpdated, RequestAssignment

log = logging.getLogger("kconsumer")

_KEY = "group.local.assignors"


class LocalAssignors:
    """A consumer's client-side assignors (see the module docstring)."""

    def __init__(
        self,
        assignors: Sequence[Any],
        group_id: str,
        member_id: str,
        group_instance_id: str | None = None,
    ) -> None:
        if not assignors:
            raise ValueError("LocalAssignors needs at least one assignor")
        self._assignors = tuple(assignors)
        self._by_name = {a.name: a for a in self._assignors}
        self.group_id = group_id
        self.member_id = member_id
        self.group_instance_id = group_instance_id

    @classmethod
    def from_config(cls, config: ConsumerConfig, member_id: str) -> LocalAssignors | None:
        """The configured local assignors, or None. Raises `ConfigError` for an object that
        cannot compute assignments (no ``assign`` method; the configuration checked the rest)."""
        if not config.group_local_assignors or config.group_id is None:
            return None
        for assignor in config.group_local_assignors:
            if not callable(getattr(assignor, "assign", None)):
                raise ConfigError(
                    _KEY,
                    f"{assignor!r} has no assign(spec) method: a local assignor implements "
                    "kconsumer.PartitionAssignor",
                )
        return cls(config.group_local_assignors, config.group_id, member_id, config.group_instance_id)

    # -- application thread --------------------------------------------------------------------

    def metadata_events(self, name: str | None = None) -> list[AssignorMetadataUpdated]:
        """Re-read ``metadata()`` of assignor `name` (every one when None): the events that
        announce it. Raises ValueError for an unknown name or invalid metadata."""
        if name is None:
            chosen = list(self._assignors)
        elif name in self._by_name:
            chosen = [self._by_name[name]]
        else:
            known = ", ".join(self._by_name)
            raise ValueError(f"no local assignor named {name!r} (configured: {known})")
        events = []
        for assignor in chosen:
            meta = assignor_metadata(assignor)
            events.append(AssignorMetadataUpdated(assignor.name, meta.version, meta.data, meta.reason))
        return events

    @staticmethod
    def request_event(reason: int) -> RequestAssignment:
        """The event asking for a new assignment with `reason` (a non-zero int8)."""
        if (
            isinstance(reason, bool)
            or not isinstance(reason, int)
            or not -128 <= reason <= 127
            or reason == 0
        ):
            raise ValueError(f"reason must be a non-zero int8 (-128..127 except 0), got {reason!r}")
        return RequestAssignment(reason)

    def assign(self, name: str, spec: AssignmentSpec) -> object:
        """``assign(spec)`` of the local assignor `name` (on the runtime's assignor thread)."""
        return self._by_name[name].assign(spec)

    def on_assignment(self, work: InvokeCallback, member_epoch: int) -> None:
        """Call ``on_assignment`` of the group's assignor (as the session named it) for an
        ASSIGNMENT callback."""
        meta = work.assignment_metadata
        assignor = self._by_name.get(work.assignor_name or "", self._assignors[0])
        callback = getattr(assignor, "on_assignment", None)
        if meta is None or callback is None:
            return
        assignment = MemberAssignment(
            [(tp.topic, tp.partition) for tp in work.partitions], meta.metadata_bytes, meta.metadata_version
        )
        group = GroupMetadata(self.group_id, self.member_id, member_epoch, self.group_instance_id)
        callback(meta.error, assignment, group)
