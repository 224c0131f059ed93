"""The uniform assignor when every member subscribes to the same topics.

Balance comes before stickiness: with ``T`` partitions and ``N`` members every member ends with
``T // N`` partitions, and ``T % N`` of them with one more. Within that constraint members keep as
much of their previous target as they can:

1. Members are walked in member-id order. Each keeps the previous partitions of subscribed topics
   that are still valid, up to its quota, and gives the rest back. When it keeps more than it may,
   it keeps the lowest partitions of the topics with the lowest ids.
2. The quota is ``T // N``, or one more while extra slots remain. As in Kafka since 4.1.0
   (KAFKA-18688), a member whose kept partitions do not reach ``T // N + 1`` leaves the extra slot
   to a later member, unless it is one of the last members, which must all take one. Any member can
   therefore hold an extra partition, and a balanced assignment is returned unchanged.
3. Partitions nobody holds (in topic-id then partition order), then the given-back ones (in member
   order), fill the members below their quota, in member order, as contiguous runs.

Previous targets are checked, as the coordinator's data may be stale: partitions of topics the
group no longer subscribes to, partitions beyond the topic's count and partitions that an earlier
member (in member-id order) already claims are dropped. A member whose target does not change gets
its previous mapping object back (copy on write, as Kafka's KAFKA-16864).

Performance notes: partitions are never handled one by one in Python on the common paths.
Unassigned partitions are held as per-topic runs (``range`` objects while nothing of the topic is
held); when no member keeps anything, members' shares are cut from shared partition numbers by
`Chunker` (equal shares of equal topics are one frozenset) and their mappings built by
``dict.fromkeys``; previous targets are checked with one set union per topic (`import_previous`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import repeat

from ...protocol.uuid import Uuid
from ..interface import MemberSpec, PartitionsByTopicId, TopicMetadata
from ._common import Chunker, sorted_topics, topic_key
from ._previous import import_previous

#: A run of partitions of one topic waiting for a member: a ``range`` or a sorted list.
_Run = tuple[Uuid, Sequence[int]]


def assign_homogeneous(
    member_ids: Sequence[str],
    members: Sequence[MemberSpec],
    subscribed: frozenset[Uuid],
    topics: Mapping[Uuid, TopicMetadata],
) -> dict[str, PartitionsByTopicId]:
    """The new target of a homogeneous group; `members` are in `member_ids` (sorted) order.

    `topics` maps every id of `subscribed` to its metadata (checked by the caller).
    """
    counts = {t: topics[t].num_partitions for t in sorted_topics(subscribed)}
    total = sum(counts.values())
    n = len(members)
    if total == 0 or n == 0:
        return {member_id: {} for member_id in member_ids}
    min_quota, extra = divmod(total, n)

    previous = [member.assignment for member in members]
    if not any(previous):
        # No previous target at all (a new group, or the benchmarks' FULL case): the first members
        # give their extra slot up and the last `extra` ones take one.
        fresh = [(t, c) for t, c in counts.items() if c]
        dealt = _deal(fresh, [(n - extra, min_quota), (extra, min_quota + 1)])
        return dict(zip(member_ids, dealt, strict=True))

    out: list[PartitionsByTopicId] = [{} for _ in range(n)]
    unfilled: list[tuple[int, int]] = []  # (member index, partitions still to receive)
    runs = _keep_previous(previous, counts, min_quota, extra, out, unfilled)
    _fill(runs, unfilled, out)
    return dict(zip(member_ids, out, strict=True))


def _keep_previous(
    previous: list[PartitionsByTopicId],
    counts: dict[Uuid, int],
    min_quota: int,
    extra: int,
    out: list[PartitionsByTopicId],
    unfilled: list[tuple[int, int]],
) -> list[_Run]:
    """Steps 1 and 2: what each member keeps, its remaining quota, and the partitions to hand out.

    Fills `out` with what each member keeps and `unfilled` with the members below their quota.
    Returns the runs of partitions nobody holds, then the runs given back.
    """
    valid, sizes, free = import_previous(previous, counts, [counts], None)
    n = len(previous)
    revoked: list[_Run] = []
    quota_plus = min_quota + 1
    for i, kept in enumerate(sizes):
        # The quota, with the KAFKA-18688 rule for the extra slots.
        if extra and (kept >= quota_plus or extra >= n - i):
            quota = quota_plus
            extra -= 1
        else:
            quota = min_quota
        if kept <= quota:
            out[i] = valid[i]
            if kept < quota:
                unfilled.append((i, quota - kept))
            continue

        # Over quota: keep the lowest partitions of the lowest topic ids, give the rest back.
        room = quota
        keep: dict[Uuid, frozenset[int]] = {}
        for topic_id, partitions in sorted(valid[i].items(), key=lambda part: topic_key(part[0])):
            if room >= len(partitions):
                keep[topic_id] = partitions
                room -= len(partitions)
                continue
            ordered = sorted(partitions)
            if room:
                keep[topic_id] = frozenset(ordered[:room])
            revoked.append((topic_id, ordered[room:]))
            room = 0
        out[i] = keep

    runs: list[_Run] = list(free.items())
    return runs + revoked


def _deal(topics: list[tuple[Uuid, int]], quotas: list[tuple[int, int]]) -> list[PartitionsByTopicId]:
    """Step 3 when no member keeps anything: `quotas` lists (members, partitions each) in order.

    Each member takes the next partitions of the `topics` (id, partition count), which hold
    exactly enough. Members whose share lies inside one topic, nearly all of them, are built
    without a Python-level loop: `Chunker` cuts the topic into shared frozensets, and
    ``dict.fromkeys`` over a one-key dict makes each mapping without hashing the topic id again.
    """
    chunker = Chunker()
    out: list[PartitionsByTopicId] = []
    topic_index = 0
    topic_id, count = topics[0]  # not empty: the group has partitions
    pos = 0
    for members, quota in quotas:
        if quota == 0:
            out += [{} for _ in range(members)]
            continue
        while members:
            whole = min(members, (count - pos) // quota)
            if whole:
                key = {topic_id: None}
                out += map(dict.fromkeys, repeat(key, whole), chunker.cut(pos, quota, whole))
                pos += whole * quota
                members -= whole
            if not members:
                break
            # This member's share spans topics.
            share: dict[Uuid, frozenset[int]] = {}
            wanted = quota
            while wanted:
                if pos == count:
                    topic_index += 1  # an IndexError here would mean the quotas do not add up
                    topic_id, count = topics[topic_index]
                    pos = 0
                take = min(wanted, count - pos)
                share[topic_id] = chunker.one(pos, take)
                pos += take
                wanted -= take
            out.append(share)
            members -= 1
        if pos == count and topic_index + 1 < len(topics):
            topic_index += 1
            topic_id, count = topics[topic_index]
            pos = 0
    return out


def _fill(runs: list[_Run], unfilled: list[tuple[int, int]], out: list[PartitionsByTopicId]) -> None:
    """Step 3: hand the runs out, in order, to the members below their quota."""
    if not unfilled:
        return
    run_index = 0
    topic_id, run = runs[0]
    run_len = len(run)
    pos = 0
    for i, wanted in unfilled:
        base = out[i]
        end = pos + wanted
        if end <= run_len:
            # The common case: the member's share lies inside the current run.
            chunk = frozenset(run[pos:end])
            pos = end
            if not base:
                out[i] = {topic_id: chunk}
            else:
                merged = dict(base)
                old = merged.get(topic_id)
                merged[topic_id] = old | chunk if old else chunk
                out[i] = merged
            if pos == run_len and run_index + 1 < len(runs):
                run_index += 1
                topic_id, run = runs[run_index]
                run_len = len(run)
                pos = 0
            continue
        # The share spans runs.
        merged = dict(base)
        while wanted:
            if pos == run_len:
                run_index += 1  # an IndexError here would mean the quotas do not add up
                topic_id, run = runs[run_index]
                run_len = len(run)
                pos = 0
            take = min(wanted, run_len - pos)
            chunk = frozenset(run[pos : pos + take])
            old = merged.get(topic_id)
            merged[topic_id] = old | chunk if old else chunk
            pos += take
            wanted -= take
        out[i] = merged
