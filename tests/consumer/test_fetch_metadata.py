"""The fetch handle learns a topic's metadata before fetching from it: the subscribed topics' while
the member waits for its partitions (`Fetcher.prefetch_topics`, on a thread of its own), others at
their assignment; a topic the answer lacks is asked for again; the handle is never closed under a
metadata request (docs/benchmarks.md, "A joining member's metadata, learned while it waits")."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from confluent_kafka import KafkaError, TopicPartition
from waiting import wait_until

from kconsumer import Consumer
from kconsumer.client import fetch
from kconsumer.client.fetch import Fetcher
from kconsumer.testing import ReferenceCluster


@dataclass
class _Topic:
    error: KafkaError | None = None


@dataclass
class _Metadata:
    topics: dict[str, _Topic]


@dataclass
class _Handle:
    """A librdkafka handle's metadata, assignment and close, recorded; `answer` is what a metadata
    request finds, `hold` (when set) keeps a metadata request waiting until it is released."""

    answer: dict[str, _Topic] = field(default_factory=dict)
    hold: threading.Event | None = None
    requests: list[str | None] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> _Metadata:
        self.requests.append(topic)
        self.calls.append("metadata requested")
        if self.hold is not None:
            self.hold.wait(10)
        self.calls.append("metadata answered")
        return _Metadata(dict(self.answer))

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        self.calls.append("assign")

    def close(self) -> None:
        self.calls.append("close")


@pytest.fixture
def handle(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Handle]:
    made = _Handle()
    monkeypatch.setattr(fetch, "_RdKafkaConsumer", lambda config: made)
    yield made


def _fetcher() -> Fetcher:
    return Fetcher({"bootstrap.servers": "unused:9092"}, "metadata-test")


def _prefetched(fetcher: Fetcher) -> None:
    thread = fetcher._prefetch
    assert thread is not None
    thread.join(5)
    assert not thread.is_alive()


def test_subscribed_topics_are_learned_ahead_and_not_asked_for_again_at_their_assignment(
    handle: _Handle,
) -> None:
    handle.answer = {"orders": _Topic()}
    fetcher = _fetcher()
    fetcher.prefetch_topics(["orders"])
    _prefetched(fetcher)
    assert handle.requests == ["orders"]
    fetcher.assign([TopicPartition("orders", 0, 5)])
    assert handle.requests == ["orders"]
    assert handle.calls[-1] == "assign"
    fetcher.prefetch_topics(["orders"])  # known: no thread, no request
    assert handle.requests == ["orders"]


def test_a_topic_the_answer_lacks_or_has_an_error_for_is_asked_for_at_its_assignment(handle: _Handle) -> None:
    handle.answer = {"late": _Topic(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))}
    fetcher = _fetcher()
    fetcher.prefetch_topics(["late"])
    _prefetched(fetcher)
    handle.answer = {"late": _Topic()}  # created meanwhile
    fetcher.assign([TopicPartition("late", 0, 0)])
    assert handle.requests == ["late", "late"]
    assert handle.calls[-2:] == ["metadata answered", "assign"]


def test_several_topics_are_learned_with_one_request(handle: _Handle) -> None:
    handle.answer = {"a": _Topic(), "b": _Topic(), "other": _Topic()}
    fetcher = _fetcher()
    fetcher.prefetch_topics(["a", "b"])
    _prefetched(fetcher)
    assert handle.requests == [None]  # every topic's metadata: one request
    fetcher.assign([TopicPartition("a", 0, 0), TopicPartition("b", 1, 0)])
    assert handle.requests == [None]


def test_no_topic_names_no_request(handle: _Handle) -> None:
    fetcher = _fetcher()
    fetcher.prefetch_topics([])  # a pattern subscription names no topic
    assert fetcher._prefetch is None
    assert handle.requests == []


def test_close_waits_for_the_metadata_request_in_flight(handle: _Handle) -> None:
    handle.answer = {"orders": _Topic()}
    handle.hold = threading.Event()
    fetcher = _fetcher()
    fetcher.prefetch_topics(["orders"])
    wait_until(lambda: handle.requests, 5, what="the metadata request")
    closing = threading.Thread(target=fetcher.close)
    closing.start()
    time.sleep(0.1)
    assert "close" not in handle.calls  # still waiting for the request
    handle.hold.set()
    closing.join(5)
    assert handle.calls == ["metadata requested", "metadata answered", "close"]


def test_a_joining_member_learns_its_topic_while_its_partitions_are_still_owned() -> None:
    """Against the reference cluster: the joiner's fetch handle knows the topic from
    `subscribe()` on, before it fetches anything (the joiner never polls here, so it never
    starts fetching: only the subscription can have taught the handle the topic)."""
    with ReferenceCluster() as cluster:
        cluster.create_topic("held", 2)
        group = f"metadata-{uuid.uuid4().hex[:8]}"
        owner = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group})
        joiner = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group})
        stop = threading.Event()
        polling = threading.Thread(target=_poll_until, args=(owner, stop))
        try:
            owner.subscribe(["held"])
            polling.start()
            wait_until(lambda: len(owner.assignment()) == 2, 10, what="the owner's partitions")
            joiner.subscribe(["held"])
            fetcher = joiner.engine.fetcher
            assert isinstance(fetcher, Fetcher)
            wait_until(
                lambda: "held" in fetcher._known_topics, 2, what="the joiner's fetch handle knows the topic"
            )
            assert not joiner.assignment()
            assert not fetcher.assigned()
        finally:
            stop.set()
            polling.join(10)
            joiner.close()
            owner.close()


def _poll_until(consumer: Consumer, stop: threading.Event) -> None:
    while not stop.is_set():
        consumer.poll(0.05)
