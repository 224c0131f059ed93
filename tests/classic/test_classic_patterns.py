"""``^regex`` subscriptions with ``group.protocol=classic``, differentially: a kconsumer member and
a confluent-kafka (librdkafka) member, each alone in its own group on the same reference cluster,
subscribe with the same pattern; they must own the same partitions as topics matching it are
created and deleted. Then both in one group: every matching partition owned by exactly one of
them, every record consumed (the ledger)."""

from __future__ import annotations

import itertools
import re
from typing import Any

import confluent_kafka as ck
import pytest
from backends import open_cluster
from consumer_harness import ConfluentMember, Feeder, Ledger, Member, cluster_committed, config, wait_until

pytestmark = pytest.mark.timeout(240)

_names = itertools.count()

#: librdkafka's key, kconsumer's too: how often a pattern is matched against the cluster again.
REFRESH = {"topic.metadata.refresh.interval.ms": 500}


def _classic(strategy: str = "range") -> dict[str, Any]:
    return {
        "group.protocol": "classic",
        "partition.assignment.strategy": strategy,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 200,
        **REFRESH,
    }


def _topics(member: Member | ConfluentMember) -> dict[str, int]:
    counts: dict[str, int] = {}
    for topic, _partition in member.owned():
        counts[topic] = counts.get(topic, 0) + 1
    return counts


@pytest.mark.parametrize("pattern", ["^orders-.*", "^orders", "^(orders|refunds)-[0-9]+$"])
def test_kconsumer_matches_a_pattern_as_librdkafkas_classic_consumer(pattern: str, backend: str) -> None:
    with open_cluster(backend, initial_rebalance_delay_ms=100) as cluster:
        n = next(_names)
        for name, partitions in (("orders-1", 2), ("orders-x", 1), ("payments", 2), ("refunds-7", 3)):
            cluster.create_topic(name, partitions)
        ledger = Ledger(cluster_committed(cluster, f"pattern-k-{n}"))
        bootstrap = cluster.bootstrap_servers
        ours = Member(ledger, "k", config(bootstrap, f"pattern-k-{n}", verbatim=_classic()), [pattern])
        theirs = ConfluentMember(
            Ledger(cluster_committed(cluster, f"pattern-c-{n}")),
            "c",
            bootstrap,
            f"pattern-c-{n}",
            [pattern],
            settings=_classic(),
        )

        topics = {"orders-1": 2, "orders-x": 1, "payments": 2, "refunds-7": 3}

        def both_own_what_matches(what: str) -> None:
            # librdkafka matches anywhere in the name (regexec): Python's re.search does the same here.
            expected = {t: count for t, count in topics.items() if re.search(pattern, t)}
            wait_until(lambda: _topics(ours) == _topics(theirs) == expected, timeout=30, what=what)

        both_own_what_matches("the first assignment")
        for name, partitions in (("orders-2", 2), ("refunds-8", 1)):
            cluster.create_topic(name, partitions)
            topics[name] = partitions
        both_own_what_matches("the assignment after two topics were created")
        cluster.delete_topic("orders-1")
        del topics["orders-1"]
        both_own_what_matches("the assignment after a topic was deleted")
        for member in (ours, theirs):
            member.close()
        assert ours.errors == []
        # librdkafka also reports the deleted topic's partitions it was still starting (an
        # intended difference, docs/parity.md): nothing else.
        assert all(e.code() == ck.KafkaError.UNKNOWN_TOPIC_OR_PART for e in theirs.errors), theirs.errors


def test_kconsumer_and_librdkafka_share_a_pattern_subscription_in_one_group(backend: str) -> None:
    with open_cluster(backend, initial_rebalance_delay_ms=100) as cluster:
        group = f"pattern-mixed-{next(_names)}"
        cluster.create_topic("events-a", 3)
        cluster.create_topic("other", 2)
        ledger = Ledger(cluster_committed(cluster, group))
        feeder = Feeder(cluster, "events-a")
        bootstrap = cluster.bootstrap_servers
        settings = _classic("cooperative-sticky")
        ours = Member(ledger, "k", config(bootstrap, group, verbatim=settings), ["^events-"])
        theirs = ConfluentMember(ledger, "c", bootstrap, group, ["^events-"], settings=settings)
        members = (ours, theirs)

        def owned_by_one(partitions: int) -> bool:
            owned = [m.owned() for m in members]
            return all(owned) and sum(len(o) for o in owned) == partitions

        wait_until(lambda: owned_by_one(3), timeout=30, what="events-a shared")
        cluster.create_topic("events-b", 3)
        wait_until(lambda: owned_by_one(6), timeout=30, what="events-a and events-b shared")
        assert all(t.startswith("events-") for m in members for t, _p in m.owned())
        produced = feeder.stop()
        wait_until(lambda: ledger.has_all(produced), timeout=60, what="every record")
        for member in members:
            member.close()
        assert ours.errors == [] and theirs.errors == []
        ledger.check(produced)
