"""The core bugs the simulation found, brought back by monkeypatching (test only): each function
undoes one fix, so the regression test can check that its seed still catches the bug. The
checker's own mistakes (`CHECKER_REVERTS`) are undone the same way by `test_checker.py`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from kconsumer.broker.coordinator import coordinator as coordinator_module
from kconsumer.broker.coordinator import progress as coordinator_progress
from kconsumer.broker.coordinator.membership import remove_member
from kconsumer.client.member import classic_routes
from kconsumer.client.member import core as core_module
from kconsumer.client.member import session as session_module
from kconsumer.client.member.classic_exchange import ClassicExchange
from kconsumer.client.member.commits import CommitManager, CommitOutput
from kconsumer.client.member.core import MemberCore
from kconsumer.client.member.events import OffsetFetchResult, RequestFailed
from kconsumer.client.member.model import TopicIdPartition
from kconsumer.client.member.offset_requests import TOPIC_GONE
from kconsumer.client.member.reconciler import Reconciler, Release
from kconsumer.client.member.state import HEARTBEATING
from kconsumer.errors import ErrorCode
from kconsumer.testing.sim.invariants import Checker

Revert = Callable[[pytest.MonkeyPatch], None]


def heartbeat_reports_only_owned(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: heartbeats reported the owned partitions only, not the target or an assign step's."""
    monkeypatch.setattr(Reconciler, "reported", property(lambda self: self.owned))


def heartbeats_after_fenced_while_leaving(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: a member fenced while preparing to leave kept heartbeating."""
    monkeypatch.setattr(MemberCore, "_heartbeating", lambda self: self._state in HEARTBEATING)


def leave_ignores_running_revoke_callback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: a leave did not wait for an interrupted revocation's on_partitions_revoked."""
    original = Reconciler.release

    def release(self: Reconciler, *, lost: bool) -> Release:
        return dataclasses.replace(original(self, lost=lost), revoking_callback=False)

    monkeypatch.setattr(Reconciler, "release", release)


def leave_heartbeats_forget_told_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: heartbeats while preparing to leave did not report partitions still to be revoked."""

    def reported(reported: frozenset[TopicIdPartition], leave: Any) -> frozenset[TopicIdPartition]:
        return frozenset(reported)

    monkeypatch.setattr(core_module, "reported_partitions", reported)


def static_replacement_drops_regexes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: replacing a static member dropped the regexes only the old member used."""

    def remove(ctx: Any, group: Any, member_id: str, **kwargs: Any) -> None:
        kwargs["drop_regexes"] = True
        remove_member(ctx, group, member_id, **kwargs)

    monkeypatch.setattr(coordinator_progress, "remove_member", remove)


def auto_commit_includes_revoking(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: commits of the current positions included partitions of a revoke step."""
    monkeypatch.setattr(Reconciler, "revoking", property(lambda self: frozenset()))


def in_flight_commit_retried_after_loss(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: a commit in flight when the member lost its partitions was retried after it had
    rejoined (and got them back), with the old offsets."""
    original = CommitManager.on_ownership_lost

    def on_ownership_lost(self: CommitManager, member: Any) -> CommitOutput:
        in_flight = [op for op in self._commits.values() if not op.lost]
        output = original(self, member)
        for op in in_flight:
            op.lost = False
        return output

    monkeypatch.setattr(CommitManager, "on_ownership_lost", on_ownership_lost)


#: Each fix undone, with the violation kinds its bug caused.
def lost_coordinator_strands_queued_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the fix, a call queued for the coordinator (a classic member's LeaveGroup) while the
    connection to it failed waited for a coordinator nobody looked up any more."""

    def on_request_failed(self: Any, event: Any) -> None:
        answered = self._dispatch.answered(event.request_id)
        if answered is None:
            return
        node, call = answered
        self._dispatch.connection_lost(node)
        if call.to_coordinator and node == self._coordinator:
            self._forget_coordinator()
        self._failed(node, call, event.error, event.message)

    monkeypatch.setitem(session_module._HANDLERS, RequestFailed, on_request_failed)
    # The lookup started for waiting calls when the core asks for one (the fix of the next bug)
    # also covers this case: undo it too, as it was then.
    monkeypatch.setitem(session_module._EXECUTE, session_module.FindCoordinator, _forget_only)


def _forget_only(self: Any, effect: Any) -> None:
    self._forget_coordinator()


def late_answer_forgets_the_new_coordinator(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the fix (issue seed 2105828), any NOT_COORDINATOR answer forgot the coordinator,
    even a late one from a coordinator already replaced, and a lookup asked for by the core
    started none for the calls waiting: a leaving member could wait for good."""

    def coordinator_answered(self: Any, node: Any, code: ErrorCode) -> None:
        if code in session_module.COORDINATOR_MOVED:
            self._forget_coordinator()

    monkeypatch.setattr(session_module.MemberSession, "_coordinator_answered", coordinator_answered)
    monkeypatch.setitem(session_module._EXECUTE, session_module.FindCoordinator, _forget_only)


def offset_fetch_retries_deleted_topics(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the fix, an offset fetch answered UNKNOWN_TOPIC_ID (its topic deleted meanwhile)
    was retried like any retriable error, for good: the reconciliation waiting for it, and every
    assignment after it, never finished (the member stayed RECONCILING)."""
    original = CommitManager.on_fetch_result

    def on_fetch_result(
        self: CommitManager, result: OffsetFetchResult, now_ms: int, member: Any
    ) -> CommitOutput:
        if result.error in TOPIC_GONE:  # any other retriable, non-coordinator error: retried
            result = dataclasses.replace(result, error=ErrorCode.UNSTABLE_OFFSET_COMMIT, gone=())
        return original(self, result, now_ms, member)

    monkeypatch.setattr(CommitManager, "on_fetch_result", on_fetch_result)


def classic_sync_resolves_names_with_failed_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the fix, when the Metadata resolving a SyncGroup's topic names failed, the member
    took the ids it knew, stale after a topic was created again, and fetched offsets by an id
    the coordinator no longer knew, for good. Since `offset_fetch_retries_deleted_topics` such a
    fetch also finishes (the partition is left unfetched until a metadata refresh makes the
    member rejoin), so no seed of 4467-5499 showed this bug alone: its seed undoes both fixes."""
    offset_fetch_retries_deleted_topics(monkeypatch)
    original = classic_routes.metadata_learnt

    def metadata_learnt(purpose: Any, cluster: Any, runs: Any, failed: bool = False) -> Any:
        return original(purpose, cluster, runs, False)

    monkeypatch.setattr(classic_routes, "metadata_learnt", metadata_learnt)


def classic_join_learns_no_topic_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the fix, a classic member checked its assignment's names only against the topic
    ids it happened to know when it joined: a subscribed topic it had no id for (created shortly
    before) was taken by whatever id it had after the SyncGroup answer, the new topic's if it was
    deleted and created again in between."""
    original = ClassicExchange.learn_metadata

    def learn_metadata(self: ClassicExchange, names: Any, partition_counts: Any) -> None:
        at_join = dict(self._ids_at_join)
        original(self, names, partition_counts)
        self._ids_at_join = at_join

    monkeypatch.setattr(ClassicExchange, "learn_metadata", learn_metadata)


def offset_fetch_ignores_commits_under_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the fix, the committed offsets of (re)assigned partitions were fetched while a commit
    of them was still being retried: it landed afterwards, and the member committed the older
    fetched position over it."""
    monkeypatch.setattr(CommitManager, "_committing", lambda self, partitions: False)


def cooperative_join_keeps_unsubscribed_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the fix, a cooperative classic member whose last assignment said what it keeps
    joined again after a subscription change still owning partitions of a topic it had left,
    which the leader then gave to another member at once."""

    def may_keep(self: ClassicExchange, owned: Any, subscription: Any) -> Any:
        if self._keep is None:
            return frozenset(tp.key for tp in owned if tp.topic in subscription.topics)
        return self._keep

    monkeypatch.setattr(ClassicExchange, "_may_keep", may_keep)


def classic_member_takes_recreated_topics(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the fix, a classic member took a SyncGroup assignment's topic by its name as it was
    when the answer came, the partitions of a topic created again under that name since the
    member joined included: partitions nobody had given it."""
    monkeypatch.setattr(ClassicExchange, "_recreated_since_join", lambda self, target: set())


def classic_member_takes_unsubscribed_topics(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the fix, a classic member took whatever its SyncGroup answer gave it: a static
    member back with another subscription got its stored assignment (no rebalance, Kafka's rule)
    and held topics it no longer subscribed to while those it did went to nobody."""
    monkeypatch.setattr(ClassicExchange, "_unsubscribed", lambda self, target: set())


def classic_leader_watches_only_its_own_topics(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: a classic leader re-read only its own topics' metadata and compared them with what
    it saw after its SyncGroup, so a topic another member subscribes to that grew while the group
    synced kept partitions nobody was assigned."""
    monkeypatch.setattr(ClassicExchange, "_led_topics", lambda self: set())


def regex_matching_nothing_strands_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before (as Apache Kafka 4.4): a regex resolving to nothing bumped no epoch, even when a
    member that had switched to it still had a target: its partitions stayed owned by nobody."""
    monkeypatch.setattr(coordinator_module, "strands_a_target", lambda group, regex: False)


REVERTS: dict[str, tuple[Revert, frozenset[str]]] = {
    "late_answer_forgets_the_new_coordinator": (
        late_answer_forgets_the_new_coordinator,
        frozenset({"liveness"}),
    ),
    "heartbeat_reports_only_owned": (
        heartbeat_reports_only_owned,
        frozenset(
            {"hold-not-owner", "fetch-not-owner", "double-hold", "double-fetch", "commit-by-non-owner"}
        ),
    ),
    "heartbeats_after_fenced_while_leaving": (
        heartbeats_after_fenced_while_leaving,
        frozenset({"fatal-error", "closed-holding"}),
    ),
    "leave_ignores_running_revoke_callback": (
        leave_ignores_running_revoke_callback,
        frozenset({"released-while-holding", "hold-not-owner", "double-hold"}),
    ),
    "leave_heartbeats_forget_told_partitions": (
        leave_heartbeats_forget_told_partitions,
        frozenset({"hold-not-owner", "double-hold"}),
    ),
    "static_replacement_drops_regexes": (static_replacement_drops_regexes, frozenset({"liveness"})),
    "regex_matching_nothing_strands_partitions": (
        regex_matching_nothing_strands_partitions,
        frozenset({"liveness"}),
    ),
    "auto_commit_includes_revoking": (
        auto_commit_includes_revoking,
        frozenset({"commit-by-non-owner", "commit-regressed"}),
    ),
    "in_flight_commit_retried_after_loss": (
        in_flight_commit_retried_after_loss,
        frozenset({"commit-regressed", "commit-by-non-owner"}),
    ),
    "lost_coordinator_strands_queued_calls": (lost_coordinator_strands_queued_calls, frozenset({"liveness"})),
    "offset_fetch_ignores_commits_under_way": (
        offset_fetch_ignores_commits_under_way,
        frozenset({"commit-regressed"}),
    ),
    "classic_sync_resolves_names_with_failed_metadata": (
        classic_sync_resolves_names_with_failed_metadata,
        frozenset({"liveness"}),
    ),
    "classic_member_takes_recreated_topics": (
        classic_member_takes_recreated_topics,
        frozenset({"hold-not-owner", "fetch-not-owner", "double-hold", "double-fetch"}),
    ),
    "classic_member_takes_unsubscribed_topics": (
        classic_member_takes_unsubscribed_topics,
        frozenset({"liveness"}),
    ),
    "cooperative_join_keeps_unsubscribed_partitions": (
        cooperative_join_keeps_unsubscribed_partitions,
        frozenset({"double-hold", "double-fetch"}),
    ),
    "offset_fetch_retries_deleted_topics": (offset_fetch_retries_deleted_topics, frozenset({"liveness"})),
    "classic_leader_watches_only_its_own_topics": (
        classic_leader_watches_only_its_own_topics,
        frozenset({"liveness"}),
    ),
    "classic_join_learns_no_topic_ids": (
        classic_join_learns_no_topic_ids,
        frozenset({"hold-not-owner", "fetch-not-owner", "double-hold", "double-fetch"}),
    ),
}


def checker_counts_only_members_gone_as_zombies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the fix, the checker counted as zombies only members the group no longer had; a
    static classic member the generation went on without (Kafka keeps it in the group) is one
    too, until it hears ILLEGAL_GENERATION."""
    monkeypatch.setattr(Checker, "_zombie", lambda self, proc: proc.group_member_id not in self.members)


def checker_compares_client_epochs_with_stored_generations(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the fix, the checker compared a member's epoch with the stored generations only;
    a generation a JoinGroup handed out is never stored when its SyncGroup fails, yet the
    member heartbeats with it."""
    stored_only = property(lambda self: self.max_group_epoch, lambda self, value: None)
    monkeypatch.setattr(Checker, "max_epoch_handed_out", stored_only, raising=False)


#: The checker's mistakes, each undone with the first violation kind it then reports on a seed
#: of `tests/sim/test_checker.py` (mixed), where the reports were wrong.
CHECKER_REVERTS: dict[str, tuple[Revert, frozenset[str]]] = {
    "checker_counts_only_members_gone_as_zombies": (
        checker_counts_only_members_gone_as_zombies,
        frozenset({"double-hold"}),
    ),
    "checker_compares_client_epochs_with_stored_generations": (
        checker_compares_client_epochs_with_stored_generations,
        frozenset({"client-epoch"}),
    ),
}
