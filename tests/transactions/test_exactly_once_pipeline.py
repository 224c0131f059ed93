"""kconsumer in a consume-transform-produce pipeline with a transactional producer
(`examples/exactly_once.py`), on both backends, under the exactly-once ledger (`eos_ledger`):

* workers crash at every step of a transaction (before producing, after producing, after adding
  the offsets, and killed at a random moment, possibly inside the commit), each restarted with
  the same transactional id, which fences the crashed one and aborts its open transaction, while
  members join and leave (rebalances mid-pipeline);
* a zombie: a worker stalls past ``max.poll.interval.ms`` holding a batch, its partitions move
  to another worker, and when it wakes its offsets are refused by the group coordinator (KIP-447:
  its member is gone), so its transaction aborts instead of committing the batch a second time.
"""

from __future__ import annotations

import random
import time
import uuid

import pytest
from backends import Cluster
from consumer_harness import wait_until
from eos_ledger import InputFeeder, Worker, check_exactly_once, wait_for_output
from exactly_once import STEPS

pytestmark = pytest.mark.timeout(300)
PARTITIONS = 4


def _names() -> tuple[str, str, str]:
    run = uuid.uuid4().hex[:8]
    return f"eos-in-{run}", f"eos-out-{run}", f"eos-{run}"


def test_every_input_record_is_committed_exactly_once_through_crashes_at_every_step(cluster: Cluster) -> None:
    source, sink, group = _names()
    cluster.create_topic(source, PARTITIONS)
    cluster.create_topic(sink, PARTITIONS)
    bootstrap = cluster.bootstrap_servers
    feeder = InputFeeder(bootstrap, source, PARTITIONS)
    steady = Worker(bootstrap, group, source, sink, f"{group}-steady")
    crashes = 0
    workers = [steady]
    try:
        for step in STEPS:  # crash at the second transaction, at each step
            crasher = Worker(bootstrap, group, source, sink, f"{group}-crasher", "--crash-at", f"{step}:1")
            workers.append(crasher)
            exited = crasher.process.poll
            wait_until(lambda exited=exited: exited() is not None, 90, what=f"the worker to crash {step}")
            assert crasher.process.returncode == 3, (crasher.lines, crasher.stderr())
            crashes += 1
        killed = Worker(bootstrap, group, source, sink, f"{group}-crasher")
        workers.append(killed)
        wait_until(lambda: killed.committed() >= 2, 90, what="the worker to commit twice")
        time.sleep(random.uniform(0.0, 0.3))  # killed mid-transaction, maybe inside the commit
        killed.kill()
        crashes += 1
        final = Worker(bootstrap, group, source, sink, f"{group}-crasher")  # fences the killed one
        workers.append(final)
        wait_until(lambda: final.committed() >= 1, 90, what="the restarted worker to commit")
        ends = feeder.stop()
        total = sum(ends.values())
        seen = wait_for_output(bootstrap, sink, PARTITIONS, total, 120)
        assert seen == total, f"{seen} of {total} input records in the committed output"
        checked, problems = check_exactly_once(bootstrap, source, sink, ends, PARTITIONS)
        assert not problems, "\n".join(problems[:20])
        committed = {key: offset for key, offset in cluster.committed(group).items() if key[0] == source}
        assert committed == {(source, p): end for p, end in ends.items()}, committed
        print(f"exactly once: {checked} records, {crashes} crashes, {len(workers)} worker runs")
    finally:
        feeder.stop()
        for worker in workers:
            if worker.process.poll() is None:
                worker.stop()


def _zombie_run(cluster: Cluster, step: str = "after-produce", *steady_options: str) -> tuple[str, list[str]]:
    """A zombie worker stalling at `step` of its third transaction next to a steady one: the
    zombie's first report after it wakes, and the ledger's problems with the committed output."""
    source, sink, group = _names()
    cluster.create_topic(source, PARTITIONS)
    cluster.create_topic(sink, PARTITIONS)
    bootstrap = cluster.bootstrap_servers
    feeder = InputFeeder(bootstrap, source, PARTITIONS)
    stall = ("--stall-at", f"{step}:2:6", "--max-poll-interval-ms", "2000")
    zombie = Worker(bootstrap, group, source, sink, f"{group}-zombie", *stall)
    steady = Worker(bootstrap, group, source, sink, f"{group}-steady", *steady_options)

    def woke_and_tried() -> bool:
        return "resumed" in zombie.lines and len(zombie.lines) > zombie.lines.index("resumed") + 1

    try:
        wait_until(woke_and_tried, 120, what="the zombie to wake and try to commit")
        after = zombie.lines[zombie.lines.index("resumed") + 1]
        wait_until(lambda: steady.committed() >= 2, 60, what="the steady worker to go on")
        ends = feeder.stop()
        total = sum(ends.values())
        wait_for_output(bootstrap, sink, PARTITIONS, total, 60)
        return after, check_exactly_once(bootstrap, source, sink, ends, PARTITIONS)[1]
    finally:
        feeder.stop()
        for worker in (zombie, steady):
            if worker.process.poll() is None:
                worker.stop()


def test_a_zombie_worker_cannot_commit_the_batch_it_lost(cluster: Cluster) -> None:
    after, problems = _zombie_run(cluster)
    assert after.startswith("aborted"), after
    assert not problems, "\n".join(problems[:20])


@pytest.mark.reference_only("changes the reference coordinator's TxnOffsetCommit checks")
def test_without_kip447_fencing_the_zombie_commits_a_duplicate(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mutation the zombie test must catch: a coordinator accepting any member's offsets."""
    from kconsumer.broker.coordinator import txn_offsets

    monkeypatch.setattr(txn_offsets, "_group_error", lambda ctx, request: 0)
    after, problems = _zombie_run(cluster)
    assert after.startswith("committed"), after
    assert any("committed 2 times" in p for p in problems), problems


def test_a_new_owner_waits_for_the_offsets_of_a_zombies_open_transaction(cluster: Cluster) -> None:
    """The zombie stalls after its offsets were accepted, before its commit: its partitions move,
    and the new owner's offset fetch (require_stable, as read_committed consumers ask) waits for
    that transaction to end instead of starting from the older committed offsets; the zombie's
    commit then goes through, and nothing is committed twice."""
    after, problems = _zombie_run(cluster, "after-offsets")
    assert after.startswith("committed"), after
    assert not problems, "\n".join(problems[:20])


def test_without_stable_offsets_the_new_owner_duplicates_the_zombies_batch(cluster: Cluster) -> None:
    """What require_stable prevents: a read_uncommitted owner does not wait for the open
    transaction's offsets, reprocesses the zombie's batch, and both commit it."""
    after, problems = _zombie_run(cluster, "after-offsets", "--isolation-level", "read_uncommitted")
    assert after.startswith("committed"), after
    assert any("committed 2 times" in p for p in problems), problems
