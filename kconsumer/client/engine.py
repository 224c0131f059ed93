"""`ConsumerEngine`: what a consumer is made of, and the steps every driver of it shares.

A consumer is the same machine whether the application blocks (`kconsumer.Consumer`) or awaits
(`kconsumer.aio.AIOConsumer`): a librdkafka fetch handle, the member runtime on its background
thread, the application core (`application.core.ApplicationCore`), the manual assignment,
metrics and statistics. The engine builds them from the configuration and offers the steps
that do not wait: open checks, telling the member the application polled, starting a commit,
starting to unsubscribe or close, releasing everything. Each driver adds only its way of
waiting (blocking on the work queue, or awaiting on the event loop) and its poll loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import Message, TopicPartition

from ..errors import ConfigError
from .application.core import ApplicationCore
from .application.ports import ApplicationSettings
from .config import ConsumerConfig
from .fetch import Fetcher, MembershipOnlyFetcher
from .group_metadata import new_member_id
from .local_assignors import LocalAssignors
from .manual_assignment import ManualAssignment
from .member.events import Close, Poll, Unsubscribe
from .member.model import LeaveReason
from .metrics import ConsumerMetrics
from .offset_arguments import offsets_argument
from .runtime.background import BackgroundLoop
from .runtime.member_runtime import MemberRuntime
from .statistics import consumer_statistics
from .tls import ConnectionSecurity, connection_security

#: A condition a driver waits for, over the application core.
Condition = Callable[[ApplicationCore], bool]


class ConsumerEngine:
    """The parts of one consumer and the non-waiting steps its drivers share (see the module
    docstring). Built by `Consumer`; `AIOConsumer` drives the same engine (`Consumer.engine`)."""

    def __init__(self, config: dict[str, Any], *, fetch: bool, callback_consumer: Any) -> None:
        """`config` as `Consumer` takes it (ConfigError naming a bad key); `fetch=False` builds a
        membership-only consumer; `callback_consumer` is what rebalance callbacks receive."""
        self.config = ConsumerConfig.from_dict(config)
        settings = self.config.librdkafka_passthrough
        self.security: ConnectionSecurity | None = (
            None if self.config.group_id is None else connection_security(settings)
        )
        self.member_id = new_member_id()
        self.assignors = LocalAssignors.from_config(self.config, self.member_id)  # before any thread
        rd_config = self.config.librdkafka_config()
        self.metrics = ConsumerMetrics(owned=self._owned, positions=self._positions)
        group, isolation = self.config.group_id is not None, settings.get("isolation.level")
        self.statistics = consumer_statistics(rd_config, isolation, group, self.metrics) if fetch else None
        self.fetcher: Fetcher | MembershipOnlyFetcher = (
            Fetcher(rd_config, self.config.group_id) if fetch else MembershipOnlyFetcher()
        )
        #: Records taken from librdkafka and not yet handed out (`fetch` module docstring).
        self.buffer = self.fetcher.buffer
        self.closed = self.subscribed = False
        self.manual = ManualAssignment(
            self.fetcher, self.config.auto_offset_reset, has_group=self.config.group_id is not None
        )
        #: How often the drivers tell the member the application polled, at most.
        self.poll_note_interval_s = min(1.0, self.config.max_poll_interval_ms / 4000)
        self.runtime: MemberRuntime | None = None
        self.app: ApplicationCore | None = None
        self._background: BackgroundLoop | None = None
        if self.config.group_id is not None:
            self._background = BackgroundLoop(f"kconsumer-{self.config.client_id}")
            self.runtime = MemberRuntime(
                self.config,
                self.member_id,
                self._background,
                assignors=self.assignors,
                security=self.security,
                metrics=self.metrics,
            )
            self.app = ApplicationCore(
                self.fetcher,
                self.runtime,
                self.runtime.app_queue,
                _app_settings(self.config),
                callback_consumer,
                clock=time.monotonic,
            )
            self.app.on_commit = self.config.on_commit
            self.app.statistics = self.statistics
            self.app.metrics = self.metrics
            if self.statistics is not None:
                self.statistics.member = self.app
            if self.assignors is not None:
                self.app.callbacks.on_assignment = self._on_assignment

    def drive_from(
        self,
        callback_consumer: Any,
        *,
        awaitable_callbacks: bool,
        unnoted_polls: Callable[[], int],
        on_member_work: Callable[[], None],
    ) -> None:
        """Make a driver this engine's: callbacks get `callback_consumer` (and may return an
        awaitable the driver awaits), the runtime asks `unnoted_polls()` how many records the
        driver handed out since it last noted a poll, and calls `on_member_work()` (from its
        thread) whenever it queues work for the application."""
        if self.runtime is None or self.app is None:
            return
        self.app.callback_consumer = callback_consumer
        self.app.awaitable_callbacks = awaitable_callbacks
        self.runtime.unnoted_polls = unnoted_polls
        self.runtime.on_app_work = on_member_work

    # -- checks ---------------------------------------------------------------------------------

    def ensure_open(self) -> None:
        """Raise RuntimeError once the consumer is closed."""
        if self.closed:
            raise RuntimeError("Consumer closed")

    def group(self) -> tuple[MemberRuntime, ApplicationCore]:
        """The member runtime and application core; ConfigError without a group.id."""
        self.ensure_open()
        if self.runtime is None or self.app is None:
            raise ConfigError("group.id", "required to subscribe and commit (the consumer group to join)")
        return self.runtime, self.app

    # -- steps ----------------------------------------------------------------------------------

    def note_poll(self, now: float) -> float:
        """Tell the member the application polled; returns when the next note is due."""
        if self.runtime is not None:
            self.runtime.post(Poll(), brings_work=False)
        return now + self.poll_note_interval_s

    def start_commit(
        self, message: Message | None, offsets: Sequence[TopicPartition] | None, asynchronous: bool
    ) -> int | list[TopicPartition] | None:
        """Send the commit ``commit()`` describes: the token of a synchronous group commit to
        wait for (`ApplicationCore.commit_finished`), else its result (None, or a manual
        assignment's committed offsets)."""
        runtime, app = self.group()
        offsets = offsets_argument(message, offsets, "commit")
        if self.subscribed or not self.manual.partitions:
            return app.start_commit(offsets, asynchronous)
        explicit = self.manual.positions() if offsets is None else app.commit_selection(offsets)
        if explicit:
            return self.manual.commit(runtime, app, explicit, asynchronous)
        app.report_nothing_to_commit(offsets, asynchronous)
        return None

    def start_unsubscribe(self) -> Condition:
        """Ask the member to leave (epoch -1); returns the condition that says it left."""
        runtime, app = self.group()
        app.state.leaves.discard(LeaveReason.UNSUBSCRIBE)
        runtime.post(Unsubscribe())
        return lambda core: LeaveReason.UNSUBSCRIBE in core.state.leaves

    def start_close(self) -> Condition | None:
        """Ask the member to leave for good; the condition that says it left (None without a
        group: nothing to wait for)."""
        if self.runtime is None or self.app is None:
            return None
        self.runtime.post(Close())
        return lambda core: LeaveReason.CLOSE in core.state.leaves

    def release(self) -> None:
        """Release every resource (after leaving the group, or giving up on it)."""
        self.closed = True
        if self.runtime is not None:
            self.runtime.shutdown()
        self.fetcher.close()
        if self._background is not None:
            self._background.stop()

    # -- what the metrics and the assignors read ------------------------------------------------

    def _on_assignment(self, work: Any) -> None:
        """``PartitionAssignor.on_assignment`` (an ASSIGNMENT callback, on the application thread)."""
        if self.assignors is not None and self.runtime is not None:
            self.assignors.on_assignment(work, self.runtime.member_epoch)

    def _owned(self) -> set[tuple[str, int]]:
        return self.app.owned_keys() if self.app is not None else set(self.fetcher.assigned())

    def _positions(self, keys: set[tuple[str, int]]) -> dict[tuple[str, int], int]:
        return {key: offset for key, (offset, _epoch) in self.fetcher.positions(keys).items()}


def _app_settings(config: ConsumerConfig) -> ApplicationSettings:
    # librdkafka's default isolation is read_committed: a reset to the latest offset is the last stable one
    level = config.librdkafka_passthrough.get("isolation.level", "read_committed")
    return ApplicationSettings(
        auto_store=config.enable_auto_offset_store,
        read_committed=level == "read_committed",
        reset_lookup_timeout_s=min(config.request_timeout_ms / 1000, 5.0),
    )
