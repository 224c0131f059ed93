"""PNG plots of a benchmark run (matplotlib, Agg): whatever sections ran."""

from __future__ import annotations

import os
from typing import Any

from .common import aggregate_rebalance


def plots(data: dict[str, Any], out_dir: str) -> list[str]:
    """PNG plots (matplotlib, Agg) of whatever sections ran; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    if data.get("throughput"):
        rows = data["throughput"]
        cells = list(dict.fromkeys(f"{r['broker']}\n{r['size']} B, {r['partitions']} p" for r in rows))
        clients = list(dict.fromkeys(r["client"] for r in rows))
        fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(cells)), 4.5))
        width = 0.8 / len(clients)
        for i, client in enumerate(clients):
            values = []
            for cell in cells:
                match = [
                    r
                    for r in rows
                    if f"{r['broker']}\n{r['size']} B, {r['partitions']} p" == cell and r["client"] == client
                ]
                values.append(match[0]["records_per_s"] / 1000 if match and match[0]["records_per_s"] else 0)
            ax.bar([x + i * width for x in range(len(cells))], values, width, label=client)
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(cells))], cells, fontsize=8)
        ax.set_ylabel("thousand records/s (median)")
        ax.set_title("Consume throughput (steady rate)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        paths.append(os.path.join(out_dir, "throughput.png"))
        fig.savefig(paths[-1], dpi=110)
        plt.close(fig)
        if len({r["partitions"] for r in rows}) > 1:
            paths.append(
                _by_partition_count(plt, data, os.path.join(out_dir, "throughput-by-partitions.png"))
            )
    if data.get("rebalance"):
        rows = [r for r in aggregate_rebalance(data["rebalance"]) if r["event"] != "setup"]
        shapes = list(dict.fromkeys((r["members"], r["partitions"]) for r in rows))
        events = list(dict.fromkeys(r["event"] for r in rows))
        combos = list(dict.fromkeys((r["client"], r["broker"]) for r in rows))
        fig, axes = plt.subplots(len(shapes), 1, figsize=(10, 3.8 * len(shapes)), squeeze=False)
        width = 0.8 / len(combos)
        for ax, shape in zip(axes[:, 0], shapes, strict=False):
            for i, (client, broker) in enumerate(combos):
                values = []
                for event in events:
                    match = [
                        r
                        for r in rows
                        if (r["members"], r["partitions"]) == shape
                        and r["event"] == event
                        and r["client"] == client
                        and r["broker"] == broker
                    ]
                    values.append(match[0]["time_to_full_s"] if match else 0)
                ax.bar(
                    [x + i * width for x in range(len(events))], values, width, label=f"{client} ({broker})"
                )
            ax.set_xticks([x + 0.4 - width / 2 for x in range(len(events))], events)
            ax.set_ylabel("s to full ownership")
            ax.set_title(f"Rebalance: {shape[0]} members, {shape[1]} partitions")
            ax.legend(fontsize=7)
        fig.tight_layout()
        paths.append(os.path.join(out_dir, "rebalance.png"))
        fig.savefig(paths[-1], dpi=110)
        plt.close(fig)
    if data.get("assignors"):
        rows = data["assignors"]
        fig, ax = plt.subplots(figsize=(10, 4.5))
        for key in dict.fromkeys(
            (r["assignor"], r["subscription"], r["assignment"], r["ratio"], r["topics"]) for r in rows
        ):
            series = [
                r
                for r in rows
                if (r["assignor"], r["subscription"], r["assignment"], r["ratio"], r["topics"]) == key
            ]
            ax.plot(
                [r["members"] for r in series],
                [r["ms"] for r in series],
                marker="o",
                label=f"{key[0]} {key[1][:6]} {key[2][:4]} r{key[3]} t{key[4]}",
            )
        kafka = [r for r in rows if r["kafka_ms"] is not None]
        if kafka:
            ax.scatter(
                [r["members"] for r in kafka],
                [r["kafka_ms"] for r in kafka],
                marker="x",
                color="black",
                zorder=5,
                label="Kafka's published figure (JMH)",
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("members")
        ax.set_ylabel("ms per assign()")
        ax.set_title("Server-side assignors")
        ax.legend(fontsize=6, ncol=2)
        fig.tight_layout()
        paths.append(os.path.join(out_dir, "assignors.png"))
        fig.savefig(paths[-1], dpi=110)
        plt.close(fig)
    if data.get("idle"):
        rows = [r for r in data["idle"] if not r.get("error")]
        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.bar([f"{r['client']}\n({r['broker']})" for r in rows], [r["core_percent"] for r in rows])
        ax.set_ylabel("% of one core")
        ax.set_title("Idle consumer in a stable group")
        ax.tick_params(axis="x", labelsize=7)
        fig.tight_layout()
        paths.append(os.path.join(out_dir, "idle.png"))
        fig.savefig(paths[-1], dpi=110)
        plt.close(fig)
    return paths


def _by_partition_count(plt: Any, data: dict[str, Any], path: str) -> str:
    """Records/s against the partition count, one line per client, a panel per broker and value
    size (the throughput issue's plot); saved to `path`."""
    rows = [r for r in data["throughput"] if r["records_per_s"] and not r.get("error")]
    panels = list(dict.fromkeys((r["broker"], r["size"]) for r in rows))
    clients = list(dict.fromkeys(r["client"] for r in rows))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2), squeeze=False, sharey=True)
    for ax, (broker, size) in zip(axes[0], panels, strict=True):
        for client in clients:
            series = sorted(
                (r["partitions"], r["records_per_s"] / 1e6)
                for r in rows
                if (r["broker"], r["size"], r["client"]) == (broker, size, client)
            )
            if series:
                style = "-" if client.startswith("kconsumer") else "--"
                ax.plot(*zip(*series, strict=True), style, marker="o", label=client)
        ax.set_xscale("log", base=2)
        ax.set_xticks(
            sorted({r["partitions"] for r in rows}), [str(p) for p in sorted({r["partitions"] for r in rows})]
        )
        ax.set_xlabel("partitions")
        ax.set_title(f"{broker} broker, {size} B values", fontsize=10)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("million records/s (median)")
    axes[0][-1].legend(fontsize=7)
    fig.suptitle(
        f"Consume throughput by partition count ({data.get('throughput_mode', 'prefetched')})", fontsize=11
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
