"""kconsumer with ``group.protocol=classic``, in groups with confluent-kafka classic members (same
strategy), on the reference cluster and on librdkafka's mock cluster; and a kconsumer group rolled
from classic to consumer and back on the reference cluster.

Members come and go while records flow; the ledger (tests/consumer) checks on every callback and
record that no partition is read by two members at once, and at the end that every record was
consumed, a partition handed over after a commit resuming exactly there. Who leads the group
(computes the assignment) depends on who joined first: both kinds lead in these runs."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator, Sequence
from typing import Any

import confluent_kafka as ck
import pytest
from backends import open_cluster, stable_classic_group
from consumer_harness import (
    CommittedReader,
    ConfluentMember,
    Feeder,
    Ledger,
    Member,
    ProducerFeeder,
    cluster_committed,
    config,
    wait_until,
)

pytestmark = pytest.mark.timeout(240)

_names = itertools.count()
STRATEGIES = ["range", "roundrobin", "cooperative-sticky"]
#: A commit with the generation before a rejoin reaches the coordinator after the join phase ended
#: (ILLEGAL_GENERATION) or while the group awaits its SyncGroups (REBALANCE_IN_PROGRESS).
_REFUSED_WHILE_REJOINING = frozenset({ck.KafkaError.ILLEGAL_GENERATION, ck.KafkaError.REBALANCE_IN_PROGRESS})


def _classic(
    strategy: str, session_timeout_ms: int = 6000, heartbeat_interval_ms: int = 200
) -> dict[str, Any]:
    return {
        "group.protocol": "classic",
        "partition.assignment.strategy": strategy,
        "session.timeout.ms": session_timeout_ms,
        "heartbeat.interval.ms": heartbeat_interval_ms,
    }


def _all_owned(members: Sequence[Member | ConfluentMember], partitions: int) -> bool:
    owned = [m.owned() for m in members]
    return sum(len(o) for o in owned) == partitions and all(owned)


def _mixed_group(
    bootstrap: str,
    topic: str,
    group: str,
    strategy: str,
    ledger: Ledger,
    partitions: int,
    timeout: float,
    refused_commits: frozenset[int] = frozenset(),
) -> list[Member | ConfluentMember]:
    """k1 alone (it leads), then confluent c1 and kconsumer k2 join; k1 leaves (c1 or k2 leads
    next), confluent c2 joins. Returns the members still running. Commits may fail only with the
    codes in `refused_commits`, and k1's on_revoke commit while it closes also with a code of
    `_REFUSED_WHILE_REJOINING`: k1 may be closed while its JoinGroup (or SyncGroup) is under way
    (tests/classic/test_close_during_a_rebalance.py)."""
    settings = config(bootstrap, group, verbatim=_classic(strategy))
    k1 = Member(ledger, "k1", settings, [topic])
    wait_until(lambda: _all_owned([k1], partitions), timeout=timeout, what="k1 alone")
    c1 = ConfluentMember(ledger, "c1", bootstrap, group, [topic], settings=_classic(strategy))
    k2 = Member(ledger, "k2", settings, [topic])
    wait_until(lambda: _all_owned([k1, c1, k2], partitions), timeout=timeout, what="k1, c1 and k2")
    k1.close()
    wait_until(lambda: _all_owned([c1, k2], partitions), timeout=timeout, what="c1 and k2 after k1 left")
    c2 = ConfluentMember(ledger, "c2", bootstrap, group, [topic], settings=_classic(strategy))
    running: list[Member | ConfluentMember] = [c1, k2, c2]
    wait_until(lambda: _all_owned(running, partitions), timeout=timeout, what="c1, k2 and c2")
    for member in (k1, k2):
        assert member.errors == [], member.errors
        unexpected = [
            e
            for e in member.commit_failures
            if e.args[0].code() not in refused_commits
            and not (e in member.closing_commit_failures and e.args[0].code() in _REFUSED_WHILE_REJOINING)
        ]
        assert unexpected == [], unexpected
    return running


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_mixed_classic_group(strategy: str, backend: str) -> None:
    with open_cluster(backend, initial_rebalance_delay_ms=200) as cluster:
        topic, group = f"mixed-{strategy}", f"mixed-{strategy}"
        cluster.create_topic(topic, 6)
        ledger = Ledger(cluster_committed(cluster, group))
        feeder = Feeder(cluster, topic)
        running = _mixed_group(cluster.bootstrap_servers, topic, group, strategy, ledger, 6, 60)
        assert stable_classic_group(cluster, group).protocol_name == strategy
        produced = feeder.stop()
        wait_until(lambda: ledger.has_all(produced), timeout=60, what="every record")
        for member in running:
            member.close()
        ledger.check(produced)


@pytest.fixture(scope="module")
def mock() -> Iterator[str]:
    """The bootstrap address of a librdkafka mock cluster with one broker."""
    handle = ck.Producer({"test.mock.num.brokers": 1, "log_level": 3})
    (broker,) = handle.list_topics(timeout=5).brokers.values()
    yield f"{broker.host}:{broker.port}"
    del handle


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_mixed_classic_group_on_librdkafkas_mock_cluster(mock: str, strategy: str) -> None:
    n = next(_names)
    topic, group = f"classic-mock-{n}", f"classic-mock-{n}"
    feeder = ProducerFeeder(mock, topic)  # auto-creates the topic with 4 partitions
    reader = CommittedReader(mock, group)
    running: list[Member | ConfluentMember] = []
    try:
        # librdkafka's members re-read a partition within one assignment now and then on its
        # mock cluster (its fetcher, not the group): tolerated for them alone, never for kconsumer.
        ledger = Ledger(reader, rereading_peers={f"c{i}" for i in range(10)})
        # The mock refuses commits while its group is joining (REBALANCE_IN_PROGRESS), where
        # Kafka accepts them until the join phase ends: an eager member's commit in
        # on_partitions_revoked fails there, whichever client it is (the ledger then allows
        # the re-reads that follow).
        refused = frozenset({ck.KafkaError.REBALANCE_IN_PROGRESS})
        running = _mixed_group(mock, topic, group, strategy, ledger, 4, 120, refused)
        produced = feeder.stop()
        wait_until(lambda: ledger.has_all(produced), timeout=60, what="every record")
    finally:
        feeder.stop()
        for member in running:
            member.close()
        reader.close()
    ledger.check(produced)


def test_rolling_a_kconsumer_group_from_classic_to_consumer_and_back(backend: str) -> None:
    with open_cluster(
        backend, initial_rebalance_delay_ms=200, heartbeat_interval_ms=200, session_timeout_ms=6000
    ) as cluster:
        topic = group = "kconsumer-rolling"
        cluster.create_topic(topic, 6)
        ledger = Ledger(cluster_committed(cluster, group))
        ledger.sample_group(cluster, group)
        feeder = Feeder(cluster, topic)
        bootstrap = cluster.bootstrap_servers
        restarts = itertools.count()

        def start(name: str, protocol: str) -> Member:
            verbatim = (
                _classic("cooperative-sticky") if protocol == "classic" else {"group.protocol": "consumer"}
            )
            return Member(
                ledger, f"{name}{next(restarts)}", config(bootstrap, group, verbatim=verbatim), [topic]
            )

        running = {name: start(name, "classic") for name in "abc"}
        wait_until(lambda: _all_owned(list(running.values()), 6), timeout=60, what="three classic members")
        for protocol, kind in (("consumer", "consumer"), ("classic", "classic")):
            for name in "abc":
                running.pop(name).close()
                running[name] = start(name, protocol)
                wait_until(
                    lambda: _all_owned(list(running.values()), 6),
                    timeout=60,
                    what=f"every partition owned after {name} moved to {protocol}",
                )
            if kind == "consumer":
                assert cluster.describe_group(group) is not None
            else:
                wait_until(
                    lambda: cluster.describe_classic_group(group) is not None,
                    timeout=30,
                    what="the group back to classic",
                )
        produced = feeder.stop()
        wait_until(lambda: ledger.has_all(produced), timeout=60, what="every record")
        for member in running.values():
            assert member.errors == [] and member.commit_failures == [], (
                member.errors,
                member.commit_failures,
            )
            member.close()
        ledger.check(produced)


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_static_members_back_without_a_rebalance_get_the_partitions_created_meanwhile(
    strategy: str, backend: str
) -> None:
    """Every static member restarts within the session timeout while the topic grows: each gets
    its stored assignment back without a rebalance (Kafka's rule), so nobody would ever assign the
    new partitions; the returning leader (JoinGroup v9 tells it that it leads) checks the group's
    assignment against the metadata and rebalances."""
    with open_cluster(backend, initial_rebalance_delay_ms=200) as cluster:
        topic = group = f"static-grow-{strategy}"
        cluster.create_topic(topic, 2)
        ledger = Ledger(cluster_committed(cluster, group))
        bootstrap = cluster.bootstrap_servers

        def start(instance: str) -> Member:
            settings = config(
                bootstrap, group, verbatim={**_classic(strategy), "group.instance.id": instance}
            )
            return Member(ledger, f"{instance}-{next(_names)}", settings, [topic])

        members = [start("i1"), start("i2")]
        wait_until(lambda: _all_owned(members, 2), timeout=60, what="two static members")
        for member in members:
            member.close()  # a static member sends no LeaveGroup: its place waits for it
        cluster.create_partitions(topic, 4)
        members = [start("i1"), start("i2")]
        wait_until(lambda: _all_owned(members, 4), timeout=60, what="the four partitions")
        for member in members:
            assert member.errors == [], member.errors
            member.close()


@pytest.mark.parametrize(
    ("strategy", "client"),
    [("range", "kconsumer"), ("cooperative-sticky", "kconsumer"), ("range", "confluent-kafka")],
)
def test_a_static_member_back_with_another_subscription_rebalances_the_group(
    strategy: str, client: str, backend: str
) -> None:
    """A static member restarts within the session timeout subscribed to another topic. The group
    stays Stable and hands it its stored assignment (Kafka's rule while the group's protocol stays
    the same), of the topic it left; kconsumer takes none of it and joins again, which rebalances
    the group: in the end it reads the topic it subscribes to, nothing else. confluent-kafka's
    consumer keeps the stored assignment, reading the topic it left (an intended difference,
    docs/parity.md; Kafka's Java consumer rejoins too)."""
    with open_cluster(backend, initial_rebalance_delay_ms=200) as cluster:
        group = f"static-resubscribed-{strategy}-{client}"
        for topic in ("left", "joined"):
            cluster.create_topic(topic, 4)
        ledger = Ledger(cluster_committed(cluster, group))
        feeders = [Feeder(cluster, topic) for topic in ("left", "joined")]
        bootstrap = cluster.bootstrap_servers
        # Long enough for the restart, short enough that the group empties soon after the test
        # (a static member leaves no LeaveGroup: the cluster's reset waits for its session).
        verbatim = {**_classic(strategy, session_timeout_ms=12_000), "group.instance.id": "s"}
        other = Member(ledger, "a", config(bootstrap, group, verbatim=_classic(strategy)), ["left", "joined"])
        static = Member(ledger, "s1", config(bootstrap, group, verbatim=verbatim), ["left"])
        wait_until(lambda: _all_owned([other, static], 8), timeout=60, what="a and s1 sharing")
        assert {t for t, _ in static.owned()} == {"left"}
        static.close()  # a static member sends no LeaveGroup: the group keeps its place
        back: Member | ConfluentMember
        if client == "kconsumer":
            back = Member(ledger, "s2", config(bootstrap, group, verbatim=verbatim), ["joined"])
            expected = {"joined"}
        else:
            back = ConfluentMember(ledger, "s2", bootstrap, group, ["joined"], settings=verbatim)
            expected = {"left"}
        wait_until(
            lambda: _all_owned([other, back], 8) and {t for t, _ in back.owned()} == expected,
            timeout=60,
            what=f"s2 back, reading {expected}",
            describe=lambda: f"a {sorted(other.owned())}, s2 {sorted(back.owned())}",
        )
        if client != "kconsumer":
            time.sleep(3)  # fifteen heartbeat intervals: it stays so
            assert {t for t, _ in back.owned()} == expected, back.owned()
        produced = {key: offsets for feeder in feeders for key, offsets in feeder.stop().items()}
        wait_until(lambda: ledger.has_all(produced), timeout=60, what="every record")
        for member in (other, back):
            assert member.errors == [], member.errors
            member.close()
        ledger.check(produced)
