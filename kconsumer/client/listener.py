"""`ConsumerRebalanceListener`: the rebalance callbacks as one object (Kafka's Java interface)."""

from __future__ import annotations

from confluent_kafka import TopicPartition


class ConsumerRebalanceListener:
    """Override the methods you need; every method is a no-op by default.

    They run on the application thread, inside ``poll()``, ``consume()``, ``unsubscribe()`` or
    ``close()``, in this order during a rebalance: ``on_partitions_revoked`` for partitions taken
    away (after their offsets were committed, if auto-commit is on; no record of them is returned
    after it), then ``on_partitions_assigned`` for new ones (before any of their records).
    ``on_partitions_lost`` is called instead of ``on_partitions_revoked`` when the partitions were
    already given to someone else (the member was fenced or stopped polling): do not commit
    their offsets there. As in Kafka, its default calls ``on_partitions_revoked``.

    An exception raised here reaches the caller of ``poll()`` wrapped in a ``KafkaException``;
    the rebalance itself still completes, so one failing callback does not stall the group.
    """

    def on_partitions_revoked(self, partitions: list[TopicPartition]) -> None:
        """Partitions this consumer gives up; their offsets can still be committed here."""

    def on_partitions_assigned(self, partitions: list[TopicPartition]) -> None:
        """Partitions this consumer now owns (an empty list after joining with nothing)."""

    def on_partitions_lost(self, partitions: list[TopicPartition]) -> None:
        """Partitions already owned by another member; by default `on_partitions_revoked`."""
        self.on_partitions_revoked(partitions)
