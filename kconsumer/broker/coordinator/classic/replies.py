"""JoinGroup and SyncGroup answers that wait: a classic member's JoinGroup is answered when the
join phase ends, a follower's SyncGroup when the leader sends the assignment.

The sans-IO coordinator hands the server a `Deferred` ticket instead of a response; whatever
answers it later (another member's request, a timer) puts the response in `ready`, which the
server drains after every call into the coordinator (`GroupCoordinator.take_replies`). Tickets
are soft state, like Kafka's response futures: a coordinator taking over starts with none, and
the old one's are answered NOT_COORDINATOR.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ....errors import ErrorCode
from ....protocol.messages.classic_group import JoinGroupResponse, SyncGroupResponse
from ....protocol.schema import Message

#: Member ids handed out with MEMBER_ID_REQUIRED remembered at most.
ISSUED_IDS_KEPT = 10_000


@dataclass(frozen=True)
class Deferred:
    """A response that will come later, under `ticket`."""

    ticket: int


class PendingReplies:
    """The waiting JoinGroup and SyncGroup requests of every classic member, by (group, member)."""

    def __init__(self) -> None:
        self._next_ticket = 1
        self._joins: dict[tuple[str, str], int] = {}
        self._syncs: dict[tuple[str, str], int] = {}
        #: Answers ready to be sent: (ticket, response).
        self.ready: list[tuple[int, Message]] = []
        #: (group, member id) handed out with MEMBER_ID_REQUIRED by a consumer group and not
        #: used yet, oldest first (soft state, like Kafka's pending members: lost on failover).
        self._issued: dict[tuple[str, str], None] = {}

    def issue(self, group_id: str, member_id: str) -> None:
        """Remember an id handed out with MEMBER_ID_REQUIRED (the oldest are forgotten beyond
        `ISSUED_IDS_KEPT`: a client that never came back)."""
        self._issued[(group_id, member_id)] = None
        while len(self._issued) > ISSUED_IDS_KEPT:
            del self._issued[next(iter(self._issued))]

    def claim(self, group_id: str, member_id: str) -> bool:
        """Whether the id was handed out and not used yet (it is used now)."""
        return self._issued.pop((group_id, member_id), False) is None

    def wait_join(self, group_id: str, member_id: str) -> Deferred:
        """The member's JoinGroup waits; a JoinGroup it still had waiting is told to rejoin."""
        return self._wait(self._joins, group_id, member_id, JoinGroupResponse)

    def wait_sync(self, group_id: str, member_id: str) -> Deferred:
        """The member's SyncGroup waits for the leader's assignment."""
        return self._wait(self._syncs, group_id, member_id, SyncGroupResponse)

    def is_awaiting_sync(self, group_id: str, member_id: str) -> bool:
        return (group_id, member_id) in self._syncs

    def answer_join(self, group_id: str, member_id: str, response: JoinGroupResponse) -> bool:
        """Answer the member's waiting JoinGroup, if it has one."""
        return self._answer(self._joins, group_id, member_id, response)

    def answer_sync(self, group_id: str, member_id: str, response: SyncGroupResponse) -> bool:
        """Answer the member's waiting SyncGroup, if it has one."""
        return self._answer(self._syncs, group_id, member_id, response)

    def take(self) -> list[tuple[int, Message]]:
        """The answers ready since the last call."""
        ready, self.ready = self.ready, []
        return ready

    def abandon(self) -> list[tuple[int, Message]]:
        """Answer every waiting request NOT_COORDINATOR (this coordinator is being replaced)."""
        for table, build in ((self._joins, JoinGroupResponse), (self._syncs, SyncGroupResponse)):
            for ticket in table.values():
                self.ready.append((ticket, build(error_code=ErrorCode.NOT_COORDINATOR)))
            table.clear()
        return self.take()

    def _wait(
        self,
        table: dict[tuple[str, str], int],
        group_id: str,
        member_id: str,
        build: Callable[..., Message],
    ) -> Deferred:
        previous = table.get((group_id, member_id))
        if previous is not None:
            self.ready.append((previous, build(error_code=ErrorCode.REBALANCE_IN_PROGRESS)))
        ticket = self._next_ticket
        self._next_ticket += 1
        table[(group_id, member_id)] = ticket
        return Deferred(ticket)

    def _answer(
        self, table: dict[tuple[str, str], int], group_id: str, member_id: str, response: Message
    ) -> bool:
        ticket = table.pop((group_id, member_id), None)
        if ticket is None:
            return False
        self.ready.append((ticket, response))
        return True
