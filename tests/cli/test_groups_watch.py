"""``kconsumer groups watch`` in a real terminal (tmux): the view redraws as a group rebalances."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from kconsumer import Consumer
from kconsumer.testing import ReferenceCluster

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


class Pane:
    """A detached tmux session on its own server socket, running one command."""

    def __init__(self, command: list[str]) -> None:
        self.socket = f"kconsumer-watch-{uuid.uuid4().hex[:8]}"
        self._tmux("new-session", "-d", "-x", "200", "-y", "50", "-s", "watch", shlex.join(command))

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=10, check=True
        )
        return done.stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "watch")

    def wait_for(self, *texts: str, timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if all(text in screen for text in texts):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"the screen never showed {texts}:\n{screen}")

    def close(self) -> None:
        subprocess.run(
            ["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=10, check=False
        )


@pytest.fixture
def cluster() -> Iterator[ReferenceCluster]:
    with ReferenceCluster(
        heartbeat_interval_ms=100, session_timeout_ms=3000, assignment_interval_ms=0
    ) as started:
        started.create_topic("orders", 4)
        started.produce("orders", [f"v{i}" for i in range(40)])
        yield started


def member(cluster: ReferenceCluster, client_id: str) -> Consumer:
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": "watched",
            "client.id": client_id,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe(["orders"])
    return consumer


def test_watch_redraws_members_epochs_and_lag_through_a_rebalance(cluster: ReferenceCluster) -> None:
    members = [member(cluster, "first-app")]
    stop = threading.Event()

    def poll_members() -> None:  # the members keep polling (and so reconciling) meanwhile
        while not stop.is_set():
            for consumer in list(members):
                consumer.poll(0.02)

    poller = threading.Thread(target=poll_members, daemon=True)
    poller.start()
    command = [sys.executable, "-m", "kconsumer", "groups", "watch", "watched"]
    pane = Pane([*command, "--bootstrap-servers", cluster.bootstrap_servers, "--interval", "0.2"])
    try:
        screen = pane.wait_for(
            "group watched (consumer)", "Stable", "1 members", "first-app", "orders:0,1,2,3"
        )
        assert "lag" in screen

        members.append(member(cluster, "second-app"))
        wait_until_stable(cluster, members=2)
        described = cluster.describe_group("watched")
        assert described is not None
        screen = pane.wait_for(
            "Stable", "2 members", "second-app", f"epoch {described.epoch}/{described.assignment_epoch}"
        )
        assert "first-app" in screen
    finally:
        pane.close()
        stop.set()
        poller.join(timeout=10)
        for consumer in members:
            consumer.close()


def wait_until_stable(cluster: ReferenceCluster, members: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        described = cluster.describe_group("watched")
        if (
            described is not None
            and len(described.members) == members
            and described.state == "Stable"
            and all(m.assignment for m in described.members.values())
        ):
            return
        time.sleep(0.05)
    raise AssertionError(f"the group never became stable with {members} members")
