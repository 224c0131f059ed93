"""The at-least-once ledger shared by every member of an integration test (see
`consumer_harness`'s docstring for the invariants it checks), and how it reads committed offsets."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field

from confluent_kafka import Message

from kconsumer.testing import ReferenceCluster

Key = tuple[str, int]


@dataclass
class Interval:
    """One member's ownership of one partition, from on_partitions_assigned to its end."""

    member: str
    key: Key
    start: float
    #: The group's committed offset of the partition when it was assigned (None: none).
    committed_at_start: int | None
    offsets: list[int] = field(default_factory=list)
    end: float | None = None
    #: ``revoked``, ``lost`` or ``crashed``.
    how: str | None = None
    #: What the member committed for the partition when it was revoked (None: nothing, or failed).
    committed_at_end: int | None = None


#: Reads the group's committed offsets of some partitions (None for a partition with none).
CommittedSource = Callable[[Sequence[Key]], dict[Key, int | None]]


class Ledger:
    """Ownership and records of one group, checked as they happen (see the module docstring)."""

    def __init__(
        self,
        committed: CommittedSource | None = None,
        *,
        zombies: bool = False,
        rereading_peers: Collection[str] = (),
    ) -> None:
        """`zombies`: the test makes members zombies on purpose (the coordinator removes them while
        they cannot reach it), so a holder whose holding ends lost may have read after another.
        `rereading_peers`: members (peers' clients, never kconsumer) whose re-reads are noted in
        `tolerated` instead of failing the check: a record read twice in one assignment, or again
        below the offset committed when it got the partition. librdkafka 2.16's KIP-848 consumer
        re-reads a partition from its start now and then, against Apache Kafka 4.4 as well;
        at-least-once allows it, and every loss check still applies to them."""
        self.zombies = zombies
        self.rereading_peers = frozenset(rereading_peers)
        #: The re-reads of `rereading_peers` the last `check` found.
        self.tolerated: list[str] = []
        self._lock = threading.RLock()
        self._committed = committed
        self.intervals: list[Interval] = []
        self._open: dict[tuple[str, Key], Interval] = {}
        #: (previous holder's interval, new holder's interval) when a partition was assigned while held.
        self.overlaps: list[tuple[Interval, Interval]] = []
        #: (member, key, offset, interval) in the order received.
        self.receipts: list[tuple[str, Key, int, Interval]] = []
        self.violations: list[str] = []
        self._last_receiver: dict[Key, Interval] = {}
        self._sampler: threading.Thread | None = None
        self._sampling = threading.Event()
        self.samples = 0

    # -- callbacks ----------------------------------------------------------------------------

    def assigned(self, member: str, keys: Iterable[Key]) -> None:
        keys = list(keys)
        committed = self._committed(keys) if self._committed is not None and keys else {}
        now = time.monotonic()
        with self._lock:
            for key in keys:
                if (member, key) in self._open:
                    self.violations.append(f"{member} assigned {key} twice")
                    continue
                interval = Interval(member, key, now, committed.get(key))
                for (other, other_key), held in self._open.items():
                    if other_key == key and other != member:
                        self.overlaps.append((held, interval))
                self._open[(member, key)] = interval
                self.intervals.append(interval)

    def released(
        self, member: str, keys: Iterable[Key], how: str, committed: dict[Key, int] | None = None
    ) -> None:
        now = time.monotonic()
        with self._lock:
            for key in keys:
                interval = self._open.pop((member, key), None)
                if interval is None:
                    self.violations.append(f"{member}: {how} {key} it did not own")
                    continue
                interval.end, interval.how = now, how
                if committed is not None:
                    interval.committed_at_end = committed.get(key)

    def crashed(self, member: str) -> None:
        with self._lock:
            self.released(member, [key for (m, key) in list(self._open) if m == member], "crashed")

    def consuming(self, *members: str) -> bool:
        """Each of `members` owns partitions and received records of each since it got them."""
        with self._lock:
            for member in members:
                open_intervals = [i for (m, _key), i in self._open.items() if m == member]
                if not open_intervals or not all(i.offsets for i in open_intervals):
                    return False
            return True

    def owned_by(self, member: str) -> set[Key]:
        with self._lock:
            return {key for (m, key) in self._open if m == member}

    # -- records ------------------------------------------------------------------------------

    def received(self, member: str, message: Message) -> None:
        key, offset = position(message)
        with self._lock:
            interval = self._open.get((member, key))
            if interval is None:
                self.violations.append(f"{member} received {key}@{offset} without owning {key}")
                return
            interval.offsets.append(offset)
            self.receipts.append((member, key, offset, interval))
            self._last_receiver[key] = interval

    def count(self, keys: Iterable[Key] | None = None) -> int:
        """Distinct (partition, offset) pairs received (of `keys` only, if given)."""
        with self._lock:
            wanted = None if keys is None else set(keys)
            return len({(k, o) for _m, k, o, _i in self.receipts if wanted is None or k in wanted})

    def received_offsets(self) -> dict[Key, set[int]]:
        with self._lock:
            out: dict[Key, set[int]] = {}
            for _member, key, offset, _interval in self.receipts:
                out.setdefault(key, set()).add(offset)
            return out

    def has_all(self, produced: dict[Key, list[int]]) -> bool:
        received = self.received_offsets()
        return all(set(offsets) <= received.get(key, set()) for key, offsets in produced.items())

    # -- the coordinator's view -----------------------------------------------------------------

    def sample_group(self, cluster: ReferenceCluster, group: str, every: float = 0.03) -> None:
        """Check `describe_group` in the background: never two owners of a partition."""

        def run() -> None:
            while not self._sampling.wait(every):
                try:
                    description = cluster.describe_group(group)
                except (RuntimeError, TimeoutError):
                    return  # the cluster stopped (the test ended without check())
                self.samples += 1
                if description is None:
                    continue
                for key, owners in description.owners.items():
                    if len(owners) > 1:
                        with self._lock:
                            self.violations.append(f"coordinator: {key} owned by {owners}")

        self._sampler = threading.Thread(target=run, name="describe-sampler", daemon=True)
        self._sampler.start()

    def sampled_again(self, times: int = 3) -> Callable[[], bool]:
        """A condition for `wait_until`: the background sampler has looked at the group `times`
        more times since this call (a test waits for it in each state it wants checked, rather
        than counting on the machine's speed for a number of samples)."""
        target = self.samples + times
        return lambda: self.samples >= target

    def stop_sampling(self) -> None:
        if self._sampler is not None:
            self._sampling.set()
            self._sampler.join(10)
            self._sampler = None

    # -- the final check ----------------------------------------------------------------------------

    def check(self, produced: dict[Key, list[int]] | None = None, exactly_once_moves: bool = True) -> None:
        """Assert every invariant (see the module docstring); `produced` are the offsets that
        must all have been received. `exactly_once_moves`: a partition revoked with a successful
        commit is picked up exactly there (no duplicate)."""
        self.stop_sampling()
        with self._lock:
            problems = list(self.violations)
            problems += self._interleaved_reads()
            for held, new in self.overlaps:
                if held.how not in ("lost", "crashed"):
                    problems.append(
                        f"{new.member} was assigned {new.key} while {held.member} held it "
                        f"({held.how or 'still holding it'}), not lost"
                    )
            problems += self._check_offsets(exactly_once_moves)
            if produced is not None:
                received = self.received_offsets()
                for key, offsets in sorted(produced.items()):
                    missing = sorted(set(offsets) - received.get(key, set()))
                    if missing:
                        problems.append(f"{key}: {len(missing)} records never consumed, first {missing[:5]}")
            histories = [self._history(key) for key in self._keys() if any(str(key) in p for p in problems)]
        assert not problems, "\n".join(problems[:30] + histories[:4])

    def _keys(self) -> list[Key]:
        return sorted({interval.key for interval in self.intervals})

    def _history(self, key: Key) -> str:
        """Who held `key` when (seconds after the first assignment), what was committed at each
        start and end, and the first and last offsets each holder read: the story behind a problem."""
        origin = min((interval.start for interval in self.intervals), default=0.0)
        lines = [f"history of {key}:"]
        for interval in self.intervals:
            if interval.key != key:
                continue
            end = "open" if interval.end is None else f"{interval.end - origin:.3f} {interval.how}"
            offsets = interval.offsets
            read = f"read {offsets[0]}..{offsets[-1]}" if offsets else "read nothing"
            start = f"{interval.start - origin:.3f} (committed {interval.committed_at_start})"
            lines.append(
                f"  {interval.member}: {start} to {end} (committed {interval.committed_at_end}), "
                f"{read} ({len(offsets)})"
            )
        return "\n".join(lines)

    def _interleaved_reads(self) -> list[str]:
        """Reads of a partition by a member after another member read it since the first one's
        last read ("two members at once"); with `zombies`, unless one of the two was a zombie: a
        holder the coordinator removed while they could not talk, whose holding ended lost."""
        problems: list[str] = []
        last: dict[Key, Interval] = {}  # the last reader of each partition
        read_before: dict[Key, set[int]] = {}  # intervals (by id) that read the partition so far
        for member, key, offset, interval in self.receipts:
            previous = last.get(key)
            seen = read_before.setdefault(key, set())
            if (
                previous is not None
                and previous is not interval
                and previous.member != member
                and id(interval) in seen
                and not (self.zombies and "lost" in (interval.how, previous.how))
            ):
                problems.append(
                    f"{member} received {key}@{offset} after another member consumed {key} "
                    f"({previous.member})"
                )
            seen.add(id(interval))
            last[key] = interval
        return problems

    def _check_offsets(self, exactly_once_moves: bool) -> list[str]:
        problems: list[str] = []
        tolerated: list[str] = []
        seen: dict[Key, set[int]] = {}
        in_interval: dict[int, set[int]] = {}
        for member, key, offset, interval in self.receipts:
            earlier = seen.setdefault(key, set())
            mine = in_interval.setdefault(id(interval), set())
            found = problems if member not in self.rereading_peers else tolerated
            if offset in mine:
                found.append(f"{member} received {key}@{offset} twice in one assignment")
            mine.add(offset)
            if offset in earlier:
                floor = interval.committed_at_start or 0
                if offset < floor:
                    found.append(
                        f"{member} received {key}@{offset} again although {floor} was committed "
                        "when it got the partition"
                    )
            earlier.add(offset)
        by_key: dict[Key, list[Interval]] = {}
        for interval in self.intervals:
            by_key.setdefault(interval.key, []).append(interval)
        for key, intervals in by_key.items():
            for interval in intervals:
                start = interval.committed_at_start
                if interval.offsets and start is not None and interval.offsets[0] != start:
                    problems.append(
                        f"{interval.member} started {key} at {interval.offsets[0]}, not at the "
                        f"committed offset {start}"
                    )
            for previous, interval in itertools.pairwise(intervals):
                if (
                    exactly_once_moves
                    and previous.how == "revoked"
                    and previous.committed_at_end is not None
                    and interval.committed_at_start != previous.committed_at_end
                ):
                    problems.append(
                        f"{key}: {previous.member} committed {previous.committed_at_end} when revoked, "
                        f"but {interval.member} found {interval.committed_at_start}"
                    )
        self.tolerated = tolerated  # this check's (a second check does not add them again)
        return problems


class RecordAt:
    """What `Ledger.received` reads of a message, for members in other processes that report
    only (topic, partition, offset)."""

    def __init__(self, topic: str, partition: int, offset: int) -> None:
        self._position = (topic, partition, offset)

    def topic(self) -> str:
        return self._position[0]

    def partition(self) -> int:
        return self._position[1]

    def offset(self) -> int:
        return self._position[2]


def position(message: Message) -> tuple[Key, int]:
    """((topic, partition), offset) of a record."""
    topic, partition, offset = message.topic(), message.partition(), message.offset()
    assert topic is not None and partition is not None and offset is not None
    return (topic, partition), offset


def cluster_committed(cluster: ReferenceCluster, group: str) -> CommittedSource:
    """A `CommittedSource` reading the reference cluster's offsets directly."""

    def read(keys: Sequence[Key]) -> dict[Key, int | None]:
        stored = cluster.committed(group)
        return {key: stored.get(key) for key in keys}

    return read
