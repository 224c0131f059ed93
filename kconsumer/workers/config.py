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
}
_KNOWN = {"bootstrap.servers", "group.id", "group.instance.id", "client.id", *_DEFAULTS}


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
    numbers = {key: _positive(settings, key) for key in _DEFAULTS}
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
    )


def _positive(settings: Mapping[str, Any], key: str) -> int:
    value = settings.get(key, _DEFAULTS[key])
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
