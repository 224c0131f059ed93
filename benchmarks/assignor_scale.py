"""Server-side assignor scale benchmark: ms per ``assign()`` over Kafka's benchmark grid.

Mirrors Kafka's ``ServerSideAssignorBenchmark``: members x partitions-per-member x
topics, partitions per topic = members x ratio / topics; HOMOGENEOUS (everyone subscribes to every
topic) or HETEROGENEOUS (members and topics split into 5 buckets, each bucket's members subscribe
to that bucket's topics); FULL (no previous assignment) or INCREMENTAL (one member joins a group
whose previous target is the assignor's own FULL result; the joiner subscribes like the last
member in the heterogeneous case). Only ``assign()`` is timed, as in Kafka. Each case prints the
median and the best of the timed runs: on a busy machine the best is the steadier figure.

Kafka's published figures (JMH, ms/op, as Kafka's developers published them) are printed next to
the cases they exist for. They were measured on other hardware, on the JVM, and some on older
versions of the algorithms: read them as orders of magnitude.

Run from the repository root::

    python -m benchmarks.assignor_scale            # the whole grid (a few minutes)
    python -m benchmarks.assignor_scale --quick    # ratio 10, 10 and 100 topics
    python -m benchmarks.assignor_scale --members 10000 --ratio 10 --topics 10 --assignor uniform
    python -m benchmarks.assignor_scale --quick --no-gc   # adds a column timed without the GC
    python -m benchmarks.assignor_scale --cpu             # CPU time: steadier on a shared machine
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from kconsumer.assignment.interface import (
    GroupSpec,
    MemberSpec,
    PartitionsByTopicId,
    ServerAssignor,
    SubscriptionType,
    TopicMetadata,
)
from kconsumer.broker.coordinator.assignors import assignor_by_name
from kconsumer.protocol.uuid import Uuid

HOMOGENEOUS = SubscriptionType.HOMOGENEOUS
HETEROGENEOUS = SubscriptionType.HETEROGENEOUS
BUCKETS = 5  # Kafka's MAX_BUCKET_COUNT

#: Kafka's figures: (assignor, subscription, assignment, members, ratio, topics) -> (ms/op, source).
KAFKA_FIGURES: dict[tuple[str, str, str, int, int, int], tuple[float, str]] = {
    # KAFKA-16864 (after), ServerSideAssignorBenchmark INCREMENTAL/UNIFORM/HOMOGENEOUS.
    ("uniform", "homogeneous", "INCREMENTAL", 10000, 10, 100): (1.975, "KAFKA-16864"),
    # MINOR #17285 (after), INCREMENTAL, 10000 members, ratio 10, 1000 topics.
    ("uniform", "homogeneous", "INCREMENTAL", 10000, 10, 1000): (1.454, "#17285"),
    ("uniform", "heterogeneous", "INCREMENTAL", 10000, 10, 1000): (342.840, "#17285, pre-17710"),
    ("range", "homogeneous", "INCREMENTAL", 10000, 10, 1000): (36.465, "#17285"),
    ("range", "heterogeneous", "INCREMENTAL", 10000, 10, 1000): (114.043, "#17285"),
    # KAFKA-16944 (Range rewrite), INCREMENTAL, ratio 10, 100 topics.
    ("range", "homogeneous", "INCREMENTAL", 100, 10, 100): (0.052, "KAFKA-16944"),
    ("range", "heterogeneous", "INCREMENTAL", 100, 10, 100): (0.172, "KAFKA-16944"),
    ("range", "homogeneous", "INCREMENTAL", 1000, 10, 100): (0.476, "KAFKA-16944"),
    ("range", "heterogeneous", "INCREMENTAL", 1000, 10, 100): (1.730, "KAFKA-16944"),
    ("range", "homogeneous", "INCREMENTAL", 10000, 10, 100): (5.640, "KAFKA-16944"),
    ("range", "heterogeneous", "INCREMENTAL", 10000, 10, 100): (18.595, "KAFKA-16944"),
    # ... and 1000 topics (for 10000 members #17285 is more recent, above).
    ("range", "homogeneous", "INCREMENTAL", 100, 10, 1000): (0.454, "KAFKA-16944"),
    ("range", "heterogeneous", "INCREMENTAL", 100, 10, 1000): (1.882, "KAFKA-16944"),
    ("range", "homogeneous", "INCREMENTAL", 1000, 10, 1000): (3.102, "KAFKA-16944"),
    ("range", "heterogeneous", "INCREMENTAL", 1000, 10, 1000): (17.654, "KAFKA-16944"),
    # KAFKA-17710 (after), uniform heterogeneous FULL.
    ("uniform", "heterogeneous", "FULL", 100, 5, 10): (0.059, "KAFKA-17710"),
    ("uniform", "heterogeneous", "FULL", 100, 5, 100): (0.233, "KAFKA-17710"),
    ("uniform", "heterogeneous", "FULL", 100, 5, 1000): (1.648, "KAFKA-17710"),
    ("uniform", "heterogeneous", "FULL", 100, 10, 10): (0.076, "KAFKA-17710"),
    ("uniform", "heterogeneous", "FULL", 10000, 10, 10): (8.923, "KAFKA-17710"),
    ("uniform", "heterogeneous", "FULL", 10000, 10, 100): (22.947, "KAFKA-17710"),
    # KAFKA-18688 (after), 10000 members, ratio 50.
    ("range", "homogeneous", "FULL", 10000, 50, 1000): (24.259, "KAFKA-18688"),
    ("range", "heterogeneous", "FULL", 10000, 50, 1000): (118.513, "KAFKA-18688"),
    ("range", "homogeneous", "INCREMENTAL", 10000, 50, 1000): (24.636, "KAFKA-18688"),
    ("range", "heterogeneous", "INCREMENTAL", 10000, 50, 1000): (115.503, "KAFKA-18688"),
    ("uniform", "homogeneous", "FULL", 10000, 50, 10): (13.874, "KAFKA-18688 #19677"),
    ("uniform", "homogeneous", "FULL", 10000, 50, 100): (12.351, "KAFKA-18688 #19677"),
    ("uniform", "homogeneous", "FULL", 10000, 50, 1000): (14.557, "KAFKA-18688 #19677"),
}

#: Our targets (benchmark issue): (assignor, subscription, assignment, members, ratio) -> ms.
TARGETS: dict[tuple[str, str, str, int, int], float] = {
    ("uniform", "homogeneous", "FULL", 10000, 10): 15.0,
    ("uniform", "heterogeneous", "FULL", 10000, 10): 50.0,
}


@dataclass(frozen=True)
class Case:
    """One point of the grid."""

    assignor: str
    subscription: SubscriptionType
    assignment: str  # FULL or INCREMENTAL
    members: int
    ratio: int
    topics: int


def _topics(count: int, partitions: int, rng: random.Random) -> list[TopicMetadata]:
    return [
        TopicMetadata(Uuid.from_int(rng.getrandbits(128)), f"topic-{i}", partitions) for i in range(count)
    ]


def _subscriptions(case: Case, topic_ids: Sequence[Uuid], members: int) -> list[frozenset[Uuid]]:
    """Each member's subscription (one shared frozenset per distinct subscription)."""
    if case.subscription is HOMOGENEOUS:
        every = frozenset(topic_ids)
        return [every] * members
    buckets = min(BUCKETS, members)
    topics_per_bucket = -(-len(topic_ids) // buckets)
    members_per_bucket = -(-members // buckets)
    subscriptions: list[frozenset[Uuid]] = []
    for bucket in range(buckets):
        chosen = frozenset(topic_ids[bucket * topics_per_bucket : (bucket + 1) * topics_per_bucket])
        first, last = bucket * members_per_bucket, min((bucket + 1) * members_per_bucket, members)
        subscriptions += [chosen] * max(0, last - first)
    return subscriptions


def build_spec(case: Case, assignor: ServerAssignor) -> GroupSpec:
    """The group the case measures (for INCREMENTAL, after the assignor's own FULL result)."""
    rng = random.Random(f"{case.members}/{case.ratio}/{case.topics}")
    topics = _topics(case.topics, case.members * case.ratio // case.topics, rng)
    topic_ids = [t.topic_id for t in topics]
    by_id = {t.topic_id: t for t in topics}
    incremental = case.assignment == "INCREMENTAL"
    count = case.members - 1 if incremental else case.members
    subscriptions = _subscriptions(case, topic_ids, count)
    members = {f"member{i}": MemberSpec(f"member{i}", None, None, subscriptions[i], {}) for i in range(count)}
    spec = GroupSpec(members, by_id, case.subscription)
    if not incremental:
        return spec
    previous: dict[str, PartitionsByTopicId] = assignor.assign(spec)
    members = {
        member_id: MemberSpec(member_id, None, None, member.subscribed_topic_ids, previous[member_id])
        for member_id, member in members.items()
    }
    joiner = subscriptions[-1] if case.subscription is HETEROGENEOUS else frozenset(topic_ids)
    members["newMember"] = MemberSpec("newMember", None, None, joiner, {})
    return GroupSpec(members, by_id, case.subscription)


def measure(
    case: Case, repeat: int, collect: bool = True, clock: Callable[[], float] = time.perf_counter
) -> tuple[float, float]:
    """Median and minimum ms per assign() over `repeat` runs, after one warm-up run.

    With `collect` False the cyclic garbage collector is off while timing (a diagnostic: the
    assignors create no reference cycles, so the difference is the collector's own cost).
    """
    assignor = assignor_by_name(case.assignor)
    spec = build_spec(case, assignor)
    assignor.assign(spec)
    samples = []
    for _ in range(repeat):
        gc.collect()
        if not collect:
            gc.disable()
        try:
            start = clock()
            assignor.assign(spec)
            samples.append((clock() - start) * 1000)
        finally:
            gc.enable()
    return statistics.median(samples), min(samples)


def _grid(args: argparse.Namespace) -> Iterable[Case]:
    for assignor in args.assignor:
        for subscription in (HOMOGENEOUS, HETEROGENEOUS):
            for assignment in ("FULL", "INCREMENTAL"):
                for members in args.members:
                    for ratio in args.ratio:
                        for topics in args.topics:
                            yield Case(assignor, subscription, assignment, members, ratio, topics)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the grid and print one line per case."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="ratio 10 with 10 and 100 topics only")
    parser.add_argument("--members", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--ratio", type=int, nargs="+", default=None, help="partitions per member")
    parser.add_argument("--topics", type=int, nargs="+", default=None)
    parser.add_argument("--assignor", nargs="+", default=["uniform", "range"])
    parser.add_argument("--repeat", type=int, default=None, help="timed runs per case")
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="time with the process's CPU clock instead of the wall clock (steadier on a busy machine)",
    )
    parser.add_argument(
        "--no-gc", action="store_true", help="also time each case with the garbage collector off (diagnostic)"
    )
    args = parser.parse_args(argv)
    if args.ratio is None:
        args.ratio = [10] if args.quick else [5, 10, 50]
    if args.topics is None:
        args.topics = [10, 100] if args.quick else [10, 100, 1000]
    if args.repeat is None:
        args.repeat = 5 if args.quick else 7

    clock = time.process_time if args.cpu else time.perf_counter
    kind = "CPU" if args.cpu else "wall-clock"
    print(f"# python {sys.version.split()[0]}, {kind} ms per assign(): median and best of {args.repeat} runs")
    header = f"{'assignor':<8} {'subscription':<13} {'type':<11} {'members':>7} {'ratio':>5} {'topics':>6}"
    gc_column = f" {'no-gc med':>9}" if args.no_gc else ""
    print(f"{header} {'median':>9} {'best':>9}{gc_column}  {'Kafka ms':>9}  note")
    for case in _grid(args):
        if case.members * case.ratio < case.topics:
            continue  # Kafka's grid would give topics with no partition
        ms, best = measure(case, args.repeat, clock=clock)
        no_gc = f" {measure(case, args.repeat, False, clock)[0]:9.2f}" if args.no_gc else ""
        sub = case.subscription.value
        kafka = KAFKA_FIGURES.get(
            (case.assignor, sub, case.assignment, case.members, case.ratio, case.topics)
        )
        target = TARGETS.get((case.assignor, sub, case.assignment, case.members, case.ratio))
        notes = []
        if kafka:
            notes.append(kafka[1])
        if target is not None:
            notes.append(f"target <= {target:g} ms (median): {'met' if ms <= target else 'MISSED'}")
        kafka_ms = f"{kafka[0]:9.3f}" if kafka else f"{'':9}"
        line = (
            f"{case.assignor:<8} {sub:<13} {case.assignment:<11} {case.members:>7} "
            f"{case.ratio:>5} {case.topics:>6} {ms:9.2f} {best:9.2f}{no_gc}  {kafka_ms}  {'; '.join(notes)}"
        )
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
