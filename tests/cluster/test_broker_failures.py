"""kconsumer groups on a 3-broker cluster (the reference cluster, and Apache Kafka) while brokers
fail: the coordinator's broker stopped mid-run, leaders moving during fetch, a rolling restart of
every broker. Each run keeps the
at-least-once ledger (no partition read by two members at once, duplicates only above the
committed offset at a hand-over, nothing missing) and samples the coordinator for double ownership;
at the end the committed offsets reach the end of every partition."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

import pytest
from backends import Cluster, open_cluster
from consumer_harness import Feeder, Ledger, Member, cluster_committed, config, wait_until

from kconsumer.errors import ErrorCode
from kconsumer.protocol.api import ApiKey

TOPIC = "events"
PARTITIONS = 6
MemberFactory = Callable[..., Member]
FeederFactory = Callable[..., Feeder]


@pytest.fixture(autouse=True)
def _member_traces(caplog: pytest.LogCaptureFixture) -> None:
    """Two CI runs (of some twenty) hung here in the final synchronous commit, never reproduced
    on a quiet machine: a failure's report carries every member's trace (``kconsumer.trace``,
    one line per event its core handled) and kconsumer's INFO lines, to see where it waited."""
    caplog.set_level(logging.INFO, logger="kconsumer")
    caplog.set_level(logging.DEBUG, logger="kconsumer.trace")


def three_brokers(backend: str, **options: Any) -> contextlib.AbstractContextManager[Cluster]:
    return open_cluster(backend, brokers=3, session_timeout_ms=3000, **options)


def _start(
    cluster: Cluster, group: str, count: int, members: MemberFactory, zombies: bool = False
) -> tuple[Ledger, list[Member]]:
    cluster.create_topic(TOPIC, PARTITIONS)
    ledger = Ledger(cluster_committed(cluster, group), zombies=zombies)
    ledger.sample_group(cluster, group)
    settings = config(cluster.bootstrap_servers, group)
    started = [members(ledger, f"m{i}", settings, [TOPIC]) for i in range(count)]
    return ledger, started


def _stable(cluster: Cluster, group: str, started: list[Member]) -> bool:
    description = cluster.describe_group(group)
    if description is None or description.state != "Stable":
        return False
    return set(description.members) == {m.consumer.memberid() for m in started} and all(
        m.owned() for m in started
    )


def _flowing(ledger: Ledger, more: int = 40) -> None:
    target = ledger.count() + more
    wait_until(lambda: ledger.count() >= target, timeout=30, what="records flowing")


def _finish(cluster: Cluster, group: str, ledger: Ledger, feeder: Feeder, started: list[Member]) -> None:
    produced = feeder.stop()
    wait_until(lambda: ledger.has_all(produced), timeout=60, what="every record")
    for member in started:
        member.commit_keys(member.owned())
    wait_until(
        lambda: all(
            cluster.committed(group).get(key, -1) >= max(offsets) + 1 for key, offsets in produced.items()
        ),
        timeout=30,
        what="committed offsets at the end",
    )
    for member in started:
        member.close()
    ledger.check(produced)
    for member in started:
        assert member.errors == [], member.errors


def test_the_coordinators_broker_stops_and_members_stay_in_the_group(
    members: MemberFactory, feeders: FeederFactory, backend: str
) -> None:
    with three_brokers(backend) as cluster:
        group = "coordinator-down"
        ledger, started = _start(cluster, group, 3, members)
        feeder = feeders(cluster, TOPIC)
        wait_until(lambda: _stable(cluster, group, started), timeout=30, what="a stable group")
        _flowing(ledger)
        before = {m.consumer.memberid(): m.consumer.member_epoch() for m in started}
        victim = cluster.coordinator_node(group)
        cluster.stop_broker(victim)
        assert cluster.coordinator_node(group) != victim
        _flowing(ledger)
        # Within the session timeout: the same members, at the same epochs, on the new coordinator.
        wait_until(
            lambda: _stable(cluster, group, started), timeout=30, what="the group on the new coordinator"
        )
        assert {m.consumer.memberid(): m.consumer.member_epoch() for m in started} == before
        cluster.start_broker(victim)
        _flowing(ledger)
        _finish(cluster, group, ledger, feeder, started)


@pytest.mark.reference_only("moves partition leaders with the reference cluster's move_leader")
def test_leaders_move_during_fetch(members: MemberFactory, feeders: FeederFactory, backend: str) -> None:
    with three_brokers(backend) as cluster:
        group = "leaders-move"
        ledger, started = _start(cluster, group, 2, members)
        feeder = feeders(cluster, TOPIC)
        wait_until(lambda: _stable(cluster, group, started), timeout=30, what="a stable group")
        for round_ in range(3):
            _flowing(ledger)
            for partition in range(PARTITIONS):
                cluster.move_leader(TOPIC, partition, (cluster.leader(TOPIC, partition) + round_) % 3 + 1)
        _flowing(ledger)
        _finish(cluster, group, ledger, feeder, started)


@pytest.mark.timeout(480)  # three restarts of a Kafka JVM on two loaded cores: up to a minute each
def test_a_rolling_restart_of_every_broker_while_four_members_consume(
    members: MemberFactory, feeders: FeederFactory, backend: str
) -> None:
    with three_brokers(backend) as cluster:
        group = "rolling"
        ledger, started = _start(cluster, group, 4, members)
        feeder = feeders(cluster, TOPIC)
        wait_until(lambda: _stable(cluster, group, started), timeout=30, what="a stable group")
        for node in cluster.brokers():
            _flowing(ledger)
            cluster.stop_broker(node)
            time.sleep(0.5)
            cluster.start_broker(node)
        _flowing(ledger)
        wait_until(lambda: _stable(cluster, group, started), timeout=30, what="the group after the restarts")
        _finish(cluster, group, ledger, feeder, started)


@pytest.mark.reference_only("injects errors into the reference broker")
def test_a_coordinator_unreachable_past_the_session_timeout_makes_members_rejoin(
    members: MemberFactory, feeders: FeederFactory, backend: str
) -> None:
    """The coordinator's broker stops and its successor answers COORDINATOR_NOT_AVAILABLE for longer
    than the session timeout: the new coordinator expires the members; when it answers again they
    are fenced, lose their partitions and rejoin (new member epochs), and nothing is lost."""
    with three_brokers(backend) as cluster:
        group = "coordinator-gone"
        # Both members become zombies: they read on until the coordinator can tell them.
        ledger, started = _start(cluster, group, 2, members, zombies=True)
        feeder = feeders(cluster, TOPIC)
        wait_until(lambda: _stable(cluster, group, started), timeout=30, what="a stable group")
        _flowing(ledger)
        before = {m.consumer.memberid(): m.consumer.member_epoch() for m in started}
        cluster.inject_error(
            ApiKey.CONSUMER_GROUP_HEARTBEAT, ErrorCode.COORDINATOR_NOT_AVAILABLE, count=100_000
        )
        cluster.stop_broker(cluster.coordinator_node(group))
        time.sleep(4.5)  # > session.timeout.ms (3 s) on the new coordinator
        cluster.clear_faults()
        wait_until(lambda: _stable(cluster, group, started), timeout=30, what="the members back in the group")
        after = {m.consumer.memberid(): m.consumer.member_epoch() for m in started}
        assert after.keys() == before.keys(), "the same member ids rejoin"
        assert all(after[m] != before[m] for m in after), (before, after)
        _flowing(ledger)
        _finish(cluster, group, ledger, feeder, started)
