"""`WorkerGroup`: a worker of a worker group, for threaded applications (docs/workers.md).

The worker's membership runs on a background thread (its own asyncio loop); the application's
callbacks run on the caller's thread, inside `poll`. A unit is started by ``on_assigned`` and
stopped by ``on_revoked`` (handed to another worker) or ``on_lost`` (membership lost: fenced,
or the lease ran out); the coordinator is told a unit was stopped only after the callback
returned, and no other worker is given it before.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

from ..client.runtime.inbox import Inbox
from .assignors import WorkerAssignor
from .core import RunCallback
from .facade import Callback, WorkerFacade, WorkerGroupError
from .factory import make_runner

logger = logging.getLogger("kconsumer.workers")


class WorkerGroup(WorkerFacade):
    """A worker: joins `group.id` at construction, runs callbacks in `poll`, leaves at `close`.

    `work` returns the units the group must run: a mapping of connector name to task count, or
    `WorkUnits`. The worker the coordinator chooses to assign calls it; every worker should
    return the same answer, and a worker whose declaration changed calls `request_rebalance`.
    `assignors` default to the incremental cooperative assignor (with
    ``scheduled.rebalance.max.delay.ms``) then round-robin.
    """

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
        self._callbacks: Inbox[RunCallback] = Inbox()
        self._runner = make_runner(config, work, assignors, self._callbacks.put)
        self._set_handlers(on_assigned, on_revoked, on_lost)
        self._started = threading.Event()
        self._runner_task: asyncio.Future[None] | None = None
        self._thread = threading.Thread(
            target=self._run, name=f"kconsumer-worker-{self.member_id[:8]}", daemon=True
        )
        self._thread.start()
        self._started.wait()

    def _run(self) -> None:
        async def main() -> None:
            self._runner_task = asyncio.ensure_future(self._runner.run())
            await asyncio.sleep(0)  # the runner has its loop now
            self._started.set()
            await self._runner_task

        try:
            asyncio.run(main())
        except asyncio.CancelledError:
            logger.info("worker %s stopped without leaving", self.member_id)
        finally:
            self._started.set()

    # -- what the application sees --------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return not self._thread.is_alive()

    def poll(self, timeout: float = 1.0) -> bool:
        """Run the next callback due (waiting up to `timeout` seconds); True if one ran.
        Raises WorkerGroupError once the worker failed and every callback queued before (an
        ``on_lost`` stopping its units) has run. A callback's exception propagates after the
        worker counts the callback as done (its units as started, or stopped)."""
        if self._callbacks.empty():
            self._raise_failure()  # a callback queued before the failure (on_lost) runs first
        try:
            work = self._callbacks.get(timeout=timeout) if timeout > 0 else self._callbacks.get_nowait()
        except queue.Empty:
            self._raise_failure()
            return False
        handler = self._handlers[work.kind]
        try:
            if handler is not None:
                handler(work.units)
        finally:
            self._runner.post(self._runner.core.callback_done)
        return True

    def close(self, timeout: float = 30.0) -> None:
        """Stop every unit (``on_revoked``, on this thread), leave the group and stop the
        background thread. Waits up to `timeout` seconds."""
        if self.closed:
            return
        self._runner.post(self._runner.core.close)
        deadline = time.monotonic() + timeout
        with contextlib.suppress(WorkerGroupError):  # a failed worker has nothing left to stop
            while self._thread.is_alive() and time.monotonic() < deadline:
                self.poll(0.05)
        if self._thread.is_alive():
            logger.warning("worker %s did not close within %.1f s", self.member_id, timeout)

    def __enter__(self) -> WorkerGroup:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
