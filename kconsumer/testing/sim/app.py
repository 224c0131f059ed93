"""The simulated application thread of one member process: the application core that ships
(`kconsumer.client.application.core.ApplicationCore`), driven by a poll loop on the simulated clock.

This module is the driver and the application, not a copy of the core's policy: the core runs
the member's queued work (stopping and starting fetching, rebalance callbacks, positions for
commits and their "moved since the last commit" filter, reset positions, finished commits,
errors, the end of a leave) exactly as `Consumer` and `AIOConsumer` do; the simulation plugs in
its ports. `SimApp` is the fetch path (positions advance as the application processes records
of the simulated topics), the member link (events go to the simulated member process; ListOffsets
is answered from the topics' logs) and its work queue (a deque). Rebalance callbacks are
awaitables, as the asyncio consumer runs them: they take simulated time and the driver finishes
them (`ApplicationCore.finish_awaited`).

Each poll: the `Poll` event goes to the member; the queued work runs; then the application
"processes" up to N records of the partitions it fetches (advancing their positions) and
sometimes commits through the core (``commit()`` of every owned partition, or explicit offsets
of what it processed, maybe synchronously). The next poll follows after the processing time and
a gap. Faults make it stop polling for a while (max.poll.interval.ms overruns) and make
callbacks slow.

Ownership as the application sees it ("holding" a partition) starts with
``on_partitions_assigned`` (or fetching, without a listener) and ends when
``on_partitions_revoked``/``on_partitions_lost`` returns (or fetching stops, without a listener).
"""

from __future__ import annotations

import contextlib
import queue
from collections import deque
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from confluent_kafka import KafkaException, TopicPartition

from ...client.application.core import ApplicationCore
from ...client.application.ports import ApplicationSettings
from ...client.application.state import Callbacks
from ...client.fetch import RESET_EARLIEST, RESET_LATEST
from ...client.member.effects import ApplicationWork
from ...client.member.events import Close, Event, Poll, Subscribe, Unsubscribe
from ...client.member.model import CallbackKind, LeaveReason, PartitionOffset, TopicIdPartition
from ...client.member.state import MemberState
from .host import GROUP
from .topics import Key

if TYPE_CHECKING:
    from .runtime import SimMember

#: How often a blocked synchronous commit runs the application-thread queue (the facade's slice).
_WAIT_SLICE_MS = 5
#: How long ``commit(asynchronous=False)`` waits (the core gives up at its 10 s deadline first).
_SYNC_COMMIT_WAIT_MS = 12_000

NameKey = tuple[str, int]


@dataclass
class Fetch:
    """A partition being fetched and the position of the next record to process."""

    tp: TopicIdPartition
    position: int


class WorkDeque(deque[ApplicationWork]):
    """The member's work for the simulated application thread (the core's `WorkQueue`)."""

    def get_nowait(self) -> ApplicationWork:
        if not self:
            raise queue.Empty
        return self.popleft()

    def get(self, block: bool = True, timeout: float | None = None) -> ApplicationWork:
        return self.get_nowait()  # nothing blocks in the simulation

    def qsize(self) -> int:
        return len(self)

    def empty(self) -> bool:
        return not self


@dataclass
class RunningCallback:
    """A rebalance callback taking `latency_ms` of simulated time (an awaitable to the core)."""

    kind: CallbackKind
    keys: tuple[Key, ...]
    latency_ms: int

    def __await__(self) -> Generator[None, None, None]:  # pragma: no cover - the driver finishes it
        yield None


class SimCallbacks:
    """The application's rebalance callbacks (confluent-kafka style): it holds partitions from
    on_assign, commits inside on_revoke when the seed says so, and takes its time."""

    def __init__(self, app: SimApp) -> None:
        self._app = app

    def callbacks(self) -> Callbacks:
        """As registered with ``subscribe(on_assign=..., on_revoke=..., on_lost=...)``."""
        return Callbacks(self.on_assign, self.on_revoke, self.on_lost)

    def on_assign(self, consumer: object, partitions: list[TopicPartition]) -> RunningCallback:
        app = self._app
        assigning = tuple(app.core.state.assigning.values())
        for tp in assigning:
            app.forget_pending((tp.topic, tp.partition))
        keys = tuple(tp.key for tp in assigning)
        app.hold(keys)
        return RunningCallback(CallbackKind.ASSIGNED, keys, app.callback_latency())

    def on_revoke(self, consumer: object, partitions: list[TopicPartition]) -> RunningCallback:
        app = self._app
        keys = tuple(tp.key for tp in app.core.state.revoking.values())
        if app.params.commit_in_revoke:
            app.core.start_commit(None, asynchronous=True)  # covers the partitions being revoked
        return RunningCallback(CallbackKind.REVOKED, keys, app.callback_latency())

    def on_lost(self, consumer: object, partitions: list[TopicPartition]) -> RunningCallback:
        app = self._app
        keys = tuple(tp.key for tp in app.core.state.losing.values())
        return RunningCallback(CallbackKind.LOST, keys, app.callback_latency())


class SimApp:
    """The application thread of one member process."""

    def __init__(self, proc: SimMember) -> None:
        self.proc = proc
        self.world = proc.world
        self.params = proc.world.params
        self.queue = WorkDeque()
        self.fetching: dict[Key, Fetch] = {}
        self._fetched_as: dict[NameKey, Key] = {}
        #: Offsets processed and not yet committed by the application itself.
        self.pending: dict[Key, PartitionOffset] = {}
        #: (key, start, end) of the records processed since the last transaction (exactly once).
        self.txn_records: list[tuple[Key, int, int]] = []
        #: Inside a transaction (exactly once): the thread is blocked until `poll` is called.
        self.in_transaction = False
        self.holds: set[Key] = set()
        self.polls = 0
        self.stall_until = 0
        self.slow_callbacks = 0
        self.leaving: LeaveReason | None = None
        self.subscribed = False
        self._in_poll = False
        self._failed = False
        self._waiting_token: int | None = None
        self._waiting_deadline = 0
        self._parked = False
        self._calls: list[Callable[[], None]] = []
        self._last_poll_note = -(10**9)
        self._poll_note_interval = min(1_000, self.params.max_poll_interval_ms // 4)
        settings = ApplicationSettings(auto_store=not self.params.store_offsets)
        self.core = ApplicationCore(self, self, self.queue, settings, clock=self._seconds)
        self.core.awaitable_callbacks = True
        if self.params.callbacks:
            self.core.callbacks = SimCallbacks(self).callbacks()

    def _seconds(self) -> float:
        """The simulated clock, in seconds (the core's clock)."""
        return self.world.sched.now / 1000

    # -- the core's ports: member link and fetch path -----------------------------------------------

    @property
    def group_id(self) -> str:
        """The group every simulated member belongs to."""
        return GROUP

    @property
    def state(self) -> MemberState:
        """Where the member is in the group."""
        return self.proc.session.state

    def post(self, event: Event) -> None:
        """Hand `event` to the member process."""
        self.proc.post(event)

    def lookup_offsets(
        self, wanted: dict[NameKey, int], isolation: int, timeout_s: float
    ) -> dict[NameKey, int]:
        """ListOffsets by topic name, answered from the topics' logs (a deleted name fails)."""
        topics = self.world.topics
        found = {}
        for (name, partition), timestamp in wanted.items():
            topic = topics.live.get(name)
            if topic is None:
                raise LookupError(f"ListOffsets: unknown topic {name}")
            found[(name, partition)] = 0 if timestamp == -2 else topics.hw.get((topic.topic_id, partition), 0)
        return found

    def positions(self, partitions: Iterable[NameKey]) -> dict[NameKey, tuple[int, int | None]]:
        """The position of each fetched partition among `partitions`."""
        found: dict[NameKey, tuple[int, int | None]] = {}
        for name_key in partitions:
            key = self._fetched_as.get(name_key)
            if key is not None:
                found[name_key] = (self.fetching[key].position, None)
        return found

    def start(self, starts: Sequence[PartitionOffset]) -> None:
        """Fetch each partition from its offset (a logical one resolved as the broker would);
        like librdkafka, a partition is fetched by name, one incarnation of a topic at a time."""
        for start in starts:
            tp = start.partition
            name_key = (tp.topic, tp.partition)
            self._stop_fetching(name_key)
            offset = start.offset
            if offset == RESET_EARLIEST:
                offset = 0
            elif offset == RESET_LATEST:
                offset = self.world.topics.hw.get(tp.key, 0)
            self.forget_pending(name_key)
            self.fetching[tp.key] = Fetch(tp, offset)
            self._fetched_as[name_key] = tp.key
            self.hold((tp.key,))
            self.world.checker.started(self.proc, tp.key)

    def stop(self, partitions: Sequence[TopicIdPartition]) -> None:
        """Stop fetching `partitions` (without a listener, the application lets them go)."""
        for tp in partitions:
            self._stop_fetching((tp.topic, tp.partition))
        if not self.params.callbacks:
            self.release(tuple(tp.key for tp in partitions))

    def forget_pending(self, name_key: NameKey) -> None:
        """What the application processed of a partition in an earlier ownership is not committed
        once it has the partition again (as an application resets its state in on_assign): the
        commit API names partitions, so those offsets would land on the new ownership, and a
        recreated topic's partition has the same name."""
        for key in [k for k, o in self.pending.items() if (o.partition.topic, k[1]) == name_key]:
            del self.pending[key]

    def learn_topics(self, topics: set[str]) -> None:
        """Metadata is always known in the simulation."""

    def _stop_fetching(self, name_key: NameKey) -> None:
        key = self._fetched_as.pop(name_key, None)
        if key is not None and self.fetching.pop(key, None) is not None:
            self.world.checker.stopped(self.proc, key)

    # -- the application's calls ----------------------------------------------------------------------

    def begin(self, topics: tuple[str, ...], pattern: str | None) -> None:
        """Subscribe and start polling."""
        self.subscribe(topics, pattern)
        self.proc.deliver_after(self.world.rng.randint(0, 50), self._poll)

    def subscribe(self, topics: tuple[str, ...], pattern: str | None) -> None:
        """``consumer.subscribe(...)``, with the listener when the seed registers callbacks (a
        classic member matches a pattern against the cluster's topics itself)."""
        self.subscribed = True
        self.proc.post(Subscribe(topics=topics, pattern=pattern, callbacks=self.core.callbacks.kinds()))

    def unsubscribe(self) -> None:
        """``consumer.unsubscribe()``: polls (running the queue) until the leave is done."""
        if self.leaving is None:
            self.leaving = LeaveReason.UNSUBSCRIBE
            self.subscribed = False
            self.core.state.leaves.discard(LeaveReason.UNSUBSCRIBE)
            self.proc.post(Unsubscribe())

    def close(self) -> None:
        """``consumer.close()``: runs the queue until the leave is done, then the process exits."""
        if self.leaving is not LeaveReason.CLOSE:
            self.leaving = LeaveReason.CLOSE
            self.proc.post(Close(deadline_ms=self.world.sched.now + 10_000))

    @property
    def polling(self) -> bool:
        """Polling normally: not stalled by an overrun and not inside a callback."""
        return self.world.sched.now >= self.stall_until and self.core.awaiting is None

    def call(self, action: Callable[[], None]) -> None:
        """Run an application call (subscribe, unsubscribe, close, ...) on the application thread:
        now if it is between polls, else as soon as the current poll returns; after an unsubscribe
        or close, once that is done (those calls block until their leave completes)."""
        self._calls.append(action)
        if not self._in_poll:
            self._run_calls()

    def enqueue(self, work: ApplicationWork) -> None:
        """Work for the application thread, run at its next poll (in order)."""
        self.queue.append(work)
        if self._parked:
            self._parked = False
            self.proc.deliver_after(self.world.rng.randint(0, _WAIT_SLICE_MS), self._wait_step)

    # -- the poll loop --------------------------------------------------------------------------------

    def poll(self) -> None:
        """The next poll (after a transaction that blocked the application thread ended)."""
        self._poll()

    def _poll(self) -> None:
        if self._in_poll or self.in_transaction:
            return
        now = self.world.sched.now
        if now < self.stall_until:
            self.proc.deliver_after(self.stall_until - now, self._poll)
            return
        self._in_poll = True
        self.polls += 1
        if now - self._last_poll_note >= self._poll_note_interval:
            # The facade tells the core about polls at most this often (Consumer._note_poll).
            self._last_poll_note = now
            self.proc.post(Poll())
        self._drain()

    def _drain(self) -> None:
        if not self._run_work():
            return
        if self._waiting_token is not None:
            if not self.core.commit_finished(self._waiting_token):
                # A synchronous commit blocks the application thread: it only runs the queue.
                self._park()
                return
            self._finish_sync_commit()
        cost = 0
        blocked = False
        if self.leaving is None:
            cost = self._process()
            if self.world.exactly_once is not None:
                self.world.exactly_once.transact(self)  # blocks the thread until it ends
            else:
                blocked = self._maybe_commit()
        if blocked:
            self._park()
            return
        self._in_poll = False
        self._run_calls()
        low, high = self.params.poll_gap_ms
        self.proc.deliver_after(cost + self.world.rng.randint(low, high), self._poll)

    def _run_work(self) -> bool:
        """Run the queued work through the application core. False when a callback is under
        way (its end resumes the drain) or the process ended."""
        core = self.core
        while True:
            with contextlib.suppress(Exception):  # what poll() raises to the application
                core.run()
            self._after_work()
            if not self.proc.alive:
                return False
            awaited = core.awaiting
            if awaited is None:
                return True
            if awaited.in_thread:  # StartFetching's lookups: no simulated time passes
                try:
                    result, error = awaited.awaitable(), None
                except Exception as exc:
                    result, error = None, exc
                core.finish_awaited(result, error)
                continue
            callback: RunningCallback = awaited.awaitable
            if callback.latency_ms > 0:
                self.proc.deliver_after(callback.latency_ms, self._callback_returned, True)
                return False
            self._callback_returned(False)

    def _after_work(self) -> None:
        """What the application learns from the work the core ran: a fatal error (the process
        exits and is restarted), the end of its leave."""
        state = self.core.state
        state.error_events.clear()  # handed to the application by poll()
        proc = self.proc
        if state.fatal is not None and not self._failed:
            self._failed = True
            self.world.member_failed(proc)
        if LeaveReason.CLOSE in state.leaves and proc.alive:
            self.world.checker.closed(proc)
            proc.die("closed")
            self.world.member_exited(proc)
        elif LeaveReason.UNSUBSCRIBE in state.leaves and self.leaving is LeaveReason.UNSUBSCRIBE:
            state.leaves.discard(LeaveReason.UNSUBSCRIBE)
            self.leaving = None

    def _callback_returned(self, resume: bool) -> None:
        awaited = self.core.awaiting
        assert awaited is not None
        callback: RunningCallback = awaited.awaitable
        if callback.kind in (CallbackKind.REVOKED, CallbackKind.LOST):
            self.release(callback.keys)
        self.core.finish_awaited(None, None)
        if resume:
            self._drain()

    def _park(self) -> None:
        """Blocked in ``commit(asynchronous=False)``: the facade runs the queue as work arrives
        until the commit is done; the simulation wakes it when work arrives, or at its deadline."""
        if self.queue:
            self.proc.deliver_after(_WAIT_SLICE_MS, self._wait_step)
        else:
            self._parked = True
            self.proc.deliver_after(self._waiting_deadline + 1 - self.world.sched.now, self._wake)

    def _wake(self) -> None:
        if self._parked:
            self._parked = False
            self._wait_step()

    def _wait_step(self) -> None:
        """One step of ``commit(asynchronous=False)`` waiting for its result."""
        if self._waiting_token is not None and self.world.sched.now > self._waiting_deadline:
            self.core.forget_commit(self._waiting_token)  # as the facade does when it gives up
            self._waiting_token = None  # the facade raises a timeout to the application
        if self._waiting_token is None:
            self._in_poll = False
            self._run_calls()
            self.proc.deliver_after(0, self._poll)
            return
        self._in_poll = True
        self._drain()

    def _finish_sync_commit(self) -> None:
        token, self._waiting_token = self._waiting_token, None
        assert token is not None
        with contextlib.suppress(KafkaException):  # raised to the application, which carries on
            self.core.finish_commit(token)

    def _run_calls(self) -> None:
        while self._calls and self.leaving is None and self.proc.alive:
            self._calls.pop(0)()

    def callback_latency(self) -> int:
        """How long the rebalance callback starting now takes (slow when a fault says so)."""
        rng = self.world.rng
        if self.slow_callbacks > 0:
            self.slow_callbacks -= 1
            max_poll = self.params.max_poll_interval_ms
            return rng.randint(max_poll // 5, max_poll * 3 // 2)
        low, high = self.params.callback_ms
        return rng.randint(low, high)

    def hold(self, keys: tuple[Key, ...]) -> None:
        """The application starts working on `keys`."""
        new = [key for key in keys if key not in self.holds]
        if new:
            self.holds.update(new)
            self.world.checker.held(self.proc, tuple(new))

    def release(self, keys: tuple[Key, ...]) -> None:
        """The application is done with `keys`."""
        self.holds.difference_update(keys)
        self.world.checker.released(self.proc, keys)

    # -- records and commits --------------------------------------------------------------------------------

    def _process(self) -> int:
        """Process up to the per-poll maximum of records; returns the time it took."""
        if not self.fetching:
            return 0
        topics = self.world.topics
        keys = sorted(self.fetching, key=lambda k: (self.fetching[k].tp.topic, k[1], k[0].bytes))
        first = self.polls % len(keys)
        budget = self.params.max_records_per_poll
        done = 0
        processed: list[TopicPartition] = []
        for key in keys[first:] + keys[:first]:
            if not topics.is_live(key[0]):
                continue
            fetch = self.fetching[key]
            available = topics.hw.get(key, 0) - fetch.position
            if available <= 0:
                continue
            n = min(available, budget)
            self.world.checker.processed(self.proc, key, fetch.position, fetch.position + n)
            self.txn_records.append((key, fetch.position, fetch.position + n))
            fetch.position += n
            self.pending[key] = PartitionOffset(fetch.tp, fetch.position)
            processed.append(TopicPartition(fetch.tp.topic, fetch.tp.partition, fetch.position))
            budget -= n
            done += n
            if budget == 0:
                break
        if processed and self.params.store_offsets:
            self.core.store(processed)  # ``consumer.store_offsets(offsets=...)``
        return done * self.params.record_cost_ms

    def _maybe_commit(self) -> bool:
        """``consumer.commit()`` every few polls, through the core: of every owned partition at
        its position, or explicit offsets of what was processed since the last commit (which may
        include partitions revoked since: the member must not commit those); synchronous commits
        block: True then."""
        every = self.params.manual_commit_every
        if not every or self.polls % every:
            return False
        rng = self.world.rng
        offsets: list[TopicPartition] | None = None
        if rng.random() >= 0.5:
            pending = sorted(
                self.pending.values(), key=lambda o: (o.partition.topic_id.bytes, o.partition.partition)
            )
            offsets = [TopicPartition(o.partition.topic, o.partition.partition, o.offset) for o in pending]
        elif not self.fetching:
            offsets = []
        self.pending.clear()
        if offsets is not None and not offsets:
            return False
        sync = rng.random() < 0.5
        try:
            token = self.core.start_commit(offsets, asynchronous=not sync)
        except KafkaException:  # nothing to commit (raised by a synchronous commit)
            return False
        if token is None:
            return False
        self._waiting_token = token
        self._waiting_deadline = self.world.sched.now + _SYNC_COMMIT_WAIT_MS
        return True

    # -- process end ----------------------------------------------------------------------------------------

    def gone(self) -> None:
        """The process ended: it fetches and holds nothing any more."""
        self.fetching.clear()
        self._fetched_as.clear()
        self.holds.clear()
        self.queue.clear()
