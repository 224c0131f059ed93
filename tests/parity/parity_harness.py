"""Running one scenario with confluent-kafka's consumer and with kconsumer's, and comparing what a
user observes.

A scenario is a function ``scenario(run) -> observations`` where `run` (a `Run`) makes consumers of
one implementation on the shared reference cluster, with topics and groups of its own. The two
observation dicts must be equal, except for the keys `INTENDED_DIFFERENCES` names for that
scenario: the one list of deliberate differences, each with its reason (docs/parity.md explains
them for users).
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import confluent_kafka

from kconsumer import Consumer
from kconsumer.testing import ReferenceCluster

#: (scenario, observation key) -> why kconsumer deliberately differs there.
_SEEK_REASON = (
    "with enable.auto.offset.store=true librdkafka commits the offset after the last record it "
    "handed the application, and a seek does not change it (rd_kafka_toppar_seek resets only the "
    "application position): after seeking back from 4 to 1 confluent-kafka commits 4, marking "
    "records 1-3 done although the application chose to read them again, and then refuses to "
    "commit 2 (_NO_OFFSET: not ahead of 4). kconsumer commits the position, as Kafka's Java "
    "consumer does: nothing right after the seek (the position is unknown until a record is "
    "read), then 2. A store_offsets() offset is kept across a seek by both (the same "
    "observations with enable.auto.offset.store=false)"
)

INTENDED_DIFFERENCES: dict[tuple[str, str], str] = {
    ("seek keeps the stored offset", "auto_store=True commit after seek"): _SEEK_REASON,
    ("seek keeps the stored offset", "auto_store=True committed after seek"): _SEEK_REASON,
    ("seek keeps the stored offset", "auto_store=True commit after reading"): _SEEK_REASON,
    ("seek keeps the stored offset", "auto_store=True committed after reading"): _SEEK_REASON,
    ("broker without KIP-848", "polls"): (
        "confluent-kafka's KIP-848 consumer retries a broker without ConsumerGroupHeartbeat forever "
        "and tells the application nothing (only its debug log says 'ConsumerGroupHeartbeatRequest "
        "not supported by broker'); kconsumer fails at the first poll with one fatal error naming "
        "the cause and the fix, as Kafka's Java consumer throws UnsupportedVersionException"
    ),
    ("assignment inside on_revoke", "while subscribed"): (
        "confluent-kafka applies incremental_assign()/incremental_unassign() of a subscribed "
        "consumer outside the rebalance callbacks to librdkafka's fetch assignment, so it can fetch a "
        "partition the group gave another member, or stop one the group still counts as its own; "
        "kconsumer refuses them (_STATE) outside on_assign/on_revoke/on_lost, as Kafka's Java consumer "
        "refuses assign() while subscribed (IllegalStateException); pause()/resume() and seek() do "
        "what those calls were used for without breaking the group's exclusive ownership"
    ),
    ("seek in on_assign", "seek"): (
        "confluent-kafka refuses seek() inside on_assign (_UNKNOWN_PARTITION: the partition is "
        "assigned after the callback); kconsumer starts the partition there, as Kafka's Java "
        "consumer allows seek() in onPartitionsAssigned and as incremental_assign() with an offset does"
    ),
    ("seek in on_assign", "first offsets"): "follows from the seek() difference above",
    ("auto.offset.reset=error", "seek"): (
        "confluent-kafka refuses seek() on a partition whose reset failed (_STATE) and offers no "
        "way to choose its start; kconsumer starts it where seek() says, which is what the "
        "_AUTO_OFFSET_RESET event asks the application to decide"
    ),
    ("auto.offset.reset=error", "first offset after seek"): "follows from the seek() difference above",
    ("consume fewer than asked", "returned before the timeout"): (
        "confluent-kafka's consume(n, timeout) waits for n records or the timeout; kconsumer's returns "
        "as soon as records are there (within its 50 ms slice): the same records, lower latency, and a "
        "loop of consume(500, 1.0) never sits on records it already has"
    ),
    ("fatal error with partitions", "callbacks after the failure"): (
        "confluent-kafka's KIP-848 consumer leaves a failed member's partitions assigned and calls "
        "no callback; kconsumer hands them to on_lost before the _FATAL event, as Kafka's Java "
        "consumer calls onPartitionsLost when its member turns fatal, so the application can drop "
        "what it holds per partition (the consumer cannot read them any more)"
    ),
    ("callback exceptions", "records afterwards"): (
        "confluent-kafka drops the record a poll() fetched when a callback of the same poll raised "
        "(its position has moved past it, so the consumer never returns it): under load it reads 2 "
        "of the 3 records; kconsumer keeps it for the next poll and reads all 3 (the scenario "
        "checks that)"
    ),
    ("sasl wrong password", "raised from poll"): (
        "confluent-kafka only logs a failed SASL authentication and hands it to error_cb (an "
        "application without error_cb never hears of it, while its consumer retries forever); "
        "kconsumer also raises it from poll() as a non-fatal _AUTHENTICATION KafkaException (at most "
        "once per failed retry, backing off), as Kafka's Java consumer throws AuthenticationException "
        "from poll(); it keeps retrying and picks up set_sasl_credentials"
    ),
}

IMPLEMENTATIONS = ("confluent", "kconsumer")
#: The group protocols every scenario runs with (both implementations use the same one).
PROTOCOLS = ("consumer", "classic")
#: What a classic member is given in the scenarios: short timers on the fast cluster.
CLASSIC_SETTINGS: dict[str, Any] = {
    "group.protocol": "classic",
    # cooperative, as the consumer protocol is (incremental_assign in on_assign, ...)
    "partition.assignment.strategy": "cooperative-sticky",
    "session.timeout.ms": 6000,
    "heartbeat.interval.ms": 200,
}
_names = itertools.count()


@dataclass
class Run:
    """One implementation's run of a scenario on the shared cluster."""

    implementation: str
    cluster: ReferenceCluster
    protocol: str = "consumer"
    made: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.suffix = f"{self.implementation}-{next(_names)}"

    def topic(self, base: str, partitions: int, records: int = 0) -> str:
        """A fresh topic with `records` small records in each partition."""
        name = f"{base}-{self.suffix}"
        self.cluster.create_topic(name, partitions)
        for partition in range(partitions):
            if records:
                self.cluster.produce(name, [b"v%d" % i for i in range(records)], partition=partition)
        return name

    def group(self, base: str) -> str:
        return f"{base}-{self.suffix}"

    def consumer(self, group: str, **settings: Any) -> Any:
        """A consumer of this implementation: earliest reset, no auto-commit unless `settings`
        (dots written as underscores, except
        the ``on_*`` and ``*_cb`` callbacks) say otherwise."""
        conf: dict[str, Any] = {
            "bootstrap.servers": self.cluster.bootstrap_servers,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
        }
        conf.update(CLASSIC_SETTINGS if self.protocol == "classic" else {"group.protocol": "consumer"})
        conf.update(
            {
                key if key.startswith("on_") or key.endswith("_cb") else key.replace("_", "."): value
                for key, value in settings.items()
            }
        )
        if self.implementation == "confluent":
            made: Any = confluent_kafka.Consumer(conf)
        else:
            made = Consumer(conf)
        self.made.append(made)
        return made

    def close_all(self) -> None:
        for consumer in self.made:
            with contextlib.suppress(Exception):  # already closed, or broken on purpose
                consumer.close()


@contextmanager
def run_of(implementation: str, cluster: ReferenceCluster, protocol: str = "consumer") -> Iterator[Run]:
    run = Run(implementation, cluster, protocol)
    try:
        yield run
    finally:
        run.close_all()


def compare(name: str, scenario: Callable[[Run], dict[str, Any]], cluster: ReferenceCluster) -> None:
    """Run `scenario` with both implementations and assert the observations agree (with the
    group protocol the cluster fixture was parametrized with, `cluster.parity_protocol`)."""
    protocol = getattr(cluster, "parity_protocol", "consumer")
    seen: dict[str, dict[str, Any]] = {}
    for implementation in IMPLEMENTATIONS:
        with run_of(implementation, cluster, protocol) as run:
            seen[implementation] = scenario(run)
    theirs, ours = seen["confluent"], seen["kconsumer"]
    assert set(theirs) == set(ours), (theirs, ours)
    differences = {
        key: (theirs[key], ours[key])
        for key in theirs
        if theirs[key] != ours[key] and (name, key) not in INTENDED_DIFFERENCES
    }
    assert not differences, f"{name}: confluent-kafka vs kconsumer differ: {differences}"


def read(consumer: Any, count: int, timeout: float = 20.0) -> list[Any]:
    """Poll until `count` records (errors are not records) or fail after `timeout` s."""
    deadline = time.monotonic() + timeout
    got: list[Any] = []
    while len(got) < count:
        assert time.monotonic() < deadline, f"read {len(got)} of {count} records"
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            got.append(message)
    return got


def drain(consumer: Any, seconds: float) -> list[Any]:
    """Poll for `seconds`, returning the records received."""
    deadline = time.monotonic() + seconds
    got: list[Any] = []
    while time.monotonic() < deadline:
        message = consumer.poll(0.05)
        if message is not None and message.error() is None:
            got.append(message)
    return got
