"""The cluster-connection options shared by the ``kconsumer`` subcommands that talk to a cluster:
``--bootstrap-servers``, ``-X key=value`` (any librdkafka setting: security protocol, SASL
credentials, certificates, ...) and ``--timeout``."""

from __future__ import annotations

import argparse
from typing import Any


def add_cluster_arguments(parser: argparse.ArgumentParser, *, required: bool, help_servers: str) -> None:
    """Add ``--bootstrap-servers``, ``-X`` and ``--timeout`` to `parser`."""
    parser.add_argument("--bootstrap-servers", metavar="HOST:PORT", required=required, help=help_servers)
    parser.add_argument(
        "-X",
        dest="settings",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a librdkafka setting for the cluster connection (repeatable)",
    )
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the cluster")


def parse_settings(settings: list[str]) -> dict[str, Any]:
    """``-X`` values as a settings dict; ValueError naming a malformed one."""
    config: dict[str, Any] = {}
    for setting in settings:
        key, sep, value = setting.partition("=")
        if not sep or not key:
            raise ValueError(f"-X {setting!r}: expected KEY=VALUE")
        config[key] = value
    return config
