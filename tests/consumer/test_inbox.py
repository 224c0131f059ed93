"""`Inbox`: the application work queue that several threads take from, whose waits honour their
timeouts (docs/testing.md, "A wait that outlived its timeout")."""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from typing import Any

import pytest

from kconsumer.client.runtime.inbox import Inbox


def test_items_come_out_in_the_order_they_went_in() -> None:
    inbox: Inbox[int] = Inbox()
    assert inbox.empty() and inbox.qsize() == 0
    for item in (1, 2, 3):
        inbox.put(item)
    assert not inbox.empty() and inbox.qsize() == 3
    assert [inbox.get_nowait(), inbox.get(timeout=1), inbox.get()] == [1, 2, 3]
    assert inbox.empty()


def test_taking_from_an_empty_inbox_raises_empty_at_once_or_at_the_timeout() -> None:
    inbox: Inbox[int] = Inbox()
    with pytest.raises(queue.Empty):
        inbox.get_nowait()
    with pytest.raises(queue.Empty):
        inbox.get(block=False)
    with pytest.raises(queue.Empty):
        inbox.get(timeout=0)
    started = time.monotonic()
    with pytest.raises(queue.Empty):
        inbox.get(timeout=0.05)
    assert 0.045 <= time.monotonic() - started < 1.0


def test_a_waiter_gets_an_item_put_by_another_thread() -> None:
    inbox: Inbox[str] = Inbox()
    threading.Timer(0.05, inbox.put, args=("late",)).start()
    assert inbox.get(timeout=5) == "late"
    got: list[str] = []
    waiter = threading.Thread(target=lambda: got.append(inbox.get()), daemon=True)  # no timeout
    waiter.start()
    threading.Timer(0.05, inbox.put, args=("no timeout",)).start()
    waiter.join(timeout=5)
    assert got == ["no timeout"]


def _longest_wait(inbox: Any, seconds: float) -> float:
    """One thread waits with a 1 ms timeout, again and again, while another puts an item and
    takes it back at once every 0.7 ms: the longest single wait of the first thread."""
    until = time.monotonic() + seconds

    def put_and_take_back() -> None:
        while time.monotonic() < until:
            inbox.put("stolen")
            with contextlib.suppress(queue.Empty):  # empty: the waiter won this one
                inbox.get_nowait()
            time.sleep(0.0007)
        inbox.put("the end")  # lets a waiter that never returned return now

    stealer = threading.Thread(target=put_and_take_back, daemon=True)
    stealer.start()
    longest = 0.0
    while time.monotonic() < until:
        started = time.monotonic()
        with contextlib.suppress(queue.Empty):
            inbox.get(timeout=0.001)
        longest = max(longest, time.monotonic() - started)
    stealer.join(timeout=5)
    return longest


def test_a_wait_ends_at_its_timeout_while_another_thread_takes_the_items() -> None:
    # queue.SimpleQueue here waited until the stealer stopped (10.5 s of 10 s runs)
    assert _longest_wait(Inbox(), seconds=2.0) < 0.5


def test_an_item_put_just_after_a_waiter_looked_wakes_it() -> None:
    """The put comes between the waiter's look at the items and its wait (another thread, let
    in at that moment): the waiter still wakes at once rather than at its timeout."""
    inbox: Inbox[str] = Inbox()
    items = inbox._items

    class PutAfterTheLook:
        looks = 0

        def empty(self) -> bool:
            was_empty = items.empty()
            self.looks += 1
            if self.looks == 1:  # the look under the lock, before waiting
                putter = threading.Thread(target=inbox.put, args=("just in time",))
                putter.start()
                putter.join(timeout=0.2)  # it may need the lock this waiter holds to notify
            return was_empty

        def __getattr__(self, name: str) -> Any:
            return getattr(items, name)

    inbox._items = PutAfterTheLook()  # type: ignore[assignment]
    started = time.monotonic()
    assert inbox.get(timeout=5) == "just in time"
    assert time.monotonic() - started < 2
