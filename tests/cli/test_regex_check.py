"""``kconsumer regex check``, run as a subprocess: the verdict of the broker's RE2 full match, the
topics a pattern matches (given, or read from the reference cluster and from librdkafka's mock
cluster), and exit statuses a script can rely on."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import confluent_kafka as ck
import pytest

from kconsumer.testing import ReferenceCluster


def kconsumer(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kconsumer", "regex", "check", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_valid_pattern_matches_whole_names_only() -> None:
    done = kconsumer("orders-[0-9]+", "--topics", "orders-1,orders-22", "--topics", "orders-1x,xorders-1")
    assert done.returncode == 0, done.stderr
    assert "valid" in done.stdout and "matches 2 of 4 topics" in done.stdout
    assert done.stdout.split()[-2:] == ["orders-1", "orders-22"]


@pytest.mark.parametrize(("pattern", "reason"), [("(", "missing )"), ("a(?=b)", "invalid perl operator")])
def test_an_invalid_pattern_fails_with_re2s_reason(pattern: str, reason: str) -> None:
    done = kconsumer(pattern)
    assert done.returncode == 1 and reason in done.stderr and done.stdout == ""
    verdict = json.loads(kconsumer(pattern, "--format", "json").stdout)
    assert verdict["valid"] is False and reason in verdict["reason"]


@pytest.fixture(scope="module")
def mock() -> Iterator[str]:
    handle = ck.Producer({"test.mock.num.brokers": 1, "log_level": 3})
    (broker,) = handle.list_topics(timeout=5).brokers.values()
    address = f"{broker.host}:{broker.port}"
    producer = ck.Producer({"bootstrap.servers": address, "log_level": 3})
    for topic in ("payments", "payments-eu", "audit"):
        producer.produce(topic, b"x")  # the mock creates topics on first use
    assert producer.flush(10) == 0
    yield address
    del handle


def test_topics_are_read_from_a_cluster(mock: str) -> None:
    with ReferenceCluster() as cluster:
        for name in ("payments", "payments-eu", "audit"):
            cluster.create_topic(name, 1)
        for servers in (cluster.bootstrap_servers, mock):
            done = kconsumer("payments.*", "--bootstrap-servers", servers, "--format", "json")
            assert done.returncode == 0, done.stderr
            verdict = json.loads(done.stdout)
            assert verdict["matched"] == ["payments", "payments-eu"] and verdict["topics_checked"] >= 3


def test_an_unreachable_cluster_is_exit_status_2() -> None:
    done = kconsumer("x", "--bootstrap-servers", "127.0.0.1:1", "--timeout", "1")
    assert done.returncode == 2 and "cannot read the topics" in done.stderr
