"""A real Apache Kafka (4.x, KRaft) started from its official jars, for tests and benchmarks:
`ApacheKafka`, with the surface of `kconsumer.testing.ReferenceCluster` (docs/testing.md)."""

from __future__ import annotations

from .cluster import ApacheKafka
from .distribution import DEFAULT_VERSION, ApacheKafkaUnavailable, locate

__all__ = ["DEFAULT_VERSION", "ApacheKafka", "ApacheKafkaUnavailable", "locate"]
