"""What a rebalance cost, from the members' reports (see `benchmarks.rebalance`): who owned each
partition when, when it was consumed, whether the group has converged, and the costs of one event.

The reports are ``(kind, monotonic time, member, data)`` tuples, sorted by time: ``subscribed``,
``assign`` / ``revoke`` / ``lost`` (the partitions of a rebalance callback), ``records``
(``(partition, offset)`` pairs), and the parent's own ``closed`` and ``dead``.

**Hand-over phases**, per partition that changed hands during an event (medians over them):

* *release*: from the event to the moment its owner let it go (the revocation callback, the
  member's close, or its death for a crash: the kill itself);
* *assign*: from that release to the next owner's assignment callback (the acknowledgement
  reaching the coordinator, the new owner's next heartbeat bringing the partition);
* *first record*: from that assignment to the new owner's first record of the partition (the
  offset fetch and the fetch starting).

A partition given to a member without being taken from another (a crash's orphan, a joiner
taking a partition released for it) counts in each phase it went through.
"""

from __future__ import annotations

import itertools
import statistics
from collections import defaultdict
from dataclasses import replace
from typing import Any, TypeVar

#: No ownership change for this long (and everything owned and consumed again) ends an event.
QUIET_S = 2.5

Events = list[tuple[str, float, str, Any]]


def timeline(events: Events, partitions: int) -> dict[str, Any]:
    """Ownership intervals and consumption times per partition, from the sorted event log."""
    owners: dict[int, set[str]] = defaultdict(set)
    held: dict[str, set[int]] = defaultdict(set)
    changes: dict[int, list[float]] = defaultdict(list)  # times a partition's owners changed
    unowned_since: dict[int, float | None] = dict.fromkeys(range(partitions), 0.0)
    unowned: dict[int, list[tuple[float, float]]] = defaultdict(list)  # closed intervals
    consumed: dict[int, list[tuple[float, str, int]]] = defaultdict(list)
    members: set[str] = set()
    for kind, t, name, data in events:
        if kind == "subscribed":
            members.add(name)
        elif kind == "assign":
            for p in data:
                if not owners[p] and unowned_since.get(p) is not None:
                    unowned[p].append((unowned_since[p] or 0.0, t))
                    unowned_since[p] = None
                owners[p].add(name)
                held[name].add(p)
                changes[p].append(t)
        elif kind in ("revoke", "lost", "dead", "closed"):
            gone = list(held[name]) if kind in ("dead", "closed") else data
            for p in gone:
                if name in owners[p]:
                    owners[p].discard(name)
                    held[name].discard(p)
                    changes[p].append(t)
                    if not owners[p]:
                        unowned_since[p] = t
            if kind in ("dead", "closed"):
                members.discard(name)
        elif kind == "records":
            for p, offset in data:
                consumed[p].append((t, name, offset))
    return {
        "owners": owners,
        "held": held,
        "changes": changes,
        "unowned": unowned,
        "unowned_since": unowned_since,
        "consumed": consumed,
        "members": members,
    }


def converged_since(tl: dict[str, Any], partitions: int, since: float, now: float) -> bool:
    """Every partition owned, the group balanced, every partition that moved since `since`
    consumed again by its owner, and no change for `QUIET_S` before `now`."""
    owners, held, changes, consumed = tl["owners"], tl["held"], tl["changes"], tl["consumed"]
    if any(not owners[p] for p in range(partitions)):
        return False
    live = tl["members"]
    counts = [len(held[m]) for m in live] or [0]
    if max(counts) - min(counts) > 1:
        return False
    for p in range(partitions):
        moved = [t for t in changes[p] if t >= since]
        if moved and not any(t >= moved[-1] and name in owners[p] for t, name, _ in reversed(consumed[p])):
            return False
    return now - last_change(tl, since) >= QUIET_S


def last_change(tl: dict[str, Any], since: float) -> float:
    """The latest change of any partition's owners at or after `since` (`since` if none): a
    converged group has been quiet since then (and for `QUIET_S` at least)."""
    return max((t for times in tl["changes"].values() for t in times if t >= since), default=since)


def measure(
    events: Events, partitions: int, since: float, until: float
) -> tuple[float, float, float, int, int]:
    """(time to full ownership, unowned partition-seconds, longest gap, duplicates, partitions moved)."""
    tl = timeline(events, partitions)
    full = 0.0
    moved = 0
    unowned_total = 0.0
    longest = 0.0
    for p in range(partitions):
        changed = [t for t in tl["changes"][p] if since <= t <= until]
        if changed:
            moved += 1
            owners = tl["owners"][p]
            after = [t for t, name, _ in tl["consumed"][p] if t >= changed[-1] and name in owners]
            full = max(full, (after[0] if after else until) - since)
        for start, end in tl["unowned"][p]:
            lo, hi = max(start, since), min(end, until)
            if hi > lo:
                unowned_total += hi - lo
        times = [t for t, _, _ in tl["consumed"][p]]
        before = [t for t in times if t < since]
        window = ([before[-1]] if before else [since]) + [t for t in times if since <= t <= until]
        gaps = [b - a for a, b in itertools.pairwise(window)]
        longest = max([longest, *gaps])
    seen: set[tuple[int, int]] = set()
    duplicates = 0
    for p, records in tl["consumed"].items():
        for t, _name, offset in records:
            key = (p, offset)
            if key in seen and since <= t <= until:
                duplicates += 1
            seen.add(key)
    return full, unowned_total, longest, duplicates, moved


def handover_phases(events: Events, since: float, until: float) -> tuple[float, float, float]:
    """Medians of the release, assign and first-record phases (see the module docstring) over
    the partitions that changed hands in ``[since, until]``; NaN for a phase nobody went through."""
    release: list[float] = []
    assign: list[float] = []
    first: list[float] = []
    owners: dict[int, set[str]] = defaultdict(set)
    held: dict[str, set[int]] = defaultdict(set)
    released_at: dict[int, float] = {}  # partitions let go in the window, not assigned again yet
    assigned: dict[int, tuple[str, float]] = {}  # partitions given in the window, no record yet
    for kind, t, name, data in events:
        in_window = since <= t <= until
        if kind == "assign":
            for p in data:
                owners[p].add(name)
                held[name].add(p)
                if in_window:
                    start = released_at.pop(p, since)
                    assign.append(t - start)
                    assigned[p] = (name, t)
        elif kind in ("revoke", "lost", "dead", "closed"):
            gone = list(held[name]) if kind in ("dead", "closed") else data
            for p in gone:
                owners[p].discard(name)
                held[name].discard(p)
                if in_window and not owners[p]:
                    released_at[p] = t
                    release.append(t - since)
        elif kind == "records" and in_window:
            for p, _offset in data:
                taker = assigned.get(p)
                if taker is not None and taker[0] == name:
                    first.append(t - taker[1])
                    del assigned[p]
    return _median(release), _median(assign), _median(first)


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


#: What a rebalance run measures per cell and event (fields of `rebalance.EventResult`).
MEASURES = (
    "time_to_full_s",
    "unowned_partition_s",
    "longest_gap_s",
    "release_s",
    "assign_s",
    "first_record_s",
)
R = TypeVar("R")


def medians(runs: list[list[R]]) -> list[R]:
    """One result per cell and event over several whole runs: each measure's median; converged
    only if it did in every run; the most duplicates any run saw; what was counted in `note`
    (join and leave are measured several times in each run)."""
    cells: dict[tuple[Any, ...], list[Any]] = {}
    for results in runs:
        for r in results:
            key = (r.client, r.broker, r.members, r.partitions, r.event)  # type: ignore[attr-defined]
            cells.setdefault(key, []).append(r)
    merged = []
    for same in cells.values():
        notes = sorted({r.note for r in same if r.note})
        merged.append(
            replace(
                same[0],
                converged=all(r.converged for r in same),
                duplicates=max(r.duplicates for r in same),
                moved=int(statistics.median(r.moved for r in same)),
                note="; ".join([f"median of {len(same)} measurements in {len(runs)} runs", *notes]),
                **{m: statistics.median(getattr(r, m) for r in same) for m in MEASURES},
            )
        )
    return merged
