"""SASL as a confluent-kafka user sees it, both libraries on the same SASL_PLAINTEXT/PLAIN listener:
consuming with the right password, a wrong password (error_cb hears _AUTHENTICATION; kconsumer also
raises it from poll(): an intended difference), and fixing the password with set_sasl_credentials."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from consumer_harness import fast_cluster
from parity_harness import Run, compare, read

from kconsumer.testing import ReferenceCluster


@pytest.fixture(scope="module")
def secured() -> Iterator[ReferenceCluster]:
    with fast_cluster(
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanisms=("PLAIN",),
        users={"alice": "alice-secret"},
    ) as cluster:
        yield cluster


def _sasl(password: str) -> dict[str, Any]:
    return {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanisms": "PLAIN",
        "sasl_username": "alice",
        "sasl_password": password,
    }


def test_consuming_over_sasl(secured: ReferenceCluster) -> None:
    def scenario(run: Run) -> dict[str, Any]:
        topic = run.topic("sasl", 2, records=3)
        consumer = run.consumer(run.group("sasl"), **_sasl("alice-secret"))
        consumer.subscribe([topic])
        got = read(consumer, 6)
        return {"records": sorted((m.partition(), m.offset()) for m in got)}

    compare("sasl consume", scenario, secured)


def test_a_wrong_password_then_set_sasl_credentials(secured: ReferenceCluster) -> None:
    def scenario(run: Run) -> dict[str, Any]:
        topic = run.topic("rotate", 1, records=3)
        codes: set[int] = set()
        consumer = run.consumer(run.group("rotate"), error_cb=lambda e: codes.add(e.code()), **_sasl("wrong"))
        consumer.subscribe([topic])
        raised: set[int] = set()
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            try:
                message = consumer.poll(0.1)
            except KafkaException as exc:
                raised.add(exc.args[0].code())
                continue
            assert message is None or message.error() is not None, "nothing is read unauthenticated"
        consumer.set_sasl_credentials("alice", "alice-secret")
        got = read(consumer, 3, timeout=30)
        return {
            "error_cb hears _AUTHENTICATION": KafkaError._AUTHENTICATION in codes,
            "raised from poll": sorted(raised),
            "records after set_sasl_credentials": [m.offset() for m in got],
        }

    compare("sasl wrong password", scenario, secured)
