"""kconsumer.aio.AIOConsumer: in groups with sync kconsumer and confluent-kafka members under the
ledger, coroutine callbacks with their ordering guarantees, cancellation, errors from callbacks,
and an event loop that is never held (its scheduling delay is measured while consuming at full
speed and while rebalancing)."""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import KafkaException, TopicPartition
from consumer_harness import ConfluentMember, Feeder, Member, cluster_committed, config, wait_until
from ledger import Key, Ledger, position

from kconsumer import Consumer
from kconsumer.aio import AIOConsumer
from kconsumer.testing import ReferenceCluster


class AIOMember:
    """An AIOConsumer on its own event loop (in its own thread), reporting to a `Ledger` from
    coroutine callbacks: it commits its processed offsets in ``on_revoke`` (awaiting the commit)
    and asynchronously every 0.2 s."""

    def __init__(self, ledger: Ledger, name: str, settings: dict[str, Any], topics: list[str]) -> None:
        self.ledger, self.name, self.topics = ledger, name, topics
        self.settings = {**settings, "client.id": name}
        self.next_offsets: dict[Key, int] = {}
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), name=name, daemon=True)
        self._thread.start()

    def close(self, timeout: float = 30.0) -> None:
        self._stop.set()
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"{self.name} did not close"

    async def _on_assign(self, consumer: AIOConsumer, partitions: list[TopicPartition]) -> None:
        keys = [(tp.topic, tp.partition) for tp in partitions]
        await asyncio.sleep(0)  # a real coroutine: the member waits for it
        for key in keys:
            self.next_offsets.pop(key, None)
        self.ledger.assigned(self.name, keys)

    async def _on_revoke(self, consumer: AIOConsumer, partitions: list[TopicPartition]) -> None:
        keys = [(tp.topic, tp.partition) for tp in partitions]
        offsets = {key: self.next_offsets[key] for key in keys if key in self.next_offsets}
        committed: dict[Key, int] | None = {}
        if offsets:
            try:
                await consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()])
                committed = offsets
            except KafkaException as exc:
                self.errors.append(exc)
                committed = None
        for key in keys:
            self.next_offsets.pop(key, None)
        self.ledger.released(self.name, keys, "revoked", committed)

    async def _on_lost(self, consumer: AIOConsumer, partitions: list[TopicPartition]) -> None:
        keys = [(tp.topic, tp.partition) for tp in partitions]
        for key in keys:
            self.next_offsets.pop(key, None)
        self.ledger.released(self.name, keys, "lost")

    async def _main(self) -> None:
        consumer = AIOConsumer(self.settings)
        await consumer.subscribe(self.topics, self._on_assign, self._on_revoke, self._on_lost)
        last_commit = time.monotonic()
        try:
            while not self._stop.is_set():
                for message in await consumer.consume(100, 0.05):
                    if message.error() is not None:
                        self.errors.append(KafkaException(message.error()))
                        continue
                    self.ledger.received(self.name, message)
                    key, offset = position(message)
                    self.next_offsets[key] = offset + 1
                if time.monotonic() - last_commit > 0.2 and self.next_offsets:
                    last_commit = time.monotonic()
                    await consumer.commit(asynchronous=True)
        finally:
            await consumer.close()


def test_aio_sync_and_confluent_members_share_a_group_under_the_ledger(
    cluster: ReferenceCluster, members: Callable[..., Member], feeders: Callable[..., Feeder]
) -> None:
    cluster.create_topic("mixed-aio", 6)
    feeder = feeders(cluster, "mixed-aio")
    ledger = Ledger(cluster_committed(cluster, "aio-group"))
    ledger.sample_group(cluster, "aio-group")
    settings = config(cluster.bootstrap_servers, "aio-group")
    first = AIOMember(ledger, "aio-1", settings, ["mixed-aio"])
    wait_until(lambda: ledger.consuming("aio-1"), what="the asyncio member consuming")
    sync = members(ledger, "sync-1", settings, ["mixed-aio"])
    peer = ConfluentMember(ledger, "confluent-1", cluster.bootstrap_servers, "aio-group", ["mixed-aio"])
    second = AIOMember(ledger, "aio-2", settings, ["mixed-aio"])
    try:
        wait_until(
            lambda: ledger.consuming("aio-1", "sync-1", "confluent-1", "aio-2"),
            30,
            what="four members consuming",
        )
        first.close()  # partitions move from an asyncio member...
        wait_until(lambda: ledger.consuming("sync-1", "confluent-1", "aio-2"), 30, what="a rebalance")
        sync.close()  # ...and to one
        wait_until(lambda: ledger.consuming("confluent-1", "aio-2"), 30, what="another rebalance")
        feeder.stop()
        wait_until(lambda: ledger.has_all(feeder.produced), 30, what="every record consumed")
    finally:
        second.close()
        peer.close()
        ledger.stop_sampling()
    ledger.check(feeder.produced)
    assert not first.errors and not second.errors


def test_coroutine_callbacks_hold_the_revocation_until_they_finish(cluster: ReferenceCluster) -> None:
    cluster.create_topic("held", 2)
    cluster.produce("held", [f"v{i}" for i in range(20)])
    journal: list[str] = []

    async def scenario() -> None:
        async def on_revoke(consumer: AIOConsumer, partitions: list[TopicPartition]) -> None:
            if not partitions:
                return
            journal.append(f"revoke start {len(partitions)}")
            await asyncio.sleep(1.0)
            # the coordinator has not given the partition away while this callback runs
            described = cluster.describe_group("held-group")
            assert described is not None
            others = [m for m in described.members.values() if m.client_id == "other"]
            journal.append(f"other owns {sum(len(p) for m in others for p in m.assignment.values())}")
            journal.append("revoke end")

        consumer = AIOConsumer({**config(cluster.bootstrap_servers, "held-group"), "client.id": "aio"})
        await consumer.subscribe(["held"], on_revoke=on_revoke)
        revoked: set[Key] = set()
        other = Consumer({**config(cluster.bootstrap_servers, "held-group"), "client.id": "other"})
        try:
            deadline = time.monotonic() + 20
            while len(consumer.assignment()) < 2 and time.monotonic() < deadline:
                await consumer.poll(0.05)
            other.subscribe(["held"])
            poller = threading.Thread(target=lambda: [other.poll(0.05) for _ in range(100)], daemon=True)
            poller.start()
            while "revoke end" not in journal and time.monotonic() < deadline:
                message = await consumer.poll(0.05)
                if message is not None and not message.error():
                    key = (message.topic(), message.partition())
                    assert key not in revoked, "a record of a revoked partition after on_revoke"
                if "revoke end" in journal:
                    owned = {(tp.topic, tp.partition) for tp in consumer.assignment()}
                    revoked = {("held", 0), ("held", 1)} - owned
            poller.join(10)
        finally:
            other.close()
            await consumer.close()

    asyncio.run(scenario())
    assert journal[:3] == ["revoke start 1", "other owns 0", "revoke end"]  # (close revokes the rest)


def test_a_callback_error_reaches_the_awaiting_caller_and_a_sync_consumer_refuses_coroutines(
    cluster: ReferenceCluster,
) -> None:
    cluster.create_topic("faulty", 1)

    async def scenario() -> None:
        async def on_assign(consumer: AIOConsumer, partitions: list[TopicPartition]) -> None:
            raise RuntimeError("boom in on_assign")

        async with AIOConsumer(config(cluster.bootstrap_servers, "faulty-group")) as consumer:
            await consumer.subscribe(["faulty"], on_assign=on_assign)
            with pytest.raises(RuntimeError, match="boom in on_assign"):
                for _ in range(200):
                    await consumer.poll(0.05)

    asyncio.run(scenario())

    async def coroutine_callback(consumer: Any, partitions: list[TopicPartition]) -> None:
        pass

    sync = Consumer(config(cluster.bootstrap_servers, "faulty-sync"))
    sync.subscribe(["faulty"], on_assign=coroutine_callback)
    try:
        with pytest.raises(TypeError, match="AIOConsumer"):
            for _ in range(200):
                sync.poll(0.05)
    finally:
        sync.close()


def test_cancelled_polls_lose_no_record_and_a_cancelled_close_still_leaves(cluster: ReferenceCluster) -> None:
    cluster.create_topic("cancelled", 3)
    cluster.produce("cancelled", [f"v{i}" for i in range(300)])
    seen: set[tuple[int, int]] = set()

    async def scenario() -> None:
        consumer = AIOConsumer(config(cluster.bootstrap_servers, "cancel-group"))
        await consumer.subscribe(["cancelled"])
        deadline = time.monotonic() + 30
        rounds = 0
        while len(seen) < 300 and time.monotonic() < deadline:
            rounds += 1
            task = asyncio.ensure_future(consumer.poll(1.0))
            await asyncio.sleep(0.0005 * (rounds % 4))
            if not task.done():
                task.cancel()
            try:
                message = await task
            except asyncio.CancelledError:
                continue
            if message is not None and not message.error():
                seen.add((message.partition(), message.offset()))
        closing = asyncio.ensure_future(consumer.close())
        await asyncio.sleep(0)
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
        await consumer.close()  # the leave went on: this returns when it is done

    asyncio.run(scenario())
    assert len(seen) == 300
    described = cluster.describe_group("cancel-group")
    assert described is None or not described.members


@pytest.mark.timing  # a scheduling-delay bound: run on a quiet machine (tests/run_all.py)
def test_the_event_loop_is_never_held_while_consuming_and_rebalancing(cluster: ReferenceCluster) -> None:
    cluster.create_topic("busy", 4)
    for partition in range(4):
        for _ in range(10):
            cluster.produce("busy", [b"x" * 100] * 5_000, partition=partition)  # 200 000 records
    delays: list[float] = []

    async def ticker(stop: asyncio.Event) -> None:
        while not stop.is_set():
            before = time.monotonic()
            await asyncio.sleep(0.001)
            delays.append(time.monotonic() - before - 0.001)

    async def scenario() -> int:
        consumer = AIOConsumer(config(cluster.bootstrap_servers, "busy-group"))
        other = Consumer(config(cluster.bootstrap_servers, "busy-group"))  # joins later
        joined = False

        async def on_revoke(c: AIOConsumer, partitions: list[TopicPartition]) -> None:
            if partitions:
                await c.commit(asynchronous=False)

        await consumer.subscribe(["busy"], on_revoke=on_revoke)
        count = 0
        while count == 0:  # joined and fetching: the measurement starts here
            count += len(await consumer.consume(1, 0.1))
        stop = asyncio.Event()
        tick = asyncio.ensure_future(ticker(stop))
        started = time.monotonic()
        try:
            last_progress = time.monotonic()
            while time.monotonic() - last_progress < 1.0:
                got = len(await consumer.consume(10_000, 0.1))
                if got:
                    count, last_progress = count + got, time.monotonic()
                if count > 50_000 and not joined:  # a rebalance in the middle of it
                    joined = True
                    other.subscribe(["busy"])
                    threading.Thread(
                        target=lambda: [other.poll(0.05) for _ in range(100)], daemon=True
                    ).start()
        finally:
            stop.set()
            elapsed.append(time.monotonic() - started)
            await tick
            await consumer.close()
            await asyncio.to_thread(other.close)
        assert joined and consumer.metrics()["rebalance-total"] >= 2
        return count

    elapsed: list[float] = []
    consumed = asyncio.run(scenario())
    assert consumed > 100_000
    delays.sort()
    p99 = delays[int(len(delays) * 0.99)]
    # The ticker ran all along (a consumer that never gives the loop a turn starves it).
    assert len(delays) > 100 and len(delays) > elapsed[0] * 1000 / 5, (len(delays), elapsed)
    assert p99 < 0.010, (
        f"p99 scheduling delay {p99 * 1000:.1f} ms (median {statistics.median(delays) * 1000:.2f} ms)"
    )
