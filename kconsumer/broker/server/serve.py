"""``kconsumer serve``: the reference cluster as a standalone process.

Runs a `ReferenceServer` in the foreground, creates the requested topics, prints one line with
its address on stdout once it accepts connections (``listening on HOST:PORT``; useful with
``--port 0``), logs group events to stderr, and shuts down cleanly on SIGINT or SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys

from ...errors import ConfigError
from ..coordinator import CoordinatorConfig
from ..coordinator.assignors import resolve_assignors
from .config import ServerConfig, TlsListener
from .log import topic_name_error
from .security import SASL_MECHANISMS, SaslSettings, Users
from .server import ReferenceServer

logger = logging.getLogger("kconsumer.broker.server")

DEFAULT_PORT = 9092


def topic_spec(text: str) -> tuple[str, int]:
    """``name:partitions`` (or just ``name``, one partition) as an argparse type."""
    name, sep, count = text.rpartition(":")
    if not sep:
        name, count = text, "1"
    try:
        partitions = int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME:PARTITIONS, got {text!r}") from None
    if not name or partitions <= 0:
        raise argparse.ArgumentTypeError(f"expected NAME:PARTITIONS with PARTITIONS > 0, got {text!r}")
    return name, partitions


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``kconsumer serve``."""
    defaults = CoordinatorConfig()
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help="port to listen on, 0 for any free one (default: %(default)s)",
    )
    parser.add_argument(
        "--advertised-host", default=None, help="host clients are told to connect to (default: --host)"
    )
    parser.add_argument(
        "--brokers",
        type=int,
        default=1,
        help="brokers in the cluster (node ids 1..N), on consecutive ports from --port (default: 1)",
    )
    parser.add_argument(
        "--topic",
        dest="topics",
        action="append",
        type=topic_spec,
        default=[],
        metavar="NAME:PARTITIONS",
        help="create this topic at startup (repeatable)",
    )
    parser.add_argument(
        "--heartbeat-interval-ms",
        type=int,
        default=defaults.heartbeat_interval_ms,
        help="group.consumer.heartbeat.interval.ms (default: %(default)s)",
    )
    parser.add_argument(
        "--session-timeout-ms",
        type=int,
        default=defaults.session_timeout_ms,
        help="group.consumer.session.timeout.ms (default: %(default)s)",
    )
    parser.add_argument(
        "--assignment-interval-ms",
        type=int,
        default=defaults.assignment_interval_ms,
        help="group.consumer.assignment.interval.ms (default: %(default)s)",
    )
    parser.add_argument(
        "--assignors",
        default=",".join(defaults.assignors),
        help="server-side assignors, comma-separated, the first is the default (default: %(default)s)",
    )
    parser.add_argument(
        "--max-group-size", type=int, default=defaults.max_group_size, help="group.consumer.max.size"
    )
    parser.add_argument(
        "--auto-create-topics",
        action="store_true",
        help="create unknown topics named in Metadata requests (auto.create.topics.enable; off by default)",
    )
    parser.add_argument(
        "--default-partitions",
        type=int,
        default=1,
        help="partitions of auto-created topics (num.partitions; default: %(default)s)",
    )
    parser.add_argument(
        "--retention-bytes",
        type=int,
        default=None,
        help="per-partition retention by bytes; older batches are dropped (default: keep everything)",
    )
    parser.add_argument(
        "--ssl-certificate",
        default=None,
        metavar="PEM",
        help="serve TLS (security.protocol SSL) with this certificate (PEM file; with --ssl-key)",
    )
    parser.add_argument(
        "--ssl-key", default=None, metavar="PEM", help="the certificate's private key (PEM file)"
    )
    parser.add_argument(
        "--ssl-client-ca",
        default=None,
        metavar="PEM",
        help="require client certificates signed by this CA (mutual TLS; with --ssl-certificate)",
    )
    parser.add_argument(
        "--sasl-mechanism",
        action="append",
        default=None,
        choices=SASL_MECHANISMS,
        help="authenticate every connection with SASL (SASL_PLAINTEXT, or SASL_SSL with "
        "--ssl-certificate); repeat to enable several mechanisms",
    )
    parser.add_argument(
        "--user",
        action="append",
        default=[],
        metavar="NAME:PASSWORD",
        help="a SASL user (repeatable); its SCRAM credentials are derived at start, salted",
    )
    parser.add_argument(
        "--max-reauth-ms",
        type=int,
        default=None,
        help="connections.max.reauth.ms: clients must re-authenticate within this (default: never)",
    )
    parser.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="log level of the server's log on stderr (default: %(default)s)",
    )


def config_from(args: argparse.Namespace) -> ServerConfig:
    """The server configuration the parsed options describe (ConfigError if inconsistent)."""
    assignors = tuple(name.strip() for name in args.assignors.split(",") if name.strip())
    try:
        resolve_assignors(assignors)
    except (LookupError, ValueError) as exc:
        raise ConfigError("assignors", str(exc)) from None
    coordinator = CoordinatorConfig(
        session_timeout_ms=args.session_timeout_ms,
        heartbeat_interval_ms=args.heartbeat_interval_ms,
        assignment_interval_ms=args.assignment_interval_ms,
        max_group_size=args.max_group_size,
        assignors=assignors,
    )
    return ServerConfig(
        tls=_tls_from(args),
        sasl=_sasl_from(args),
        brokers=args.brokers,
        host=args.host,
        port=args.port,
        advertised_host=args.advertised_host,
        auto_create_topics=args.auto_create_topics,
        default_partitions=args.default_partitions,
        retention_bytes=args.retention_bytes,
        coordinator=coordinator,
        keep_coordinator_log=False,  # no failover here, and the log would only grow
    )


def _tls_from(args: argparse.Namespace) -> TlsListener | None:
    if args.ssl_certificate is None and args.ssl_key is None:
        if args.ssl_client_ca is not None:
            raise ConfigError("ssl-client-ca", "needs --ssl-certificate and --ssl-key")
        return None
    if args.ssl_certificate is None or args.ssl_key is None:
        raise ConfigError("ssl-certificate", "--ssl-certificate and --ssl-key go together")
    for name, path in (
        ("ssl-certificate", args.ssl_certificate),
        ("ssl-key", args.ssl_key),
        ("ssl-client-ca", args.ssl_client_ca),
    ):
        if path is not None and not os.access(path, os.R_OK):
            raise ConfigError(name, f"cannot read {path!r}")
    return TlsListener(args.ssl_certificate, args.ssl_key, args.ssl_client_ca)


def _sasl_from(args: argparse.Namespace) -> SaslSettings | None:
    if not args.sasl_mechanism:
        if args.user or args.max_reauth_ms is not None:
            raise ConfigError("sasl-mechanism", "--user and --max-reauth-ms need --sasl-mechanism")
        return None
    passwords: dict[str, str] = {}
    for entry in args.user:
        name, sep, password = entry.partition(":")
        if not sep or not name or not password:
            raise ConfigError("user", f"expected NAME:PASSWORD, got {entry!r}")
        passwords[name] = password
    if not passwords and args.sasl_mechanism != ["OAUTHBEARER"]:
        raise ConfigError("user", "PLAIN and SCRAM need at least one --user NAME:PASSWORD")
    return SaslSettings(tuple(args.sasl_mechanism), Users.of(passwords), args.max_reauth_ms)


async def serve(config: ServerConfig, topics: list[tuple[str, int]]) -> None:
    """Run the server until SIGINT or SIGTERM."""
    server = ReferenceServer(config)
    await server.start()
    try:
        for name, partitions in topics:
            server.broker.topics.create(name, partitions)
            logger.info("created topic %s with %d partition(s)", name, partitions)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        print(f"listening on {server.bootstrap_servers}", flush=True)
        await stop.wait()
        logger.info("shutting down")
    finally:
        await server.stop()


def run(args: argparse.Namespace) -> int:
    """Entry point of ``kconsumer serve``; returns the exit status."""
    logging.basicConfig(
        level=getattr(logging, args.log_level),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        config = config_from(args)
    except ConfigError as exc:
        print(f"kconsumer serve: {exc}", file=sys.stderr)
        return 2
    for name, _partitions in args.topics:
        problem = topic_name_error(name)
        if problem is not None:
            print(f"kconsumer serve: --topic {name}: {problem}", file=sys.stderr)
            return 2
    try:
        asyncio.run(serve(config, args.topics))
    except OSError as exc:
        print(f"kconsumer serve: cannot listen on {config.host}:{config.port}: {exc}", file=sys.stderr)
        return 1
    return 0
