"""Consumer.metrics(): the values say what happened (rebalances, callbacks, commits, heartbeats,
partitions, records and lag), in integration runs on the reference cluster; the windowed
statistics and the rebalance rules (Kafka's new consumer) with a fake clock."""

from __future__ import annotations

import math
import time
from typing import Any

from backends import open_cluster
from confluent_kafka import Message, TopicPartition
from consumer_harness import config, poll_until, read, wait_until

from kconsumer import Consumer
from kconsumer.client.member.state import MemberState
from kconsumer.client.metrics import WINDOW_S, ConsumerMetrics

S = MemberState


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_rebalance_starts_in_reconciling_and_ends_when_the_member_is_stable_again() -> None:
    """One reconciliation is one rebalance, however many steps it acknowledges on the way (a
    revocation is acknowledged before the assignment that follows it)."""
    clock = Clock()
    metrics = ConsumerMetrics(clock=clock)
    assert math.isnan(metrics.snapshot()["rebalance-latency-avg"])
    assert metrics.snapshot()["last-rebalance-seconds-ago"] == -1
    for before, after, advance in [
        (S.UNSUBSCRIBED, S.JOINING, 0.0),
        (S.JOINING, S.RECONCILING, 0.5),
        (S.RECONCILING, S.ACKNOWLEDGING, 0.2),  # the revocation acknowledged: still going
        (S.ACKNOWLEDGING, S.RECONCILING, 0.1),  # the assignment that follows it
        (S.RECONCILING, S.ACKNOWLEDGING, 0.1),
        (S.ACKNOWLEDGING, S.STABLE, 0.1),  # 500 ms
        (S.STABLE, S.RECONCILING, 5.0),
        (S.RECONCILING, S.STABLE, 0.6),  # 600 ms
        (S.STABLE, S.RECONCILING, 1.0),
        (S.RECONCILING, S.FENCED, 0.3),  # failed
        (S.FENCED, S.JOINING, 0.1),  # no rebalance in progress: nothing more fails
        (S.JOINING, S.FATAL, 0.1),
    ]:
        clock.now += advance
        metrics.member_state_changed(before, after)
    clock.now += 2.5
    values = metrics.snapshot()
    assert values["rebalance-total"] == 2
    assert math.isclose(values["rebalance-latency-avg"], 550.0) and math.isclose(
        values["rebalance-latency-max"], 600.0
    )
    assert math.isclose(values["rebalance-latency-total"], 1100.0)
    assert values["failed-rebalance-total"] == 1
    assert values["last-rebalance-seconds-ago"] == 4  # whole seconds since the second one ended
    clock.now += WINDOW_S + 1
    later = metrics.snapshot()
    assert math.isnan(later["rebalance-latency-avg"]) and later["rebalance-total"] == 2
    assert later["rebalance-rate-per-hour"] == 0


def test_a_rebalance_acknowledged_before_the_member_leaves_is_complete_not_failed() -> None:
    clock = Clock()
    metrics = ConsumerMetrics(clock=clock)
    for before, after in [
        (S.JOINING, S.RECONCILING),
        (S.RECONCILING, S.ACKNOWLEDGING),
        (S.ACKNOWLEDGING, S.PREPARE_LEAVING),
        (S.PREPARE_LEAVING, S.FENCED),
    ]:
        clock.now += 0.1
        metrics.member_state_changed(before, after)
    values = metrics.snapshot()
    assert values["rebalance-total"] == 1 and values["failed-rebalance-total"] == 0


def test_fetch_metrics_come_from_librdkafkas_statistics() -> None:
    clock = Clock()
    owned = {("orders", 0), ("orders", 1)}
    positions = {("orders", 0): 40}  # partition 1: nothing consumed yet, no position
    metrics = ConsumerMetrics(owned=lambda: owned, positions=lambda keys: positions, clock=clock)

    def report(records: int, size: int) -> dict[str, Any]:
        return {
            "rxmsgs": records,
            "rxmsg_bytes": size,
            "brokers": {
                "b1": {"nodeid": 1, "rtt": {"cnt": 3, "avg": 2000, "max": 9000}},
                "b2": {"nodeid": 2, "rtt": {"cnt": 1, "avg": 6000, "max": 6000}},
                "bootstrap": {"nodeid": -1, "rtt": {"cnt": 5, "avg": 99000, "max": 99000}},
            },
            "topics": {
                "orders": {
                    "partitions": {
                        "0": {"hi_offset": 100, "ls_offset": 90, "app_offset": 40},
                        "1": {"hi_offset": 50, "ls_offset": 50, "app_offset": -1001},
                        "2": {"hi_offset": 500, "ls_offset": 500, "app_offset": 0},  # not owned
                        "-1": {"hi_offset": -1, "app_offset": -1},
                    }
                }
            },
        }

    metrics.fetch_statistics(report(100, 10_000), read_committed=False)
    clock.now += 2
    metrics.fetch_statistics(report(300, 30_000), read_committed=False)
    values = metrics.snapshot()
    assert values["records-consumed-total"] == 300 and values["bytes-consumed-total"] == 30_000
    assert values["records-consumed-rate"] == 100 and values["bytes-consumed-rate"] == 10_000
    assert values["fetch-latency-avg"] == 3.0 and values["fetch-latency-max"] == 9.0  # ms, brokers only
    assert values["records-lag-max"] == 60
    assert values["assigned-partitions"] == 2
    metrics.fetch_statistics(report(300, 30_000), read_committed=True)
    assert metrics.snapshot()["records-lag-max"] == 50


def test_metrics_follow_a_group_that_rebalances(backend: str) -> None:
    callbacks: dict[str, int] = {"assign": 0, "revoke": 0}

    def on_assign(_consumer: Any, _partitions: list[TopicPartition]) -> None:
        callbacks["assign"] += 1
        time.sleep(0.05)

    def on_revoke(_consumer: Any, _partitions: list[TopicPartition]) -> None:
        callbacks["revoke"] += 1

    with open_cluster(backend) as cluster:
        cluster.create_topic("orders", 4)
        cluster.produce("orders", [f"v{i}" for i in range(40)])
        settings = config(
            cluster.bootstrap_servers, "metered", statistics_interval_ms=100, client_id="first-app"
        )
        first = Consumer(settings)
        first.subscribe(["orders"], on_assign=on_assign, on_revoke=on_revoke)
        received: list[Message] = []
        committed: list[Message] = []

        def take(message: Message) -> None:
            received.append(message)
            if len(received) % 10 == 0:
                first.commit(message=message, asynchronous=False)
                committed.append(message)

        poll_until(first, lambda: len(received) >= 40, timeout=20, on_record=take)
        assert len(received) == 40

        second = Consumer(config(cluster.bootstrap_servers, "metered"))
        second.subscribe(["orders"])

        def rebalanced() -> bool:
            first.poll(0.05)
            second.poll(0.05)
            described = cluster.describe_group("metered")
            return (
                described is not None
                and described.state == "Stable"
                and len(described.members) == 2
                and all(m.assignment for m in described.members.values())
                and len(first.assignment()) == 2
            )

        wait_until(rebalanced, what="the second member taking half of the partitions")

        # fetch-latency-avg is the last statistics window's average (NaN when that window saw no
        # fetch answered: with 100 ms windows and 500 ms long polls, an idle consumer has many), so
        # the values checked are those of a reading that has one.
        def settled() -> dict[str, float] | None:
            if first.poll(0.05) is not None or callbacks["assign"] < 2 or len(first.assignment()) != 2:
                return None
            reading = first.metrics()
            done = reading["records-consumed-total"] >= 40 and not math.isnan(reading["fetch-latency-avg"])
            return reading if done else None

        values = wait_until(settled)
        described = cluster.describe_group("metered")
        assert described is not None
        try:
            # At least two reconciliations: joining (assigned), giving two away (revoked, then
            # assigned with nothing new, as Kafka's consumers call it after every
            # reconciliation). A coordinator loading or a retried heartbeat may add one that
            # changes nothing (on_assign([]) again): the metric counts what the callbacks saw.
            assert values["rebalance-total"] == callbacks["assign"] >= 2
            assert callbacks["revoke"] >= 1
            assert values["failed-rebalance-total"] == 0
            assert values["rebalance-latency-max"] >= 50  # the slow on_assign is part of it
            assert values["partition-assigned-latency-max"] >= 50
            assert callbacks["revoke"] >= 1 and not math.isnan(values["partition-revoked-latency-avg"])
            assert values["commit-total"] == len(committed) == 4
            assert values["commit-latency-max"] > 0
            assert values["heartbeat-total"] > 0 and 0 < values["heartbeat-response-time-max"] < 1000
            assert values["last-heartbeat-seconds-ago"] in (0, 1)
            assert values["assigned-partitions"] == len(first.assignment()) == 2
            own = next(m for m in described.members.values() if m.client_id == "first-app")
            assert values["member-epoch"] == own.member_epoch
            assert values["records-consumed-total"] >= 40 and values["bytes-consumed-total"] > 0
            assert 0 < values["fetch-latency-avg"] < 1000
        finally:
            second.close()
            first.close()


def test_lag_is_the_high_watermark_minus_the_application_position(backend: str) -> None:
    with open_cluster(backend) as cluster:
        cluster.create_topic("backlog", 1)
        cluster.produce("backlog", [f"v{i}" for i in range(50)])
        consumer = Consumer(config(cluster.bootstrap_servers, "lagging", statistics_interval_ms=100))
        consumer.subscribe(["backlog"])
        try:
            read(consumer, 10)
            consumer.pause([TopicPartition("backlog", 0)])
            wait_until(lambda: consumer.poll(0.05) is None and consumer.metrics()["records-lag-max"] == 40)
            assert consumer.metrics()["assigned-partitions"] == 1
        finally:
            consumer.close()


def test_an_application_stats_cb_is_called_only_with_an_interval_as_in_confluent_kafka(backend: str) -> None:
    reports: list[str] = []
    with open_cluster(backend) as cluster:
        cluster.create_topic("quiet", 1)
        cluster.produce("quiet", ["x"])
        consumer = Consumer({**config(cluster.bootstrap_servers, "quiet"), "stats_cb": reports.append})
        consumer.subscribe(["quiet"])
        try:
            wait_until(lambda: consumer.poll(0.1) is not None)
            deadline = time.monotonic() + 6  # past kconsumer's own 5 s statistics interval
            poll_until(consumer, lambda: time.monotonic() > deadline)
            assert reports == []
            assert consumer.metrics()["records-consumed-total"] == 1  # the metrics still got them
        finally:
            consumer.close()


def test_every_reported_metric_is_described() -> None:
    from kconsumer.client.metrics import METRICS

    metrics = ConsumerMetrics()
    metrics.fetch_statistics({"rxmsgs": 1, "rxmsg_bytes": 1}, read_committed=False)
    assert set(metrics.snapshot()) == set(METRICS)


def test_membership_changes_log_one_structured_info_line_and_partitions_at_debug(
    caplog: Any, backend: str
) -> None:
    import logging

    with open_cluster(backend) as cluster:
        cluster.create_topic("logged", 2)
        consumer = Consumer(config(cluster.bootstrap_servers, "logged-group"))
        with caplog.at_level(logging.DEBUG, logger="kconsumer"):
            consumer.subscribe(["logged"])
            wait_until(lambda: consumer.poll(0.05) is None and len(consumer.assignment()) == 2)
            consumer.close()
    client = [r for r in caplog.records if not r.name.startswith("kconsumer.broker")]  # not the cluster's
    changes = [r for r in client if r.levelno == logging.INFO and hasattr(r, "member_state")]
    states = [r.member_state for r in changes]
    # Apache Kafka may answer the join before its (background) assignment: STABLE with nothing first.
    assert states[0] == "JOINING" and "RECONCILING" in states, states
    assert all(r.group_id == "logged-group" and r.member_id for r in changes)
    assert any(r.member_state == "STABLE" and r.member_epoch > 0 for r in changes)
    infos = [r.getMessage() for r in client if r.levelno >= logging.INFO]
    assert not any("logged', 0" in text for text in infos)  # no partition list above DEBUG
    debug = [r.getMessage() for r in client if r.levelno == logging.DEBUG]
    assert any("start fetching [('logged', 0), ('logged', 1)]" in text for text in debug)


def test_every_fetch_metric_is_there_before_the_first_statistics_report() -> None:
    values = ConsumerMetrics(clock=Clock()).snapshot()
    for name in ("records-consumed-total", "records-consumed-rate", "fetch-latency-avg", "records-lag-max"):
        assert math.isnan(values[name]), name
