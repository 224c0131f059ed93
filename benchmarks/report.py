"""The benchmark report: markdown tables, target verdicts, PNG plots, JSON, and docs/benchmarks.md."""

# ruff: noqa: RUF001
from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Sequence
from typing import Any

from .common import HANDOVER_PHASES, aggregate_rebalance, median
from .plots import plots

EVENT_ORDER = {"join": 0, "leave": 1, "crash": 2, "rolling-dynamic": 3, "rolling-static": 4}
DOCS_START = "<!-- benchmarks:latest:start -->"
DOCS_END = "<!-- benchmarks:latest:end -->"


def _f(value: float | None, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:,.{digits}f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# -- targets ------------------------------------------------------------------------------------------


def targets(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Every target the measured sections allow to judge: name, measured, verdict, detail."""
    out: list[dict[str, Any]] = []
    for v in data.get("throughput_targets", []):
        out.append(
            {
                "target": f"{v['ours']} ≥ {v['target']:.2f} × {v['peer']}",
                "measured": f"{v['geomean']:.3f} (geometric mean of {v['cells']} cells; "
                f"worst {v['worst']:.3f}: "
                f"{v['worst_cell']}; {v['cells_met']}/{v['cells']} cells met; "
                f"CPU per record {v.get('cpu_geomean', float('nan')):.2f} × the peer's)",
                "met": v["met"],
            }
        )
    rebalance = data.get("rebalance", [])
    for event in ("join", "leave", "rolling-dynamic", "rolling-static"):
        for broker in ("reference", "mock"):
            ours = _times(rebalance, "kconsumer", broker, event)
            peer = _times(rebalance, "confluent KIP-848", broker, event)
            if ours and peer:
                a, b = median(ours.values()), median(peer.values())
                out.append(
                    {
                        "target": f"{event}: kconsumer time to full ownership ≤ confluent KIP-848's "
                        f"({broker} coordinator)",
                        "measured": f"{a:.2f} s vs {b:.2f} s (median over {len(ours)} group shape(s)); "
                        f"ratio {a / b:.2f}",
                        "met": a <= b,
                    }
                )
        ours = _times(rebalance, "kconsumer", "mock", event)
        eager = _times(rebalance, "confluent eager range", "mock", event)
        if ours and eager:
            a, b = median(ours.values()), median(eager.values())
            out.append(
                {
                    "target": f"{event}: kconsumer far below classic eager range (≤ 0.5 ×, mock)",
                    "measured": f"{a:.2f} s vs {b:.2f} s; ratio {a / b:.2f}",
                    "met": a <= 0.5 * b,
                }
            )
    for row in data.get("assignors", []):
        if row.get("target_ms") is not None:
            out.append(
                {
                    "target": f"uniform {row['subscription']} {row['assignment']} "
                    f"{row['members']:,} members × "
                    f"{row['ratio']} ({row['topics']} topics) ≤ {row['target_ms']:g} ms",
                    "measured": f"{row['ms']:.1f} ms median (best {row['best_ms']:.1f} ms)",
                    "met": row["ms"] <= row["target_ms"],
                }
            )
    idle = {(r["client"], r["broker"]): r for r in data.get("idle", []) if not r.get("error")}
    for broker in ("reference", "mock"):
        a, b = idle.get(("kconsumer", broker)), idle.get(("confluent KIP-848", broker))
        if a and b:
            out.append(
                {
                    "target": f"idle CPU ≤ confluent KIP-848's + 0.5 % of a core ({broker})",
                    "measured": f"{a['core_percent']:.2f} % vs {b['core_percent']:.2f} % "
                    f"(difference {a['core_percent'] - b['core_percent']:+.2f} points)",
                    "met": a["core_percent"] <= b["core_percent"] + 0.5,
                }
            )
    return out


def _times(
    rows: Sequence[dict[str, Any]], client: str, broker: str, event: str
) -> dict[tuple[int, int], float]:
    """Median time to full ownership per group shape."""
    return {
        (r["members"], r["partitions"]): r["time_to_full_s"]
        for r in aggregate_rebalance(rows)
        if r["client"] == client and r["broker"] == broker and r["event"] == event and r["converged"]
    }


# -- markdown -------------------------------------------------------------------------------------------


def markdown(data: dict[str, Any], plots: Sequence[str]) -> str:
    m = data["machine"]
    parts = [
        "# kconsumer benchmarks",
        "",
        f"Run {data['started']} ({data['duration_s'] / 60:.1f} min), revision {data['revision']}.",
        "",
        f"Command: `{data['command']}`",
        "",
        f"Machine: {m['cores']} cores, {m['cpu']}, {m['memory']}, {m['os']}; Python {m['python']}; "
        f"kconsumer {m['kconsumer']} (`async for`: {m.get('record runs', '?')} record runs), "
        f"confluent-kafka {m['confluent-kafka']} (librdkafka {m['librdkafka']}), "
        f"aiokafka {m['aiokafka']}. "
        f"Load average before / after: {data['load_before']} / {data['load_after']}.",
        "",
    ]
    verdicts = targets(data)
    if verdicts:
        parts += [
            "## Targets",
            "",
            _table(
                ["target", "measured", "verdict"],
                [(v["target"], v["measured"], "**met**" if v["met"] else "**not met**") for v in verdicts],
            ),
            "",
        ]
    if data.get("throughput"):
        parts += _throughput_section(data)
    if data.get("rebalance"):
        parts += _rebalance_section(data)
    if data.get("assignors") or data.get("heartbeats"):
        parts += _coordinator_section(data)
    if data.get("idle"):
        parts += [
            "## Idle cost",
            "",
            data["notes"]["idle"],
            "",
            _table(
                ["client", "broker", "window s", "CPU s", "% of a core"],
                [
                    (
                        r["client"],
                        r["broker"],
                        _f(r["seconds"], 1),
                        _f(r["cpu_seconds"], 3),
                        _f(r["core_percent"]) if not r.get("error") else r["error"],
                    )
                    for r in data["idle"]
                ],
            ),
            "",
        ]
    if plots:
        parts += ["## Plots", ""] + [f"![{os.path.basename(p)}]({os.path.basename(p)})" for p in plots] + [""]
    return "\n".join(parts)


def _throughput_section(data: dict[str, Any]) -> list[str]:
    rows = data["throughput"]
    ratio_by = {(r["cell"], r["ours"], r["peer"]): r["ratio"] for r in data.get("throughput_ratios", [])}
    table = []
    for r in rows:
        cell = f"{r['broker']}, {r['size']} B, {r['partitions']} p"
        vs = ""
        if r["client"] == "kconsumer consume":
            vs = _f(ratio_by.get((cell, "kconsumer consume", "confluent consume")), 3)
        elif r["client"] == "kconsumer poll":
            vs = _f(ratio_by.get((cell, "kconsumer poll", "confluent poll")), 3)
        table.append(
            (
                cell,
                r["client"],
                _f(r["records_per_s"], 0),
                _f(r["mb_per_s"], 1),
                _f(r["cpu_s_per_million"]),
                _f(r["app_cpu_s_per_million"]),
                vs,
                r["error"] or len(r["samples"]),
            )
        )
    return [
        "## Consume throughput",
        "",
        data["notes"]["throughput"],
        "",
        _table(
            [
                "cell",
                "client",
                "records/s",
                "MB/s",
                "CPU s / M records",
                "app-thread CPU s / M",
                "× confluent",
                "repetitions",
            ],
            table,
        ),
        "",
    ]


def _rebalance_section(data: dict[str, Any]) -> list[str]:
    table = []
    for r in sorted(
        aggregate_rebalance(data["rebalance"]),
        key=lambda r: (r["members"], r["partitions"], EVENT_ORDER.get(r["event"], 9)),
    ):
        time = _f(r["time_to_full_s"])
        if r["runs"] > 1:
            time += f" ({_f(r['time_min_s'])}–{_f(r['time_max_s'])})"
        converged = ("yes" if r["converged"] else "**no**") + (f" ({r['note']})" if r["note"] else "")
        table.append(
            (
                f"{r['members']} × {r['partitions']}",
                r["event"],
                r["client"],
                r["broker"],
                time,
                _f(r["unowned_partition_s"]),
                _f(r["longest_gap_s"]),
                _f(r["duplicates"], 0),
                _f(r["moved"], 0),
                " / ".join(_f(r.get(phase)) for phase in HANDOVER_PHASES),
                r["runs"],
                converged,
            )
        )
    header = [
        "members × partitions",
        "event",
        "client",
        "coordinator",
        "time to full ownership s (min–max)",
        "unowned partition-s",
        "longest gap s",
        "duplicates",
        "partitions moved",
        "hand-over s: release / assign / first record (medians)",
        "runs",
        "converged",
    ]
    return [
        "## Rebalance",
        "",
        data["notes"]["rebalance"],
        "",
        _table(header, table),
        "",
        "Medians over an event's runs (join and leave are repeated within each group's run).",
        "",
    ]


def _coordinator_section(data: dict[str, Any]) -> list[str]:
    out = ["## Coordinator scale", "", data["notes"]["coordinator"], ""]
    if data.get("assignors"):
        out += [
            _table(
                [
                    "assignor",
                    "subscription",
                    "type",
                    "members",
                    "partitions/member",
                    "topics",
                    "ms (median)",
                    "ms (best)",
                    "Kafka ms",
                    "Kafka source",
                    "target ms",
                ],
                [
                    (
                        r["assignor"],
                        r["subscription"],
                        r["assignment"],
                        f"{r['members']:,}",
                        r["ratio"],
                        r["topics"],
                        _f(r["ms"]),
                        _f(r["best_ms"]),
                        _f(r["kafka_ms"], 3),
                        r["kafka_source"] or "",
                        _f(r["target_ms"], 0),
                    )
                    for r in data["assignors"]
                ],
            ),
            "",
        ]
    h = data.get("heartbeats")
    if h:
        out += [
            _table(
                [
                    "members",
                    "partitions/member",
                    "topics",
                    "build: joins s",
                    "build: reconcile s",
                    "stable heartbeats/s",
                    "memory per member",
                ],
                [
                    (
                        f"{h['members']:,}",
                        h["ratio"],
                        h["topics"],
                        _f(h["join_s"], 1),
                        _f(h["reconcile_s"], 1),
                        _f(h["heartbeats_per_s"], 0),
                        f"{h['bytes_per_member'] / 1024:.1f} KiB",
                    )
                ],
            ),
            "",
            "(The build times are under tracemalloc, which slows Python down several times.)",
            "",
        ]
    return out


# -- files ----------------------------------------------------------------------------------------------


def write(data: dict[str, Any], out_dir: str) -> str:
    """report.md, results.json and the plots in `out_dir`; returns the markdown."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(data, f, indent=1, default=str)
    text = markdown(data, plots(data, out_dir))
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write(text)
    return text


def update_docs(text: str, docs_path: str, out_dir: str) -> None:
    """Replace the "latest figures" block of docs/benchmarks.md with this report (headings shifted
    one level down; the plots stay in the output folder, which git ignores, so the block names
    the folder instead of embedding them)."""
    rel = os.path.relpath(out_dir, os.path.dirname(os.path.dirname(docs_path)))
    body = text.split("\n## Plots\n", 1)[0].rstrip()
    body = re.sub(r"^(#+) ", lambda m: "#" + m.group(1) + " ", body, flags=re.M)
    body += (
        f"\n\nPlots and raw results of this run: `{rel}/` (`report.md`, `results.json`, `*.png`; "
        "git ignores `benchmarks/out/`).\n"
    )
    block = f"{DOCS_START}\n{body}\n{DOCS_END}"
    try:
        with open(docs_path) as f:
            current = f.read()
    except FileNotFoundError:
        current = ""
    if DOCS_START in current and DOCS_END in current:
        head, rest = current.split(DOCS_START, 1)
        tail = rest.split(DOCS_END, 1)[1]
        updated = head + block + tail
    else:
        updated = (
            (current.rstrip() + "\n\n" if current else "# Benchmarks\n\n")
            + "## Latest figures\n\n"
            + block
            + "\n"
        )
    with open(docs_path, "w") as f:
        f.write(updated)
