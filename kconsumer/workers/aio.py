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

from .assignors import WorkerAssignor
from .core import RunCallback
from .facade import Callback, WorkerFacade
from .factory import make_runner

logger = logging.getLogger("kconsumer.workers")


class AIOWorkerGroup(WorkerFacade):
    """A worker on the running loop: ``async with AIOWorkerGroup(...) as worker:`` joins, and
    leaving the block stops every unit (``on_revoked``) and leaves. Arguments as `WorkerGroup`."""

    def __init__(
        self,
        config: Mapping[str, Any],
        *,
        work: Callable[[], Any],
        on_assigned: Callback | None = None,
        on_revoked: Callback | None = None,
        on_lost: Callback | None = None,
        assignors: list[WorkerAssignor] | None = None,
    ) -> None:
        self._runner = make_runner(config, work, assignors, self._deliver)
        self._set_handlers(on_assigned, on_revoked, on_lost)
        self._task: asyncio.Task[None] | None = None
        self._callback_tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Join the group (returns at once; callbacks follow on this loop)."""
        if self._task is None:
            self._task = asyncio.ensure_future(self._runner.run())
            await asyncio.sleep(0)

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

    async def __aenter__(self) -> AIOWorkerGroup:
        await self.start()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
