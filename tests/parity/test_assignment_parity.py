"""Choosing start offsets inside on_assign, and the assignment calls around rebalances, as
confluent-kafka's KIP-848 consumer allows them (see parity_harness)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition
from parity_harness import Run, compare, drain, read

from kconsumer.testing import ReferenceCluster


def _first_offsets(consumer: Any, count: int) -> dict[int, int]:
    first: dict[int, int] = {}
    for message in read(consumer, count):
        first.setdefault(message.partition(), message.offset())
    return first


def test_incremental_assign_in_on_assign_chooses_start_offsets(cluster: ReferenceCluster) -> None:
    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("start-at", 2, records=10), run.group("start-at")
        seeder = run.consumer(group)
        seeder.subscribe([topic])
        read(seeder, 20)
        seeder.commit(offsets=[TopicPartition(topic, 0, 8), TopicPartition(topic, 1, 8)], asynchronous=False)
        seeder.close()

        consumer = run.consumer(group)

        def on_assign(c: Any, partitions: list[TopicPartition]) -> None:
            c.incremental_assign(
                [
                    TopicPartition(tp.topic, tp.partition, 4 if tp.partition == 0 else OFFSET_BEGINNING)
                    for tp in partitions
                ]
            )

        consumer.subscribe([topic], on_assign=on_assign)
        first = _first_offsets(consumer, 6 + 10)
        return {"first offsets": sorted(first.items())}

    compare("incremental_assign in on_assign", scenario, cluster)


def test_seek_in_on_assign(cluster: ReferenceCluster) -> None:
    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("seek-assign", 1, records=10), run.group("seek-assign")
        consumer = run.consumer(group)
        outcome: list[Any] = []

        def on_assign(c: Any, partitions: list[TopicPartition]) -> None:
            try:
                c.seek(TopicPartition(topic, 0, 7))
                outcome.append("seek accepted")
            except KafkaException as exc:
                outcome.append(("seek refused", exc.args[0].code()))

        consumer.subscribe([topic], on_assign=on_assign)
        first = _first_offsets(consumer, 1)
        return {"seek": outcome, "first offsets": sorted(first.items())}

    compare("seek in on_assign", scenario, cluster)


def test_manual_assignment_without_subscribing(cluster: ReferenceCluster) -> None:
    """assign()/incremental_assign()/unassign() without a subscription: the consumer fetches the
    partitions it names (OFFSET_INVALID: from the committed offset), commits without joining the
    group, and committed() reads the commits back."""

    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("manual", 3, records=10), run.group("manual")
        seeder = run.consumer(group)
        seeder.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        read(seeder, 2)
        seeder.commit(offsets=[TopicPartition(topic, 0, 6)], asynchronous=False)
        seeder.close()

        reports: list[Any] = []

        def on_commit(error: Any, partitions: list[TopicPartition]) -> None:
            reports.append((error, [(tp.partition, tp.offset) for tp in partitions]))

        consumer = run.consumer(group, on_commit=on_commit)
        consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1, 3)])
        seen: dict[str, Any] = {"assignment": [(tp.partition) for tp in consumer.assignment()]}
        seen["first offsets"] = sorted(_first_offsets(consumer, 4 + 7).items())
        consumer.incremental_assign([TopicPartition(topic, 2, 8)])
        seen["after incremental_assign"] = sorted(_first_offsets(consumer, 2).items())
        done = consumer.commit(asynchronous=False)
        seen["commit"] = sorted((tp.partition, tp.offset) for tp in done or [])
        assert consumer.commit(offsets=[TopicPartition(topic, 0, 9)], asynchronous=True) is None
        deadline = time.monotonic() + 10
        while not reports and time.monotonic() < deadline:
            consumer.poll(0.05)
        seen["on_commit"] = reports
        found = consumer.committed([TopicPartition(topic, p) for p in range(3)], timeout=10)
        seen["committed"] = [(tp.partition, tp.offset) for tp in found]
        consumer.incremental_unassign([TopicPartition(topic, 1)])
        seen["after incremental_unassign"] = [tp.partition for tp in consumer.assignment()]
        consumer.unassign()
        seen["after unassign"] = consumer.assignment()
        return seen

    compare("manual assignment", scenario, cluster)


def test_pause_and_resume(cluster: ReferenceCluster) -> None:
    """A paused partition delivers nothing (even records produced meanwhile); after resume it
    delivers from where it stopped; the other partition flows throughout."""

    def scenario(run: Run) -> dict[str, Any]:
        topic = run.topic("paused", 2)
        cluster.produce(topic, [b"one-%d" % i for i in range(3)], partition=1)
        consumer = run.consumer(run.group("paused"))
        consumer.subscribe([topic])
        first = read(consumer, 3)
        consumer.pause([TopicPartition(topic, 0)])
        cluster.produce(topic, [b"zero-%d" % i for i in range(4)], partition=0)
        cluster.produce(topic, [b"one-more"], partition=1)
        while_paused = drain(consumer, 1.5)
        consumer.resume([TopicPartition(topic, 0)])
        after = read(consumer, 4)
        return {
            "before": sorted((m.partition(), m.offset()) for m in first),
            "while paused": sorted((m.partition(), m.offset()) for m in while_paused),
            "after resume": sorted((m.partition(), m.offset()) for m in after),
        }

    compare("pause and resume", scenario, cluster)


def test_a_paused_partition_keeps_its_position_and_commits_it(cluster: ReferenceCluster) -> None:
    """Pausing a partition whose records are already fetched: position() still says where the
    application is, commit() commits it, and resume() goes on from there."""

    def scenario(run: Run) -> dict[str, Any]:
        topic = run.topic("paused-position", 1)
        cluster.produce(topic, [b"r-%d" % i for i in range(20)], partition=0)
        group = run.group("paused-position")
        consumer = run.consumer(group)
        consumer.subscribe([topic])
        first = read(consumer, 5)
        partition = [TopicPartition(topic, 0)]
        consumer.pause(partition)
        drain(consumer, 0.5)
        position = consumer.position(partition)[0].offset
        committed = consumer.commit(asynchronous=False)
        consumer.resume(partition)
        after = read(consumer, 15)
        return {
            "read first": [m.offset() for m in first],
            "position while paused": position,
            "committed while paused": [(tp.partition, tp.offset) for tp in committed or []],
            "group offset": list(cluster.committed(group).values()),
            "after resume": [m.offset() for m in after][:3],
        }

    compare("pause keeps the position", scenario, cluster)


def test_every_public_method_of_confluent_kafkas_consumer_exists() -> None:
    """The API surface: what a confluent-kafka program can call, kconsumer's Consumer has."""
    import confluent_kafka

    from kconsumer import Consumer

    theirs = {name for name in dir(confluent_kafka.Consumer) if not name.startswith("_")}
    assert theirs - set(dir(Consumer)) == set()


def test_start_offsets_chosen_in_on_assign_on_a_fresh_group(cluster: ReferenceCluster) -> None:
    """No committed offset yet: the offsets incremental_assign() gives in on_assign still decide
    where reading starts (not auto.offset.reset), including the "replay from the beginning"
    idiom under auto.offset.reset=latest."""

    def scenario(run: Run) -> dict[str, Any]:
        topic = run.topic("fresh-start", 2, records=10)
        seen: dict[str, Any] = {}
        for reset, chosen in (
            ("earliest", {0: 5, 1: 3}),
            ("latest", {0: OFFSET_BEGINNING, 1: OFFSET_BEGINNING}),
        ):
            consumer = run.consumer(run.group(f"fresh-start-{reset}"), auto_offset_reset=reset)

            def on_assign(c: Any, partitions: list[TopicPartition], chosen: dict[int, int] = chosen) -> None:
                c.incremental_assign(
                    [TopicPartition(tp.topic, tp.partition, chosen[tp.partition]) for tp in partitions]
                )

            consumer.subscribe([topic], on_assign=on_assign)
            wanted = sum(10 - (o if o >= 0 else 0) for o in chosen.values())
            seen[f"reset={reset}: first offsets"] = sorted(_first_offsets(consumer, wanted).items())
            consumer.close()
        return seen

    compare("start offsets in on_assign, fresh group", scenario, cluster)


def test_assignment_inside_on_revoke_and_assign_calls_while_subscribed(cluster: ReferenceCluster) -> None:
    """assignment() inside on_revoke still lists the partitions being revoked (they are the
    member's until the callback returns); incremental_assign()/incremental_unassign() outside the
    callbacks of a subscribed consumer."""

    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("revoke-view", 4, records=2), run.group("revoke-view")
        seen: dict[str, Any] = {}

        def on_revoke(c: Any, partitions: list[TopicPartition]) -> None:
            if partitions:
                seen.setdefault(
                    "assignment inside on_revoke ⊇ revoked",
                    {tp.partition for tp in partitions} <= {tp.partition for tp in c.assignment()},
                )

        first = run.consumer(group)
        first.subscribe([topic], on_revoke=on_revoke)
        read(first, 8)
        outcomes = {}
        for name, call in {
            "incremental_unassign": lambda: first.incremental_unassign([TopicPartition(topic, 0)]),
            "incremental_assign": lambda: first.incremental_assign([TopicPartition(topic, 0, 1)]),
        }.items():
            try:
                call()
                outcomes[name] = "applied"
            except KafkaException as exc:
                outcomes[name] = ("refused", exc.args[0].code())
        seen["while subscribed"] = outcomes
        second = run.consumer(group)
        second.subscribe([topic])
        deadline = time.monotonic() + 20
        while "assignment inside on_revoke ⊇ revoked" not in seen and time.monotonic() < deadline:
            first.poll(0.1)
            second.poll(0.1)
        return seen

    compare("assignment inside on_revoke", scenario, cluster)


def test_a_revocation_followed_by_a_loss_reports_each_partition_once(cluster: ReferenceCluster) -> None:
    """on_revoke runs longer than max.poll.interval.ms: the member is removed meanwhile and its
    remaining partitions are lost. A partition already given to on_revoke is not reported to
    on_lost again. (Consumer protocol: a classic member removed mid-revocation rejoins instead.)"""
    if getattr(cluster, "parity_protocol", "consumer") == "classic":
        pytest.skip("the classic protocol has no loss after an incremental revocation to compare")

    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("revoke-then-lost", 4, records=2), run.group("revoke-then-lost")
        calls: list[tuple[str, list[int]]] = []
        max_poll_ms = 3000

        def on_revoke(c: Any, partitions: list[TopicPartition]) -> None:
            calls.append(("revoke", sorted(tp.partition for tp in partitions)))
            if partitions and len(calls) == 1:
                time.sleep(max_poll_ms / 1000 + 1.5)  # past max.poll.interval.ms: it is removed

        def on_lost(c: Any, partitions: list[TopicPartition]) -> None:
            calls.append(("lost", sorted(tp.partition for tp in partitions)))

        first = run.consumer(group, max_poll_interval_ms=max_poll_ms)
        first.subscribe([topic], on_revoke=on_revoke, on_lost=on_lost)
        read(first, 8)
        second = run.consumer(group)
        second.subscribe([topic])
        deadline = time.monotonic() + 30
        while not any(kind == "lost" for kind, _ in calls) and time.monotonic() < deadline:
            first.poll(0.1)
            second.poll(0.1)
        revoked = {p for kind, parts in calls if kind == "revoke" for p in parts}
        lost = {p for kind, parts in calls if kind == "lost" for p in parts}
        return {
            "reported to both on_revoke and on_lost": sorted(revoked & lost),
            "every partition reported": sorted(revoked | lost) == [0, 1, 2, 3],
        }

    compare("revoke then lost", scenario, cluster)


def test_the_callbacks_of_a_reconciliation_that_only_revokes(cluster: ReferenceCluster) -> None:
    """A second member joins: the first gives up half its partitions and gains none. Its
    callbacks, in order: on_assign with all four, then on_revoke with the two it gives up and
    on_assign with nothing (Kafka's consumers call onPartitionsAssigned after every
    reconciliation, even with no new partition)."""

    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("revoke-only", 4, records=2), run.group("revoke-only")
        calls: list[tuple[str, int]] = []

        def record(kind: str) -> Any:
            return lambda _c, partitions: calls.append((kind, len(partitions)))

        first = run.consumer(group)
        first.subscribe([topic], on_assign=record("assign"), on_revoke=record("revoke"))
        read(first, 8)
        second = run.consumer(group)
        second.subscribe([topic])
        deadline = time.monotonic() + 20
        while len(second.assignment()) < 2 and time.monotonic() < deadline:
            first.poll(0.1)
            second.poll(0.1)
        for _ in range(10):  # what the first member is told after its revocation
            first.poll(0.1)
            second.poll(0.1)
        return {"callbacks of the first member (kind, partitions)": calls}

    compare("reconciliation that only revokes", scenario, cluster)
