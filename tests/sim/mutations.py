"""Deliberately wrong behaviours of the real cores, switched on by monkeypatching (test only).

Each mutation is a function taking pytest's `monkeypatch`; the tests check that the simulation
reports the violation it must cause, with a seed that reproduces it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from kconsumer.broker.coordinator import coordinator as coordinator_module
from kconsumer.broker.coordinator import reconciliation, txn_offsets
from kconsumer.broker.coordinator.classic import in_consumer_group
from kconsumer.client.application.core import ApplicationCore
from kconsumer.client.member import MemberCore
from kconsumer.client.member.classic_exchange import ClassicExchange
from kconsumer.client.member.commits import CommitManager, CommitOutput, Membership, _Commit
from kconsumer.client.member.effects import CommitFinished
from kconsumer.client.member.grid import HeartbeatGrid
from kconsumer.client.member.model import CallbackKind, TopicIdPartition
from kconsumer.client.member.operations import CallbackNeed, CommitNeed, Need, StopNeed, Waiter
from kconsumer.testing.sim import runtime as sim_runtime

Mutation = Callable[[pytest.MonkeyPatch], None]


def coordinator_releases_before_ack(monkeypatch: pytest.MonkeyPatch) -> None:
    """The coordinator treats every revocation as acknowledged: partitions move at once."""
    monkeypatch.setattr(reconciliation, "_owns_any", lambda owned, partitions: False)


def _without_waiting(monkeypatch: pytest.MonkeyPatch, skipped: Callable[[Need], bool]) -> None:
    """The reconciliation performs the needs `skipped` selects but goes on without waiting."""
    original = MemberCore._satisfied

    def satisfied(self: MemberCore, need: Need, waiter: Waiter) -> bool:
        if waiter is Waiter.RECONCILIATION and skipped(need):
            self._perform(need)
            return True
        return original(self, need, waiter)

    monkeypatch.setattr(MemberCore, "_satisfied", satisfied)


def member_acks_before_revoke_callback(monkeypatch: pytest.MonkeyPatch) -> None:
    """The member emits on_partitions_revoked but does not wait for it before acknowledging."""
    _without_waiting(
        monkeypatch, lambda need: isinstance(need, CallbackNeed) and need.kind is CallbackKind.REVOKED
    )


def member_acks_before_fetching_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    """The member emits StopFetching for a revocation but does not wait for FetchingStopped."""
    _without_waiting(monkeypatch, lambda need: isinstance(need, StopNeed))


def member_commits_unowned_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    """The member's commits do not leave out partitions it no longer owns."""
    original = CommitManager._send

    def send(self: CommitManager, op: _Commit, member: Any, out: CommitOutput) -> None:
        wanted: frozenset[TopicIdPartition] = frozenset(
            member.owned if op.partitions is None else op.partitions
        )
        widened = type(member)(member.member_id, member.member_epoch, member.owned | wanted)
        original(self, op, widened, out)

    monkeypatch.setattr(CommitManager, "_send", send)


def member_acks_before_revocation_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The member sends a revocation's commit but acknowledges the revocation (its next heartbeat
    leaves the partitions out) without waiting for the commit's answer."""
    _without_waiting(monkeypatch, lambda need: isinstance(need, CommitNeed))


def retried_commit_keeps_its_first_epoch(monkeypatch: pytest.MonkeyPatch) -> None:
    """A commit sent again (after STALE_MEMBER_EPOCH or a retriable error) carries the member
    epoch of its first attempt."""
    original = CommitManager._send
    first_epochs: dict[int, int] = {}

    def send(self: CommitManager, op: _Commit, member: Membership, out: CommitOutput) -> None:
        epoch = first_epochs.setdefault(op.commit_id, member.member_epoch)
        original(self, op, replace(member, member_epoch=epoch), out)

    monkeypatch.setattr(CommitManager, "_send", send)


def coordinator_never_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """The coordinator's timers fence nobody (session and rebalance timeouts do nothing)."""
    monkeypatch.setattr(coordinator_module, "fence_member", lambda ctx, group, member_id: None)


#: Each mutation with the violation kinds it must produce (any of them).
def coordinator_syncs_classic_members_with_their_target(monkeypatch: pytest.MonkeyPatch) -> None:
    """A classic member inside a consumer group gets its whole target from SyncGroup, partitions
    their previous owners have not released yet included."""
    original = in_consumer_group.sync

    def sync(ctx: Any, group: Any, request: Any) -> Any:
        response = original(ctx, group, request)
        member = group.members.get(request.member_id)
        if response.error_code or member is None or member.metadata.classic is None:
            return response
        target = group.target_of(member.member_id).partitions
        encoded = in_consumer_group.encode_assignment(ctx.image, target, member.metadata.classic.metadata)
        return response.replace(assignment=encoded)

    monkeypatch.setattr(in_consumer_group, "sync", sync)


def classic_member_joins_without_releasing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A classic member rejoins while it still holds its partitions and reports owning none (a
    classic group's leader then gives them away while their holder, in the new generation, still
    fetches them)."""
    original = ClassicExchange.send

    def send(
        self: ClassicExchange,
        now_ms: int,
        member_id: str,
        epoch: int,
        subscription: Any,
        owned: Any,
        client_assignors: Any,
    ) -> Any:
        return original(self, now_ms, member_id, epoch, subscription, (), client_assignors)

    monkeypatch.setattr(ClassicExchange, "send", send)


def classic_pattern_ignores_new_topics(monkeypatch: pytest.MonkeyPatch) -> None:
    """A classic member with a ``^regex`` subscription matches it only against the topics of its
    first metadata: topics created after it subscribed are never subscribed to."""
    original = ClassicExchange.learn_metadata

    def learn_metadata(self: ClassicExchange, names: Any, partition_counts: Any) -> None:
        known = self._existing
        if self._pattern is not None and known is not None:
            partition_counts = {name: count for name, count in partition_counts.items() if name in known}
        original(self, names, partition_counts)

    monkeypatch.setattr(ClassicExchange, "learn_metadata", learn_metadata)


#: Mutations that need classic members: run with ``protocols="mixed"``.
MIXED_MUTATIONS: dict[str, tuple[Mutation, frozenset[str]]] = {
    "coordinator_syncs_classic_members_with_their_target": (
        coordinator_syncs_classic_members_with_their_target,
        frozenset({"double-fetch", "double-hold", "fetch-not-owner", "hold-not-owner"}),
    ),
    "classic_member_joins_without_releasing": (
        classic_member_joins_without_releasing,
        frozenset({"double-fetch", "double-hold", "fetch-not-owner", "hold-not-owner"}),
    ),
    "classic_pattern_ignores_new_topics": (classic_pattern_ignores_new_topics, frozenset({"liveness"})),
}


class _StickyOffsets(dict[Any, Any]):
    """Stored offsets that are never forgotten."""

    def pop(self, key: Any, default: Any = None) -> Any:
        return self.get(key, default)


def stored_offset_survives_reassignment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The application core keeps what ``store_offsets()`` stored for a partition when the
    partition goes and when it is assigned again: a later commit carries the offset of an
    earlier ownership."""
    original = ApplicationCore.__init__

    def init(self: ApplicationCore, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.state.stored = _StickyOffsets()

    monkeypatch.setattr(ApplicationCore, "__init__", init)


def every_commit_answer_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """The application core keeps the answer of every commit, asynchronous and automatic ones
    too, where only a waiting synchronous caller takes it away: memory grows with each commit."""
    original = ApplicationCore._commit_finished

    def finished(self: ApplicationCore, work: CommitFinished) -> None:
        original(self, work)
        if work.token is not None:
            self.state.commits[work.token] = work

    monkeypatch.setattr(ApplicationCore, "_commit_finished", finished)


def aligned_heartbeats_skip_a_tick(monkeypatch: pytest.MonkeyPatch) -> None:
    """A member on the group's ticks skips one: its regular heartbeats come an interval late."""
    original = HeartbeatGrid.tick_after

    def tick_after(self: HeartbeatGrid, t_ms: int, interval_ms: int) -> int:
        return original(self, t_ms, interval_ms) + interval_ms

    monkeypatch.setattr(HeartbeatGrid, "tick_after", tick_after)


MUTATIONS: dict[str, tuple[Mutation, frozenset[str]]] = {
    "coordinator_releases_before_ack": (
        coordinator_releases_before_ack,
        frozenset({"double-fetch", "double-hold", "fetch-not-owner", "hold-not-owner"}),
    ),
    "member_acks_before_revoke_callback": (
        member_acks_before_revoke_callback,
        frozenset({"released-while-holding", "double-hold", "hold-not-owner"}),
    ),
    "member_acks_before_fetching_stopped": (
        member_acks_before_fetching_stopped,
        frozenset({"released-while-fetching", "double-fetch", "fetch-not-owner"}),
    ),
    "member_commits_unowned_partitions": (
        member_commits_unowned_partitions,
        frozenset({"commit-by-non-owner", "commit-regressed"}),
    ),
    "coordinator_never_times_out": (coordinator_never_times_out, frozenset({"liveness"})),
    "member_acks_before_revocation_commit": (
        member_acks_before_revocation_commit,
        frozenset({"released-before-commit"}),
    ),
    "retried_commit_keeps_its_first_epoch": (
        retried_commit_keeps_its_first_epoch,
        frozenset({"commit-epoch"}),
    ),
    "stored_offset_survives_reassignment": (
        stored_offset_survives_reassignment,
        frozenset({"commit-regressed"}),
    ),
    "every_commit_answer_kept": (every_commit_answer_kept, frozenset({"commit-answer-kept"})),
    "aligned_heartbeats_skip_a_tick": (aligned_heartbeats_skip_a_tick, frozenset({"heartbeat-late"})),
}


def coordinator_accepts_any_transactional_offsets(monkeypatch: pytest.MonkeyPatch) -> None:
    """TxnOffsetCommit without KIP-447's member checks: any member id and epoch commit."""
    monkeypatch.setattr(txn_offsets, "_group_error", lambda ctx, request: 0)


def members_fetch_unstable_offsets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Members fetch committed offsets without ``require_stable``: a new owner starts below the
    offsets of a transaction still open, and reprocesses its records."""
    original = sim_runtime.MemberConfig

    def config(*args: Any, **kwargs: Any) -> Any:
        return original(*args, **{**kwargs, "require_stable": False})

    monkeypatch.setattr(sim_runtime, "MemberConfig", config)


#: Mutations of exactly-once pipelines (``protocols="transactional"``), each with a seed that
#: catches it and the violation kinds it must produce.
TRANSACTIONAL_MUTATIONS: dict[str, tuple[Mutation, int, frozenset[str]]] = {
    "coordinator_accepts_any_transactional_offsets": (
        coordinator_accepts_any_transactional_offsets,
        42,
        frozenset({"txn-offsets-by-non-owner", "exactly-once"}),
    ),
    "members_fetch_unstable_offsets": (
        members_fetch_unstable_offsets,
        26,
        frozenset({"commit-regressed", "exactly-once"}),
    ),
}
