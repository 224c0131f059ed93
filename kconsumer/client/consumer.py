"""`Consumer`: the application-thread facade, with confluent-kafka's method signatures.

Switching from confluent-kafka is meant to be one import: ``from kconsumer import Consumer``.
Behind it, a background thread runs the KIP-848 member (heartbeats, reconciliation, commits by
topic id with member id and epoch) and a librdkafka handle in manual-assign mode fetches.

Threading: like confluent-kafka's and Kafka's consumers, one application thread uses a Consumer.
Rebalance callbacks run on it, inside ``poll()``/``consume()``/``unsubscribe()``/``close()``.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Sequence
from typing import Any

from confluent_kafka import OFFSET_STORED, KafkaError, KafkaException, Message, TopicPartition

from ..errors import ErrorCode, error_for
from .application.commits import committed_partitions
from .application.core import ApplicationCore
from .application.state import Callbacks, PartitionsCallback
from .engine import ConsumerEngine
from .fetch import Fetcher, MembershipOnlyFetcher
from .group_metadata import serialized_group_metadata
from .handle_facade import HandleFacade
from .kafka_errors import kafka_exception
from .listener import ConsumerRebalanceListener
from .local_assignors import LocalAssignors
from .member.events import CommittedOffsetsQuery, Subscribe
from .member.queries import QueryTimedOutError
from .offset_arguments import offsets_argument, partition_argument, partitions_argument
from .runtime.member_runtime import IDLE_SLICE_S, MemberRuntime
from .subscription import SubscriptionPattern, parse_subscription

log = logging.getLogger("kconsumer")

#: Buffered records poll() hands out between two full checks for group work (asyncio's ``async
#: for`` starts its runs at this length); work the member posts (callbacks, a lost assignment)
#: still ends the run at once.
RECORDS_BETWEEN_CHECKS = 32
_monotonic = time.monotonic
_INFINITY = float("inf")
#: librdkafka waits in whole milliseconds: a shorter wait returns at once, so the end of a poll's
#: timeout is waited as one millisecond rather than spun through in calls that do not wait.
_SHORTEST_WAIT_S = 0.001
#: Default time close(), unsubscribe() and synchronous commits may take.
DEFAULT_API_TIMEOUT_S = 60.0


def _deadline(timeout: float | None) -> float:
    return _INFINITY if timeout is None or timeout < 0 else time.monotonic() + timeout


class Consumer(HandleFacade):
    """A Kafka consumer on the KIP-848 consumer group protocol (``group.protocol=consumer``).

    `config` takes confluent-kafka style keys; see `kconsumer.client.config` for the list. An unknown
    key or a bad value raises `kconsumer.errors.ConfigError` (a ValueError) naming the key.
    """

    def __init__(self, config: dict[str, Any], *, logger: Any = None, fetch: bool = True) -> None:
        """`logger` is confluent-kafka's keyword (a `logging.Logger` for librdkafka's log, the
        same as the ``logger`` setting). `fetch=False` makes a membership-only consumer: it joins
        the group, reconciles, runs the callbacks and commits, but fetches no record (`poll`
        returns None, `position` is where fetching would start). The PySpark source's driver
        uses it; executors read the records."""
        if logger is not None:
            config = {**config, "logger": logger}
        engine = self._engine = ConsumerEngine(config, fetch=fetch, callback_consumer=self)
        # The parts poll() and friends use, read once (they never change).
        self._config = engine.config
        self._fetcher: Fetcher | MembershipOnlyFetcher = engine.fetcher
        self._manual = engine.manual
        self._runtime: MemberRuntime | None = engine.runtime
        self._app: ApplicationCore | None = engine.app
        self._buffer = engine.buffer
        self._rd_poll, self._rd_consume = self._fetcher.poll, self._fetcher.consume
        # poll() pops buffered records itself (see there): `_polls` so far without a full check
        # (the runtime tells the session of them), the next full check at `_check_at`, at once
        # once `_member_work` (set when the member posts work for this thread).
        self._polls = self._check_at = 0
        self._member_work = False
        #: When poll()/consume() next tell the core the application polled (monotonic seconds).
        self._next_poll_note = 0.0
        engine.drive_from(
            self,
            awaitable_callbacks=False,
            unnoted_polls=lambda: self._polls,
            on_member_work=functools.partial(setattr, self, "_member_work", True),
        )

    @property
    def engine(self) -> ConsumerEngine:
        """The consumer's parts and the steps its drivers share (`kconsumer.client.engine`), for
        other drivers of this consumer such as `kconsumer.aio.AIOConsumer`."""
        return self._engine

    # -- lifecycle ----------------------------------------------------------------------------------

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open(self) -> None:
        self._engine.ensure_open()

    def _group(self) -> tuple[MemberRuntime, ApplicationCore]:
        return self._engine.group()

    def close(self, timeout: float | None = None) -> None:
        """Commit (if auto-commit), revoke, leave the group (epoch -2 for a static member, so its
        partitions wait for it through the session timeout), then release every resource.

        Waits at most `timeout` seconds (default 60) for the group; if the coordinator cannot be
        reached by then, it gives up quietly (a warning is logged), as Kafka's consumer does: the
        coordinator removes the member after its session timeout."""
        if self._engine.closed:
            return
        try:
            left = self._engine.start_close()
            if left is not None:
                try:
                    self._wait(
                        left, DEFAULT_API_TIMEOUT_S if timeout is None else timeout, raise_errors=False
                    )
                except KafkaException as exc:
                    log.warning("close(): leaving the group did not complete (%s); closing anyway", exc)
        finally:
            self._engine.release()

    # -- subscription --------------------------------------------------------------------------------

    def subscribe(
        self,
        topics: Sequence[str] | SubscriptionPattern,
        on_assign: PartitionsCallback | None = None,
        on_revoke: PartitionsCallback | None = None,
        on_lost: PartitionsCallback | None = None,
        listener: ConsumerRebalanceListener | None = None,
    ) -> None:
        """Subscribe to topic names or to a `SubscriptionPattern` (replacing any subscription).

        As in confluent-kafka, a topic name starting with ``^`` is a regular expression; several
        are combined with ``|``. Names and patterns cannot be mixed (the KIP-848 protocol carries
        one or the other). The broker resolves a pattern (full-name RE2 match); with
        ``group.protocol=classic`` the consumer does, as librdkafka's classic consumer (see
        docs/classic-client.md). Callbacks are confluent-kafka style ``f(consumer, partitions)``;
        `listener` is a `ConsumerRebalanceListener` instead (not both). They are notifications:
        the consumer assigns and revokes by itself.
        """
        runtime, app = self._group()
        if listener is not None and any(cb is not None for cb in (on_assign, on_revoke, on_lost)):
            raise ValueError("pass either a listener or on_assign/on_revoke/on_lost callbacks, not both")
        names, pattern = parse_subscription(topics)
        if self._manual.partitions:
            raise KafkaException(
                KafkaError(KafkaError._STATE, "subscribe(): unassign() the manual assignment first")
            )
        self._engine.subscribed = True
        self._engine.fetcher.announce_topics(names)
        app.callbacks = Callbacks(on_assign, on_revoke, on_lost, listener, app.callbacks.on_assignment)
        runtime.post(Subscribe(topics=names, pattern=pattern, callbacks=app.callbacks.kinds()))

    def unsubscribe(self) -> None:
        """Commit (if auto-commit), revoke and leave the group (epoch -1); blocks until done."""
        self._wait(self._engine.start_unsubscribe(), DEFAULT_API_TIMEOUT_S)
        self._engine.subscribed = False

    def enforce_rebalance(self) -> None:
        """Does nothing: with the consumer protocol the coordinator decides when to rebalance (as
        in Kafka's new consumer). A client-side assignor can ask with `request_assignment`."""
        log.warning("enforce_rebalance() has no effect with group.protocol=consumer")

    # -- client-side assignors (group.local.assignors) -------------------------------------------

    def _local_assignors(self) -> tuple[MemberRuntime, LocalAssignors]:
        runtime, _app = self._group()
        if self._engine.assignors is None:
            raise RuntimeError("this consumer has no client-side assignor (group.local.assignors)")
        if self._config.classic:
            raise RuntimeError(
                "with group.protocol=classic an assignor's metadata() is read once, when the consumer "
                "is created, and the group rebalances when members join, leave or change subscriptions"
            )
        return runtime, self._engine.assignors

    def update_assignor_metadata(self, name: str | None = None) -> None:
        """Read ``metadata()`` of the local assignor `name` (every one when None) again and
        announce it in the next heartbeat. A new version or new bytes, or a non-zero reason,
        make the coordinator compute a new assignment (docs/assignor-protocol.md)."""
        runtime, assignors = self._local_assignors()
        for event in assignors.metadata_events(name):
            runtime.post(event)

    def request_assignment(self, reason: int = 1) -> None:
        """Ask for a new assignment: the next heartbeat carries `reason` (a non-zero int8, the
        assignor sees it in `AssignmentMemberSpec.reason`) with the local assignors."""
        runtime, assignors = self._local_assignors()
        runtime.post(assignors.request_event(reason))

    # -- records -----------------------------------------------------------------------------------

    def _note_poll(self, now: float) -> None:
        """Tell the core the application polled (the caller checked `_next_poll_note`)."""
        self._next_poll_note = self._engine.note_poll(now)

    def poll(self, timeout: float | None = None) -> Message | None:
        """The next record (a confluent-kafka `Message`, maybe an error event), or None after
        `timeout` seconds (None or negative: wait forever). Runs pending rebalance callbacks and
        raises pending errors (wrapped in KafkaException) first: work the member posted is seen
        before every record, the rest every `RECORDS_BETWEEN_CHECKS` buffered records."""
        buffer = self._buffer
        polls = self._polls
        if buffer and polls < self._check_at and not self._member_work:
            self._polls = polls + 1
            return buffer.popleft()
        app = self._app
        if app is not None:
            self._member_work = False  # before looking at the queue: work posted later sets it
            now = _monotonic()
            if now >= self._next_poll_note:
                self._note_poll(now)
            if not app.idle():
                app.run()
                if app.state.error_events:
                    return app.state.error_events.pop(0)
        elif self._engine.closed:
            raise RuntimeError("Consumer closed")
        self._check_at = polls + RECORDS_BETWEEN_CHECKS
        if buffer:
            return buffer.popleft()
        runtime = self._runtime
        first_slice = IDLE_SLICE_S if runtime is None else runtime.wait_slice(_monotonic())
        if timeout is not None and 0 <= timeout <= first_slice:
            return self._rd_poll(timeout)
        deadline = _deadline(timeout)
        message = self._rd_poll(first_slice)
        if message is not None:
            return message
        while True:
            if app is not None:
                now = _monotonic()
                if now >= self._next_poll_note:
                    self._note_poll(now)
                if not app.idle():
                    app.run()
                    if app.state.error_events:
                        return app.state.error_events.pop(0)
            now = _monotonic()
            remaining = deadline - now
            if remaining <= 0:
                return None
            slice_s = IDLE_SLICE_S if runtime is None else runtime.wait_slice(now)
            message = self._rd_poll(min(max(remaining, _SHORTEST_WAIT_S), slice_s))
            if message is not None:
                return message

    def consume(self, num_messages: int = 1, timeout: float | None = -1) -> list[Message]:
        """Up to `num_messages` records, returned as soon as some are available or after
        `timeout` seconds (negative or None: wait until some arrive)."""
        if not 0 <= num_messages <= 1_000_000:
            raise ValueError("num_messages must be between 0 and 1000000 (1M)")
        if num_messages == 0:
            return []
        app = self._app
        deadline = None
        runtime = self._runtime
        while True:
            now = _monotonic()
            if app is not None:
                if now >= self._next_poll_note:
                    self._note_poll(now)
                if not app.idle():
                    app.run()
                    if app.state.error_events:
                        return [app.state.error_events.pop(0)]
                    now = _monotonic()  # callbacks may have taken a while: the wait starts after them
            elif self._engine.closed:
                raise RuntimeError("Consumer closed")
            if deadline is None:
                if timeout is None or timeout < 0:
                    deadline, remaining = _INFINITY, IDLE_SLICE_S
                else:
                    deadline, remaining = now + timeout, timeout
            else:
                remaining = deadline - now
                if remaining <= 0:
                    return []
                remaining = max(remaining, _SHORTEST_WAIT_S)
            slice_s = IDLE_SLICE_S if runtime is None else runtime.wait_slice(now)
            messages: list[Message] = self._rd_consume(
                num_messages, remaining if remaining < slice_s else slice_s
            )
            if messages:
                return messages

    # -- offsets -----------------------------------------------------------------------------------

    def commit(
        self,
        message: Message | None = None,
        offsets: Sequence[TopicPartition] | None = None,
        asynchronous: bool = True,
    ) -> list[TopicPartition] | None:
        """Commit offsets to the group with this member's id and epoch (confluent-kafka semantics):
        `message` commits its offset + 1; `offsets` are the next offsets to consume (logical
        offsets such as -1001 are not committed: only those is KafkaError._NO_OFFSET); with
        neither, the current positions (or, with enable.auto.offset.store=false, the stored
        offsets) of every owned partition, including inside on_revoke the partitions being
        revoked (inside on_lost: _ASSIGNMENT_LOST, nothing is committed). Synchronous commits
        return the committed offsets or raise KafkaException;
        asynchronous ones report to on_commit. Offsets of partitions this member does not own
        are never committed (CommitFailedError)."""
        started = self._start_commit(message, offsets, asynchronous)
        if not isinstance(started, int):
            return started
        app = self._group()[1]
        with app.waiting_for_commit(started):
            self._wait(lambda a: a.commit_finished(started), DEFAULT_API_TIMEOUT_S)
        return app.finish_commit(started)

    def _start_commit(
        self, message: Message | None, offsets: Sequence[TopicPartition] | None, asynchronous: bool
    ) -> int | list[TopicPartition] | None:
        """`ConsumerEngine.start_commit`; an on_commit report it queued goes out at the next poll()."""
        app = self._app
        reports = 0 if app is None else len(app.state.commit_reports)
        try:
            return self._engine.start_commit(message, offsets, asynchronous)
        finally:
            if app is not None and len(app.state.commit_reports) > reports:
                self._check_at = 0  # the next poll() reports it

    def store_offsets(
        self, message: Message | None = None, offsets: Sequence[TopicPartition] | None = None
    ) -> None:
        """With enable.auto.offset.store=false, store the next offset to commit for a partition:
        `message`'s offset + 1, or `offsets` as given (with their metadata). The next commit of
        "every owned partition" (auto-commit, commit() without arguments, the revocation and
        close commits) carries what is stored, as in confluent-kafka. Raises KafkaException
        (_INVALID_ARG) when enable.auto.offset.store is on, (_STATE) when no partition is
        this member's."""
        _runtime, app = self._group()
        if message is None and offsets is None:
            raise ValueError("expected either message or offsets")
        offsets = offsets_argument(message, offsets, "store_offsets")
        if app.auto_store:
            raise KafkaException(
                KafkaError(
                    KafkaError._INVALID_ARG, "StoreOffsets failed: Local: Invalid argument or configuration"
                )
            )
        assert offsets is not None
        if offsets and app.store(offsets) == 0:
            raise KafkaException(KafkaError(KafkaError._STATE, "StoreOffsets failed: Local: Erroneous state"))

    def committed(
        self, partitions: Sequence[TopicPartition], timeout: float | None = None
    ) -> list[TopicPartition]:
        """The group's committed offsets of `partitions` (offset -1001 when none). Retriable and
        coordinator errors and lost connections are retried until `timeout` (default 60 s), as
        Kafka's committed() does."""
        runtime, _app = self._group()
        timeout_s = DEFAULT_API_TIMEOUT_S if timeout is None or timeout < 0 else timeout
        wanted = tuple((tp.topic, tp.partition) for tp in partitions_argument(partitions))
        try:
            error, offsets = runtime.ask(
                lambda token, deadline: CommittedOffsetsQuery(token, wanted, deadline), timeout_s
            )
        except (TimeoutError, QueryTimedOutError):
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "committed() timed out")) from None
        if error and error not in (ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
            raise kafka_exception(error_for(error, "committed(): OffsetFetch failed"))
        found = {(o.partition.topic, o.partition.partition): o for o in offsets}
        result = []
        for tp in partitions:
            offset = found.get((tp.topic, tp.partition))
            if offset is None or offset.offset < 0:
                result.append(TopicPartition(tp.topic, tp.partition, -1001))
            else:
                result.extend(committed_partitions((offset,)))
        return result

    def position(self, partitions: Sequence[TopicPartition]) -> list[TopicPartition]:
        """The offset of the next record the application will get, per partition."""
        return self._fetcher.position_of(partitions)

    def seek(self, partition: TopicPartition) -> None:
        """Fetch `partition` from `partition.offset` on (it must be assigned to this consumer;
        inside on_assign, one being assigned: it then starts there)."""
        partition = partition_argument(partition)
        if self._app is not None and (
            self._app.choose_start([partition]) or self._app.start_after_seek(partition)
        ):
            return
        self._fetcher.seek(partition)

    def pause(self, partitions: Sequence[TopicPartition]) -> None:
        """Stop returning records of `partitions` (they stay assigned); records already buffered
        are returned again after `resume`."""
        self._fetcher.pause(partitions)

    def resume(self, partitions: Sequence[TopicPartition]) -> None:
        """Undo `pause`: `partitions` are fetched again from where they stopped."""
        self._fetcher.resume(partitions)

    def incremental_assign(self, partitions: Sequence[TopicPartition]) -> None:
        """Without a subscription: start fetching `partitions` as well (manual assignment, see
        `manual_assignment`). Inside on_assign, as confluent-kafka's KIP-848 consumer allows:
        start the partitions being assigned at the offsets given (OFFSET_BEGINNING/OFFSET_END
        too; OFFSET_INVALID keeps the committed offset). Subscribed, elsewhere: _STATE."""
        if self._app is not None and self._app.choose_start(partitions):
            return
        self._manual_allowed("incremental_assign")
        self._manual.add(partitions)

    def assign(self, partitions: Sequence[TopicPartition]) -> None:
        """Without a subscription: fetch exactly `partitions` (manual assignment). Inside
        on_assign: as `incremental_assign`."""
        if self._app is not None and self._app.choose_start(partitions):
            return
        self._manual_allowed("assign")
        self._manual.replace(partitions)

    def incremental_unassign(self, partitions: Sequence[TopicPartition]) -> None:
        """Without a subscription: stop fetching `partitions`. Inside on_revoke or on_lost:
        accepted, nothing to do (the member gives them up when the callback returns)."""
        keys = [(tp.topic, tp.partition) for tp in partitions]
        if self._in_release_callback(keys):
            return
        self._manual_allowed("incremental_unassign")
        self._manual.remove(keys)

    def unassign(self) -> None:
        """Without a subscription: stop fetching every manually assigned partition. Inside
        on_revoke or on_lost: accepted (see `incremental_unassign`)."""
        if self._in_release_callback([]):
            return
        self._manual_allowed("unassign")
        self._manual.remove(list(self._manual.partitions))

    def _in_release_callback(self, keys: list[tuple[str, int]]) -> bool:
        state = None if self._app is None else self._app.state
        if state is None or not (state.revoking or state.losing):
            return False
        return set(keys) <= set(state.revoking) | set(state.losing)

    def _manual_allowed(self, method: str) -> None:
        self._open()
        if self._engine.subscribed:
            raise KafkaException(
                KafkaError(
                    KafkaError._STATE,
                    f"{method}(): the consumer group assigns the partitions of a subscription (inside "
                    "on_assign/on_revoke the partitions of the rebalance are accepted); unsubscribe() "
                    "first to assign partitions manually",
                )
            )

    def assignment(self) -> list[TopicPartition]:
        """The partitions this consumer owns now."""
        self._open()
        state = None if self._app is None else self._app.state
        # inside on_revoke/on_lost the partitions being released are still the member's
        owned = set() if state is None else set(state.owned) | set(state.revoking) | set(state.losing)
        return [TopicPartition(t, p, OFFSET_STORED) for t, p in sorted(owned | set(self._manual.partitions))]

    def memberid(self) -> str:
        """This member's id (generated by the client, kept for the life of the consumer)."""
        self._open()
        return self._engine.member_id

    def member_epoch(self) -> int:
        """The current member epoch (0 when not in a group)."""
        return 0 if self._runtime is None else self._runtime.member_epoch

    def consumer_group_metadata(self) -> bytes:
        """This member's group metadata (group id, member id, epoch as the generation, instance
        id) for a transactional producer's ``send_offsets_to_transaction``, in confluent-kafka's
        form (`group_metadata`)."""
        runtime, _app = self._group()
        epoch = runtime.member_epoch if runtime.member_epoch > 0 else -1
        assert self._config.group_id is not None
        return serialized_group_metadata(
            self._config.group_id, epoch, self._engine.member_id, self._config.group_instance_id
        )

    def metrics(self) -> dict[str, float]:
        """This consumer's metrics by the Java consumer's names (rebalances, heartbeats, commits,
        callbacks, fetching): `kconsumer.client.metrics` and docs/operations.md list them."""
        return self._engine.metrics.snapshot()

    # -- helpers -------------------------------------------------------------------------------------

    def _wait(self, done: Any, timeout: float, raise_errors: bool = True) -> None:
        """Run the application-thread work until `done(app)` or `timeout` seconds
        (`ApplicationCore.wait_over` decides), woken by each piece of work the member queues."""
        _runtime, app = self._group()
        deadline = time.monotonic() + timeout
        while not done(app):
            try:
                app.run()
            except Exception:
                if raise_errors:
                    raise
            if app.wait_over(lambda: done(app), deadline, raise_errors):
                return
            app.run_next(min(deadline - time.monotonic(), IDLE_SLICE_S))
