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

Member names repeat from run to run (every group's first member is ``m1``); each process adds
its lines to its name's files, and a leave's waits are those of the members heartbeating within
`AROUND_S` of it, so the runs of one folder do not mix.
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
_CLOCK = "monotonic-minus-wall "
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


def _clocked(lines: list[str]) -> list[tuple[float, str]]:
    """A client log's lines with the monotonic clock minus the wall clock of the process that
    wrote each (the ``monotonic-minus-wall`` line before it: one per member process of that name)."""
    if not lines or not lines[0].startswith(_CLOCK):
        raise ValueError(f"not a member trace's client log: it does not start with a {_CLOCK.strip()} line")
    clocked, offset = [], 0.0
    for line in lines:
        if line.startswith(_CLOCK):
            offset = float(line.split()[1])
        else:
            clocked.append((offset, line))
    return clocked


def librdkafka_heartbeats(lines: list[str]) -> list[Heartbeat]:
    """A librdkafka log's heartbeats (``%7|<wall seconds>|HEARTBEAT|...`` lines)."""
    beats = []
    for offset, line in _clocked(lines):
        match = _LIBRDKAFKA.search(line)
        if match:
            beats.append((float(line.split("|")[1]) + offset, int(match.group(1)) < 0))
    return beats


def java_heartbeats(lines: list[str]) -> list[Heartbeat]:
    """A Java consumer log's heartbeats (its NetworkClient's requests, wall-clock milliseconds)."""
    beats = []
    for offset, line in _clocked(lines):
        match, when = _JAVA.search(line), _JAVA_TIME.match(line)
        if match and when:
            wall = datetime.datetime.strptime(when.group(1), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()
            beats.append((wall + offset, int(match.group(1)) < 0))
    return beats


#: Client name, file suffix, reader; kconsumer's plain ``.log`` last, as the others end with it too.
CLIENT_LOGS = (
    ("confluent-kafka", ".rdkafka.log", librdkafka_heartbeats),
    ("Java", ".java.log", java_heartbeats),
    ("kconsumer", ".log", kconsumer_heartbeats),
)


def read_folder(folder: str) -> dict[str, dict[str, list[Heartbeat]]]:
    """Every member's heartbeats, by client and member name."""
    clients: dict[str, dict[str, list[Heartbeat]]] = {}
    for path in sorted(glob.glob(os.path.join(folder, "m*.log"))):
        base = os.path.basename(path)
        for client, suffix, reader in CLIENT_LOGS:
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
