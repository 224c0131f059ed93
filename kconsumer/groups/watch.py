"""``kconsumer groups watch GROUP``: a live terminal view of a group (state, epochs, members with
their assignment and what they still have to take or give up, lag per partition), redrawn every
``--interval`` seconds with rich (the ``cli`` extra)."""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from .admin import GroupAdmin, GroupAdminError
from .render import MISSING, partitions_text, pending_text
from .views import GroupView, PartitionLag


def add_watch_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``groups watch`` options."""
    parser.add_argument("group", metavar="GROUP")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between refreshes")
    parser.add_argument(
        "--iterations", type=int, default=0, help="stop after this many refreshes (default: until Ctrl-C)"
    )


async def snapshot(admin: GroupAdmin, group: str) -> tuple[GroupView | None, list[PartitionLag]]:
    """The group and its partitions' lag, now (GroupAdminError when it cannot be described)."""
    view, rows, unsupported = await admin.lag(group)
    if unsupported is not None:
        raise GroupAdminError(unsupported)
    return view, rows


def render(group: str, view: GroupView | None, rows: list[PartitionLag], error: str | None = None) -> Any:
    """The rich renderable of one refresh."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    stamp = time.strftime("%H:%M:%S")
    if view is None:
        title = Text(f"{stamp}  group {group}: no members" + (" (offsets only)" if rows else ""))
    else:
        epochs = "" if view.group_epoch is None else f"  epoch {view.group_epoch}/{view.assignment_epoch}"
        title = Text(
            f"{stamp}  group {group} ({view.group_type})  {view.state}{epochs}  "
            f"{len(view.members)} members  assignor {view.assignor or MISSING}",
            style="bold",
        )
    parts: list[Any] = [title]
    if error:
        parts.append(Text(f"refresh failed: {error}", style="red"))
    if view is not None and view.members:
        members = Table("member", "epoch", "client", "host", "assigned", "pending", expand=False)
        for m in view.members:
            members.add_row(
                m.member_id,
                MISSING if m.member_epoch is None else str(m.member_epoch),
                m.client_id,
                m.client_host,
                partitions_text(m.assignment),
                pending_text(m),
            )
        parts.append(members)
    if rows:
        lag = Table("topic", "partition", "committed", "log end", "lag", "member")
        for r in rows:
            lag.add_row(
                r.topic,
                str(r.partition),
                *(MISSING if v is None else str(v) for v in (r.committed, r.log_end, r.lag)),
                MISSING if r.owner is None else r.owner.member_id,
            )
        parts.append(lag)
    return Group(*parts)


async def watch(admin: GroupAdmin, args: argparse.Namespace) -> int:
    """Redraw the view until interrupted (or `--iterations` refreshes)."""
    try:
        from rich.live import Live
    except ImportError:  # pragma: no cover - the cli extra is part of the test environment
        raise GroupAdminError("groups watch needs rich: pip install 'kconsumer[cli]'") from None
    view: GroupView | None = None
    rows: list[PartitionLag] = []
    done = 0
    with Live(render(args.group, None, []), auto_refresh=False) as live:
        while True:
            error = None
            try:
                view, rows = await snapshot(admin, args.group)
            except GroupAdminError as exc:  # keep the last view; say why it is stale
                error = str(exc)
            live.update(render(args.group, view, rows, error), refresh=True)
            done += 1
            if args.iterations and done >= args.iterations:
                return 0
            await asyncio.sleep(args.interval)
