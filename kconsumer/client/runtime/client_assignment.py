"""The member's side of client-side assignment (EXTENSIONS.md §2-§4): running the local
`PartitionAssignor` when the coordinator asks, and delivering ``on_assignment``.

The flow, for each ``ComputeClientAssignment(member_epoch)`` of the member core:

1. ConsumerGroupPrepareAssignment(member id, member epoch) → the group at some GroupEpoch.
2. The response becomes an `AssignmentSpec`: topic ids become names (the response names the
   subscribed topics; other ids, in members' current targets, come from the metadata cache or a
   Metadata request).
3. ``assign(spec)`` runs on this consumer's assignor thread (`loop.run_in_executor`): neither
   the application thread nor the event loop waits for it, so heartbeats keep flowing.
4. The result goes back to topic ids and is installed with ConsumerGroupInstallAssignment
   (GroupEpoch = what Prepare returned).
5. The outcome goes to the core as `ClientAssignmentResult`: NONE; STALE_MEMBER_EPOCH (the core
   retries after the next heartbeat); UNKNOWN_MEMBER_ID (no longer the chosen member: abandoned);
   INVALID_REQUEST (the coordinator's validation failed: reported to the application with its
   message, topic ids there followed by their names).

When ``assign()`` raises or returns something that is not a `GroupAssignment` the assignor
failed, not the group: the error is reported to the application (raised from ``poll()`` as an
`AssignorFailedError`) and, when the current target assignment is still a valid assignment of
the prepared group (nobody left, no partition added), that target is installed again with
Error = `AssignorError.ASSIGNMENT_ERROR`: the group moves to the new epoch with no partition
moving and every member's ``on_assignment`` sees the error. Otherwise nothing is installed (an
empty or partial assignment would be rejected and inventing one is the assignor's job): the
coordinator chooses a member again after the rebalance timeout (EXTENSIONS.md §3.2).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...assignment.assignor import (
    AssignorError,
    AssignorFailedError,
    GroupMetadata,
    MemberAssignment,
    assignor_metadata,
)
from ...assignment.conversions import (
    Prepared,
    build_spec,
    install_members,
    name_topic_ids,
    previous_target,
    unknown_topic_ids,
)
from ...errors import ConfigError, ErrorCode, KafkaApiError
from ...protocol.messages.extensions import (
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupInstallAssignmentResponse,
    ConsumerGroupPrepareAssignmentRequest,
    ConsumerGroupPrepareAssignmentResponse,
    InstalledMember,
)
from ...protocol.negotiation import NoCommonVersionError
from ..config import ConsumerConfig
from ..member.effects import InvokeCallback, ReportError
from ..member.events import AssignorMetadataUpdated, ClientAssignmentResult, RequestAssignment
from .connection import TransportError

if TYPE_CHECKING:
    from .member_runtime import MemberRuntime

log = logging.getLogger("kconsumer")

_KEY = "group.local.assignors"


class LocalAssignors:
    """A consumer's client-side assignors: their metadata for the member core, the computation
    the coordinator asks for (`run`, the runtime's ``client_assignment`` runner) and
    ``on_assignment`` on the application thread."""

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
        #: The assignor the group uses, as far as this member knows (its last PrepareAssignment).
        self.selected: str = self._assignors[0].name
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=f"kconsumer-assignor-{member_id[:8]}"
        )

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

    def on_assignment(self, work: InvokeCallback, member_epoch: int) -> None:
        """Call ``on_assignment`` of the group's assignor for an ASSIGNMENT callback."""
        meta = work.assignment_metadata
        assignor = self._by_name.get(self.selected, self._assignors[0])
        callback = getattr(assignor, "on_assignment", None)
        if meta is None or callback is None:
            return
        assignment = MemberAssignment(
            [(tp.topic, tp.partition) for tp in work.partitions], meta.metadata_bytes, meta.metadata_version
        )
        group = GroupMetadata(self.group_id, self.member_id, member_epoch, self.group_instance_id)
        callback(meta.error, assignment, group)

    def close(self) -> None:
        """Stop the assignor thread (an assign() still running finishes on its own)."""
        self._executor.shutdown(wait=False, cancel_futures=True)

    # -- the event loop ------------------------------------------------------------------------

    async def run(self, runtime: MemberRuntime, member_epoch: int) -> ClientAssignmentResult:
        """Prepare, assign, install (module docstring). Transport and version errors propagate
        (the runtime turns them into a result); everything else ends in a result, so the member
        core always learns that the computation ended."""
        try:
            return await self._run(runtime, member_epoch)
        except (TransportError, KafkaApiError, NoCommonVersionError):
            raise
        except Exception as exc:  # a bug or an undecodable response: report it, do not hang
            log.exception("group %s: the client-side assignment failed", self.group_id)
            text = f"{type(exc).__name__}: {exc}"
            return ClientAssignmentResult(member_epoch, ErrorCode.UNKNOWN_SERVER_ERROR, text)

    async def _run(self, runtime: MemberRuntime, member_epoch: int) -> ClientAssignmentResult:
        connection = await runtime.coordinator()
        prepare = ConsumerGroupPrepareAssignmentRequest(
            group_id=self.group_id, member_id=self.member_id, member_epoch=member_epoch
        )
        response = await connection.request(prepare)
        assert isinstance(response, ConsumerGroupPrepareAssignmentResponse)
        if response.error_code:
            return ClientAssignmentResult(
                member_epoch, ErrorCode.of(response.error_code), response.error_message
            )
        assignor = self._by_name.get(response.assignor_name)
        if assignor is None:
            text = f"the coordinator asked for assignor {response.assignor_name!r}, not configured here"
            return ClientAssignmentResult(member_epoch, ErrorCode.INVALID_REQUEST, text)
        self.selected = response.assignor_name
        prepared = await self._prepared(runtime, response)
        error, members, failure = await self._compute(assignor, prepared)
        if failure is not None:
            runtime.app_queue.put(ReportError(failure, fatal=False))
            if members is None:
                return ClientAssignmentResult(member_epoch)  # reported; the coordinator will ask again
        assert members is not None
        install = ConsumerGroupInstallAssignmentRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=member_epoch,
            group_epoch=response.group_epoch,
            error=error,
            members=members,
        )
        result = await connection.request(install)
        assert isinstance(result, ConsumerGroupInstallAssignmentResponse)
        code = ErrorCode.of(result.error_code)
        message = name_topic_ids(result.error_message, prepared.names)
        if code is ErrorCode.NONE:
            log.info(
                "group %s: installed the %s assignment of epoch %d",
                self.group_id,
                response.assignor_name,
                response.group_epoch,
            )
        else:
            log.warning("group %s: InstallAssignment failed with %s: %s", self.group_id, code.name, message)
        return ClientAssignmentResult(member_epoch, code, message)

    async def _prepared(
        self, runtime: MemberRuntime, response: ConsumerGroupPrepareAssignmentResponse
    ) -> Prepared:
        missing = unknown_topic_ids(response, runtime.network.topic_names)
        if missing:
            try:
                await runtime.network.metadata(topic_ids=missing)
            except (TransportError, KafkaApiError, NoCommonVersionError) as exc:
                log.warning("group %s: metadata of %d topic ids failed: %s", self.group_id, len(missing), exc)
        return build_spec(self.group_id, response, runtime.network.topic_names)

    async def _compute(
        self, assignor: Any, prepared: Prepared
    ) -> tuple[int, list[InstalledMember] | None, AssignorFailedError | None]:
        """(Error, Members to install or None, failure to report) of running `assignor`."""
        loop = asyncio.get_running_loop()
        try:
            result = await loop.run_in_executor(self._executor, assignor.assign, prepared.spec)
            error, members = install_members(prepared, result)
            return error, members, None
        except AssignorFailedError as exc:
            failure = AssignorFailedError(f"assignor {assignor.name!r}: {exc}")
            failure.__cause__ = exc.__cause__
        except Exception as exc:
            log.exception("group %s: assignor %r raised", self.group_id, assignor.name)
            failure = AssignorFailedError(f"assignor {assignor.name!r} raised {type(exc).__name__}: {exc}")
            failure.__cause__ = exc
        previous = previous_target(prepared)
        return int(AssignorError.ASSIGNMENT_ERROR), previous, failure
