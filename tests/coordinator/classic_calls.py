"""Classic requests for coordinator tests: a mixin driving a `GroupCoordinator` with JoinGroup,
SyncGroup and Heartbeat, collecting the answers of requests that wait (Deferred tickets), and a
clock that fires each timer at its own deadline."""

from __future__ import annotations

from typing import Any

from kconsumer.broker.coordinator import GroupCoordinator
from kconsumer.broker.coordinator.classic.replies import Deferred
from kconsumer.protocol.messages.classic_group import (
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
)

GROUP = "g"
SESSION = 10_000
REBALANCE = 20_000


class ClassicCalls:
    """Needs `coordinator`, `now` and `answers` (a dict) on the class it is mixed into."""

    coordinator: GroupCoordinator
    now: int
    answers: dict[int, Any]

    def call(self, request: Any, version: int) -> Any:
        """The answer now, or the Deferred ticket of one that waits."""
        result = self.coordinator.handle(request, version, self.now, "client", "/127.0.0.1")
        self._collect()
        response = result.response
        if isinstance(response, Deferred):
            return self.answers.pop(response.ticket, response)
        return response

    def advance(self, ms: int) -> None:
        """Let `ms` pass, firing each timer at its own deadline."""
        target = self.now + ms
        while (deadline := self.coordinator.next_deadline()) is not None and deadline <= target:
            self.now = max(self.now, deadline)
            self.coordinator.poll(self.now)
            self._collect()
        self.now = target

    def answer(self, pending: Any) -> Any:
        """The answer a request got, now or since (None: it still waits)."""
        self._collect()
        if not isinstance(pending, Deferred):
            return pending
        return self.answers.pop(pending.ticket, None)

    def _collect(self) -> None:
        for ticket, response in self.coordinator.take_replies():
            self.answers[ticket] = response

    def join_group(
        self,
        member_id: str,
        protocols: tuple[tuple[str, bytes], ...],
        *,
        version: int = 9,
        instance_id: str | None = None,
        protocol_type: str = "consumer",
        session: int = SESSION,
    ) -> Any:
        request = JoinGroupRequest(
            group_id=GROUP,
            session_timeout_ms=session,
            rebalance_timeout_ms=REBALANCE,
            member_id=member_id,
            group_instance_id=instance_id,
            protocol_type=protocol_type,
            protocols=[JoinGroupRequestProtocol(name=n, metadata=m) for n, m in protocols],
        )
        return self.call(request, version)

    def sync_group(
        self, member_id: str, generation: int, assignments: dict[str, bytes] | None = None, **more: Any
    ) -> Any:
        request = SyncGroupRequest(
            group_id=GROUP,
            generation_id=generation,
            member_id=member_id,
            assignments=[
                SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in (assignments or {}).items()
            ],
            **more,
        )
        return self.call(request, 5)

    def classic_heartbeat(self, member_id: str, generation: int, instance_id: str | None = None) -> int:
        request = HeartbeatRequest(
            group_id=GROUP, generation_id=generation, member_id=member_id, group_instance_id=instance_id
        )
        return int(self.call(request, 4).error_code)
