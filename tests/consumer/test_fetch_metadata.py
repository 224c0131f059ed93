"""The fetch handle learns a topic's metadata before it first fetches from it
(`Fetcher.learn_topics`); a topic the answer lacks or reports an error for (not created yet) is
asked for again at its next assignment, not taken as known."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from confluent_kafka import KafkaError, TopicPartition

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

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> _Metadata:
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
