"""The cluster's topics as the coordinator sees them: an immutable image with a version."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ...assignment.interface import TopicMetadata
from ...protocol.uuid import Uuid


@dataclass(frozen=True)
class MetadataImage:
    """Topics by id and by name. A new image (higher `version`) replaces the old on every change."""

    version: int = 0
    topics_by_id: Mapping[Uuid, TopicMetadata] = field(default_factory=dict)
    topics_by_name: Mapping[str, TopicMetadata] = field(default_factory=dict)

    @classmethod
    def of(cls, topics: Iterable[TopicMetadata], version: int) -> MetadataImage:
        topics = list(topics)
        return cls(version, {t.topic_id: t for t in topics}, {t.name: t for t in topics})

    def topic_ids(self, names: Iterable[str]) -> frozenset[Uuid]:
        """Ids of the names that exist; the others are ignored (not created yet, or deleted)."""
        by_name = self.topics_by_name
        return frozenset(by_name[n].topic_id for n in names if n in by_name)

    def topics_hash(self, names: Iterable[str]) -> int:
        """A stable digest of the named topics (id, name, partition count): Kafka's group metadata
        hash, which changes when a subscribed topic is created, deleted, recreated or grows."""
        digest = hashlib.blake2b(digest_size=8)
        for name in sorted(set(names)):
            topic = self.topics_by_name.get(name)
            if topic is None:
                continue
            digest.update(name.encode())
            digest.update(b"\0")
            digest.update(topic.topic_id.bytes)
            digest.update(topic.num_partitions.to_bytes(4, "big"))
        return int.from_bytes(digest.digest(), "big", signed=True)


EMPTY_IMAGE = MetadataImage()
