"""Rolling a group between the classic and the consumer protocol, with peers nobody here wrote:
three confluent-kafka classic members consume while they are restarted one by one with
``group.protocol=consumer`` (the group converts online when the first one comes back), then rolled
back to classic (the group converts back when the last consumer-protocol member leaves). Records
flow the whole time; the ledger checks that no partition is read by two members at once, that
nothing is lost, and that offsets committed under one protocol carry over to the other. Done with
dynamic members and with static members (``group.instance.id``).

The classic members use librdkafka's ``range`` assignor: its leader sends assignments without
user data. librdkafka's ``cooperative-sticky`` leader copies each member's subscription user data
(its previous assignment) into that member's assignment, and Apache Kafka 4.x refuses to convert
a group whose assignments carry user data (the consumer protocol has no field for it). So a
cooperative-sticky group converts only while its members have not rebalanced since they started;
the last test holds that refusal on both clusters (docs/classic-protocol.md, "User data in an
assignment")."""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import Any

import pytest
from backends import Cluster, open_cluster
from confluent_kafka import KafkaError
from consumer_harness import ConfluentMember, Feeder, Ledger, cluster_committed, wait_until

TOPIC = "rolling"
PARTITIONS = 6
NAMES = ("a", "b", "c")


def _settings(protocol: str, name: str, static: bool, assignor: str = "range") -> dict[str, Any]:
    settings: dict[str, Any] = {"group.protocol": protocol}
    if protocol == "classic":
        settings.update(
            {
                "partition.assignment.strategy": assignor,
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 200,
            }
        )
    if static:
        settings["group.instance.id"] = f"instance-{name}"
    return settings


def _cluster(backend: str) -> AbstractContextManager[Cluster]:
    """A cluster whose classic groups rebalance quickly (the members' heartbeats are 200 ms)."""
    return open_cluster(
        backend, initial_rebalance_delay_ms=200, heartbeat_interval_ms=200, session_timeout_ms=6000
    )


def _all_owned(members: Iterable[ConfluentMember]) -> bool:
    """Every partition owned by one of `members`, and each of them owning some."""
    owned = [m.owned() for m in members]
    return sum(len(o) for o in owned) == PARTITIONS and all(owned)


def _group_kind(cluster: Cluster, group: str) -> str:
    if cluster.describe_classic_group(group) is not None:
        return "classic"
    return "consumer" if cluster.describe_group(group) is not None else "none"


@pytest.mark.parametrize("static", [False, True], ids=["dynamic", "static"])
def test_rolling_upgrade_to_the_consumer_protocol_and_back(static: bool, backend: str) -> None:
    with _cluster(backend) as cluster:
        cluster.create_topic(TOPIC, PARTITIONS)
        group = f"rolling-{'static' if static else 'dynamic'}"
        ledger = Ledger(cluster_committed(cluster, group))
        ledger.sample_group(cluster, group)  # consumer phases: never two owners in the coordinator
        feeder = Feeder(cluster, TOPIC)
        bootstrap = cluster.bootstrap_servers
        generation = {name: 0 for name in NAMES}

        def start(name: str, protocol: str) -> ConfluentMember:
            generation[name] += 1
            label = f"{name}{generation[name]}"
            settings = _settings(protocol, name, static)
            return ConfluentMember(ledger, label, bootstrap, group, [TOPIC], settings=settings)

        def all_owned() -> bool:
            return _all_owned(running.values())

        def roll(to: str) -> None:
            for name in NAMES:
                running.pop(name).close()
                running[name] = start(name, to)
                wait_until(all_owned, timeout=60, what=f"every partition owned after {name} moved to {to}")
                assert not any(m.errors for m in running.values()), {n: m.errors for n, m in running.items()}

        running = {name: start(name, "classic") for name in NAMES}
        wait_until(all_owned, timeout=60, what="three classic members consuming")
        assert _group_kind(cluster, group) == "classic"

        roll("consumer")
        assert _group_kind(cluster, group) == "consumer"
        description = cluster.describe_group(group)
        assert description is not None and len(description.members) == 3

        roll("classic")
        wait_until(
            lambda: _group_kind(cluster, group) == "classic", timeout=30, what="the group back to classic"
        )

        produced = feeder.stop()
        wait_until(lambda: ledger.has_all(produced), timeout=60, what="every record")
        for member in running.values():
            member.close()
        ledger.check(produced)
        committed = cluster.committed(group)
        assert sum(committed.values()) > 0 and all(
            committed.get((TOPIC, p), 0) <= len(produced[(TOPIC, p)]) for p in range(PARTITIONS)
        ), committed


def test_a_cooperative_sticky_group_that_rebalanced_is_not_upgraded(backend: str) -> None:
    """Two classic cooperative-sticky members, then a third: from the second rebalance on, the
    leader's assignments carry the members' previous assignments as user data. A consumer-protocol
    member is then refused for good (GROUP_ID_NOT_FOUND on its join, which librdkafka, like the
    Java consumer and kconsumer, treats as fatal), the group stays classic and its members read on
    without a loss."""
    with _cluster(backend) as cluster:
        cluster.create_topic(TOPIC, PARTITIONS)
        group = "rolling-sticky"
        ledger = Ledger(cluster_committed(cluster, group))
        feeder = Feeder(cluster, TOPIC)
        bootstrap = cluster.bootstrap_servers

        def classic(name: str) -> ConfluentMember:
            settings = _settings("classic", name, False, "cooperative-sticky")
            return ConfluentMember(ledger, name, bootstrap, group, [TOPIC], settings=settings)

        members = [classic("b1"), classic("c1")]

        def all_owned() -> bool:
            return _all_owned(members)

        wait_until(all_owned, timeout=60, what="two classic members consuming")
        members.append(classic("a1"))
        wait_until(all_owned, timeout=60, what="the third classic member consuming")

        newcomer = ConfluentMember(
            ledger, "n1", bootstrap, group, [TOPIC], settings={"group.protocol": "consumer"}
        )
        wait_until(lambda: newcomer.errors, timeout=30, what="the consumer-protocol member refused")
        error = newcomer.errors[0]
        assert error.code() == KafkaError._FATAL and "group id does not exist" in error.str().lower(), error
        newcomer.close()
        assert not newcomer.owned()
        assert _group_kind(cluster, group) == "classic"
        assert not any(m.errors for m in members), {m.name: m.errors for m in members}

        produced = feeder.stop()
        wait_until(lambda: ledger.has_all(produced), timeout=60, what="every record")
        for member in members:
            member.close()
        ledger.check(produced)
