"""The ``range`` assignment algorithm: the server-side assignor ``range``, run on a
member by `kconsumer.assignors.RangeAssignor`.

Members are ordered static first (by instance id), then dynamic (by member id). For each topic,
its subscribers in that order take contiguous ranges: ``partitions // subscribers`` each, one more
for the first ``partitions % subscribers``. Topics with the same partition count and the same
subscribers are therefore co-partitioned: a member gets the same partition numbers of each.
The assignment is recomputed from scratch every time (not sticky); the only stability comes from
the ordering, which keeps static members in place across restarts.

Performance notes: co-partitioning is also the data layout. Topics are grouped by (subscribers,
partition count); the members of a group get one shared frozenset per range, and a member's
mapping is built with ``dict.fromkeys`` over the group's topics.
"""

from __future__ import annotations

from itertools import chain, repeat

from ...protocol.uuid import Uuid
from ..interface import GroupSpec, PartitionsByTopicId
from ._common import Chunker, check_topics_exist, common_subscription, sorted_topics, static_first_order


class RangeServerAssignor:
    """Contiguous, co-partitioned ranges per topic; not sticky."""

    #: The name members ask for (``ServerAssignor`` in the heartbeat) and the config lists.
    name = "range"

    def assign(self, spec: GroupSpec) -> dict[str, PartitionsByTopicId]:
        """The new target of every member of `spec` (see `ServerAssignor.assign`).

        Raises `PartitionAssignorError` when a member subscribes to a topic id missing from
        ``spec.topics``.
        """
        if not spec.members:
            return {}
        member_ids = static_first_order(spec)
        members = [spec.members[member_id] for member_id in member_ids]

        # Subscribers of each topic, as the tuple of subscription classes subscribing to it.
        class_index: dict[frozenset[Uuid], int] = {}
        class_members: list[list[int]] = []
        homogeneous = common_subscription(spec, members)
        if homogeneous is not None:
            class_index[homogeneous] = 0
            class_members.append(list(range(len(members))))
        else:
            for i, member in enumerate(members):
                c = class_index.setdefault(member.subscribed_topic_ids, len(class_members))
                if c == len(class_members):
                    class_members.append([])
                class_members[c].append(i)
        topic_classes: dict[Uuid, list[int]] = {}
        for subscribed, c in class_index.items():
            for topic_id in subscribed:
                topic_classes.setdefault(topic_id, []).append(c)
        check_topics_exist(topic_classes, spec.topics)

        # (subscriber classes, partition count) -> topics.
        topic_groups: dict[tuple[tuple[int, ...], int], list[Uuid]] = {}
        for topic_id, subscribing in topic_classes.items():
            count = spec.topics[topic_id].num_partitions
            if count:
                topic_groups.setdefault((tuple(subscribing), count), []).append(topic_id)

        out: list[dict[Uuid, frozenset[int]] | None] = [None] * len(members)
        subscribers_of: dict[tuple[int, ...], list[int]] = {}
        ranges_of: dict[tuple[int, int], list[frozenset[int]]] = {}
        chunker = Chunker()
        for (classes, count), topic_ids in topic_groups.items():
            subscribers = subscribers_of.get(classes)
            if subscribers is None:
                if len(classes) == 1:
                    subscribers = class_members[classes[0]]
                else:
                    subscribers = sorted(chain.from_iterable(class_members[c] for c in classes))
                subscribers_of[classes] = subscribers
            ranges = ranges_of.get((count, len(subscribers)))
            if ranges is None:
                ranges = ranges_of[count, len(subscribers)] = _ranges(chunker, count, len(subscribers))
            # A dict as the key source lets dict.fromkeys reuse the stored hashes of the ids.
            keys = dict.fromkeys(sorted_topics(topic_ids))
            for i, mapping in zip(subscribers, map(dict.fromkeys, repeat(keys), ranges), strict=False):
                current = out[i]
                if current is None:
                    out[i] = mapping
                else:
                    current.update(mapping)
        return {
            member_id: {} if current is None else current
            for member_id, current in zip(member_ids, out, strict=True)
        }

    def __repr__(self) -> str:
        return "RangeServerAssignor()"


def _ranges(chunker: Chunker, count: int, subscribers: int) -> list[frozenset[int]]:
    """The non-empty ranges of a topic of `count` partitions, by subscriber position."""
    quota, extra = divmod(count, subscribers)
    ranges = chunker.cut(0, quota + 1, extra) if extra else []
    if quota:
        ranges += chunker.cut(extra * (quota + 1), quota, subscribers - extra)
    return ranges
