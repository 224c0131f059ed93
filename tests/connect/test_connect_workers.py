"""Kafka Connect 4.4's distributed worker (a peer nobody here wrote) on the reference cluster:
two workers form a classic group of protocol type ``connect`` (Connect's incremental cooperative
``sessioned`` protocol), create their compacted internal topics, run a connector's tasks, and
hand the tasks over when one worker stops cleanly and when one is killed. And the migration with
them: a kconsumer worker on the new protocol converts their group into a worker group, the
Connect workers follow the coordinator's assignments inside it, and get the group back when it
leaves.

The hand-over test runs on both backends, Apache Kafka 4.4 and the reference cluster: the same
workers, the same steps, the same checks. What it proves about the reference cluster: classic
groups for a protocol type other than ``consumer`` (Connect's own JoinGroup metadata and
assignments, passed through untouched), CreateTopics with configs, the idempotent producers and
offset-storage reads Connect relies on, all as Kafka answers them. The migration test is the
reference cluster's alone (worker groups are the Connect seed's, which Kafka has not shipped).

The ledger: every task's lines carry a sequence number resumed from the source offsets Connect
stores; after the hand-overs each task's sequence has no gap (at least once: a line may repeat
after a kill, none may be missing).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from backends import Cluster, node_logs, open_cluster, stable_classic_group
from waiting import wait_until

from kconsumer.assignment.connect_protocol import decode_assignment, decode_worker_state
from kconsumer.testing import ApacheKafka, ReferenceCluster

pytestmark = pytest.mark.timeout(240)

# The worker's runtime logs its start, rebalances and shutdown steps, timed, so that a failure's
# message (the log's tail) says where the worker spent its time.
LOG_OPTIONS = [
    "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.connect.runtime=info",
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
]
TOPIC = "ticks"
GROUP = "connect-cluster"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ConnectWorker:
    """One `ConnectDistributed` process, its REST port and its log."""

    def __init__(self, command: list[str], cluster: Cluster, directory: Path, name: str) -> None:
        self.command = command
        self.port = free_port()
        self.log = directory / f"{name}.log"
        properties = directory / f"{name}.properties"
        properties.write_text(
            "\n".join(
                [
                    f"bootstrap.servers={cluster.bootstrap_servers}",
                    f"group.id={GROUP}",
                    "key.converter=org.apache.kafka.connect.storage.StringConverter",
                    "value.converter=org.apache.kafka.connect.storage.StringConverter",
                    "config.storage.topic=connect-configs",
                    "offset.storage.topic=connect-offsets",
                    "status.storage.topic=connect-status",
                    "config.storage.replication.factor=1",
                    "offset.storage.replication.factor=1",
                    "status.storage.replication.factor=1",
                    f"listeners=http://127.0.0.1:{self.port}",
                    "session.timeout.ms=6000",
                    "heartbeat.interval.ms=1000",
                    "scheduled.rebalance.max.delay.ms=2000",
                    "offset.flush.interval.ms=500",
                ]
            )
        )
        with self.log.open("w") as log:
            arguments = [command[0], *LOG_OPTIONS, *command[1:], str(properties)]
            self.process = subprocess.Popen(arguments, stdout=log, stderr=subprocess.STDOUT)

    @property
    def worker_id(self) -> str:
        return f"127.0.0.1:{self.port}"

    def rest(self, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", data=data, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read() or b"null")

    def wait_up(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the worker exited: {self.log.read_text()[-3000:]}")
            try:
                self.rest("/")
                return
            except OSError:
                time.sleep(0.5)
        raise AssertionError(f"the worker's REST API did not come up: {self.log.read_text()[-3000:]}")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Signal the worker and wait for it to exit; if it does not within a minute, fail with
        its log's tail and a thread dump (what its shutdown is waiting on), then kill it."""
        if self.process.poll() is not None:
            return
        os.kill(self.process.pid, sig)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            dump = subprocess.run(
                ["jstack", str(self.process.pid)], capture_output=True, text=True, timeout=30, check=False
            ).stdout
            self.process.kill()
            self.process.wait(10)
            raise AssertionError(
                f"the worker did not stop within 60 s of signal {sig}:\n{self.log.read_text()[-6000:]}\n"
                f"its threads:\n{dump}"
            ) from None


@contextlib.contextmanager
def two_workers(cluster: Cluster, command: list[str], directory: Path) -> Iterator[list[ConnectWorker]]:
    """Two Connect workers on `cluster` (with the connector's topic), killed when done."""
    cluster.create_topic(TOPIC, 2)
    started = [ConnectWorker(command, cluster, directory, f"worker-{i}") for i in (1, 2)]
    try:
        for worker in started:
            worker.wait_up()
        yield started
    finally:
        for worker in started:
            worker.stop(signal.SIGKILL)


@contextlib.contextmanager
def broker_side(cluster: Cluster) -> Iterator[None]:
    """A failure inside carries the cluster's side: the topics it lists and, on Apache Kafka,
    each node's log lines about the connector's topic (its creation, any deletion) and the end of
    its log. (A CI run once found the connector's topic unknown to Kafka right after its creation.)"""
    try:
        yield
    except BaseException as failure:
        failure.add_note(f"the cluster's topics: {cluster.topics()}")
        if isinstance(cluster, ApacheKafka):
            for node_id in cluster.brokers():
                log = cluster.node_log(node_id, lines=20_000).splitlines()
                about = [line for line in log if TOPIC in line]
                heading = f"=== node {node_id}: {len(about)} lines about {TOPIC!r} ==="
                failure.add_note("\n".join([heading, *about[-60:]]))
            failure.add_note(node_logs(cluster, lines=80))
        raise


@pytest.fixture
def workers(
    backend: str, connect_worker_command: list[str], tmp_path: Path
) -> Iterator[tuple[Cluster, list[ConnectWorker]]]:
    """Two Connect workers on a cluster of each backend (their group's timers are the workers'
    own, set in their properties: a classic group's session and heartbeat are its members')."""
    with open_cluster(backend) as cluster, two_workers(cluster, connect_worker_command, tmp_path) as started:
        yield cluster, started


@pytest.fixture
def reference_workers(
    connect_worker_command: list[str], tmp_path: Path
) -> Iterator[tuple[ReferenceCluster, list[ConnectWorker]]]:
    """Two Connect workers on a reference cluster."""
    with ReferenceCluster() as cluster, two_workers(cluster, connect_worker_command, tmp_path) as started:
        yield cluster, started


def task_placement(worker: ConnectWorker) -> dict[str, str]:
    """Where the connector and each of its tasks run ("connector" and task ids), once RUNNING."""
    status = worker.rest("/connectors/ticks/status")
    placed = (
        {"connector": status["connector"]["worker_id"]} if status["connector"]["state"] == "RUNNING" else {}
    )
    placed.update({str(t["id"]): t["worker_id"] for t in status["tasks"] if t["state"] == "RUNNING"})
    return placed


def wait_placement(worker: ConnectWorker, ok: Any, timeout: float = 60) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    placed: dict[str, str] = {}
    while time.monotonic() < deadline:
        try:
            placed = task_placement(worker)
        except OSError:
            placed = {}
        if len(placed) == 4 and ok(placed):
            return placed
        time.sleep(0.5)
    raise AssertionError(f"placement never settled: {placed}\n{worker.log.read_text()[-2000:]}")


def lines(cluster: Cluster) -> dict[str, list[int]]:
    """Each task's sequence numbers found in the topic."""
    found: dict[str, list[int]] = {}
    for partition in range(2):
        for record in cluster.records(TOPIC, partition):
            task, sequence = record.value.decode().rsplit("-", 1)
            found.setdefault(task, []).append(int(sequence))
    return found


def assert_no_gaps(found: dict[str, list[int]]) -> None:
    for task, sequences in found.items():
        assert set(sequences) == set(range(max(sequences) + 1)), f"{task} lost lines"


def assert_connect_protocol_reads(cluster: Cluster, spread: dict[str, str], workers: set[str]) -> None:
    """kconsumer's codec of Connect's protocol (`connect_protocol`, which the reference
    coordinator uses to convert a classic connect group) reads what Connect 4.4 wrote, as the
    coordinator describes the group: each member's JoinGroup metadata (its REST url, config offset
    and allocation) and its SyncGroup assignment, and together they place the connector and its
    tasks where Connect says they run."""
    group = stable_classic_group(cluster, GROUP)
    runs: dict[str, set[str]] = {}
    for member in group.members.values():
        state = decode_worker_state(member.metadata(group.protocol_name))
        assert state.url.rstrip("/").removeprefix("http://") in workers, state.url
        assert state.config_offset >= 0
        assignment = decode_assignment(member.assignment)
        assert assignment.leader in group.members and assignment.error == 0
        worker = state.url.rstrip("/").removeprefix("http://")
        runs[worker] = set(state.runs | assignment.assigned) - set(assignment.revoked)
    expected: dict[str, set[str]] = {}
    for unit, worker in spread.items():
        expected.setdefault(worker, set()).add("ticks" if unit == "connector" else f"ticks-{unit}")
    assert runs == expected, (runs, expected)


def test_a_connect_cluster_runs_and_hands_tasks_over(workers: tuple[Cluster, list[ConnectWorker]]) -> None:
    cluster, (first, second) = workers
    with broker_side(cluster):
        hand_tasks_over(cluster, first, second)


def hand_tasks_over(cluster: Cluster, first: ConnectWorker, second: ConnectWorker) -> None:
    """Run the connector on both workers, stop one cleanly, start another and kill it; each time
    the tasks move, and no task's sequence has a gap."""
    create_ticks(first)
    spread = wait_placement(first, lambda p: set(p.values()) == {first.worker_id, second.worker_id})
    group = stable_classic_group(cluster, GROUP)
    assert group.protocol_type == "connect" and len(group.members) == 2
    assert group.protocol_name in ("sessioned", "compatible")
    deadline = time.monotonic() + 10  # the group's last generation may still be completing
    while True:
        try:
            assert_connect_protocol_reads(cluster, spread, {first.worker_id, second.worker_id})
            break
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)

    second.stop()  # a clean stop: it leaves the group, its tasks move at once
    wait_placement(first, lambda p: set(p.values()) == {first.worker_id})
    moved = [task for task, where in spread.items() if where == second.worker_id]
    assert moved, spread
    time.sleep(2)
    found = lines(cluster)
    assert {f"ticks-{i}" for i in range(3)} <= set(found), found
    assert_no_gaps(found)

    again = ConnectWorker(second.command, cluster, first.log.parent, "worker-3")
    again.wait_up()
    wait_placement(first, lambda p: set(p.values()) == {first.worker_id, again.worker_id})
    again.stop(signal.SIGKILL)  # a crash: after the session timeout and the scheduled delay
    wait_placement(first, lambda p: set(p.values()) == {first.worker_id}, timeout=90)
    time.sleep(2)
    assert_no_gaps(lines(cluster))
    first.stop()


def create_ticks(worker: ConnectWorker) -> None:
    worker.rest(
        "/connectors",
        {
            "name": "ticks",
            "config": {
                "connector.class": "TickSource",
                "topic": TOPIC,
                "tasks.max": "3",
                "interval.ms": "50",
            },
        },
    )


def task_states(worker: ConnectWorker) -> dict[str, tuple[str, str]]:
    """(state, worker id) of the connector and each task, as Connect's REST API reports them."""
    status = worker.rest("/connectors/ticks/status")
    states = {"ticks": (status["connector"]["state"], status["connector"]["worker_id"])}
    states.update({f"ticks-{t['id']}": (t["state"], t["worker_id"]) for t in status["tasks"]})
    return states


def test_a_kconsumer_worker_converts_a_connect_cluster_s_group_and_hands_it_back(
    reference_workers: tuple[ReferenceCluster, list[ConnectWorker]],
) -> None:
    """Migration with Kafka Connect's own workers: a new-protocol kconsumer worker declaring the
    same units (the connector and its three tasks) joins the Connect cluster's classic group,
    which the reference coordinator converts into a worker group; the two Connect workers go on
    as classic workers inside it, stop the unit the kconsumer worker is given before it starts it,
    and keep the rest running. When the kconsumer worker leaves, the group is a classic group again
    and Connect's own leader runs everything on the Connect workers. No task loses a line."""
    from kconsumer.workers import WorkerGroup

    cluster, (first, second) = reference_workers
    create_ticks(first)
    wait_placement(first, lambda p: set(p.values()) == {first.worker_id, second.worker_id})

    held: list[str] = []
    config = {
        "bootstrap.servers": cluster.bootstrap_servers,
        "group.id": GROUP,
        "rebalance.timeout.ms": 20_000,
        "lease.timeout.ms": 4_000,
        "scheduled.rebalance.max.delay.ms": 0,
    }
    with WorkerGroup(
        config,
        work=lambda: {"ticks": 3},
        on_assigned=lambda units: held.extend(units),
        on_revoked=lambda units: [held.remove(u) for u in units],
    ) as worker:
        deadline = time.monotonic() + 60
        while not held and time.monotonic() < deadline:
            worker.poll(0.2)
        assert held, "the kconsumer worker was given nothing"
        group = cluster.worker_group(GROUP)
        assert group is not None and sum(w.uses_classic for w in group.workers.values()) == 2
        # What it holds no Connect worker runs; the rest runs on the Connect workers.
        states: dict[str, tuple[str, str]] = {}
        for _ in range(40):
            worker.poll(0.25)
            states = task_states(first)
            running = {u for u, (state, _) in states.items() if state == "RUNNING"}
            if running == {"ticks", "ticks-0", "ticks-1", "ticks-2"} - set(held):
                break
        else:
            raise AssertionError(f"kconsumer holds {held}; Connect reports {states}")
    # Its leave hands the group back to Connect: a classic group whose leader assigns everything.
    wait_until(lambda: cluster.classic_group_state(GROUP) is not None, 30)
    wait_placement(first, lambda p: set(p.values()) <= {first.worker_id, second.worker_id}, timeout=90)
    time.sleep(2)
    found = lines(cluster)
    assert {f"ticks-{i}" for i in range(3)} <= set(found), found
    assert_no_gaps(found)
