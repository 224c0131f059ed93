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
from collections.abc import Callable
from typing import Any, Protocol

from .member.state import MemberState

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

    def wrap(self, user_callback: Callable[[str], Any]) -> Callable[[str], Any]:
        """The stats_cb to give librdkafka: it calls `user_callback` with the rewritten JSON."""

        def stats_cb(text: str) -> Any:
            return user_callback(self.rewrite(text))

        return stats_cb

    def rewrite(self, text: str) -> str:
        """The statistics JSON `text` with the group's fields filled in."""
        member = self.member
        try:
            stats = json.loads(text)
        except ValueError:
            return text
        if member is None:
            return text
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
