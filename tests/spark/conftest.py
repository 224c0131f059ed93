"""Fixtures for the PySpark source's tests: ONE shared local[2] Spark session for the whole run,
a cluster per test on each backend (a fresh reference cluster, a reset Apache Kafka), and a
driver-side sink that records every micro-batch."""

from __future__ import annotations

import os
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from backends import Cluster, open_cluster
from waiting import wait_until


def _java_available() -> bool:
    home = os.environ.get("JAVA_HOME")
    if home and os.path.exists(os.path.join(home, "bin", "java")):
        return True
    return shutil.which("java") is not None


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The shared Spark session (local[2], no UI, 2 shuffle partitions), with the source registered."""
    if not _java_available():
        pytest.skip("Java is not installed (PySpark needs a JVM): install Java 17+ or set JAVA_HOME")
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'kconsumer[spark]')")
    from pyspark.sql import SparkSession

    import kconsumer.spark

    # Python workers must run this interpreter (the one with kconsumer installed).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("kconsumer-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.streaming.stopTimeout", "30s")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    kconsumer.spark.register(session)
    yield session
    session.stop()


@pytest.fixture
def cluster(backend: str) -> Iterator[Cluster]:
    """A cluster of `backend` with the group timers shortened for tests."""
    with open_cluster(backend, session_timeout_ms=10_000) as running:
        yield running


Record = tuple[str, int, int, bytes]


class Sink:
    """A ``foreachBatch`` sink on the driver: every micro-batch's (topic, partition, offset,
    value) rows, in order. `records()` deduplicates on (topic, partition, offset)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.batches: list[tuple[int, list[Record]]] = []

    def __call__(self, df: Any, batch_id: int) -> None:
        rows = [
            (r.topic, r.partition, r.offset, bytes(r.value))
            for r in df.select("topic", "partition", "offset", "value").collect()
        ]
        with self._lock:
            self.batches.append((batch_id, rows))

    def rows(self) -> list[Record]:
        """Every row received, duplicates included."""
        with self._lock:
            return [row for _, rows in self.batches for row in rows]

    def records(self) -> set[Record]:
        """The distinct records (what a sink deduplicating on topic/partition/offset holds)."""
        return set(self.rows())

    def ends(self) -> dict[tuple[str, int], int]:
        """Per partition, the offset after the last record received."""
        out: dict[tuple[str, int], int] = {}
        for topic, partition, offset, _ in self.rows():
            out[(topic, partition)] = max(out.get((topic, partition), 0), offset + 1)
        return out


#: Spark gives the Python process that runs a streaming source 10 s to start (a constant in
#: PythonWorkerFactory); on 2 cores shared by every tier of the suite it sometimes takes longer.
WORKER_START_FAILED = "Python worker failed to connect back"


def start_query(
    spark: Any,
    cluster: Cluster,
    sink: Sink,
    *,
    group: str,
    topics: str,
    checkpoint: str,
    trigger: dict[str, Any] | None = None,
    **options: str,
) -> Any:
    """Start a streaming query of the kconsumer source into `sink` (processingTime 0.5 s). A
    query whose source process did not start in Spark's 10 s is started again, once: it died
    before its first batch, so it read and committed nothing."""
    reader = (
        spark.readStream.format("kconsumer")
        .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
        .option("group.id", group)
        .option("subscribe", topics)
    )
    for key, value in options.items():
        reader = reader.option(key, value)

    def start() -> Any:
        return (
            reader.load()
            .writeStream.foreachBatch(sink)
            .option("checkpointLocation", checkpoint)
            .trigger(**(trigger or {"processingTime": "0.5 seconds"}))
            .start()
        )

    query = start()
    return start() if _source_did_not_start(query, sink) else query


def _source_did_not_start(query: Any, sink: Sink) -> bool:
    """Whether `query` died starting its source's Python process, before any batch. Waits for the
    first trigger's progress (reported with data or without) rather than for a status message: a
    query's status reads "Initializing StreamExecution" until its thread runs, so a status check
    can pass before the source has even begun starting (seen in CI: the query died afterwards)."""
    wait_until(
        lambda: not query.isActive or query.lastProgress is not None,
        60,
        0.1,
        "the query's first trigger",
    )
    if query.isActive or query.lastProgress is not None or sink.rows():
        return False
    return WORKER_START_FAILED in str(query.exception())


def wait_for(condition: Callable[[], Any], timeout: float = 30.0, what: str = "", query: Any = None) -> Any:
    """Poll `condition` until it returns something truthy (returned); fail after `timeout` s, or
    at once with the query's error if `query` died."""

    def stopped() -> str | None:
        return None if query is None or query.isActive else f"the query stopped: {query.exception()}"

    return wait_until(condition, timeout, 0.1, what, stop_if=stopped)


def produced(cluster: Cluster, topic: str) -> set[Record]:
    """Every record of `topic` in the cluster, as sink rows."""
    out = set()
    for partition in range(cluster.topics()[topic]):
        for record in cluster.records(topic, partition):
            value = b"" if record.value is None else bytes(record.value)
            out.add((topic, partition, record.offset, value))
    return out


def high_watermarks(cluster: Cluster, topic: str) -> dict[tuple[str, int], int]:
    """(topic, partition) -> high watermark."""
    return {(topic, p): hw for p, (_, hw) in enumerate(cluster.watermarks(topic))}
