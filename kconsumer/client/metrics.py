"""`Consumer.metrics()`: what kconsumer does itself, under the names and meanings of Kafka's Java
consumer (its ``consumer-coordinator-metrics`` and ``consumer-fetch-manager-metrics`` groups).

Recorded where each thing happens, from three threads (hence the lock):

- the member session reports each state change (`member_state_changed`): a rebalance starts when
  the member enters RECONCILING and ends when the member is STABLE again (or leaves
  ACKNOWLEDGING for anything but RECONCILING); one in progress when the member is fenced, goes
  stale or fails fatally counts as failed. Kafka's new consumer (AbstractMembershipManager)
  ends one at each RECONCILING -> ACKNOWLEDGING; it revokes and assigns in one step, while
  kconsumer acknowledges a revocation before it assigns (the partitions move sooner), so that
  rule would count one reconciliation once or twice depending on timing. Counting to STABLE
  gives one per reconciliation, as Kafka's count;
- the runtime times each ConsumerGroupHeartbeat / Heartbeat and OffsetCommit round trip;
- the application thread times the rebalance callbacks (only when the application has one, as
  Kafka's listener invoker) and hands over librdkafka's statistics of the fetch handle (the fetch
  metrics: records and bytes received, the brokers' round-trip time, and the lag: the high
  watermark, or the last stable offset under read_committed, minus the application's position,
  which kconsumer knows better than librdkafka: records it holds for the application count as
  not consumed).

Windowed values (``-avg``, ``-max``, ``-rate``) cover the last `WINDOW_S` seconds, as Kafka's
default two 30 s samples; ``-avg`` and ``-max`` are NaN when the window holds no sample (Kafka
does the same); ``-total`` values are cumulative.
"""

from __future__ import annotations

import collections
import math
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from .member.state import MemberState

Key = tuple[str, int]

#: The window of the windowed metrics (Kafka: metrics.num.samples=2 x metrics.sample.window.ms=30000).
WINDOW_S = 60.0
NAN = math.nan

#: Every metric: (unit, meaning). Names ending in ``-total`` are cumulative counts or sums.
METRICS: dict[str, tuple[str, str]] = {
    "rebalance-latency-avg": ("ms", "average time a rebalance took (RECONCILING to reconciled)"),
    "rebalance-latency-max": ("ms", "longest rebalance in the window"),
    "rebalance-latency-total": ("ms", "time spent in rebalances"),
    "rebalance-total": ("1", "rebalances completed"),
    "rebalance-rate-per-hour": ("1/h", "rebalances per hour over the window"),
    "failed-rebalance-total": ("1", "rebalances cut short by fencing, a poll timeout or a fatal error"),
    "failed-rebalance-rate-per-hour": ("1/h", "failed rebalances per hour over the window"),
    "last-rebalance-seconds-ago": ("s", "seconds since the last rebalance completed (-1: never)"),
    "heartbeat-response-time-max": ("ms", "slowest heartbeat round trip in the window"),
    "heartbeat-rate": ("1/s", "heartbeats sent per second"),
    "heartbeat-total": ("1", "heartbeats sent"),
    "last-heartbeat-seconds-ago": ("s", "seconds since the last heartbeat was sent (-1: never)"),
    "commit-latency-avg": ("ms", "average OffsetCommit round trip"),
    "commit-latency-max": ("ms", "slowest OffsetCommit round trip in the window"),
    "commit-rate": ("1/s", "offset commits per second"),
    "commit-total": ("1", "offset commits answered"),
    "partition-assigned-latency-avg": ("ms", "average time on_partitions_assigned took"),
    "partition-assigned-latency-max": ("ms", "longest on_partitions_assigned in the window"),
    "partition-revoked-latency-avg": ("ms", "average time on_partitions_revoked took"),
    "partition-revoked-latency-max": ("ms", "longest on_partitions_revoked in the window"),
    "partition-lost-latency-avg": ("ms", "average time on_partitions_lost took"),
    "partition-lost-latency-max": ("ms", "longest on_partitions_lost in the window"),
    "assigned-partitions": ("1", "partitions the member owns"),
    "member-epoch": ("1", "the member's epoch in its group (0 outside it)"),
    "records-consumed-total": ("1", "records fetched from the brokers"),
    "bytes-consumed-total": ("By", "record bytes fetched from the brokers"),
    "records-consumed-rate": ("1/s", "records fetched per second between the last two reports"),
    "bytes-consumed-rate": ("By/s", "bytes fetched per second between the last two reports"),
    "fetch-latency-avg": ("ms", "average broker round trip of the fetch handle's requests"),
    "fetch-latency-max": ("ms", "slowest broker round trip of the fetch handle's requests"),
    "records-lag-max": ("1", "largest lag (end of log minus position) of an owned partition"),
}

#: The metrics that come from librdkafka's statistics of the fetch handle.
_FETCH_NAMES = (
    "records-consumed-total",
    "bytes-consumed-total",
    "records-consumed-rate",
    "bytes-consumed-rate",
    "fetch-latency-avg",
    "fetch-latency-max",
    "records-lag-max",
)

#: States in which a rebalance in progress has failed (Kafka: transitionToFenced / ToFatal).
_FAILING_STATES = frozenset({MemberState.FENCED, MemberState.FATAL, MemberState.STALE})


class WindowedStat:
    """Samples of the last `window_s` seconds, and how many there ever were."""

    def __init__(self, window_s: float = WINDOW_S) -> None:
        self.window_s = window_s
        self._samples: collections.deque[tuple[float, float]] = collections.deque()
        self.count = 0
        self.sum = 0.0
        self._started = time.monotonic()

    def record(self, value: float, now: float) -> None:
        """Add a sample of `value` at `now`."""
        self._samples.append((now, value))
        self.count += 1
        self.sum += value
        self._expire(now)

    def _expire(self, now: float) -> None:
        samples = self._samples
        while samples and samples[0][0] < now - self.window_s:
            samples.popleft()

    def avg(self, now: float) -> float:
        """The average of the window's samples (NaN: none)."""
        self._expire(now)
        return sum(v for _, v in self._samples) / len(self._samples) if self._samples else NAN

    def max(self, now: float) -> float:
        """The largest of the window's samples (NaN: none)."""
        self._expire(now)
        return max(v for _, v in self._samples) if self._samples else NAN

    def rate(self, now: float, per_s: float = 1.0) -> float:
        """Samples per `per_s` seconds over the window (or the time since creation, if shorter)."""
        self._expire(now)
        elapsed = max(min(self.window_s, now - self._started), 1.0)
        return len(self._samples) / elapsed * per_s


class ConsumerMetrics:
    """The metrics of one consumer (see the module docstring)."""

    def __init__(
        self,
        owned: Callable[[], set[Key]] = set,
        positions: Callable[[set[Key]], Mapping[Key, int]] = lambda keys: {},
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        #: The partitions the consumer owns.
        self.owned = owned
        #: The application's position (next offset it will see) in each of the given partitions.
        self.positions = positions
        self._clock = clock
        self._lock = threading.Lock()
        self._rebalance = WindowedStat()
        self._failed_rebalance = WindowedStat()
        self._rebalance_started: float | None = None
        self._rebalance_ended: float | None = None
        self._heartbeats_sent = WindowedStat()
        self._heartbeat_response = WindowedStat()
        self._last_heartbeat_sent: float | None = None
        self._commit = WindowedStat()
        self._callbacks = {kind: WindowedStat() for kind in ("assigned", "revoked", "lost")}
        #: The fetch metrics of librdkafka's last statistics report: NaN until the first one (and
        #: always with statistics.interval.ms=0), so every name is there from the start.
        self._fetch: dict[str, float] = dict.fromkeys(_FETCH_NAMES, NAN)
        self._received: tuple[float, int, int] | None = None  # (time, records, bytes) of the last report
        #: The member's epoch (set by the member's runtime).
        self.member_epoch: Callable[[], int] = lambda: 0

    # -- recording -------------------------------------------------------------------------------

    def member_state_changed(self, before: MemberState, after: MemberState) -> None:
        """A member state transition (rebalance start, end or failure)."""
        now = self._clock()
        with self._lock:
            started = self._rebalance_started
            if started is None:
                if after is MemberState.RECONCILING:
                    self._rebalance_started = now
                return
            if after is MemberState.STABLE or (
                before is MemberState.ACKNOWLEDGING and after is not MemberState.RECONCILING
            ):
                self._rebalance.record((now - started) * 1000, now)
                self._rebalance_ended = now
                self._rebalance_started = None
            elif after in _FAILING_STATES:
                self._failed_rebalance.record(1, now)
                self._rebalance_started = None

    def heartbeat_sent(self) -> None:
        """A heartbeat went out."""
        now = self._clock()
        with self._lock:
            self._heartbeats_sent.record(1, now)
            self._last_heartbeat_sent = now

    def heartbeat_answered(self, seconds: float) -> None:
        """A heartbeat's answer came `seconds` after it went out."""
        with self._lock:
            self._heartbeat_response.record(seconds * 1000, self._clock())

    def commit_answered(self, seconds: float) -> None:
        """An OffsetCommit's answer came `seconds` after it went out."""
        with self._lock:
            self._commit.record(seconds * 1000, self._clock())

    def callback_finished(self, kind: str, seconds: float) -> None:
        """A rebalance callback (`kind`: assigned, revoked or lost) took `seconds`."""
        with self._lock:
            self._callbacks[kind].record(seconds * 1000, self._clock())

    def fetch_statistics(self, stats: Mapping[str, Any], read_committed: bool) -> None:
        """librdkafka's statistics of the fetch handle (already parsed)."""
        now = self._clock()
        owned = self.owned()
        records, size = int(stats.get("rxmsgs", 0)), int(stats.get("rxmsg_bytes", 0))
        rtt_count, rtt_sum, rtt_max = 0, 0.0, NAN
        for broker in stats.get("brokers", {}).values():
            rtt = broker.get("rtt") or {}
            if broker.get("nodeid", -1) < 0 or not rtt.get("cnt"):
                continue
            rtt_count += rtt["cnt"]
            rtt_sum += rtt["avg"] * rtt["cnt"]
            rtt_max = rtt["max"] if math.isnan(rtt_max) else max(rtt_max, rtt["max"])
        lag_max = NAN
        end_field = "ls_offset" if read_committed else "hi_offset"
        positions = self.positions(owned)
        for topic, topic_stats in stats.get("topics", {}).items():
            for partition_id, partition in topic_stats.get("partitions", {}).items():
                position = positions.get((topic, int(partition_id)))
                end = partition.get(end_field, -1)
                if position is not None and end >= 0:
                    lag = float(max(0, end - position))
                    lag_max = lag if math.isnan(lag_max) else max(lag_max, lag)
        with self._lock:
            fetch = {
                "records-consumed-total": float(records),
                "bytes-consumed-total": float(size),
                "fetch-latency-avg": rtt_sum / rtt_count / 1000 if rtt_count else NAN,
                "fetch-latency-max": rtt_max / 1000,
                "records-lag-max": lag_max,
            }
            previous = self._received
            if previous is not None and now > previous[0]:
                elapsed = now - previous[0]
                fetch["records-consumed-rate"] = max(0, records - previous[1]) / elapsed
                fetch["bytes-consumed-rate"] = max(0, size - previous[2]) / elapsed
            else:
                fetch["records-consumed-rate"] = fetch["bytes-consumed-rate"] = NAN
            self._received = (now, records, size)
            self._fetch = fetch

    # -- reading ---------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, float]:
        """Every metric's current value, by Kafka's name."""
        now = self._clock()
        with self._lock:
            rebalance, failed = self._rebalance, self._failed_rebalance
            values = {
                "rebalance-latency-avg": rebalance.avg(now),
                "rebalance-latency-max": rebalance.max(now),
                "rebalance-latency-total": rebalance.sum,
                "rebalance-total": float(rebalance.count),
                "rebalance-rate-per-hour": rebalance.rate(now, 3600.0),
                "failed-rebalance-total": float(failed.count),
                "failed-rebalance-rate-per-hour": failed.rate(now, 3600.0),
                "last-rebalance-seconds-ago": _seconds_since(self._rebalance_ended, now),
                "heartbeat-response-time-max": self._heartbeat_response.max(now),
                "heartbeat-rate": self._heartbeats_sent.rate(now),
                "heartbeat-total": float(self._heartbeats_sent.count),
                "last-heartbeat-seconds-ago": _seconds_since(self._last_heartbeat_sent, now),
                "commit-latency-avg": self._commit.avg(now),
                "commit-latency-max": self._commit.max(now),
                "commit-rate": self._commit.rate(now),
                "commit-total": float(self._commit.count),
            }
            for kind, stat in self._callbacks.items():
                values[f"partition-{kind}-latency-avg"] = stat.avg(now)
                values[f"partition-{kind}-latency-max"] = stat.max(now)
            values.update(self._fetch)
        values["assigned-partitions"] = float(len(self.owned()))
        values["member-epoch"] = float(self.member_epoch())
        return values


def _seconds_since(moment: float | None, now: float) -> float:
    """Whole seconds since `moment` (-1 when it never happened), as Kafka reports them."""
    return -1.0 if moment is None else float(int(now - moment))
