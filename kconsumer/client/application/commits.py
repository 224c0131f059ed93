"""Commits as confluent-kafka presents them: the partitions a commit reports, and the error of
a commit that carries nothing.

Without ``offsets``/``message``, a commit covers every partition the member has (inside
``on_revoke`` the ones being revoked too) at its position, or with
``enable.auto.offset.store=false`` at what ``store_offsets()`` stored, and, as librdkafka, only
where that is ahead of what the member last committed or found committed: committing again, or
backwards after storing an older offset, is ``_NO_OFFSET``. Explicit offsets are committed as
given (logical ones left out). `ApplicationCore.commit_selection` applies these rules.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from confluent_kafka import OFFSET_INVALID, KafkaError, TopicPartition

from ..member.model import PartitionOffset, TopicIdPartition


def nothing_to_commit(losing: bool) -> KafkaError:
    """Why a commit carries nothing: the assignment is being lost (`losing`, inside on_lost),
    or no offset is new."""
    if losing:
        return KafkaError(
            KafkaError._ASSIGNMENT_LOST, "Commit failed: Local: Group partition assignment lost"
        )
    return KafkaError(KafkaError._NO_OFFSET, "Commit failed: Local: No offset stored")


def committed_partitions(offsets: Iterable[PartitionOffset]) -> list[TopicPartition]:
    """confluent-kafka's view of committed offsets (metadata and leader epoch included)."""
    return [_topic_partition(o) for o in offsets]


def unset_offsets(partitions: Iterable[TopicIdPartition]) -> list[TopicPartition]:
    """The partitions with offset -1001 (OFFSET_INVALID): what on_commit gets for a commit that
    had nothing to commit (``_NO_OFFSET``), as from confluent-kafka."""
    return [TopicPartition(tp.topic, tp.partition, OFFSET_INVALID) for tp in partitions]


def _topic_partition(committed: PartitionOffset) -> TopicPartition:
    tp = committed.partition
    extra: dict[str, Any] = {}
    if committed.metadata:
        extra["metadata"] = committed.metadata
    if committed.leader_epoch is not None:
        extra["leader_epoch"] = committed.leader_epoch
    return TopicPartition(tp.topic, tp.partition, committed.offset, **extra)
