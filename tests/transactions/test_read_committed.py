"""Aborted and open transactions as readers see them, on both backends (the same assertions hold
on Apache Kafka and on the reference cluster: a difference fails one of the two runs).

read_committed readers (kconsumer, whose default it is as confluent-kafka's, confluent-kafka, the
Java consumer) get the committed transactions' records and never an aborted one, and stop at the
last stable offset while a transaction is open (records produced after it wait for its end);
read_uncommitted readers get everything; neither gets a transaction marker. A read_committed
member resetting to the latest offset starts at the last stable offset, so it reads the open
transaction's records once they commit.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import confluent_kafka as ck
import pytest
from backends import Cluster
from consumer_harness import Ledger, wait_until
from peer_member import PeerMember

from kconsumer import Consumer, TopicPartition

pytestmark = pytest.mark.timeout(240)

Reader = Callable[[str, str, str], list[int]]


def _transactional(bootstrap: str, name: str) -> ck.Producer:
    producer = ck.Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": f"{name}-{uuid.uuid4().hex[:6]}"}
    )
    producer.init_transactions(30)
    return producer


def _offsets_of(producer: ck.Producer, topic: str, values: list[bytes]) -> list[int]:
    """Produce `values` to partition 0 and return their offsets."""
    offsets: list[int] = []
    for value in values:
        producer.produce(
            topic, value=value, partition=0, on_delivery=lambda err, msg: offsets.append(msg.offset())
        )
    producer.flush(30)
    return sorted(offsets)


def _kconsumer_reads(bootstrap: str, topic: str, isolation: str | None, seconds: float = 3.0) -> list[int]:
    config = {
        "bootstrap.servers": bootstrap,
        "group.id": f"r-{uuid.uuid4().hex[:6]}",
        "auto.offset.reset": "earliest",
    }
    if isolation is not None:
        config["isolation.level"] = isolation
    consumer = Consumer(config)
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        return _drain(consumer.poll, seconds)
    finally:
        consumer.close()


def _confluent_reads(bootstrap: str, topic: str, isolation: str, seconds: float = 3.0) -> list[int]:
    consumer = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"r-{uuid.uuid4().hex[:6]}",
            "isolation.level": isolation,
        }
    )
    try:
        consumer.assign([ck.TopicPartition(topic, 0, 0)])
        return _drain(consumer.poll, seconds)
    finally:
        consumer.close()


def _drain(poll: Callable[[float], object], seconds: float) -> list[int]:
    offsets: list[int] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        message = poll(0.2)
        if message is not None and message.error() is None:  # type: ignore[attr-defined]
            offsets.append(message.offset())  # type: ignore[attr-defined]
    return offsets


def test_aborted_and_open_transactions_as_each_reader_sees_them(cluster: Cluster) -> None:
    topic = "txn-visibility"
    cluster.create_topic(topic, 1)
    bootstrap = cluster.bootstrap_servers
    producer = _transactional(bootstrap, "visibility")
    producer.begin_transaction()
    committed = _offsets_of(producer, topic, [b"c%d" % i for i in range(5)])
    producer.commit_transaction(30)
    producer.begin_transaction()
    aborted = _offsets_of(producer, topic, [b"a%d" % i for i in range(3)])
    producer.abort_transaction(30)
    producer.begin_transaction()
    still_open = _offsets_of(producer, topic, [b"o0", b"o1"])
    plain = ck.Producer({"bootstrap.servers": bootstrap})
    after_open = _offsets_of(plain, topic, [b"p0"])  # not transactional, behind the open one

    stable = committed
    everything = committed + aborted + still_open + after_open
    assert _kconsumer_reads(bootstrap, topic, None) == stable  # read_committed by default
    assert _kconsumer_reads(bootstrap, topic, "read_committed") == stable
    assert _confluent_reads(bootstrap, topic, "read_committed") == stable
    assert _kconsumer_reads(bootstrap, topic, "read_uncommitted") == everything
    assert _confluent_reads(bootstrap, topic, "read_uncommitted") == everything

    producer.commit_transaction(30)
    now_stable = committed + still_open + after_open
    assert _kconsumer_reads(bootstrap, topic, None) == now_stable
    assert _confluent_reads(bootstrap, topic, "read_committed") == now_stable


def test_a_read_committed_member_resetting_to_latest_starts_at_the_last_stable_offset(
    cluster: Cluster,
) -> None:
    topic = "txn-latest"
    cluster.create_topic(topic, 1)
    bootstrap = cluster.bootstrap_servers
    producer = _transactional(bootstrap, "latest")
    producer.begin_transaction()
    pending = _offsets_of(producer, topic, [b"x0", b"x1", b"x2"])
    member = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"latest-{uuid.uuid4().hex[:6]}",
            "group.protocol": "consumer",
            "auto.offset.reset": "latest",
        }
    )
    try:
        member.subscribe([topic])
        wait_until(lambda: member.poll(0.1) is None and bool(member.assignment()), 30, what="an assignment")
        producer.commit_transaction(30)
        assert _drain(member.poll, 3.0) == pending
    finally:
        member.close()


def test_java_transactions_and_a_java_read_committed_consumer(cluster: Cluster, java: list[str]) -> None:
    """The Java producer commits one transaction and aborts another; the Java consumer
    (read_committed) and kconsumer read exactly the committed one."""
    import json
    import subprocess

    topic = "java-txn"
    cluster.create_topic(topic, 1)
    bootstrap = cluster.bootstrap_servers
    reports = {}
    for end in ("commit", "abort"):
        result = subprocess.run(
            [
                *java,
                "produce",
                "--bootstrap",
                bootstrap,
                "--topic",
                topic,
                "--count",
                "4",
                "--partition",
                "0",
                "--end",
                end,
                "--prop",
                f"transactional.id=java-{end}-{uuid.uuid4().hex[:6]}",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
        assert result.returncode == 0 and lines[-1]["event"] == "done", (lines[-3:], result.stderr[-2000:])
        reports[end] = sorted(line["offset"] for line in lines if line["event"] == "produced")
    assert _kconsumer_reads(bootstrap, topic, None) == reports["commit"]
    assert _kconsumer_reads(bootstrap, topic, "read_uncommitted") == reports["commit"] + reports["abort"]
    ledger = Ledger()
    reader = PeerMember(
        java,
        ledger,
        "java",
        bootstrap,
        f"jr-{uuid.uuid4().hex[:6]}",
        [topic],
        properties={"isolation.level": "read_committed", "auto.offset.reset": "earliest"},
    )
    try:
        reader.wait_ready()
        wait_until(
            lambda: len(ledger.received_offsets().get((topic, 0), ())) >= 4, 60, what="the Java reader"
        )
        time.sleep(1.0)
    finally:
        reader.close()
    assert sorted(ledger.received_offsets()[(topic, 0)]) == reports["commit"]
