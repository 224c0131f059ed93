"""The clusters integration tests run against: the in-process reference cluster, and Apache Kafka.

A test that takes the ``backend`` fixture runs once per selected backend (``--backend reference``,
``--backend kafka`` or ``--backend all``, the default; ``KCONSUMER_TEST_BACKEND`` sets the default).
`open_cluster(backend, **options)` gives it a running cluster with `ReferenceCluster`'s options:

* ``reference``: a fresh `ReferenceCluster` with those options (fast group timers by default);
* ``kafka``: an `ApacheKafka` with those options, **shared** by every test asking for the same
  options and made fresh (every group and topic deleted) when the test is done: a JVM start costs
  seconds, a reset a fraction of one.

A test that needs what only the reference cluster has (fault injection, the coordinator's inner
state) is marked ``@pytest.mark.reference_only("why")``: it is not run on Kafka (not skipped:
collected once, for the reference backend). Where Apache Kafka cannot be started (no Java 17 or
Maven), the Kafka runs are skipped with the reason, except under CI (``CI=true``), where that is a
failure.
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from waiting import wait_until

from kconsumer.testing import ApacheKafka, ApacheKafkaUnavailable, ReferenceCluster
from kconsumer.testing.descriptions import ClassicGroupDescription

REFERENCE, KAFKA = "reference", "kafka"
BACKENDS = (REFERENCE, KAFKA)
#: The group timers of the fast tests (Kafka's defaults: 5 s heartbeat, 45 s session, 1 s
#: assignment interval; classic groups wait 3 s for members).
FAST = {"heartbeat_interval_ms": 100, "session_timeout_ms": 1500, "assignment_interval_ms": 0}
#: How many distinct Apache Kafka clusters a test process keeps running (each node a JVM of up to
#: 1 GB): one, so switching options costs a start (seconds) rather than a core's worth of idle JVMs.
_MAX_RUNNING = 1

Cluster = ReferenceCluster | ApacheKafka


def selected(config: pytest.Config) -> tuple[str, ...]:
    """The backends chosen on the command line (or by KCONSUMER_TEST_BACKEND)."""
    choice = config.getoption("--backend")
    return BACKENDS if choice == "all" else (choice,)


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


class KafkaPool:
    """Apache Kafka clusters kept running for the whole session, one per set of options."""

    def __init__(self) -> None:
        self._running: dict[tuple[tuple[str, Any], ...], ApacheKafka] = {}
        self._leases: dict[int, int] = {}
        self._unavailable: str | None = None
        self._lock = threading.Lock()

    def acquire(self, options: dict[str, Any]) -> ApacheKafka:
        """A running cluster with `options` (started on first use). Clusters nobody uses are
        stopped, least recently used first, while more than `_MAX_RUNNING` run; one in use (a
        module's shared cluster while a test of the module starts another) never is."""
        key = tuple(sorted((k, _hashable(v)) for k, v in options.items()))
        with self._lock:
            if self._unavailable is not None:
                _unavailable(self._unavailable)
            kafka = self._running.pop(key, None)
            if kafka is not None and not self._leases.get(id(kafka)):
                try:  # a broker's JVM may have exited since the cluster's last test
                    kafka.start_stopped_brokers()
                except Exception as exc:
                    warnings.warn(
                        f"an Apache Kafka cluster lost a broker and is replaced: {exc}", stacklevel=2
                    )
                    kafka.stop()
                    kafka = None
            if kafka is None:
                idle = [k for k, running in self._running.items() if not self._leases.get(id(running))]
                while idle and len(self._running) >= _MAX_RUNNING:
                    self._running.pop(idle.pop(0)).stop()
                kafka = ApacheKafka(**options)
                try:
                    kafka.start()
                except ApacheKafkaUnavailable as exc:
                    self._unavailable = str(exc)
                    _unavailable(str(exc))
            self._running[key] = kafka  # most recently used last
            self._leases[id(kafka)] = self._leases.get(id(kafka), 0) + 1
            return kafka

    def release(self, kafka: ApacheKafka) -> None:
        """Done with `kafka`: made fresh for the next test (every group and topic deleted). A
        cluster that cannot be made fresh (a group that keeps a member) is stopped, with a
        warning: the next test gets a new one."""
        try:
            kafka.reset()
        except Exception as exc:
            warnings.warn(f"an Apache Kafka cluster could not be reset and is replaced: {exc}", stacklevel=2)
            with self._lock:
                for key, running in list(self._running.items()):
                    if running is kafka:
                        del self._running[key]
            kafka.stop()
        finally:
            with self._lock:
                self._leases[id(kafka)] -= 1

    def close(self) -> None:
        with self._lock:
            for kafka in self._running.values():
                kafka.stop()
            self._running.clear()


def _unavailable(reason: str) -> None:
    if in_ci():
        pytest.fail(f"Apache Kafka is required under CI but cannot start: {reason}", pytrace=False)
    pytest.skip(f"Apache Kafka is not available here: {reason}")


def _hashable(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple, set, frozenset)):
        return tuple(_hashable(v) for v in value)
    return value


_POOL = KafkaPool()


def stable_classic_group(cluster: Cluster, group_id: str, timeout: float = 30.0) -> ClassicGroupDescription:
    """The classic group's description once it is Stable: only then does DescribeGroups name its
    protocol and its members' metadata (a member may be rejoining when a test looks)."""

    def stable() -> ClassicGroupDescription | None:
        description = cluster.describe_classic_group(group_id)
        return description if description is not None and description.state == "Stable" else None

    return wait_until(stable, timeout=timeout, what=f"classic group {group_id!r} to be Stable")


def kafka_pool() -> KafkaPool:
    """The session's pool (closed by the root conftest at the end of the session)."""
    return _POOL


@contextlib.contextmanager
def open_cluster(backend: str, **options: Any) -> Iterator[Cluster]:
    """A running cluster of `backend` with `ReferenceCluster`'s `options` (`FAST` timers unless
    given); see the module docstring."""
    settings = {**FAST, **options}
    if backend == REFERENCE:
        with ReferenceCluster(**settings) as cluster:
            yield cluster
        return
    if backend != KAFKA:
        raise ValueError(f"unknown backend {backend!r}")
    kafka = _POOL.acquire(settings)
    try:
        yield kafka
    except BaseException as failure:  # a failed assertion, an error, pytest-timeout's Failed
        failure.add_note(node_logs(kafka))
        raise
    finally:
        _POOL.release(kafka)


def node_logs(kafka: ApacheKafka, lines: int = 60) -> str:
    """Each node's state and the end of its log, for a failed test's report: the pool resets and
    reuses its cluster, so a failure's broker side is only kept here."""
    up = set(kafka.brokers_up())
    return "\n".join(
        f"=== Apache Kafka node {node_id} ({'running' if node_id in up else 'stopped'}) ===\n"
        + kafka.node_log(node_id, lines)
        for node_id in kafka.brokers()
    )
