"""The uniform assignor when members subscribe to different topics.

The shape of Kafka's builder since KAFKA-17710 (4.0.0), in three steps:

1. **Import** every member's previous target, dropping topics it no longer subscribes to.
   Invalid entries are dropped too: partitions beyond the topic's count, and partitions an earlier
   member (in member-id order) already holds.
2. **Assign** the partitions nobody holds, topic by topic, each to the least-loaded subscriber
   (fewest partitions overall; on a tie, the one that had fewer before this topic, then the
   lowest member index, as Kafka's balancer orders them). Topics go in order of partitions per
   subscriber (descending), then subscriber count (ascending), then topic id. The rule is applied
   in bulk ("water filling"): each receiving member gets one contiguous run of the topic's free
   partitions. The per-member counts are the ones the one-at-a-time rule gives; the partition
   numbers differ from Kafka, which deals partitions out round-robin.
3. **Balance**, per topic with at least two subscribers, in the same topic order: move partitions
   from the most loaded subscribers that hold some of the topic to the least loaded subscribers
   until they differ by at most one. A moved partition is preferably one the receiver held in its
   previous target (it goes back to its previous owner), then one the giver did not hold in its
   previous target, then the giver's highest partition. The topics are swept again until a whole
   sweep moves nothing, at most `MAX_ITERATION_COUNT` (16) sweeps. Overlapping subscriptions can
   end "almost balanced": every topic's subscribers are within one of each other (counting only
   those that hold some of the topic as givers), yet members of different topics may differ more.

Performance notes. The subscribers of a topic are a `_Subgroup`, shared by all topics with exactly
the same subscribers (Kafka's heterogeneous benchmark has 5 of them). A subgroup caches its members
sorted by load ("levels"), so the balance check of a topic is O(1) while nothing changed, and the
cache is dropped only for the subgroups that contain a member whose load changed.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain, groupby, repeat
from operator import setitem
from typing import cast

from ...protocol.uuid import Uuid
from ..interface import MemberSpec, PartitionsByTopicId, TopicMetadata
from ._common import Chunker, check_topics_exist
from ._previous import FreePartitions, import_previous

#: Kafka's MAX_ITERATION_COUNT: the most balancing sweeps over the topics.
MAX_ITERATION_COUNT = 16

#: Members with the same load, as (load, member indices in ascending order), by ascending load.
_Levels = list[tuple[int, list[int]]]
_Partitions = frozenset[int] | set[int]


class _Subgroup:
    """The subscribers of one or more topics (all topics with exactly these subscribers)."""

    __slots__ = ("exclusive", "levels", "members", "stale_sizes", "version")

    def __init__(self, members: list[int]) -> None:
        self.members = members  # member indices, ascending
        self.levels: _Levels | None = None  # None when a member's load changed since it was built
        self.version = 0  # bumped whenever a member's load changes
        #: No member subscribes to a topic of another subgroup (Kafka's benchmark buckets).
        self.exclusive = False
        #: The loads in `levels` are newer than the builder's sizes (only for exclusive subgroups).
        self.stale_sizes = False


class HeterogeneousBuilder:
    """One computation of the heterogeneous uniform assignment. Use `build` once."""

    def __init__(
        self,
        member_ids: Sequence[str],
        members: Sequence[MemberSpec],
        topics: Mapping[Uuid, TopicMetadata],
    ) -> None:
        """`members` are in `member_ids` order, which must be sorted (it breaks load ties)."""
        self._member_ids = member_ids
        self._members = members
        self._sizes = [0] * len(members)
        #: The number of balancing sweeps `build` ran, and whether they ended because a whole sweep
        #: moved nothing (rather than at `MAX_ITERATION_COUNT`). For tests and diagnostics.
        self.sweeps = 0
        self.converged = True

        # Members with identical subscriptions form a class; topics map to the classes subscribing.
        subscriptions = [member.subscribed_topic_ids for member in members]
        class_index = {subscribed: c for c, subscribed in enumerate(dict.fromkeys(subscriptions))}
        self._member_class: list[int] = list(map(class_index.__getitem__, subscriptions))
        class_members: list[list[int]] = [[] for _ in class_index]
        if len(class_members) == 1:
            class_members[0] = list(range(len(members)))
        else:
            for i, c in enumerate(self._member_class):
                class_members[c].append(i)
        topic_classes: dict[Uuid, list[int]] = {}
        for subscribed, c in class_index.items():
            for topic_id in subscribed:
                topic_classes.setdefault(topic_id, []).append(c)
        check_topics_exist(topic_classes, topics)
        self._class_subscriptions = list(class_index)

        groups: dict[tuple[int, ...], _Subgroup] = {}
        self._class_groups: list[list[_Subgroup]] = [[] for _ in class_members]
        self._topic_group: dict[Uuid, _Subgroup] = {}
        for topic_id, classes in topic_classes.items():
            key = tuple(classes)
            group = groups.get(key)
            if group is None:
                if len(classes) == 1:
                    subscribers = class_members[classes[0]]
                else:
                    subscribers = sorted(chain.from_iterable(class_members[c] for c in classes))
                group = groups[key] = _Subgroup(subscribers)
                for c in classes:
                    self._class_groups[c].append(group)
            self._topic_group[topic_id] = group
        for key, group in groups.items():
            group.exclusive = all(len(self._class_groups[c]) == 1 for c in key)
        self._counts = {topic_id: topics[topic_id].num_partitions for topic_id in topic_classes}

        #: The sanitized previous target of each member (its own mapping when nothing was dropped).
        self._previous: list[PartitionsByTopicId] = []
        #: The member's new target while it differs from `_previous`, else None (copy on write).
        self._current: list[dict[Uuid, _Partitions] | None] = [None] * len(members)
        #: Members whose `_current` mapping holds mutable sets (from balancing moves).
        self._mutated: set[int] = set()
        #: Topics whose balancing found nothing to move, with their subgroup's version then.
        self._settled: dict[Uuid, int] = {}
        self._chunker = Chunker()

    def build(self) -> dict[str, PartitionsByTopicId]:
        """Run the three steps and return the new target of every member."""
        unassigned = self._import()
        counts = self._counts

        def order(topic_id: Uuid) -> tuple[float, int, bytes]:
            subscribers = len(self._topic_group[topic_id].members)
            return (-(counts[topic_id] / subscribers), subscribers, topic_id.bytes)

        topic_order = sorted(counts, key=order)
        for topic_id in topic_order:
            run = unassigned.get(topic_id)
            if run:
                self._assign(topic_id, run, fresh=isinstance(run, range))
        self._balance([t for t in topic_order if len(self._topic_group[t].members) >= 2])

        current = self._current
        for i in self._mutated:
            mapping = current[i]
            assert mapping is not None
            current[i] = {t: frozenset(s) for t, s in mapping.items()}
        # Every value is a frozenset again.
        final = cast("list[PartitionsByTopicId | None]", current)
        return {
            member_id: previous if mine is None else mine
            for member_id, previous, mine in zip(self._member_ids, self._previous, final, strict=True)
        }

    # -- step 1 ------------------------------------------------------------------------------

    def _import(self) -> dict[Uuid, FreePartitions]:
        """Import the previous targets; return the partitions nobody holds, by topic."""
        self._previous, self._sizes, free = import_previous(
            [member.assignment for member in self._members],
            self._counts,
            self._class_subscriptions,
            self._member_class,
        )
        # Members without a previous target get their own mapping at once (no copy on write).
        self._current = [None if previous else {} for previous in self._previous]
        return free

    # -- step 2 ------------------------------------------------------------------------------

    def _assign(self, topic_id: Uuid, run: FreePartitions, fresh: bool) -> None:
        """Give the free partitions `run` of a topic to its least-loaded subscribers.

        `fresh` says that no member holds a partition of the topic yet.
        """
        group = self._topic_group[topic_id]
        shares = _water_fill(self._levels(group), len(run))
        group.version += 1
        sizes = self._sizes
        current = self._current
        chunker = self._chunker
        # An exclusive subgroup's levels are the only loads anyone reads until balancing moves
        # partitions, so the sizes are written back only then (see `_write_sizes`).
        group.stale_sizes = group.exclusive
        pos = 0
        for receivers, count in shares:
            if not group.exclusive:
                for i in receivers:
                    sizes[i] += count
                self._loads_changed(receivers, group)
            if isinstance(run, range):
                chunks = chunker.cut(pos, count, len(receivers))
            else:
                end = pos + count * len(receivers)
                chunks = list(map(frozenset, zip(*[iter(run[pos:end])] * count, strict=False)))
            pos += count * len(receivers)
            if fresh:
                mappings = list(map(current.__getitem__, receivers))
                if None in mappings:
                    mappings = [self._own(i) for i in receivers]
                # No receiver holds the topic yet: plain stores, without a Python-level loop.
                owned = cast("list[dict[Uuid, _Partitions]]", mappings)
                deque(map(setitem, owned, repeat(topic_id), chunks), maxlen=0)
            else:
                for i, chunk in zip(receivers, chunks, strict=False):
                    mapping = self._own(i)
                    old = mapping.get(topic_id)
                    mapping[topic_id] = old | chunk if old else chunk

    # -- step 3 ------------------------------------------------------------------------------

    def _balance(self, topics: list[Uuid]) -> None:
        """Sweep the topics (each with 2+ subscribers) until a whole sweep moves nothing."""
        last_moved = -1
        self.sweeps = 0
        self.converged = not topics
        if not topics:
            return
        for _ in range(MAX_ITERATION_COUNT):
            self.sweeps += 1
            for index, topic_id in enumerate(topics):
                if index == last_moved:
                    self.converged = True  # a whole sweep since the last move
                    return
                if self._balance_topic(topic_id) or last_moved == -1:
                    last_moved = index

    def _balance_topic(self, topic_id: Uuid) -> int:
        """Move partitions of one topic from its most to its least loaded subscribers."""
        group = self._topic_group[topic_id]
        levels = self._levels(group)
        if levels[-1][0] - levels[0][0] <= 1 or self._settled.get(topic_id) == group.version:
            return 0
        self._write_sizes(group)
        sizes = self._sizes
        # Loads only converge, so a giver starts at least two above the lowest load and a taker
        # at least two below the highest: the members in between never take part.
        low, high = levels[0][0], levels[-1][0]
        givers = [
            (-load, -i)
            for load, members in levels
            if load >= low + 2
            for i in members
            if self._view(i).get(topic_id)
        ]
        takers = [(load, i) for load, members in levels if load <= high - 2 for i in members]
        heapq.heapify(givers)
        heapq.heapify(takers)
        changed: set[int] = set()
        while givers:
            load, neg_giver = givers[0]
            giver = -neg_giver
            held = self._view(giver).get(topic_id)
            if -load != sizes[giver] or not held:
                heapq.heappop(givers)  # an outdated entry, or nothing of this topic left to give
                continue
            while takers[0][0] != sizes[takers[0][1]]:
                heapq.heappop(takers)
            taker = takers[0][1]
            if sizes[giver] - sizes[taker] <= 1:
                break
            self._move(topic_id, self._pick(topic_id, held, giver, taker), giver, taker)
            sizes[giver] -= 1
            sizes[taker] += 1
            heapq.heapreplace(givers, (-sizes[giver], -giver))
            heapq.heappush(givers, (-sizes[taker], -taker))
            heapq.heapreplace(takers, (sizes[taker], taker))
            heapq.heappush(takers, (sizes[giver], giver))
            changed.add(giver)
            changed.add(taker)
        if changed:
            self._loads_changed(changed, None)
        else:
            self._settled[topic_id] = group.version
        return len(changed)

    def _pick(self, topic_id: Uuid, held: _Partitions, giver: int, taker: int) -> int:
        """The partition of `held` (the giver's) to move to `taker`."""
        back = self._previous[taker].get(topic_id)
        if back:
            returning = held & back
            if returning:
                return max(returning)
        own = self._previous[giver].get(topic_id)
        if own:
            foreign = held - own
            if foreign:
                return max(foreign)
        return max(held)

    def _move(self, topic_id: Uuid, partition: int, giver: int, taker: int) -> None:
        giving = self._own(giver)
        partitions = giving[topic_id]
        if not isinstance(partitions, set):
            partitions = giving[topic_id] = set(partitions)
            self._mutated.add(giver)
        partitions.discard(partition)
        if not partitions:
            del giving[topic_id]
        taking = self._own(taker)
        partitions = taking.get(topic_id, frozenset())
        if not isinstance(partitions, set):
            partitions = taking[topic_id] = set(partitions)
            self._mutated.add(taker)
        partitions.add(partition)

    # -- bookkeeping -------------------------------------------------------------------------

    def _view(self, i: int) -> Mapping[Uuid, _Partitions]:
        current = self._current[i]
        return self._previous[i] if current is None else current

    def _own(self, i: int) -> dict[Uuid, _Partitions]:
        current = self._current[i]
        if current is None:
            current = self._current[i] = dict(self._previous[i])
        return current

    def _write_sizes(self, group: _Subgroup) -> None:
        """Bring the builder's sizes of the subgroup's members up to date with its levels."""
        if group.stale_sizes and group.levels is not None:
            sizes = self._sizes
            for load, members in group.levels:
                for i in members:
                    sizes[i] = load
        group.stale_sizes = False

    def _levels(self, group: _Subgroup) -> _Levels:
        levels = group.levels
        if levels is None:
            load = self._sizes.__getitem__
            ordered = sorted(group.members, key=load)  # stable: ties stay in member order
            levels = group.levels = [(size, list(same)) for size, same in groupby(ordered, key=load)]
        return levels

    def _loads_changed(self, members: Iterable[int], kept: _Subgroup | None) -> None:
        """Drop the cached levels of every subgroup (but `kept`) containing one of `members`."""
        member_class = self._member_class
        for c in {member_class[i] for i in members}:
            for group in self._class_groups[c]:
                if group is not kept:
                    group.levels = None
                    group.version += 1


def _water_fill(levels: _Levels, partitions: int) -> list[tuple[list[int], int]]:
    """Deal `partitions` to the least-loaded members, one at a time; update `levels` in place.

    Returns the shares as (members, partitions each), every receiving member in exactly one
    share, in the order the partitions are handed out. The result is the one of Kafka's
    balancer: each partition in turn goes to the next member of the least-loaded range, which
    is ordered by load before this topic, then by member index.
    """
    if not partitions:
        return []
    # The lowest levels that the partitions lift to a common load `top`.
    depth = 1
    width = len(levels[0][1])
    left = partitions
    while depth < len(levels):
        needed = width * (levels[depth][0] - levels[depth - 1][0])
        if left < needed:
            break
        left -= needed
        width += len(levels[depth][1])
        depth += 1
    full, rest = divmod(left, width)
    top = levels[depth - 1][0] + full

    shares: list[tuple[list[int], int]] = []
    extras: list[int] = []  # the `rest` members that end one above `top`
    at_top: list[int] = []
    for load, members in levels[:depth]:
        gain = top - load
        take = min(rest - len(extras), len(members))
        if take:
            extras = _merge(extras, members[:take])
            shares.append((members[:take], gain + 1))
        if take < len(members):
            remaining = members[take:] if take else members
            at_top = _merge(at_top, remaining)
            if gain:
                shares.append((remaining, gain))
    replacement: _Levels = [(top, at_top)] if at_top else []
    if extras:
        if depth < len(levels) and levels[depth][0] == top + 1:
            levels[depth] = (top + 1, _merge(levels[depth][1], extras))
        else:
            replacement.append((top + 1, extras))
    levels[0:depth] = replacement
    return shares


def _merge(first: list[int], second: list[int]) -> list[int]:
    """The members of two ascending lists, ascending (they have none in common)."""
    if not first:
        return second
    if not second:
        return first
    if first[-1] < second[0]:
        return first + second
    if second[-1] < first[0]:
        return second + first
    return sorted(first + second)
