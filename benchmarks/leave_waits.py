"""After each leave of a traced rebalance run, how long each remaining member waited for its next
heartbeat: the wait that decides a leave's unowned partition-seconds, read from the heartbeats
themselves rather than from the callbacks.

``python -m benchmarks.leave_waits <folder>`` reads the folder a run made with
``KCONSUMER_BENCH_TRACE=<folder>`` (`benchmarks.member_trace`): kconsumer members' traces
(``m<N>.log``: every heartbeat the member core sent), confluent-kafka members' librdkafka logs
(``m<N>.rdkafka.log``) and Java members' client logs (``m<N>.java.log``), all on the monotonic
clock of the benchmark's parent. For each leave (a heartbeat with member epoch -1, or -2 for a
static member) it prints, per client, the waits of the members that were heartbeating around it,
from the leave to each one's next heartbeat; then the mean over the client's leaves of their mean
wait.

A freed partition is owned again when its new owner's next heartbeat brings it, so a leave's
unowned partition-seconds are the sum of these waits, one per partition moved. Whatever the
client, a wait is on average half a heartbeat interval when leaves fall at random points of the
members' cycles; kconsumer's members, heartbeating together (docs/heartbeat-alignment.md), all
wait the same time in one leave, other clients' members each their own.

A librdkafka log is rewritten by each member process of that name, so in a folder of several
runs it holds the last one only; kconsumer traces and Java logs keep every run.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import os
import re
import statistics
from dataclasses import dataclass

#: (monotonic time a heartbeat was sent, whether it was a leave: member epoch -1, or -2 for a
#: static member).
Heartbeat = tuple[float, bool]

#: A member heartbeating around a leave had sent a heartbeat this long before it at most.
AROUND_S = 1.5

_KCONSUMER = re.compile(r"SendHeartbeat\(request_id=\d+, member_epoch=(-?\d+)")
_LIBRDKAFKA = re.compile(r"ConsumerGroupHeartbeat of member id .*?generation id (-?\d+)")
_JAVA = re.compile(r"Sending CONSUMER_GROUP_HEARTBEAT request.*?memberEpoch=(-?\d+)")
_JAVA_TIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d{4})")


@dataclass
class Leave:
    """One leave: when the leaving member's heartbeat went, and each remaining member's wait."""

    client: str
    at: float
    member: str
    waits: list[float]


def kconsumer_heartbeats(lines: list[str]) -> list[Heartbeat]:
    """A kconsumer member trace's heartbeats (lines start with the monotonic time)."""
    beats = []
    for line in lines:
        if " event " not in line:
            continue
        for match in _KCONSUMER.finditer(line):
            beats.append((float(line.split(" ", 1)[0]), int(match.group(1)) < 0))
    return beats


def _offset(lines: list[str]) -> float:
    """The monotonic clock minus the wall clock, from a client log's first line."""
    if not lines or not lines[0].startswith("monotonic-minus-wall "):
        raise ValueError("not a member trace's client log: no monotonic-minus-wall first line")
    return float(lines[0].split()[1])


def librdkafka_heartbeats(lines: list[str]) -> list[Heartbeat]:
    """A librdkafka log's heartbeats (``%7|<wall seconds>|HEARTBEAT|...`` lines)."""
    offset, beats = _offset(lines), []
    for line in lines[1:]:
        match = _LIBRDKAFKA.search(line)
        if match:
            beats.append((float(line.split("|")[1]) + offset, int(match.group(1)) < 0))
    return beats


def java_heartbeats(lines: list[str]) -> list[Heartbeat]:
    """A Java consumer log's heartbeats (its NetworkClient's requests, wall-clock milliseconds)."""
    offset, beats = _offset(lines), []
    for line in lines[1:]:
        match, when = _JAVA.search(line), _JAVA_TIME.match(line)
        if match and when:
            wall = datetime.datetime.strptime(when.group(1), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()
            beats.append((wall + offset, int(match.group(1)) < 0))
    return beats


#: Client name, file suffix, reader.
CLIENT_LOGS = (
    ("kconsumer", ".log", kconsumer_heartbeats),
    ("confluent-kafka", ".rdkafka.log", librdkafka_heartbeats),
    ("Java", ".java.log", java_heartbeats),
)


def read_folder(folder: str) -> dict[str, dict[str, list[Heartbeat]]]:
    """Every member's heartbeats, by client and member name."""
    clients: dict[str, dict[str, list[Heartbeat]]] = {}
    for path in sorted(glob.glob(os.path.join(folder, "m*.log"))):
        base = os.path.basename(path)
        for client, suffix, reader in sorted(CLIENT_LOGS, key=lambda c: -len(c[1])):
            if base.endswith(suffix):
                with open(path, errors="replace") as file:
                    beats = reader(file.read().splitlines())
                if beats:
                    clients.setdefault(client, {})[base[: -len(suffix)]] = sorted(beats)
                break
    return clients


def leaves(client: str, members: dict[str, list[Heartbeat]]) -> list[Leave]:
    """Each leave among `members` (one client's) with the waits of the members around it."""
    found = []
    for name, beats in members.items():
        for at, is_leave in beats:
            if not is_leave:
                continue
            waits = []
            for other, theirs in members.items():
                if other == name:
                    continue
                before = [t for t, gone in theirs if at - AROUND_S <= t <= at and not gone]
                after = [t for t, gone in theirs if t > at and not gone]
                if before and after and after[0] - at <= AROUND_S:
                    waits.append(after[0] - at)
            if waits:
                found.append(Leave(client, at, name, sorted(waits)))
    return sorted(found, key=lambda leave: leave.at)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.leave_waits", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("folder", help="the KCONSUMER_BENCH_TRACE folder of a rebalance run")
    args = parser.parse_args(argv)
    for client, members in read_folder(args.folder).items():
        found = leaves(client, members)
        if not found:
            continue
        print(f"{client}: {len(found)} leaves")
        for leave in found:
            waits = ", ".join(f"{w:.3f}" for w in leave.waits)
            mean = statistics.mean(leave.waits)
            print(f"  {leave.at:12.3f} {leave.member:>5}: waits {waits} (mean {mean:.3f} s)")
        means = [statistics.mean(leave.waits) for leave in found]
        overall, median = statistics.mean(means), statistics.median(means)
        print(f"  mean wait over the leaves {overall:.3f} s (median {median:.3f})")


if __name__ == "__main__":
    main()
