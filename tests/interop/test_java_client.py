"""The Apache Kafka Java client (kafka-clients 4.4) on both backends: a regex subscription
resolved by the broker, and the producer with its default settings (idempotence on).

Both failed on the reference cluster when the Java client was first pointed at it: the consumer
resolves its assigned topic ids with Metadata entries that carry the id and an *empty* name,
which the reference broker refused (INVALID_TOPIC_EXCEPTION); the idempotent producer needs
InitProducerId."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable

import pytest
from backends import Cluster
from consumer_harness import Feeder, Ledger, cluster_committed, wait_until
from peer_member import PeerMember

from kconsumer import SubscriptionPattern

pytestmark = pytest.mark.timeout(180)


def test_a_java_regex_subscription_gets_the_matching_topics(
    cluster: Cluster, feeders: Callable[..., Feeder], java: list[str]
) -> None:
    cluster.create_topic("orders-eu", 2)
    cluster.create_topic("orders-us", 2)
    cluster.create_topic("payments", 2)
    eu, us = feeders(cluster, "orders-eu", batch=1), feeders(cluster, "orders-us", batch=1)
    ledger = Ledger(cluster_committed(cluster, "regex-group"))
    member = PeerMember(
        java, ledger, "java", cluster.bootstrap_servers, "regex-group", SubscriptionPattern("orders-.*")
    )
    try:
        member.wait_ready()
        wanted = {("orders-eu", 0), ("orders-eu", 1), ("orders-us", 0), ("orders-us", 1)}
        wait_until(lambda: member.owned() == wanted, 60, what=f"the Java member to own {sorted(wanted)}")
        produced = {**eu.stop(), **us.stop()}
        wait_until(lambda: ledger.has_all(produced), 60, what="every orders-* record read by the Java member")
    finally:
        member.close()
    assert not member.errors, member.errors
    ledger.check(produced)


def test_the_java_producer_with_its_defaults_produces(cluster: Cluster, java: list[str]) -> None:
    """Its defaults make it idempotent: InitProducerId, then sequence-numbered batches."""
    cluster.create_topic("java-produced", 3)
    result = subprocess.run(
        [
            *java,
            "produce",
            "--bootstrap",
            cluster.bootstrap_servers,
            "--topic",
            "java-produced",
            "--count",
            "30",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    reports = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert result.returncode == 0 and reports[-1]["event"] == "done", (reports[-3:], result.stderr[-2000:])
    assert sum(high for _low, high in cluster.watermarks("java-produced")) == 30
