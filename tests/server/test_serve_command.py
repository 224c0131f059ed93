"""``python -m kconsumer serve`` as a separate process: usable by clients, clean exit on SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import confluent_kafka as ck
import pytest

from kconsumer.broker.server.serve import config_from
from kconsumer.cli import build_parser, main


def _start(log: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    """Start ``kconsumer serve`` on a free port (its log goes to the file `log`); returns it and
    its bootstrap address."""
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "kconsumer", "serve", "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line.startswith("listening on "):
        process.kill()
        process.communicate(timeout=10)
        raise AssertionError(f"kconsumer serve did not start: {line!r}\n{log.read_text()}")
    return process, line.removeprefix("listening on ")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str, Path]]:
    log = tmp_path / "serve.log"
    process, bootstrap = _start(
        log,
        "--topic",
        "events:3",
        "--topic",
        "other",
        "--heartbeat-interval-ms",
        "200",
        "--session-timeout-ms",
        "3000",
    )
    try:
        yield process, bootstrap, log
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=10)


def test_serve_runs_a_usable_cluster_and_exits_cleanly_on_sigterm(
    served: tuple[subprocess.Popen[str], str, Path],
) -> None:
    process, bootstrap, log = served
    producer = ck.Producer({"bootstrap.servers": bootstrap})
    for i in range(300):
        producer.produce("events", value=b"%d" % i, partition=i % 3)
    assert producer.flush(10) == 0
    metadata = producer.list_topics(timeout=10)
    assert {name: len(t.partitions) for name, t in metadata.topics.items()} == {"events": 3, "other": 1}

    consumer = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "serve-test",
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "log_level": 3,
        }
    )
    consumer.subscribe(["events"])
    values: set[int] = set()
    deadline = time.monotonic() + 20
    try:
        while len(values) < 300 and time.monotonic() < deadline:
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                values.add(int(message.value() or b"-1"))
    finally:
        consumer.close()
    assert values == set(range(300))

    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=15)
    err = log.read_text()
    assert process.returncode == 0, err
    assert "member" in err and "joined" in err and "left the group" in err  # group events are logged
    assert "stopped" in err


def test_serve_exits_zero_on_sigint(tmp_path: Path) -> None:
    process, _bootstrap = _start(tmp_path / "serve.log")
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=15)
    assert process.returncode == 0, (tmp_path / "serve.log").read_text()


def test_serve_options() -> None:
    args = build_parser().parse_args(
        [
            "serve",
            "--port",
            "19092",
            "--topic",
            "a:4",
            "--assignors",
            "range,uniform",
            "--session-timeout-ms",
            "6000",
            "--heartbeat-interval-ms",
            "500",
            "--assignment-interval-ms",
            "0",
            "--auto-create-topics",
            "--max-group-size",
            "7",
            "--retention-bytes",
            "1000000",
        ]
    )
    assert args.topics == [("a", 4)]
    config = config_from(args)
    assert (config.port, config.auto_create_topics, config.retention_bytes) == (19092, True, 1_000_000)
    coordinator = config.coordinator
    assert coordinator.assignors == ("range", "uniform")
    assert (coordinator.session_timeout_ms, coordinator.heartbeat_interval_ms) == (6000, 500)
    assert (coordinator.assignment_interval_ms, coordinator.max_group_size) == (0, 7)


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "--assignors", "nope"],
        ["serve", "--heartbeat-interval-ms", "9000", "--session-timeout-ms", "3000"],
        ["serve", "--topic", "bad name:2"],
        ["serve", "--ssl-certificate", "/nonexistent.pem", "--ssl-key", "/nonexistent.key"],
        ["serve", "--ssl-key", "/nonexistent.key"],
        ["serve", "--ssl-client-ca", "/nonexistent.pem"],
        ["serve", "--user", "alice:secret"],
        ["serve", "--sasl-mechanism", "PLAIN"],
        ["serve", "--sasl-mechanism", "PLAIN", "--user", "no-password"],
    ],
)
def test_serve_rejects_bad_options(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "kconsumer serve:" in capsys.readouterr().err


def test_main_without_a_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "serve" in capsys.readouterr().err


def test_serve_over_tls(tmp_path: Path) -> None:
    """--ssl-certificate/--ssl-key: the standalone broker speaks TLS; confluent-kafka and
    kconsumer connect with the CA; a plaintext client gets nothing."""
    from kconsumer import Consumer
    from kconsumer.testing.certificates import generate

    certificates = generate(tmp_path / "certificates")
    process, bootstrap = _start(
        tmp_path / "serve.log",
        "--topic",
        "secured:1",
        "--ssl-certificate",
        str(certificates.server_certificate),
        "--ssl-key",
        str(certificates.server_key),
    )
    try:
        secured = {
            "bootstrap.servers": bootstrap,
            "security.protocol": "SSL",
            "ssl.ca.location": str(certificates.ca),
        }
        producer = ck.Producer(secured)
        producer.produce("secured", b"over tls")
        assert producer.flush(10) == 0
        consumer = Consumer({**secured, "group.id": "serve-tls", "auto.offset.reset": "earliest"})
        try:
            message = _first_record(consumer, "secured")
            assert message is not None and message.value() == b"over tls"
        finally:
            consumer.close()
        plaintext = ck.Producer({"bootstrap.servers": bootstrap})
        with pytest.raises(ck.KafkaException):
            plaintext.list_topics(timeout=2)
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=20)


def test_serve_with_sasl_scram(tmp_path: Path) -> None:
    """--sasl-mechanism/--user: the standalone broker authenticates with SCRAM; confluent-kafka
    and kconsumer log in, a wrong password is refused."""
    from kconsumer import Consumer

    process, bootstrap = _start(
        tmp_path / "serve.log",
        "--topic",
        "secured:1",
        "--sasl-mechanism",
        "SCRAM-SHA-256",
        "--user",
        "alice:alice-secret",
        "--max-reauth-ms",
        "60000",
    )
    try:
        secured = {
            "bootstrap.servers": bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "SCRAM-SHA-256",
            "sasl.username": "alice",
            "sasl.password": "alice-secret",
        }
        producer = ck.Producer(secured)
        producer.produce("secured", b"over sasl")
        assert producer.flush(10) == 0
        consumer = Consumer({**secured, "group.id": "serve-sasl", "auto.offset.reset": "earliest"})
        try:
            message = _first_record(consumer, "secured")
            assert message is not None and message.value() == b"over sasl"
        finally:
            consumer.close()
        errors: list[ck.KafkaError] = []
        wrong = ck.Producer({**secured, "sasl.password": "wrong", "error_cb": errors.append})
        wrong.poll(2)
        assert any(e.code() == ck.KafkaError._AUTHENTICATION for e in errors)
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=20)


def _first_record(consumer: Any, topic: str) -> Any:
    """The first record `consumer` reads from `topic` (None after 20 s)."""
    consumer.subscribe([topic])
    deadline = time.monotonic() + 20
    message = None
    while (message is None or message.error() is not None) and time.monotonic() < deadline:
        message = consumer.poll(0.2)
    return message


def test_serve_three_brokers(tmp_path: Path) -> None:
    """--brokers 3: three addresses; a group's coordinator and the partitions' leaders are spread
    over them, and a kconsumer group reads through them."""
    from kconsumer import Consumer

    process, bootstrap = _start(tmp_path / "serve.log", "--brokers", "3", "--topic", "spread:6")
    try:
        assert len(bootstrap.split(",")) == 3
        metadata = ck.Producer({"bootstrap.servers": bootstrap}).list_topics("spread", timeout=10)
        assert sorted(metadata.brokers) == [1, 2, 3]
        assert {p.leader for p in metadata.topics["spread"].partitions.values()} == {1, 2, 3}
        producer = ck.Producer({"bootstrap.servers": bootstrap})
        for partition in range(6):
            producer.produce("spread", b"x", partition=partition)
        assert producer.flush(10) == 0
        consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": "serve-3", "auto.offset.reset": "earliest"}
        )
        try:
            consumer.subscribe(["spread"])
            got: set[int] = set()
            deadline = time.monotonic() + 20
            while len(got) < 6 and time.monotonic() < deadline:
                message = consumer.poll(0.2)
                if message is not None and message.error() is None:
                    got.add(message.partition())
            assert got == set(range(6))
        finally:
            consumer.close()
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=20)
