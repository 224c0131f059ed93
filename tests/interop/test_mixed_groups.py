"""Mixed consumer groups: kconsumer, confluent-kafka (librdkafka), the Apache Kafka Java client
and franz-go, all with ``group.protocol=consumer``, sharing one group's partitions on the
reference cluster and on Apache Kafka, under the at-least-once ledger (no partition read by two
members at once, every record consumed, duplicates only inside the uncommitted window)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from backends import Cluster
from consumer_harness import ConfluentMember, Feeder, Ledger, Member, cluster_committed, config, wait_until
from peer_member import PeerMember

pytestmark = pytest.mark.timeout(300)

TOPIC = "mixed"
GROUP = "mixed-group"
PARTITIONS = 8


@pytest.fixture
def peers() -> Iterator[list[PeerMember]]:
    started: list[PeerMember] = []
    yield started
    for peer in started:
        peer.close()


def _balanced(cluster: Cluster, owners: list[Callable[[], set[tuple[str, int]]]]) -> bool:
    description = cluster.describe_group(GROUP)
    if description is None or description.state != "Stable" or len(description.members) != len(owners):
        return False
    shares = sorted(len(owned()) for owned in owners)
    return sum(shares) == PARTITIONS and shares[-1] - shares[0] <= 1


def test_four_implementations_share_a_group_and_hand_partitions_over(
    cluster: Cluster,
    members: Callable[..., Member],
    feeders: Callable[..., Feeder],
    peers: list[PeerMember],
    java: list[str],
    franz_go: list[str],
) -> None:
    cluster.create_topic(TOPIC, PARTITIONS)
    feeder = feeders(cluster, TOPIC, batch=1, every=0.05)
    # librdkafka's KIP-848 consumer re-reads a partition from its start now and then (against
    # Apache Kafka 4.4 too): tolerated for it alone (Ledger.rereading_peers), never for kconsumer.
    ledger = Ledger(cluster_committed(cluster, GROUP), rereading_peers={"confluent"})
    ledger.sample_group(cluster, GROUP)
    bootstrap = cluster.bootstrap_servers

    kconsumer = members(ledger, "kconsumer", config(bootstrap, GROUP), [TOPIC])
    confluent = ConfluentMember(ledger, "confluent", bootstrap, GROUP, [TOPIC])
    java_member = PeerMember(java, ledger, "java", bootstrap, GROUP, [TOPIC])
    peers.append(java_member)
    franz = PeerMember(franz_go, ledger, "franz-go", bootstrap, GROUP, [TOPIC])
    peers.append(franz)
    java_member.wait_ready()
    franz.wait_ready()
    everyone = [kconsumer.owned, confluent.owned, java_member.owned, franz.owned]
    wait_until(lambda: _balanced(cluster, everyone), 60, what="four members sharing 8 partitions")
    wait_until(lambda: all(owned() for owned in everyone) and franz.records and java_member.records, 30)

    java_member.close()  # leaves: its partitions move cooperatively
    wait_until(
        lambda: _balanced(cluster, [kconsumer.owned, confluent.owned, franz.owned]), 60, what="java left"
    )
    franz.crash()  # no leave: the coordinator notices at the session timeout
    wait_until(lambda: _balanced(cluster, [kconsumer.owned, confluent.owned]), 60, what="franz-go expired")
    confluent.close()
    wait_until(lambda: _balanced(cluster, [kconsumer.owned]), 60, what="confluent left")

    produced = feeder.stop()
    wait_until(lambda: ledger.has_all(produced), 60, what="every record consumed")
    ledger.stop_sampling()
    kconsumer.close()
    assert not java_member.errors and not franz.errors and not confluent.errors, (
        java_member.errors,
        franz.errors,
        confluent.errors,
    )
    ledger.check(produced)
