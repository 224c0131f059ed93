"""Smoke test of the benchmark suite (``python -m benchmarks``): the pieces that run without a
broker, on tiny inputs, plus one start of librdkafka's mock cluster process. The benchmarks
themselves are not part of the test suite."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("psutil")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # `benchmarks` is a top-level folder, not part of the installed package
    sys.path.insert(0, ROOT)

from benchmarks import __main__ as cli  # noqa: E402
from benchmarks import async_iteration, coordinator_scale, member_trace, rebalance_measure, report  # noqa: E402
from benchmarks.common import broker, machine  # noqa: E402


def test_options_parse_and_reject_unknown_sections() -> None:
    args = cli.parse(["--quick", "--only", "coordinator,idle", "--members", "1,4"])
    assert args.only == ["coordinator", "idle"] and args.members == [1, 4] and args.quick
    with pytest.raises(SystemExit):
        cli.parse(["--only", "nonsense"])


def test_coordinator_pieces_on_a_small_group() -> None:
    rows = coordinator_scale.assignors([100], [5], [10], ["uniform"], repeat=1)
    assert len(rows) == 4 and all(r.ms > 0 for r in rows)
    result = coordinator_scale.heartbeats(members=200, ratio=2, topics=10, rounds=1)
    assert result.heartbeats_per_s > 0 and result.bytes_per_member > 0


def test_every_async_iteration_form_hands_out_every_record() -> None:
    best = async_iteration.measure(records=2_000, repetitions=1)
    assert set(best) == set(async_iteration.forms(1)) and all(0 < ns < 1e6 for ns in best.values())


def test_a_java_members_trace_goes_to_a_file_of_its_own_that_gives_its_clock(tmp_path: pathlib.Path) -> None:
    options, log = member_trace.java_trace(str(tmp_path), "m1")
    log.write("the JVM's standard error\n")
    log.close()
    clock, jvm = (tmp_path / "m1.java.log").read_text().splitlines()
    assert clock.startswith("monotonic-minus-wall ") and float(clock.split()[1])
    assert jvm == "the JVM's standard error"
    debug = {
        o.split("=")[0].removeprefix("-Dorg.slf4j.simpleLogger.log.") for o in options if o.endswith("=debug")
    }
    assert debug == set(member_trace.JAVA_TRACED_LOGGERS)
    assert "-Dorg.slf4j.simpleLogger.showDateTime=true" in options


def test_rebalance_measures_from_an_event_log() -> None:
    events = [
        ("subscribed", 0.0, "a", []),
        ("assign", 0.1, "a", [0, 1]),
        ("records", 0.5, "a", [(0, 0), (1, 0)]),
        ("subscribed", 1.0, "b", []),
        ("revoke", 1.2, "a", [1]),
        ("assign", 1.5, "b", [1]),
        ("records", 1.6, "a", [(0, 1)]),
        ("records", 1.8, "b", [(1, 0), (1, 1)]),
    ]
    full, unowned, gap, duplicates, moved = rebalance_measure.measure(events, 2, since=1.0, until=2.0)
    assert moved == 1 and duplicates == 1
    assert full == pytest.approx(0.8) and unowned == pytest.approx(0.3) and gap == pytest.approx(1.3)
    tl = rebalance_measure.timeline(events, 2)
    assert not rebalance_measure.converged_since(tl, 2, 1.0, 2.0)  # quiet period not over
    assert rebalance_measure.converged_since(tl, 2, 1.0, 1.5 + rebalance_measure.QUIET_S)
    # Partition 1: released 0.2 s after the event, assigned 0.3 s later, first record 0.3 s later.
    release, assign, first = rebalance_measure.handover_phases(events, since=1.0, until=2.0)
    assert (release, assign, first) == pytest.approx((0.2, 0.3, 0.3))


def test_hand_over_phases_of_a_crash_and_of_nothing_moving() -> None:
    events = [
        ("assign", 0.1, "a", [0]),
        ("assign", 0.1, "b", [1]),
        ("dead", 2.0, "b", []),  # killed at 2.0: its partition waits for the session timeout
        ("assign", 8.5, "a", [1]),
        ("records", 8.9, "a", [(1, 5)]),
    ]
    release, assign, first = rebalance_measure.handover_phases(events, since=2.0, until=10.0)
    assert (release, assign, first) == pytest.approx((0.0, 6.5, 0.4))
    nothing = rebalance_measure.handover_phases(events, since=9.0, until=10.0)
    assert all(value != value for value in nothing)  # NaN: no hand-over in the window


def test_repeated_events_wait_one_point_of_every_slice_of_the_heartbeat_interval() -> None:
    from benchmarks.rebalance_phases import HeartbeatPhases

    phases = HeartbeatPhases(15, interval_s=1.0)
    for _block in range(3):  # each 15 waits: one in each fifteenth of the interval
        waits = [phases.next() for _ in range(15)]
        assert sorted(int(w * 15) for w in waits) == list(range(15)), waits
    assert 0.0 <= HeartbeatPhases(1, interval_s=1.0).next() < 1.0


def test_a_cells_events_of_one_kind_are_stratified_over_all_its_runs() -> None:
    from benchmarks.rebalance_phases import PhasePlan

    plan = PhasePlan(repeats=3, runs=3)
    crashes = [plan.phases("kconsumer", "kafka", 4, 16, "crash").next() for _run in range(3)]
    assert sorted(int(w * 3) for w in crashes) == [0, 1, 2], crashes  # one a run: three thirds
    leaves = [plan.phases("kconsumer", "kafka", 4, 16, "leave").next() for _ in range(9)]
    assert sorted(int(w * 9) for w in leaves) == list(range(9)), leaves  # three a run: nine ninths
    assert plan.phases("k", "kafka", 4, 16, "join") is not plan.phases("k", "kafka", 8, 64, "join")


def test_an_events_wait_counts_from_when_the_group_went_quiet_not_from_when_that_was_seen() -> None:
    from benchmarks.rebalance_phases import LEAD_S, HeartbeatPhases

    phases = HeartbeatPhases(1, interval_s=1.0)
    wait = phases.next()
    phases._left = [wait]  # the draw start_after will take
    assert phases.start_after(quiet=100.0, now=100.2) == pytest.approx(100.0 + LEAD_S + wait)
    phases._left = [wait]  # seen late: whole intervals later, the same point of the interval
    late = phases.start_after(quiet=100.0, now=103.7)
    intervals = late - (100.0 + LEAD_S + wait)
    assert late >= 103.7 and intervals == pytest.approx(round(intervals)), late


def test_a_group_has_been_quiet_since_its_last_ownership_change() -> None:
    events = [
        ("subscribed", 0.0, "a", []),
        ("assign", 0.5, "a", [0, 1]),
        ("revoke", 3.0, "a", [1]),
        ("records", 3.5, "a", [(0, 1)]),
        ("assign", 3.2, "b", [1]),
    ]
    tl = rebalance_measure.timeline(sorted(events, key=lambda e: e[1]), 2)
    assert rebalance_measure.last_change(tl, since=1.0) == 3.2
    assert rebalance_measure.last_change(tl, since=4.0) == 4.0  # nothing changed since then


def test_several_rebalance_runs_report_each_measure_s_median() -> None:
    from benchmarks.rebalance import EventResult

    def result(full: float, unowned: float, converged: bool, duplicates: int) -> EventResult:
        return EventResult("k", "reference", 4, 16, "join", converged, full, unowned, 0.5, duplicates, 3)

    runs = [[result(1.0, 2.0, True, 0)], [result(3.0, 1.0, True, 2)], [result(2.0, 4.0, False, 0)]]
    [merged] = rebalance_measure.medians(runs)
    assert (merged.time_to_full_s, merged.unowned_partition_s) == (2.0, 2.0)
    assert (
        not merged.converged
        and merged.duplicates == 2
        and merged.note == "median of 3 measurements in 3 runs"
    )
    args = cli.parse(["--only", "rebalance", "--rebalance-runs", "3"])
    assert args.rebalance_runs == 3 and args.rebalance_repeats == 3


def test_joins_and_leaves_repeat_as_often_as_asked_and_at_least_once() -> None:
    assert cli.parse(["--rebalance-repeats", "7"]).rebalance_repeats == 7
    with pytest.raises(SystemExit):
        cli.parse(["--rebalance-repeats", "0"])


def test_report_files_and_docs_block(tmp_path: pathlib.Path) -> None:
    data = {
        "command": "./dev bench --quick", "started": "now", "duration_s": 1.0, "revision": "abc",
        "machine": machine(), "load_before": "0", "load_after": "0", "notes": cli.NOTES,
        "idle": [
            {"client": "kconsumer", "broker": "mock", "seconds": 60.0, "cpu_seconds": 0.2,
             "core_percent": 0.33},
            {"client": "confluent KIP-848", "broker": "mock", "seconds": 60.0, "cpu_seconds": 0.1,
             "core_percent": 0.17},
        ],
    }  # fmt: skip
    out = os.path.join(tmp_path, "out")
    text = report.write(data, out)
    assert "idle CPU" in text and "**met**" in text
    results = json.loads(pathlib.Path(out, "results.json").read_text())
    assert results["command"] == "./dev bench --quick"
    assert os.path.exists(os.path.join(out, "idle.png"))
    docs = os.path.join(tmp_path, "benchmarks.md")
    with open(docs, "w") as f:
        f.write("# Benchmarks\n\nintro\n")
    report.update_docs(text, docs, out)
    report.update_docs(text, docs, out)  # replaces its block, keeps the rest
    content = pathlib.Path(docs).read_text()
    assert content.count(report.DOCS_START) == 1 and content.startswith("# Benchmarks\n\nintro")


def test_mock_cluster_process_starts_with_exact_partition_counts() -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    with broker("mock", [("smoke", 3)]) as bootstrap:
        consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "smoke"})
        try:
            assert len(consumer.list_topics("smoke", timeout=10).topics["smoke"].partitions) == 3
        finally:
            consumer.close()


def test_help_runs() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0 and "--quick" in result.stdout


@pytest.mark.parametrize(
    "client",
    [
        "confluent tuned consume",
        "AIOConsumer consume",
        "AIOConsumer poll",
        "kconsumer consume",
        "kconsumer aio consume",
        "kconsumer aio async-for",
    ],
)
def test_throughput_readers_read_and_rewind(client: str) -> None:
    """The benchmark's readers of the new peers work (not timed)."""
    from benchmarks.readers import Reader
    from kconsumer.testing import ReferenceCluster

    with ReferenceCluster(heartbeat_interval_ms=100, session_timeout_ms=3000) as cluster:
        cluster.create_topic("smoke", 2)
        for partition in range(2):
            cluster.produce("smoke", [b"x"] * 50, partition=partition)
        reader = Reader(client, cluster.bootstrap_servers, "smoke", 2, [0, 0], 1000)
        try:
            reader.read(100, timeout_s=30)
            reader.rewind()
            reader.read(100, timeout_s=30)
        finally:
            reader.close()


def test_latency_percentiles() -> None:
    from benchmarks.latency import _percentile

    values = [float(v) for v in range(1, 101)]
    assert (_percentile(values, 0.5), _percentile(values, 0.99)) == (51.0, 100.0)


def test_fetch_connections_layouts_read_everything(capsys: pytest.CaptureFixture[str]) -> None:
    """Every layout of the fetch-connections benchmark reads the whole topic (not timed)."""
    from benchmarks import fetch_connections

    options = "--broker mock --partitions 2 --per-partition 15000 --passes 1 --wait-ms 1 --idle-seconds 0.2"
    fetch_connections.main(options.split())
    out = capsys.readouterr().out
    for layout in ("one handle", "two handles, spinning", "two handles, waiting 1 ms"):
        assert f"  {layout}: " in out
    assert out.count("% of a core") == 2  # the spinning layout has no idle figure


def test_batch_size_readers_read_everything(capsys: pytest.CaptureFixture[str]) -> None:
    """kconsumer and the raw handle read the whole topic with each call (not timed)."""
    from benchmarks import batch_size

    batch_size.main(
        [
            "--broker",
            "mock",
            "--partitions",
            "2",
            "--per-partition",
            "300",
            "--passes",
            "1",
            "--batches",
            "7,100",
        ]
    )
    out = capsys.readouterr().out
    for call in ("consume(7)", "consume(100)", "poll()"):
        for client in ("kconsumer", "confluent tuned"):
            assert f"  {client} {call}: " in out


def test_leave_waits_reads_each_clients_heartbeats_from_a_trace_folder(tmp_path: pathlib.Path) -> None:
    from benchmarks import leave_waits

    def kconsumer(time: float, epoch: int) -> str:
        sent = f"SendHeartbeat(request_id=1, member_epoch={epoch}, version=1, leave={epoch < 0})"
        return f"{time:.4f} kconsumer-thread 1 event Tick() -> ['{sent}']\n"

    def librdkafka(wall: float, epoch: int) -> str:
        return (
            f"%7|{wall:.3f}|HEARTBEAT|rdkafka#consumer-1| [thrd:main]: GroupCoordinator/1:"
            f' ConsumerGroupHeartbeat of member id "x", group id "g", generation id {epoch},'
            ' current assignment ""\n'
        )

    def java(seconds: str, epoch: int) -> str:
        return (
            f"2026-12-03T00:00:{seconds}+0000 [thread] DEBUG org.apache.kafka.clients.NetworkClient - Sending"
            " CONSUMER_GROUP_HEARTBEAT request with header RequestHeader(apiKey=CONSUMER_GROUP_HEARTBEAT) and"
            f" timeout 30000 to node 1: ConsumerGroupHeartbeatRequestData(groupId='g', memberEpoch={epoch})\n"
        )

    # kconsumer (monotonic times): m1 leaves at 10.2; m2 and m3 heartbeat at 10.0 and 11.01
    (tmp_path / "m1.log").write_text(kconsumer(10.0, 5) + kconsumer(10.2, -1))
    for name in ("m2", "m3"):
        (tmp_path / f"{name}.log").write_text(kconsumer(10.0, 5) + kconsumer(11.01, 6))
    # librdkafka (wall-clock seconds; monotonic = wall - 1000): m4 leaves at 20.5, m5 beats at 20.1 and 21.1
    rdkafka_offset = "monotonic-minus-wall -1000.0\n"
    (tmp_path / "m4.rdkafka.log").write_text(rdkafka_offset + librdkafka(1020.0, 3) + librdkafka(1020.5, -1))
    earlier_run = "monotonic-minus-wall -2000.0\n" + librdkafka(2001.0, 7)  # an earlier m5's process
    (tmp_path / "m5.rdkafka.log").write_text(
        earlier_run + rdkafka_offset + librdkafka(1020.1, 3) + librdkafka(1021.1, 3)
    )
    # the Java client (wall-clock milliseconds): m6 leaves 0.3 s after midnight, m7 beats at 0.1 and 1.1
    midnight = 1796256000.0  # 2026-12-03T00:00:00Z
    java_offset = f"monotonic-minus-wall {30.0 - midnight}\n"
    (tmp_path / "m6.java.log").write_text(java_offset + java("00.000", 4) + java("00.300", -1))
    (tmp_path / "m7.java.log").write_text(java_offset + java("00.100", 4) + java("01.100", 4))

    folder = leave_waits.read_folder(str(tmp_path))
    m5 = folder["confluent-kafka"]["m5"]  # each process's lines on its own clock line's offset
    assert [t for t, _ in m5] == pytest.approx([1.0, 20.1, 21.1]) and not any(leave for _, leave in m5)
    found = {client: leave_waits.leaves(client, members) for client, members in folder.items()}
    assert [(leave.member, leave.waits) for leave in found["kconsumer"]] == [
        ("m1", pytest.approx([0.81, 0.81]))
    ]
    assert [(leave.member, leave.waits) for leave in found["confluent-kafka"]] == [
        ("m4", pytest.approx([0.6]))
    ]
    assert [(leave.member, leave.at, leave.waits) for leave in found["Java"]] == [
        ("m6", pytest.approx(30.3), pytest.approx([0.8]))
    ]
