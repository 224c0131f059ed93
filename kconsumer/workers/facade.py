"""What `WorkerGroup` and `AIOWorkerGroup` share: their callbacks by kind, what the application
sees of the worker, asking for a rebalance, and the error once the worker failed."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, cast

from ..assignment.work_units import WorkUnits
from ..errors import KConsumerError
from .computation import REASON_REQUESTED
from .core import CallbackKind, WorkerState
from .runner import MembershipCore, WorkerRunner

logger = logging.getLogger("kconsumer.workers")

Callback = Callable[[WorkUnits], object]


class WorkerGroupError(KConsumerError):
    """The worker cannot go on (the message says why: an error from the coordinator, or a
    coordinator without worker groups)."""


class WorkerFacade:
    """The part of a worker's facade that does not depend on how it waits."""

    _runner: WorkerRunner[Any]
    _handlers: dict[CallbackKind, Callback | None]

    def _set_handlers(
        self, on_assigned: Callback | None, on_revoked: Callback | None, on_lost: Callback | None
    ) -> None:
        self._handlers = {
            CallbackKind.ASSIGNED: on_assigned,
            CallbackKind.REVOKED: on_revoked,
            CallbackKind.LOST: on_lost or on_revoked,
        }

    @property
    def _core(self) -> MembershipCore:
        return cast(MembershipCore, self._runner.core)

    @property
    def member_id(self) -> str:
        return self._core.member_id

    @property
    def assignment(self) -> WorkUnits:
        """The units this worker runs now (on_assigned returned, on_revoked / on_lost not yet)."""
        return self._core.owned

    @property
    def state(self) -> str:
        """``joining``, ``stable``, ``reconciling``, ``losing``, ``leaving``, ``closed`` or ``failed``."""
        return self._core.state.value

    def request_rebalance(self, reason: str = "requested") -> None:
        """Ask the group for a new assignment (say, the declared work changed)."""
        logger.info("worker %s asks for a rebalance: %s", self.member_id, reason)
        self._runner.post(lambda now: self._runner.core.request_rebalance(REASON_REQUESTED, now))

    def _raise_failure(self) -> None:
        failure = self._runner.failure
        if failure is not None and self._runner.core.state is WorkerState.FAILED:
            raise WorkerGroupError(f"worker {self.member_id} failed: {failure.error.name}: {failure.message}")
