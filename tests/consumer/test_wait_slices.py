"""The blocking consumer waits inside librdkafka in slices (librdkafka's wait cannot be woken
from another thread): short ones while the member may post work (a rebalance under way, a
request in flight), long ones only while it cannot, ending at its next timer. A new assignment
brought by a heartbeat answer therefore reaches the application's callback within a short
slice, not after the rest of a long one (it took 25-45 ms with 50 ms slices)."""

from __future__ import annotations

import logging
import socket
import statistics
import threading
import time
from typing import Any

import pytest
from consumer_harness import wait_until

from kconsumer import Consumer
from kconsumer.client.member.events import Poll
from kconsumer.client.member.state import MemberState
from kconsumer.client.runtime.member_runtime import BUSY_SLICE_S, IDLE_SLICE_S, wait_slice
from kconsumer.testing import ReferenceCluster

S = MemberState


def test_short_slices_while_work_may_come_long_ones_up_to_the_next_timer() -> None:
    now = 100.0
    for state in (S.JOINING, S.RECONCILING, S.ACKNOWLEDGING, S.LEAVING):
        assert wait_slice(state, now + 60, now) == BUSY_SLICE_S  # a rebalance or leave under way
    assert wait_slice(S.STABLE, 0.0, now) == BUSY_SLICE_S  # a request in flight
    assert wait_slice(S.STABLE, now + 60, now) == IDLE_SLICE_S  # nothing before a minute
    assert wait_slice(S.STABLE, now + 0.02, now) == pytest.approx(0.02)  # until the next heartbeat
    assert wait_slice(S.STABLE, now + 0.001, now) == BUSY_SLICE_S  # never shorter than a short one
    assert wait_slice(S.STABLE, now - 1, now) == BUSY_SLICE_S  # a timer overdue: it sends now


class _AssignmentAnswers(logging.Handler):
    """The monotonic times of the heartbeat answers that brought `client`'s member partitions
    (from the ``kconsumer.trace`` lines of its thread)."""

    def __init__(self, client: str) -> None:
        super().__init__(logging.DEBUG)
        self.thread = f"kconsumer-{client}"
        self.times: list[float] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        event, _, effects = message.partition("->")
        if (
            record.threadName == self.thread
            and "HeartbeatResponseReceived" in event
            and "InvokeCallback" in effects
        ):
            self.times.append(time.monotonic())


def _hand_back(settings: dict[str, Any], assigned: list[float], answers: _AssignmentAnswers) -> float:
    """Another member takes two partitions and leaves; the seconds from the heartbeat answer that
    gave them back to the waiting member to its assignment callback."""
    other = Consumer({**settings, "client.id": "other"})
    other.subscribe(["slices"])
    wait_until(
        lambda: len(other.assignment()) == 2, before=lambda: other.poll(0.05), what="the other member's two"
    )
    count = len(assigned)
    other.close()  # its partitions come back with the waiting member's next heartbeat
    wait_until(lambda: len(assigned) > count, what="the two partitions back")
    answered = [t for t in answers.times if t <= assigned[-1]]
    return assigned[-1] - answered[-1]


@pytest.mark.timing  # a latency bound: run on a quiet machine (tests/run_all.py)
def test_an_assignment_reaches_the_callback_of_a_consumer_waiting_in_consume() -> None:
    answers = _AssignmentAnswers("waiting")
    trace = logging.getLogger("kconsumer.trace")
    trace.addHandler(answers)
    level = trace.level
    trace.setLevel(logging.DEBUG)
    assigned: list[float] = []
    stop = threading.Event()
    try:
        # 530 ms: not a multiple of the 50 ms slices, so the answers land anywhere in them.
        with ReferenceCluster(heartbeat_interval_ms=530, session_timeout_ms=6000) as cluster:
            cluster.create_topic("slices", 4)
            settings: dict[str, Any] = {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "slices",
                "auto.offset.reset": "earliest",
            }
            waiting = Consumer({**settings, "client.id": "waiting"})

            def on_assign(_consumer: Any, partitions: list[Any]) -> None:
                if partitions:
                    assigned.append(time.monotonic())

            waiting.subscribe(["slices"], on_assign=on_assign)

            def loop() -> None:
                while not stop.is_set():
                    waiting.consume(500, 1.0)

            thread = threading.Thread(target=loop, daemon=True)
            thread.start()
            wait_until(lambda: len(waiting.assignment()) == 4, what="all four partitions")
            delays = [_hand_back(settings, assigned, answers) for _ in range(5)]
            stop.set()
            thread.join(5)
            waiting.close()
    finally:
        stop.set()
        trace.removeHandler(answers)
        trace.setLevel(level)
    assert statistics.median(delays) < 0.012, delays


def test_the_end_of_a_timeout_is_waited_not_spun_through() -> None:
    """librdkafka waits in whole milliseconds: a wait under one returns at once. The last
    fraction of a poll's or consume's timeout is waited as one millisecond (it was spun through:
    hundreds of calls that did not wait, while the member was joining)."""
    with socket.socket() as unused:  # a port nothing listens on: the member stays joining
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    consumer = Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": "spin", "client.id": "spin"})
    waits: list[float] = []
    rd_poll, rd_consume = consumer._rd_poll, consumer._rd_consume

    def poll(timeout: float) -> Any:
        waits.append(timeout)
        return rd_poll(timeout)

    def consume(num_messages: int, timeout: float) -> Any:
        waits.append(timeout)
        return rd_consume(num_messages, timeout)

    consumer._rd_poll, consumer._rd_consume = poll, consume
    try:
        consumer.subscribe(["slices"])  # joining: short slices
        started = time.monotonic()
        for _ in range(10):
            assert consumer.poll(0.05) is None
            assert consumer.consume(10, 0.05) == []
        took = time.monotonic() - started
    finally:
        consumer.close(timeout=1.0)
    assert took >= 1.0  # each call waited its whole timeout
    assert min(waits) >= 0.001, sorted(waits)[:10]
    assert len(waits) < 20 * (0.05 / BUSY_SLICE_S + 3), len(waits)


def test_work_posted_to_a_quiet_member_shortens_the_wait_until_the_member_took_it() -> None:
    """A consumer that just subscribed (or finished a callback) waits in short slices even before
    its background thread has taken the event: the answer may bring work at once. It waited in
    long ones, as a member not yet subscribed can post nothing: a newcomer's first assignment
    reached its callback up to 50 ms late."""
    consumer = Consumer({"bootstrap.servers": "127.0.0.1:9", "group.id": "quiet", "client.id": "quiet"})
    runtime = consumer._runtime
    assert runtime is not None
    background_free = threading.Event()
    try:
        assert runtime.wait_slice(time.monotonic()) == IDLE_SLICE_S  # not subscribed: quiet
        runtime._bg.call(background_free.wait, 5.0)  # the background thread is busy elsewhere
        runtime.post(Poll(), brings_work=False)  # a note that it polled brings no work
        assert runtime.wait_slice(time.monotonic()) == IDLE_SLICE_S
        consumer.subscribe(["slices"])
        assert runtime.wait_slice(time.monotonic()) == BUSY_SLICE_S
        background_free.set()
        wait_until(lambda: runtime.state is S.JOINING, what="the member joining")
        assert runtime.wait_slice(time.monotonic()) == BUSY_SLICE_S
    finally:
        background_free.set()
        consumer.close()
