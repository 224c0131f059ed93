"""A streaming pipeline on Spark that shares a consumer group with other applications.

JSON order events -> parsed columns -> 5-second tumbling windows per customer (count, revenue),
with a watermark -> Parquet files, with a checkpoint. The query's driver is a member of the
consumer group (KIP-848), so any number of these Spark applications and plain kconsumer
consumers can run in the same group: the group splits the partitions between them, and
partitions move at batch boundaries as members come and go, with the group's committed offsets
following what each query completed.

Run it by itself (starts the in-process reference cluster, produces events, runs a plain
kconsumer member next to the Spark query for a bounded time, prints the windows, exits 0)::

    python examples/spark_pipeline.py                     # one Spark application
    python examples/spark_pipeline.py --spark-apps 2      # two Spark applications (two JVMs)

Against a real cluster (or ``kconsumer serve --topic orders:6`` in another terminal), run each
piece where you like, with the same group::

    python examples/spark_pipeline.py --bootstrap-servers HOST:9092 --role producer --duration 120
    python examples/spark_pipeline.py --bootstrap-servers HOST:9092 --role pipeline --output /tmp/a
    python examples/spark_pipeline.py --bootstrap-servers HOST:9092 --role pipeline --output /tmp/b
    python examples/spark_pipeline.py --bootstrap-servers HOST:9092 --role consumer

(Each Spark application needs its own ``--output``; its checkpoint goes under it.)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

TOPIC = "orders"
GROUP = "orders-pipeline"
CUSTOMERS = ["ada", "grace", "linus", "barbara", "ken", "margaret"]


# -- the pipeline ------------------------------------------------------------------------------------


def build_pipeline(spark: Any, bootstrap: str, group: str, topic: str, output: Path) -> Any:
    """Start the streaming query: parse, aggregate in event-time windows, append to Parquet."""
    from pyspark.sql import functions as F

    schema = "order_id STRING, customer STRING, amount DOUBLE, event_time TIMESTAMP"
    orders = (
        spark.readStream.format("kconsumer")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("group.id", group)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")  # for partitions the group never committed
        .option("maxRecordsPerTrigger", "20000")
        .load()
        .select(F.from_json(F.col("value").cast("string"), schema).alias("order"), "partition", "offset")
        .select("order.*", "partition", "offset")
        .where(F.col("event_time").isNotNull())  # malformed events are dropped
    )
    windows = (
        orders.withWatermark("event_time", "2 seconds")
        .groupBy(F.window("event_time", "5 seconds").alias("window"), "customer")
        .agg(F.count("*").alias("orders"), F.round(F.sum("amount"), 2).alias("revenue"))
        .select(F.col("window.start").alias("window_start"), "customer", "orders", "revenue")
    )
    return (
        windows.writeStream.format("parquet")
        .outputMode("append")
        .option("path", str(output / "windows"))
        .option("checkpointLocation", str(output / "checkpoint"))
        .trigger(processingTime="1 second")
        .start()
    )


def run_pipeline(
    bootstrap: str,
    group: str,
    topic: str,
    output: Path,
    duration: float,
    name: str,
    when_done: Callable[[], None] | None = None,
) -> int:
    """Run one Spark application with the pipeline for `duration` seconds (then `when_done()`,
    and a bounded wait for the query to catch up), and print its windows."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import kconsumer.spark

    spark = (
        SparkSession.builder.master("local[2]")
        .appName(f"kconsumer-pipeline-{name}")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    kconsumer.spark.register(spark)
    query = build_pipeline(spark, bootstrap, group, topic, output)
    print(f"[{name}] streaming query started; output in {output}", flush=True)
    try:
        query.awaitTermination(duration)
        # A busy machine may still be starting the first batch's Python workers: give the query
        # (boundedly) the time to complete one batch with data.
        deadline = time.monotonic() + 60
        while (
            query.isActive
            and not any(p.get("numInputRows", 0) for p in query.recentProgress)
            and time.monotonic() < deadline
        ):
            time.sleep(0.2)
        if when_done is not None:
            when_done()
        # Stop once caught up, between batches: a batch interrupted by stop() is read again (by
        # this query after a restart, or by whoever gets its partitions), and Spark logs it.
        deadline = time.monotonic() + 20
        while query.isActive and time.monotonic() < deadline:
            status = query.status
            if not status["isTriggerActive"] and not status["isDataAvailable"]:
                break
            time.sleep(0.02)
        failure = query.exception()
        read = sum(p.get("numInputRows", 0) for p in query.recentProgress)
    finally:
        query.stop()
    if failure is not None:
        print(f"[{name}] the query failed: {failure}", file=sys.stderr)
        spark.stop()
        return 1
    windows_dir = output / "windows"
    if any(windows_dir.glob("*.parquet")):
        rows = spark.read.parquet(str(windows_dir)).orderBy("window_start", "customer").collect()
    else:
        rows = []
    print(f"[{name}] read {read} events (in the last progress reports); closed windows written: {len(rows)}")
    for row in rows[-6:]:
        window = f"{row.window_start:%H:%M:%S} {row.customer:<9}"
        print(f"[{name}]   {window} {row.orders:>5} orders {row.revenue:>10.2f}")
    spark.stop()
    return 0


# -- the other members and the events -------------------------------------------------------------------


class EventProducer(threading.Thread):
    """Produces JSON order events (a few malformed ones too) with confluent-kafka."""

    def __init__(self, bootstrap: str, topic: str, rate: int) -> None:
        super().__init__(daemon=True, name="producer")
        from confluent_kafka import Producer

        self._producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
        self._topic = topic
        self._rate = rate
        self._stop_event = threading.Event()
        self.count = 0

    def run(self) -> None:
        rng = random.Random(7)
        while not self._stop_event.is_set():
            for _ in range(max(1, self._rate // 10)):
                customer = rng.choice(CUSTOMERS)
                event = {
                    "order_id": f"o-{self.count}",
                    "customer": customer,
                    "amount": round(rng.uniform(1, 200), 2),
                    "event_time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
                    + f".{int(time.time() * 1000) % 1000:03d}Z",
                }
                value = b"not json" if self.count % 997 == 0 else json.dumps(event).encode()
                self._producer.produce(self._topic, key=customer.encode(), value=value)
                self.count += 1
            self._producer.poll(0)
            self._stop_event.wait(0.1)
        self._producer.flush(10)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(15)


class PeerConsumer(threading.Thread):
    """A plain kconsumer member of the same group: it gets its share of the partitions."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        super().__init__(daemon=True, name="peer")
        self._config = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest"}
        self._topic = topic
        self._stop_event = threading.Event()
        self.by_partition: Counter[int] = Counter()

    def run(self) -> None:
        from kconsumer import Consumer

        with Consumer(self._config) as consumer:
            consumer.subscribe([self._topic])
            while not self._stop_event.is_set():
                for message in consumer.consume(500, 0.2):
                    if message.error() is None:
                        self.by_partition[message.partition()] += 1

    def stop(self) -> None:
        self._stop_event.set()
        self.join(30)


# -- running it all ---------------------------------------------------------------------------------------


def _show_group(cluster: Any, group: str) -> None:
    described = cluster.describe_group(group)
    if described is None:
        return
    for member in described.members.values():
        owned = sorted(p for _, p in member.owned)
        print(f"  member {member.member_id[:8]} ({member.client_id}): partitions {owned}")


def demo(args: argparse.Namespace) -> int:
    """Everything in one go: cluster (unless given), producer, plain member, Spark application(s)."""
    from kconsumer.testing import ReferenceCluster

    cluster = None
    bootstrap = args.bootstrap_servers
    if bootstrap is None:
        cluster = ReferenceCluster(heartbeat_interval_ms=500, session_timeout_ms=10_000).start()
        cluster.create_topic(args.topic, partitions=6)
        bootstrap = cluster.bootstrap_servers
        print(f"reference cluster on {bootstrap}, topic {args.topic} with 6 partitions")
    base = Path(args.output or tempfile.mkdtemp(prefix="kconsumer-pipeline-"))
    producer = EventProducer(bootstrap, args.topic, args.rate)
    peer = PeerConsumer(bootstrap, args.group, args.topic)
    producer.start()
    peer.start()
    others = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--role=pipeline",
                f"--bootstrap-servers={bootstrap}",
                f"--group={args.group}",
                f"--topic={args.topic}",
                f"--output={base / f'app{i}'}",
                f"--duration={args.duration}",
                f"--name=app{i}",
            ]
        )
        for i in range(2, args.spark_apps + 1)
    ]
    done = threading.Event()

    def report() -> None:
        while cluster is not None and not done.wait(5):
            print(f"group {args.group} after {producer.count} events:")
            _show_group(cluster, args.group)

    threading.Thread(target=report, daemon=True).start()
    try:
        status = run_pipeline(
            bootstrap, args.group, args.topic, base / "app1", args.duration, "app1", when_done=producer.stop
        )
        status = max([status] + [p.wait(args.duration + 120) for p in others])
    finally:
        done.set()
        producer.stop()
        peer.stop()
        for process in others:
            if process.poll() is None:
                process.terminate()
    print(
        f"produced {producer.count} events; the plain kconsumer read {sum(peer.by_partition.values())} "
        f"from partitions {sorted(peer.by_partition)}"
    )
    if cluster is not None:
        print(f"group {args.group} committed offsets: {cluster.committed(args.group)}")
        cluster.stop()
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap-servers", help="Kafka brokers (default: start a reference cluster)")
    parser.add_argument("--group", default=GROUP)
    parser.add_argument("--topic", default=TOPIC)
    parser.add_argument("--output", help="output directory (default: a temporary one)")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds to run (default: 30)")
    parser.add_argument("--rate", type=int, default=500, help="events per second to produce (default: 500)")
    parser.add_argument(
        "--spark-apps", type=int, default=1, help="Spark applications in the demo (default: 1)"
    )
    parser.add_argument("--role", choices=["demo", "pipeline", "producer", "consumer"], default="demo")
    parser.add_argument("--name", default="app", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.role == "demo":
        return demo(args)
    if args.bootstrap_servers is None:
        parser.error(f"--role {args.role} needs --bootstrap-servers")
    if args.role == "pipeline":
        output = Path(args.output or tempfile.mkdtemp(prefix="kconsumer-pipeline-"))
        return run_pipeline(args.bootstrap_servers, args.group, args.topic, output, args.duration, args.name)
    member: EventProducer | PeerConsumer
    if args.role == "producer":
        member = EventProducer(args.bootstrap_servers, args.topic, args.rate)
    else:
        member = PeerConsumer(args.bootstrap_servers, args.group, args.topic)
    member.start()
    time.sleep(args.duration)
    member.stop()
    print(f"{args.role}: {getattr(member, 'count', None) or dict(getattr(member, 'by_partition', {}))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
