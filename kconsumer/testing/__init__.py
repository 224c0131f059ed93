"""Test and tooling helpers: the blocking wire client (`wire`), and the in-process reference
cluster, a real Apache Kafka (`ApacheKafka`) and the simulation harness."""

from __future__ import annotations

from ..broker.server.security import Acl
from .apache_kafka import ApacheKafka, ApacheKafkaUnavailable
from .cluster import ReferenceCluster
from .descriptions import GroupDescription, MemberDescription

__all__ = [
    "Acl",
    "ApacheKafka",
    "ApacheKafkaUnavailable",
    "GroupDescription",
    "MemberDescription",
    "ReferenceCluster",
]
