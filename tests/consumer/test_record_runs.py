"""The record runs behind `AIOConsumer`'s ``async for`` (`kconsumer.aio.handout`), both forms
(C and Python) held to one contract: the full check (``next_record()``) starts each run, a run
hands out at most what it was allowed, and ends early when the buffer empties or on `stop()`,
from any thread."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import sys
import threading
import weakref
from collections import deque
from typing import Any

import pytest

from kconsumer.aio import handout


class Checks:
    """A stand-in for the consumer's full check: hands out the next value it is given and
    allows a run of `run` more; counts its calls."""

    def __init__(self, buffer: deque[Any], run: int) -> None:
        self.buffer = buffer
        self.run = run
        self.calls = 0
        self.records = handout.record_run(buffer, self.next_record)
        self.error: BaseException | None = None

    async def next_record(self) -> Any:
        self.calls += 1
        if self.error is not None:
            raise self.error
        if not self.buffer:
            await asyncio.sleep(0)
            raise LookupError("nothing buffered")
        self.records.allow(self.run)
        return self.buffer.popleft()


def _take(checks: Checks, count: int) -> list[Any]:
    async def take() -> list[Any]:
        taken: list[Any] = []
        async for value in checks.records:
            taken.append(value)
            if len(taken) == count:
                break
        return taken

    return asyncio.run(take())


def test_a_run_hands_out_what_it_was_allowed_between_two_checks(record_run_form: str) -> None:
    checks = Checks(deque(range(10)), run=3)
    assert _take(checks, 9) == list(range(9))
    assert checks.calls == 3  # values 0, 4 and 8 came from the check, the rest from runs


def test_a_run_ends_when_the_buffer_empties(record_run_form: str) -> None:
    buffer: deque[Any] = deque(range(3))
    checks = Checks(buffer, run=100)
    with pytest.raises(LookupError):
        _take(checks, 4)
    assert checks.calls == 2


def test_stop_ends_a_run_at_the_next_record(record_run_form: str) -> None:
    checks = Checks(deque(range(10)), run=100)

    async def take() -> list[Any]:
        taken: list[Any] = []
        async for value in checks.records:
            taken.append(value)
            if value == 2:
                checks.records.stop()
            if len(taken) == 5:
                break
        return taken

    assert asyncio.run(take()) == [0, 1, 2, 3, 4]
    assert checks.calls == 2  # 3 came from the check after the stop, 4 from the new run


def test_a_stop_from_another_thread_ends_the_run_at_the_next_record(record_run_form: str) -> None:
    """As the member's thread does when it posts work while the loop body runs: round after
    round, the record after the stop comes from the full check."""
    checks = Checks(deque(range(10_000)), run=1_000_000)
    rounds = 50
    asked, stopped = threading.Event(), threading.Event()

    def member() -> None:
        for _ in range(rounds):
            if not asked.wait(10):
                return
            asked.clear()
            checks.records.stop()
            stopped.set()

    async def take() -> list[tuple[int, int]]:
        thread = threading.Thread(target=member)
        thread.start()
        calls: list[tuple[int, int]] = []
        records = aiter(checks.records)
        try:
            async for _value in records:
                before = checks.calls
                if len(calls) == rounds:
                    break
                asked.set()
                assert stopped.wait(10), "the member's thread did not stop the run"
                stopped.clear()
                await anext(records)
                calls.append((before, checks.calls))
        finally:
            asked.set()
            thread.join()
        return calls

    calls = asyncio.run(take())
    assert len(calls) == rounds
    assert all(after == before + 1 for before, after in calls), calls


def test_an_error_of_the_check_reaches_the_loop_and_a_new_iteration_goes_on(record_run_form: str) -> None:
    checks = Checks(deque(range(10)), run=1)
    checks.error = RuntimeError("the member failed")
    with pytest.raises(RuntimeError, match="the member failed"):
        _take(checks, 1)
    checks.error = None
    assert _take(checks, 2) == [0, 1]


def test_a_cancelled_check_cancels_the_iteration(record_run_form: str) -> None:
    gate: deque[Any] = deque()

    async def slow_check() -> Any:
        await asyncio.sleep(10)
        return gate.popleft()

    records = handout.record_run(gate, slow_check)

    async def main() -> None:
        async def iterate() -> None:
            async for _value in records:
                pass

        task = asyncio.ensure_future(iterate())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_anext_and_wait_for_take_one_record_each(record_run_form: str) -> None:
    """Records awaited outside ``async for`` (anext(), wait_for wrapping the awaitable in a
    task, an awaitable held while the next is asked for) each come once and in order."""
    checks = Checks(deque(range(10)), run=100)

    async def main() -> list[Any]:
        iterator = aiter(checks.records)
        taken = [await anext(iterator), await asyncio.wait_for(anext(iterator), 1.0)]
        first, second = anext(iterator), anext(iterator)
        taken += [await second, await first]
        return taken

    taken = asyncio.run(main())
    assert sorted(taken) == [0, 1, 2, 3] and taken[:2] == [0, 1]


def test_a_record_never_awaited_is_not_lost(record_run_form: str) -> None:
    """An awaitable dropped unawaited (an ``anext()`` never awaited, a ``wait_for`` whose task
    is cancelled before its first step) loses no record and changes no order; after a stop the
    full check comes first and finds that record at the front of the buffer."""
    checks = Checks(deque(range(10)), run=100)

    async def main() -> list[Any]:
        records = aiter(checks.records)
        taken = [await anext(records)]
        dropped = anext(records)
        del dropped
        # Python 3.11 cancels the task before it awaits; later versions await at once
        with contextlib.suppress(TimeoutError):
            taken.append(await asyncio.wait_for(anext(records), 0))
        # A cancellation that reaches an asynchronous generator ends it (the Python form): the
        # application's next `async for` starts a new iteration, which goes on where it ended.
        records = aiter(checks.records)
        dropped = anext(records)
        del dropped
        checks.records.stop()
        calls = checks.calls
        taken.append(await anext(records))
        assert checks.calls == calls + 1, "after a stop the full check comes first"
        held = anext(records)  # the C form's reused awaitable, holding the next record
        dropped = anext(records)  # so a fresh awaitable holds the one after
        del dropped
        taken.append(await held)
        async for value in records:
            taken.append(value)
            if len(taken) == 10:
                break
        return taken

    assert asyncio.run(main()) == list(range(10))


def test_values_come_whole_under_a_tracer(record_run_form: str) -> None:
    """Under a tracer (a debugger, coverage) the interpreter takes the value from StopIteration
    instead of the send slot: a tuple record stays one value."""
    checks = Checks(deque([(1, 2), (3, 4), (5, 6)]), run=5)
    previous = sys.gettrace()
    sys.settrace(lambda *_args: None)
    try:
        taken = _take(checks, 3)
    finally:
        sys.settrace(previous)
    assert taken == [(1, 2), (3, 4), (5, 6)]


def test_a_consumer_and_its_runs_are_collected_together(record_run_form: str) -> None:
    """The runs hold the consumer's bound check, which holds the runs: the cycle is collected."""
    checks = Checks(deque(range(3)), run=1)
    _take(checks, 3)
    gone = weakref.ref(checks)
    del checks
    gc.collect()
    assert gone() is None
