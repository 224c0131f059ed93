"""``python -m benchmarks`` (``./dev bench``): every benchmark, one report.

Sections (``--only`` picks some): ``throughput`` (kconsumer poll/consume against raw
confluent-kafka and aiokafka), ``rebalance`` (time to full ownership, unowned partition-seconds,
gaps, duplicates after joins, leaves, crashes and rolling restarts), ``coordinator`` (assignor
times next to Kafka's published figures, stable heartbeats per second and memory per member of a
10,000-member group) and ``idle`` (CPU of an idle member of a stable group).

``--quick`` runs a representative subset in a few minutes; without it the full matrix runs (an
hour or more: the rebalance matrix dominates). Filters narrow any section. The report, the plots
and the raw results go to ``benchmarks/out/<timestamp>/``; ``docs/benchmarks.md`` gets the latest
figures unless ``--no-docs``.

Examples::

    ./dev bench --quick
    ./dev bench --only throughput --brokers mock --sizes 100 --partitions 8
    ./dev bench --only rebalance --members 4 --rebalance-partitions 64 --clients kconsumer "confluent KIP-848"
"""

# ruff: noqa: RUF001
from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from collections.abc import Sequence
from typing import Any

from . import common, report

SECTIONS = ("throughput", "rebalance", "coordinator", "idle")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.replace(",", " ").split()]


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def _names(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("--quick", action="store_true", help="a representative subset (a few minutes)")
    parser.add_argument(
        "--only", type=_names, default=list(SECTIONS), help=f"sections, comma-separated: {SECTIONS}"
    )
    parser.add_argument("--out", default=None, help="output folder (default benchmarks/out/<timestamp>)")
    parser.add_argument("--no-docs", action="store_true", help="do not update docs/benchmarks.md")
    t = parser.add_argument_group("throughput")
    t.add_argument(
        "--brokers", type=_names, default=None, help="reference,mock,kafka (default reference,mock)"
    )
    t.add_argument("--sizes", type=_ints, default=None, help="value sizes in bytes (100,1024)")
    t.add_argument("--partitions", type=_ints, default=None, help="partition counts (1,8,32,128,256)")
    t.add_argument("--repetitions", type=int, default=None, help="timed repetitions per client (median)")
    t.add_argument(
        "--no-prefetch", action="store_true", help="no pause before each pass (measure the fetch-bound rate)"
    )
    t.add_argument("--batch", type=int, default=10_000, help="consume(n) / getmany max_records")
    t.add_argument(
        "--data-set-mb",
        type=int,
        default=40,
        help="a data set's size at most (MB; per cell, shared by its partitions)",
    )
    t.add_argument(
        "--throughput-clients",
        type=lambda text: [n.strip() for n in text.split(",") if n.strip()],
        default=None,
        help="a subset of the throughput clients, comma-separated ('kconsumer consume,aiokafka getmany')",
    )
    r = parser.add_argument_group("rebalance")
    r.add_argument(
        "--clients",
        nargs="+",
        default=None,
        help="client names: kconsumer, 'confluent KIP-848', 'Java KIP-848', 'confluent cooperative-sticky', "
        "'confluent eager range'",
    )
    r.add_argument(
        "--coordinators", type=_names, default=None, help="reference,mock,kafka (default reference,mock)"
    )
    r.add_argument("--members", type=_ints, default=None, help="group sizes (1,4,16)")
    r.add_argument("--rebalance-partitions", type=_ints, default=None, help="partitions (16,64,256)")
    r.add_argument(
        "--events", type=_names, default=None, help="join,leave,crash,rolling-dynamic,rolling-static"
    )
    r.add_argument(
        "--rebalance-runs", type=int, default=1, help="whole runs of every cell (the report gives medians)"
    )
    r.add_argument(
        "--rebalance-repeats",
        type=_positive,
        default=3,
        help="joins and leaves per group in a run (a leave's cost is chance: more repeats, a firmer median)",
    )
    c = parser.add_argument_group("coordinator")
    c.add_argument("--assignors", type=_names, default=None, help="uniform,range")
    c.add_argument("--assignor-members", type=_ints, default=None, help="(100,1000,10000)")
    c.add_argument("--assignor-ratios", type=_ints, default=None, help="partitions per member (5,10,50)")
    c.add_argument("--assignor-topics", type=_ints, default=None, help="topics (10,100,1000)")
    c.add_argument("--assignor-repeat", type=int, default=None, help="timed assign() runs per case (median)")
    c.add_argument("--heartbeat-members", type=int, default=10_000)
    i = parser.add_argument_group("idle")
    i.add_argument("--idle-seconds", type=float, default=60.0)
    args = parser.parse_args(argv)
    unknown = set(args.only) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}; choose from {SECTIONS}")
    return args


NOTES = {
    "throughput": (
        "Each broker runs in a process of its own (`kconsumer serve`, or librdkafka's mock cluster "
        "through its C test API), and so does each client, so neither the reference broker's Python work "
        "nor the mock's threads share the measured process's GIL or CPU counter; both still share the "
        "machine's cores. kconsumer consumes through a group (`subscribe`, KIP-848); the raw peers use "
        "manual `assign` (no group), as kconsumer's own fetch handle does. Rates are the steady rate of "
        "each pass over the data (first records to last), median of the repetitions; CPU is the client "
        "process's user+system time over the same spans, all threads (app-thread CPU: the calling thread "
        "alone). `fetch.wait.max.ms`/`fetch_max_wait_ms` is 50 ms for every client (it only matters after"
        " a seek). MB/s counts values only."
    ),
    "rebalance": (
        "Each member is a process of its own; a producer process writes 20 records/s to every partition "
        '(4,000/s at most in total), which bounds the resolution of "consuming again" and of gaps. Group '
        "timers for every coordinator and client: session timeout 6 s, heartbeat interval 1 s (reference "
        "assignment interval 0). Time to full ownership: from the event until the last partition that "
        "changed hands was consumed again by its new owner. Unowned partition-seconds: summed time "
        "partitions had no live owner (callbacks; a crashed member's partitions count from the kill). "
        "Longest gap: longest time a partition went without a consumed record. Duplicates: records "
        "consumed again in the event's window (auto-commit every 5 s, the default, for every client; "
        "classic clients that had committed nothing yet re-read from the earliest offset). The mock "
        "cluster's KIP-848 target assignment is its own simple range assignor; the reference runs "
        "`uniform`. kconsumer's sources are byte-compiled before the members start, as a wheel's are at "
        "install."
    ),
    "coordinator": (
        "Assignors: `benchmarks/assignor_scale.py` (Kafka's ServerSideAssignorBenchmark grid: partitions "
        "per topic = members × ratio / topics; heterogeneous = 5 subscription buckets; INCREMENTAL = one "
        "member joins), `assign()` only, median and best of the repetitions after a warm-up. Kafka's "
        "figures are the JMH numbers its developers published: other hardware, the JVM, some "
        "older algorithm versions — orders of magnitude, not a race. Heartbeats: stable heartbeats (epoch"
        " only) on the sans-IO GroupCoordinator, no network; memory per member under tracemalloc."
    ),
    "idle": (
        "One member per group on a topic of 8 empty partitions, Kafka's default heartbeat interval (5 s),"
        " a `poll(1.0)` loop, each consumer in a process of its own, all measured over the same window."
    ),
}


PREFETCH_NOTE = (
    "Prefetched: each pass starts after a pause long enough for the clients to queue it up "
    "(librdkafka holds a whole pass; aiokafka keeps one fetch per partition ahead), so the rate is what "
    "each client costs per record, not the broker's speed (`--no-prefetch` measures that instead)."
)
NO_PREFETCH_NOTE = (
    "Not prefetched (`--no-prefetch`): each pass starts right after the seek, so the rate is mostly the "
    "fetch path's (broker, network, librdkafka's fetcher), alike for every librdkafka-based client."
)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    started = time.time()
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(started))
    out_dir = args.out or os.path.join(ROOT, "benchmarks", "out", stamp)
    command = "./dev bench " + " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    data: dict[str, Any] = {
        "command": command.strip(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(started)),
        "machine": common.machine(),
        "revision": common.git_revision(),
        "load_before": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "notes": NOTES,
    }
    common.log(f"benchmarks: {', '.join(args.only)}{' (quick)' if args.quick else ''} -> {out_dir}")
    common.log(f"benchmarks: sources byte-compiled in {common.compile_sources():.1f} s")
    if "throughput" in args.only:
        _throughput(args, data)
    if "rebalance" in args.only:
        _rebalance(args, data)
    if "coordinator" in args.only:
        _coordinator(args, data)
    if "idle" in args.only:
        _idle(args, data)
    data["load_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    data["duration_s"] = time.time() - started
    text = report.write(data, out_dir)
    if not args.no_docs:
        report.update_docs(text, os.path.join(ROOT, "docs", "benchmarks.md"), out_dir)
    print(text)
    common.log(f"report: {os.path.join(out_dir, 'report.md')}")
    return 0


def _throughput(args: argparse.Namespace, data: dict[str, Any]) -> None:
    from . import throughput

    unknown = set(args.throughput_clients or ()) - set(throughput.CLIENTS)
    if unknown:
        raise SystemExit(f"unknown throughput clients {sorted(unknown)}; choose from {throughput.CLIENTS}")
    settings = throughput.Settings(
        brokers=args.brokers or ("reference", "mock"),
        sizes=args.sizes or ((100,) if args.quick else (100, 1024)),
        partitions=args.partitions or ((1, 8) if args.quick else (1, 8, 32, 128, 256)),
        repetitions=args.repetitions or (3 if args.quick else 5),
        batch=args.batch,
        prefetch=not args.no_prefetch,
        clients=args.throughput_clients or throughput.CLIENTS,
        data_set_bytes=args.data_set_mb * 1_000_000,
    )
    mode = PREFETCH_NOTE if settings.prefetch else NO_PREFETCH_NOTE
    data["notes"] = {**data["notes"], "throughput": data["notes"]["throughput"] + " " + mode}
    data["throughput_mode"] = (
        "prefetched" if settings.prefetch else "fetch-bound"
    ) + f", data sets up to {args.data_set_mb} MB"
    results = throughput.run(settings)
    data["throughput"] = [r.as_dict() for r in results]
    data["throughput_ratios"] = [
        {**r, "cell": f"{r['cell'].broker}, {r['cell'].size} B, {r['cell'].partitions} p"}
        for r in throughput.ratios(results)
    ]
    data["throughput_targets"] = throughput.target_verdicts(results)


def _rebalance(args: argparse.Namespace, data: dict[str, Any]) -> None:
    from . import rebalance

    everything = rebalance.COMBOS if args.clients or args.coordinators else rebalance.DEFAULT_COMBOS
    combos = [
        c
        for c in everything
        if (not args.clients or c[0] in args.clients) and (not args.coordinators or c[1] in args.coordinators)
    ]
    settings = rebalance.Settings(
        combos=combos,
        sizes=args.members or ((4,) if args.quick else (1, 4, 16)),
        partitions=args.rebalance_partitions or ((16,) if args.quick else (16, 64, 256)),
        events=args.events or rebalance.EVENTS,
        runs=args.rebalance_runs,
        repeats=args.rebalance_repeats,
    )
    data["rebalance"] = [r.as_dict() for r in rebalance.run(settings)]


def _coordinator(args: argparse.Namespace, data: dict[str, Any]) -> None:
    from . import coordinator_scale

    data["assignors"] = [
        r.as_dict()
        for r in coordinator_scale.assignors(
            members=args.assignor_members or (100, 1000, 10000),
            ratios=args.assignor_ratios or ((10,) if args.quick else (5, 10, 50)),
            topics=args.assignor_topics or ((10, 100) if args.quick else (10, 100, 1000)),
            names=args.assignors or ("uniform", "range"),
            repeat=args.assignor_repeat or (5 if args.quick else 7),
        )
    ]
    if args.heartbeat_members > 0:
        data["heartbeats"] = coordinator_scale.heartbeats(members=args.heartbeat_members).as_dict()


def _idle(args: argparse.Namespace, data: dict[str, Any]) -> None:
    from . import idle

    data["idle"] = [r.as_dict() for r in idle.run(seconds=args.idle_seconds)]


if __name__ == "__main__":
    raise SystemExit(main())
