"""Text tables for ``kconsumer groups`` (the JSON forms are the views' ``to_json``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .views import GroupListing, GroupView, Key, MemberView, PartitionLag

MISSING = "-"


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """Left-aligned columns, two spaces apart, a header line first."""
    cells = [[str(h) for h in headers]] + [[MISSING if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in cells
    )


def listings_table(listings: Sequence[GroupListing]) -> str:
    """``groups list``: one row per group."""
    return table(
        ("GROUP", "TYPE", "STATE", "PROTOCOL-TYPE"),
        ((g.group_id, g.group_type, g.state or MISSING, g.protocol_type or MISSING) for g in listings),
    )


def group_summary(view: GroupView) -> str:
    """One line per fact of the group: type, state, epochs, assignor, member count."""
    epochs = ""
    if view.group_epoch is not None:
        epochs = f"  group epoch {view.group_epoch}, assignment epoch {view.assignment_epoch}"
    assignor = f"  assignor {view.assignor}" if view.assignor else ""
    return (
        f"group {view.group_id} ({view.group_type}): {view.state}, "
        f"{len(view.members)} member{'s' if len(view.members) != 1 else ''}{epochs}{assignor}"
    )


def members_table(view: GroupView) -> str:
    """``groups describe --members``: one row per member (per worker, with its units, for a
    worker group)."""
    if view.group_type == "connect":
        return table(
            ("MEMBER-ID", "INSTANCE-ID", "CLIENT-ID", "HOST", "#UNITS", "UNITS"),
            (
                (
                    m.member_id,
                    m.instance_id,
                    m.client_id,
                    m.client_host,
                    len(m.units),
                    " ".join(m.units) or None,
                )
                for m in view.members
            ),
        )
    return table(
        (
            "MEMBER-ID",
            "EPOCH",
            "INSTANCE-ID",
            "CLIENT-ID",
            "HOST",
            "RACK",
            "#PARTITIONS",
            "ASSIGNMENT",
            "PENDING",
        ),
        (
            (
                m.member_id,
                m.member_epoch,
                m.instance_id,
                m.client_id,
                m.client_host,
                m.rack_id,
                len(m.assignment),
                partitions_text(m.assignment),
                pending_text(m),
            )
            for m in view.members
        ),
    )


def lag_table(rows: Sequence[PartitionLag]) -> str:
    """``groups describe --offsets``: one row per partition."""
    return table(
        ("TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER-ID", "CLIENT-ID", "HOST"),
        (
            (
                r.topic,
                r.partition,
                r.committed,
                r.log_end,
                r.lag,
                None if r.owner is None else r.owner.member_id,
                None if r.owner is None else r.owner.client_id,
                None if r.owner is None else r.owner.client_host,
            )
            for r in rows
        ),
    )


def partitions_text(keys: Iterable[Key]) -> str:
    """``orders:0,1 payments:3`` (MISSING when there are none)."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(keys):
        by_topic.setdefault(topic, []).append(partition)
    return " ".join(f"{t}:{','.join(map(str, ps))}" for t, ps in by_topic.items()) or MISSING


def pending_text(member: MemberView) -> str:
    """What the member still has to take (+) or give up (-) to reach its target."""
    if member.target is None:
        return MISSING
    owned, target = set(member.assignment), set(member.target)
    changes = [f"+{t}:{p}" for t, p in sorted(target - owned)] + [
        f"-{t}:{p}" for t, p in sorted(owned - target)
    ]
    return " ".join(changes) or MISSING
