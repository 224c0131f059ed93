"""SIGTERM in a stream-reader process: it ends the reader (so the member leaves), but never
interrupts a leave already under way (Spark closes the runner's socket and signals it at once)."""

from __future__ import annotations

import signal
import threading
from typing import Any

import pytest

from kconsumer.spark.membership import MemberRegistry, sigterm_handler


def test_sigterm_outside_a_leave_raises_system_exit() -> None:
    previous = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(SystemExit) as exit_info:
            sigterm_handler(threading.Event())(signal.SIGTERM, None)
        assert exit_info.value.code == 128 + signal.SIGTERM
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_sigterm_while_a_member_leaves_does_not_interrupt_it() -> None:
    registry = MemberRegistry()
    handler = sigterm_handler(registry.leaving)
    seen: list[str] = []

    class Member:
        def close(self) -> None:
            handler(signal.SIGTERM, None)  # the signal lands in the middle of the leave
            seen.append("left")

    registry.get("reader-1", lambda: Member())  # type: ignore[arg-type, return-value]
    registry.close("reader-1")
    assert seen == ["left"]
    assert not registry.leaving.is_set()  # nobody left to protect: a later SIGTERM ends the process


def test_sigterm_after_a_leave_ends_the_process_again() -> None:
    registry = MemberRegistry()

    class Member:
        def close(self) -> None:
            assert registry.leaving.is_set()

    first: Any = Member()
    second: Any = Member()
    registry.get("a", lambda: first)
    registry.get("b", lambda: second)
    registry.close("a")
    assert not registry.leaving.is_set() and len(registry) == 1
