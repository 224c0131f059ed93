"""The simulated application thread of one member process: what `kconsumer/client/app_thread.py` and the
consumer facade do, driven by a poll loop on the simulated clock.

Each poll: the `Poll` event goes to the core; the queued work runs in order (stop fetching and
report the positions, start fetching at the given offsets, rebalance callbacks taking their time,
reading positions for a commit, errors, the end of a leave); then the application "processes" up
to N records of the partitions it fetches (advancing their positions) and sometimes commits
(the positions, or explicit offsets of what it processed). The next poll follows after the
processing time and a gap. Faults make it stop polling for a while (max.poll.interval.ms
overruns) and make callbacks slow.

Ownership as the application sees it ("holding" a partition) starts with
``on_partitions_assigned`` (or fetching, without a listener) and ends when
``on_partitions_revoked``/``on_partitions_lost`` returns (or fetching stops, without a listener).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...client.member.effects import (
    CollectPositions,
    CommitFinished,
    Effect,
    InvokeCallback,
    LeaveDone,
    ReportError,
    StartFetching,
    StopFetching,
)
from ...client.member.events import (
    CallbackCompleted,
    Close,
    CommitRequested,
    FetchingStopped,
    Poll,
    PositionsCollected,
    Subscribe,
    Unsubscribe,
)
from ...client.member.model import (
    LISTENER_CALLBACKS,
    CallbackKind,
    LeaveReason,
    OffsetReset,
    PartitionOffset,
    TopicIdPartition,
)
from .topics import Key

if TYPE_CHECKING:
    from .runtime import SimMember

#: How often a blocked synchronous commit runs the application-thread queue (the facade's slice).
_WAIT_SLICE_MS = 5
#: How long ``commit(asynchronous=False)`` waits (the core gives up at its 10 s deadline first).
_SYNC_COMMIT_WAIT_MS = 12_000


@dataclass
class Fetch:
    """A partition being fetched and the position of the next record to process."""

    tp: TopicIdPartition
    position: int


class SimApp:
    """The application thread of one member process."""

    def __init__(self, proc: SimMember) -> None:
        self.proc = proc
        self.world = proc.world
        self.params = proc.world.params
        self.queue: deque[Effect] = deque()
        self.fetching: dict[Key, Fetch] = {}
        self.stopped: dict[Key, PartitionOffset] = {}
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
        self._tokens = 0
        self._waiting_token: int | None = None
        self._waiting_deadline = 0
        self._parked = False
        self._in_callback: InvokeCallback | None = None
        self._calls: list[Callable[[], None]] = []
        self._last_poll_note = -(10**9)
        self._poll_note_interval = min(1_000, self.params.max_poll_interval_ms // 4)

    # -- the application's calls ----------------------------------------------------------------------

    def start(self, topics: tuple[str, ...], pattern: str | None) -> None:
        """Subscribe and start polling."""
        self.subscribe(topics, pattern)
        self.proc.deliver_after(self.world.rng.randint(0, 50), self._poll)

    def subscribe(self, topics: tuple[str, ...], pattern: str | None) -> None:
        """``consumer.subscribe(...)`` with a listener when the seed registers callbacks (a
        classic member matches a pattern against the cluster's topics itself)."""
        callbacks = LISTENER_CALLBACKS if self.params.callbacks else frozenset()
        self.subscribed = True
        self.proc.post(Subscribe(topics=topics, pattern=pattern, callbacks=callbacks))

    def unsubscribe(self) -> None:
        """``consumer.unsubscribe()``: polls (running the queue) until the leave is done."""
        if self.leaving is None:
            self.leaving = LeaveReason.UNSUBSCRIBE
            self.subscribed = False
            self.proc.post(Unsubscribe())

    def close(self) -> None:
        """``consumer.close()``: runs the queue until the leave is done, then the process exits."""
        if self.leaving is not LeaveReason.CLOSE:
            self.leaving = LeaveReason.CLOSE
            self.proc.post(Close(deadline_ms=self.world.sched.now + 10_000))

    @property
    def polling(self) -> bool:
        """Polling normally: not stalled by an overrun and not inside a callback."""
        return self.world.sched.now >= self.stall_until and self._in_callback is None

    def call(self, action: Callable[[], None]) -> None:
        """Run an application call (subscribe, unsubscribe, close, ...) on the application thread:
        now if it is between polls, else as soon as the current poll returns; after an unsubscribe
        or close, once that is done (those calls block until their leave completes)."""
        self._calls.append(action)
        if not self._in_poll:
            self._run_calls()

    def enqueue(self, effect: Effect) -> None:
        """Work for the application thread, run at its next poll (in order)."""
        self.queue.append(effect)
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
        proc = self.proc
        while self.queue:
            work = self.queue.popleft()
            if isinstance(work, InvokeCallback):
                self._callback_started(work)
                latency = self._callback_latency()
                if latency > 0:
                    proc.deliver_after(latency, self._callback_returned, work, True)
                    return
                self._callback_returned(work, False)
            else:
                self._execute(work)
            if not proc.alive:
                return
        if self._waiting_token is not None:
            # A synchronous commit blocks the application thread: it only runs the queue.
            self._park()
            return
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
        proc.deliver_after(cost + self.world.rng.randint(low, high), self._poll)

    def _park(self) -> None:
        """Blocked in ``commit(asynchronous=False)``: the facade runs the queue every few ms until
        the commit is done; the simulation wakes it when work arrives, or at its deadline."""
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
        """One slice of ``commit(asynchronous=False)`` waiting for its result."""
        if self._waiting_token is not None and self.world.sched.now > self._waiting_deadline:
            self._waiting_token = None  # the facade raises a timeout to the application
        if self._waiting_token is None:
            self._in_poll = False
            self._run_calls()
            self.proc.deliver_after(0, self._poll)
            return
        self._in_poll = True
        self._drain()

    def _run_calls(self) -> None:
        while self._calls and self.leaving is None and self.proc.alive:
            self._calls.pop(0)()

    def _callback_latency(self) -> int:
        rng = self.world.rng
        if self.slow_callbacks > 0:
            self.slow_callbacks -= 1
            max_poll = self.params.max_poll_interval_ms
            return rng.randint(max_poll // 5, max_poll * 3 // 2)
        low, high = self.params.callback_ms
        return rng.randint(low, high)

    def _callback_started(self, work: InvokeCallback) -> None:
        self._in_callback = work
        if work.kind is CallbackKind.ASSIGNED:
            self._hold(tuple(tp.key for tp in work.partitions))
        elif work.kind is CallbackKind.REVOKED and self.params.commit_in_revoke:
            self._commit_revoked(work)

    def _commit_revoked(self, work: InvokeCallback) -> None:
        """``commit()`` inside on_partitions_revoked: the positions the revoked partitions stopped
        at (the facade's commit covers them while the callback runs), asynchronously."""
        offsets = tuple(
            self.stopped[tp.key]
            for tp in sorted(work.partitions, key=lambda tp: (tp.topic, tp.partition))
            if tp.key in self.stopped
        )
        if offsets:
            self._tokens += 1
            self.proc.post(CommitRequested(self._tokens, offsets, False))

    def _callback_returned(self, work: InvokeCallback, resume: bool) -> None:
        self._in_callback = None
        if work.kind in (CallbackKind.REVOKED, CallbackKind.LOST):
            self._release(tuple(tp.key for tp in work.partitions))
        self.proc.post(CallbackCompleted(work.callback_id))
        if resume:
            self._drain()

    # -- queued work --------------------------------------------------------------------------------------

    def _execute(self, work: Effect) -> None:
        proc = self.proc
        if isinstance(work, StopFetching):
            positions = []
            keys = []
            for tp in work.partitions:
                key = tp.key
                keys.append(key)
                position = self._position(key, tp)
                if position is not None:
                    positions.append(position)
                    self.stopped[key] = position
                if self.fetching.pop(key, None) is not None:
                    self.world.checker.stopped(proc, key)
            if not self.params.callbacks:
                self._release(tuple(keys))
            proc.post(FetchingStopped(work.stop_id, tuple(positions)))
        elif isinstance(work, StartFetching):
            for start in work.positions:
                tp = start.partition
                key = tp.key
                offset = start.offset
                if offset is OffsetReset.EARLIEST:
                    offset = 0
                elif offset is OffsetReset.LATEST:
                    offset = self.world.topics.hw.get(key, 0)
                assert isinstance(offset, int), offset
                self.stopped.pop(key, None)
                self.pending.pop(key, None)
                self.fetching[key] = Fetch(tp, offset)
                self._hold((key,))
                self.world.checker.started(proc, key)
        elif isinstance(work, CollectPositions):
            offsets = []
            for tp in sorted(work.partitions, key=lambda tp: (tp.topic, tp.partition)):
                position = self._position(tp.key, tp)
                if position is not None:
                    offsets.append(position)
            proc.post(PositionsCollected(work.request_id, tuple(offsets)))
        elif isinstance(work, ReportError):
            if work.fatal:
                self.world.member_failed(proc)
        elif isinstance(work, LeaveDone):
            if work.reason is LeaveReason.CLOSE:
                self.world.checker.closed(proc)
                proc.die("closed")
                self.world.member_exited(proc)
            elif self.leaving is LeaveReason.UNSUBSCRIBE:
                self.leaving = None
        elif (
            isinstance(work, CommitFinished) and work.token is not None and work.token == self._waiting_token
        ):
            self._waiting_token = None

    def _position(self, key: Key, tp: TopicIdPartition) -> PartitionOffset | None:
        fetch = self.fetching.get(key)
        if fetch is not None:
            return PartitionOffset(tp, fetch.position)
        return self.stopped.get(key)

    def _hold(self, keys: tuple[Key, ...]) -> None:
        new = [key for key in keys if key not in self.holds]
        if new:
            self.holds.update(new)
            self.world.checker.held(self.proc, tuple(new))

    def _release(self, keys: tuple[Key, ...]) -> None:
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
            budget -= n
            done += n
            if budget == 0:
                break
        return done * self.params.record_cost_ms

    def _maybe_commit(self) -> bool:
        """``consumer.commit()`` every few polls: the positions of the fetched partitions, or
        explicit offsets of what was processed since the last commit (which may include partitions
        revoked since: the core must not commit those); synchronous commits block: True then."""
        every = self.params.manual_commit_every
        if not every or self.polls % every:
            return False
        rng = self.world.rng
        if rng.random() < 0.5:
            offsets = tuple(
                PartitionOffset(fetch.tp, fetch.position)
                for _key, fetch in sorted(
                    self.fetching.items(), key=lambda item: (item[0][0].bytes, item[0][1])
                )
            )
        else:
            offsets = tuple(self.pending[k] for k in sorted(self.pending, key=lambda k: (k[0].bytes, k[1])))
        self.pending.clear()
        if not offsets:
            return False
        self._tokens += 1
        sync = rng.random() < 0.5
        self.proc.post(CommitRequested(self._tokens, offsets, sync))
        if sync:
            self._waiting_token = self._tokens
            self._waiting_deadline = self.world.sched.now + _SYNC_COMMIT_WAIT_MS
        return sync

    # -- process end ----------------------------------------------------------------------------------------

    def gone(self) -> None:
        """The process ended: it fetches and holds nothing any more."""
        self.fetching.clear()
        self.holds.clear()
        self.queue.clear()
