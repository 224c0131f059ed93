"""poll() hands out buffered records without a full check for group work each time: at most
`RECORDS_BETWEEN_CHECKS` of them between two full checks (a commit report waits that long at
most), and never one after the member posted work (here: it left the group while the
application did not poll) however many are buffered."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from confluent_kafka import KafkaError
from consumer_harness import wait_until

from kconsumer import Consumer
from kconsumer.aio import AIOConsumer
from kconsumer.aio import consumer as aio_consumer
from kconsumer.client.consumer import RECORDS_BETWEEN_CHECKS
from kconsumer.client.fetch import POLL_BATCH
from kconsumer.testing import ReferenceCluster

RECORDS = 2_000


def _topic(cluster: ReferenceCluster) -> None:
    """One partition holding `RECORDS` records."""
    cluster.create_topic("checks", 1)
    cluster.produce("checks", [b"v%d" % i for i in range(RECORDS)], partition=0)


def _settings(cluster: ReferenceCluster, **more: Any) -> dict[str, Any]:
    return {
        "bootstrap.servers": cluster.bootstrap_servers,
        "group.id": "checks",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        **more,
    }


def _buffering_consumer(
    cluster: ReferenceCluster, on_lost: Any = None, **settings: Any
) -> tuple[Consumer, list[Any]]:
    """A member of a group reading a one-partition topic, with half a batch or more buffered;
    (the consumer, the records it returned)."""
    _topic(cluster)
    consumer = Consumer(_settings(cluster, **settings))
    consumer.subscribe(["checks"], on_lost=on_lost)
    first = wait_until(lambda: consumer.poll(0.1), what="a first record")
    time.sleep(0.5)  # librdkafka queues the rest
    taken = [first]
    while len(consumer._buffer) < POLL_BATCH // 2:  # a batch taken from librdkafka
        taken.append(consumer.poll(1.0))
    return consumer, taken


def test_group_work_waits_a_few_buffered_records_at_most(cluster: ReferenceCluster) -> None:
    reports: list[Any] = []
    consumer, taken = _buffering_consumer(
        cluster, on_commit=lambda error, partitions: reports.append((error, partitions))
    )
    try:
        consumer.commit(taken[-1], asynchronous=True)
        app = consumer._app
        assert app is not None
        wait_until(lambda: not app.queue.empty(), what="the commit's answer queued")
        buffered = len(consumer._buffer)
        polls = 0
        while not reports:
            message = consumer.poll(1.0)
            assert message is not None and message.error() is None
            polls += 1
        assert polls <= RECORDS_BETWEEN_CHECKS + 1 < buffered
        error, partitions = reports[0]
        assert error is None and partitions[0].offset == taken[-1].offset() + 1
        offsets = [m.offset() for m in taken] + [consumer.poll(1.0).offset() for _ in range(5)]
        assert offsets[: len(taken)] == list(range(len(taken)))  # nothing skipped around the check
    finally:
        consumer.close()


def test_no_buffered_record_after_the_member_lost_its_partitions(cluster: ReferenceCluster) -> None:
    consumer, _taken = _buffering_consumer(cluster, **{"max.poll.interval.ms": 1000})
    try:
        member_id = consumer.memberid()
        wait_until(
            lambda: member_id not in (cluster.describe_group("checks") or {}).members,  # type: ignore[union-attr]
            what="the member leaving while the application does not poll",
        )
        assert len(consumer._buffer) > RECORDS_BETWEEN_CHECKS
        event = consumer.poll(0.1)
        assert event is not None and event.error() is not None, "a record of a lost partition"
        assert event.error().code() == KafkaError._MAX_POLL_EXCEEDED
        assert not consumer._buffer
    finally:
        consumer.close()


def test_async_for_gives_no_buffered_record_after_the_member_lost_its_partitions(
    cluster: ReferenceCluster, monkeypatch: pytest.MonkeyPatch, record_run_form: str
) -> None:
    """The same inside the asyncio consumer's ``async for`` run, stalled between two records."""
    monkeypatch.setattr(aio_consumer, "TURN_EVERY_S", 60.0)  # no turn given to the loop ends the run
    _topic(cluster)

    async def main() -> Any:
        consumer = AIOConsumer(_settings(cluster, **{"max.poll.interval.ms": 1000}))
        try:
            await consumer.subscribe(["checks"])
            records = consumer.__aiter__()
            await records.__anext__()
            await asyncio.sleep(0.5)  # librdkafka queues the rest
            await records.__anext__()  # through poll(): the poll-interval note was due
            await records.__anext__()  # the first of a run of buffered records
            buffer = consumer._consumer.engine.buffer
            assert len(buffer) > RECORDS_BETWEEN_CHECKS
            member_id = consumer._consumer.memberid()
            deadline = time.monotonic() + 15
            while member_id in (cluster.describe_group("checks") or {}).members:  # type: ignore[union-attr]
                assert time.monotonic() < deadline, "the member did not leave"
                time.sleep(0.05)  # the application does not poll (nor give the loop a turn)
            return await records.__anext__()
        finally:
            await consumer.close()

    event = asyncio.run(main())
    assert event.error() is not None, "a record of a lost partition"
    assert event.error().code() == KafkaError._MAX_POLL_EXCEEDED


def test_a_slow_application_inside_a_run_of_buffered_records_stays_in_the_group(
    cluster: ReferenceCluster,
) -> None:
    """Each record takes 1/20 of max.poll.interval.ms to process: a run of buffered records
    handed out without a full check lasts longer than the interval, yet the member polled all
    along and stays (the runtime tells the session of the polls the run made)."""
    lost: list[Any] = []
    consumer, taken = _buffering_consumer(
        cluster, on_lost=lambda _c, partitions: lost.append(partitions), **{"max.poll.interval.ms": 1000}
    )
    try:
        member_id = consumer.memberid()
        for _ in range(2 * RECORDS_BETWEEN_CHECKS):
            message = consumer.poll(1.0)
            assert message is not None and message.error() is None, message and message.error()
            taken.append(message)
            time.sleep(0.05)
        assert not lost
        assert member_id in cluster.describe_group("checks").members  # type: ignore[union-attr]
        assert [m.offset() for m in taken] == list(range(len(taken)))
    finally:
        consumer.close()


def test_a_slow_async_for_stays_in_the_group(
    cluster: ReferenceCluster, monkeypatch: pytest.MonkeyPatch, record_run_form: str
) -> None:
    """The same for the asyncio consumer's ``async for`` (its runs of buffered records count too)."""
    monkeypatch.setattr(aio_consumer, "TURN_EVERY_S", 60.0)  # runs end only at their length
    _topic(cluster)
    lost: list[Any] = []

    async def main() -> list[Any]:
        consumer = AIOConsumer(_settings(cluster, **{"max.poll.interval.ms": 1000}))
        taken: list[Any] = []
        try:
            await consumer.subscribe(["checks"], on_lost=lambda _c, partitions: lost.append(partitions))
            async for message in consumer:
                taken.append(message)
                if len(taken) == 1:
                    await asyncio.sleep(0.5)  # librdkafka queues the rest
                    continue
                time.sleep(0.05)  # the application works on the record, holding the loop
                if len(taken) == 2 * RECORDS_BETWEEN_CHECKS:
                    assert consumer._consumer.memberid() in cluster.describe_group("checks").members  # type: ignore[union-attr]
                    return taken
        finally:
            await consumer.close()
        return taken

    taken = asyncio.run(main())
    assert not lost
    assert all(m.error() is None for m in taken), [m.error() for m in taken if m.error()]
    assert [m.offset() for m in taken] == list(range(len(taken)))
