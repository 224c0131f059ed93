"""Coordinator configuration, with Kafka 4.3's defaults."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import ConfigError

DEFAULT_SESSION_TIMEOUT_MS = 45_000
DEFAULT_HEARTBEAT_INTERVAL_MS = 5_000
DEFAULT_ASSIGNMENT_INTERVAL_MS = 1_000
DEFAULT_MAX_GROUP_SIZE = 2**31 - 1
DEFAULT_OFFSET_METADATA_MAX_BYTES = 4096
DEFAULT_CLASSIC_INITIAL_REBALANCE_DELAY_MS = 3_000
DEFAULT_CLASSIC_MIN_SESSION_TIMEOUT_MS = 6_000
DEFAULT_CLASSIC_MAX_SESSION_TIMEOUT_MS = 1_800_000
#: Kafka's fixed limit on a new classic member's JoinGroup wait (classicGroupNewMemberJoinTimeoutMs).
CLASSIC_NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000
MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")


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
    #: ``group.initial.rebalance.delay.ms`` (classic groups)
    classic_initial_rebalance_delay_ms: int = DEFAULT_CLASSIC_INITIAL_REBALANCE_DELAY_MS
    #: ``group.classic.min.session.timeout.ms`` / ``group.classic.max.session.timeout.ms``
    classic_min_session_timeout_ms: int = DEFAULT_CLASSIC_MIN_SESSION_TIMEOUT_MS
    classic_max_session_timeout_ms: int = DEFAULT_CLASSIC_MAX_SESSION_TIMEOUT_MS
    #: ``group.classic.max.size``
    classic_max_group_size: int = DEFAULT_MAX_GROUP_SIZE
    #: ``group.consumer.migration.policy``: bidirectional, upgrade, downgrade or disabled
    migration_policy: str = "bidirectional"

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
        if self.classic_initial_rebalance_delay_ms < 0:
            raise ConfigError("classic_initial_rebalance_delay_ms", "must not be negative")
        if not 0 < self.classic_min_session_timeout_ms <= self.classic_max_session_timeout_ms:
            raise ConfigError(
                "classic_min_session_timeout_ms",
                "must be positive and at most classic_max_session_timeout_ms",
            )
        if self.classic_max_group_size <= 0:
            raise ConfigError("classic_max_group_size", "must be positive")
        if self.migration_policy.lower() not in MIGRATION_POLICIES:
            raise ConfigError("migration_policy", f"must be one of {', '.join(MIGRATION_POLICIES)}")

    @property
    def default_assignor(self) -> str:
        return self.assignors[0]

    @property
    def allows_upgrade(self) -> bool:
        """A classic group may become a consumer group online."""
        return self.migration_policy.lower() in ("bidirectional", "upgrade")

    @property
    def allows_downgrade(self) -> bool:
        """A consumer group whose members all use the classic protocol may become classic again."""
        return self.migration_policy.lower() in ("bidirectional", "downgrade")
