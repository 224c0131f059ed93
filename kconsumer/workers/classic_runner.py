"""`ClassicWorkerRunner`: drives a `ClassicWorkerCore` (``group.protocol=classic``) as
`runner.WorkerRunner` drives the new protocol's core: it sends the classic requests, feeds the
answers back, leads a generation when chosen (`classic_leader.lead`) and asks for the rebalances
an assignment calls for."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import partial

from ..assignment.connect_protocol import PROTOCOL_VERSIONS, work_offset
from ..assignment.work_units import WorkUnits
from ..client.runtime.connection import TransportError
from ..errors import ErrorCode
from ..groups.admin import GroupAdmin, GroupAdminError
from ..protocol.messages.classic_group import JoinGroupRequest
from .assignors import WorkerAssignor
from .classic_core import CheckWork, ClassicWorkerCore, ClassicWorkerSettings, Lead, RejoinLater, SendClassic
from .classic_leader import LeaderMemory, lead
from .computation import REASON_DELAY_ENDED
from .config import WorkerConfig
from .core import RunCallback
from .runner import WorkerRunner

logger = logging.getLogger("kconsumer.workers")


def classic_runner(
    config: WorkerConfig,
    admin: GroupAdmin,
    assignors: list[WorkerAssignor],
    work: Callable[[], WorkUnits],
    deliver: Callable[[RunCallback], None],
) -> ClassicWorkerRunner:
    """The runner of a classic worker configured by `config`. The group's assignor is the
    first of `assignors` (classic workers do not negotiate one: every worker should list the
    same first)."""
    core = ClassicWorkerCore(
        ClassicWorkerSettings(
            group_id=config.group_id,
            instance_id=config.instance_id,
            session_timeout_ms=config.session_timeout_ms,
            rebalance_timeout_ms=config.rebalance_timeout_ms,
            heartbeat_interval_ms=config.heartbeat_interval_ms,
            lease_ms=config.lease_ms,
            url=config.client_id,
            config_offset=partial(_offset, work),
            retry_backoff_ms=config.retry_backoff_ms,
            retry_backoff_max_ms=config.retry_backoff_max_ms,
        )
    )
    return ClassicWorkerRunner(core, admin, assignors, work, deliver)


class ClassicWorkerRunner(WorkerRunner[ClassicWorkerCore]):
    """One classic worker's I/O (see the module docstring)."""

    _memory = LeaderMemory()

    def _apply_protocol(self, effect: object) -> None:
        if isinstance(effect, SendClassic):
            self._spawn(self._send(effect))
        elif isinstance(effect, Lead):
            self._lead(effect)
        elif isinstance(effect, RejoinLater):
            self._rejoin_later(effect)
        elif isinstance(effect, CheckWork):
            self._check_work()

    async def _send(self, effect: SendClassic) -> None:
        sent = self.now_ms()
        request = effect.request
        # A JoinGroup may wait a rebalance timeout for its answer (the classic join phase).
        settings = self.core.settings
        waits = isinstance(request, JoinGroupRequest)
        timeout_s = (settings.rebalance_timeout_ms + 5_000) / 1000 if waits else None
        try:
            response = await self.admin.send_to_coordinator(
                settings.group_id, request.API_KEY, lambda _v: request, timeout_s
            )
        except (TransportError, GroupAdminError) as exc:
            logger.info("%s failed: %s", type(request).__name__, exc)
            self._enqueue(self.core.failed)
            return
        if ErrorCode.of(getattr(response, "error_code", 0)) in (
            ErrorCode.NOT_COORDINATOR,
            ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ):
            self.admin.forget_coordinator(self.core.settings.group_id)
        self._enqueue(lambda now: self.core.answered(response, sent, now))

    def _lead(self, effect: Lead) -> None:
        """Assign the generation (an assignor or metadata failure assigns nothing: every member
        rejoins after a backoff)."""
        core = self.core
        assignor = next(iter(self.assignors.values()))
        version = PROTOCOL_VERSIONS.get(core.protocol_name or "", 1)
        try:
            led = lead(
                assignor,
                core.member_id,
                effect.generation,
                effect.members,
                self.work(),
                self._memory,
                int(time.time() * 1000),
                max(version, 1),
            )
        except Exception:
            logger.exception(
                "leading generation %d failed; the group will rebalance again", effect.generation
            )
            self._enqueue(partial(core.led, {}))
            return
        self._memory = led.memory
        self._enqueue(partial(core.led, led.assignments))

    def _rejoin_later(self, effect: RejoinLater) -> None:
        assert self.loop is not None
        ask = partial(self.core.request_rebalance, REASON_DELAY_ENDED)
        self.loop.call_later(effect.delay_ms / 1000, self._enqueue, ask)


def _offset(work: Callable[[], WorkUnits]) -> int:
    try:
        return work_offset(work())
    except Exception:
        logger.exception("the declared work could not be read")
        return -1
