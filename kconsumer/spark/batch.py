"""Planning a batch read (``spark.read.format("kconsumer")``): explicit offset ranges, for
backfills and reprocessing.

``startingOffsets`` (default ``earliest``) and ``endingOffsets`` (default ``latest``) take
``earliest``/``latest`` or Spark's Kafka JSON (``{"t": {"0": 12, "1": -2}}``; -2 earliest,
-1 latest; a partition not listed starts at earliest and ends at latest). ``startingOffsets``
may also be ``committed``: the committed offsets of ``group.id`` (earliest where the group has
none), so ``committed`` to ``latest`` is exactly the group's backlog. The read never joins the
group and commits nothing.
"""

from __future__ import annotations

from .cluster import Cluster
from .offsets import OffsetRange
from .options import EARLIEST, LATEST, Key, OffsetSpec, SourceOptions


def _wanted(spec: OffsetSpec, keys: list[Key], default: int) -> dict[Key, int]:
    if isinstance(spec, dict):
        return {k: spec.get(k, default) for k in keys}
    return {k: EARLIEST if spec == "earliest" else LATEST for k in keys}


def plan_batch(options: SourceOptions) -> list[OffsetRange]:
    """The non-empty ranges to read, one per partition, resolved against the cluster now."""
    cluster = Cluster(options)
    keys = cluster.partitions(must_exist=True)
    if isinstance(options.starting, dict):
        keys = sorted(set(keys) | set(options.starting))
    if options.starting == "committed":
        assert options.group_id is not None
        committed = cluster.group_offsets(options.group_id, keys)
        starts = {k: committed.get(k, EARLIEST) for k in keys}
    else:
        starts = _wanted(options.starting, keys, EARLIEST)
    ends = _wanted(options.ending, keys, LATEST)
    earliest = cluster.list_offsets([k for k in keys if EARLIEST in (starts[k], ends[k])], "earliest")
    latest = cluster.list_offsets([k for k in keys if LATEST in (starts[k], ends[k])], "latest")

    def resolve(value: int, key: Key) -> int:
        if value not in (EARLIEST, LATEST):
            return value
        found = (earliest if value == EARLIEST else latest).get(key)
        if found is None:
            which = "earliest" if value == EARLIEST else "latest"
            raise RuntimeError(f"kconsumer batch read: no {which} offset for {key[0]}-{key[1]}")
        return found

    ranges = []
    for key in keys:
        start, until = resolve(starts[key], key), resolve(ends[key], key)
        if until > start:
            ranges.append(OffsetRange(key[0], key[1], start, until))
    return ranges
