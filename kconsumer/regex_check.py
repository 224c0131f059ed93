"""``kconsumer regex check PATTERN``: validate a subscription pattern the way the broker will, and
list the topics it would match.

Kafka resolves a consumer group's regex on the broker with RE2/J and a full-name match
(`kconsumer.patterns`); a pattern this command accepts is accepted by the broker, and the topics
it prints are the ones the broker would subscribe the member to. Topics come from ``--topics``
and/or a cluster's metadata (``--bootstrap-servers``, with ``-X key=value`` for any librdkafka
setting the connection needs: security protocol, SASL credentials, certificates).

Exit status: 0 when the pattern is valid, 1 when it is not (the reason is printed), 2 when the
cluster cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .cluster_options import add_cluster_arguments, parse_settings
from .patterns import InvalidPatternError, compile_pattern, matching_topics


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``kconsumer regex`` options."""
    actions = parser.add_subparsers(dest="regex_action", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check",
        help="validate PATTERN as the broker will (RE2, full match) and list what it matches",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    check.add_argument("pattern", metavar="PATTERN", help="the regular expression (RE2 syntax)")
    check.add_argument(
        "--topics",
        action="append",
        default=[],
        metavar="A,B,...",
        help="topic names to match against (repeatable, comma-separated)",
    )
    add_cluster_arguments(check, required=False, help_servers="also match the topics of this cluster")
    check.add_argument("--format", choices=("text", "json"), default="text", help="output format")


def run(args: argparse.Namespace) -> int:
    """Check the pattern; print the verdict and the matched topics."""
    try:
        compile_pattern(args.pattern)
    except InvalidPatternError as exc:
        _report(args, valid=False, reason=exc.reason, topics=[], matched=[])
        return 1
    topics = {name.strip() for group in args.topics for name in group.split(",") if name.strip()}
    if args.bootstrap_servers:
        try:
            topics |= _cluster_topics(args.bootstrap_servers, args.settings, args.timeout)
        except Exception as exc:
            print(f"cannot read the topics of {args.bootstrap_servers}: {exc}", file=sys.stderr)
            return 2
    matched = sorted(matching_topics(args.pattern, topics))
    _report(args, valid=True, reason=None, topics=sorted(topics), matched=matched)
    return 0


def _cluster_topics(servers: str, settings: list[str], timeout: float) -> set[str]:
    from confluent_kafka.admin import AdminClient

    config: dict[str, Any] = {"bootstrap.servers": servers, "log_level": 3, **parse_settings(settings)}
    metadata = AdminClient(config).list_topics(timeout=timeout)
    return {name for name in metadata.topics if not name.startswith("__")}


def _report(
    args: argparse.Namespace, *, valid: bool, reason: str | None, topics: list[str], matched: list[str]
) -> None:
    if args.format == "json":
        print(
            json.dumps(
                {
                    "pattern": args.pattern,
                    "valid": valid,
                    "reason": reason,
                    "topics_checked": len(topics),
                    "matched": matched,
                }
            )
        )
        return
    if not valid:
        print(f"invalid: {args.pattern!r} is not an RE2 regular expression: {reason}", file=sys.stderr)
        return
    print(f"valid: {args.pattern!r} (RE2, matched against whole topic names)")
    if topics:
        print(f"matches {len(matched)} of {len(topics)} topics:")
        for name in matched:
            print(f"  {name}")
