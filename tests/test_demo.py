"""The demo (the first command of the README) runs to the end and loses nothing, in plaintext and
over TLS (`--security ssl`) and over SASL_SSL with SCRAM-SHA-512 (`--security sasl_ssl`), on three
brokers of which the coordinator's fails mid-run."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("security", ["plaintext", "ssl", "sasl_ssl"])
def test_the_demo_consumes_everything(security: str) -> None:
    command = [
        sys.executable, "-m", "kconsumer", "demo",
        "--duration", "6", "--partitions", "3", "--rate", "300", "--security", security,
    ]  # fmt: skip
    finished = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert finished.returncode == 0, finished.stdout[-2000:] + finished.stderr[-2000:]
    assert f"({security.upper()})" in finished.stdout
    assert ", 0 missing" in finished.stdout
    assert "(every partition's log end)" in finished.stdout  # the members committed what they processed
    # Three brokers by default: the coordinator's broker goes down and comes back mid-run.
    assert "the group's coordinator, goes down" in finished.stdout
    assert "is back" in finished.stdout


def test_the_demo_can_show_the_groups_watch_view() -> None:
    command = [
        sys.executable, "-m", "kconsumer", "demo",
        "--duration", "5", "--partitions", "3", "--rate", "300", "--brokers", "1", "--watch",
    ]  # fmt: skip
    finished = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert finished.returncode == 0, finished.stdout[-2000:] + finished.stderr[-2000:]
    # The last view, taken once the members have caught up, shows the group and its partitions' lag.
    assert "group demo (consumer)" in finished.stdout and "log end" in finished.stdout, (
        finished.stdout[-2000:] + finished.stderr[-3000:]
    )
    assert "Traceback" not in finished.stderr, finished.stderr[-3000:]
    assert "(every partition's log end)" in finished.stdout
    assert ", 0 missing" in finished.stdout
