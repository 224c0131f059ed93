"""A confluent-kafka classic consumer in its own process, so a test can kill it (a crash the
coordinator only learns of from the session timeout). Run as a script, it reports on stdout, one
line per event, flushed: ``assign t p ...``, ``revoke t p ...`` (after committing what it
processed), ``recv t p offset``; each assign and revoke waits for the driver's ``ack`` line; it
commits asynchronously every 0.2 s. `ProcessMember` starts it
and feeds a `Ledger` from its lines."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

import confluent_kafka as ck

if TYPE_CHECKING:
    from ledger import Ledger


class ProcessMember:
    """The member process and the thread reading its reports into `ledger`."""

    def __init__(
        self, ledger: Ledger, name: str, bootstrap: str, group: str, topic: str, strategy: str
    ) -> None:
        self.ledger = ledger
        self.name = name
        self.process = subprocess.Popen(
            [sys.executable, __file__, bootstrap, group, topic, strategy, name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, name=f"{name}-reports", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        from ledger import RecordAt  # only the driver's side has the tests' helpers on its path

        assert self.process.stdout is not None
        for line in self.process.stdout:
            if not line.endswith("\n"):
                break  # the last line of a killed process, cut short: never reported whole
            if not line.strip():
                continue
            kind, *rest = line.split()
            if kind == "recv":
                topic, partition, offset = rest[0], int(rest[1]), int(rest[2])
                self.ledger.received(self.name, RecordAt(topic, partition, offset))  # type: ignore[arg-type]
            else:
                keys = [(rest[i], int(rest[i + 1])) for i in range(0, len(rest), 2)]
                if kind == "assign":
                    self.ledger.assigned(self.name, keys)
                else:
                    self.ledger.released(self.name, keys, "revoked")
                # The member's callback waits for this: the ledger hears of an assignment before
                # the member reads or commits, and of a revocation before the partition moves.
                assert self.process.stdin is not None
                with contextlib.suppress(OSError):
                    self.process.stdin.write("ack\n")
                    self.process.stdin.flush()

    def kill(self) -> None:
        """SIGKILL: no LeaveGroup, no commit; the ledger hears it crashed once its reports are read."""
        self.process.kill()
        self.process.wait(10)
        self._reader.join(10)
        self.ledger.crashed(self.name)


def _main(bootstrap: str, group: str, topic: str, strategy: str, name: str) -> None:
    consumer = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "classic",
            "partition.assignment.strategy": strategy,
            "client.id": name,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 200,
            "log_level": 3,
        }
    )
    processed: dict[tuple[str, int], int] = {}

    def report(kind: str, partitions: list[ck.TopicPartition]) -> None:
        print(kind, *(f"{tp.topic} {tp.partition}" for tp in partitions), flush=True)
        sys.stdin.readline()  # the driver's "ack": it has recorded the report

    def revoked(consumer: Any, partitions: list[ck.TopicPartition]) -> None:
        done = [
            ck.TopicPartition(tp.topic, tp.partition, processed[(tp.topic, tp.partition)])
            for tp in partitions
            if (tp.topic, tp.partition) in processed
        ]
        if done:
            consumer.commit(offsets=done, asynchronous=False)
        report("revoke", partitions)

    consumer.subscribe([topic], on_assign=lambda c, ps: report("assign", ps), on_revoke=revoked)
    last_commit = time.monotonic()
    while True:
        message = consumer.poll(0.05)
        if message is not None and message.error() is None:
            print("recv", message.topic(), message.partition(), message.offset(), flush=True)
            processed[(message.topic(), message.partition())] = message.offset() + 1
        if time.monotonic() - last_commit > 0.2 and processed:
            last_commit = time.monotonic()
            with contextlib.suppress(ck.KafkaException):  # nothing new to commit
                consumer.commit(asynchronous=True)


if __name__ == "__main__":
    _main(*sys.argv[1:6])
