"""The one way tests wait for something to happen: `wait_until`."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    condition: Callable[[], T],
    timeout: float = 15.0,
    interval: float = 0.02,
    what: str = "",
    *,
    before: Callable[[], object] | None = None,
    stop_if: Callable[[], str | None] | None = None,
    describe: Callable[[], str] | None = None,
) -> T:
    """Call `condition` until it returns something truthy (returned), or fail after `timeout`
    seconds naming `what`. `before` runs before each check (say, polling consumers); `stop_if`
    returns a reason to fail at once (say, a streaming query that died); `describe` adds the
    state worth seeing to a timeout's message."""
    deadline = time.monotonic() + timeout
    while True:
        if before is not None:
            before()
        value = condition()
        if value:
            return value
        reason = None if stop_if is None else stop_if()
        if reason is not None:
            raise AssertionError(f"stopped while waiting for {what or condition}: {reason}")
        if time.monotonic() > deadline:
            state = "" if describe is None else f": {describe()}"
            raise AssertionError(f"timed out after {timeout} s waiting for {what or condition}{state}")
        if before is None:
            time.sleep(interval)
