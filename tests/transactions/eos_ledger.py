"""The exactly-once ledger: every input record appears in the committed output exactly once.

Workers key each output record ``topic/partition/offset`` of the input record it came from; the
ledger reads the output topic back with a read_committed reader and compares those keys with the
offsets produced to the input: a key seen twice is a duplicate (a batch committed twice), a key
never seen is a loss. The group's committed input offsets must be the input's end offsets.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import confluent_kafka as ck
from exactly_once import committed_output

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "exactly_once.py"


class InputFeeder:
    """Produces numbered records to every partition of the input, a few every 20 ms, until stopped."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, per_round: int = 8) -> None:
        self._bootstrap = bootstrap
        self._producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 2})
        self._topic, self._partitions, self._per_round = topic, partitions, per_round
        self.produced: dict[int, int] = dict.fromkeys(range(partitions), 0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="input-feeder", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        number = 0
        while not self._stop.is_set():
            for _ in range(self._per_round):
                self._producer.produce(
                    self._topic, value=b"r%d" % number, partition=number % self._partitions
                )
                number += 1
            self._producer.poll(0)
            time.sleep(0.02)

    def stop(self) -> dict[int, int]:
        """Stop and flush; the number of records in each partition."""
        self._stop.set()
        self._thread.join(10)
        assert self._producer.flush(30) == 0, "input records left unsent"
        return self._ends()

    def _ends(self) -> dict[int, int]:
        probe = ck.Consumer({"bootstrap.servers": self._bootstrap, "group.id": "eos-ledger-probe"})
        try:
            return {
                p: probe.get_watermark_offsets(ck.TopicPartition(self._topic, p), timeout=10)[1]
                for p in range(self._partitions)
            }
        finally:
            probe.close()


class Worker:
    """One `examples/exactly_once.py` worker process; its report lines in `lines`."""

    def __init__(self, bootstrap: str, group: str, source: str, sink: str, tid: str, *options: str) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                str(EXAMPLE),
                "worker",
                "--bootstrap-servers",
                bootstrap,
                "--group",
                group,
                "--source",
                source,
                "--sink",
                sink,
                "--transactional-id",
                tid,
                "--batch",
                "40",
                *options,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.strip())

    def committed(self) -> int:
        return sum(1 for line in self.lines if line.startswith("committed"))

    def stop(self) -> int:
        """Ask it to finish (close its stdin); its exit status."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            return self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(10)

    def stderr(self) -> str:
        assert self.process.stderr is not None
        return self.process.stderr.read()[-3000:] if self.process.poll() is not None else ""


def check_exactly_once(
    bootstrap: str, source: str, sink: str, ends: dict[int, int], partitions: int
) -> tuple[int, list[str]]:
    """(records checked, problems) of the committed output against the input's `ends`."""
    keys = Counter(k.decode() for k in committed_output(bootstrap, sink, partitions))
    wanted = {f"{source}/{p}/{o}" for p, end in ends.items() for o in range(end)}
    problems = [f"{key} committed {count} times" for key, count in sorted(keys.items()) if count > 1]
    missing = sorted(wanted - set(keys))
    if missing:
        problems.append(f"{len(missing)} input records never in the committed output, first {missing[:5]}")
    unexpected = sorted(set(keys) - wanted)
    if unexpected:
        problems.append(f"output keys of no input record: {unexpected[:5]}")
    return len(wanted), problems


def wait_for_output(bootstrap: str, sink: str, partitions: int, expected: int, timeout: float) -> int:
    """Wait until the committed output has `expected` distinct keys; how many it has."""
    deadline = time.monotonic() + timeout
    count = 0
    while time.monotonic() < deadline:
        count = len(set(committed_output(bootstrap, sink, partitions)))
        if count >= expected:
            return count
        time.sleep(1)
    return count
