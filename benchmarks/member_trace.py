"""The rebalance benchmark's member trace (``KCONSUMER_BENCH_TRACE``): each member process
writes its callbacks and, for kconsumer, the ``kconsumer.trace`` lines of its member, with
monotonic times (the parent's reports use the same clock); a confluent-kafka member writes
librdkafka's group and protocol debug lines beside them, a Java consumer its client's request and
membership debug lines. A hand-over reads request by request, for each client."""

from __future__ import annotations

import logging
import os
import time
from typing import IO, Any

#: Set to a folder, each kconsumer member writes its member's trace there (``<name>.log``: the
#: ``kconsumer.trace`` lines, each event and effect of the member with its monotonic time, and
#: its callbacks): the hand-over of a rebalance request by request, on the parent's clock.
TRACE_VARIABLE = "KCONSUMER_BENCH_TRACE"


def _trace_to(directory: str, name: str) -> logging.Logger:
    """Send the ``kconsumer`` and ``kconsumer.trace`` logs of this process to `directory`/`name`.log
    with monotonic times; returns the trace logger."""

    class Monotonic(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            record.monotonic = time.monotonic()
            return True

    handler = logging.FileHandler(os.path.join(directory, f"{name}.log"))
    handler.addFilter(Monotonic())
    handler.setFormatter(logging.Formatter("%(monotonic).4f %(threadName)s %(message)s"))
    trace = logging.getLogger("kconsumer.trace")
    trace.setLevel(logging.DEBUG)
    kconsumer = logging.getLogger("kconsumer")
    kconsumer.setLevel(logging.INFO)
    kconsumer.addHandler(handler)  # the trace logger's records reach it too
    return trace


def trace_callbacks(callback: Any, directory: str, name: str) -> Any:
    """Start tracing this member process to `directory`/`name`.log; returns `callback` (a
    report factory) whose reports are traced too."""
    trace = _trace_to(directory, name)

    def traced(what: str) -> Any:
        report = callback(what)

        def both(consumer: Any, partitions: list[Any]) -> None:
            trace.debug("callback %s %s", what, [tp.partition for tp in partitions])
            report(consumer, partitions)

        return both

    return traced


def _wall_clock_log(directory: str, filename: str) -> str:
    """Open `directory`/`filename` for a client's own log lines, which carry wall-clock times, and
    add a line giving this process's monotonic clock minus the wall clock; the lines after it are
    this process's (a later member of the same name in another run adds its own). Returns its path."""
    path = os.path.join(directory, filename)
    with open(path, "a") as out:
        out.write(f"monotonic-minus-wall {time.monotonic() - time.time():.6f}\n")
    return path


def librdkafka_trace(directory: str, name: str) -> dict[str, Any]:
    """For a confluent-kafka member: librdkafka's own log lines (group and protocol debugging:
    every request sent and answer received) go to `directory`/`name`.rdkafka.log, the process's
    standard error, written by librdkafka's threads as they happen (wall-clock times, after a line
    giving this process's monotonic clock minus the wall clock, to set them beside the reports).
    Returns the settings to add to the consumer's configuration."""
    path = _wall_clock_log(directory, f"{name}.rdkafka.log")
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.dup2(descriptor, 2)
    os.close(descriptor)
    return {"debug": "cgrp,protocol"}


#: The Java client's loggers a hand-over is read from (slf4j-simple names, at DEBUG): every request
#: sent and answer received (heartbeats, offset fetches, fetches), the membership manager's steps
#: (target updated, reconciling, callbacks, state changes), the heartbeat and commit managers.
JAVA_TRACED_LOGGERS = (
    "org.apache.kafka.clients.NetworkClient",
    "org.apache.kafka.clients.consumer.internals.ConsumerMembershipManager",
    "org.apache.kafka.clients.consumer.internals.ConsumerHeartbeatRequestManager",
    "org.apache.kafka.clients.consumer.internals.CommitRequestManager",
)


def java_trace(directory: str, name: str) -> tuple[list[str], IO[str]]:
    """For a Java consumer member: the JVM options that log its hand-over (`JAVA_TRACED_LOGGERS`
    at DEBUG, wall-clock times in milliseconds) and the file to give the JVM as standard error,
    `directory`/`name`.java.log, its lines after one giving this process's monotonic clock minus
    the wall clock (as `librdkafka_trace`'s)."""
    path = _wall_clock_log(directory, f"{name}.java.log")
    out = open(path, "a")  # noqa: SIM115 - the JVM's standard error, closed by the caller
    options = [f"-Dorg.slf4j.simpleLogger.log.{logger}=debug" for logger in JAVA_TRACED_LOGGERS]
    options += [
        "-Dorg.slf4j.simpleLogger.showDateTime=true",
        "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSSZ",
    ]
    return options, out
