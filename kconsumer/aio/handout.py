"""Record runs: how ``async for`` on an `AIOConsumer` hands out buffered records.

The consumer does its full check (the member's work, the poll note, the loop's turn, a refill
from librdkafka) in a coroutine, ``next_record()``, which returns a record and then allows a
*run*: up to `allow(n)` further records taken straight from the buffer, one per step, with no
check in between. The run ends early when the buffer empties or someone calls `stop()` (the
member's thread does when it posts work, so a revocation is handed over at the next record).

Two forms with one contract:

* the C extension ``kconsumer.aio._handout`` (built when the package is installed, if a C
  compiler is there): a step of a run costs about two thirds of a sync ``poll()`` call
  (``python -m benchmarks.async_iteration``), because the record's awaitable completes through
  the interpreter's send slot without raising StopIteration;
* `PyRecordRun`, an asynchronous generator: a step costs nearly two ``poll()`` calls.

`record_run()` builds the C form when it was built, else a `PyRecordRun`;
``KCONSUMER_PURE_PYTHON=1`` in the environment picks the Python form (the tests run both).
`IMPLEMENTATION` says which.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from . import _handout

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


class PyRecordRun(Generic[R]):
    """Record runs in pure Python (see the module docstring)."""

    __slots__ = ("_allowed", "_buffer", "_next_record", "_stopped")

    def __init__(self, buffer: deque[R], next_record: Callable[[], Coroutine[Any, Any, R]]) -> None:
        self._buffer = buffer
        self._next_record = next_record
        self._allowed = 0
        self._stopped = False

    def allow(self, count: int) -> None:
        """Hand out up to `count` buffered records before the next check."""
        self._stopped = False
        self._allowed = max(0, count)

    def stop(self) -> None:
        """End the current run: the next step does the full check (safe from any thread)."""
        self._stopped = True

    def __aiter__(self) -> AsyncIterator[R]:
        return self._records()

    async def _records(self) -> AsyncIterator[R]:
        buffer = self._buffer
        popleft = buffer.popleft
        next_record = self._next_record
        while True:
            yield await next_record()
            # A flag, not a countdown, ends the run: a stop from another thread can't be lost
            # between reading and writing a count.
            allowed, self._allowed = self._allowed, 0
            for _ in range(allowed):
                if not buffer or self._stopped:
                    break
                yield popleft()


class RecordRuns(Protocol[R_co]):
    """What both forms offer (the C form's stub: ``_handout.pyi``)."""

    def allow(self, count: int) -> None:
        """Hand out up to `count` buffered records before the next check."""

    def stop(self) -> None:
        """End the current run (safe from any thread)."""

    def __aiter__(self) -> AsyncIterator[R_co]:
        """The records: a run's, then `next_record()`'s, and so on."""


def _c_form() -> type[_handout.RecordRun[Any]] | None:
    if os.environ.get("KCONSUMER_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        from . import _handout
    except ImportError:  # no C compiler when the package was installed: the Python form
        return None
    return _handout.RecordRun


_C_RECORD_RUN = _c_form()
#: "C" or "Python": the form `record_run` builds.
IMPLEMENTATION = "Python" if _C_RECORD_RUN is None else "C"


def record_run(buffer: deque[R], next_record: Callable[[], Coroutine[Any, Any, R]]) -> RecordRuns[R]:
    """Record runs over `buffer`, in the C form when it was built (see the module docstring)."""
    if _C_RECORD_RUN is None:
        return PyRecordRun(buffer, next_record)
    run: RecordRuns[R] = _C_RECORD_RUN(buffer, next_record)
    return run
