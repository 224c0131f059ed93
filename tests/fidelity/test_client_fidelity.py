"""Client-level fidelity: the same application scenario with a real client (kconsumer,
confluent-kafka, the Apache Kafka Java client) against Apache Kafka and against the reference
cluster, comparing what the application observes.

confluent-kafka runs the static-restart scenario only: in a rolling restart on Apache Kafka 4.4,
librdkafka 2.16's KIP-848 consumer was once seen reading a partition from offset 0 again within
one assignment (under a loaded machine), which the ledger rightly refuses; that is the peer's
behaviour on the real broker, not a difference between the servers.

Compared exactly: the final balance (partitions per member), how many partitions moved at each
step (stickiness), every record consumed (the at-least-once ledger holds on both), the committed
offsets at the end, and the errors surfaced. Compared within bounds: the time to full ownership
(the reference cluster may not be more than twice as slow as Kafka, plus 2 s; both figures are
printed). Callback *counts* are not compared: how many pieces an incremental assignment arrives
in depends on heartbeat timing on either server.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from backends import KAFKA, REFERENCE, Cluster, open_cluster
from consumer_harness import ConfluentMember, Feeder, Ledger, Member, cluster_committed, config, wait_until
from peer_member import PeerMember

from kconsumer import SubscriptionPattern
from peers.build import java_peer

pytestmark = [pytest.mark.timeout(300), pytest.mark.kafka]

CLIENTS = ("kconsumer", "confluent", "java")
Key = tuple[str, int]


@dataclass
class Run:
    """One client on one server: members it started, what it observed."""

    cluster: Cluster
    client: str
    group: str
    ledger: Ledger
    members: dict[str, Any] = field(default_factory=dict)
    observed: list[tuple[str, Any]] = field(default_factory=list)
    timings: list[tuple[str, float]] = field(default_factory=list)
    _feeders: list[Feeder] = field(default_factory=list)

    def start(
        self, name: str, topics: list[str] | SubscriptionPattern, instance_id: str | None = None
    ) -> Any:
        bootstrap = self.cluster.bootstrap_servers
        if self.client == "kconsumer":
            verbatim = {"group.instance.id": instance_id} if instance_id else None
            member: Any = Member(self.ledger, name, config(bootstrap, self.group, verbatim=verbatim), topics)
        elif self.client == "confluent":
            settings = {"group.instance.id": instance_id} if instance_id else None
            assert not isinstance(topics, SubscriptionPattern)
            member = ConfluentMember(self.ledger, name, bootstrap, self.group, topics, settings=settings)
        else:
            member = PeerMember(
                java_peer(), self.ledger, name, bootstrap, self.group, topics, instance_id=instance_id
            )
            member.wait_ready()
        self.members[name] = member
        return member

    def stop(self, name: str, crash: bool = False) -> None:
        member = self.members.pop(name)
        if crash:
            member.crash()
        else:
            member.close()

    def feed(self, topic: str) -> Feeder:
        feeder = Feeder(self.cluster, topic, batch=1, every=0.05)
        self._feeders.append(feeder)
        return feeder

    def owned(self) -> dict[str, set[Key]]:
        return {name: self.ledger.owned_by(name) for name in self.members}

    def settle(self, label: str, partitions: int, timeout: float = 60.0) -> None:
        """Wait until the live members own every partition, balanced; observe the balance and
        the partitions that moved since the previous step."""
        before = getattr(self, "_last", {})
        started = time.monotonic()

        def balanced() -> bool:
            description = self.cluster.describe_group(self.group)
            if description is None or len(description.members) != len(self.members):
                return False
            if any(m.state != "stable" for m in description.members.values()):
                return False
            shares = sorted(len(o) for o in self.owned().values())
            return sum(shares) == partitions and shares[-1] - shares[0] <= 1

        wait_until(balanced, timeout, what=f"{self.client}: {label}")
        self.timings.append((label, time.monotonic() - started))
        now = {key: name for name, keys in self.owned().items() for key in keys}
        moved = sum(1 for key, name in now.items() if key in before and before[key] != name)
        self._last = now
        self.observed.append(
            (label, {"balance": sorted(len(o) for o in self.owned().values()), "moved": moved})
        )

    def finish(self) -> None:
        produced: dict[Key, list[int]] = {}
        for feeder in self._feeders:
            produced.update(feeder.stop())
        wait_until(lambda: self.ledger.has_all(produced), 60, what=f"{self.client}: every record")
        for name in list(self.members):
            self.stop(name)
        self.ledger.check(produced)
        committed = self.cluster.committed(self.group)
        ends = {key: max(offsets) + 1 for key, offsets in produced.items()}
        self.observed.append(
            ("committed up to the end", all(committed.get(k, 0) >= e for k, e in ends.items()))
        )


Scenario = Callable[[Run], None]


def rolling_restart(run: Run) -> None:
    run.cluster.create_topic("t", 8)
    run.feed("t")
    for name in "abcd":
        run.start(name, ["t"])
    run.settle("four members", 8)
    for index, name in enumerate("abcd"):
        run.stop(name)
        run.settle(
            f"stop {index + 1}", 8
        )  # the newcomer joins once the others took over (deterministic moves)
        run.start(f"{name}2", ["t"])
        run.settle(f"restart {index + 1}", 8)


def member_crash(run: Run) -> None:
    run.cluster.create_topic("t", 6)
    run.feed("t")
    for name in "abc":
        run.start(name, ["t"])
    run.settle("three members", 6)
    run.stop("b", crash=True)
    run.settle("after the crash", 6)


def scale_out_and_in(run: Run) -> None:
    run.cluster.create_topic("t", 12)
    run.feed("t")
    run.start("m0", ["t"])
    run.settle("one member", 12)
    for i in range(1, 6):
        run.start(f"m{i}", ["t"])
    run.settle("six members", 12)
    for i in range(2, 6):
        run.stop(f"m{i}")
    run.settle("two members", 12)


def regex_topics_created_mid_run(run: Run) -> None:
    run.cluster.create_topic("orders-eu", 2)
    run.feed("orders-eu")
    run.start("a", SubscriptionPattern("orders-.*"))
    run.start("b", SubscriptionPattern("orders-.*"))
    run.settle("one matching topic", 2)
    run.cluster.create_topic("orders-us", 4)
    run.feed("orders-us")
    run.settle("a second matching topic", 6, timeout=90)


def static_members_restart(run: Run) -> None:
    run.cluster.create_topic("t", 6)
    run.feed("t")
    for name in "ab":
        run.start(name, ["t"], instance_id=f"static-{name}")
    run.settle("two static members", 6)
    run.stop("a")
    run.start("a2", ["t"], instance_id="static-a")
    run.settle("a restarted", 6)


CASES: list[tuple[str, Scenario, str]] = [
    ("rolling restart", rolling_restart, "kconsumer"),
    ("rolling restart", rolling_restart, "java"),
    ("member crash", member_crash, "kconsumer"),
    ("member crash", member_crash, "java"),
    ("scale 1 to 6 to 2", scale_out_and_in, "kconsumer"),
    ("scale 1 to 6 to 2", scale_out_and_in, "java"),
    ("regex over topics created mid-run", regex_topics_created_mid_run, "kconsumer"),
    ("regex over topics created mid-run", regex_topics_created_mid_run, "java"),
    ("static members restart", static_members_restart, "kconsumer"),
    ("static members restart", static_members_restart, "confluent"),
]


def _run(backend: str, scenario: Scenario, client: str) -> Run:
    with open_cluster(backend, session_timeout_ms=6000) as cluster:
        group = "client-fidelity"
        run = Run(cluster, client, group, Ledger(cluster_committed(cluster, group)))
        try:
            scenario(run)
            run.finish()
        finally:
            for name in list(run.members):
                run.stop(name)
            for feeder in run._feeders:
                feeder.stop()
        return run


@pytest.mark.parametrize(("name", "scenario", "client"), CASES, ids=[f"{c}-{n}" for n, _s, c in CASES])
def test_a_client_observes_the_same_on_both_servers(
    name: str, scenario: Scenario, client: str, request: pytest.FixtureRequest
) -> None:
    if client == "java":
        request.getfixturevalue("java")  # built, or skipped (failed under CI) saying why
    kafka = _run(KAFKA, scenario, client)
    reference = _run(REFERENCE, scenario, client)
    print(f"{client} / {name}: time to full ownership per step (Kafka, reference):")
    for (label, k), (_, r) in zip(kafka.timings, reference.timings, strict=True):
        print(f"  {label}: {k:.2f} s, {r:.2f} s")
    assert reference.observed == kafka.observed, (reference.observed, kafka.observed)
    for (label, k), (_, r) in zip(kafka.timings, reference.timings, strict=True):
        assert r <= 2 * k + 2.0, f"{label}: the reference cluster took {r:.1f} s, Kafka {k:.1f} s"
