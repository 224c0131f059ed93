"""A consumer group member of another implementation (the Java client, franz-go) in its own
process, feeding a `Ledger` from its reports (see the line protocol in `java/KafkaPeer.java`).

Every assigned, revoked or lost report is recorded in the ledger *before* the peer's callback
returns (the peer waits for our "ack"): the ledger learns of an assignment (and samples the
committed offset) before the peer reads or commits, and of a release before the partition can
move, as with the in-process members.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import Any

from ledger import Key, Ledger, RecordAt

from kconsumer import SubscriptionPattern


class PeerMember:
    """The peer's process and the thread reading its reports into `ledger`."""

    def __init__(
        self,
        command: Sequence[str],
        ledger: Ledger,
        name: str,
        bootstrap: str,
        group: str,
        topics: Sequence[str] | SubscriptionPattern,
        *,
        instance_id: str | None = None,
        commit_every_ms: int = 200,
        properties: dict[str, str] | None = None,
    ) -> None:
        self.ledger = ledger
        self.name = name
        args = [*command, "consume", "--bootstrap", bootstrap, "--group", group, "--name", name]
        if isinstance(topics, SubscriptionPattern):
            args += ["--pattern", topics.pattern]
        else:
            args += ["--topics", ",".join(topics)]
        if instance_id is not None:
            args += ["--instance-id", instance_id]
        args += ["--commit-every-ms", str(commit_every_ms)]
        for key, value in (properties or {}).items():
            args += ["--prop", f"{key}={value}"]
        self.errors: list[str] = []
        self.records = 0
        self.ready = threading.Event()
        self.closed = threading.Event()
        self.process = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1
        )
        self._stderr: list[str] = []
        self._reader = threading.Thread(target=self._read, name=f"{name}-reports", daemon=True)
        self._reader.start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def owned(self) -> set[Key]:
        return self.ledger.owned_by(self.name)

    def _send(self, line: str) -> None:
        stdin = self.process.stdin
        if stdin is None:
            return
        with contextlib.suppress(BrokenPipeError, ValueError, OSError):
            stdin.write(line + "\n")
            stdin.flush()

    def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        for line in stdout:
            try:
                report: dict[str, Any] = json.loads(line)
            except ValueError:
                self.errors.append(f"unreadable report: {line!r}")
                continue
            event = report["event"]
            keys = [(t, p) for t, p in report.get("partitions", [])]
            if event == "record":
                self.records += 1
                self.ledger.received(
                    self.name, RecordAt(report["topic"], report["partition"], report["offset"])
                )  # type: ignore[arg-type]
            elif event == "assigned":
                self.ledger.assigned(self.name, keys)
                self._send("ack")
            elif event == "revoked":
                raw = report.get("committed")
                committed = None if raw is None else {(t, p): o for t, p, o in raw}
                self.ledger.released(self.name, keys, "revoked", committed)
                self._send("ack")
            elif event == "lost":
                self.ledger.released(self.name, keys, "lost")
                self._send("ack")
            elif event == "ready":
                self.ready.set()
            elif event == "closed":
                self.closed.set()
            elif event == "error":
                self.errors.append(report.get("message", ""))

    def _drain_stderr(self) -> None:
        stderr = self.process.stderr
        assert stderr is not None
        for line in stderr:
            self._stderr.append(line.rstrip())
            del self._stderr[:-50]

    def wait_ready(self, timeout: float = 60.0) -> None:
        if not self.ready.wait(timeout):
            raise AssertionError(f"{self.name} did not start: {self.stderr_tail()}")

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr[-20:])

    def close(self, timeout: float = 60.0) -> None:
        """Leave the group (the peer's own close) and wait for the process to end."""
        if self.process.poll() is None:
            self._send("close")
            deadline = time.monotonic() + timeout
            while not self.closed.is_set() and self.process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            self.closed.wait(max(0.0, deadline - time.monotonic()))
        self._finish()

    def crash(self) -> None:
        """Kill the process: no leave, no commit (the coordinator notices at the session timeout).
        The ledger hears of the crash once the process's last reports are read: records it
        received before it died were received while it owned their partitions."""
        if self.process.poll() is None:
            self.process.kill()
        self._finish()
        self.ledger.crashed(self.name)

    def _finish(self) -> None:
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
        self._reader.join(10)
