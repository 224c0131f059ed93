"""Scripted consumer-protocol members for the wire-level scenarios: each heartbeats with its full
state (subscription, owned partitions) and keeps what the coordinator gave it, so a scenario can
drive a group to convergence on either server and observe the same things."""

from __future__ import annotations

import time
import uuid
from typing import Any

from script import Script

from kconsumer.protocol.messages.consumer_group import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from kconsumer.protocol.uuid import Uuid

REBALANCE_TIMEOUT_MS = 5000


class ScriptedMember:
    """One member: a client-chosen id (KIP-1082) labelled `label` on both servers."""

    def __init__(
        self,
        s: Script,
        group: str,
        label: str,
        *,
        topics: list[str] | None = None,
        regex: str | None = None,
        instance_id: str | None = None,
        assignor: str | None = None,
        rebalance_timeout_ms: int = REBALANCE_TIMEOUT_MS,
    ) -> None:
        self.s, self.group, self.label = s, group, label
        self.member_id = str(uuid.uuid4())
        s.name_member(self.member_id, f"<{label}>")
        self.regex, self.instance_id, self.assignor = regex, instance_id, assignor
        self.topics = topics
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.epoch = 0
        self.owned: dict[Uuid, list[int]] = {}
        #: Every epoch the coordinator gave it, in order, without repeats.
        self.epochs: list[int] = []

    def request(self, epoch: int | None = None, **overrides: Any) -> ConsumerGroupHeartbeatRequest:
        """A full heartbeat (every field, as after a join or an error)."""
        fields: dict[str, Any] = {
            "group_id": self.group,
            "member_id": self.member_id,
            "member_epoch": self.epoch if epoch is None else epoch,
            "instance_id": self.instance_id,
            "rebalance_timeout_ms": self.rebalance_timeout_ms,
            "subscribed_topic_names": None if self.topics is None else [self.s.t(t) for t in self.topics],
            "subscribed_topic_regex": self.regex,
            "server_assignor": self.assignor,
            "topic_partitions": [
                TopicPartitions(topic_id=t, partitions=sorted(p)) for t, p in self.owned.items()
            ],
        }
        fields.update(overrides)
        return ConsumerGroupHeartbeatRequest(**fields)

    def beat(
        self, label: str | None = None, *, epoch: int | None = None, **overrides: Any
    ) -> ConsumerGroupHeartbeatResponse:
        """Heartbeat (observed under `label` if given) and keep the epoch and assignment it gets."""
        request = self.request(epoch, **overrides)
        answer = self.s.send(request, group=self.group)
        assert isinstance(answer, ConsumerGroupHeartbeatResponse)
        if label is not None:
            self.s.observe(label, answer)
        if answer.error_code == 0:
            if answer.member_epoch >= 0:
                self.epoch = answer.member_epoch
                if not self.epochs or self.epochs[-1] != answer.member_epoch:
                    self.epochs.append(answer.member_epoch)
            if answer.assignment is not None:
                self.owned = {
                    tp.topic_id: list(tp.partitions)
                    for tp in answer.assignment.topic_partitions
                    if tp.partitions
                }
        return answer

    def join(self, label: str | None = None) -> ConsumerGroupHeartbeatResponse:
        self.epoch, self.owned = 0, {}
        return self.beat(label)

    def leave(self, label: str | None = None, static: bool = False) -> ConsumerGroupHeartbeatResponse:
        return self.beat(label, epoch=-2 if static else -1)

    def assignment(self) -> dict[str, list[int]]:
        """What it owns, by normalised topic."""
        return {
            self.s.plain(t): sorted(p)
            for t, p in sorted(self.owned.items(), key=lambda i: str(self.s.plain(i[0])))
        }


def describe(s: Script, group: str) -> ConsumerGroupDescribeResponse:
    answer = s.send(ConsumerGroupDescribeRequest(group_ids=[group]), group=group)
    assert isinstance(answer, ConsumerGroupDescribeResponse)
    return answer


def converged(s: Script, group: str, members: list[ScriptedMember]) -> bool:
    """Whether the group is Stable with every member at the assignment epoch holding its target."""
    (described,) = describe(s, group).groups
    if described.error_code or described.group_state != "Stable" or len(described.members) != len(members):
        return False
    for member in described.members:
        if member.member_epoch != described.assignment_epoch:
            return False
        if s.plain(member.assignment) != s.plain(member.target_assignment):
            return False
    return all(m.epoch == described.assignment_epoch for m in members)


def converge(s: Script, group: str, members: list[ScriptedMember], timeout: float = 30.0) -> None:
    """Heartbeat every member in turn until the group converged (see `converged`)."""
    deadline = time.monotonic() + timeout
    while True:
        for member in members:
            member.beat()
        if converged(s, group, members):
            return
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{s.backend}: group {group} did not converge: {s.plain(describe(s, group))}"
            )
        time.sleep(0.05)


def observe_group(s: Script, label: str, group: str, members: list[ScriptedMember]) -> None:
    """Observe the converged group: epochs, states, and each member's assignment and epochs."""
    (described,) = describe(s, group).groups
    s.observe(
        label,
        {
            "state": described.group_state,
            "group_epoch": described.group_epoch,
            "assignment_epoch": described.assignment_epoch,
            "members": {m.label: {"owned": m.assignment(), "epochs": m.epochs} for m in members},
        },
    )
