"""The client-side assignment, as the chosen member runs it (docs/assignor-protocol.md): one
computation per `ComputeClientAssignment` of the core, in four steps.

1. **Prepare**: ConsumerGroupPrepareAssignment; an error ends the computation with that code, and
   so does an assignor this member does not have (INVALID_REQUEST).
2. **Names**: topic ids of the prepared group that neither the response nor the cluster view names
   are looked up with Metadata (best effort: a deleted topic stays unnamed and is left out).
3. **Assign**: the local assignor's ``assign(spec)`` runs off the session (`RunAssignor`). A result
   that cannot be installed, or an exception, is reported to the application (non-fatal) and the
   group's previous target is installed again with Error ASSIGNMENT_ERROR when it is still a
   valid assignment; otherwise nothing is installed and the coordinator asks again later.
4. **Install**: ConsumerGroupInstallAssignment; its outcome ends the computation (the coordinator's
   rejection message names the topics behind the ids it mentions).

The outcome always reaches the core as one `ClientAssignmentResult`, so it never waits forever.
Transport failures end the computation with their code; the core decides whether to retry.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from ...assignment.assignor import AssignorError, AssignorFailedError
from ...assignment.conversions import (
    Prepared,
    build_spec,
    install_members,
    name_topic_ids,
    previous_target,
    unknown_topic_ids,
)
from ...errors import ErrorCode
from ...protocol.messages.extensions import (
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupInstallAssignmentResponse,
    ConsumerGroupPrepareAssignmentRequest,
    ConsumerGroupPrepareAssignmentResponse,
    InstalledMember,
)
from ...protocol.uuid import Uuid
from .calls import ForAssignment, InstallCall, MetadataCall, PrepareCall
from .effects import ReportError, RunAssignor
from .events import ClientAssignmentResult
from .steps import SessionStep

log = logging.getLogger("kconsumer")


@dataclass
class _Run:
    run_id: int
    epoch: int
    response: ConsumerGroupPrepareAssignmentResponse | None = None
    prepared: Prepared | None = None


class ClientAssignment:
    """The computations of one member (at most one at a time: the core asks for one)."""

    def __init__(self, group_id: str, member_id: str, assignor_names: tuple[str, ...]) -> None:
        self._group_id = group_id
        self._member_id = member_id
        self._names = assignor_names
        self._runs: dict[int, _Run] = {}
        self._next_run = 0
        #: The assignor the group uses, as far as this member knows (its last PrepareAssignment).
        self.selected: str = assignor_names[0] if assignor_names else ""

    def start(self, member_epoch: int) -> SessionStep:
        """A computation asked at `member_epoch`: Prepare."""
        self._next_run += 1
        run = _Run(self._next_run, member_epoch)
        self._runs[run.run_id] = run
        request = ConsumerGroupPrepareAssignmentRequest(
            group_id=self._group_id, member_id=self._member_id, member_epoch=member_epoch
        )
        return SessionStep(to_coordinator=[PrepareCall(run.run_id, request)])

    def on_prepared(self, run_id: int, response: object, known: Mapping[Uuid, str]) -> SessionStep:
        """Prepare answered: end on an error, else name the topics or run the assignor."""
        run = self._runs.get(run_id)
        if run is None:
            return SessionStep()
        assert isinstance(response, ConsumerGroupPrepareAssignmentResponse)
        if response.error_code:
            return self._end(run, ErrorCode.of(response.error_code), response.error_message)
        if response.assignor_name not in self._names:
            text = f"the coordinator asked for assignor {response.assignor_name!r}, not configured here"
            return self._end(run, ErrorCode.INVALID_REQUEST, text)
        self.selected = response.assignor_name
        run.response = response
        missing = unknown_topic_ids(response, known)
        if missing:
            return SessionStep(to_any=[MetadataCall(None, tuple(missing), ForAssignment(run_id))])
        return self.on_names(run_id, known)

    def on_names(self, run_id: int, known: Mapping[Uuid, str]) -> SessionStep:
        """The names are as known as they will be: run the assignor."""
        run = self._runs.get(run_id)
        if run is None or run.response is None:
            return SessionStep()
        try:
            run.prepared = build_spec(self._group_id, run.response, known)
        except Exception as exc:  # a response the spec cannot be built from: report it, do not hang
            log.exception("group %s: the client-side assignment failed", self._group_id)
            return self._end(run, ErrorCode.UNKNOWN_SERVER_ERROR, f"{type(exc).__name__}: {exc}")
        return SessionStep(effects=[RunAssignor(run_id, run.response.assignor_name, run.prepared.spec)])

    def on_assigned(self, run_id: int, result: object, error: BaseException | None) -> SessionStep:
        """The assignor returned (or raised): install its result, or the previous target."""
        run = self._runs.get(run_id)
        if run is None or run.prepared is None:
            return SessionStep()
        prepared = run.prepared
        name = prepared.spec.assignor_name
        failure: AssignorFailedError | None = None
        members: list[InstalledMember] | None
        if error is None:
            try:
                code, members = install_members(prepared, result)
            except AssignorFailedError as exc:
                failure = AssignorFailedError(f"assignor {name!r}: {exc}")
                failure.__cause__ = exc.__cause__
        else:
            log.error("group %s: assignor %r raised %r", self._group_id, name, error)
            failure = AssignorFailedError(f"assignor {name!r} raised {type(error).__name__}: {error}")
            failure.__cause__ = error
        report = None
        if failure is not None:
            report = ReportError(failure, fatal=False)
            code, members = int(AssignorError.ASSIGNMENT_ERROR), previous_target(prepared)
            if members is None:
                # Reported; nothing valid to install: the coordinator will ask again.
                return self._end(run, ErrorCode.NONE, None, report)
        assert members is not None
        install = ConsumerGroupInstallAssignmentRequest(
            group_id=self._group_id,
            member_id=self._member_id,
            member_epoch=run.epoch,
            group_epoch=prepared.response.group_epoch,
            error=code,
            members=members,
        )
        return SessionStep(
            to_coordinator=[InstallCall(run_id, install)], effects=[] if report is None else [report]
        )

    def on_installed(self, run_id: int, response: object) -> SessionStep:
        """Install answered: the computation ends with its outcome."""
        run = self._runs.get(run_id)
        if run is None or run.prepared is None:
            return SessionStep()
        assert isinstance(response, ConsumerGroupInstallAssignmentResponse)
        code = ErrorCode.of(response.error_code)
        message = name_topic_ids(response.error_message, run.prepared.names)
        if code is ErrorCode.NONE:
            log.info(
                "group %s: installed the %s assignment of epoch %d",
                self._group_id,
                run.prepared.spec.assignor_name,
                run.prepared.response.group_epoch,
            )
        else:
            log.warning("group %s: InstallAssignment failed with %s: %s", self._group_id, code.name, message)
        return self._end(run, code, message)

    def on_failed(self, run_id: int, code: ErrorCode, message: str | None) -> SessionStep:
        """A request of the computation got no answer: it ends with that code."""
        run = self._runs.get(run_id)
        return SessionStep() if run is None else self._end(run, code, message)

    def _end(
        self, run: _Run, code: ErrorCode, message: str | None, report: ReportError | None = None
    ) -> SessionStep:
        del self._runs[run.run_id]
        return SessionStep(
            events=[ClientAssignmentResult(run.epoch, code, message)],
            effects=[] if report is None else [report],
        )
