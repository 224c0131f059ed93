"""Seeds that caught real bugs in the cores: they must pass, and with the fix undone (a test-only
monkeypatch, `reverted_fixes.py`) they must still report the bug, so each stays a regression test
for as long as the simulation does not change under it (if it does, search new seeds with
``reverted_fixes`` and update this list). They were last searched again when the reference
coordinator started resolving new regexes after the heartbeat that brings them, as Apache Kafka
does (seeds of heartbeat_reports_only_owned, heartbeats_after_fenced_while_leaving,
static_replacement_drops_regexes and classic_member_takes_recreated_topics changed course), and
again when on_partitions_assigned started following every reconciliation that revoked, as Kafka's
consumers call it (`python tests/sim/search_seeds.py NAME` searches; seeds of
heartbeats_after_fenced_while_leaving, leave_ignores_running_revoke_callback and
auto_commit_includes_revoking changed course; leave_ignores_running_revoke_callback has one seed
in 0-3000), and again when the members' heartbeats moved onto their group's wall-clock ticks
(docs/heartbeat-alignment.md): every seed above changed course but static_replacement_drops_regexes,
classic_member_takes_unsubscribed_topics and one of heartbeat_reports_only_owned's.

The bugs were fixed in the commit "Member and coordinator fixes found by the deterministic
simulation"; docs/simulation.md lists them.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from reverted_fixes import REVERTS

from kconsumer.testing.sim import run_seed

#: Fix undone -> seeds that catch its bug.
REGRESSIONS: dict[str, list[int]] = {
    # Heartbeats reported only the owned partitions: granted ones were handed to another member
    # while this one was still assigning them.
    "heartbeat_reports_only_owned": [20],
    # Fenced while preparing to leave, the member kept heartbeating (epoch 0, owned partitions).
    "heartbeats_after_fenced_while_leaving": [7, 54],
    # A leave gave partitions up before an interrupted on_partitions_revoked returned.
    "leave_ignores_running_revoke_callback": [2782],
    # Heartbeats while preparing to leave forgot partitions the application still had to be told
    # it gave up.
    "leave_heartbeats_forget_told_partitions": [238],
    # Auto-commits included partitions of a revoke step, committed after the revocation's ack.
    "auto_commit_includes_revoking": [1373, 2064],
    # A static member replacement dropped the group's regexes: the new member subscribed to nothing.
    "static_replacement_drops_regexes": [13],
    # A member switched to a regex matching nothing while another member's regex kept the topic:
    # no epoch bump (as on Apache Kafka 4.4), so its target kept partitions nobody owned (found by
    # the random range 8796006-8797005; the fidelity scenario regex_changed_to_one_matching_nothing
    # shows Kafka 4.4 doing it, listed as an intended difference).
    "regex_matching_nothing_strands_partitions": [2313],
    # A commit in flight when the member was fenced was retried, with its old offsets, after the
    # member had rejoined and got the partitions back (found by the 20,000-seed sweep).
}

#: Fix undone -> seeds of mixed groups (``protocols="mixed"``: classic members too) that catch it.
MIXED_REGRESSIONS: dict[str, list[int]] = {
    # A classic member resolved its SyncGroup assignment's names with a Metadata request that
    # failed, kept a recreated topic's old id and fetched offsets by it forever (RECONCILING;
    # the seed needs offset_fetch_retries_deleted_topics undone too, see its revert; 215 until a
    # newcomer's heartbeat schedule changed its course, then 2237, the only one of 0-5999).
    "classic_sync_resolves_names_with_failed_metadata": [2237],
    # A classic eager member's user commit, retried across a coordinator failover, landed after
    # the rebalance that took its partitions and gave them back had fetched the older committed
    # offsets: the member then committed that older position over it.
    "offset_fetch_ignores_commits_under_way": [6028],
    # A classic member's offset fetch, begun before its topic was deleted (and created again),
    # was answered UNKNOWN_TOPIC_ID and retried for good: its reconciliation, and every
    # assignment after it, never finished (215 until a newcomer's heartbeat schedule changed its
    # course; none of 0-5999 since, 7432 the first of 6000-17999).
    "offset_fetch_retries_deleted_topics": [7432],
    # A classic member inside a consumer group took a SyncGroup's topic by name after the topic
    # had been deleted and created again: partitions of the new topic nobody had given it.
    "classic_member_takes_recreated_topics": [3845],
    # A static classic member restarted with another subscription got its stored assignment (the
    # group stays Stable, as on Kafka) and held a topic it no longer subscribed to; the topic it
    # did subscribe to went to nobody (found by the random range 1460000-1461499).
    "classic_member_takes_unsubscribed_topics": [1461400],
}

#: Fixes whose bug no seed of today's simulation reaches, each with the deterministic member test
#: (module, function under tests/member/) that stands in for a seed: it passes, and fails with the
#: fix undone. `in_flight_commit_retried_after_loss` was found by seed 18603 of the 20,000-seed
#: sweep; on the session-driven simulation no seed of 0-30,000 (all faults) or 0-20,000 (only the
#: original seed's faults) catches it any more.
SCENARIOS: dict[str, tuple[str, str]] = {
    # Found by mixed seed 1038 (a classic member's LeaveGroup queued while the connection to the
    # coordinator failed: the coordinator was forgotten and never looked up again, the member
    # stayed LEAVING); after the next fix changed that seed's course, none of mixed or consumer
    # seeds 0-3000 reaches it: the session test stands in.
    "lost_coordinator_strands_queued_calls": (
        "test_member_session",
        "test_calls_waiting_for_a_coordinator_lost_meanwhile_look_it_up_again",
    ),
    # Issue seed 2105828 (consumer; before the regex-resolution change moved every seed): a late
    # NOT_COORDINATOR from a replaced coordinator wiped out the new one, and nothing looked it up
    # again for the queued leave: the member stayed LEAVING.
    "late_answer_forgets_the_new_coordinator": (
        "test_member_session",
        "test_a_late_answer_of_a_replaced_coordinator_does_not_forget_the_new_one",
    ),
    # A classic leader (subscribed to topics that do not exist) assigned another member's topic
    # with 7 partitions; it grew to 9 while the group synced, and neither member rejoined: the
    # leader watched only its own topics, the other member had seen 9 when its assignment came.
    # Found by mixed seed 2985903 of a random range; once on_partitions_assigned followed every
    # reconciliation that revoked, that seed changed course and none of 2985860-2986400 catches it.
    "classic_leader_watches_only_its_own_topics": (
        "test_member_classic",
        "test_the_leader_watches_the_topics_of_every_member_it_assigned",
    ),
    # Found by mixed seed 1381343 of a random range (a classic member inside a consumer group
    # joined without the id of its subscribed topic t2, created shortly before; t2 was deleted
    # and created again between the SyncGroup answer and the Metadata answer for its names, and
    # the member held the new t2's partition, given to nobody: `hold-not-owner`). The fix looks
    # the ids up before the JoinGroup goes, which changes that seed's course: the test stands in.
    "classic_join_learns_no_topic_ids": (
        "test_member_classic",
        "test_a_joining_member_learns_its_topics_ids_first_and_leaves_out_a_topic_created_again_since",
    ),
    # Found by mixed seed 5872: a cooperative classic member joined again after a subscription
    # change still owning a partition of the topic it had left, and the leader gave it to another
    # member at once. Once the members' heartbeats moved onto their group's ticks that seed
    # changed course, and none of mixed seeds 0-4000 catches it: the member test stands in.
    "cooperative_join_keeps_unsubscribed_partitions": (
        "test_member_classic",
        "test_a_subscription_change_while_revoking_before_a_rejoin_revokes_the_rest_too",
    ),
    "in_flight_commit_retried_after_loss": (
        "test_member_commits",
        "test_a_commit_in_flight_when_the_partitions_are_lost_is_not_retried_after_the_rejoin",
    ),
}

#: Seeds that exposed mistakes of the simulation itself (ordering of application events, what
#: counts as converged, reprocessing during the drain): they must keep passing. 1230354: the
#: simulated application, now committing through the application core, committed explicit offsets
#: of an earlier ownership after on_assign gave it the partition again (it now forgets them there,
#: as an application resets its state). 1230916 found a coordinator bug instead (an install naming
#: a static member replaced since the prepare; `test_client_assignors` fails with the fix undone).
HARNESS_SEEDS = [376, 1082, 4883, 6022, 8283, 10914, 1230354, 1230916]

_CASES = [(name, seed, "consumer") for name, seeds in sorted(REGRESSIONS.items()) for seed in seeds] + [
    (name, seed, "mixed") for name, seeds in sorted(MIXED_REGRESSIONS.items()) for seed in seeds
]
_IDS = [f"{n}-{s}" + ("-mixed" if p == "mixed" else "") for n, s, p in _CASES]


@pytest.mark.parametrize(("name", "seed", "protocols"), _CASES, ids=_IDS)
def test_regression_seed_passes(name: str, seed: int, protocols: str) -> None:
    result = run_seed(seed, protocols=protocols)
    assert result.ok, result.report()


@pytest.mark.parametrize(("name", "seed", "protocols"), _CASES, ids=_IDS)
def test_regression_seed_catches_the_bug(
    name: str, seed: int, protocols: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    revert, kinds = REVERTS[name]
    revert(monkeypatch)
    result = run_seed(seed, protocols=protocols)
    assert result.violations, f"seed {seed} no longer catches {name}: search a new one"
    assert result.violations[0].kind in kinds, result.report()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_regression_scenario_catches_the_bug(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    module_name, function = SCENARIOS[name]
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "member"))
    scenario = getattr(importlib.import_module(module_name), function)
    scenario()  # passes with the fix
    revert, _kinds = REVERTS[name]
    revert(monkeypatch)
    with pytest.raises(AssertionError):
        scenario()


def test_every_reverted_fix_has_a_seed_or_a_scenario() -> None:
    assert set(REVERTS) == set(REGRESSIONS) | set(MIXED_REGRESSIONS) | set(SCENARIOS)
    assert not (set(REGRESSIONS) | set(MIXED_REGRESSIONS)) & set(SCENARIOS)


#: Seeds that reported a violation no fix was tied to, kept so that they keep passing. 778117
#: reported "t1-0 committed 18 after 34" (a member's commit after regaining a partition used a
#: position from before it lost it); on the session-driven simulation it passes, the sweep of
#: 770000-790000 around it is clean, and the facade forgets a regained partition's stopped and
#: stored positions and its last commit (tests/parity/, tests/consumer/).
WATCHED_SEEDS = [778117]


@pytest.mark.parametrize("seed", WATCHED_SEEDS)
def test_watched_seed_passes(seed: int) -> None:
    result = run_seed(seed)
    assert result.ok, result.report()


#: Mixed seeds that exposed a checker mistake. 4692062, 4692598: `released-before-commit` counted
#: a classic member's leave, which gives its partitions up after its own commit of them, as a
#: revocation's acknowledgement while the interrupted revocation's commit of the same offsets was
#: still out. 8796788: a coordinator failover left a classic group whose only member was still
#: joining (never stored): the new coordinator knew it empty and deleted it for a consumer-protocol
#: join, a new group from epoch 1, which `group-epoch` took for an epoch going back (it judged
#: "empty" from the old coordinator's memory). 8797044: `liveness` wanted every subscribed
#: partition assigned in a group converted from a classic one while a partition added during the
#: classic rebalance was in no target; Apache Kafka 4.4 leaves it so until the next epoch bump
#: (fidelity scenario `classic_group_converted_after_its_topic_grew`). 9700747, 9701691:
#: `double-hold` took a static classic member left out of the last generation for a holder while
#: the group prepared its next one (the zombie check only knew a generation once its join phase
#: was over), though the coordinator answers it ILLEGAL_GENERATION then too.
#: 1220779, 1221765, 1240335 (fresh ranges of this round) found classic-member bugs; each has a
#: unit test in `tests/member/test_member_classic.py` that fails with its fix undone.
#: 5445332: `double-hold` took the same kind of left-out static member for a holder once the
#: group had been converted to a consumer group (its epoch is the generation it missed, so the
#: coordinator answers it ILLEGAL_GENERATION until it rejoins). 1271499 keeps that rule to the
#: conversion's generation: the join that converts a group also bumps its epoch, and members of
#: the converted generation are no zombies for that. 7300490: a conversion carried a partition the
#: member's topic no longer had (deleted and created again smaller) into its assignment and target
#: (`liveness`; unit test in `tests/coordinator/test_group_migration.py`). 1301784: a classic
#: member resolved its assignment's topic names with a Metadata retry answered after a topic was
#: deleted and created again, and fetched the new topic's partition (`fetch-not-owner`); a failed
#: lookup of assigned names now makes it join again (unit test in
#: `tests/member/test_member_classic.py`). 1381343: see `classic_join_learns_no_topic_ids`.
MIXED_HARNESS_SEEDS = [
    *(4692062, 4692598, 8796788, 8797044, 9700747, 9701691),
    *(1220779, 1221765, 1240335, 5445332, 1271499, 7300490, 1301784, 1381343),
]
#: A transactional seed that exposed a mistake of the simulated producer: a commit marker held
#: up by a coordinator election was written after the producer's next transaction had its offsets
#: accepted, and committed them with it (records never in the output). Kafka answers the next
#: transaction CONCURRENT_TRANSACTIONS until the markers are written; so does the simulation now.
#: 1570134: a commit marker held up by an election and the abort marker of the producer's next,
#: fenced transaction were retried at the same instant, the abort first, which dropped the
#: committed transaction's offsets (its records were then committed again by the partition's next
#: owner); a producer's markers are now written in order.
TRANSACTIONAL_HARNESS_SEEDS = [4691852, 1570134]


@pytest.mark.parametrize("seed", HARNESS_SEEDS)
def test_harness_seed_passes(seed: int) -> None:
    result = run_seed(seed)
    assert result.ok, result.report()


@pytest.mark.parametrize("seed", MIXED_HARNESS_SEEDS)
def test_mixed_harness_seed_passes(seed: int) -> None:
    result = run_seed(seed, protocols="mixed")
    assert result.ok, result.report()


@pytest.mark.parametrize("seed", TRANSACTIONAL_HARNESS_SEEDS)
def test_transactional_harness_seed_passes(seed: int) -> None:
    result = run_seed(seed, protocols="transactional")
    assert result.ok, result.report()
