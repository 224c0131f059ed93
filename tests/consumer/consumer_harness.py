"""Helpers for the consumer's integration tests.

* `wait_until`: poll a condition with a deadline (never a fixed sleep as an assertion);
  `poll_until` / `read`: poll a consumer until a condition holds / until some records arrived.
* `Ledger`: shared by every member of a test. It follows partition ownership through the rebalance
  callbacks and checks, on every callback and every record, the group invariants:

  - a record is only received by a member that owns its partition at that moment;
  - no partition is consumed by two members at once (once another member consumed a partition,
    its previous holder never returns a record of it again, even before learning it lost it).
    Only a test that makes zombies on purpose (`Ledger(zombies=True)`: the coordinator removes a
    member while it cannot reach the coordinator, so no protocol can tell it sooner, see
    docs/simulation.md) lets a holder whose holding ends lost read until it hears;
  - a partition is assigned to a member while another still holds it only when that other one
    lost it (fenced, stale poll, crash), never when it is revoked cooperatively;
  - the coordinator never shows a partition owned by two members (`describe_group` samples);
  - every produced record is consumed at least once, and a record consumed twice has an offset at
    or above the group's committed offset of its partition at the time ownership moved (the
    uncommitted window); after a cooperative revocation that committed, nothing is consumed twice.

* `Member`: a kconsumer `Consumer` polling in its own thread, committing its processed offsets on
  revocation (and asynchronously every `commit_every` seconds), reporting to a `Ledger`.
* `ConfluentMember`: the same around confluent-kafka's own KIP-848 consumer (interop tests).
* `Feeder`: produces records to a topic's partitions in the background, remembering every offset.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

import confluent_kafka as ck
import pytest
from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition
from ledger import CommittedSource as CommittedSource  # re-exported: tests import them from here
from ledger import Interval as Interval
from ledger import Key, Ledger, position
from ledger import cluster_committed as cluster_committed
from waiting import wait_until

from kconsumer import Consumer, ConsumerRebalanceListener, SubscriptionPattern
from kconsumer.testing import ReferenceCluster

T = TypeVar("T")


def fast_cluster(session_timeout_ms: int = 1500, **options: Any) -> ReferenceCluster:
    """A reference cluster (not started) with group timers short enough for fast tests: heartbeat
    every 100 ms, session timeout 1.5 s, assignments computed at once (Kafka: 5 s, 45 s, 1 s)."""
    return ReferenceCluster(
        heartbeat_interval_ms=100,
        session_timeout_ms=session_timeout_ms,
        assignment_interval_ms=0,
        **options,
    )


def poll_until(
    consumer: Consumer,
    done: Callable[[], bool],
    timeout: float = 15.0,
    on_record: Callable[[Message], None] | None = None,
) -> list[Message]:
    """Poll `consumer` until `done()`; the records received meanwhile."""
    received: list[Message] = []

    def step() -> bool:
        message = consumer.poll(0.05)
        if message is not None and message.error() is None:
            received.append(message)
            if on_record is not None:
                on_record(message)
        return done()

    wait_until(step, timeout, interval=0)
    return received


def read(consumer: Consumer, count: int) -> list[Message]:
    """Poll until `count` records arrived; returns them."""
    received: list[Message] = []
    poll_until(consumer, lambda: len(received) >= count, on_record=received.append)
    return received


def config(
    bootstrap: str, group: str, verbatim: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """A kconsumer configuration for tests: earliest reset, commits made by the test's listener.
    `extra` keys are written with underscores for dots (``max_poll_interval_ms=1000``);
    `verbatim` keys are used as they are."""
    settings: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "log_level": 3,
        # Partitions join librdkafka's fetch session when its long poll ends: keep it short.
        "fetch.wait.max.ms": 100,
    }
    settings.update({key.replace("_", "."): value for key, value in extra.items()})
    settings.update(verbatim or {})
    return settings


# -- members -----------------------------------------------------------------------------------------


class _Listener(ConsumerRebalanceListener):
    def __init__(self, member: Member) -> None:
        self.member = member

    def on_partitions_assigned(self, partitions: list[TopicPartition]) -> None:
        member = self.member
        member.assigned_calls += 1
        keys = [(tp.topic, tp.partition) for tp in partitions]
        for key in keys:
            member.next_offsets.pop(key, None)
        member.ledger.assigned(member.name, keys)

    def on_partitions_revoked(self, partitions: list[TopicPartition]) -> None:
        member = self.member
        member.revoked_calls += 1
        keys = [(tp.topic, tp.partition) for tp in partitions]
        committed = member.commit_keys(keys) if member.commit_on_revoke else None
        for key in keys:
            member.next_offsets.pop(key, None)
        member.ledger.released(member.name, keys, "revoked", committed)

    def on_partitions_lost(self, partitions: list[TopicPartition]) -> None:
        member = self.member
        member.lost_calls += 1
        keys = [(tp.topic, tp.partition) for tp in partitions]
        member.lost.append(set(keys))
        for key in keys:
            member.next_offsets.pop(key, None)
        member.ledger.released(member.name, keys, "lost")


class Member:
    """A kconsumer Consumer polling in its own thread (see the module docstring).

    `close()` closes it from its thread (revocation callback and commit included); `crash()` stops
    it without leaving: the thread stops polling and the consumer's runtime is shut down, so it
    neither heartbeats nor leaves, as if the process died. `pause()` stops polling (a stuck
    application) until `resume()`.
    """

    def __init__(
        self,
        ledger: Ledger,
        name: str,
        settings: dict[str, Any],
        topics: Sequence[str] | SubscriptionPattern,
        *,
        commit_on_revoke: bool = True,
        commit_every: float | None = 0.2,
        batch: int | None = None,
    ) -> None:
        self.ledger = ledger
        self.name = name
        self.topics = topics
        self.commit_on_revoke = commit_on_revoke
        self.commit_every = commit_every
        #: Read with ``consume(batch)`` instead of ``poll()``.
        self.batch = batch
        self.consumer = Consumer({**settings, "client.id": name})
        self.errors: list[KafkaException] = []
        self.lost: list[set[Key]] = []
        self.assigned_calls = self.revoked_calls = self.lost_calls = 0
        self.commit_failures: list[BaseException] = []
        #: Those of `commit_failures` made while closing (on_revoke's commit of close()).
        self.closing_commit_failures: list[BaseException] = []
        #: Next offset to consume of each partition it consumed (what it commits).
        self.next_offsets: dict[Key, int] = {}
        self._stop = threading.Event()
        self._how = "close"
        self._pause = threading.Event()
        self._resubscribe: list[Sequence[str] | SubscriptionPattern] = []
        self.paused = threading.Event()
        self.stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    # -- control ----------------------------------------------------------------------------------

    def close(self, timeout: float = 30.0) -> None:
        self._finish("close", timeout)

    def crash(self, timeout: float = 30.0) -> None:
        self._finish("crash", timeout)

    def _finish(self, how: str, timeout: float) -> None:
        if self._thread.is_alive():
            self._how = how
            self._pause.clear()
            self._stop.set()
            self._thread.join(timeout)
            assert not self._thread.is_alive(), f"{self.name} did not {how} within {timeout} s"

    def resubscribe(self, topics: Sequence[str] | SubscriptionPattern) -> None:
        """Change the subscription (done by the member's thread at its next loop)."""
        self._resubscribe.append(topics)

    def pause(self) -> None:
        self._pause.set()
        wait_until(self.paused.is_set, 10, what=f"{self.name} to stop polling")

    def resume(self) -> None:
        self._pause.clear()

    def owned(self) -> set[Key]:
        return self.ledger.owned_by(self.name)

    # -- the thread ---------------------------------------------------------------------------------

    def commit_keys(self, keys: Iterable[Key]) -> dict[Key, int] | None:
        """Synchronously commit the processed offsets of `keys`; what was committed (None if the
        commit failed)."""
        offsets = {key: self.next_offsets[key] for key in keys if key in self.next_offsets}
        if not offsets:
            return {}
        try:
            self.consumer.commit(
                offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False
            )
        except KafkaException as exc:
            self.commit_failures.append(exc)
            if self._stop.is_set():
                self.closing_commit_failures.append(exc)
            return None
        return offsets

    def _run(self) -> None:
        consumer = self.consumer
        listener = _Listener(self)
        consumer.subscribe(self.topics, listener=listener)
        last_commit = time.monotonic()
        dirty = False
        while not self._stop.is_set():
            if self._resubscribe:
                self.topics = self._resubscribe.pop(0)
                consumer.subscribe(self.topics, listener=listener)
            if self._pause.is_set():
                self.paused.set()
                time.sleep(0.01)
                continue
            self.paused.clear()
            try:
                if self.batch is None:
                    message = consumer.poll(0.05)
                    messages = [] if message is None else [message]
                else:
                    messages = consumer.consume(self.batch, 0.05)
            except KafkaException as exc:
                self.errors.append(exc)
                continue
            for message in messages:
                if message.error() is not None:
                    self.errors.append(KafkaException(message.error()))
                else:
                    self.ledger.received(self.name, message)
                    key, offset = position(message)
                    self.next_offsets[key] = offset + 1
                    dirty = True
            if self.commit_every is not None and dirty and time.monotonic() - last_commit > self.commit_every:
                last_commit, dirty = time.monotonic(), False
                try:
                    consumer.commit(asynchronous=True)
                except KafkaException as exc:
                    self.commit_failures.append(exc)
        if self._how == "crash":
            self.ledger.crashed(self.name)
            crash(consumer)
        else:
            try:
                consumer.close()
            except KafkaException as exc:
                self.errors.append(exc)
        self.stopped.set()


def crash(consumer: Consumer) -> None:
    """Stop `consumer` as a dying process would: no leave heartbeat, no commit, no callback."""
    consumer.engine.release()  # what close() does after leaving; here without leaving


class ConfluentMember:
    """confluent-kafka's own consumer (``group.protocol=consumer`` unless `settings` say
    otherwise) polling in its own thread, reporting to a `Ledger` like `Member` (commits on
    revocation and every `commit_every` s)."""

    def __init__(
        self,
        ledger: Ledger,
        name: str,
        bootstrap: str,
        group: str,
        topics: Sequence[str],
        *,
        commit_every: float | None = 0.2,
        settings: dict[str, Any] | None = None,
        debug_tail: int = 0,
    ) -> None:
        """`settings` are added to (or replace) the consumer's configuration, e.g. a classic
        member: ``{"group.protocol": "classic", "partition.assignment.strategy": "range"}``.
        `debug_tail` > 0 turns on librdkafka's group debug log and keeps its last lines, and
        the lines before each error (`log_tail()`), for a failure message to say what the
        member saw."""
        self.ledger = ledger
        self._log: deque[str] = deque(maxlen=max(debug_tail, 1))
        debugging: dict[str, Any] = {"debug": "cgrp,consumer", "log_level": 7} if debug_tail else {}
        self.name = name
        self.topics = list(topics)
        self.commit_every = commit_every
        self.consumer = ck.Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "group.protocol": "consumer",
                "client.id": name,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "log_level": 3,
                **debugging,
                **(settings or {}),
            },
            **({"logger": _LogTail(self._log)} if debug_tail else {}),
        )
        self.errors: list[Any] = []
        self._logs_at_errors: list[str] = []
        self.rejoin_signals: list[Any] = []
        self.next_offsets: dict[Key, int] = {}
        self._stop = threading.Event()
        self.stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def owned(self) -> set[Key]:
        return self.ledger.owned_by(self.name)

    def log_tail(self) -> str:
        """librdkafka's log (only with `debug_tail`): the last lines before each error, then
        the last lines now."""
        return "\n".join([*self._logs_at_errors, "-- now:", *self._log])

    def _failed(self, error: Any) -> None:
        self.errors.append(error)
        self._logs_at_errors.append(f"-- before {error}:\n" + "\n".join(self._log))

    def close(self, timeout: float = 30.0) -> None:
        self._stop.set()
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"{self.name} did not close within {timeout} s"

    def _assigned(self, consumer: ck.Consumer, partitions: list[TopicPartition]) -> None:
        self.ledger.assigned(self.name, [(tp.topic, tp.partition) for tp in partitions])

    def _revoked(self, consumer: ck.Consumer, partitions: list[TopicPartition]) -> None:
        keys = [(tp.topic, tp.partition) for tp in partitions]
        offsets = {key: self.next_offsets[key] for key in keys if key in self.next_offsets}
        committed: dict[Key, int] | None = offsets
        if offsets:
            try:
                consumer.commit(
                    offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()],
                    asynchronous=False,
                )
            except KafkaException as exc:
                self._failed(exc)
                committed = None
        self.ledger.released(self.name, keys, "revoked", committed)

    def _lost(self, consumer: ck.Consumer, partitions: list[TopicPartition]) -> None:
        self.ledger.released(self.name, [(tp.topic, tp.partition) for tp in partitions], "lost")

    def _error(self, error: Any) -> None:
        """A classic member whose JoinGroup was cut short by REBALANCE_IN_PROGRESS is told to join
        again (Apache Kafka answers a pending JoinGroup so when the group converts to the consumer
        protocol); librdkafka reports it as a consumer error and rejoins. It is kept apart from
        `errors`, which a test expects to stay empty."""
        if error.code() == KafkaError.REBALANCE_IN_PROGRESS:
            self.rejoin_signals.append(error)
        else:
            self._failed(error)

    def _run(self) -> None:
        consumer = self.consumer
        consumer.subscribe(self.topics, on_assign=self._assigned, on_revoke=self._revoked, on_lost=self._lost)
        last_commit = time.monotonic()
        dirty = False
        while not self._stop.is_set():
            message = consumer.poll(0.05)
            if message is not None:
                if message.error() is not None:
                    self._error(message.error())
                else:
                    self.ledger.received(self.name, message)
                    key, offset = position(message)
                    self.next_offsets[key] = offset + 1
                    dirty = True
            if self.commit_every is not None and dirty and time.monotonic() - last_commit > self.commit_every:
                last_commit, dirty = time.monotonic(), False
                try:
                    consumer.commit(asynchronous=True)
                except KafkaException as exc:
                    self._failed(exc)
        consumer.close()
        self.stopped.set()


class _LogTail:
    """A logger for librdkafka (confluent-kafka calls its `log`) keeping the last lines."""

    def __init__(self, lines: deque[str]) -> None:
        self.lines = lines

    def log(self, level: int, message: str, *args: Any) -> None:
        self.lines.append(f"{time.monotonic():.3f} {message % args if args else message}")


# -- producing -----------------------------------------------------------------------------------------


class Feeder:
    """Appends `batch` records to every partition of `topic` every `every` seconds, in the
    background, until `stop()`; `produced` holds every offset written, by partition. The partition
    count is read again each round, so partitions added later are fed too."""

    def __init__(self, cluster: ReferenceCluster, topic: str, *, batch: int = 2, every: float = 0.02) -> None:
        self.cluster = cluster
        self.topic = topic
        self.batch = batch
        self.every = every
        self.produced: dict[Key, list[int]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._counter = 0
        #: What stopped the feeding thread early, raised again by `stop()`.
        self.failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"feeder-{topic}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.every):
                self.produce_round()
        except BaseException as exc:
            self.failure = exc
            raise

    def produce_round(self) -> None:
        partitions = self.cluster.topics().get(self.topic, 0)
        for partition in range(partitions):
            values = [f"{self.topic}-{partition}-{self._counter + i}" for i in range(self.batch)]
            self._counter += self.batch
            offsets = self.cluster.produce(self.topic, values, partition=partition)
            with self._lock:
                self.produced.setdefault((self.topic, partition), []).extend(offsets)

    def total(self) -> int:
        with self._lock:
            return sum(len(v) for v in self.produced.values())

    def stop(self) -> dict[Key, list[int]]:
        self._stop.set()
        self._thread.join(10)
        if self.failure is not None:
            raise AssertionError(f"the feeder of {self.topic!r} stopped early") from self.failure
        with self._lock:
            return {key: list(offsets) for key, offsets in self.produced.items()}


class ProducerFeeder:
    """Produces, through confluent-kafka, `per_round` records to each of the `partitions` of `topic`
    every `every` s in the background (or on demand with `produce_round`); `produced` holds the
    acknowledged offsets. The first round is produced at once (creating an auto-created topic)."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        *,
        partitions: int = 4,
        per_round: int = 2,
        every: float | None = 0.05,
    ) -> None:
        self.topic = topic
        self.partitions = partitions
        self.per_round = per_round
        self.producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "log_level": 3})
        self.produced: dict[Key, list[int]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.produce_round()
        if every is not None:
            self._thread = threading.Thread(target=self._run, args=(every,), daemon=True)
            self._thread.start()

    def _delivered(self, error: Any, message: Any) -> None:
        assert error is None, error
        with self._lock:
            self.produced.setdefault((message.topic(), message.partition()), []).append(message.offset())

    def produce_round(self) -> None:
        for partition in range(self.partitions):
            for i in range(self.per_round):
                self.producer.produce(
                    self.topic,
                    value=f"{partition}-{i}".encode(),
                    partition=partition,
                    on_delivery=self._delivered,
                )
        assert self.producer.flush(10) == 0

    def _run(self, every: float) -> None:
        while not self._stop.wait(every):
            self.produce_round()

    def stop(self) -> dict[Key, list[int]]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        with self._lock:
            return {key: sorted(offsets) for key, offsets in self.produced.items()}


class CommittedReader:
    """The group's committed offsets, read through a confluent-kafka handle that never joins."""

    def __init__(self, bootstrap: str, group: str) -> None:
        self.handle = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 3})
        self._lock = threading.Lock()

    def __call__(self, keys: Sequence[Key]) -> dict[Key, int | None]:
        with self._lock:
            found = self.handle.committed([TopicPartition(t, p) for t, p in keys], timeout=10)
        return {(tp.topic, tp.partition): tp.offset if tp.offset >= 0 else None for tp in found}

    def close(self) -> None:
        self.handle.close()


# -- fixtures shared by the test directories that use this harness --------------------------------


@pytest.fixture
def members() -> Iterator[Callable[..., Member]]:
    """`members(ledger, name, settings, topics, ...)` starts a `Member`; all are closed at teardown."""
    started: list[Member] = []

    def start(*args: Any, **kwargs: Any) -> Member:
        member = Member(*args, **kwargs)
        started.append(member)
        return member

    yield start
    for member in started:
        member.close()


@pytest.fixture
def feeders() -> Iterator[Callable[..., Feeder]]:
    """`feeders(cluster, topic, ...)` starts a `Feeder`; all are stopped at teardown."""
    started: list[Feeder] = []

    def start(*args: Any, **kwargs: Any) -> Feeder:
        feeder = Feeder(*args, **kwargs)
        started.append(feeder)
        return feeder

    yield start
    for feeder in started:
        feeder.stop()
