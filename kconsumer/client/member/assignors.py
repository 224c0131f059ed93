"""Client-side assignor hooks of the member (docs/assignor-protocol.md): what the heartbeat announces and when
this member must compute the group's assignment.

* The configured local assignors and their current metadata go in the heartbeat's ClientAssignors
  (tag 10000) when they changed, and in full after joining or an error (the heartbeat builder's
  delta rule).
* `request_assignment` sets a non-zero Reason (the application asks for a new assignment). Once a
  heartbeat carrying it succeeded, the Reason goes back to 0 (sent in the next heartbeat; a change
  to 0 does not bump the group epoch, docs/assignor-protocol.md), so a later request is again a change.
* A response with ShouldComputeAssignment=true starts one computation
  (`ComputeClientAssignment(epoch)`); while it runs, further requests are ignored. Its outcome:
  success or UNKNOWN_MEMBER_ID ends it; STALE_MEMBER_EPOCH and retriable errors retry it after the
  next successful heartbeat (with that heartbeat's epoch); INVALID_REQUEST and other errors are
  reported to the application (non-fatal) and end it.
"""

from __future__ import annotations

from dataclasses import replace

from ...errors import ErrorCode, error_for
from . import events as ev
from .effects import ComputeClientAssignment, Effect, ReportError
from .errors import UnsupportedFeatureError, client_assignors_unsupported
from .model import ClientAssignor


class ClientAssignorHooks:
    """The local assignors' announced state and the pending assignment computation."""

    def __init__(self, assignors: tuple[ClientAssignor, ...]) -> None:
        self._assignors = assignors
        #: Whether the coordinator offers the client-side-assignor APIs (assumed until told).
        self.supported = True
        self._reason_in_flight = False
        self._reason_delivered = False
        self.computing_epoch: int | None = None
        self._retry_after_heartbeat = False

    @property
    def configured(self) -> bool:
        """True when at least one local assignor is configured."""
        return bool(self._assignors)

    @property
    def announced(self) -> tuple[ClientAssignor, ...]:
        """What the next heartbeat announces (the builder sends it only when it changed)."""
        return self._assignors

    def unsupported_error(self) -> UnsupportedFeatureError | None:
        """The fatal error of local assignors on a coordinator without the extension APIs."""
        if self._assignors and not self.supported:
            return client_assignors_unsupported([a.name for a in self._assignors])
        return None

    def update_metadata(self, name: str, version: int, metadata: bytes, reason: int) -> bool:
        """New member metadata for assignor `name`; True if anything changed. Raises ValueError
        for an unknown name or a version outside the assignor's range."""
        for i, current in enumerate(self._assignors):
            if current.name == name:
                updated = replace(current, metadata_version=version, metadata_bytes=metadata, reason=reason)
                if updated == current:
                    return False
                self._assignors = (*self._assignors[:i], updated, *self._assignors[i + 1 :])
                return True
        raise ValueError(f"no local assignor named {name!r}")

    def request_assignment(self, reason: int) -> bool:
        """Set a non-zero `reason` on every local assignor; True if anything changed."""
        if reason == 0:
            raise ValueError("a request for a new assignment needs a non-zero reason")
        updated = tuple(replace(a, reason=reason) for a in self._assignors)
        changed = updated != self._assignors
        self._assignors = updated
        return changed

    def on_heartbeat_sent(self, full_or_changed: bool) -> None:
        """A heartbeat left; note whether it carried a non-zero reason."""
        self._reason_in_flight = full_or_changed and any(a.reason for a in self._assignors)

    def on_heartbeat_failed(self) -> None:
        """The heartbeat failed: a reason it carried will be sent again (full request)."""
        self._reason_in_flight = False

    def on_heartbeat_success(self, member_epoch: int, should_compute: bool) -> list[Effect]:
        """After a successful heartbeat: reset a delivered reason, and start a computation when
        asked to or when one waits for a retry."""
        if self._reason_in_flight:
            self._reason_in_flight = False
            self._assignors = tuple(replace(a, reason=0) for a in self._assignors)
        if (
            self._assignors
            and self.computing_epoch is None
            and (should_compute or self._retry_after_heartbeat)
        ):
            self._retry_after_heartbeat = False
            self.computing_epoch = member_epoch
            return [ComputeClientAssignment(member_epoch)]
        return []

    def on_result(self, member_epoch: int, code: ErrorCode, message: str | None) -> list[Effect]:
        """The computation asked at `member_epoch` ended with `code`."""
        if self.computing_epoch is None or member_epoch != self.computing_epoch:
            return []
        self.computing_epoch = None
        if code in (ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID):
            return []
        if code is ErrorCode.STALE_MEMBER_EPOCH or code.retriable:
            self._retry_after_heartbeat = True
            return []
        if code is ErrorCode.INVALID_REQUEST:
            text = f"the coordinator rejected the client-side assignment: {message or 'no message'}"
        else:
            text = f"the client-side assignment failed: {message or code.name}"
        return [ReportError(error_for(code, text), fatal=False)]

    def handle(
        self, event: ev.ClientAssignmentResult | ev.AssignorMetadataUpdated | ev.RequestAssignment
    ) -> tuple[list[Effect], bool]:
        """The application's and the session's assignor events: (effects, whether the next
        heartbeat must go at once)."""
        if isinstance(event, ev.ClientAssignmentResult):
            return self.on_result(event.member_epoch, event.error, event.message), False
        if isinstance(event, ev.AssignorMetadataUpdated):
            changed = self.update_metadata(
                event.name, event.metadata_version, event.metadata_bytes, event.reason
            )
            return [], changed
        return [], self.configured and self.request_assignment(event.reason)

    def abandon(self) -> None:
        """Forget any computation (the member left, was fenced or failed)."""
        self.computing_epoch = None
        self._retry_after_heartbeat = False
