"""`stats_cb` as confluent-kafka users read it: librdkafka's statistics JSON, with the consumer
group's part filled from kconsumer's own membership.

The fetch path is a librdkafka handle in manual-assign mode that never joins a group, so its
statistics say ``cgrp.join_state = "init"``, ``assignment_size = 0`` and, per partition,
``committed_offset = -1001`` and ``consumer_lag = -1``: a lag dashboard written for confluent-kafka
would go blank. `GroupStatistics` rewrites those fields (the ``cgrp`` object, and per partition
``committed_offset``, ``stored_offset``, ``consumer_lag``, ``consumer_lag_stored``) from what the
member knows, with librdkafka's meanings (its STATISTICS.md): the lag is the partition's high
watermark (the last stable offset under read_committed) minus the committed (or stored) offset, -1
when either is unknown. It runs on the application thread, inside poll(), like the callback.
"""

from __future__ import annotations

import json
import time
from typing import Any, Protocol

from .member.state import MemberState
from .metrics import ConsumerMetrics

Key = tuple[str, int]

#: librdkafka's names for where the member is in the group (its rd_kafka_cgrp_join_state).
JOIN_STATES: dict[MemberState, str] = {
    MemberState.UNSUBSCRIBED: "init",
    MemberState.JOINING: "wait-join",
    MemberState.RECONCILING: "wait-assign-call",
    MemberState.ACKNOWLEDGING: "wait-assign-call",
    MemberState.STABLE: "steady",
    MemberState.FENCED: "init",
    MemberState.PREPARE_LEAVING: "wait-unassign-call",
    MemberState.LEAVING: "wait-unassign-to-complete",
    MemberState.STALE: "init",
    MemberState.FATAL: "init",
}


class MemberView(Protocol):
    """What the statistics read from the member (the application thread's view of it)."""

    def member_state(self) -> MemberState:
        """Where the member is in the group."""

    def owned_keys(self) -> set[Key]:
        """The partitions it owns."""

    def committed_offset(self, key: Key) -> int | None:
        """The group's committed offset of an owned partition, as far as the member knows."""

    def stored_offset(self, key: Key) -> int | None:
        """The offset the next commit of the partition would carry."""


class GroupStatistics:
    """Counts rebalances and rewrites the group fields of librdkafka's statistics."""

    def __init__(self, read_committed: bool) -> None:
        self._read_committed = read_committed
        #: The member, once the consumer has one (statistics before that keep librdkafka's fields).
        self.member: MemberView | None = None
        self._rebalances = 0
        self._last_rebalance = time.monotonic()
        self._started = time.monotonic()

    def rebalanced(self) -> None:
        """Partitions were assigned or taken away (one step of a rebalance)."""
        self._rebalances += 1
        self._last_rebalance = time.monotonic()

    def rewrite(self, stats: dict[str, Any]) -> str:
        """The parsed statistics `stats` (changed in place) with the group's fields filled in,
        as JSON."""
        member = self.member
        if member is None:
            return json.dumps(stats)
        now = time.monotonic()
        owned = member.owned_keys()
        stats["cgrp"] = {
            **stats.get("cgrp", {}),
            "state": "up",
            "stateage": int((now - self._started) * 1000),
            "join_state": JOIN_STATES[member.member_state()],
            "rebalance_age": int((now - self._last_rebalance) * 1000),
            "rebalance_cnt": self._rebalances,
            "assignment_size": len(owned),
        }
        for topic, topic_stats in stats.get("topics", {}).items():
            for partition_id, partition in topic_stats.get("partitions", {}).items():
                key = (topic, int(partition_id))
                if key in owned:
                    self._rewrite_partition(member, key, partition)
        return json.dumps(stats)

    def _rewrite_partition(self, member: MemberView, key: Key, partition: dict[str, Any]) -> None:
        committed = member.committed_offset(key)
        stored = member.stored_offset(key)
        end = partition.get("ls_offset" if self._read_committed else "hi_offset", -1)
        partition["committed_offset"] = -1001 if committed is None else committed
        partition["stored_offset"] = -1001 if stored is None else stored
        partition["consumer_lag"] = _lag(end, committed)
        partition["consumer_lag_stored"] = _lag(end, stored)


def _lag(end: int, offset: int | None) -> int:
    if offset is None or offset < 0 or end < 0:
        return -1
    return max(0, end - offset)


#: How often the fetch handle reports statistics for `Consumer.metrics()` when the application
#: sets no ``statistics.interval.ms`` (librdkafka's default is 0: never).
METRICS_STATISTICS_INTERVAL_MS = 5000


def route_statistics(
    rd_config: dict[str, Any],
    metrics: ConsumerMetrics,
    group: GroupStatistics | None,
    read_committed: bool,
) -> None:
    """Install the fetch handle's stats_cb: each report feeds the fetch metrics and, when the
    application has a ``stats_cb``, goes to it (with the group's fields when `group` is given).

    The handle reports every ``statistics.interval.ms`` (`METRICS_STATISTICS_INTERVAL_MS` when
    the application did not set it, so the fetch metrics work by default; ``0`` turns them off).
    An application ``stats_cb`` is called only when the application set an interval, as
    confluent-kafka calls it only then."""
    user_callback = rd_config.get("stats_cb") if callable(rd_config.get("stats_cb")) else None
    interval = rd_config.get("statistics.interval.ms")
    forward = user_callback is not None and interval is not None and _positive(interval)
    if interval is None:
        rd_config["statistics.interval.ms"] = METRICS_STATISTICS_INTERVAL_MS

    def stats_cb(text: str) -> Any:
        try:
            stats = json.loads(text)
        except ValueError:
            return user_callback(text) if forward and user_callback is not None else None
        metrics.fetch_statistics(stats, read_committed)
        if not forward or user_callback is None:
            return None
        return user_callback(group.rewrite(stats) if group is not None else text)

    rd_config["stats_cb"] = stats_cb


def consumer_statistics(
    rd_config: dict[str, Any],
    isolation_level: Any,
    group: bool,
    metrics: ConsumerMetrics,
) -> GroupStatistics | None:
    """Route a fetching consumer's statistics (`route_statistics`); the `GroupStatistics` that
    rewrites them for the application's ``stats_cb`` when it has one and a group (else None)."""
    read_committed = isolation_level in (None, "read_committed")  # librdkafka's default
    statistics = GroupStatistics(read_committed) if group and callable(rd_config.get("stats_cb")) else None
    route_statistics(rd_config, metrics, statistics, read_committed)
    return statistics


def _positive(value: Any) -> bool:
    """Whether a ``statistics.interval.ms`` value is a positive number (an invalid one is
    left to librdkafka, which refuses it naming the key)."""
    try:
        return int(value) > 0
    except (TypeError, ValueError):
        return True
