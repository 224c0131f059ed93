"""Exactly-once consume-transform-produce: kconsumer reads, a transactional producer writes.

Each batch the consumer returns becomes one transaction of a confluent-kafka transactional
producer: the transformed records are produced to the output topic, the input offsets after the
batch are added with ``send_offsets_to_transaction(offsets, consumer.consumer_group_metadata())``,
and the transaction commits. The output records and the input offsets become visible together or
not at all, so a crash anywhere (before producing, after producing, before or during the commit)
leaves either the whole batch or nothing: a restarted worker, or whichever member the partitions
move to, starts from the committed input offsets and the aborted attempt is invisible to readers
with ``isolation.level=read_committed``.

The consumer's group metadata carries its member id and member epoch: the group coordinator
refuses the offsets of a member it has fenced meanwhile (KIP-447), so a zombie (a worker that
stalled past its session timeout while its partitions moved) cannot commit a batch a new owner
is also processing; its transaction is aborted and it rewinds to the committed offsets.

Run it by itself (an in-process reference cluster; two workers, one of them leaving half-way)::

    python examples/exactly_once.py

or against a Kafka 4.x cluster::

    python examples/exactly_once.py --bootstrap-servers localhost:9092

``python examples/exactly_once.py worker ...`` runs one worker (tests run several as processes,
crashing them on purpose with ``--crash-at STEP:TRANSACTION``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import confluent_kafka as ck
from confluent_kafka.admin import AdminClient, NewTopic

from kconsumer import Consumer, KafkaException, Message, TopicPartition

#: The places a worker can be told to crash at (`--crash-at STEP:N`, N counting transactions).
STEPS = ("before-produce", "after-produce", "after-offsets")


@dataclass
class Progress:
    """What a worker did: transactions committed and aborted, records written."""

    committed: int = 0
    aborted: int = 0
    records: int = 0


def transform(value: bytes | None) -> bytes:
    """The pipeline's business logic: upper-case the payload."""
    return (value or b"").upper()


def run_worker(
    bootstrap: str,
    group: str,
    source: str,
    sink: str,
    transactional_id: str,
    *,
    stop: Callable[[], bool],
    at_step: Callable[[str, int], None] = lambda step, transaction: None,
    report: Callable[[str], None] = lambda line: None,
    batch: int = 200,
    settings: dict[str, str] | None = None,
) -> Progress:
    """Process `source` into `sink` exactly once until `stop()`; `at_step(step, n)` is called at
    each of `STEPS` of transaction n (tests crash or stall there)."""
    extra = dict(settings or {})
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",  # also: offsets pending in a transaction are waited for
            **extra,
        }
    )
    producer = ck.Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": transactional_id,
            "linger.ms": 5,
            # Apache Kafka writes the markers of a commit asynchronously: the next transaction's
            # AddPartitionsToTxn is answered CONCURRENT_TRANSACTIONS until they are written, and
            # librdkafka retries after retry.backoff.ms (100 ms by default: 10 transactions/s).
            "retry.backoff.ms": 10,
            **{k: v for k, v in extra.items() if k.startswith(("security.", "sasl.", "ssl."))},
        }
    )
    progress = Progress()
    try:
        producer.init_transactions(60)
        consumer.subscribe([source])
        while not stop():
            records = [m for m in consumer.consume(batch, 0.5) if _checked(m)]
            if records:
                _one_transaction(consumer, producer, sink, records, progress, at_step, report)
    finally:
        consumer.close()
    return progress


def _checked(message: Message) -> bool:
    error = message.error()
    if error is not None and error.code() != ck.KafkaError._PARTITION_EOF:
        raise KafkaException(error)
    return error is None


def _one_transaction(
    consumer: Consumer,
    producer: ck.Producer,
    sink: str,
    records: list[Message],
    progress: Progress,
    at_step: Callable[[str, int], None],
    report: Callable[[str], None],
) -> None:
    number = progress.committed + progress.aborted
    at_step("before-produce", number)
    producer.begin_transaction()
    next_offsets: dict[tuple[str, int], int] = {}
    for message in records:
        topic, partition, offset = message.topic(), message.partition(), message.offset()
        assert topic is not None and partition is not None and offset is not None
        key = f"{topic}/{partition}/{offset}".encode()
        producer.produce(sink, key=key, value=transform(message.value()), partition=partition)
        next_offsets[(topic, partition)] = offset + 1
    at_step("after-produce", number)
    offsets = [ck.TopicPartition(t, p, o) for (t, p), o in sorted(next_offsets.items())]
    try:
        producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 30)
        at_step("after-offsets", number)
        producer.commit_transaction(30)
    except ck.KafkaException as exc:
        error = exc.args[0]
        if not error.txn_requires_abort():
            raise
        producer.abort_transaction(30)
        progress.aborted += 1
        report(f"aborted {error.name()}")
        rewind(consumer)
        return
    progress.committed += 1
    progress.records += len(records)
    report(f"committed {len(records)}")


def rewind(consumer: Consumer) -> None:
    """Seek every assigned partition back to its committed offset (the start when none is)."""
    assigned = consumer.assignment()
    if not assigned:
        return
    for tp in consumer.committed(assigned, timeout=30):
        offset = tp.offset if tp.offset >= 0 else ck.OFFSET_BEGINNING
        with contextlib.suppress(KafkaException):  # the partition may be revoked meanwhile
            consumer.seek(TopicPartition(tp.topic, tp.partition, offset))


# -- reading the output back -----------------------------------------------------------------


def committed_output(
    bootstrap: str, sink: str, partitions: int, settings: dict[str, str] | None = None
) -> list[bytes]:
    """The keys of every record of `sink` a read_committed reader sees, up to the last stable offsets."""
    reader = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"verify-{uuid.uuid4().hex[:8]}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            **(settings or {}),
        }
    )
    try:
        reader.assign([ck.TopicPartition(sink, p, ck.OFFSET_BEGINNING) for p in range(partitions)])
        keys: list[bytes] = []
        at_end: set[int] = set()
        deadline = time.monotonic() + 60
        while len(at_end) < partitions and time.monotonic() < deadline:
            message = reader.poll(0.5)
            if message is None:
                continue
            error = message.error()
            if error is not None and error.code() == ck.KafkaError._PARTITION_EOF:
                at_end.add(message.partition())
            elif error is not None:
                raise ck.KafkaException(error)
            else:
                at_end.discard(message.partition())
                keys.append(message.key())
        return keys
    finally:
        reader.close()


# -- the demo --------------------------------------------------------------------------------


@contextlib.contextmanager
def _cluster(bootstrap: str | None) -> Iterator[tuple[str, Callable[[str, int], None]]]:
    if bootstrap is not None:

        def create_topic(name: str, count: int) -> None:
            admin = AdminClient({"bootstrap.servers": bootstrap})
            for future in admin.create_topics([NewTopic(name, count, 1)]).values():
                future.result(30)

        yield bootstrap, create_topic
        return
    from kconsumer.testing import ReferenceCluster

    with ReferenceCluster(heartbeat_interval_ms=200, session_timeout_ms=3000) as cluster:
        yield cluster.bootstrap_servers, lambda name, count: cluster.create_topic(name, count)


def demo(bootstrap: str | None, records: int = 5000, partitions: int = 4) -> int:
    run = uuid.uuid4().hex[:8]
    source, sink, group = f"eos-in-{run}", f"eos-out-{run}", f"eos-{run}"
    with _cluster(bootstrap) as (servers, create_topic):
        create_topic(source, partitions)
        create_topic(sink, partitions)
        producer = ck.Producer({"bootstrap.servers": servers, "linger.ms": 5})
        for i in range(records):
            producer.produce(source, value=b"record-%d" % i, partition=i % partitions)
        producer.flush(30)
        done = threading.Event()
        results: dict[str, Progress] = {}
        leave_early = threading.Event()

        def worker(name: str, stop: threading.Event) -> None:
            results[name] = run_worker(servers, group, source, sink, f"{group}-{name}", stop=stop.is_set)

        started = time.monotonic()
        threads = [
            threading.Thread(target=worker, args=("a", done)),
            threading.Thread(target=worker, args=("b", leave_early)),
        ]
        for thread in threads:
            thread.start()
        time.sleep(2)
        leave_early.set()  # worker b leaves: its partitions move to a, mid-stream
        keys: list[bytes] = []
        while time.monotonic() - started < 90:
            keys = committed_output(servers, sink, partitions)
            if len(keys) >= records:
                break
            time.sleep(0.5)
        elapsed = time.monotonic() - started
        done.set()
        for thread in threads:
            thread.join(60)
    duplicates = len(keys) - len(set(keys))
    transactions = sum(p.committed for p in results.values())
    print(f"{len(set(keys))} of {records} records in the committed output, {duplicates} duplicates")
    print(f"{transactions} transactions in {elapsed:.1f} s: {transactions / elapsed:.1f} transactions/s")
    return 0 if len(set(keys)) == records and duplicates == 0 else 1


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", nargs="?", choices=("demo", "worker"), default="demo")
    parser.add_argument("--bootstrap-servers")
    parser.add_argument("--group")
    parser.add_argument("--source")
    parser.add_argument("--sink")
    parser.add_argument("--transactional-id")
    parser.add_argument("--crash-at", help="STEP:N, STEP one of " + ", ".join(STEPS))
    parser.add_argument("--stall-at", help="STEP:N:SECONDS: sleep there (a zombie in the making)")
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--max-poll-interval-ms", help="the consumer's max.poll.interval.ms")
    parser.add_argument("--isolation-level", default="read_committed", help="the consumer's isolation.level")
    args = parser.parse_args(argv)
    if args.mode == "demo":
        return demo(args.bootstrap_servers)
    return _worker_process(args)


def _worker_process(args: argparse.Namespace) -> int:
    """One worker, reporting on stdout, until standard input closes."""
    stopped = threading.Event()

    def watch_stdin() -> None:
        sys.stdin.read()
        stopped.set()

    threading.Thread(target=watch_stdin, daemon=True).start()

    def report(line: str) -> None:
        print(line, flush=True)

    def at_step(step: str, transaction: int) -> None:
        if args.crash_at == f"{step}:{transaction}":
            report(f"crash {step} {transaction}")
            os._exit(3)
        if args.stall_at and args.stall_at.rsplit(":", 1)[0] == f"{step}:{transaction}":
            report(f"stall {step} {transaction}")
            time.sleep(float(args.stall_at.rsplit(":", 1)[1]))
            report("resumed")

    progress = run_worker(
        args.bootstrap_servers,
        args.group,
        args.source,
        args.sink,
        args.transactional_id,
        stop=stopped.is_set,
        at_step=at_step,
        report=report,
        batch=args.batch,
        settings={
            "isolation.level": args.isolation_level,
            **({"max.poll.interval.ms": args.max_poll_interval_ms} if args.max_poll_interval_ms else {}),
        },
    )
    report(f"done {progress.committed} {progress.aborted} {progress.records}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
