"""The cluster's topics in the simulation: metadata (ids, partition counts) and partition logs that
keep growing while a producer appends to them.

A log is identified by (topic id, partition): a recreated topic has a new id and new, empty logs;
the logs of a deleted topic stay readable by nobody (its records are gone with it).
"""

from __future__ import annotations

import random

from ...broker.coordinator import MetadataImage, TopicMetadata
from ...protocol.uuid import Uuid

#: A partition, as the coordinator and the member core identify it.
Key = tuple[Uuid, int]


def random_uuid(rng: random.Random) -> Uuid:
    """A non-zero UUID drawn from the seeded generator."""
    return Uuid((rng.getrandbits(127) + 1).to_bytes(16, "big"))


class TopicStore:
    """Live topics by name, every log's high watermark, and the metadata image the coordinator sees."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self.live: dict[str, TopicMetadata] = {}
        self.by_id: dict[Uuid, TopicMetadata] = {}
        self.deleted: set[Uuid] = set()
        #: High watermark of every log ever created, live or not.
        self.hw: dict[Key, int] = {}
        self.version = 0

    # -- changes ----------------------------------------------------------------------------------

    def create(self, name: str, partitions: int) -> TopicMetadata:
        """Create `name` with a fresh id (its logs start empty)."""
        assert name not in self.live, name
        topic = TopicMetadata(random_uuid(self._rng), name, partitions)
        self.live[name] = topic
        self.by_id[topic.topic_id] = topic
        for p in range(partitions):
            self.hw[(topic.topic_id, p)] = 0
        self.version += 1
        return topic

    def delete(self, name: str) -> TopicMetadata:
        """Delete `name`: its id is gone for good."""
        topic = self.live.pop(name)
        self.deleted.add(topic.topic_id)
        self.version += 1
        return topic

    def add_partitions(self, name: str, more: int) -> TopicMetadata:
        """Grow `name` by `more` partitions (new, empty logs)."""
        old = self.live[name]
        topic = TopicMetadata(old.topic_id, name, old.num_partitions + more)
        self.live[name] = topic
        self.by_id[topic.topic_id] = topic
        for p in range(old.num_partitions, topic.num_partitions):
            self.hw[(topic.topic_id, p)] = 0
        self.version += 1
        return topic

    def produce(self) -> tuple[Key, int] | None:
        """Append 1-5 records to a random partition of a random live topic; (partition, count)."""
        if not self.live:
            return None
        names = sorted(self.live)
        topic = self.live[names[self._rng.randrange(len(names))]]
        key = (topic.topic_id, self._rng.randrange(topic.num_partitions))
        count = self._rng.randint(1, 5)
        self.hw[key] += count
        return key, count

    # -- views ------------------------------------------------------------------------------------

    def image(self) -> MetadataImage:
        """The metadata image of the live topics (its version grows with every change)."""
        return MetadataImage.of(self.live.values(), self.version)

    def names(self) -> dict[Uuid, str]:
        """Id -> name of the live topics (what a Metadata response tells a client)."""
        return {t.topic_id: t.name for t in self.live.values()}

    def is_live(self, topic_id: Uuid) -> bool:
        """Whether the topic id exists (not deleted)."""
        return topic_id in self.by_id and topic_id not in self.deleted

    def name_of(self, topic_id: Uuid) -> str:
        """The name a topic id had (live or deleted)."""
        return self.by_id[topic_id].name

    def short(self, key: Key) -> str:
        """A short, seed-stable label for a partition: name, partition and the id's first digits."""
        topic_id, partition = key
        return f"{self.name_of(topic_id)}#{topic_id.bytes.hex()[:4]}-{partition}"
