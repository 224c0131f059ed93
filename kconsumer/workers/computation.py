"""The chosen worker's computation, as pure functions: the prepared group as the assignor sees it,
the assignor's run, and the install request built from its result. The runner and the worker
simulation both use these (the network around them is theirs)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from ..assignment.work_units import WorkUnits
from ..protocol.messages.worker_group import (
    ConnectGroupInstallAssignmentRequest,
    ConnectGroupPrepareAssignmentResponse,
    InstalledWorker,
)
from .assignors import Computed, GroupView, WorkerAssignor, WorkerView

logger = logging.getLogger("kconsumer.workers")


def group_view(prepared: ConnectGroupPrepareAssignmentResponse, wall_ms: int) -> GroupView:
    """The prepared group as the assignor sees it (`wall_ms`: the wall clock, for kept deadlines)."""
    return GroupView(
        group_epoch=prepared.group_epoch,
        workers=tuple(
            WorkerView(
                member_id=m.member_id,
                instance_id=m.instance_id,
                owned=WorkUnits.from_wire(m.owned),
                target=WorkUnits.from_wire(m.target),
                metadata_version=m.metadata_version,
                metadata=m.metadata_bytes,
                reason=m.reason,
                away=m.member_epoch < 0,
            )
            for m in prepared.members
        ),
        state=prepared.assignor_state,
        state_version=prepared.assignor_state_version,
        now_ms=wall_ms,
    )


def compute(
    assignors: Mapping[str, WorkerAssignor],
    prepared: ConnectGroupPrepareAssignmentResponse,
    work: Callable[[], WorkUnits],
    wall_ms: int,
) -> Computed | None:
    """The group's assignor's result for the declared `work`, or None when this worker lacks
    the assignor or it (or `work`) failed (logged; the coordinator chooses again when the
    deadline passes)."""
    assignor = assignors.get(prepared.assignor_name)
    if assignor is None:
        logger.error("the group chose assignor %r, which this worker lacks", prepared.assignor_name)
        return None
    try:
        return assignor.assign(group_view(prepared, wall_ms), work())
    except Exception:
        logger.exception("assigning with %s failed; the coordinator will choose again", assignor.name)
        return None


def install_request(
    group_id: str,
    member_id: str,
    member_epoch: int,
    prepared: ConnectGroupPrepareAssignmentResponse,
    computed: Computed,
) -> ConnectGroupInstallAssignmentRequest:
    """The install of `computed` (for workers the prepare listed; others are dropped)."""
    known = {m.member_id for m in prepared.members}
    return ConnectGroupInstallAssignmentRequest(
        group_id=group_id,
        member_id=member_id,
        member_epoch=member_epoch,
        group_epoch=prepared.group_epoch,
        error=computed.error,
        members=[
            InstalledWorker(
                member_id=worker,
                units=units.to_wire(),
                metadata_version=computed.metadata.get(worker, (0, b""))[0],
                metadata_bytes=computed.metadata.get(worker, (0, b""))[1],
            )
            for worker, units in sorted(computed.units.items())
            if worker in known
        ],
        assignor_state_version=computed.state_version,
        assignor_state=computed.state,
    )
