"""Classic workers in the worker-group simulation: the shipped `ClassicWorkerCore` and the
shipped leader computation (`classic_leader.lead`) on the simulated network, so that seeds run
classic groups and their conversions to worker groups and back (``--protocols mixed``)."""

from __future__ import annotations

from typing import Any

from ...assignment.connect_protocol import (
    PROTOCOL_VERSIONS,
    decode_assignment,
    decode_worker_state,
    work_offset,
)
from ...errors import ProtocolError
from ...protocol.messages.classic_group import (
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupResponse,
)
from ...protocol.schema import Message
from ...workers.classic_core import (
    CheckWork,
    ClassicWorkerCore,
    ClassicWorkerSettings,
    Lead,
    RejoinLater,
    SendClassic,
)
from ...workers.classic_leader import LeaderMemory, lead
from ...workers.computation import REASON_DELAY_ENDED
from ...workers.core import WorkerSettings
from .world import SimWorker


class SimClassicWorker(SimWorker):
    """A worker process on Connect's classic protocol."""

    kind_classic = True
    memory = LeaderMemory()

    def make_core(self, settings: WorkerSettings) -> Any:
        params = self.world.params
        return ClassicWorkerCore(
            ClassicWorkerSettings(
                group_id=settings.group_id,
                instance_id=settings.instance_id,
                session_timeout_ms=params.session_ms,
                rebalance_timeout_ms=params.rebalance_ms,
                heartbeat_interval_ms=params.heartbeat_ms,
                lease_ms=params.lease_ms,
                url=self.label,
                config_offset=lambda: work_offset(self.world.declared()),
            )
        )

    def _carry_out(self, effect: object) -> None:
        if isinstance(effect, SendClassic):
            self.world.trace.log(self.world.sched.now, self.label, describe_request(effect.request))
            # A JoinGroup may wait a rebalance timeout for its answer (the join phase).
            waits = isinstance(effect.request, JoinGroupRequest)
            timeout = self.world.params.rebalance_ms + 5_000 if waits else None
            self.world.send(self, effect.request, self._classic_answered, timeout)
        elif isinstance(effect, Lead):
            self._lead(effect)
        elif isinstance(effect, RejoinLater):
            self._rejoin_later(effect)
        elif isinstance(effect, CheckWork):
            self.check_work()

    def _classic_answered(self, response: Message | None, sent_ms: int) -> None:
        now = self.world.sched.now
        self.world.trace.log(now, self.label, f"answer {_summary(response)}")
        self.feed(self.core.failed(now) if response is None else self.core.answered(response, sent_ms, now))

    def _lead(self, effect: Lead) -> None:
        core = self.core
        assignor = self.order[0]
        version = max(PROTOCOL_VERSIONS.get(core.protocol_name or "", 1), 1)
        try:
            led = lead(
                assignor,
                core.member_id,
                effect.generation,
                effect.members,
                self.world.declared(),
                self.memory,
                self.world.sched.now,
                version,
            )
        except ProtocolError as exc:
            self.world.failures.append((self, None, f"{self.label} could not lead: {exc}"))
            return
        self.memory = led.memory
        self.feed(core.led(led.assignments, self.world.sched.now))

    def _rejoin_later(self, effect: RejoinLater) -> None:
        self.world.sched.after(effect.delay_ms, self._ask_rebalance, REASON_DELAY_ENDED)


def _summary(response: Message | None) -> str:
    if response is None:
        return "none (timed out)"
    name = type(response).__name__.removesuffix("Response")
    code = getattr(response, "error_code", 0)
    detail = f" error {code}" if code else ""
    if isinstance(response, JoinGroupResponse) and not code:
        detail = f" gen {response.generation_id} leader={response.leader == response.member_id}"
    if isinstance(response, SyncGroupResponse) and not code and response.assignment:
        got = decode_assignment(response.assignment)
        detail = f" +{got.assigned} -{got.revoked} delay {got.delay_ms}"
    return name + detail


def describe_request(request: Message) -> str:
    """A classic request as the trace shows it."""
    name = type(request).__name__.removesuffix("Request")
    if isinstance(request, JoinGroupRequest):
        return f"{name}(runs={decode_worker_state(request.protocols[0].metadata).runs})"
    return f"{name}(gen {getattr(request, 'generation_id', '-')})"
