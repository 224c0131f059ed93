"""The edges of the API a confluent-kafka program touches: ``consume()`` with no or a negative
count, and every call on a closed consumer."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaException, TopicPartition
from parity_harness import Run, compare, read

from kconsumer.protocol.api import ApiKey
from kconsumer.testing import ReferenceCluster


def _outcome(call: Any) -> Any:
    try:
        result = call()
    except KafkaException as exc:
        return ("KafkaException", exc.args[0].code())
    except (RuntimeError, ValueError, TypeError, AttributeError) as exc:
        return (type(exc).__name__, str(exc))
    if isinstance(result, list):
        return ("ok", len(result))
    return ("ok", type(result).__name__)


def test_consume_counts_and_a_closed_consumer(cluster: ReferenceCluster) -> None:
    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("edges", 1, records=2), run.group("edges")
        consumer = run.consumer(group)
        consumer.subscribe([topic])
        read(consumer, 2)
        seen = {
            "consume(0)": _outcome(lambda: consumer.consume(0, 0.1)),
            "consume(-1)": _outcome(lambda: consumer.consume(-1, 0.1)),
        }
        consumer.close()
        calls = {
            "assignment": consumer.assignment,
            "memberid": consumer.memberid,
            "poll": lambda: consumer.poll(0.1),
            "consume": lambda: consumer.consume(1, 0.1),
            "commit": lambda: consumer.commit(asynchronous=False),
            "committed": lambda: consumer.committed([TopicPartition(topic, 0)], timeout=1),
            "position": lambda: consumer.position([TopicPartition(topic, 0)]),
            "subscribe": lambda: consumer.subscribe([topic]),
            "unsubscribe": consumer.unsubscribe,
            "assign": lambda: consumer.assign([TopicPartition(topic, 0)]),
        }
        for name, call in calls.items():
            seen[f"after close: {name}"] = _outcome(call)
        return seen

    compare("API edges", scenario, cluster)


def test_argument_errors(cluster: ReferenceCluster) -> None:
    """Wrong argument types and values raise what confluent-kafka raises (a program catching
    TypeError or KafkaException(_INVALID_ARG) keeps working)."""

    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("arguments", 1, records=1), run.group("arguments")
        consumer = run.consumer(group)
        consumer.subscribe([topic])
        read(consumer, 1)
        calls = {
            "subscribe(str)": lambda: consumer.subscribe(topic),
            "poll(str)": lambda: consumer.poll("1"),
            "consume(str)": lambda: consumer.consume("1", 0.1),
            "commit(offsets=str)": lambda: consumer.commit(offsets="x", asynchronous=False),
            "commit(offsets=[int])": lambda: consumer.commit(offsets=[1], asynchronous=False),
            "store_offsets(offsets=[int])": lambda: consumer.store_offsets(offsets=[1]),
            "committed(str)": lambda: consumer.committed("x"),
            "position(str)": lambda: consumer.position("x"),
            "seek(str)": lambda: consumer.seek("x"),
            "pause(str)": lambda: consumer.pause("x"),
        }
        return {name: _outcome(call)[0] for name, call in calls.items()}

    compare("argument errors", scenario, cluster)


@pytest.mark.reference_only("delays the reference broker's OffsetFetch answers")
def test_a_committed_query_that_times_out(cluster: ReferenceCluster) -> None:
    """committed() whose answer does not come within its timeout: KafkaException(_TIMED_OUT)."""

    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("committed-timeout", 1, records=1), run.group("committed-timeout")
        consumer = run.consumer(group)
        consumer.subscribe([topic])
        read(consumer, 1)
        cluster.delay_responses(ApiKey.OFFSET_FETCH, 3000, count=5)
        try:
            outcome = _outcome(lambda: consumer.committed([TopicPartition(topic, 0)], timeout=0.5))
        finally:
            cluster.clear_faults(ApiKey.OFFSET_FETCH)
        return {"committed(timeout=0.5)": outcome}

    compare("committed timeout", scenario, cluster)


def test_the_offsets_assignment_reports(cluster: ReferenceCluster) -> None:
    """assignment() lists the partitions with offset -1000 (OFFSET_STORED), as confluent-kafka."""

    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("assignment-offsets", 2, records=3), run.group("assignment-offsets")
        consumer = run.consumer(group)
        consumer.subscribe([topic])
        read(consumer, 6)
        return {"assignment": sorted((tp.partition, tp.offset) for tp in consumer.assignment())}

    compare("assignment offsets", scenario, cluster)
