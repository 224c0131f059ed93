"""The Spark source's read rate against plain confluent-kafka reading the same offset ranges.

``python -m benchmarks.spark_source [--broker reference|mock|kafka] [--partitions 8] [--per-partition 50000]
[--size 100] [--runs 3]``

One broker (by default the reference cluster, ``kconsumer serve``; ``mock``: librdkafka's mock
cluster; ``kafka``: Apache Kafka 4.4) holds a topic; the same run then reads every record of
it (earliest to latest) twice per repetition, timed:

* **spark**: a `local[2]` batch query, ``spark.read.format("kconsumer")`` with explicit starting and
  ending offsets, into the ``noop`` sink (each executor task reads one partition's range with its
  own confluent-kafka handle, with kconsumer's fetch-handle defaults);
* **confluent-kafka**: one plain ``confluent_kafka.Consumer`` (librdkafka's defaults) assigned every
  partition at the same start offsets, ``consume(10000)`` into Python lists until every record is in;
* **confluent-kafka tuned**: the same with kconsumer's fetch-handle settings
  (``FETCH_HANDLE_DEFAULTS``: librdkafka's defaults leave the fetcher idle with 8 or more
  partitions), the fair peer for the source, whose executors use them.

Each repetition also times the spark query over one record per partition: the job's fixed cost
(planning in a Python worker, scheduling the tasks, a new reading handle per task), which a
larger data set spreads over more records.

The first repetition of each is a warm-up (Spark's JVM and Python workers, connections); the report
gives the median of the others and the ratio of spark to each plain reader.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

from .common import BROKERS, GroupTimers, add_data_set_arguments, broker, log, produce, watermarks


def _spark_session() -> Any:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import kconsumer.spark

    session = (
        SparkSession.builder.master("local[2]")
        .appName("kconsumer-spark-benchmark")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    kconsumer.spark.register(session)
    return session


def _spark_read(spark: Any, bootstrap: str, topic: str, marks: list[tuple[int, int]]) -> float:
    starting = json.dumps({topic: {str(p): lo for p, (lo, _hi) in enumerate(marks)}})
    ending = json.dumps({topic: {str(p): hi for p, (_lo, hi) in enumerate(marks)}})
    start = time.perf_counter()
    (
        spark.read.format("kconsumer")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", starting)
        .option("endingOffsets", ending)
        .load()
        .write.format("noop")
        .mode("overwrite")
        .save()
    )
    return time.perf_counter() - start


def _confluent_read(bootstrap: str, topic: str, marks: list[tuple[int, int]], tuned: bool) -> float:
    import confluent_kafka as ck

    from kconsumer.client.config import FETCH_HANDLE_DEFAULTS

    consumer = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "spark-benchmark-peer",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            **(FETCH_HANDLE_DEFAULTS if tuned else {}),
        }
    )
    expected = sum(hi - lo for lo, hi in marks)
    got: list[list[Any]] = []
    seen = 0
    start = time.perf_counter()
    consumer.assign([ck.TopicPartition(topic, p, lo) for p, (lo, _hi) in enumerate(marks)])
    while seen < expected:
        batch = consumer.consume(10_000, 1.0)
        records = [m.value() for m in batch if m.error() is None]
        got.append(records)
        seen += len(records)
    elapsed = time.perf_counter() - start
    consumer.close()
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_set_arguments(parser, per_partition=50_000)
    parser.add_argument("--runs", type=int, default=3, help="timed repetitions after the warm-up")
    parser.add_argument("--broker", choices=BROKERS, default="reference", help="the broker read from")
    args = parser.parse_args(argv)
    topic = f"spark-{args.size}b-{args.partitions}p"
    with broker(args.broker, [(topic, args.partitions)], GroupTimers()) as bootstrap:
        produce(bootstrap, topic, args.partitions, args.per_partition, args.size)
        marks = watermarks(bootstrap, topic, args.partitions)
        records = sum(hi - lo for lo, hi in marks)
        spark = _spark_session()
        try:
            times: dict[str, list[float]] = {"spark": [], "confluent-kafka": [], "confluent-kafka tuned": []}
            fixed: list[float] = []
            for run in range(args.runs + 1):
                # The same query over one record per partition: what a job costs before any record.
                job_cost = _spark_read(spark, bootstrap, topic, [(lo, lo + 1) for lo, _hi in marks])
                taken = {
                    "spark": _spark_read(spark, bootstrap, topic, marks),
                    "confluent-kafka": _confluent_read(bootstrap, topic, marks, tuned=False),
                    "confluent-kafka tuned": _confluent_read(bootstrap, topic, marks, tuned=True),
                }
                log(f"spark source: run {run}: " + ", ".join(f"{n} {t:.2f} s" for n, t in taken.items()))
                if run:
                    fixed.append(job_cost)
                    for name, seconds in taken.items():
                        times[name].append(seconds)
        finally:
            spark.stop()
    rates = {name: records / statistics.median(values) for name, values in times.items()}
    print(
        f"{records:,} records of {args.size} B in {args.partitions} partitions on the {args.broker} broker, "
        f"median of {args.runs} runs"
    )
    print("| reader | records/s |")
    print("|---|---|")
    for name, rate in rates.items():
        print(f"| {name} | {rate:,.0f} |")
    print(
        f"\nthe spark job's fixed cost (the same query over 1 record per partition): "
        f"{statistics.median(fixed):.2f} s of spark's {statistics.median(times['spark']):.2f} s"
    )
    print(f"spark / confluent-kafka: {rates['spark'] / rates['confluent-kafka']:.2f}")
    print(f"spark / confluent-kafka tuned: {rates['spark'] / rates['confluent-kafka tuned']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
