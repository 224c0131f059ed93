"""``python -m kconsumer.testing.sim``: replay, sweep, and argument errors."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kconsumer.testing.sim.__main__ import main


def test_replay_prints_the_trace_and_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "seed   3 faults:" in out and "phase  faults stop" in out
    assert "seed 3: ok" in out and "trace hash " in out


def test_quiet_replay_prints_only_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--seed", "3", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("seed 3: ok") and "phase" not in out


def test_a_failing_seed_s_replay_line_names_its_protocols() -> None:
    """A mixed seed replayed without ``--protocols mixed`` runs another world (seed 1301784's
    report said to replay it as a consumer-only seed, which passed)."""
    from dataclasses import replace

    from kconsumer.testing.sim.invariants import Violation
    from kconsumer.testing.sim.world import run_seed

    broken = [Violation("fetch-not-owner", 1, "for the report")]
    mixed = replace(run_seed(3, protocols="mixed"), violations=broken)
    assert "replay: python -m kconsumer.testing.sim --seed 3 --protocols mixed" in mixed.report()
    consumer = replace(run_seed(3), violations=broken)
    assert consumer.report().rstrip().endswith("replay: python -m kconsumer.testing.sim --seed 3")


def test_sweep_prints_a_progress_bar_and_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--seeds", "10:13"]) == 0
    captured = capsys.readouterr()
    assert "3/3 seeds, 0 failing" in captured.err
    assert "seeds 10..12: 3 run, 0 with violations" in captured.out
    assert "faults (seeds with it on / times injected):" in captured.out


def test_faults_restrict_the_mix(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--seed", "4", "--quiet", "--faults", "failover,crash"]) == 0
    assert "faults: failoverx" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["--seeds", "5"],
        ["--seeds", "5:5"],
        ["--seed", "1", "--spark"],
        ["--seed", "1", "--faults", "nope"],
        [],
    ],
)
def test_bad_arguments_are_refused(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2


def test_a_violation_exits_with_status_1(monkeypatch: pytest.MonkeyPatch) -> None:
    from mutations import coordinator_releases_before_ack

    coordinator_releases_before_ack(monkeypatch)
    assert main(["--seed", "0", "--quiet"]) == 1


def test_runs_as_a_module() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "kconsumer.testing.sim", "--seed", "2", "--quiet"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.startswith("seed 2: ok")
