"""The application core: what the application thread decides, for every consumer that drives it.

The member session decides the group side (heartbeats, reconciliation, commits on the wire) and
queues `ApplicationWork` for the application thread: stop or start fetching partitions, run a
rebalance callback, read positions for a commit, a finished commit, an error, the end of a
leave. The application core executes that work, in order, inside the driver's
poll/consume/commit/unsubscribe/close; it also holds what the application sees (owned partitions,
stored offsets, starts chosen in on_assign, errors to raise) and starts commits.

Its drivers: `kconsumer.Consumer` (blocking), `kconsumer.aio.AIOConsumer` (awaiting callbacks and
the blocking start-up lookups) and the simulation's application (`kconsumer.testing.sim.app`,
callbacks that take simulated time). They reach fetching, the member and the work queue only
through `ports`, so the simulation runs these decisions as they ship.

Everything that touches the fetch path happens here, so its order relative to the records handed
to the application is exact: a partition stops (and its position is read) before its revocation
commit and callback; no record of it is returned after that.
"""

from __future__ import annotations

import contextlib
import inspect
import itertools
import logging
import queue
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition

from ...errors import KConsumerError
from ...protocol.uuid import ZERO_UUID
from ..fetch import RESET_EARLIEST, RESET_LATEST
from ..kafka_errors import kafka_exception
from ..member.effects import (
    ApplicationWork,
    CollectPositions,
    CommitFinished,
    InvokeCallback,
    LeaveDone,
    ReportError,
    StartFetching,
    StopFetching,
)
from ..member.errors import PollIntervalExceededError
from ..member.events import CallbackCompleted, CommitRequested, FetchingStopped, PositionsCollected
from ..member.model import CallbackKind, CommitReason, OffsetReset, PartitionOffset, TopicIdPartition
from ..member.state import MemberState
from ..metrics import ConsumerMetrics
from ..offset_arguments import commit_offsets
from ..statistics import GroupStatistics
from .commits import committed_partitions, nothing_to_commit, unset_offsets
from .ports import ApplicationSettings, FetchPath, MemberLink, WorkQueue
from .state import AppState, Awaited, Callbacks, Key

log = logging.getLogger("kconsumer")


class ApplicationCore:
    """The application thread's decisions; see the module docstring."""

    def __init__(
        self,
        fetch: FetchPath,
        member: MemberLink,
        work: WorkQueue,
        settings: ApplicationSettings,
        callback_consumer: Any = None,
        *,
        clock: Callable[[], float],
    ) -> None:
        """`clock` gives monotonic seconds (the driver's: the real one, or the simulation's); the
        core reads no clock of its own."""
        #: What the rebalance callbacks get as their consumer argument.
        self.callback_consumer: Any = callback_consumer
        #: Whether a callback may return an awaitable (the asyncio consumer awaits it).
        self.awaitable_callbacks = False
        #: The work being awaited: no other work runs until `finish_awaited`.
        self.awaiting: Awaited | None = None
        self._fetch = fetch
        self.member = member
        self.queue = work
        self.settings = settings
        self._clock = clock
        self.state = AppState()
        self.callbacks = Callbacks()
        self.on_commit: Callable[[KafkaError | None, list[TopicPartition]], None] | None = None
        #: stats_cb's group statistics, told of every rebalance step (None without stats_cb).
        self.statistics: GroupStatistics | None = None
        #: The consumer's metrics (callback latencies are recorded here).
        self.metrics: ConsumerMetrics | None = None
        #: enable.auto.offset.store: commits carry the fetch positions (else what was stored).
        self.auto_store = settings.auto_store
        #: Commit tokens: ``next()`` is atomic, and commit() may be called from several threads.
        self._commit_tokens = itertools.count(1)

    # -- running the queue ------------------------------------------------------------------------

    def idle(self) -> bool:
        """Nothing to run and nothing to raise: the fast path of poll()."""
        state = self.state
        return (
            self.queue.empty()
            and not state.errors
            and (state.fatal is None or state.fatal_reported)
            and not state.commit_reports
            and not state.error_events
        )

    def run(self, inside_callback: bool = False) -> None:
        """Execute the work queued when the call started, then raise the first pending error (a
        fatal one every time). Work the member queues meanwhile (say, the assignment of a rejoin
        that a lost callback let go ahead) waits for the next call, so an error is raised by the
        poll that ran the work reporting it, before anything that happened after it.

        While a callback is awaited, work waits for it, except when this call comes from inside
        that callback (say, a commit awaited in ``on_revoke``): `inside_callback`."""
        while self.state.commit_reports and self.on_commit is not None:
            self._report_commit(*self.state.commit_reports.pop(0))
        for _ in range(self.queue.qsize()):
            if self.awaiting is not None and not inside_callback:  # it waits for the callback
                break
            try:
                work = self.queue.get_nowait()
            except queue.Empty:  # another thread calling into the consumer took it
                break
            self._execute(work)
        self.raise_pending()

    def run_next(self, timeout_s: float) -> None:
        """Wait up to `timeout_s` seconds for the member's next work and run it: how a blocking
        call (a synchronous commit, unsubscribe, close) waits for its answer."""
        try:
            work = self.queue.get(timeout=max(0.0, timeout_s))
        except queue.Empty:
            return
        self._execute(work)

    def wait_over(self, done: Callable[[], bool], deadline: float, raise_errors: bool) -> bool:
        """One step of a consumer waiting for the group (close, unsubscribe), after it ran the
        queued work: True once `done()` or the group is gone for good (a fatal error, raised
        when `raise_errors`); past `deadline` (monotonic) a timeout is raised."""
        if done():
            return True
        if self.state.fatal is not None:
            if raise_errors:
                raise kafka_exception(self.state.fatal, fatal=True)
            return True
        if self._clock() > deadline:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "timed out waiting for the group"))
        return False

    def raise_pending(self) -> None:
        """Raise the first pending error as confluent-kafka does: kconsumer's own errors wrapped
        in KafkaException, an exception of the application's callbacks unchanged. Two are not
        raised but become error events (`error_events`) that poll()/consume() return as messages:
        a poll-interval overrun (_MAX_POLL_EXCEEDED) and, once, a fatal error (_FATAL)."""
        state = self.state
        while state.errors and isinstance(state.errors[0], PollIntervalExceededError):
            overrun = state.errors.pop(0)
            state.error_events.append(Message(error=KafkaError(KafkaError._MAX_POLL_EXCEEDED, str(overrun))))
        if state.errors:
            error = state.errors.pop(0)
            if isinstance(error, KConsumerError):
                raise kafka_exception(error)
            raise error
        if state.fatal is not None and not state.fatal_reported:
            state.fatal_reported = True
            text = kafka_exception(state.fatal, fatal=True).args[0].str()
            state.error_events.append(Message(error=KafkaError(KafkaError._FATAL, f"Fatal error: {text}")))

    def _execute(self, work: ApplicationWork) -> None:
        if isinstance(work, StopFetching):
            self._stop(work)
        elif isinstance(work, StartFetching) and self.awaitable_callbacks and work.positions:
            # asyncio: the metadata and ListOffsets lookups block: a worker thread does them
            self.awaiting = Awaited(
                lambda: self._prepare_start(work), self._prepared_start(work), in_thread=True
            )
        elif isinstance(work, StartFetching):
            self._start(work)
        elif isinstance(work, InvokeCallback):
            self._callback(work)
        elif isinstance(work, CollectPositions):
            offsets = self.commit_offsets(work.partitions)
            moved = [k for k in sorted(offsets) if self.state.last_committed.get(k) != offsets[k].offset]
            self.member.post(PositionsCollected(work.request_id, tuple(offsets[k] for k in moved)))
        elif isinstance(work, CommitFinished):
            self._commit_finished(work)
        elif isinstance(work, ReportError):
            if work.fatal:
                self.state.fatal = work.error
                log.error("kconsumer: fatal error: %s", work.error)
            else:
                self.state.errors.append(work.error)
                log.warning("kconsumer: %s", work.error)
        elif isinstance(work, LeaveDone):
            self.state.leaves.add(work.reason)

    # -- fetching -----------------------------------------------------------------------------------

    def positions(self, partitions: tuple[TopicIdPartition, ...]) -> dict[Key, PartitionOffset]:
        """Positions of `partitions`: live ones from the fetch path, else where they stopped."""
        keys = [(tp.topic, tp.partition) for tp in partitions]
        by_key = {(tp.topic, tp.partition): tp for tp in partitions}
        live = self._fetch.positions(keys)
        result = {}
        for key in keys:
            if key in live:
                offset, epoch = live[key]
                result[key] = PartitionOffset(by_key[key], offset, epoch)
            elif key in self.state.stopped:
                result[key] = self.state.stopped[key]
        return result

    # -- what stats_cb reads (statistics.MemberView) ------------------------------------------------

    def member_state(self) -> MemberState:
        """Where the member is in the group."""
        return self.member.state

    def owned_keys(self) -> set[Key]:
        """The partitions the member owns."""
        return set(self.state.owned)

    def committed_offset(self, key: Key) -> int | None:
        """The group's committed offset of an owned partition, as far as this member knows."""
        return self.state.last_committed.get(key)

    def stored_offset(self, key: Key) -> int | None:
        """The offset the next commit of `key` would carry."""
        if not self.auto_store:
            found = self.state.stored.get(key)
            return None if found is None else found.offset
        position = self._fetch.positions([key]).get(key)
        return None if position is None else position[0]

    def commit_offsets(self, partitions: tuple[TopicIdPartition, ...]) -> dict[Key, PartitionOffset]:
        """The offsets a commit of `partitions` carries: their positions, or with
        enable.auto.offset.store=false what store_offsets() stored for them (others are left out)."""
        if self.auto_store:
            return self.positions(partitions)
        stored = self.state.stored
        keys = ((tp.topic, tp.partition) for tp in partitions)
        return {key: stored[key] for key in keys if key in stored}

    def store(self, offsets: Sequence[TopicPartition]) -> int:
        """store_offsets(): remember the next offsets to commit of partitions this member has
        (a logical offset forgets the stored one); returns how many were for such partitions."""
        state = self.state
        taken = 0
        for tp in offsets:
            key = (tp.topic, tp.partition)
            partition = state.owned.get(key) or state.revoking.get(key)
            if partition is None:
                continue
            taken += 1
            if tp.offset < 0:
                state.stored.pop(key, None)
                continue
            epoch = tp.leader_epoch if tp.leader_epoch is not None and tp.leader_epoch >= 0 else None
            state.stored[key] = PartitionOffset(partition, tp.offset, epoch, tp.metadata or "")
        return taken

    def choose_start(self, partitions: Sequence[TopicPartition]) -> bool:
        """Inside on_partitions_assigned: start `partitions` (all being assigned) at their
        offsets (a logical OFFSET_BEGINNING/END too; OFFSET_INVALID keeps the committed one).
        False when they are not all being assigned now."""
        state = self.state
        keys = [(tp.topic, tp.partition) for tp in partitions]
        if not state.assigning or not all(key in state.assigning for key in keys):
            return False
        for key, tp in zip(keys, partitions, strict=True):
            if tp.offset == RESET_EARLIEST:
                state.start_at[key] = OffsetReset.EARLIEST
            elif tp.offset == RESET_LATEST:
                state.start_at[key] = OffsetReset.LATEST
            elif tp.offset >= 0:
                state.start_at[key] = tp.offset
        return True

    def _stop(self, work: StopFetching) -> None:
        if self.statistics is not None and work.partitions:
            self.statistics.rebalanced()
        positions = self.positions(work.partitions)
        reported = positions if self.auto_store else self.commit_offsets(work.partitions)
        keys = [(tp.topic, tp.partition) for tp in work.partitions]
        log.debug("group %s: stop fetching %s", self.member.group_id, sorted(keys))
        self._fetch.stop(work.partitions)
        for key in keys:
            self.state.owned.pop(key, None)
            self.state.awaiting_seek.pop(key, None)
            if key in positions:
                self.state.stopped[key] = positions[key]
        self.member.post(FetchingStopped(work.stop_id, tuple(reported[k] for k in keys if k in reported)))

    def _resolve_resets(self, work: StartFetching) -> dict[Key, int]:
        """Explicit offsets for the partitions that start at a reset position (EARLIEST/LATEST),
        from ListOffsets, so librdkafka only ever gets explicit offsets.

        librdkafka 2.16 resolves a logical offset with an offset query that survives an unassign:
        if the partition is assigned again before that query's timer fires, the timer moves the
        new position back to the old logical one (a member could re-read a partition from its
        start, long past its committed offset). Resolving here, as Kafka's Java consumer does,
        avoids that. If ListOffsets fails, the logical position goes to librdkafka as before."""
        wanted = {
            (p.partition.topic, p.partition.partition): (-2 if p.offset is OffsetReset.EARLIEST else -1)
            for p in work.positions
            if p.offset is OffsetReset.EARLIEST or p.offset is OffsetReset.LATEST
        }
        if not wanted:
            return {}
        isolation = 1 if self.settings.read_committed else 0
        try:
            return self.member.lookup_offsets(wanted, isolation, self.settings.reset_lookup_timeout_s)
        except Exception as exc:  # the logical position still works, only with librdkafka's lookup
            log.debug("kconsumer: ListOffsets for reset positions failed (%r); librdkafka resolves them", exc)
            return {}

    def _prepare_start(self, work: StartFetching) -> dict[Key, int]:
        """The blocking part of starting to fetch (thread-safe): the topics' metadata, and the
        offsets of reset positions."""
        self._fetch.learn_topics({p.partition.topic for p in work.positions})
        return self._resolve_resets(work)

    def _prepared_start(self, work: StartFetching) -> Callable[[Any, BaseException | None], None]:
        def finish(resolved: Any, error: BaseException | None) -> None:
            self._start(work, {} if error is not None else resolved)

        return finish

    def _start(self, work: StartFetching, resolved: dict[Key, int] | None = None) -> None:
        if self.statistics is not None and work.positions:
            self.statistics.rebalanced()
        if work.positions and log.isEnabledFor(logging.DEBUG):
            keys = sorted((p.partition.topic, p.partition.partition) for p in work.positions)
            log.debug("group %s: start fetching %s", self.member.group_id, keys)
        if resolved is None:
            resolved = self._resolve_resets(work)
        assign = []
        for position in work.positions:
            tp = position.partition
            key = (tp.topic, tp.partition)
            self.state.owned[key] = tp
            self.state.revoked.discard(key)
            self.state.stopped.pop(key, None)
            self.state.stored.pop(key, None)  # a regained partition starts afresh
            self.state.last_committed.pop(key, None)
            chosen = self.state.start_at.pop(key, None)
            if isinstance(position.offset, int):  # the group's committed offset
                self.state.last_committed[key] = position.offset
            offset = position.offset if chosen is None else chosen
            if offset is OffsetReset.NONE:
                self.state.awaiting_seek[key] = tp
                text = f"no committed offset for {tp} and auto.offset.reset=none: seek() to choose the start"
                error = KafkaError(KafkaError._AUTO_OFFSET_RESET, text)
                self.state.error_events.append(Message(topic=tp.topic, partition=tp.partition, error=error))
                continue
            if key in resolved and (chosen is None or chosen is position.offset):
                start = resolved[key]  # a start chosen in on_assign wins over the reset position
            elif offset is OffsetReset.EARLIEST:
                start = RESET_EARLIEST
            elif offset is OffsetReset.LATEST:
                start = RESET_LATEST
            else:
                assert isinstance(offset, int)
                start = offset
            epoch = position.leader_epoch if start >= 0 else None
            assign.append(PartitionOffset(tp, start, epoch))
        if assign:
            self._fetch.start(assign)

    def start_after_seek(self, partition: TopicPartition) -> bool:
        """`seek()` on a partition waiting for a position: start fetching there."""
        waiting = self.state.awaiting_seek.pop((partition.topic, partition.partition), None)
        if waiting is None:
            return False
        self._fetch.start([PartitionOffset(waiting, partition.offset)])
        return True

    # -- callbacks --------------------------------------------------------------------------------

    def _callback(self, work: InvokeCallback) -> None:
        state = self.state
        if work.kind is CallbackKind.LOST and state.revoked:
            # A loss during or after a revocation: on_revoke had those partitions already.
            rest = tuple(tp for tp in work.partitions if (tp.topic, tp.partition) not in state.revoked)
            if not rest:
                self.member.post(CallbackCompleted(work.callback_id, None))
                return
            work = replace(work, partitions=rest)
        if work.kind is CallbackKind.REVOKED:
            state.revoking = {(tp.topic, tp.partition): tp for tp in work.partitions}
        elif work.kind is CallbackKind.ASSIGNED:
            state.assigning = {(tp.topic, tp.partition): tp for tp in work.partitions}
            state.revoked.difference_update(state.assigning)
        elif work.kind is CallbackKind.LOST:
            state.losing = {(tp.topic, tp.partition): tp for tp in work.partitions}
        call = self._application_callback(work)
        # Kafka's listener invoker times the application's rebalance callbacks, when it has one.
        timed = call is not None and work.kind is not CallbackKind.ASSIGNMENT
        started = self._clock()
        try:
            result = None if call is None else call()
        except Exception as exc:
            self._callback_done(work, started, timed, exc)
            return
        if inspect.isawaitable(result):
            if self.awaitable_callbacks:

                def finish(_result: Any, error: BaseException | None) -> None:
                    self._callback_done(work, started, timed, error)

                self.awaiting = Awaited(result, finish)
                return
            if inspect.iscoroutine(result):
                result.close()
            error = TypeError(f"{work.kind.value} returned an awaitable: use kconsumer.aio.AIOConsumer")
            self._callback_done(work, started, timed, error)
            return
        self._callback_done(work, started, timed, None)

    def finish_awaited(self, result: Any, error: BaseException | None) -> None:
        """The awaited work (`awaiting`) finished with `result`, or `error` if it raised."""
        awaited, self.awaiting = self.awaiting, None
        assert awaited is not None
        awaited.finish(result, error)

    def _callback_done(
        self, work: InvokeCallback, started: float, timed: bool, error: BaseException | None
    ) -> None:
        """Record, clean up and report a finished rebalance callback."""
        state = self.state
        if timed and self.metrics is not None:
            self.metrics.callback_finished(work.kind.name.lower(), self._clock() - started)
        if error is not None:
            state.errors.append(error)
            log.error("kconsumer: %s callback raised %r", work.kind.value, error)
        state.assigning = {}
        state.losing = {}
        if work.kind is CallbackKind.REVOKED:
            state.revoked.update((tp.topic, tp.partition) for tp in work.partitions)
        if work.kind in (CallbackKind.REVOKED, CallbackKind.LOST):
            state.revoking = {}
            for tp in work.partitions:
                if (tp.topic, tp.partition) not in state.owned:
                    state.stored.pop((tp.topic, tp.partition), None)
        self.member.post(CallbackCompleted(work.callback_id, error))

    def _application_callback(self, work: InvokeCallback) -> Callable[[], object] | None:
        """The application's callback for `work`, ready to call (its return value is an
        awaitable for a coroutine function); None when the application has none."""
        callbacks = self.callbacks
        if work.kind is CallbackKind.ASSIGNMENT:
            hook = callbacks.on_assignment
            return None if hook is None else (lambda: hook(work))
        partitions = [TopicPartition(tp.topic, tp.partition) for tp in work.partitions]
        listener = callbacks.listener
        if listener is not None:
            method = {
                CallbackKind.ASSIGNED: listener.on_partitions_assigned,
                CallbackKind.REVOKED: listener.on_partitions_revoked,
                CallbackKind.LOST: listener.on_partitions_lost,
            }[work.kind]
            return lambda: method(partitions)
        function = {
            CallbackKind.ASSIGNED: callbacks.on_assign,
            CallbackKind.REVOKED: callbacks.on_revoke,
            CallbackKind.LOST: callbacks.on_lost or callbacks.on_revoke,
        }[work.kind]
        return None if function is None else (lambda: function(self.callback_consumer, partitions))

    # -- commits ---------------------------------------------------------------------------------

    def partition_identity(self, topic: str, partition: int) -> TopicIdPartition:
        """The partition as this member has it (with its topic id); otherwise by name only (the
        member session finds its topic id)."""
        key = (topic, partition)
        owned = self.state.owned.get(key) or self.state.revoking.get(key)
        return owned if owned is not None else TopicIdPartition(ZERO_UUID, topic, partition)

    def commit_selection(self, offsets: Sequence[TopicPartition] | None) -> tuple[PartitionOffset, ...]:
        """The offsets a group commit of `offsets` (None: every partition this member has)
        carries; see `kconsumer.client.application.commits`."""
        if offsets is not None:
            return commit_offsets(offsets, self.partition_identity)
        owned = self.commit_offsets(self.state.committable())
        return tuple(o for key, o in owned.items() if o.offset > (self.committed_offset(key) or -1))

    def start_commit(self, offsets: Sequence[TopicPartition] | None, asynchronous: bool) -> int | None:
        """``commit()`` in a group: send the commit `offsets` describes. Returns the token of a
        synchronous commit to wait for (`commit_finished`), None for an asynchronous one (its
        outcome goes to on_commit). Carrying nothing, a synchronous commit raises
        KafkaException (_NO_OFFSET, or _ASSIGNMENT_LOST inside on_lost) and an asynchronous one
        reports that to on_commit from the next poll."""
        explicit = self.commit_selection(offsets)
        if not explicit:
            self.report_nothing_to_commit(offsets, asynchronous)
            return None
        return self.send_commit(explicit, asynchronous)

    def report_nothing_to_commit(self, offsets: Sequence[TopicPartition] | None, asynchronous: bool) -> None:
        """A commit that carries nothing: raised when synchronous, else told to on_commit."""
        error = nothing_to_commit(offsets is None and bool(self.state.losing))
        if not asynchronous:
            raise KafkaException(error)
        reported = offsets if offsets is not None else unset_offsets(self.state.committable())
        if self.on_commit is not None and reported:
            self.state.commit_reports.append((error, list(reported)))

    def send_commit(self, explicit: tuple[PartitionOffset, ...], asynchronous: bool) -> int | None:
        """Hand the member a commit of `explicit` (see `start_commit`)."""
        token = next(self._commit_tokens)
        self.state.requested[token] = explicit
        if not asynchronous:
            self.state.awaited_commits.add(token)
        self.member.post(CommitRequested(token, explicit, sync=not asynchronous))
        return None if asynchronous else token

    def commit_finished(self, token: int) -> bool:
        """Whether the synchronous commit `token` has its answer."""
        return token in self.state.commits

    def finish_commit(self, token: int) -> list[TopicPartition]:
        """The result of the synchronous commit `token` (it finished): the committed offsets, or
        its error raised as KafkaException."""
        self.state.awaited_commits.discard(token)
        finished = self.state.commits.pop(token)
        if finished.error is not None:
            raise kafka_exception(finished.error, fatal=finished.error is self.state.fatal)
        return committed_partitions(finished.offsets)

    def forget_commit(self, token: int) -> None:
        """The caller of the synchronous commit `token` stopped waiting (a timeout, a
        cancellation): its answer, now or later, is not kept."""
        self.state.awaited_commits.discard(token)
        self.state.commits.pop(token, None)

    @contextlib.contextmanager
    def waiting_for_commit(self, token: int) -> Iterator[None]:
        """Around a caller's wait for the synchronous commit `token` (blocking or awaited): if
        the wait ends by an exception (a timeout, a cancellation), the answer is forgotten."""
        try:
            yield
        except BaseException:
            self.forget_commit(token)
            raise

    def _commit_finished(self, work: CommitFinished) -> None:
        """As librdkafka's offset_commit_cb: ``on_commit(error, offsets)`` for asynchronous and
        automatic commits that carried offsets (a synchronous commit answers its caller instead)."""
        state = self.state
        offsets = work.offsets
        if work.token is not None:
            if work.token in state.awaited_commits:
                state.commits[work.token] = work
            requested = state.requested.pop(work.token, ())
            # nothing was sent, or the commit failed: report everything that was asked
            offsets = requested if (work.error is not None and requested) else (offsets or requested)
        if work.error is None:
            for o in work.offsets:
                key = (o.partition.topic, o.partition.partition)
                if key in state.owned or key in state.revoking:
                    state.last_committed[key] = o.offset
        if self.on_commit is None or work.reason is CommitReason.USER_SYNC:
            return
        if not offsets and (work.error is None or work.reason is not CommitReason.USER_ASYNC):
            return
        self._report_commit(
            None if work.error is None else kafka_exception(work.error).args[0], committed_partitions(offsets)
        )

    def _report_commit(self, error: KafkaError | None, partitions: list[TopicPartition]) -> None:
        assert self.on_commit is not None
        try:
            self.on_commit(error, partitions)
        except Exception as exc:
            self.state.errors.append(exc)
