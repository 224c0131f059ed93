"""kconsumer against the reference cluster's fault injection: fenced members, coordinator errors on
heartbeats, commits and offset fetches, lost responses, dropped connections and coordinator
failovers. Members commit their processed offsets on revocation; the `Ledger` checks that every
record is consumed at least once, duplicates only inside the uncommitted window, and that no
partition is ever consumed by two members at once."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from consumer_harness import Feeder, Ledger, Member, cluster_committed, config, fast_cluster, wait_until

from kconsumer.errors import ErrorCode
from kconsumer.protocol.api import ApiKey
from kconsumer.testing import ReferenceCluster

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.reference_only("injects errors, delays and lost responses into the reference broker"),
]

TOPIC = "events"
GROUP = "group"
MemberFactory = Callable[..., Member]
FeederFactory = Callable[..., Feeder]


def stable(cluster: ReferenceCluster, members: list[Member], partitions: int) -> bool:
    """The coordinator's group is stable with exactly `members`, each owning its fair share."""
    group = cluster.describe_group(GROUP)
    if group is None or group.state != "Stable":
        return False
    if set(group.members) != {m.consumer.memberid() for m in members}:
        return False
    shares = sorted(len(m.owned()) for m in members)
    return sum(shares) == partitions and shares[-1] - shares[0] <= 1


def faults_pending(cluster: ReferenceCluster) -> bool:
    return cluster._call(lambda broker: bool(broker.faults))


def settle_and_check(ledger: Ledger, feeder: Feeder, group: list[Member]) -> dict[tuple[str, int], list[int]]:
    produced = feeder.stop()
    wait_until(lambda: ledger.has_all(produced), what="every record")
    for member in group:
        member.close()
    return produced


@pytest.mark.parametrize("code", [ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID])
def test_fenced_member_loses_its_partitions_and_rejoins(
    cluster: ReferenceCluster, members: MemberFactory, feeders: FeederFactory, code: ErrorCode
) -> None:
    cluster.create_topic(TOPIC, 4)
    ledger = Ledger(cluster_committed(cluster, GROUP))
    ledger.sample_group(cluster, GROUP)
    feeder = feeders(cluster, TOPIC)
    settings = config(cluster.bootstrap_servers, GROUP)
    a = members(ledger, "a", settings, [TOPIC], commit_every=0.5)
    b = members(ledger, "b", settings, [TOPIC], commit_every=0.5)
    wait_until(lambda: stable(cluster, [a, b], 4), what="two members")
    before = {m.name: m.owned() for m in (a, b)}
    calls = {m.name: m.assigned_calls for m in (a, b)}

    cluster.inject_error(ApiKey.CONSUMER_GROUP_HEARTBEAT, code, 1)
    wait_until(lambda: a.lost_calls + b.lost_calls == 1, what="on_partitions_lost")
    fenced = a if a.lost_calls else b
    assert fenced.lost == [before[fenced.name]], "it loses exactly what it owned"
    # (Its first assignment may have come in two calls: empty while the partitions were released.)
    wait_until(
        lambda: fenced.assigned_calls > calls[fenced.name] and stable(cluster, [a, b], 4),
        what="the fenced member back",
    )
    assert fenced.owned() == before[fenced.name], "the coordinator never took them away"
    assert fenced.consumer.member_epoch() > 0
    count = ledger.count()
    wait_until(lambda: ledger.count() > count + 40, what="records flowing again")

    produced = settle_and_check(ledger, feeder, [a, b])
    ledger.check(produced)
    assert a.errors == b.errors == []


def test_member_fenced_by_its_session_timeout_after_a_failover_rejoins(
    members: MemberFactory, feeders: FeederFactory
) -> None:
    """A coordinator failover, then a heartbeat answered only after the session timeout: the new
    coordinator's session timer removes the member; its next heartbeat is refused
    (UNKNOWN_MEMBER_ID), so it loses its partitions, rejoins with the same id and resumes from the
    committed offsets (what it read after its last commit is read again, nothing before)."""
    with fast_cluster(session_timeout_ms=1000) as cluster:
        cluster.create_topic(TOPIC, 3)
        ledger = Ledger(cluster_committed(cluster, GROUP))
        ledger.sample_group(cluster, GROUP)
        feeder = feeders(cluster, TOPIC)
        a = members(ledger, "a", config(cluster.bootstrap_servers, GROUP), [TOPIC], commit_every=0.3)
        wait_until(lambda: stable(cluster, [a], 3), what="a member")
        epoch = cluster.describe_group(GROUP).epoch  # type: ignore[union-attr]
        cluster.fail_over_coordinator()
        count = ledger.count()
        wait_until(lambda: ledger.count() > count + 30, what="records after the failover")
        wait_until(lambda: cluster.committed(GROUP), what="commits after the failover")
        assert cluster.describe_group(GROUP).epoch == epoch  # type: ignore[union-attr]
        assert a.lost_calls == 0, "a failover alone fences nobody"

        calls = a.assigned_calls
        cluster.delay_responses(ApiKey.CONSUMER_GROUP_HEARTBEAT, 2500, count=1)
        wait_until(lambda: a.lost_calls == 1, what="the member fenced")
        assert a.lost == [{(TOPIC, p) for p in range(3)}]
        wait_until(lambda: a.assigned_calls > calls and stable(cluster, [a], 3), what="the member back")
        assert cluster.describe_group(GROUP).epoch > epoch  # type: ignore[union-attr]
        count = ledger.count()
        wait_until(lambda: ledger.count() > count + 30, what="records flowing again")
        produced = settle_and_check(ledger, feeder, [a])
        ledger.check(produced)
        assert a.errors == []


@pytest.mark.parametrize(
    "code",
    [
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ],
)
def test_coordinator_errors_on_heartbeats_commits_and_offset_fetches(
    cluster: ReferenceCluster, members: MemberFactory, feeders: FeederFactory, code: ErrorCode
) -> None:
    """Every coordinator error on every group API is retried: the rebalance completes, the
    revocation commits land (so nothing is read twice) and nothing is lost."""
    cluster.create_topic(TOPIC, 4)
    ledger = Ledger(cluster_committed(cluster, GROUP))
    ledger.sample_group(cluster, GROUP)
    feeder = feeders(cluster, TOPIC)
    settings = config(cluster.bootstrap_servers, GROUP)
    # Only synchronous commits (on revocation and close): the injected errors hit them.
    a = members(ledger, "a", settings, [TOPIC], commit_every=None)
    wait_until(lambda: stable(cluster, [a], 4) and ledger.consuming("a"), what="one member consuming")

    cluster.inject_error(ApiKey.OFFSET_COMMIT, code, 3)
    cluster.inject_error(ApiKey.OFFSET_FETCH, code, 3)
    cluster.inject_error(ApiKey.CONSUMER_GROUP_HEARTBEAT, code, 3)
    b = members(ledger, "b", settings, [TOPIC], commit_every=None)
    wait_until(
        lambda: stable(cluster, [a, b], 4) and ledger.consuming("a", "b"),
        what="two members consuming despite the errors",
    )
    assert not faults_pending(cluster), "every injected error was hit"

    cluster.inject_error(ApiKey.OFFSET_COMMIT, code, 2)
    b.close()
    wait_until(lambda: stable(cluster, [a], 4), what="a alone")
    assert not faults_pending(cluster), "b's commit on close retried"
    produced = settle_and_check(ledger, feeder, [a])
    ledger.check(produced)
    assert a.errors == b.errors == [] and a.commit_failures == b.commit_failures == []
    assert len(ledger.receipts) == sum(len(v) for v in produced.values()), "a record was read twice"


def test_lost_heartbeat_and_commit_responses(
    cluster: ReferenceCluster, members: MemberFactory, feeders: FeederFactory
) -> None:
    """Requests processed but their responses lost (the connection closes instead): the member
    retries, the coordinator's lost-response tolerance keeps it in the group."""
    cluster.create_topic(TOPIC, 4)
    ledger = Ledger(cluster_committed(cluster, GROUP))
    ledger.sample_group(cluster, GROUP)
    feeder = feeders(cluster, TOPIC)
    settings = config(cluster.bootstrap_servers, GROUP)
    a = members(ledger, "a", settings, [TOPIC], commit_every=None)
    wait_until(lambda: stable(cluster, [a], 4) and ledger.consuming("a"), what="one member consuming")

    cluster.drop_responses(ApiKey.CONSUMER_GROUP_HEARTBEAT, 2)
    b = members(ledger, "b", settings, [TOPIC], commit_every=None)
    wait_until(
        lambda: stable(cluster, [a, b], 4) and ledger.consuming("a", "b"),
        what="two members consuming despite lost heartbeats",
    )
    cluster.drop_responses(ApiKey.OFFSET_COMMIT, 1)
    cluster.drop_responses(ApiKey.OFFSET_FETCH, 1)
    c = members(ledger, "c", settings, [TOPIC], commit_every=None)
    wait_until(
        lambda: stable(cluster, [a, b, c], 4) and ledger.consuming("a", "b", "c"),
        what="three members consuming despite lost responses",
    )
    assert not faults_pending(cluster)
    produced = settle_and_check(ledger, feeder, [a, b, c])
    # A lost commit response may be retried after the commit took effect: still exact.
    ledger.check(produced)
    for member in (a, b, c):
        assert member.errors == [] and member.lost_calls == 0


def test_dropped_connections_and_coordinator_failovers(
    cluster: ReferenceCluster, members: MemberFactory, feeders: FeederFactory
) -> None:
    cluster.create_topic(TOPIC, 6)
    ledger = Ledger(cluster_committed(cluster, GROUP))
    ledger.sample_group(cluster, GROUP)
    feeder = feeders(cluster, TOPIC)
    settings = config(cluster.bootstrap_servers, GROUP)
    a = members(ledger, "a", settings, [TOPIC])
    b = members(ledger, "b", settings, [TOPIC])
    wait_until(lambda: stable(cluster, [a, b], 6), what="two members")

    assert cluster.drop_connections() >= 4
    c = members(ledger, "c", settings, [TOPIC])
    time.sleep(0.05)  # let c's join start: the failover lands in the middle of the rebalance
    cluster.fail_over_coordinator()
    wait_until(lambda: stable(cluster, [a, b, c], 6), what="three members after a failover")
    count = ledger.count()
    wait_until(lambda: ledger.count() > count + 60, what="records flowing")

    for _ in range(3):
        cluster.drop_connections()
        target = ledger.count() + 30
        wait_until(lambda: ledger.count() > target, what="records after the connections dropped")  # noqa: B023
    b.close()
    cluster.fail_over_coordinator()
    cluster.drop_connections()
    wait_until(lambda: stable(cluster, [a, c], 6), what="two members after another failover")
    produced = settle_and_check(ledger, feeder, [a, c])
    ledger.check(produced)
    for member in (a, b, c):
        assert member.errors == [] and member.lost_calls == 0


def test_every_event_in_one_run(members: MemberFactory, feeders: FeederFactory) -> None:
    """Members join, get fenced, crash, stop polling, restart statically, while responses are lost,
    connections dropped, the coordinator fails over and answers errors: every record is still
    consumed, never by two members at once, duplicates only inside the uncommitted window."""
    with fast_cluster(session_timeout_ms=1500) as cluster:
        cluster.create_topic(TOPIC, 6)
        ledger = Ledger(cluster_committed(cluster, GROUP))
        ledger.sample_group(cluster, GROUP)
        feeder = feeders(cluster, TOPIC)
        settings = config(cluster.bootstrap_servers, GROUP)
        a = members(ledger, "a", config(cluster.bootstrap_servers, GROUP, max_poll_interval_ms=1500), [TOPIC])
        b = members(ledger, "b", settings, [TOPIC], commit_every=0.5)
        wait_until(lambda: stable(cluster, [a, b], 6) and ledger.consuming("a", "b"), what="a and b")

        cluster.inject_error(ApiKey.CONSUMER_GROUP_HEARTBEAT, ErrorCode.FENCED_MEMBER_EPOCH, 1)
        c = members(ledger, "c", settings, [TOPIC], batch=20)
        cluster.drop_responses(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1)
        cluster.fail_over_coordinator()
        wait_until(lambda: stable(cluster, [a, b, c], 6) and ledger.consuming("a", "b", "c"), what="a, b, c")

        cluster.inject_error(ApiKey.OFFSET_COMMIT, ErrorCode.NOT_COORDINATOR, 2)
        cluster.inject_error(ApiKey.OFFSET_FETCH, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, 2)
        b.crash()
        static = config(cluster.bootstrap_servers, GROUP, group_instance_id="static")
        d = members(ledger, "d", static, [TOPIC])
        wait_until(
            lambda: stable(cluster, [a, c, d], 6) and ledger.consuming("a", "c", "d"), what="b replaced"
        )

        d.close()
        cluster.drop_connections()
        d2 = members(ledger, "d2", static, [TOPIC])
        wait_until(lambda: stable(cluster, [a, c, d2], 6) and ledger.consuming("d2"), what="d restarted")

        lost = a.lost_calls  # (a may have been the member fenced above)
        a.pause()
        wait_until(lambda: stable(cluster, [c, d2], 6), what="a gone for not polling")
        a.resume()
        wait_until(lambda: stable(cluster, [a, c, d2], 6) and ledger.consuming("a", "c", "d2"), what="a back")
        assert a.lost_calls == lost + 1

        produced = settle_and_check(ledger, feeder, [a, c, d2])
        ledger.check(produced)
        assert ledger.samples > 20
