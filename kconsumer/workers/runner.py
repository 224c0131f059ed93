"""`WorkerRunner`: drives a `WorkerCore` over the network in one asyncio loop.

It sends the core's heartbeats, feeds their answers back, computes the group's assignment when
the coordinator chooses this worker (PrepareAssignment, the assignor, InstallAssignment), and
hands the application's callbacks to a `deliver` function: the sync `WorkerGroup` queues them
for the caller's thread, `AIOWorkerGroup` runs them on the loop. Both report back with
`callback_done`. Everything the core decides stays in the core.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Generic, Protocol, TypeVar

from ..assignment.work_units import WorkUnits
from ..client.runtime.connection import TransportError
from ..errors import ErrorCode, KConsumerError
from ..groups.admin import ApiUnsupportedError, GroupAdmin, GroupAdminError
from ..protocol.api import ApiKey
from ..protocol.messages.worker_group import (
    ConnectGroupHeartbeatResponse,
    ConnectGroupInstallAssignmentResponse,
    ConnectGroupPrepareAssignmentRequest,
    ConnectGroupPrepareAssignmentResponse,
)
from ..protocol.messages.worker_group import (
    WorkerAssignor as AnnouncedWorkerAssignor,
)
from .assignors import (
    WorkerAssignor,
)
from .computation import (
    REASON_WORK_CHANGED,
    compute,
    install_request,
    note_rebalances,
    still_due,
)
from .core import (
    AssignmentNote,
    ComputeAssignment,
    Failed,
    RunCallback,
    SendHeartbeat,
    WorkerCore,
    WorkerState,
)

logger = logging.getLogger("kconsumer.workers")


class WorkersUnsupportedError(KConsumerError):
    """The coordinator does not implement worker groups (only kconsumer's reference cluster does)."""


def announce(assignor: WorkerAssignor) -> AnnouncedWorkerAssignor:
    version, metadata = assignor.metadata()
    return AnnouncedWorkerAssignor(
        name=assignor.name,
        minimum_version=assignor.minimum_version,
        maximum_version=assignor.maximum_version,
        reason=0,
        metadata_version=version,
        metadata_bytes=metadata,
    )


class MembershipCore(Protocol):
    """What the runner's loop and the facades use of a worker's core (either protocol's)."""

    state: WorkerState
    owned: WorkUnits

    @property
    def member_id(self) -> str: ...

    def start(self, now_ms: int) -> Sequence[object]: ...
    def tick(self, now_ms: int) -> Sequence[object]: ...
    def next_deadline(self) -> int | None: ...
    def callback_done(self, now_ms: int) -> Sequence[object]: ...
    def request_rebalance(self, reason: int, now_ms: int) -> Sequence[object]: ...
    def close(self, now_ms: int) -> Sequence[object]: ...
    def fail(self, code: ErrorCode, message: str) -> Sequence[object]: ...
    def outdated(self, work: WorkUnits) -> bool: ...


CoreT = TypeVar("CoreT", bound=MembershipCore)


class WorkerRunner(Generic[CoreT]):
    """One worker's I/O loop (see the module docstring); each protocol's runner adds how it
    talks to the coordinator (`_apply_protocol`). Call `post` from any thread."""

    def __init__(
        self,
        core: CoreT,
        admin: GroupAdmin,
        assignors: list[WorkerAssignor],
        work: Callable[[], WorkUnits],
        deliver: Callable[[RunCallback], None],
    ) -> None:
        self.core = core
        self.admin = admin
        self.assignors = {a.name: a for a in assignors}
        self.work = work
        self.deliver = deliver
        self.loop: asyncio.AbstractEventLoop | None = None
        #: How often the declared work is read and compared with what the assignment was made
        #: for (a change nobody announced, or whose announcer died, is picked up).
        self.work_check_s = 10.0
        self._inbox: list[Callable[[int], Sequence[object]]] = []
        self._wake: asyncio.Event | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.failure: Failed | None = None

    @staticmethod
    def now_ms() -> int:
        return int(time.monotonic() * 1000)

    # -- from other threads (or the loop itself) ------------------------------------------------

    def post(self, event: Callable[[int], Sequence[object]]) -> None:
        """Feed an event (a core method taking `now_ms`) to the core on the loop's thread."""
        loop = self.loop
        if loop is None:
            raise RuntimeError("the worker is not running")
        if not loop.is_closed():  # a closed loop: the worker is gone, nothing listens any more
            loop.call_soon_threadsafe(self._enqueue, event)

    def _enqueue(self, event: Callable[[int], Sequence[object]]) -> None:
        self._inbox.append(event)
        if self._wake is not None:
            self._wake.set()

    # -- the loop -------------------------------------------------------------------------------

    async def run(self) -> None:
        """Join, run until the core is closed or failed, then release the connections."""
        self.loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._spawn(self._watch_work())
        try:
            self._apply(self.core.start(self.now_ms()))
            while self.core.state not in (WorkerState.CLOSED, WorkerState.FAILED):
                deadline = self.core.next_deadline()
                timeout = None if deadline is None else max(deadline - self.now_ms(), 0) / 1000
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout)
                self._wake.clear()
                inbox, self._inbox = self._inbox, []
                for event in inbox:
                    self._apply(event(self.now_ms()))
                self._apply(self.core.tick(self.now_ms()))
        finally:
            for task in list(self._tasks):
                task.cancel()
            await self.admin.__aexit__(None, None, None)

    def _apply(self, effects: Sequence[object]) -> None:
        for effect in effects:
            if isinstance(effect, RunCallback):
                self.deliver(effect)
            elif isinstance(effect, Failed):
                self.failure = effect
                logger.error("worker %s failed: %s", self.core.member_id, effect.message)
            else:
                self._apply_protocol(effect)

    def _apply_protocol(self, effect: object) -> None:
        """Carry out an effect of the protocol's own (requests, computations)."""
        raise NotImplementedError

    async def _watch_work(self) -> None:
        while True:
            await asyncio.sleep(self.work_check_s)
            if self.core.state is WorkerState.STABLE:
                self._check_work()

    def _check_work(self) -> None:
        """Ask for a rebalance when the assignment was made for other declared work."""
        try:
            declared = self.work()
        except Exception:
            logger.exception("the declared work could not be read")
            return
        if self.core.outdated(declared):
            self._enqueue(partial(self.core.request_rebalance, REASON_WORK_CHANGED))

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


class HeartbeatRunner(WorkerRunner[WorkerCore]):
    """The new protocol's runner: ConnectGroupHeartbeat, and the computation when chosen."""

    def _apply_protocol(self, effect: object) -> None:
        if isinstance(effect, SendHeartbeat):
            self._spawn(self._heartbeat(effect))
        elif isinstance(effect, ComputeAssignment):
            self._spawn(self._compute(effect.member_epoch))
        elif isinstance(effect, AssignmentNote):
            self._read_note(effect.metadata)

    async def _heartbeat(self, effect: SendHeartbeat) -> None:
        sent = self.now_ms()
        group_id = self.core.settings.group_id
        try:
            response = await self.admin.send_to_coordinator(
                group_id, ApiKey.CONNECT_GROUP_HEARTBEAT, lambda _v: effect.request
            )
        except ApiUnsupportedError as exc:
            self._unsupported(str(exc))
            return
        except (TransportError, GroupAdminError) as exc:
            logger.info("worker heartbeat failed: %s", exc)
            self._enqueue(self.core.failed)
            return
        assert isinstance(response, ConnectGroupHeartbeatResponse)
        if ErrorCode.of(response.error_code) in (
            ErrorCode.NOT_COORDINATOR,
            ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ):
            self.admin.forget_coordinator(group_id)
        self._enqueue(lambda now: self.core.answered(response, sent, now))

    def _unsupported(self, detail: str) -> None:
        message = (
            "the group coordinator does not implement worker groups (ConnectGroupHeartbeat, API key "
            f"32002): they are a kconsumer extension served by its reference cluster ({detail})"
        )
        self._enqueue(lambda _now: self.core.fail(ErrorCode.UNSUPPORTED_VERSION, message))

    async def _compute(self, member_epoch: int) -> None:
        """Prepare, assign with the group's assignor, install; then heartbeat at once."""
        settings = self.core.settings
        prepared = await self._ask(
            ConnectGroupPrepareAssignmentRequest(
                group_id=settings.group_id, member_id=settings.member_id, member_epoch=member_epoch
            )
        )
        if not isinstance(prepared, ConnectGroupPrepareAssignmentResponse) or prepared.error_code:
            return  # not chosen any more, or fenced: the coordinator chooses again
        computed = compute(self.assignors, prepared, self.work, int(time.time() * 1000))
        if computed is None:
            return
        install = install_request(settings.group_id, settings.member_id, member_epoch, prepared, computed)
        installed = await self._ask(install)
        if not isinstance(installed, ConnectGroupInstallAssignmentResponse):
            return
        if installed.error_code:
            logger.warning(
                "installing the assignment failed: %s %s",
                ErrorCode.of(installed.error_code).name,
                installed.error_message or "",
            )
            return
        self._enqueue(self.core.heartbeat_now)

    def _read_note(self, metadata: bytes) -> None:
        """Ask for the rebalances the assignment's note calls for, each at its time."""
        assert self.loop is not None
        member_id = self.core.member_id
        for reason, at_ms in note_rebalances(metadata, self.work, member_id):
            if at_ms is None:
                self._enqueue(partial(self.core.request_rebalance, reason))
                continue
            delay_s = max(at_ms - time.time() * 1000, 0) / 1000
            self.loop.call_later(delay_s, self._enqueue, partial(self._ask_if_due, reason, at_ms))

    def _ask_if_due(self, reason: int, at_ms: int, now_ms: int) -> Sequence[object]:
        if not still_due(self.core.assignment_metadata, at_ms, self.core.member_id):
            return []  # a newer assignment came since
        return self.core.request_rebalance(reason, now_ms)

    async def _ask(self, request: Any) -> Any:
        try:
            return await self.admin.send_to_coordinator(
                self.core.settings.group_id, request.API_KEY, lambda _v: request
            )
        except (TransportError, GroupAdminError) as exc:
            logger.info("%s failed: %s", type(request).__name__, exc)
            return None
