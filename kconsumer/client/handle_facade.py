"""The `Consumer` methods the librdkafka handle of the fetch path answers (cluster metadata,
watermarks, offsets for times), and the SASL credentials kconsumer's connections share with it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from confluent_kafka import TopicPartition

from .fetch import MembershipOnlyFetcher

if TYPE_CHECKING:
    from .engine import ConsumerEngine


class HandleFacade:
    """Mixed into `Consumer` (which sets the attributes below)."""

    _engine: ConsumerEngine

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        """Cluster metadata (confluent-kafka's ClusterMetadata)."""
        return self._handle("list_topics").list_topics(topic, timeout)

    def cluster_id(self, timeout: float = -1) -> str | None:
        """The cluster id from the brokers' metadata (as confluent-kafka's)."""
        return self._handle("cluster_id").cluster_id(timeout)  # type: ignore[no-any-return]

    def get_watermark_offsets(
        self, partition: TopicPartition, timeout: float | None = None, cached: bool = False
    ) -> tuple[int, int] | None:
        """(low, high) watermarks of `partition`, from the broker (or, with `cached`, from the
        last fetch: None when unknown), as confluent-kafka answers them."""
        handle = self._handle("get_watermark_offsets")
        if timeout is None:
            return handle.get_watermark_offsets(partition, cached=cached)  # type: ignore[no-any-return]
        return handle.get_watermark_offsets(partition, timeout, cached)  # type: ignore[no-any-return]

    def offsets_for_times(self, partitions: Sequence[TopicPartition], timeout: float | None = None) -> Any:
        """For each partition, the earliest offset whose timestamp is at or after
        `partition.offset` (a timestamp in ms); -1 past the end."""
        handle = self._handle("offsets_for_times")
        if timeout is None:
            return handle.offsets_for_times(list(partitions))
        return handle.offsets_for_times(list(partitions), timeout)

    def _handle(self, method: str) -> Any:
        """The librdkafka handle of the fetch path, for the cluster queries it answers."""
        if self._engine.closed:
            raise RuntimeError("Consumer closed")
        if isinstance(self._engine.fetcher, MembershipOnlyFetcher):
            raise RuntimeError(f"{method}() needs the fetch path (this consumer has fetch=False)")
        return self._engine.fetcher.handle

    def set_sasl_credentials(self, username: str, password: str) -> None:
        """New ``sasl.username`` / ``sasl.password`` for the next authentication of every
        connection: kconsumer's own (their next connection or KIP-368 re-authentication) and the
        fetch handle's, as confluent-kafka's method does."""
        if self._engine.closed:
            raise RuntimeError("Consumer closed")
        security = self._engine.security
        if security is not None and security.sasl is not None:
            security.sasl.credentials.set(username, password)
        if not isinstance(self._engine.fetcher, MembershipOnlyFetcher):
            self._engine.fetcher.handle.set_sasl_credentials(username, password)
