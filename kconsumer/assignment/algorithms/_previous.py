"""Importing the members' previous targets, shared by both uniform builders.

The coordinator hands over each member's current target. The assignors treat it as untrusted
input: a topic the member no longer subscribes to (or that is not in the metadata), a partition
beyond the topic's count, or a partition that an earlier member (in member order) already holds
is dropped. What survives is what the member may keep.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import repeat
from typing import TypeVar

from ...protocol.uuid import Uuid
from ..interface import PartitionsByTopicId
from ._common import valid_partitions

_View = TypeVar("_View")

#: The partitions of one topic nobody holds: all of them as a ``range``, or a sorted list.
FreePartitions = range | list[int]


def import_previous(
    assignments: Sequence[PartitionsByTopicId],
    counts: dict[Uuid, int],
    subscriptions: Sequence[Iterable[Uuid]],
    subscription_of: Sequence[int] | None,
) -> tuple[list[PartitionsByTopicId], list[int], dict[Uuid, FreePartitions]]:
    """The valid part of each previous target, its size, and the partitions nobody holds.

    Member ``i`` subscribes to ``subscriptions[subscription_of[i]]`` (to ``subscriptions[0]``
    when `subscription_of` is None); `counts` holds every subscribed topic's partition count.
    A member's valid part is its own mapping object when all of it is valid, else a filtered copy.
    The free partitions come by topic, in `counts` order (see `free_partitions`).

    The first pass assumes partitions are in range and held once: it only collects each topic's
    partition sets, and one union per topic confirms it (`_disjoint_in_range`). The careful
    pass, which checks partition by partition, runs only when that fails.
    """
    parts: dict[Uuid, list[frozenset[int]]] = {topic_id: [] for topic_id in counts}
    views = [{t: parts[t] for t in subscribed} for subscribed in subscriptions]
    sizes: list[int] = []
    valid: list[PartitionsByTopicId] = []
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
            held.append(partitions)
            kept += len(partitions)
        sizes.append(kept)
        if clean:
            valid.append(assignment)
        else:
            valid.append({t: ps for t, ps in assignment.items() if ps and t in view})

    free: dict[Uuid, FreePartitions] = {}
    for topic_id, count in counts.items():
        sets = parts[topic_id]
        if not sets:
            if count:
                free[topic_id] = range(count)
            continue
        held_count = _disjoint_in_range(sets, count)
        if held_count is None:
            return _import_carefully(assignments, counts, subscriptions, subscription_of)
        if held_count < count:
            free[topic_id] = sorted(set(range(count)).difference(*sets))
    return valid, sizes, free


def _disjoint_in_range(sets: list[frozenset[int]], count: int) -> int | None:
    """How many partitions `sets` hold, or None if one is held twice or is not in ``[0, count)``.

    One union (no Python-level loop): the sets are disjoint when it is as large as they are
    together. (Treating runs of consecutive partitions as intervals, which avoids touching every
    partition, measured slower here: ``min`` and ``max`` of a frozenset cost about as much as
    adding its items to a set.)
    """
    total = sum(map(len, sets))
    if total > count:
        return None
    union = frozenset().union(*sets)
    if len(union) != total or min(union) < 0 or max(union) >= count:
        return None
    return total


def _import_carefully(
    assignments: Sequence[PartitionsByTopicId],
    counts: dict[Uuid, int],
    subscriptions: Sequence[Iterable[Uuid]],
    subscription_of: Sequence[int] | None,
) -> tuple[list[PartitionsByTopicId], list[int], dict[Uuid, FreePartitions]]:
    """`import_previous` when some partition is out of range or held twice."""
    sizes: list[int] = []
    valid: list[PartitionsByTopicId] = []
    # Keep the first holder (in member order) of each partition.
    claimed, views = _views(counts, subscriptions)
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
    return valid, sizes, free_partitions(counts, claimed)


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


def _member_views(views: list[_View], subscription_of: Sequence[int] | None) -> Iterator[_View]:
    return repeat(views[0]) if subscription_of is None else map(views.__getitem__, subscription_of)
