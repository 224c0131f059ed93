"""Focused regression tests for bugs the consumer integration tests found (each also covered end to
end by the integration test named in its docstring)."""

from __future__ import annotations

import time

import pytest

from kconsumer.broker.server.error_responses import error_response
from kconsumer.broker.server.fetch import read_fetch
from kconsumer.broker.server.log import Topics
from kconsumer.client.member.backoff import ExponentialBackoff
from kconsumer.client.member.commits import CommitManager, Membership
from kconsumer.client.member.effects import CommitFinished, CommitOffsets
from kconsumer.client.member.events import CommitResult
from kconsumer.client.member.model import CommitReason, Ids, MemberConfig, PartitionOffset, TopicIdPartition
from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from kconsumer.protocol.uuid import Uuid

PARTITION = TopicIdPartition(Uuid(b"\x01" * 16), "gone", 0)


@pytest.mark.parametrize("code", [ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION])
@pytest.mark.parametrize("reason", [CommitReason.REVOCATION, CommitReason.CLOSE, CommitReason.USER_SYNC])
def test_a_commit_to_a_deleted_topic_fails_at_once(code: ErrorCode, reason: CommitReason) -> None:
    """Before: retried with backoff until its deadline (max.poll.interval.ms for a revocation), so a
    deleted topic held the member's rebalance up for 5 minutes by default
    (test_consumer_topics.py::test_deleted_and_recreated_topic_starts_per_auto_offset_reset)."""
    config = MemberConfig(group_id="g", auto_commit=False)
    manager = CommitManager(config, ExponentialBackoff(100, 1000), Ids(), 0)
    member = Membership("m", 3, frozenset({PARTITION}))
    started = manager.commit(reason, 0, member, offsets=[PartitionOffset(PARTITION, 7)])
    (sent,) = [e for e in started.effects if isinstance(e, CommitOffsets)]
    answered = manager.on_commit_result(CommitResult(sent.request_id, code), 10, member)
    assert answered.finished == [started.started]
    (result,) = [e for e in answered.effects if isinstance(e, CommitFinished)]
    assert result.error is not None and code.name in str(result.error)
    assert manager.next_deadline(member, True) is None, "nothing left to retry"


def _fetch_request() -> FetchRequest:
    return FetchRequest(
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        topics=[
            FetchTopic(
                topic="gone",
                topic_id=Uuid(b"\x02" * 16),
                partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1000)],
            )
        ],
    )


@pytest.mark.parametrize("version", [12, 16])
def test_unknown_topic_fetch_answers_empty_records(version: int) -> None:
    """Before: null records, which librdkafka cannot parse ("invalid MessageSetSize -1"): it drops
    the whole Fetch response, so a consumer whose topic was deleted and recreated never fetched
    again (test_consumer_topics.py::test_deleted_and_recreated_topic_starts_per_auto_offset_reset).
    Kafka answers an empty record set (MemoryRecords.EMPTY)."""
    response, _size, failed = read_fetch(Topics(lambda: Uuid(b"\x03" * 16)), _fetch_request(), version)
    (partition,) = response.responses[0].partitions
    assert failed and partition.error_code in (
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    )
    assert partition.records is not None and len(partition.records) == 0


def test_injected_fetch_errors_answer_empty_records() -> None:
    response = error_response(_fetch_request(), 12, ErrorCode.NOT_LEADER_OR_FOLLOWER, None)
    (partition,) = response.responses[0].partitions  # type: ignore[attr-defined]
    assert partition.records is not None and len(partition.records) == 0


def test_close_gives_up_quietly_when_the_coordinator_is_gone() -> None:
    """Kafka's close() does not fail when the group cannot be left: the member is removed by
    its session timeout. Ours logs a warning and releases everything."""
    import time as _time

    from kconsumer import Consumer
    from kconsumer.testing import ReferenceCluster

    with ReferenceCluster(heartbeat_interval_ms=100, session_timeout_ms=2000) as cluster:
        cluster.create_topic("gone", 1)
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "gone-group"})
        consumer.subscribe(["gone"])
        deadline = _time.monotonic() + 10
        while not consumer.assignment() and _time.monotonic() < deadline:
            consumer.poll(0.1)
        assert consumer.assignment()
    # The cluster is stopped: the leave cannot complete.
    started = _time.monotonic()
    consumer.close(timeout=1)
    assert _time.monotonic() - started < 5
    consumer.close()  # idempotent


def test_reset_positions_reach_librdkafka_as_explicit_offsets() -> None:
    """librdkafka 2.16 resolves a logical offset (BEGINNING/END) with a query whose timer survives
    an unassign and, firing after a new assignment at a committed offset, moves the partition back
    to BEGINNING (a member re-read a partition from offset 0 in the failover test). So the
    application thread resolves resets with ListOffsets and assigns explicit offsets only; when
    the lookup fails, the logical offset still goes to librdkafka."""
    from typing import Any as _Any

    from confluent_kafka import OFFSET_BEGINNING

    from kconsumer.client.application.core import ApplicationCore
    from kconsumer.client.application.ports import ApplicationSettings
    from kconsumer.client.member.effects import StartFetching
    from kconsumer.client.member.model import FetchPosition, OffsetReset, TopicIdPartition
    from kconsumer.client.runtime.inbox import Inbox
    from kconsumer.protocol.uuid import Uuid

    class FakeFetcher:
        buffer: list[object] = []

        def __init__(self) -> None:
            self.assigned: list[tuple[str, int, int]] = []

        def start(self, starts: _Any) -> None:
            self.assigned += [(s.partition.topic, s.partition.partition, s.offset) for s in starts]

    class FakeRuntime:
        """Answers the application thread's ListOffsets lookup as the member runtime would."""

        group_id = "g"

        def __init__(self, answer: dict[tuple[str, int], int] | None) -> None:
            self.answer = answer
            self.asked: list[dict[tuple[str, int], int]] = []

        def lookup_offsets(self, wanted: _Any, isolation: int, timeout_s: float) -> _Any:
            assert isolation == 1  # read_committed by default
            self.asked.append(dict(wanted))
            if self.answer is None:
                raise TimeoutError("broker unreachable")
            return self.answer

    topic = Uuid.from_int(5)
    work = StartFetching(
        (
            FetchPosition(TopicIdPartition(topic, "t", 0), OffsetReset.EARLIEST),
            FetchPosition(TopicIdPartition(topic, "t", 1), OffsetReset.LATEST),
            FetchPosition(TopicIdPartition(topic, "t", 2), 42),
        )
    )
    runtime = FakeRuntime({("t", 0): 7, ("t", 1): 99})
    fetcher = FakeFetcher()
    app = ApplicationCore(fetcher, runtime, Inbox(), ApplicationSettings(), clock=time.monotonic)  # type: ignore[arg-type]
    app._execute(work)
    assert runtime.asked == [{("t", 0): -2, ("t", 1): -1}]
    assert fetcher.assigned == [("t", 0, 7), ("t", 1, 99), ("t", 2, 42)]

    failing = FakeRuntime(None)
    fetcher = FakeFetcher()
    ApplicationCore(fetcher, failing, Inbox(), ApplicationSettings(), clock=time.monotonic)._execute(work)  # type: ignore[arg-type]
    assert fetcher.assigned[0] == ("t", 0, OFFSET_BEGINNING)
