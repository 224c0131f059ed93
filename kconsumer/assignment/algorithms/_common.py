"""Helpers shared by the built-in assignment algorithms.

Determinism rests on two rules followed everywhere in this package: members are handled in a
sorted order (never the order of ``GroupSpec.members``), and topics are sorted by the bytes of
their id (never the iteration order of a set or dict of `Uuid`, which depends on the hash seed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import cast

from ...protocol.uuid import Uuid
from ..interface import GroupSpec, MemberSpec, PartitionAssignorError, SubscriptionType, TopicMetadata


def topic_key(topic_id: Uuid) -> bytes:
    """Sort key of a topic id: its 16 bytes (the order `Uuid` itself defines, but cheaper)."""
    return topic_id.bytes


def sorted_topics(topic_ids: Iterable[Uuid]) -> list[Uuid]:
    """The topic ids in byte order."""
    return sorted(topic_ids, key=topic_key)


def check_topics_exist(topic_ids: Iterable[Uuid], topics: Mapping[Uuid, TopicMetadata]) -> None:
    """Raise `PartitionAssignorError` naming every subscribed topic id missing from `topics`."""
    missing = [topic_id for topic_id in topic_ids if topic_id not in topics]
    if missing:
        names = ", ".join(str(topic_id) for topic_id in sorted_topics(missing))
        raise PartitionAssignorError(
            f"members are subscribed to topic ids that are not in the topic metadata: {names}"
        )


def common_subscription(spec: GroupSpec, members: Sequence[MemberSpec]) -> frozenset[Uuid] | None:
    """The one subscription every member shares, or None if the group is not really homogeneous.

    Only consulted when `spec` says HOMOGENEOUS, which the coordinator computes.
    Like Kafka the assignors then trust the flag, but cheaply: two subscriptions count as equal
    when they are the same object, or have the same size and the same (cached) frozenset hash.
    Comparing every subscription element by element would cost more than the whole homogeneous
    assignment on large groups. A wrong flag therefore falls back to the heterogeneous path
    instead of handing partitions to members that do not subscribe to them.
    """
    if spec.subscription_type is not SubscriptionType.HOMOGENEOUS or not members:
        return None
    first = members[0].subscribed_topic_ids
    size = len(first)
    digest = hash(first)
    for member in members:
        subscribed = member.subscribed_topic_ids
        if subscribed is not first and (len(subscribed) != size or hash(subscribed) != digest):
            return None
    return first


def static_first_order(spec: GroupSpec) -> list[str]:
    """Member ids with static members first (by instance id), then dynamic ones (by member id)."""
    static: list[tuple[str, str]] = []
    dynamic: list[str] = []
    for member_id, member in spec.members.items():
        if member.instance_id is None:
            dynamic.append(member_id)
        else:
            static.append((member.instance_id, member_id))
    static.sort()
    dynamic.sort()
    return [member_id for _, member_id in static] + dynamic


def valid_partitions(partitions: Iterable[int], num_partitions: int, claimed: set[int]) -> frozenset[int]:
    """The partitions of a previous assignment that can be kept: in range and not yet claimed.

    This is the slow path of the import of previous assignments: the fast path keeps a previous
    frozenset as it is when it is disjoint from `claimed` and within ``[0, num_partitions)``.
    """
    return frozenset(
        p for p in partitions if isinstance(p, int) and 0 <= p < num_partitions and p not in claimed
    )


#: Shared int objects for partition numbers (see `Chunker`); grows on demand.
_NUMBERS: list[int] = []
#: Partition numbers up to this are shared; a larger topic gets its own numbers.
MAX_SHARED_PARTITION_NUMBERS = 1 << 20


def _numbers(count: int) -> Sequence[int]:
    """A sliceable sequence whose first `count` items are ``0 .. count - 1`` (maybe longer).

    Frozensets built from slices of one shared list reuse its int objects instead of creating
    new ones for every partition above 256. The list is a pure memo (its content is fixed).
    """
    global _NUMBERS
    if count > MAX_SHARED_PARTITION_NUMBERS:
        return range(count)
    numbers = _NUMBERS
    if len(numbers) < count:
        # A new list, published by one assignment: a concurrent caller keeps a valid old one.
        numbers = _NUMBERS = list(range(min(max(count, 2 * len(numbers)), MAX_SHARED_PARTITION_NUMBERS)))
    return numbers


class Chunker:
    """Cuts partition numbers into runs of consecutive partitions, sharing equal frozensets.

    Topics with the same partition count are usually cut at the same places (member ``k`` of a
    range, the ``k``-th share of a topic), so one frozenset can stand for the same partitions of
    many topics. Frozensets are immutable, so sharing them between members is safe.
    One `Chunker` lives for one assignment.
    """

    __slots__ = ("_cache",)

    def __init__(self) -> None:
        # (size, start % size) -> the k-th chunk at index k (None until it is needed)
        self._cache: dict[tuple[int, int], list[frozenset[int] | None]] = {}

    def cut(self, start: int, size: int, count: int) -> list[frozenset[int]]:
        """`count` frozensets of `size` consecutive partitions, the first starting at `start`."""
        offset = start % size
        first = start // size
        end = first + count
        chunks = self._cache.get((size, offset))
        if chunks is None:
            chunks = self._cache[size, offset] = []
        if len(chunks) < end:
            chunks += [None] * (end - len(chunks))
        part = chunks[first:end]
        if None in part:
            stop = start + count * size
            fresh = _grouped(_numbers(stop)[start:stop], size)
            chunks[first:end] = fresh
            return fresh
        return cast("list[frozenset[int]]", part)  # no None left

    @staticmethod
    def one(start: int, size: int) -> frozenset[int]:
        """The frozenset of partitions ``start .. start + size - 1``."""
        return frozenset(_numbers(start + size)[start : start + size])


def _grouped(numbers: Sequence[int], size: int) -> list[frozenset[int]]:
    """`numbers` cut into frozensets of `size` (the grouper idiom: no Python-level loop)."""
    return list(map(frozenset, zip(*[iter(numbers)] * size, strict=False)))
