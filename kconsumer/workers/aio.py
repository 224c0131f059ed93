"""`AIOWorkerGroup`: a worker for asyncio applications, on the same core and runner as
`WorkerGroup`. Callbacks (plain functions or coroutines) run on the application's loop, one at
a time, and the coordinator hears a unit stopped only after its callback returned."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

from ..assignment.work_units import WorkUnits
from .assignors import WorkerAssignor
from .core import CallbackKind, RunCallback, WorkerState
from .group import WorkerGroupError
from .runner import REASON_REQUESTED, make_runner

logger = logging.getLogger("kconsumer.workers")

AsyncCallback = Callable[[WorkUnits], object]


class AIOWorkerGroup:
    """A worker on the running loop: ``async with AIOWorkerGroup(...) as worker:`` joins, and
    leaving the block stops every unit (``on_revoked``) and leaves. Arguments as `WorkerGroup`."""

    def __init__(
        self,
        config: Mapping[str, Any],
        *,
        work: Callable[[], Any],
        on_assigned: AsyncCallback | None = None,
        on_revoked: AsyncCallback | None = None,
        on_lost: AsyncCallback | None = None,
        assignors: list[WorkerAssignor] | None = None,
    ) -> None:
        self._runner = make_runner(config, work, assignors, self._deliver)
        self._handlers = {
            CallbackKind.ASSIGNED: on_assigned,
            CallbackKind.REVOKED: on_revoked,
            CallbackKind.LOST: on_lost or on_revoked,
        }
        self._task: asyncio.Task[None] | None = None
        self._callback_tasks: set[asyncio.Task[None]] = set()

    @property
    def member_id(self) -> str:
        return self._runner.core.settings.member_id

    @property
    def assignment(self) -> WorkUnits:
        """The units this worker runs now."""
        return self._runner.core.owned

    @property
    def state(self) -> str:
        return self._runner.core.state.value

    async def start(self) -> None:
        """Join the group (returns at once; callbacks follow on this loop)."""
        if self._task is None:
            self._task = asyncio.ensure_future(self._runner.run())
            await asyncio.sleep(0)

    def request_rebalance(self, reason: str = "requested") -> None:
        """Ask the group for a new assignment."""
        logger.info("worker %s asks for a rebalance: %s", self.member_id, reason)
        self._runner.post(lambda now: self._runner.core.request_rebalance(REASON_REQUESTED, now))

    async def close(self, timeout: float = 30.0) -> None:
        """Stop every unit, leave, and wait (up to `timeout` seconds) until the worker is done."""
        if self._task is None or self._task.done():
            return
        self._runner.post(self._runner.core.close)
        try:
            await asyncio.wait_for(asyncio.shield(self._task), timeout)
        except TimeoutError:
            logger.warning("worker %s did not close within %.1f s", self.member_id, timeout)
        self._raise_failure()

    def _deliver(self, work: RunCallback) -> None:
        task = asyncio.ensure_future(self._run_callback(work))
        self._callback_tasks.add(task)
        task.add_done_callback(self._callback_tasks.discard)

    async def _run_callback(self, work: RunCallback) -> None:
        handler = self._handlers[work.kind]
        try:
            if handler is not None:
                result = handler(work.units)
                if inspect.isawaitable(result):
                    await result
        except Exception:
            logger.exception("worker %s: %s failed", self.member_id, work.kind.value)
        finally:
            self._runner.post(self._runner.core.callback_done)

    def _raise_failure(self) -> None:
        failure = self._runner.failure
        if failure is not None and self._runner.core.state is WorkerState.FAILED:
            raise WorkerGroupError(f"worker {self.member_id} failed: {failure.error.name}: {failure.message}")

    async def __aenter__(self) -> AIOWorkerGroup:
        await self.start()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
