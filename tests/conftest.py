"""Fixtures and options of the whole test suite: the backends integration tests run against
(`backends.py`), and the shared wait helper (`waiting.py`)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from backends import BACKENDS, KAFKA, REFERENCE, in_ci, kafka_pool, selected

from peers.build import PeerUnavailable, connect_worker, go_peer, java_peer


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend",
        choices=(*BACKENDS, "all"),
        default=os.environ.get("KCONSUMER_TEST_BACKEND", "all"),
        help="which cluster the integration tests run against: the in-process reference cluster, "
        "Apache Kafka (started from its jars), or both (default)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "reference_only(reason): runs on the reference cluster only (it needs its fault injection or "
        "inner state); the reason says what",
    )
    config.addinivalue_line(
        "markers", "kafka_only(reason): runs on Apache Kafka only (what it proves is about Kafka itself)"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test that takes ``backend`` runs once per selected backend (a ``reference_only`` one
    on the reference cluster only)."""
    if "backend" not in metafunc.fixturenames:
        return
    backends = selected(metafunc.config)
    if metafunc.definition.get_closest_marker("reference_only") is not None:
        backends = tuple(b for b in backends if b == REFERENCE) or (REFERENCE,)
    if metafunc.definition.get_closest_marker("kafka_only") is not None:
        backends = tuple(b for b in backends if b == KAFKA)  # none: reported as not run
    marks = {KAFKA: [pytest.mark.kafka]}
    metafunc.parametrize(
        "backend",
        [pytest.param(b, marks=marks.get(b, []), id=b) for b in backends],
        scope=_scope(metafunc),
    )


#: Suites behind the ``slow`` marker, out of the fast lane (``./dev test --fast``): the simulation's
#: seed sweeps and its Spark run, Spark, the peers (JVM, Go, confluent-kafka's classic members and
#: librdkafka's mock cluster, Kafka Connect's worker), the confluent-kafka parity scenarios, the
#: fidelity suite, the examples, the docs' snippets, the command-line tools in subprocesses, the
#: exactly-once pipelines, the worker groups' scenarios and simulation sweep, and the benchmarks'
#: smoke test. The full ``./dev test`` runs them.
SLOW_PATHS = (
    "tests/sim/test_sweep.py",
    "tests/sim/test_spark.py",
    "tests/parity/",
    "tests/classic/test_kconsumer_classic.py",
    "tests/classic/test_classic_peers.py",
    "tests/spark/",
    "tests/interop/",
    "tests/fidelity/",
    "tests/transactions/",
    "tests/test_examples.py",
    "tests/test_demo.py",
    "tests/test_benchmarks_smoke.py",
    "tests/test_doc_snippets.py",
    "tests/cli/",
    "tests/cluster/test_peers.py",
    "tests/connect/",
    "tests/workers/test_worker_group.py",
    "tests/workers/test_worker_migration.py",
    "tests/workers/test_worker_sim.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the `SLOW_PATHS` suites ``slow``. Tests that need Apache Kafka without being
    parametrized by backend (the fidelity suite compares both servers) are deselected when Kafka
    is not among the selected backends."""
    root = str(config.rootpath)
    for item in items:
        where = str(item.path).removeprefix(root).lstrip("/")
        if where.startswith(SLOW_PATHS):
            item.add_marker(pytest.mark.slow)
    if KAFKA not in selected(config):
        kept = [i for i in items if not (i.get_closest_marker("kafka") and "backend" not in i.fixturenames)]
        if len(kept) != len(items):
            config.hook.pytest_deselected(items=[i for i in items if i not in kept])
            items[:] = kept


def _scope(metafunc: pytest.Metafunc) -> str:
    """The backend parameter lives as long as the widest fixture of the test that uses it."""
    fixtures = metafunc._arg2fixturedefs  # pytest's own table of the test's fixtures
    scopes = {d.scope for defs in fixtures.values() for d in defs if "backend" in d.argnames}
    for scope in ("session", "package", "module", "class"):
        if scope in scopes:
            return scope
    return "function"


@pytest.fixture(scope="session", autouse=True)
def _stop_kafka_clusters() -> Iterator[None]:
    yield
    kafka_pool().close()


def _built(build: object) -> list[str]:
    try:
        return build()  # type: ignore[operator, no-any-return]
    except PeerUnavailable as exc:
        if in_ci():
            pytest.fail(f"a peer is required under CI but cannot be built: {exc}", pytrace=False)
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def java() -> list[str]:
    """The command running the Java peer (kafka-clients from Maven Central, compiled once)."""
    return _built(java_peer)


@pytest.fixture(scope="session")
def connect_worker_command() -> list[str]:
    """The command starting a Kafka Connect distributed worker (connect-runtime from Maven
    Central, with the test connector compiled once); append its properties file."""
    return _built(connect_worker)


@pytest.fixture(scope="session")
def franz_go() -> list[str]:
    """The command running the franz-go peer (built once with the Go toolchain)."""
    return _built(go_peer)
