"""The fetch handle learns a topic's metadata before it first fetches from it
(`Fetcher.learn_topics`); a topic the answer lacks or reports an error for (not created yet) is
asked for again at its next assignment, not taken as known. A subscribed topic is named to
librdkafka at `subscribe()` (`Fetcher.announce_topics`), and its assignment then does not wait
for a metadata request while the handle has no broker to send one to."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from kconsumer.client import fetch
from kconsumer.client.fetch import Fetcher


@dataclass
class _Topic:
    error: KafkaError | None = None


@dataclass
class _Metadata:
    topics: dict[str, _Topic]


@dataclass
class _Handle:
    """A librdkafka handle's metadata requests and assignments, recorded; `answer` is what a
    metadata request finds."""

    answer: dict[str, _Topic] = field(default_factory=dict)
    requests: list[str | None] = field(default_factory=list)
    #: Metadata requests that did not wait for their answer (timeout 0).
    unwaited: list[str | None] = field(default_factory=list)
    #: Whether a broker is connected (else an unwaited request finds none, as librdkafka's does).
    connected: bool = True

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> _Metadata:
        if timeout == 0:
            self.unwaited.append(topic)
            code = KafkaError._TIMED_OUT if self.connected else KafkaError._TRANSPORT
            raise KafkaException(KafkaError(code))
        self.requests.append(topic)
        return _Metadata(dict(self.answer))

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        pass


@pytest.fixture
def handle(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Handle]:
    made = _Handle()
    monkeypatch.setattr(fetch, "_RdKafkaConsumer", lambda config: made)
    yield made


def test_a_topic_is_asked_for_once(handle: _Handle) -> None:
    handle.answer = {"orders": _Topic()}
    fetcher = Fetcher({"bootstrap.servers": "unused:9092"}, "metadata-test")
    fetcher.assign([TopicPartition("orders", 0, 5)])
    fetcher.assign([TopicPartition("orders", 1, 5)])
    assert handle.requests == ["orders"]


def test_a_topic_the_answer_lacks_or_has_an_error_for_is_asked_for_again(handle: _Handle) -> None:
    handle.answer = {"late": _Topic(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))}
    fetcher = Fetcher({"bootstrap.servers": "unused:9092"}, "metadata-test")
    fetcher.assign([TopicPartition("late", 0, 0)])
    handle.answer = {}  # not in the answer at all
    fetcher.assign([TopicPartition("late", 1, 0)])
    handle.answer = {"late": _Topic()}  # created meanwhile
    fetcher.assign([TopicPartition("late", 2, 0)])
    fetcher.assign([TopicPartition("late", 3, 0)])
    assert handle.requests == ["late", "late", "late"]


def test_several_new_topics_are_learned_with_one_request(handle: _Handle) -> None:
    handle.answer = {"a": _Topic(), "b": _Topic(), "other": _Topic()}
    fetcher = Fetcher({"bootstrap.servers": "unused:9092"}, "metadata-test")
    fetcher.assign([TopicPartition("a", 0, 0), TopicPartition("b", 1, 0)])
    fetcher.assign([TopicPartition("a", 1, 0), TopicPartition("b", 0, 0)])
    assert handle.requests == [None]  # every topic's metadata, once


def test_an_announced_topic_is_not_waited_for_while_no_broker_is_connected(handle: _Handle) -> None:
    handle.answer, handle.connected = {"orders": _Topic()}, False
    fetcher = Fetcher({"bootstrap.servers": "unused:9092"}, "metadata-test")
    fetcher.announce_topics(["orders"])
    fetcher.assign([TopicPartition("orders", 0, 5)])
    assert handle.requests == []  # librdkafka asks with its first connection
    assert handle.unwaited == ["orders", "orders"]  # the announcement, then the look for a broker


def test_an_announced_topic_is_learned_as_usual_once_a_broker_is_connected(handle: _Handle) -> None:
    handle.answer = {"orders": _Topic()}
    fetcher = Fetcher({"bootstrap.servers": "unused:9092"}, "metadata-test")
    fetcher.announce_topics(["orders"])
    fetcher.assign([TopicPartition("orders", 0, 5)])
    fetcher.assign([TopicPartition("orders", 1, 5)])
    assert handle.requests == ["orders"]


def test_a_topic_not_announced_is_waited_for_even_without_a_broker(handle: _Handle) -> None:
    handle.answer, handle.connected = {"orders": _Topic(), "other": _Topic()}, False
    fetcher = Fetcher({"bootstrap.servers": "unused:9092"}, "metadata-test")
    fetcher.announce_topics(["orders"])
    fetcher.assign([TopicPartition("other", 0, 0)])
    fetcher.assign([TopicPartition("orders", 0, 0), TopicPartition("other", 1, 0)])
    assert handle.requests == ["other"]


def test_a_topic_is_announced_once(handle: _Handle) -> None:
    fetcher = Fetcher({"bootstrap.servers": "unused:9092"}, "metadata-test")
    fetcher.announce_topics(["a", "b"])
    fetcher.announce_topics(["b", "a"])
    assert sorted(t for t in handle.unwaited if t is not None) == ["a", "b"]
