"""Against a broker without kconsumer's extension APIs (librdkafka's mock cluster, which no one
here wrote): local assignors are a clear, fatal error at the first poll, never a silent fallback
to server-side assignment (docs/assignor-protocol.md §6, rule 2)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import confluent_kafka as ck
import pytest
from assignor_harness import Scripted
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from kconsumer import Consumer


@pytest.fixture(scope="module")
def mock_bootstrap() -> Iterator[str]:
    """librdkafka's mock cluster (it lives as long as this handle), with topic ``existing``
    (created by producing to it: 4 partitions)."""
    handle = ck.Producer({"test.mock.num.brokers": 1, "log_level": 3})
    brokers = handle.list_topics(timeout=5).brokers
    handle.produce("existing", b"x")
    handle.flush(5)
    yield ",".join(f"{b.host}:{b.port}" for b in brokers.values())


def test_local_assignors_fail_at_the_first_poll_with_advice(mock_bootstrap: str) -> None:
    assignor = Scripted()
    consumer = Consumer(
        {
            "bootstrap.servers": mock_bootstrap,
            "group.id": "mock-group",
            "group.local.assignors": [assignor],
            "log_level": 3,
        }
    )
    try:
        consumer.subscribe(["existing"])
        started = time.monotonic()
        event = consumer.poll(10)  # one _FATAL error event, as confluent-kafka delivers it
        assert time.monotonic() - started < 10  # returned by this poll, not after its timeout
        assert event is not None and event.error() is not None
        error = event.error()
        assert error.code() == KafkaError._FATAL
        text = error.str()
        for words in ("client-side assignors", "reference coordinator", "group.remote.assignor", "scripted"):
            assert words in text, (words, text)
        assert consumer.poll(0.1) is None  # reported once; the member stays out of the group
        with pytest.raises(KafkaException) as raised:  # and group operations fail with it
            consumer.commit(offsets=[TopicPartition("existing", 0, 1)], asynchronous=False)
        assert raised.value.args[0].fatal()
        assert consumer.assignment() == [] and assignor.calls == []
    finally:
        consumer.close(timeout=5)


def test_a_server_side_assignor_works_there(mock_bootstrap: str) -> None:
    """The advice works: the same consumer with group.remote.assignor joins the mock's group."""
    consumer = Consumer(
        {
            "bootstrap.servers": mock_bootstrap,
            "group.id": "mock-group-remote",
            "group.remote.assignor": "uniform",
            "log_level": 3,
        }
    )
    try:
        consumer.subscribe(["existing"])
        deadline = time.monotonic() + 15
        while not consumer.assignment():
            assert time.monotonic() < deadline, "no assignment from the mock cluster"
            consumer.poll(0.1)
    finally:
        consumer.close(timeout=5)
