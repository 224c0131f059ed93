"""What handing out one record costs in each form an asyncio consumer's ``async for`` could take,
next to a plain method call (the sync ``poll()`` loop's form), with no broker and no librdkafka.

``python -m benchmarks.async_iteration [--records 1000000] [--repetitions 7]``

Every form hands out the same records from a deque that is refilled 256 at a time (as both
kconsumer consumers refill from librdkafka) and checks a "member posted work" flag per record,
written out in each form (no extra call);
the loop body is the throughput benchmark's (``message.error()`` and a count). Forms:

* ``method call``: ``poll()`` on an object, in a ``while`` loop (the sync consumer's shape);
* ``async generator``: ``async for`` over an asynchronous generator (`AIOConsumer`'s form until 2026-11-29);
* ``async def __anext__``: a class whose ``__anext__`` is a coroutine returning the record;
* ``types.coroutine __anext__``: the same with a generator-based coroutine;
* ``completed Future``: ``__anext__`` returns an ``asyncio.Future`` whose result is set;
* ``record runs``: what `AIOConsumer` uses (`kconsumer.aio.handout`): a full check, then a run
  of up to 511 records with no check between them, in its Python form (an asynchronous
  generator) and, when the install built it, its C form (records handed over through the
  interpreter's send slot, without StopIteration).

Prints nanoseconds per record (best of the repetitions) and each form's rate against the method
call measured in the same run. Every form written in Python costs more per record than the
method call; the C form of the record runs costs less, which is what puts ``async for`` above
the sync ``poll()`` in the throughput benchmark.
"""

# ruff: noqa: RUF001
from __future__ import annotations

import argparse
import asyncio
import time
import types
from collections import deque
from collections.abc import AsyncIterator, Callable, Generator
from typing import Any, TypeVar

from kconsumer.aio import handout

REFILL = 256


class _Record:
    """Stands in for a librdkafka message: the loop body calls `error()` on it."""

    __slots__ = ()

    def error(self) -> object | None:
        return None


_BATCH = [_Record() for _ in range(REFILL)]


class _Source:
    """A buffer refilled `REFILL` records at a time until `records` were handed out."""

    def __init__(self, records: int) -> None:
        self.left = records
        self.buffer: deque[_Record] = deque()
        self.member_work = False

    def refill(self) -> bool:
        if self.left <= 0:
            return False
        self.buffer.extend(_BATCH)
        self.left -= REFILL
        return True

    def poll(self) -> _Record | None:
        buffer = self.buffer
        if (buffer and not self.member_work) or self.refill():
            return buffer.popleft()
        return None


async def _generator(source: _Source) -> AsyncIterator[_Record]:
    buffer, popleft = source.buffer, source.buffer.popleft
    while buffer or source.refill():
        for _ in range(512):
            if not buffer or source.member_work:
                break
            yield popleft()


_S = TypeVar("_S", bound="_AsyncSource")


class _AsyncSource(_Source):
    """A source that is its own asynchronous iterator; each subclass is one form of `__anext__`
    (the buffer check written out in each, so no form pays an extra call)."""

    def __aiter__(self: _S) -> _S:
        return self


class _CoroutineNext(_AsyncSource):
    async def __anext__(self) -> _Record:
        buffer = self.buffer
        if (buffer and not self.member_work) or self.refill():
            return buffer.popleft()
        raise StopAsyncIteration


class _GeneratorNext(_AsyncSource):
    @types.coroutine
    def __anext__(self) -> Generator[None, None, _Record]:
        yield from ()  # makes this a generator, which types.coroutine makes awaitable
        buffer = self.buffer
        if (buffer and not self.member_work) or self.refill():
            return buffer.popleft()
        raise StopAsyncIteration


class _FutureNext(_AsyncSource):
    def __anext__(self) -> asyncio.Future[_Record]:
        buffer = self.buffer
        if not ((buffer and not self.member_work) or self.refill()):
            raise StopAsyncIteration
        record = buffer.popleft()
        future: asyncio.Future[_Record] = asyncio.get_running_loop().create_future()
        future.set_result(record)
        return future


class _Drained(Exception):
    """The source handed out all its records (ends a record-run form's endless iteration)."""


def _record_runs(form: type[Any], records: int) -> int:
    """kconsumer's own form (`kconsumer.aio.handout`): a full check per run of up to 512."""
    source = _Source(records)
    buffer = source.buffer

    async def next_record() -> _Record:
        if not (buffer or source.refill()):
            raise _Drained
        runs.allow(511)
        return buffer.popleft()

    runs = form(buffer, next_record)

    async def read() -> int:
        seen = 0
        try:
            async for record in runs:
                if record.error() is not None:
                    raise RuntimeError("error record")
                seen += 1
        except _Drained:
            pass
        return seen

    return asyncio.run(read())


def _method_call(records: int) -> int:
    poll, seen = _Source(records).poll, 0
    while True:
        record = poll()
        if record is None:
            return seen
        if record.error() is not None:
            raise RuntimeError("error record")
        seen += 1


async def _async_for(iterable: AsyncIterator[_Record] | _CoroutineNext | _GeneratorNext | _FutureNext) -> int:
    seen = 0
    async for record in iterable:
        if record.error() is not None:
            raise RuntimeError("error record")
        seen += 1
    return seen


def forms(records: int) -> dict[str, Callable[[], int]]:
    """Each form's run over `records` records (returns how many it handed out)."""
    runs: dict[str, Callable[[], int]] = {
        "method call": lambda: _method_call(records),
        "async generator": lambda: asyncio.run(_async_for(_generator(_Source(records)))),
        "async def __anext__": lambda: asyncio.run(_async_for(_CoroutineNext(records))),
        "types.coroutine __anext__": lambda: asyncio.run(_async_for(_GeneratorNext(records))),
        "completed Future": lambda: asyncio.run(_async_for(_FutureNext(records))),
        "record runs, Python": lambda: _record_runs(handout.PyRecordRun, records),
    }
    c_form = handout._C_RECORD_RUN
    if c_form is not None:
        runs["record runs, C"] = lambda: _record_runs(c_form, records)
    return runs


def measure(records: int, repetitions: int) -> dict[str, float]:
    """Best nanoseconds per record of each form, the forms interleaved repetition by repetition."""
    runs = forms(records)
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(repetitions):
        for name, run in runs.items():
            started = time.perf_counter()
            handed_out = run()
            took = time.perf_counter() - started
            if handed_out < records:
                raise RuntimeError(f"{name} handed out {handed_out} of {records} records")
            best[name] = min(best[name], took / handed_out * 1e9)
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repetitions", type=int, default=7)
    arguments = parser.parse_args(argv)
    best = measure(arguments.records, arguments.repetitions)
    baseline = best["method call"]
    print(f"{'form':<28} {'ns/record':>10} {'rate × method call':>20}")
    for name, ns in best.items():
        print(f"{name:<28} {ns:>10.1f} {baseline / ns:>20.3f}")


if __name__ == "__main__":
    main()
