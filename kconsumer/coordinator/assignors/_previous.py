"""Importing the members' previous targets, shared by both uniform builders.

The coordinator hands over each member's current target. The assignors treat it as untrusted
input: a topic the member no longer subscribes to (or that is not in the metadata), a partition
beyond the topic's count, or a partition that an earlier member (in member order) already holds
is dropped. What survives is what the member may keep.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import repeat

from ...protocol.uuid import Uuid
from ..assignor_api import Assignment
from ._common import valid_partitions

#: The partitions of one topic nobody holds: all of them as a ``range``, or a sorted list.
FreePartitions = range | list[int]


def import_previous(
    assignments: Sequence[Assignment],
    counts: dict[Uuid, int],
    subscriptions: Sequence[Iterable[Uuid]],
    subscription_of: Sequence[int] | None,
) -> tuple[list[Assignment], list[int], dict[Uuid, set[int]]]:
    """The valid part of each previous target, its size, and the partitions held by topic.

    Member ``i`` subscribes to ``subscriptions[subscription_of[i]]`` (to ``subscriptions[0]``
    when `subscription_of` is None); `counts` holds every subscribed topic's partition count.
    A member's valid part is its own mapping object when all of it is valid, else a filtered copy.

    The first pass assumes partitions are in range and held once: it only unions them per topic,
    and one check per topic confirms it (nothing held twice when the union is as large as the
    parts; every partition in range when the smallest and largest are). The careful pass, which
    checks every partition, runs only when that fails.
    """
    claimed, views = _views(counts, subscriptions)
    sizes: list[int] = []
    valid: list[Assignment] = []
    total = 0
    for assignment, view in zip(assignments, _member_views(views, subscription_of), strict=False):
        if not assignment:
            sizes.append(0)
            valid.append(assignment)
            continue
        kept = 0
        clean = True
        for topic_id, partitions in assignment.items():
            held = view.get(topic_id)
            if held is None or not partitions:
                clean = False  # not subscribed (any more), or an empty entry
                continue
            held |= partitions
            kept += len(partitions)
        sizes.append(kept)
        total += kept
        if clean:
            valid.append(assignment)
        else:
            valid.append({t: ps for t, ps in assignment.items() if ps and t in view})
    if total == sum(map(len, claimed.values())) and all(
        min(held) >= 0 and max(held) < counts[t] for t, held in claimed.items() if held
    ):
        return valid, sizes, claimed

    # Some partition is out of range or held twice: keep the first holder (in member order).
    claimed, views = _views(counts, subscriptions)
    sizes.clear()
    valid.clear()
    for assignment, view in zip(assignments, _member_views(views, subscription_of), strict=False):
        kept = 0
        clean = True
        parts: list[tuple[Uuid, frozenset[int]]] = []
        for topic_id, partitions in assignment.items():
            held = view.get(topic_id)
            if held is None or not partitions:
                clean = False
                continue
            count = counts[topic_id]
            if not (held.isdisjoint(partitions) and min(partitions) >= 0 and max(partitions) < count):
                clean = False
                partitions = valid_partitions(partitions, count, held)
                if not partitions:
                    continue
            held |= partitions
            parts.append((topic_id, partitions))
            kept += len(partitions)
        sizes.append(kept)
        valid.append(assignment if clean else dict(parts))
    return valid, sizes, claimed


def free_partitions(counts: dict[Uuid, int], claimed: dict[Uuid, set[int]]) -> dict[Uuid, FreePartitions]:
    """The partitions nobody holds, by topic (topics with none left out), in `counts` order."""
    free: dict[Uuid, FreePartitions] = {}
    for topic_id, count in counts.items():
        held = claimed[topic_id]
        if not held:
            if count:
                free[topic_id] = range(count)
        elif len(held) < count:
            free[topic_id] = sorted(set(range(count)).difference(held))
    return free


def _views(
    counts: dict[Uuid, int], subscriptions: Sequence[Iterable[Uuid]]
) -> tuple[dict[Uuid, set[int]], list[dict[Uuid, set[int]]]]:
    claimed: dict[Uuid, set[int]] = {topic_id: set() for topic_id in counts}
    return claimed, [{t: claimed[t] for t in subscribed} for subscribed in subscriptions]


def _member_views(
    views: list[dict[Uuid, set[int]]], subscription_of: Sequence[int] | None
) -> Iterator[dict[Uuid, set[int]]]:
    return repeat(views[0]) if subscription_of is None else map(views.__getitem__, subscription_of)
