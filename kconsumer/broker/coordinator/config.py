"""Coordinator configuration, with Kafka 4.3's defaults (facts §5.16)."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import ConfigError

DEFAULT_SESSION_TIMEOUT_MS = 45_000
DEFAULT_HEARTBEAT_INTERVAL_MS = 5_000
DEFAULT_ASSIGNMENT_INTERVAL_MS = 1_000
DEFAULT_MAX_GROUP_SIZE = 2**31 - 1
DEFAULT_OFFSET_METADATA_MAX_BYTES = 4096


@dataclass(frozen=True)
class CoordinatorConfig:
    """Settings of the reference group coordinator.

    Kafka's defaults apply; tests, simulations and the demo shorten the timeouts. Unlike a real
    broker, no minimum is enforced on the session timeout or heartbeat interval, so a test can
    run a member failure in a fraction of a second.
    """

    #: ``group.consumer.session.timeout.ms``
    session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS
    #: ``group.consumer.heartbeat.interval.ms``
    heartbeat_interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS
    #: ``group.consumer.max.size``
    max_group_size: int = DEFAULT_MAX_GROUP_SIZE
    #: ``group.consumer.assignment.interval.ms`` (Kafka 4.3 batching; 0 computes at once)
    assignment_interval_ms: int = DEFAULT_ASSIGNMENT_INTERVAL_MS
    #: ``group.consumer.assignors``: server-side assignor names, the first is the default
    assignors: tuple[str, ...] = ("uniform", "range")
    #: ``offset.metadata.max.bytes``
    offset_metadata_max_bytes: int = DEFAULT_OFFSET_METADATA_MAX_BYTES

    def __post_init__(self) -> None:
        if self.session_timeout_ms <= 0:
            raise ConfigError("session_timeout_ms", "must be positive")
        if not 0 < self.heartbeat_interval_ms < self.session_timeout_ms:
            raise ConfigError("heartbeat_interval_ms", "must be positive and smaller than session_timeout_ms")
        if self.max_group_size <= 0:
            raise ConfigError("max_group_size", "must be positive")
        if not 0 <= self.assignment_interval_ms <= 15_000:
            raise ConfigError("assignment_interval_ms", "must be between 0 and 15000")
        if not self.assignors:
            raise ConfigError("assignors", "at least one server-side assignor is needed")
        if self.offset_metadata_max_bytes < 0:
            raise ConfigError("offset_metadata_max_bytes", "must not be negative")

    @property
    def default_assignor(self) -> str:
        return self.assignors[0]
