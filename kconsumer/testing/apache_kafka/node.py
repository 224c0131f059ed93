"""One Apache Kafka node (broker and KRaft controller in one JVM): its configuration file, its
storage formatted with the cluster's id, and the process.

The JVM runs under a small shell guard that kills it when the Python process that started it
goes away (its stdin closes), so a test run that is killed leaves no broker behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .distribution import ApacheKafkaUnavailable, Distribution

#: The JVM's options: a heap big enough for benchmarks, G1 as Kafka's own scripts use, and the
#: class data sharing archive (written by the first start, read by the later ones) when given.
_JVM_OPTIONS = (
    "-Xms256m",
    "-Xmx1g",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
)

# Runs the JVM ("$@") in the background, prints its pid, then kills it as soon as the guard's
# stdin (a pipe from the Python process) closes, and exits with the JVM's status otherwise.
_GUARD = """
exec 3<&0
"$@" </dev/null &
child=$!
echo "$child"
( read -r _ignored <&3; kill -KILL "$child" 2>/dev/null ) &
exec 3<&-
wait "$child"
"""

_LOG4J = """\
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.state.name = state.change.logger
logger.state.level = WARN
"""

_LOG_TAIL_LINES = 40


@dataclass(frozen=True)
class NodePorts:
    """The ports of one node: clients' listener, the harness's PLAINTEXT listener (the same as
    the client one when that is PLAINTEXT) and the controller's."""

    client: int
    harness: int
    controller: int


class KafkaNode:
    """One node's directory, configuration and process."""

    def __init__(
        self,
        node_id: int,
        directory: Path,
        distribution: Distribution,
        properties: Mapping[str, str],
        *,
        jvm_options: Sequence[str] = (),
    ) -> None:
        self.node_id = node_id
        self.directory = directory
        self.distribution = distribution
        self.properties = dict(properties)
        self.jvm_options = tuple(jvm_options)
        self.config_file = directory / "server.properties"
        self.log_file = directory / "server.log"
        self._guard: subprocess.Popen[bytes] | None = None
        self._pid: int | None = None
        self._console: Path = directory / "console.log"

    # -- storage ---------------------------------------------------------------------------------

    def write_config(self) -> None:
        """Write ``server.properties`` and the Log4j 2 configuration of this node."""
        self.directory.mkdir(parents=True, exist_ok=True)
        lines = [f"{key}={value}" for key, value in sorted(self.properties.items())]
        self.config_file.write_text("\n".join(lines) + "\n")
        (self.directory / "log4j2.properties").write_text(_LOG4J.format(log=self.log_file))

    def format_command(self, cluster_id: str, scram: Sequence[str] = ()) -> list[str]:
        """The storage tool's command formatting this node's log directory for `cluster_id`,
        with SCRAM credentials (``SCRAM-SHA-512=[name=alice,password=secret]``) stored at once."""
        command = [
            *self._java(),
            "kafka.tools.StorageTool",
            "format",
            "--ignore-formatted",
            "-t",
            cluster_id,
            "-c",
            str(self.config_file),
        ]
        for credential in scram:
            command += ["--add-scram", credential]
        return command

    # -- process ---------------------------------------------------------------------------------

    def _java(self) -> list[str]:
        return [
            str(self.distribution.java),
            *_JVM_OPTIONS,
            *self.jvm_options,
            f"-Dlog4j2.configurationFile={self.directory / 'log4j2.properties'}",
            "-cp",
            self.distribution.classpath,
        ]

    def start(self) -> None:
        """Start the node's JVM (it is not ready until `alive` and the cluster says so)."""
        if self.running:
            raise RuntimeError(f"node {self.node_id} is already running")
        console = self._console.open("ab")
        try:
            self._guard = subprocess.Popen(
                ["sh", "-c", _GUARD, "kafka-node", *self._java(), "kafka.Kafka", str(self.config_file)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=console,
                start_new_session=True,
            )
        finally:
            console.close()
        assert self._guard.stdout is not None
        line = self._guard.stdout.readline().strip()
        if not line.isdigit():
            self._guard.kill()
            raise ApacheKafkaUnavailable(f"node {self.node_id}: the JVM did not start ({line!r})")
        self._pid = int(line)

    @property
    def running(self) -> bool:
        """Whether the JVM has been started and has not exited."""
        return self._guard is not None and self._guard.poll() is None

    def exit_status(self) -> int | None:
        """The JVM's exit status once it has exited (None while it runs or before a start)."""
        return None if self._guard is None else self._guard.poll()

    def stop(self, *, graceful: bool = True, timeout: float = 30.0) -> None:
        """Stop the JVM: SIGTERM (Kafka's controlled shutdown: leadership moves first) and, past
        `timeout` or when not `graceful`, SIGKILL. Idempotent."""
        guard, pid = self._guard, self._pid
        if guard is None or pid is None:
            return
        if guard.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM if graceful else signal.SIGKILL)
            try:
                guard.wait(timeout if graceful else 10.0)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                guard.wait(10.0)
        for stream in (guard.stdin, guard.stdout):
            if stream is not None:
                stream.close()
        self._guard = None
        self._pid = None

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        """The last lines of the node's log (and of its console, where the JVM writes before
        logging starts), for error messages."""
        parts = []
        for path in (self._console, self.log_file):
            try:
                text = path.read_text(errors="replace")
            except OSError:
                continue
            tail = text.strip().splitlines()[-lines:]
            if tail:
                parts.append(f"--- {path.name} (last {len(tail)} lines) ---\n" + "\n".join(tail))
        return "\n".join(parts) or "(the node wrote no log)"


def run_formats(nodes: Sequence[KafkaNode], cluster_id: str, scram: Sequence[str] = ()) -> None:
    """Format every node's storage (in parallel: each is a JVM start)."""
    started = time.monotonic()
    processes = [
        (
            node,
            subprocess.Popen(
                node.format_command(cluster_id, scram), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
            ),
        )
        for node in nodes
    ]
    for node, process in processes:
        output, _ = process.communicate(timeout=max(10.0, 120.0 - (time.monotonic() - started)))
        if process.returncode != 0:
            text = output.decode(errors="replace").strip().splitlines()[-15:]
            raise ApacheKafkaUnavailable(
                f"formatting node {node.node_id}'s storage failed:\n" + "\n".join(text)
            )
