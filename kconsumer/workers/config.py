"""A worker's configuration: the keys `WorkerGroup` accepts, their defaults and their checks
(invalid ones fail at construction, naming the key)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..client.tls import connection_security
from ..errors import ConfigError

#: Keys of kconsumer's own connections (TLS, SASL): passed through to them.
_SECURITY_PREFIXES = ("security.protocol", "ssl.", "sasl.")

_DEFAULTS: dict[str, int] = {
    "rebalance.timeout.ms": 60_000,
    "lease.timeout.ms": 30_000,
    "scheduled.rebalance.max.delay.ms": 300_000,
    "request.timeout.ms": 30_000,
    "retry.backoff.ms": 100,
    "retry.backoff.max.ms": 1_000,
    "work.check.interval.ms": 10_000,
}
#: Used by classic workers only (``group.protocol=classic``): the new protocol's coordinator
#: sets both for every worker.
_CLASSIC_DEFAULTS: dict[str, int] = {"session.timeout.ms": 45_000, "heartbeat.interval.ms": 3_000}
#: ``connect``: the new protocol (worker groups); ``classic``: Connect's JoinGroup protocol.
PROTOCOLS = ("connect", "classic")
_KNOWN = {
    "bootstrap.servers",
    "group.id",
    "group.instance.id",
    "group.protocol",
    "client.id",
    *_DEFAULTS,
    *_CLASSIC_DEFAULTS,
}


@dataclass(frozen=True)
class WorkerConfig:
    bootstrap_servers: str
    group_id: str
    instance_id: str | None
    client_id: str
    rebalance_timeout_ms: int
    #: How long the worker runs its units without an answered heartbeat (docs/workers.md §lease).
    lease_ms: int
    scheduled_delay_ms: int
    request_timeout_ms: int
    retry_backoff_ms: int
    retry_backoff_max_ms: int
    #: The security settings, for the connections.
    security: Mapping[str, Any]
    protocol: str = "connect"
    work_check_ms: int = 10_000
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 3_000


def parse_config(settings: Mapping[str, Any]) -> WorkerConfig:
    """The checked configuration (ConfigError naming the first bad key)."""
    for key in settings:
        if key not in _KNOWN and not key.startswith(_SECURITY_PREFIXES):
            raise ConfigError(key, "not a worker setting (see docs/workers.md for the keys)")
    for key in ("bootstrap.servers", "group.id"):
        if not str(settings.get(key) or "").strip():
            raise ConfigError(key, "is required")
    instance = settings.get("group.instance.id")
    if instance is not None and not str(instance).strip():
        raise ConfigError("group.instance.id", "must be non-empty when set")
    protocol = str(settings.get("group.protocol", "connect")).lower()
    if protocol not in PROTOCOLS:
        raise ConfigError("group.protocol", f"must be one of {', '.join(PROTOCOLS)}, got {protocol!r}")
    for key in _CLASSIC_DEFAULTS:
        if protocol != "classic" and key in settings:
            raise ConfigError(key, "applies only with group.protocol=classic (the coordinator sets it)")
    numbers = {key: _positive(settings, key, _DEFAULTS) for key in _DEFAULTS}
    numbers.update({key: _positive(settings, key, _CLASSIC_DEFAULTS) for key in _CLASSIC_DEFAULTS})
    if protocol == "classic" and numbers["lease.timeout.ms"] >= numbers["session.timeout.ms"]:
        # A classic worker is removed a session timeout after its last heartbeat: it must have
        # stopped its units by then.
        raise ConfigError("lease.timeout.ms", "must be below session.timeout.ms with group.protocol=classic")
    if numbers["heartbeat.interval.ms"] >= numbers["session.timeout.ms"]:
        raise ConfigError("heartbeat.interval.ms", "must be below session.timeout.ms")
    if numbers["lease.timeout.ms"] >= numbers["rebalance.timeout.ms"]:
        # The coordinator removes a worker that has not confirmed a revocation within its
        # rebalance timeout: the lease must end first (docs/workers.md, the lease).
        raise ConfigError("lease.timeout.ms", "must be below rebalance.timeout.ms")
    if numbers["retry.backoff.max.ms"] < numbers["retry.backoff.ms"]:
        raise ConfigError("retry.backoff.max.ms", "must be at least retry.backoff.ms")
    security = {k: v for k, v in settings.items() if k.startswith(_SECURITY_PREFIXES)}
    connection_security(security)  # fails here, naming the key, rather than at the first connection
    return WorkerConfig(
        bootstrap_servers=str(settings["bootstrap.servers"]),
        group_id=str(settings["group.id"]),
        instance_id=None if instance is None else str(instance),
        client_id=str(settings.get("client.id") or "kconsumer-worker"),
        rebalance_timeout_ms=numbers["rebalance.timeout.ms"],
        lease_ms=numbers["lease.timeout.ms"],
        scheduled_delay_ms=numbers["scheduled.rebalance.max.delay.ms"],
        request_timeout_ms=numbers["request.timeout.ms"],
        retry_backoff_ms=numbers["retry.backoff.ms"],
        retry_backoff_max_ms=numbers["retry.backoff.max.ms"],
        security=security,
        protocol=protocol,
        work_check_ms=numbers["work.check.interval.ms"],
        session_timeout_ms=numbers["session.timeout.ms"],
        heartbeat_interval_ms=numbers["heartbeat.interval.ms"],
    )


def _positive(settings: Mapping[str, Any], key: str, defaults: Mapping[str, int]) -> int:
    value = settings.get(key, defaults[key])
    if isinstance(value, bool):
        raise ConfigError(key, f"must be an integer, got {value!r}")
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ConfigError(key, f"must be an integer, got {value!r}") from None
    zero_ok = key == "scheduled.rebalance.max.delay.ms"
    if number < 0 or (number == 0 and not zero_ok) or number > 2**31 - 1:
        raise ConfigError(key, f"must be {'>= 0' if zero_ok else 'positive'} and an int32, got {number}")
    return number
