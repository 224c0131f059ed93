"""TLS end to end: the reference cluster's TLS listener (certificates generated at start), a
kconsumer group whose every connection is encrypted (the member's own and librdkafka's), a peer
nobody here wrote (confluent-kafka's producer and KIP-848 consumer), mutual TLS, bad settings
refused at construction, and garbage instead of a handshake."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import confluent_kafka
import pytest
from consumer_harness import Ledger, Member, cluster_committed, config, fast_cluster, wait_until

from kconsumer import Consumer
from kconsumer.errors import ConfigError
from kconsumer.testing import ReferenceCluster

TOPIC = "secured"


@pytest.fixture(scope="module")
def tls_cluster() -> Iterator[ReferenceCluster]:
    with fast_cluster(security_protocol="SSL") as cluster:
        yield cluster


@pytest.fixture(scope="module")
def mtls_cluster() -> Iterator[ReferenceCluster]:
    with fast_cluster(security_protocol="SSL", ssl_client_auth=True) as cluster:
        yield cluster


def _settings(cluster: ReferenceCluster, group: str) -> dict[str, Any]:
    return {**config(cluster.bootstrap_servers, group), **cluster.client_config()}


@pytest.mark.parametrize("listener", ["tls_cluster", "mtls_cluster"])
def test_a_kconsumer_group_over_tls_with_every_connection_encrypted(
    listener: str, request: pytest.FixtureRequest
) -> None:
    """Three members over TLS (and over mutual TLS, every connection then carrying the client
    certificate's principal), a hand-over under the ledger."""
    cluster: ReferenceCluster = request.getfixturevalue(listener)
    cluster.create_topic(TOPIC, 6)
    produced = {
        (TOPIC, p): cluster.produce(TOPIC, [b"r%d" % i for i in range(20)], partition=p) for p in range(6)
    }
    group = "tls-group"
    ledger = Ledger(cluster_committed(cluster, group))
    ledger.sample_group(cluster, group)
    members = [Member(ledger, f"m{i}", _settings(cluster, group), [TOPIC]) for i in range(3)]
    try:
        wait_until(lambda: ledger.has_all(produced), timeout=30, what="every record over TLS")
        connections = cluster.connections()
        assert connections, "the members hold connections"
        assert {c.security_protocol for c in connections} == {"SSL"}
        if listener == "mtls_cluster":
            assert {c.principal for c in connections} == {"User:CN=client"}
        members[0].close()  # the partitions move: the ledger checks the hand-over
        for p in range(6):
            produced[(TOPIC, p)] += cluster.produce(TOPIC, [b"after"], partition=p)
        wait_until(lambda: ledger.has_all(produced), timeout=30, what="the others taking over")
    finally:
        for member in members:
            member.close()
    ledger.check(produced)


def test_confluent_kafka_producer_and_consumer_use_the_tls_listener(tls_cluster: ReferenceCluster) -> None:
    cluster = tls_cluster
    cluster.create_topic("peer-tls", 1)
    producer = confluent_kafka.Producer(cluster.client_config())
    for i in range(10):
        producer.produce("peer-tls", b"p%d" % i)
    assert producer.flush(10) == 0
    consumer = confluent_kafka.Consumer(
        {
            **cluster.client_config(),
            "group.id": "peer-tls",
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.subscribe(["peer-tls"])
        values = []
        deadline = time.monotonic() + 20
        while len(values) < 10 and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value())
        assert values == [b"p%d" % i for i in range(10)]
    finally:
        consumer.close()


def test_mutual_tls_identifies_the_client(mtls_cluster: ReferenceCluster) -> None:
    cluster = mtls_cluster
    cluster.create_topic("mtls", 1)
    cluster.produce("mtls", [b"a", b"b"])
    consumer = Consumer(_settings(cluster, "mtls-group"))
    try:
        consumer.subscribe(["mtls"])
        got = []
        deadline = time.monotonic() + 20
        while len(got) < 2 and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                got.append(message.value())
        assert got == [b"a", b"b"]
        principals = {c.principal for c in cluster.connections()}
        assert principals == {"User:CN=client"}
    finally:
        consumer.close()


def test_without_a_client_certificate_the_mutual_tls_listener_refuses(mtls_cluster: ReferenceCluster) -> None:
    """The handshake fails: no connection is ever served (and the consumer does not hang)."""
    cluster = mtls_cluster
    settings = _settings(cluster, "no-certificate")
    del settings["ssl.certificate.location"], settings["ssl.key.location"]
    consumer = Consumer(settings)
    try:
        consumer.subscribe(["mtls"])
        for _ in range(10):
            consumer.poll(0.1)
        assert consumer.assignment() == []
        assert all(c.principal != "User:ANONYMOUS" for c in cluster.connections())
    finally:
        consumer.close(timeout=2)


def test_garbage_instead_of_a_handshake_closes_only_that_connection(tls_cluster: ReferenceCluster) -> None:
    host, port = tls_cluster.bootstrap_servers.split(":")
    with socket.create_connection((host, int(port)), timeout=5) as raw:
        raw.sendall(b"\x00\x00\x00\x10this is not TLS at all")
        raw.settimeout(5)
        deadline = time.monotonic() + 5
        closed = False
        while not closed and time.monotonic() < deadline:
            try:
                closed = raw.recv(100) == b""
            except (ConnectionResetError, TimeoutError):
                closed = True
        assert closed
    producer = confluent_kafka.Producer(tls_cluster.client_config())  # the listener still serves
    assert producer.list_topics(timeout=10).topics is not None


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"security.protocol": "SSL", "ssl.ca.location": "/nonexistent/ca.pem"}, "ssl.ca.location"),
        ({"security.protocol": "SSL", "ssl.ca.pem": "not a certificate"}, "ssl.ca.pem"),
        ({"security.protocol": "SSL", "ssl.key.location": "/nonexistent/client.key"}, "ssl.key.location"),
        (
            {"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "ldap"},
            "ssl.endpoint.identification.algorithm",
        ),
        ({"security.protocol": "SASL_SSL", "sasl.mechanisms": "GSSAPI"}, "sasl.mechanisms"),
        ({"security.protocol": "SASL_PLAINTEXT"}, "sasl.mechanism"),
        ({"security.protocol": "TLS"}, "security.protocol"),
    ],
)
def test_bad_security_settings_fail_at_construction(extra: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as raised:
        Consumer({"bootstrap.servers": "127.0.0.1:9", "group.id": "g", **extra})
    assert raised.value.key == key


def test_a_wrong_key_password_fails_at_construction(tls_cluster: ReferenceCluster, tmp_path: Any) -> None:
    from cryptography.hazmat.primitives import serialization

    certificates = tls_cluster.certificates
    assert certificates is not None
    key = serialization.load_pem_private_key(certificates.client_key.read_bytes(), None)
    encrypted = tmp_path / "client-encrypted.key"
    encrypted.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"right"),
        )
    )
    settings = {
        "bootstrap.servers": "127.0.0.1:9",
        "group.id": "g",
        "security.protocol": "SSL",
        "ssl.ca.location": str(certificates.ca),
        "ssl.certificate.location": str(certificates.client_certificate),
        "ssl.key.location": str(encrypted),
        "ssl.key.password": "wrong",
    }
    with pytest.raises(ConfigError) as raised:
        Consumer(settings)
    assert raised.value.key == "ssl.key.password"
    Consumer({**settings, "ssl.key.password": "right"}).close()
