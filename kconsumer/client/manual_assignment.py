"""Manual assignment, as confluent-kafka's `assign`/`incremental_assign`/`unassign` outside a
consumer group: the application names the partitions, the consumer fetches them and never joins
the group, and its commits carry no member id or epoch (`CommitOffsetsQuery`).

Start offsets: an offset, ``OFFSET_BEGINNING`` or ``OFFSET_END`` as given; ``OFFSET_INVALID``
(the default of a `TopicPartition`) means the group's committed offset, which the fetch handle
looks up with the consumer's group.id, else ``auto.offset.reset``. Without a group.id there is no
committed offset: ``OFFSET_INVALID`` starts at the reset position directly.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Sequence
from typing import Any

from confluent_kafka import OFFSET_INVALID, KafkaError, KafkaException, TopicPartition

from ..errors import ErrorCode, error_for
from ..protocol.uuid import ZERO_UUID
from .application.commits import committed_partitions
from .application.core import ApplicationCore
from .fetch import RESET_EARLIEST, RESET_LATEST, Fetcher, MembershipOnlyFetcher
from .kafka_errors import kafka_exception
from .member.events import CommitOffsetsQuery
from .member.model import OffsetReset, PartitionOffset, TopicIdPartition
from .member.queries import QueryTimedOutError
from .runtime.member_runtime import MemberRuntime

#: How long a commit outside the group may take (confluent-kafka's default API timeout).
COMMIT_TIMEOUT_S = 60.0

Key = tuple[str, int]


class ManualAssignment:
    """The partitions the application assigned itself."""

    def __init__(self, fetcher: Fetcher | MembershipOnlyFetcher, reset: OffsetReset, has_group: bool) -> None:
        self._fetcher = fetcher
        self._reset = reset
        self._has_group = has_group
        self.partitions: dict[Key, TopicPartition] = {}

    def add(self, partitions: Sequence[TopicPartition]) -> None:
        """Start fetching `partitions` (those already assigned keep their position)."""
        starts = []
        for tp in partitions:
            key = (tp.topic, tp.partition)
            if key in self.partitions:
                continue
            self.partitions[key] = TopicPartition(tp.topic, tp.partition)
            starts.append(TopicPartition(tp.topic, tp.partition, self._start(tp.offset)))
        self._fetcher.assign(starts)

    def replace(self, partitions: Sequence[TopicPartition]) -> None:
        """assign(): exactly `partitions` from now on."""
        wanted = {(tp.topic, tp.partition) for tp in partitions}
        self.remove([key for key in self.partitions if key not in wanted])
        self.add(partitions)

    def remove(self, keys: Sequence[Key]) -> None:
        """Stop fetching `keys` (records fetched but not returned are dropped)."""
        gone = [key for key in keys if self.partitions.pop(key, None) is not None]
        if gone:
            self._fetcher.unassign(gone)

    def _start(self, offset: int) -> int:
        if offset != OFFSET_INVALID or self._has_group:
            return offset
        return RESET_LATEST if self._reset is OffsetReset.LATEST else RESET_EARLIEST

    def positions(self) -> tuple[PartitionOffset, ...]:
        """What commit() without arguments commits: the position of every manually assigned
        partition that has one."""
        found = self._fetcher.position_of(list(self.partitions.values()))
        return tuple(
            PartitionOffset(TopicIdPartition(ZERO_UUID, tp.topic, tp.partition), tp.offset)
            for tp in found
            if tp.offset >= 0
        )

    def commit(
        self,
        runtime: MemberRuntime,
        app: ApplicationCore,
        offsets: tuple[PartitionOffset, ...],
        asynchronous: bool,
    ) -> list[TopicPartition] | None:
        """Commit outside the group (no member id, epoch -1): the committed offsets, or with
        `asynchronous` None at once and the outcome to on_commit from a later poll."""
        committed = committed_partitions(offsets)
        future = runtime.submit(
            lambda token, deadline: CommitOffsetsQuery(token, offsets, deadline), COMMIT_TIMEOUT_S
        )
        if asynchronous:
            if app.on_commit is not None:
                reports = app.state.commit_reports  # list.append is atomic: safe from the loop thread
                future.add_done_callback(lambda done: reports.append((_outcome(done), committed)))
            return None
        concurrent.futures.wait([future], COMMIT_TIMEOUT_S + 1.0)
        error = _outcome(future) if future.done() else KafkaError(KafkaError._TIMED_OUT, "commit() timed out")
        if error is not None:
            raise KafkaException(error)
        return committed


def _outcome(future: concurrent.futures.Future[Any]) -> KafkaError | None:
    """The KafkaError of a finished commit query (None: committed)."""
    failure = future.exception()
    if isinstance(failure, QueryTimedOutError):
        return KafkaError(KafkaError._TIMED_OUT, "commit() timed out")
    if failure is not None:
        return kafka_exception(failure).args[0]  # type: ignore[no-any-return]
    code = future.result()
    return None if code == ErrorCode.NONE else kafka_exception(error_for(code)).args[0]
