"""Driver-side cluster lookups for planning: partitions, earliest/latest offsets, a group's
committed offsets. One AdminClient, batched requests; never a group membership."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]

from ..patterns import matching_topics
from .options import Key, SourceOptionError, SourceOptions

log = logging.getLogger("kconsumer.spark")

#: Timeout of the driver's admin requests.
ADMIN_TIMEOUT_S = 30.0


class Cluster:
    """Planning lookups against the cluster of `options`."""

    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        self._admin = AdminClient(options.admin_config())

    def list_offsets(self, keys: Iterable[Key], which: str) -> dict[Key, int]:
        """The ``earliest`` or ``latest`` offset of each partition (one request per broker).
        Latest honours ``isolation.level`` (librdkafka's default, read_committed: the last stable
        offset, what the executors can read)."""
        wanted = sorted(set(keys))
        if not wanted:
            return {}
        spec = OffsetSpec.earliest() if which == "earliest" else OffsetSpec.latest()  # type: ignore[no-untyped-call]
        kwargs: dict[str, Any] = {"request_timeout": ADMIN_TIMEOUT_S}
        try:
            from confluent_kafka import IsolationLevel

            uncommitted = self._options.kafka.get("isolation.level", "read_committed") == "read_uncommitted"
            kwargs["isolation_level"] = (
                IsolationLevel.READ_UNCOMMITTED if uncommitted else IsolationLevel.READ_COMMITTED
            )
        except ImportError:  # pragma: no cover - older confluent-kafka
            pass
        futures = self._admin.list_offsets({TopicPartition(t, p): spec for t, p in wanted}, **kwargs)
        found: dict[Key, int] = {}
        failed = {}
        for tp, future in futures.items():
            try:
                found[(tp.topic, tp.partition)] = future.result().offset
            except KafkaException as exc:
                failed[(tp.topic, tp.partition)] = exc
        if failed and not found:
            raise next(iter(failed.values()))
        if failed:
            # A partition being deleted or moving: it is planned with no new records this time.
            log.warning(
                "kconsumer: no %s offset for %s: %s", which, sorted(failed), next(iter(failed.values()))
            )
        return found

    def partitions(self, *, must_exist: bool = False) -> list[Key]:
        """Every partition of the options' topics, pattern or explicit assignment, now."""
        options = self._options
        metadata = self._admin.list_topics(timeout=ADMIN_TIMEOUT_S)
        topics: dict[str, Any] = metadata.topics
        if options.assign is not None:
            keys = [(t, p) for t, parts in options.assign.items() for p in parts]
            missing = [k for k in keys if k[0] not in topics or k[1] not in topics[k[0]].partitions]
            if missing and must_exist:
                raise SourceOptionError("assign", f"no such partitions: {missing}")
            return sorted(k for k in keys if k not in missing)
        names: Iterable[str]
        if options.pattern is not None:
            names = matching_topics(options.pattern, [t for t in topics if not t.startswith("__")])
        else:
            missing_topics = [t for t in options.topics if t not in topics]
            if missing_topics and must_exist:
                raise SourceOptionError("subscribe", f"no such topics: {missing_topics}")
            names = [t for t in options.topics if t in topics]
        return sorted((t, p) for t in names for p in topics[t].partitions)

    def group_offsets(self, group_id: str, keys: Iterable[Key]) -> dict[Key, int]:
        """The committed offsets of `group_id` (absent when none), read without joining it."""
        wanted = sorted(set(keys))
        if not wanted:
            return {}
        from confluent_kafka import ConsumerGroupTopicPartitions

        request = ConsumerGroupTopicPartitions(group_id, [TopicPartition(t, p) for t, p in wanted])
        futures = self._admin.list_consumer_group_offsets([request], request_timeout=ADMIN_TIMEOUT_S)
        result = futures[group_id].result()
        return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions if tp.offset >= 0}
