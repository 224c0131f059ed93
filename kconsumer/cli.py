"""The ``kconsumer`` command: one subcommand per task (``kconsumer serve``, ...).

Each subcommand registers itself in `SUBCOMMANDS` with a function adding its options to an
argparse parser and a function running it from the parsed arguments (returning the exit status).
Add a subcommand by adding an entry; `main` does the rest.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from . import __version__


@dataclass(frozen=True)
class Subcommand:
    """One ``kconsumer`` subcommand."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str | None = None


def _serve_arguments(parser: argparse.ArgumentParser) -> None:
    from .broker.server.serve import add_arguments

    add_arguments(parser)


def _serve(args: argparse.Namespace) -> int:
    from .broker.server.serve import run

    return run(args)


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    from .demo import add_arguments

    add_arguments(parser)


def _demo(args: argparse.Namespace) -> int:
    from .demo import run

    return run(args)


def _regex_arguments(parser: argparse.ArgumentParser) -> None:
    from .regex_check import add_arguments

    add_arguments(parser)


def _regex(args: argparse.Namespace) -> int:
    from .regex_check import run

    return run(args)


def _groups_arguments(parser: argparse.ArgumentParser) -> None:
    from .groups.command import add_arguments

    add_arguments(parser)


def _groups(args: argparse.Namespace) -> int:
    from .groups.command import run

    return run(args)


SUBCOMMANDS: list[Subcommand] = [
    Subcommand(
        name="demo",
        help="consumers joining, leaving and crashing in a group on the embedded reference cluster",
        description=(
            "Start the reference cluster, produce continuously, and run consumers (one process each) "
            "that join, leave, crash and restart, printing each member's assignment, epoch and "
            "throughput as they change; check at the end that no record was lost."
        ),
        add_arguments=_demo_arguments,
        run=_demo,
    ),
    Subcommand(
        name="serve",
        help="run the reference cluster (a Kafka-compatible broker, in memory) in the foreground",
        description=(
            "Run the reference cluster as a standalone broker on HOST:PORT until SIGINT or SIGTERM. "
            "Any Kafka client can use it; group events are logged to stderr."
        ),
        add_arguments=_serve_arguments,
        run=_serve,
    ),
    Subcommand(
        name="groups",
        help="list, describe (members, lag), reset and delete offsets of groups; a live view",
        add_arguments=_groups_arguments,
        run=_groups,
    ),
    Subcommand(
        name="regex",
        help="check a subscription pattern as the broker will (RE2, full match) and list its topics",
        add_arguments=_regex_arguments,
        run=_regex,
    ),
]


def build_parser() -> argparse.ArgumentParser:
    """The ``kconsumer`` argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="kconsumer", description="kconsumer: a Kafka consumer for the KIP-848 consumer group protocol."
    )
    parser.add_argument("--version", action="version", version=f"kconsumer {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in SUBCOMMANDS:
        sub = subparsers.add_parser(
            command.name, help=command.help, description=command.description or command.help
        )
        command.add_arguments(sub)
        sub.set_defaults(run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse `argv` (default: the command line) and run the chosen subcommand."""
    parser = build_parser()
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], int] | None = getattr(args, "run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return run(args)
    except BrokenPipeError:
        # The reader went away (``kconsumer groups describe g | head``): stop quietly, as Unix
        # tools do; point stdout at nothing so the interpreter's final flush cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
