"""The offsets arguments of commit() and store_offsets(), read as confluent-kafka reads them."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from confluent_kafka import Message, TopicPartition

from .member.model import PartitionOffset, TopicIdPartition


def offsets_argument(
    message: Message | None, offsets: Sequence[TopicPartition] | None, call: str
) -> Sequence[TopicPartition] | None:
    """`offsets`, or the position after `message` (its offset + 1, with its leader epoch); None
    when neither is given. Both, or a message that is an error event, raise ValueError."""
    if message is not None and offsets is not None:
        raise ValueError("message and offsets are mutually exclusive")  # confluent-kafka's words
    if message is None:
        return None if offsets is None else partitions_argument(offsets)
    topic, partition, offset = message.topic(), message.partition(), message.offset()
    if message.error() is not None or topic is None or partition is None or offset is None:
        raise ValueError(f"{call}: the message is an error event, with no topic, partition or offset")
    return [TopicPartition(topic, partition, offset + 1, leader_epoch=message.leader_epoch())]


def partitions_argument(partitions: object) -> list[TopicPartition]:
    """A list of TopicPartition, or TypeError as confluent-kafka raises it."""
    if not isinstance(partitions, (list, tuple)) or not all(
        isinstance(tp, TopicPartition) for tp in partitions
    ):
        raise TypeError("expected list of TopicPartition")
    return list(partitions)


def partition_argument(partition: object) -> TopicPartition:
    """A TopicPartition, or TypeError as confluent-kafka raises it."""
    if not isinstance(partition, TopicPartition):
        raise TypeError("expected TopicPartition")
    return partition


def commit_offsets(
    offsets: Sequence[TopicPartition], identify: Callable[[str, int], TopicIdPartition]
) -> tuple[PartitionOffset, ...]:
    """What a commit of explicit `offsets` sends: their partitions as `identify` names them, with
    leader epoch and metadata; logical offsets (negative) are never committed."""
    return tuple(
        PartitionOffset(
            identify(tp.topic, tp.partition),
            tp.offset,
            tp.leader_epoch if tp.leader_epoch is not None and tp.leader_epoch >= 0 else None,
            tp.metadata or "",
        )
        for tp in offsets
        if tp.offset >= 0
    )
