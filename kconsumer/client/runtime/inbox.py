"""A queue that several threads may wait on with a timeout: the application work of a consumer
(its poll thread and a thread blocked in a synchronous commit both take from it) and a worker
group's callbacks.

Why not `queue.SimpleQueue` alone: CPython 3.11's ``SimpleQueue.get(timeout=...)`` can wait far
past its timeout, until the next ``put()``, when another thread takes the item it was woken for
and its deadline passes in that moment (the recomputed timeout goes negative, which the lock
takes as "wait forever"). A synchronous commit whose answer the poll thread ran then hung for
good: the answer was there, its waiter never looked again (docs/testing.md, "A wait that
outlived its timeout"). Here items live in a `SimpleQueue` (the empty and non-blocking paths
stay cheap: poll() asks `empty()` on every call) and blocking waits use a
`threading.Condition` whose timeouts hold.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Generic, TypeVar

Item = TypeVar("Item")


class Inbox(Generic[Item]):
    """FIFO items, put by one thread and taken by any; `get` honours its timeout."""

    def __init__(self) -> None:
        self._items: queue.SimpleQueue[Item] = queue.SimpleQueue()
        self._arrived = threading.Condition(threading.Lock())
        self._waiters = 0  # changed under the condition's lock

    def put(self, item: Item) -> None:
        """Queue `item` and wake every waiter (one of them takes it)."""
        self._items.put(item)
        # Read without the lock: a waiter counts itself before it looks at the items, so one
        # that is not counted yet will find this item (notifying costs 0.9 us; most puts have
        # no waiter).
        if self._waiters:
            with self._arrived:
                self._arrived.notify_all()

    def get_nowait(self) -> Item:
        """The next item; raises `queue.Empty` when there is none."""
        return self._items.get_nowait()

    def get(self, block: bool = True, timeout: float | None = None) -> Item:
        """The next item, waiting up to `timeout` seconds (None: until one comes); raises
        `queue.Empty` when none came in time, or at once when not `block`. An item another
        thread takes first does not end the wait."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                return self._items.get_nowait()
            except queue.Empty:  # none yet, or another waiter took it
                pass
            with self._arrived:
                # counted before looking: a put() after the look sees the count and notifies,
                # which waits for this lock, so for the wait below
                self._waiters += 1
                try:
                    if self._items.empty():
                        left = None if deadline is None else deadline - time.monotonic()
                        if not block or (left is not None and left <= 0):
                            raise queue.Empty
                        self._arrived.wait(left)
                finally:
                    self._waiters -= 1

    def qsize(self) -> int:
        """How many items are queued."""
        return self._items.qsize()

    def empty(self) -> bool:
        """Whether nothing is queued."""
        return self._items.empty()
