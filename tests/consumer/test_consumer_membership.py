"""kconsumer against the reference cluster: joining, scaling out and in, a crashed member, a static
member restarting, and a member that stops polling.

Every test runs members in their own threads (`Member`) reporting to a `Ledger`, which checks on
each callback and record that no partition is consumed by two members at once and, at the end,
that every produced record was consumed, duplicates only inside the uncommitted window.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from consumer_harness import (
    Feeder,
    Ledger,
    Member,
    cluster_committed,
    config,
    wait_until,
)

from kconsumer import KafkaError, KafkaException
from kconsumer.testing import ReferenceCluster

pytestmark = pytest.mark.timeout(120)

TOPIC = "events"
GROUP = "group"

MemberFactory = Callable[..., Member]
FeederFactory = Callable[..., Feeder]


def balanced(cluster: ReferenceCluster, members: list[Member], partitions: int) -> bool:
    """Every member owns its share (callbacks and coordinator agree) and the group is stable."""
    description = cluster.describe_group(GROUP)
    if description is None or description.state != "Stable" or len(description.members) != len(members):
        return False
    shares = sorted(len(m.owned()) for m in members)
    fair = sorted(partitions // len(members) + (i < partitions % len(members)) for i in range(len(members)))
    return shares == fair and sum(shares) == partitions


def test_join_consumes_every_record_and_close_leaves(
    cluster: ReferenceCluster, members: MemberFactory
) -> None:
    cluster.create_topic(TOPIC, 4)
    produced = {
        (TOPIC, p): cluster.produce(TOPIC, [f"r{i}" for i in range(25)], partition=p) for p in range(4)
    }
    ledger = Ledger(cluster_committed(cluster, GROUP))
    ledger.sample_group(cluster, GROUP)
    member = members(ledger, "a", config(cluster.bootstrap_servers, GROUP), [TOPIC])

    wait_until(lambda: ledger.has_all(produced), what="every record")
    assert member.owned() == {(TOPIC, p) for p in range(4)}
    description = cluster.describe_group(GROUP)
    assert description is not None and description.state == "Stable"
    (only,) = description.members.values()
    assert only.member_id == member.consumer.memberid()
    assert only.member_epoch == member.consumer.member_epoch() == description.assignment_epoch

    member.close()
    ledger.check(produced)
    assert cluster.committed(GROUP) == {(TOPIC, p): 25 for p in range(4)}, "committed on revocation"
    description = cluster.describe_group(GROUP)
    assert description is not None and not description.members and description.state == "Empty"
    assert member.errors == []


@pytest.mark.parametrize("batch", [None, 50], ids=["poll", "consume"])
def test_scale_out_to_three_and_back_in(
    cluster: ReferenceCluster, members: MemberFactory, feeders: FeederFactory, batch: int | None
) -> None:
    """1 -> 3 -> 1 members while records flow, read with poll() or consume(50): no record of a
    partition is returned once it was revoked, even one already fetched into a batch queue."""
    cluster.create_topic(TOPIC, 6)
    ledger = Ledger(cluster_committed(cluster, GROUP))
    ledger.sample_group(cluster, GROUP)
    feeder = feeders(cluster, TOPIC, batch=10)
    settings = config(cluster.bootstrap_servers, GROUP)
    a = members(ledger, "a", settings, [TOPIC], batch=batch)
    wait_until(lambda: balanced(cluster, [a], 6), what="a owning everything")
    epoch_one = cluster.describe_group(GROUP).epoch  # type: ignore[union-attr]

    b = members(ledger, "b", settings, [TOPIC], batch=batch)
    c = members(ledger, "c", settings, [TOPIC], batch=batch)
    wait_until(lambda: balanced(cluster, [a, b, c], 6), what="three members with two partitions each")
    assert cluster.describe_group(GROUP).epoch > epoch_one  # type: ignore[union-attr]
    wait_until(lambda: ledger.consuming("a", "b", "c"), what="records flowing to three members")
    wait_until(ledger.sampled_again(), what="the coordinator sampled with three members")

    c.close()
    wait_until(lambda: balanced(cluster, [a, b], 6), what="two members after c left")
    wait_until(ledger.sampled_again(), what="the coordinator sampled with two members")
    b.close()
    wait_until(lambda: balanced(cluster, [a], 6), what="a alone again")
    wait_until(ledger.sampled_again(), what="the coordinator sampled with one member")
    produced = feeder.stop()
    wait_until(lambda: ledger.has_all(produced), what="every record")
    a.close()

    ledger.check(produced)  # the coordinator's view was sampled in each state (the waits above)
    for member in (a, b, c):
        assert member.errors == [] and member.commit_failures == []
        assert member.lost_calls == 0
    # Every move was a cooperative revocation that committed: nothing was read twice.
    assert len(ledger.receipts) == sum(len(v) for v in produced.values())


def test_crashed_member_partitions_taken_over_after_session_timeout(
    cluster: ReferenceCluster, members: MemberFactory, feeders: FeederFactory
) -> None:
    cluster.create_topic(TOPIC, 4)
    ledger = Ledger(cluster_committed(cluster, GROUP))
    ledger.sample_group(cluster, GROUP)
    feeder = feeders(cluster, TOPIC)
    settings = config(cluster.bootstrap_servers, GROUP)
    a = members(ledger, "a", settings, [TOPIC])
    b = members(ledger, "b", settings, [TOPIC], commit_every=0.5)
    wait_until(lambda: balanced(cluster, [a, b], 4), what="two members")
    before = ledger.count(b.owned())
    wait_until(lambda: ledger.count(b.owned()) > before + 20, what="b consuming")
    b_partitions = b.owned()
    b_id = b.consumer.memberid()

    b.crash()
    crashed_at = time.monotonic()
    # Still a member until its session times out (1.5 s): its partitions wait for it.
    description = cluster.describe_group(GROUP)
    assert description is not None and b_id in description.members
    wait_until(lambda: a.owned() == {(TOPIC, p) for p in range(4)}, what="a taking b's partitions")
    assert time.monotonic() - crashed_at >= 1.0, "taken over before the session timeout"
    assert b_id not in cluster.describe_group(GROUP).members  # type: ignore[union-attr]

    produced = feeder.stop()
    wait_until(lambda: ledger.has_all(produced), what="every record")
    a.close()
    ledger.check(produced)
    assert a.errors == [] and a.lost_calls == 0
    # What b consumed after its last commit was read again by a, and only that.
    again = len(ledger.receipts) - sum(len(v) for v in produced.values())
    taken = [
        i for i in ledger.intervals if i.member == "a" and i.key in b_partitions and i.start > crashed_at
    ]
    assert {i.key for i in taken} == b_partitions
    assert (
        0
        <= again
        <= sum(
            max(prev.offsets, default=-1) + 1 - (i.committed_at_start or 0)
            for i in taken
            for prev in ledger.intervals
            if prev.member == "b" and prev.key == i.key
        )
    )


KILLED_MEMBER = textwrap.dedent(
    """
    import sys
    from kconsumer import Consumer
    consumer = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                         "auto.offset.reset": "earliest", "client.id": "doomed"})
    consumer.subscribe([sys.argv[3]])
    while True:
        consumer.poll(0.1)
    """
)


def test_killed_process_partitions_taken_over(cluster: ReferenceCluster, members: MemberFactory) -> None:
    cluster.create_topic(TOPIC, 4)
    cluster.produce(TOPIC, [f"r{i}" for i in range(40)])
    ledger = Ledger(cluster_committed(cluster, GROUP))
    ledger.sample_group(cluster, GROUP)
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_MEMBER, cluster.bootstrap_servers, GROUP, TOPIC],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    try:

        def doomed_owns_all() -> bool:
            group = cluster.describe_group(GROUP)
            return group is not None and any(
                m.client_id == "doomed" and len(m.owned) == 4 for m in group.members.values()
            )

        wait_until(doomed_owns_all, timeout=30, what="the subprocess member owning every partition")
        a = members(ledger, "a", config(cluster.bootstrap_servers, GROUP), [TOPIC])
        wait_until(
            lambda: len(a.owned()) == 2 and cluster.describe_group(GROUP).state == "Stable",  # type: ignore[union-attr]
            what="a sharing with the subprocess",
        )
        process.send_signal(signal.SIGKILL)
        process.wait(10)
        killed_at = time.monotonic()
        wait_until(lambda: len(a.owned()) == 4, what="a taking the killed member's partitions")
        assert time.monotonic() - killed_at >= 1.0, "taken over before the session timeout"
        group = cluster.describe_group(GROUP)
        assert group is not None and [m.client_id for m in group.members.values()] == ["a"]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    a.close()
    ledger.check()


# A 3 s session timeout: the restart must come within it even on a loaded machine.
@pytest.mark.parametrize("cluster", [3000], indirect=True, ids=["session-3s"])
def test_static_member_restart_keeps_partitions_without_rebalance(
    cluster: ReferenceCluster, members: MemberFactory, feeders: FeederFactory
) -> None:
    cluster.create_topic(TOPIC, 4)
    ledger = Ledger(cluster_committed(cluster, GROUP))
    ledger.sample_group(cluster, GROUP)
    feeder = feeders(cluster, TOPIC)
    dynamic = config(cluster.bootstrap_servers, GROUP)
    static = config(cluster.bootstrap_servers, GROUP, group_instance_id="static-1")
    a = members(ledger, "a", static, [TOPIC])
    b = members(ledger, "b", dynamic, [TOPIC])
    wait_until(lambda: balanced(cluster, [a, b], 4), what="two members")
    group = cluster.describe_group(GROUP)
    assert group is not None
    epoch, a_partitions, b_partitions = group.epoch, a.owned(), b.owned()
    b_calls = (b.assigned_calls, b.revoked_calls, b.lost_calls)

    a.close()
    # A static member's close leaves with epoch -2: it stays in the group, its partitions wait.
    group = cluster.describe_group(GROUP)
    assert group is not None
    (static_member,) = [m for m in group.members.values() if m.instance_id == "static-1"]
    assert static_member.member_epoch == -2
    assert group.epoch == epoch
    assert b.owned() == b_partitions

    restarted = members(ledger, "a2", static, [TOPIC])
    wait_until(lambda: restarted.owned() == a_partitions, what="the restarted member getting its partitions")
    wait_until(lambda: cluster.describe_group(GROUP).state == "Stable", what="a stable group")  # type: ignore[union-attr]
    group = cluster.describe_group(GROUP)
    assert group is not None and group.epoch == epoch, "a static restart must not bump the group epoch"
    assert [m.instance_id for m in group.members.values()].count("static-1") == 1
    assert b.owned() == b_partitions
    assert (b.assigned_calls, b.revoked_calls, b.lost_calls) == b_calls, "b saw a rebalance"
    before = ledger.count(a_partitions)
    wait_until(lambda: ledger.count(a_partitions) > before + 10, what="the restarted member consuming")

    # Not coming back within the session timeout: the partitions move to b.
    restarted.close()
    wait_until(
        lambda: b.owned() == {(TOPIC, p) for p in range(4)}, what="b taking the static member's partitions"
    )
    assert cluster.describe_group(GROUP).epoch > epoch  # type: ignore[union-attr]
    produced = feeder.stop()
    wait_until(lambda: ledger.has_all(produced), what="every record")
    b.close()
    ledger.check(produced)
    assert len(ledger.receipts) == sum(len(v) for v in produced.values()), "committed on close: no duplicate"
    for member in (a, b, restarted):
        assert member.errors == [] and member.lost_calls == 0


def test_max_poll_interval_exceeded_loses_partitions_then_rejoins(
    cluster: ReferenceCluster, members: MemberFactory, feeders: FeederFactory
) -> None:
    cluster.create_topic(TOPIC, 4)
    ledger = Ledger(cluster_committed(cluster, GROUP))
    ledger.sample_group(cluster, GROUP)
    feeder = feeders(cluster, TOPIC)
    settings = config(cluster.bootstrap_servers, GROUP)
    slow = members(
        ledger, "slow", config(cluster.bootstrap_servers, GROUP, max_poll_interval_ms=1500), [TOPIC]
    )
    b = members(ledger, "b", settings, [TOPIC])
    wait_until(lambda: balanced(cluster, [slow, b], 4), what="two members")
    slow_partitions = slow.owned()
    slow_id = slow.consumer.memberid()

    slow.pause()
    wait_until(
        lambda: b.owned() == {(TOPIC, p) for p in range(4)}, what="b getting the slow member's partitions"
    )
    group = cluster.describe_group(GROUP)
    assert group is not None and slow_id not in group.members, "the slow member left"
    before = ledger.count(slow_partitions)
    wait_until(lambda: ledger.count(slow_partitions) > before + 10, what="b consuming them")
    assert slow.lost_calls == 0, "on_partitions_lost runs inside the next poll"

    slow.resume()
    wait_until(lambda: slow.lost_calls == 1, what="on_partitions_lost")
    assert slow.lost == [slow_partitions]
    wait_until(lambda: slow.errors, what="the poll error")
    (error,) = slow.errors
    assert isinstance(error, KafkaException) and error.args[0].code() == KafkaError._MAX_POLL_EXCEEDED
    assert "max.poll.interval.ms" in str(error)
    wait_until(lambda: balanced(cluster, [slow, b], 4), what="the slow member back in the group")
    assert slow.consumer.memberid() in cluster.describe_group(GROUP).members  # type: ignore[union-attr]

    produced = feeder.stop()
    wait_until(lambda: ledger.has_all(produced), what="every record")
    slow.close()
    b.close()
    ledger.check(produced)
    assert [held.member for held, _new in ledger.overlaps] == ["slow"] * len(ledger.overlaps)
