"""`AIOConsumer`: kconsumer for asyncio applications, on the consumer's own core.

No thread per call: the group membership already runs on kconsumer's background loop, and
everything the application side does (records, rebalance callbacks, commits, leaving) runs on
the application's event loop, in small non-blocking steps:

- records are taken from librdkafka's queue without waiting (``consume(n, 0)``, at most
  `MAX_BATCH` per step so the loop is never held long; `POLL_BATCH` for ``poll()`` and
  ``async for``, as the blocking consumer does); when there are none, the consumer
  sleeps on the loop, 0.5 ms at first, doubling to `MAX_IDLE_S` while idle, and starts again
  from 0.5 ms as soon as records flow; while records keep coming, it gives the loop a turn
  (``sleep(0)``) every `TURN_EVERY_S`, so the application's other tasks run meanwhile;
- rebalance callbacks run on the application's loop; a callback may be a coroutine function,
  which is awaited before the member goes on (the revocation is acknowledged only after it
  finished; no record of a revoked partition is returned after its ``on_revoke``). The callback
  runs in a task of its own: cancelling the ``poll()`` that awaits it does not cancel it, the next
  call keeps waiting for it;
- commits, ``unsubscribe()`` and ``close()`` wait on the loop for the member's answer, woken by
  the member's thread as soon as it queues work (no timer polling); calls that block inside
  librdkafka (``committed()``, metadata, watermarks from the broker, offsets for times, a manual
  assignment's commit) run in a worker thread.

Cancellation: a cancelled ``poll()``/``consume()`` never holds a record (they are taken and
returned in one step), so nothing is lost; a cancelled ``close()`` still leaves the group (the
leave finishes in a shielded task) before the cancellation propagates.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, TypeVar

from confluent_kafka import KafkaException, Message, TopicPartition

from ..client.application.core import ApplicationCore
from ..client.consumer import DEFAULT_API_TIMEOUT_S, RECORDS_BETWEEN_CHECKS, Consumer
from ..client.engine import Condition, ConsumerEngine
from ..client.fetch import POLL_BATCH
from ..client.listener import ConsumerRebalanceListener
from ..client.subscription import SubscriptionPattern
from .handout import record_run

T = TypeVar("T")
log = logging.getLogger("kconsumer")

#: Most records taken from librdkafka in one step on the loop.
MAX_BATCH = 1024
#: How often a consumer that always finds records lets the loop run its other tasks.
TURN_EVERY_S = 0.001
#: `async for` hands out buffered records in runs between two full checks (group work, the poll
#: note, the loop's turn): a run starts at `RECORDS_BETWEEN_CHECKS` records, doubles (up to
#: `MAX_RUN`) while runs end within `QUICK_RUN_S` (a fast loop body: fewer checks per record) and
#: halves once one takes longer than `SLOW_RUN_S` (a slow body: the checks come as often as before).
MAX_RUN = 512
QUICK_RUN_S = 0.0001
SLOW_RUN_S = 0.0004
#: The first and the longest sleep while no record is there.
FIRST_IDLE_S = 0.0005
MAX_IDLE_S = 0.005
#: Longest a blocking call (commit, unsubscribe, close) waits for the member's next work before
#: looking again (the member's work wakes it at once).
WAIT_SLICE_S = 0.05

Callback = Callable[..., Any]


class AIOConsumer:
    """An asyncio consumer with `kconsumer.Consumer`'s configuration and semantics; see the
    module docstring. Use ``async with AIOConsumer(config) as consumer`` or ``await close()``."""

    def __init__(self, config: dict[str, Any], *, logger: Any = None) -> None:
        """`config` takes the same keys as `kconsumer.Consumer` (ConfigError naming a bad one)."""
        self._consumer = Consumer(config, logger=logger)
        engine = self._engine = self._consumer.engine
        self._app: ApplicationCore | None = engine.app
        # Records this consumer put in the buffer so far: minus those still there, the records
        # handed out (each a poll the runtime tells the member of, without a count kept per
        # record); and whether the member queued work since the last check (set from its thread).
        self._filled = 0
        self._member_work = False
        #: `async for`'s record runs, their length and when the last one started (monotonic s).
        self._records = record_run(engine.buffer, self._next_record)
        self._run, self._run_started = RECORDS_BETWEEN_CHECKS, 0.0
        #: When the consumer next tells the member the application polled (monotonic seconds).
        self._next_poll_note = 0.0
        #: Set while `_wait` waits: wakes it when the member queues work (from its thread).
        self._waker: Callable[[], None] | None = None
        engine.drive_from(
            self,
            awaitable_callbacks=True,
            unnoted_polls=lambda: self._filled - len(engine.buffer),
            on_member_work=self._on_member_work,
        )
        self._idle = FIRST_IDLE_S
        self._callback_task: asyncio.Future[Any] | None = None
        #: When the consumer next gives the loop a turn while records keep coming.
        self._turn_due = 0.0
        self._closing: asyncio.Task[None] | None = None

    async def __aenter__(self) -> AIOConsumer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def engine(self) -> ConsumerEngine:
        """The consumer's parts and the steps its drivers share (`kconsumer.client.engine`)."""
        return self._engine

    def _on_member_work(self) -> None:
        """The member queued work for the application (called on the member's thread)."""
        self._member_work = True
        self._records.stop()
        waker = self._waker
        if waker is not None:
            waker()

    def __aiter__(self) -> AsyncIterator[Message]:
        self._records.stop()  # a new iteration starts with the full check
        return self._records.__aiter__()

    async def _next_record(self) -> Message:
        """The full check between two runs of `async for` (`kconsumer.aio.handout`): with records
        buffered or queued by librdkafka, no group work waiting, no poll to report and no turn
        to give the loop yet, the next record and a run of more; else the next `poll()`'s."""
        app = self._app
        buffer = self._engine.buffer
        records = self._records
        while True:
            now = time.monotonic()
            self._member_work = False  # before looking at the queue: work posted later sets it
            if (
                (app is None or (app.awaiting is None and app.idle()))
                and now < self._next_poll_note
                and now < self._turn_due
                and (buffer or self._refill())
            ):
                took = now - self._run_started
                if took < QUICK_RUN_S:
                    self._run = min(self._run * 2, MAX_RUN)
                elif took > SLOW_RUN_S:
                    self._run = max(self._run // 2, RECORDS_BETWEEN_CHECKS)
                self._run_started = now
                # A run before the next full check; work the member posts meanwhile (a
                # revocation, a lost assignment) stops it at the next record (work posted since
                # the flag was cleared stops it here). Each record counts as a poll when it
                # leaves the buffer (a slow loop body is a slow poller).
                records.allow(self._run - 1)
                if self._member_work:
                    records.stop()
                return buffer.popleft()
            message = await self.poll(None)
            if message is not None:
                return message

    # -- the application side's work -------------------------------------------------------------

    async def _run_app(self) -> None:
        """Run the member's queued work (callbacks awaited); raise what it raised."""
        app = self._app
        if app is None:
            return
        task = self._callback_task
        if task is not None and asyncio.current_task() is task:
            app.run(inside_callback=True)  # the callback itself waits for something (a commit)
            return
        while True:
            app.run()
            awaited = app.awaiting
            if awaited is None:
                return
            if self._callback_task is None:
                if awaited.in_thread:
                    running = asyncio.get_running_loop().run_in_executor(None, awaited.awaitable)
                    self._callback_task = asyncio.ensure_future(running)
                else:
                    self._callback_task = asyncio.ensure_future(awaited.awaitable)
            task = self._callback_task
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError:
                if not task.done():
                    raise  # this call was cancelled: the callback goes on, the next call waits for it
            except Exception:
                pass
            self._callback_task = None
            if task.cancelled():
                app.finish_awaited(None, asyncio.CancelledError())
            else:
                error = task.exception()
                app.finish_awaited(None if error is not None else task.result(), error)

    def _note_poll(self) -> None:
        now = time.monotonic()
        if now >= self._next_poll_note:
            self._next_poll_note = self._engine.note_poll(now)

    async def _step(self) -> Message | None:
        """Give the loop a turn now and then (records may be there at every call: without it
        a loop consuming at full speed would run nothing else), run the group work (an error
        event is returned)."""
        now = time.monotonic()
        if now >= self._turn_due:
            self._turn_due = now + TURN_EVERY_S
            await asyncio.sleep(0)
        app = self._app
        if app is None:
            self._engine.ensure_open()
            return None
        self._note_poll()
        if not app.idle() or app.awaiting is not None:
            await self._run_app()
            if app.state.error_events:
                return app.state.error_events.pop(0)
        return None

    def _refill(self) -> bool:
        """Buffer what librdkafka has queued, without waiting (False: nothing was). A poll batch,
        as the blocking consumer's: small enough that taking one never sets off Python's garbage
        collector (its first generation runs after 700 new objects)."""
        batch = self._engine.fetcher.consume(POLL_BATCH, 0)
        if not batch:
            return False
        self._engine.buffer.extend(batch)
        self._filled += len(batch)
        self._idle = FIRST_IDLE_S
        return True

    async def _sleep_idle(self, deadline: float) -> bool:
        """Sleep a little (longer each time while idle); False once `deadline` passed."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        await asyncio.sleep(min(self._idle, remaining))
        self._idle = min(self._idle * 2, MAX_IDLE_S)
        return True

    # -- records ---------------------------------------------------------------------------------

    async def poll(self, timeout: float | None = None) -> Message | None:
        """The next record (or error event), None after `timeout` seconds (None or negative:
        wait until one arrives). Runs pending rebalance callbacks and raises pending errors first."""
        deadline = _deadline(timeout)
        buffer = self._engine.buffer
        while True:
            event = await self._step()
            if event is not None:
                return event
            if buffer or self._refill():
                return buffer.popleft()
            if not await self._sleep_idle(deadline):
                return None

    async def consume(self, num_messages: int = 1, timeout: float | None = -1) -> list[Message]:
        """Up to `num_messages` records, as soon as some are there, or [] after `timeout` s."""
        if not 1 <= num_messages <= 1_000_000:
            raise ValueError("num_messages must be between 1 and 1000000")
        deadline = _deadline(timeout)
        fetcher = self._engine.fetcher
        while True:
            event = await self._step()
            if event is not None:
                return [event]
            messages: list[Message] = fetcher.consume(min(num_messages, MAX_BATCH), 0)
            if messages:
                self._idle = FIRST_IDLE_S
                return messages
            if not await self._sleep_idle(deadline):
                return []

    # -- subscription ----------------------------------------------------------------------------

    async def subscribe(
        self,
        topics: Sequence[str] | SubscriptionPattern,
        on_assign: Callback | None = None,
        on_revoke: Callback | None = None,
        on_lost: Callback | None = None,
        listener: ConsumerRebalanceListener | None = None,
    ) -> None:
        """As `Consumer.subscribe`; callbacks are ``f(consumer, partitions)`` (this consumer),
        plain functions or coroutine functions."""
        self._consumer.subscribe(topics, on_assign, on_revoke, on_lost, listener)

    async def unsubscribe(self) -> None:
        """Commit (if auto-commit), revoke and leave the group; returns when done."""
        left = self._engine.start_unsubscribe()
        await self._wait(left, DEFAULT_API_TIMEOUT_S)
        self._engine.subscribed = False

    # -- offsets ---------------------------------------------------------------------------------

    async def commit(
        self,
        message: Message | None = None,
        offsets: Sequence[TopicPartition] | None = None,
        asynchronous: bool = False,
    ) -> list[TopicPartition] | None:
        """As `Consumer.commit`, but synchronous by default (awaiting the coordinator's answer
        without blocking the loop); ``asynchronous=True`` returns at once (on_commit reports)."""
        engine = self._engine
        if not engine.subscribed and engine.manual.partitions:
            return await self._in_thread(self._consumer.commit, message, offsets, asynchronous)
        started = engine.start_commit(message, offsets, asynchronous)
        if not isinstance(started, int):
            return started
        _runtime, app = engine.group()
        with app.waiting_for_commit(started):  # a timeout or a cancellation forgets the answer
            await self._wait(lambda core: core.commit_finished(started), DEFAULT_API_TIMEOUT_S)
        return app.finish_commit(started)

    async def committed(
        self, partitions: Sequence[TopicPartition], timeout: float | None = None
    ) -> list[TopicPartition]:
        """The group's committed offsets of `partitions` (as `Consumer.committed`)."""
        return await self._in_thread(self._consumer.committed, partitions, timeout)

    def store_offsets(
        self, message: Message | None = None, offsets: Sequence[TopicPartition] | None = None
    ) -> None:
        """As `Consumer.store_offsets` (it does not wait for anything)."""
        self._consumer.store_offsets(message, offsets)

    def position(self, partitions: Sequence[TopicPartition]) -> list[TopicPartition]:
        """As `Consumer.position` (it does not wait)."""
        return self._consumer.position(partitions)

    def seek(self, partition: TopicPartition) -> None:
        """As `Consumer.seek`."""
        self._consumer.seek(partition)

    def pause(self, partitions: Sequence[TopicPartition]) -> None:
        """As `Consumer.pause`: buffered records of `partitions` go back to librdkafka."""
        self._consumer.pause(partitions)

    def resume(self, partitions: Sequence[TopicPartition]) -> None:
        """As `Consumer.resume`."""
        self._consumer.resume(partitions)

    def assignment(self) -> list[TopicPartition]:
        """As `Consumer.assignment`."""
        return self._consumer.assignment()

    def incremental_assign(self, partitions: Sequence[TopicPartition]) -> None:
        """As `Consumer.incremental_assign` (also inside ``on_assign``)."""
        self._consumer.incremental_assign(partitions)

    def incremental_unassign(self, partitions: Sequence[TopicPartition]) -> None:
        """As `Consumer.incremental_unassign`."""
        self._consumer.incremental_unassign(partitions)

    def assign(self, partitions: Sequence[TopicPartition]) -> None:
        """As `Consumer.assign` (manual assignment, no group)."""
        self._consumer.assign(partitions)

    def unassign(self) -> None:
        """As `Consumer.unassign`."""
        self._consumer.unassign()

    def memberid(self) -> str:
        """As `Consumer.memberid`."""
        return self._consumer.memberid()

    def metrics(self) -> dict[str, float]:
        """As `Consumer.metrics`."""
        return self._consumer.metrics()

    def consumer_group_metadata(self) -> bytes:
        """As `Consumer.consumer_group_metadata`."""
        return self._consumer.consumer_group_metadata()

    async def get_watermark_offsets(
        self, partition: TopicPartition, timeout: float | None = None, cached: bool = False
    ) -> Any:
        """As `Consumer.get_watermark_offsets`, in a worker thread (it may ask the broker)."""
        return await self._in_thread(self._consumer.get_watermark_offsets, partition, timeout, cached)

    async def offsets_for_times(
        self, partitions: Sequence[TopicPartition], timeout: float | None = None
    ) -> Any:
        """As `Consumer.offsets_for_times`, in a worker thread."""
        return await self._in_thread(self._consumer.offsets_for_times, partitions, timeout)

    async def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        """As `Consumer.list_topics`, in a worker thread."""
        return await self._in_thread(self._consumer.list_topics, topic, timeout)

    # -- closing ---------------------------------------------------------------------------------

    async def close(self, timeout: float | None = None) -> None:
        """Commit (if auto-commit), revoke, leave the group, release everything. Cancelling
        the caller does not stop the leave: it completes first."""
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._close(timeout))
        await asyncio.shield(self._closing)

    async def _close(self, timeout: float | None) -> None:
        engine = self._engine
        if engine.closed:
            return
        try:
            left = engine.start_close()
            if left is not None:
                wait_s = DEFAULT_API_TIMEOUT_S if timeout is None else timeout
                try:
                    await self._wait(left, wait_s, raise_errors=False)
                except KafkaException as exc:
                    log.warning("close(): leaving the group did not complete (%s); closing anyway", exc)
        finally:
            engine.release()

    # -- helpers ---------------------------------------------------------------------------------

    async def _wait(self, condition: Condition, timeout: float, raise_errors: bool = True) -> None:
        """Run the member's work on this loop until `condition(app)` or `timeout` seconds
        (`ApplicationCore.wait_over` decides)."""
        app = self._app
        assert app is not None

        def done() -> bool:
            return condition(app)

        deadline = time.monotonic() + timeout
        loop = asyncio.get_running_loop()
        woken = asyncio.Event()

        def wake() -> None:
            loop.call_soon_threadsafe(woken.set)

        self._waker = wake
        try:
            while not done():
                woken.clear()  # before running the queue: work queued after it wakes the wait
                try:
                    await self._run_app()
                except Exception:
                    if raise_errors:
                        raise
                if app.wait_over(done, deadline, raise_errors):
                    return
                if app.queue.empty():
                    remaining = max(0.0, min(deadline - time.monotonic(), WAIT_SLICE_S))
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(woken.wait(), remaining)
        finally:
            self._waker = None

    async def _in_thread(self, call: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(None, functools.partial(call, *args))


def _deadline(timeout: float | None) -> float:
    if timeout is None or timeout < 0:
        return float("inf")
    return time.monotonic() + timeout
