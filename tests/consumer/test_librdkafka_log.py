"""librdkafka's log goes through the ``kconsumer.librdkafka`` logger, de-duplicated and
rate-limited, instead of raw lines on stderr (a wrong password used to print 173 lines in 8 s)."""

from __future__ import annotations

import contextlib
import logging
import time

import pytest

from kconsumer import Consumer, TopicPartition
from kconsumer.client.librdkafka_log import LOGGER_NAME, MAX_PER_WINDOW, WINDOW_S, RepeatFilter
from kconsumer.testing import ReferenceCluster


def _record(message: str) -> logging.LogRecord:
    return logging.LogRecord(LOGGER_NAME, logging.ERROR, __file__, 1, "%s", (message,), None)


def test_repeats_are_dropped_numbers_aside_and_the_next_window_says_how_many() -> None:
    now = [0.0]
    throttle = RepeatFilter(clock=lambda: now[0])
    assert throttle.filter(_record("broker 1: connect failed after 3ms"))
    assert not throttle.filter(_record("broker 1: connect failed after 7ms"))
    assert throttle.filter(_record("another message"))
    now[0] = WINDOW_S + 0.1
    again = _record("broker 1: connect failed after 9ms")
    assert throttle.filter(again)
    assert "(1 similar librdkafka messages dropped)" in again.getMessage()


def test_at_most_so_many_messages_pass_per_window() -> None:
    throttle = RepeatFilter(clock=lambda: 1.0)
    passed = sum(throttle.filter(_record(f"message {chr(65 + i % 26)}{'x' * (i // 26)}")) for i in range(100))
    assert passed == MAX_PER_WINDOW


@pytest.mark.timeout(60)
def test_a_wrong_password_is_logged_once_not_printed(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    users = {"alice": "right"}
    with ReferenceCluster(
        security_protocol="SASL_PLAINTEXT", sasl_mechanisms=("PLAIN",), users=users
    ) as cluster:
        cluster.create_topic("t", 1)
        consumer = Consumer(
            {**cluster.client_config(user="alice"), "sasl.password": "wrong", "group.id": "g"}
        )
        with caplog.at_level(logging.INFO, logger=LOGGER_NAME):
            consumer.assign([TopicPartition("t", 0, 0)])
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                with contextlib.suppress(Exception):  # the authentication failure is raised too
                    consumer.poll(0.2)
            consumer.close()
    lines = [r.getMessage() for r in caplog.records if r.name == LOGGER_NAME]
    assert any("Authentication failed" in line for line in lines), lines
    assert len(lines) <= 5, lines
    assert "|FAIL|" not in capfd.readouterr().err
