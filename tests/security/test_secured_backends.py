"""Secured listeners on both backends: the same kconsumer group scenario on the reference
cluster's and on Apache Kafka's TLS, mutual TLS, SASL/SCRAM, SASL/PLAIN and SASL/OAUTHBEARER
listeners, under the at-least-once ledger, and a wrong password reported from ``poll()``.

The reference-only security tests (test_sasl.py, test_tls.py, test_authorization.py) also prove
that *every* connection was secured, which only the reference cluster can show; here Apache Kafka
proves that kconsumer's TLS and SASL clients are accepted by the broker users run.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from backends import Cluster, open_cluster
from confluent_kafka import KafkaError, KafkaException
from consumer_harness import Ledger, Member, cluster_committed, config, wait_until

from kconsumer import Consumer

pytestmark = pytest.mark.timeout(180)

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
#: (listener protocol, SASL mechanism or None, mutual TLS)
LISTENERS = [
    ("SSL", None, False),
    ("SSL", None, True),
    ("SASL_SSL", "SCRAM-SHA-512", False),
    ("SASL_PLAINTEXT", "SCRAM-SHA-256", False),
    ("SASL_PLAINTEXT", "PLAIN", False),
    ("SASL_PLAINTEXT", "OAUTHBEARER", False),
]

#: The mechanisms that take a password.
PASSWORDS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def _id(listener: tuple[str, str | None, bool]) -> str:
    protocol, mechanism, mutual = listener
    return "+".join(x for x in (protocol, mechanism, "mTLS" if mutual else None) if x)


@pytest.fixture(scope="module", params=LISTENERS, ids=_id)
def secured(request: pytest.FixtureRequest, backend: str) -> Iterator[tuple[Cluster, str | None]]:
    protocol, mechanism, mutual = request.param
    options: dict[str, Any] = {"security_protocol": protocol, "ssl_client_auth": mutual}
    if mechanism is not None:
        options.update(sasl_mechanisms=(mechanism,), users=USERS)
    with open_cluster(backend, **options) as cluster:
        yield cluster, mechanism


def _settings(cluster: Cluster, group: str, mechanism: str | None, **overrides: str) -> dict[str, Any]:
    security = cluster.client_config("alice", mechanism) if mechanism else cluster.client_config()
    return {**config(cluster.bootstrap_servers, group), **security, **overrides}


def test_a_kconsumer_group_over_the_secured_listener(secured: tuple[Cluster, str | None]) -> None:
    cluster, mechanism = secured
    topic = group = f"secured-{(mechanism or 'tls').lower()}"
    cluster.create_topic(topic, 4)
    produced = {
        (topic, p): cluster.produce(topic, [b"r%d" % i for i in range(10)], partition=p) for p in range(4)
    }
    ledger = Ledger(cluster_committed(cluster, group))
    ledger.sample_group(cluster, group)
    members = [Member(ledger, f"m{i}", _settings(cluster, group, mechanism), [topic]) for i in range(2)]
    try:
        wait_until(
            lambda: ledger.has_all(produced), timeout=60, what="every record over the secured listener"
        )
        members[0].close()  # its partitions move to the other member
        for p in range(4):
            produced[(topic, p)] += cluster.produce(topic, [b"after"], partition=p)
        wait_until(lambda: ledger.has_all(produced), timeout=60, what="the other member taking over")
        assert all(not m.errors for m in members), [m.errors for m in members]
    finally:
        for member in members:
            member.close()
    ledger.check(produced)


@pytest.mark.parametrize(
    "secured", [listener for listener in LISTENERS if listener[1] in PASSWORDS], ids=_id, indirect=True
)
def test_a_wrong_password_is_reported_from_poll(secured: tuple[Cluster, str | None]) -> None:
    cluster, mechanism = secured
    cluster.create_topic("wrong-password", 1)
    consumer = Consumer(_settings(cluster, "wrong-password", mechanism, **{"sasl.password": "wrong"}))
    raised: list[KafkaException] = []
    try:
        consumer.subscribe(["wrong-password"])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not raised:
            try:
                consumer.poll(0.2)
            except KafkaException as exc:
                raised.append(exc)
    finally:
        consumer.close(timeout=2)
    assert raised, "poll() reports the failed authentication"
    error = raised[0].args[0]
    assert error.code() == KafkaError._AUTHENTICATION and not error.fatal(), error
    assert "sasl.password" in error.str(), error.str()
