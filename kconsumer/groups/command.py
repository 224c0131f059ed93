"""``kconsumer groups list|describe|delete-offsets|reset-offsets|watch``: what operators do with
``kafka-consumer-groups.sh``, for consumer (KIP-848) and classic groups.

Exit status: 0 done; 1 the group does not allow it (unknown group, members present for a reset,
a partition's offset not deleted or not committed, an unknown topic); 2 the cluster could not
be reached or authenticated against, lacks the API the action needs, or a setting is wrong.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from ..cluster_options import add_cluster_arguments, parse_settings
from ..errors import ConfigError, ErrorCode
from .admin import EARLIEST, LATEST, GroupAdmin, GroupAdminError
from .render import group_summary, lag_table, listings_table, members_table, table
from .resets import RESETTABLE_STATES, ResetError, ResetSpec, parse_scope, plan
from .views import Key

Action = Callable[[GroupAdmin, argparse.Namespace], Awaitable[int]]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``kconsumer groups`` actions and their options."""
    actions = parser.add_subparsers(dest="groups_action", metavar="ACTION", required=True)

    def action(name: str, help_text: str, run: Action) -> argparse.ArgumentParser:
        sub = actions.add_parser(name, help=help_text, description=help_text)
        add_cluster_arguments(sub, required=True, help_servers="a broker of the cluster")
        sub.add_argument("--format", choices=("text", "json"), default="text", help="output format")
        sub.set_defaults(groups_run=run)
        return sub

    listing = action("list", "list the cluster's groups with their type and state", _list)
    listing.add_argument(
        "--type", dest="types", action="append", default=[], choices=("consumer", "classic", "connect")
    )
    listing.add_argument("--state", dest="states", action="append", default=[], help="e.g. Stable, Empty")

    describe = action("describe", "a group's state, members and per-partition lag", _describe)
    describe.add_argument("group", metavar="GROUP")
    describe.add_argument("--members", action="store_true", help="the members table")
    describe.add_argument("--offsets", action="store_true", help="the per-partition offsets and lag")

    delete = action(
        "delete-offsets", "delete a group's committed offsets of topics it no longer reads", _delete
    )
    delete.add_argument("group", metavar="GROUP")
    delete.add_argument("--topic", dest="topics", action="append", required=True, metavar="TOPIC[:P,P]")

    reset = action(
        "reset-offsets", "move an inactive group's committed offsets (dry run unless --execute)", _reset
    )
    reset.add_argument("group", metavar="GROUP")
    scope = reset.add_mutually_exclusive_group(required=True)
    scope.add_argument("--topic", dest="topics", action="append", metavar="TOPIC[:P,P]")
    scope.add_argument(
        "--all-topics", action="store_true", help="every partition the group has an offset for"
    )
    mode = reset.add_mutually_exclusive_group(required=True)
    mode.add_argument("--to-earliest", action="store_true")
    mode.add_argument("--to-latest", action="store_true")
    mode.add_argument("--to-offset", type=int, metavar="N")
    mode.add_argument("--shift-by", type=int, metavar="N")
    mode.add_argument("--to-datetime", metavar="ISO-8601")
    reset.add_argument("--execute", action="store_true", help="commit the new offsets (default: dry run)")

    from .watch import add_watch_arguments, watch

    add_watch_arguments(action("watch", "a live view of a group, refreshed every second", watch))


def run(args: argparse.Namespace) -> int:
    """Run the chosen action; see the module docstring for the exit status."""
    try:
        settings = parse_settings(args.settings)
        admin = GroupAdmin(args.bootstrap_servers, settings, args.timeout)
    except (ValueError, ConfigError) as exc:
        print(f"kconsumer groups: {exc}", file=sys.stderr)
        return 2
    action: Action = args.groups_run

    async def main() -> int:
        async with admin:
            return await action(admin, args)

    try:
        return asyncio.run(main())
    except (GroupAdminError, ResetError) as exc:
        print(f"kconsumer groups {args.groups_action}: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, ResetError) else 2
    except KeyboardInterrupt:
        return 130


def _emit(args: argparse.Namespace, text: str, data: Any) -> None:
    print(json.dumps(data, indent=2) if args.format == "json" else text)


def _refuse(message: str) -> int:
    print(message, file=sys.stderr)
    return 1


async def _list(admin: GroupAdmin, args: argparse.Namespace) -> int:
    listings = await admin.list_groups(args.types, args.states)
    _emit(args, listings_table(listings), [vars(listing) for listing in listings])
    return 0


async def _describe(admin: GroupAdmin, args: argparse.Namespace) -> int:
    view, rows, unsupported = await admin.lag(args.group)
    if view is None and not rows:
        return _refuse(unsupported or f"group {args.group!r} does not exist")
    show_members = args.members or not args.offsets
    show_offsets = args.offsets or not args.members
    if view is not None:
        parts = [group_summary(view)]
    else:
        parts = [
            f"group {args.group}: " + (f"offsets only ({unsupported})" if unsupported else "offsets only")
        ]
    if show_members and view is not None and view.members:
        parts.append(members_table(view))
    if show_offsets:
        parts.append(lag_table(rows) if rows else "no committed offsets")
    data = {
        "group": None if view is None else view.to_json(),
        "describe_unsupported": unsupported,
        "offsets": [r.to_json() for r in rows],
    }
    _emit(args, "\n\n".join(parts), data)
    return 0


async def _scope(admin: GroupAdmin, group: str, topics: list[str] | None) -> list[Key]:
    """The partitions named by ``--topic`` values (None: the group's committed partitions)."""
    if topics is None:
        return sorted(await admin.committed(group))
    scope = parse_scope(topics)
    cluster = await admin.refresh(list(scope))
    keys: list[Key] = []
    for topic, partitions in scope.items():
        count = cluster.partition_counts.get(topic)
        if count is None:
            raise ResetError(f"topic {topic!r} does not exist")
        wanted = range(count) if partitions is None else partitions
        for partition in wanted:
            if not 0 <= partition < count:
                raise ResetError(f"topic {topic!r} has no partition {partition} (it has {count})")
            keys.append((topic, partition))
    return keys


async def _delete(admin: GroupAdmin, args: argparse.Namespace) -> int:
    keys = await _scope(admin, args.group, args.topics)
    results = await admin.delete_offsets(args.group, keys)
    rows = [
        (t, p, "deleted" if code == ErrorCode.NONE else code.name) for (t, p), code in sorted(results.items())
    ]
    data = [{"topic": t, "partition": p, "result": r} for t, p, r in rows]
    _emit(args, table(("TOPIC", "PARTITION", "RESULT"), rows), data)
    return 0 if all(code == ErrorCode.NONE for code in results.values()) else 1


async def _reset(admin: GroupAdmin, args: argparse.Namespace) -> int:
    view, unsupported = await admin.describe_or_reason(args.group)
    if unsupported:
        print(
            f"note: {unsupported}; the coordinator refuses the reset if the group has members",
            file=sys.stderr,
        )
    if view is not None and view.state.lower() not in RESETTABLE_STATES:
        return _refuse(
            f"offsets of group {args.group!r} can only be reset while it has no members; "
            f"it is {view.state} with {len(view.members)} member(s)"
        )
    spec = _reset_spec(args)
    keys = await _scope(admin, args.group, None if args.all_topics else args.topics)
    if not keys:
        return _refuse(f"group {args.group!r} has no committed offsets to reset")
    committed = await admin.committed(args.group)
    log_start = await admin.log_offsets(keys, EARLIEST)
    log_end = await admin.log_offsets(keys, LATEST)
    at_time = await admin.log_offsets(keys, spec.value) if spec.kind == "datetime" else None
    planned = plan(spec, keys, committed, log_start, log_end, at_time)
    results: dict[Key, ErrorCode] = {}
    if args.execute:
        results = await admin.commit(args.group, planned)
    rows = [
        (t, p, committed.get((t, p)), offset, _result(results.get((t, p))))
        for (t, p), offset in sorted(planned.items())
    ]
    data = [{"topic": t, "partition": p, "previous": c, "new": n, "result": r} for t, p, c, n, r in rows]
    _emit(args, table(("TOPIC", "PARTITION", "PREVIOUS-OFFSET", "NEW-OFFSET", "RESULT"), rows), data)
    if not args.execute and args.format == "text":
        print("(dry run: nothing committed; add --execute to apply)", file=sys.stderr)
    if any(code != ErrorCode.NONE for code in results.values()):
        return _refuse("the coordinator refused some offsets (a member may have joined meanwhile)")
    return 0


def _reset_spec(args: argparse.Namespace) -> ResetSpec:
    if args.to_earliest:
        return ResetSpec("earliest")
    if args.to_latest:
        return ResetSpec("latest")
    if args.to_offset is not None:
        return ResetSpec("offset", args.to_offset)
    if args.shift_by is not None:
        return ResetSpec("shift", args.shift_by)
    return ResetSpec.datetime(args.to_datetime)


def _result(code: ErrorCode | None) -> str:
    if code is None:
        return "dry run"
    return "committed" if code == ErrorCode.NONE else code.name
