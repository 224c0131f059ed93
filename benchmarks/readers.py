"""The clients of the throughput benchmark: each able to seek back to the start of its topic and
read a number of records, timing the steady rate from its first non-empty result (`throughput`
explains the method). Synchronous clients read on the worker's thread; the asyncio ones
(aiokafka, confluent-kafka's AIOConsumer, kconsumer.aio) on an event loop the worker drives."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import psutil

from kconsumer.client.config import FETCH_HANDLE_DEFAULTS

#: The broker's long-poll wait for every client (librdkafka and aiokafka default to 500 ms). After
#: a seek a fetch at the new offset goes out only once the long poll in flight returns; 50 ms keeps
#: each repetition short. It changes nothing while data is there (fetches then return at once).
FETCH_WAIT_MS = 50


def cpu_seconds(process: Any) -> float:
    """User + system CPU of `process` (every thread)."""
    times = process.cpu_times()
    return float(times.user + times.system)


def raw_config(bootstrap: str) -> dict[str, Any]:
    """A raw confluent-kafka consumer in manual-assign mode, librdkafka's defaults otherwise (the
    throughput benchmark's peers add kconsumer's fetch-handle settings for "tuned")."""
    return {
        "bootstrap.servers": bootstrap,
        "group.id": f"bench-{uuid.uuid4()}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": FETCH_WAIT_MS,
    }


class Reader:
    """One client, able to seek back to the start and read a number of records."""

    def __init__(self, client: str, bootstrap: str, topic: str, partitions: int, lows: list[int], batch: int):
        self.client, self.topic, self.partitions, self.lows, self.batch = (
            client,
            topic,
            partitions,
            lows,
            batch,
        )
        self.bootstrap = bootstrap
        self.process = psutil.Process()
        self.first: tuple[float, float, float] = (0.0, 0.0, 0.0)
        self.loop: asyncio.AbstractEventLoop | None = None
        if client.startswith("aiokafka"):
            self.loop = asyncio.new_event_loop()
            self.loop.run_until_complete(self._aio_start())
            return
        if client.startswith("AIOConsumer"):
            self.loop = asyncio.new_event_loop()
            self.loop.run_until_complete(self._confluent_aio_start())
            return
        import confluent_kafka as ck

        if client.startswith("kconsumer aio"):
            from kconsumer.aio import AIOConsumer

            self.loop = asyncio.new_event_loop()
            self.consumer = self.loop.run_until_complete(self._kconsumer_aio_start(AIOConsumer))
        elif client.startswith("kconsumer"):
            from kconsumer import Consumer

            self.consumer: Any = Consumer(self._kconsumer_config())
            self.consumer.subscribe([topic])
        else:
            tuned = FETCH_HANDLE_DEFAULTS if client.startswith("confluent tuned") else {}
            self.consumer = ck.Consumer({**raw_config(self.bootstrap), **tuned})
            self.consumer.assign([ck.TopicPartition(topic, p, lows[p]) for p in range(partitions)])

    def _kconsumer_config(self) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.bootstrap,
            "group.id": f"bench-{uuid.uuid4()}",
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": FETCH_WAIT_MS,
        }

    async def _kconsumer_aio_start(self, kind: Any) -> Any:
        consumer = kind(self._kconsumer_config())
        await consumer.subscribe([self.topic])
        return consumer

    async def _confluent_aio_start(self) -> None:
        from confluent_kafka import TopicPartition
        from confluent_kafka.aio import AIOConsumer

        self.confluent_aio = AIOConsumer(raw_config(self.bootstrap))
        await self.confluent_aio.assign(
            [TopicPartition(self.topic, p, self.lows[p]) for p in range(self.partitions)]
        )

    async def _aio_start(self) -> None:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        self.aio = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=FETCH_WAIT_MS,
        )
        await self.aio.start()
        self.tps = [TopicPartition(self.topic, p) for p in range(self.partitions)]
        self.aio.assign(self.tps)
        for tp, low in zip(self.tps, self.lows, strict=False):
            self.aio.seek(tp, low)

    def quiesce(self) -> None:
        """Pause every partition after a pass: an idle client then sends no fetches, so while
        another client is measured the broker serves that client alone (idle librdkafka handles
        long-poll every partition ``1000 / FETCH_WAIT_MS`` times a second otherwise, which on the
        Python reference broker at 128-256 partitions took a share of the machine that changed
        from one repetition to the next)."""
        self._flow("pause")

    def rewind(self) -> None:
        """Seek every partition back to its first offset, then resume fetching."""
        if self.client.startswith("AIOConsumer"):
            from confluent_kafka import TopicPartition

            assert self.loop is not None
            for p in range(self.partitions):
                self.loop.run_until_complete(
                    self.confluent_aio.seek(TopicPartition(self.topic, p, self.lows[p]))
                )
        elif self.client.startswith("aiokafka"):
            for tp, low in zip(self.tps, self.lows, strict=False):
                self.aio.seek(tp, low)
        else:
            import confluent_kafka as ck

            for p in range(self.partitions):
                self.consumer.seek(ck.TopicPartition(self.topic, p, self.lows[p]))
        self._flow("resume")

    def _flow(self, action: str) -> None:
        """Pause or resume every partition, through each client's own API."""
        if self.client.startswith("aiokafka"):
            assert self.loop is not None
            self.loop.run_until_complete(self._aio_flow(action))  # aiokafka wakes its fetcher task
            return
        import confluent_kafka as ck

        partitions = [ck.TopicPartition(self.topic, p) for p in range(self.partitions)]
        if self.client.startswith("AIOConsumer"):
            assert self.loop is not None
            self.loop.run_until_complete(getattr(self.confluent_aio, action)(partitions))
        else:  # kconsumer's Consumer and AIOConsumer pause and resume synchronously
            getattr(self.consumer, action)(partitions)

    def _mark(self) -> None:
        """Note the clocks when a pass's first records arrive (the steady rate starts there)."""
        self.first = (time.perf_counter(), cpu_seconds(self.process), time.thread_time())

    def read(self, expected: int, timeout_s: float = 120.0) -> int:
        """Read `expected` records (raise if it takes longer than `timeout_s`); returns how many
        came with the first non-empty result, which `_mark` timestamped."""
        deadline = time.monotonic() + timeout_s
        if self.client.startswith("AIOConsumer") or self.client.startswith("kconsumer aio"):
            assert self.loop is not None
            return self.loop.run_until_complete(self._awaitable_read(expected, deadline))
        if self.loop is not None:
            return self.loop.run_until_complete(self._aio_read(expected, deadline))
        seen = first = 0
        consumer = self.consumer
        if self.client.endswith("poll"):
            poll = consumer.poll
            while seen < expected:
                message = poll(1.0)
                if message is None:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"{self.client}: {seen} of {expected} records")
                    continue
                if message.error() is not None:
                    raise RuntimeError(f"{self.client}: {message.error()}")
                if not seen:
                    self._mark()
                    first = 1
                seen += 1
        else:
            consume, batch = consumer.consume, self.batch
            while seen < expected:
                # Never more than the pass has left: a batch larger than what remains would wait
                # for its timeout (confluent-kafka's consume() returns at `num_messages` or timeout).
                messages = consume(min(batch, expected - seen), 1.0)
                seen, first = self._took(messages, seen, first, expected, deadline)
        return first

    def _took(
        self, messages: list[Any], seen: int, first: int, expected: int, deadline: float
    ) -> tuple[int, int]:
        """(records seen, records of the first result) after a batch; raise on an error record
        or, with nothing received, past the deadline."""
        if not messages:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.client}: {seen} of {expected} records")
            return seen, first
        if messages[-1].error() is not None or messages[0].error() is not None:
            errors = [m.error() for m in messages if m.error() is not None]
            raise RuntimeError(f"{self.client}: {errors[0]}")
        if not seen:
            self._mark()
            first = len(messages)
        return seen + len(messages), first

    async def _aio_flow(self, action: str) -> None:
        getattr(self.aio, action)(*self.tps)

    async def _aio_read(self, expected: int, deadline: float) -> int:
        seen = first = 0
        while seen < expected:
            data = await self.aio.getmany(timeout_ms=1000, max_records=min(self.batch, expected - seen))
            if not data:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{self.client}: {seen} of {expected} records")
                continue
            count = sum(len(records) for records in data.values())
            if not seen:
                self._mark()
                first = count
            seen += count
        return first

    async def _awaitable_read(self, expected: int, deadline: float) -> int:
        """confluent-kafka's AIOConsumer or kconsumer.aio: ``consume(n)``, ``poll()`` or (kconsumer)
        ``async for``."""
        consumer = self.confluent_aio if self.client.startswith("AIOConsumer") else self.consumer
        if self.client.endswith("async-for"):
            return await self._async_for(consumer, expected)
        single = self.client.endswith("poll")
        seen = first = 0
        while seen < expected:
            if single:
                message = await consumer.poll(1.0)
                messages = [] if message is None else [message]
            else:
                messages = await consumer.consume(min(self.batch, expected - seen), 1.0)
            seen, first = self._took(messages, seen, first, expected, deadline)
        return first

    async def _async_for(self, consumer: Any, expected: int) -> int:
        seen = 0
        async for message in consumer:
            if message.error() is not None:
                raise RuntimeError(f"{self.client}: {message.error()}")
            if not seen:
                self._mark()
            seen += 1
            if seen == expected:
                break
        return 1

    def close(self) -> None:
        if self.client.startswith("AIOConsumer"):
            assert self.loop is not None
            self.loop.run_until_complete(self.confluent_aio.close())
            self.loop.close()
        elif self.client.startswith("kconsumer aio"):
            assert self.loop is not None
            self.loop.run_until_complete(self.consumer.close())
            self.loop.close()
        elif self.loop is not None:
            self.loop.run_until_complete(self.aio.stop())
            self.loop.close()
        else:
            self.consumer.close()
