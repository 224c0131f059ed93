"""Consumer configuration: confluent-kafka style keys, validated once, at construction.

``ConsumerConfig.from_dict({...})`` checks every key and value and raises `ConfigError(key, reason)`
on the first problem: an unknown key (with the closest known keys as a hint), a value of the wrong
type or out of range, or a combination that cannot work. Booleans and integers may be given as
Python values or as librdkafka-style strings (``"true"``, ``"5000"``).

Three groups of keys:

**kconsumer's own** (typed fields of `ConsumerConfig`):

====================================  ===========  =========================================
key                                   default      notes
====================================  ===========  =========================================
bootstrap.servers                     (required)   ``host:port[,host:port...]``
group.id                              None         required to subscribe
group.protocol                        consumer     or ``classic`` (JoinGroup/SyncGroup, below)
group.instance.id                     None         static membership
client.id                             kconsumer
client.rack                           None         also passed to librdkafka (fetch from follower)
group.remote.assignor                 None         server-side assignor name (``uniform``, ``range``)
group.local.assignors                 ()           assignor objects or ``"module:Class"`` strings;
                                                   exclusive with group.remote.assignor
max.poll.interval.ms                  300000       also the RebalanceTimeoutMs of the heartbeat
enable.auto.commit                    true
enable.auto.offset.store              true         false: commits carry only what ``store_offsets``
                                                   stored (confluent-kafka's at-least-once idiom)
auto.commit.interval.ms               5000
auto.offset.reset                     latest       earliest/latest/none; smallest, beginning ->
                                                   earliest; largest, end -> latest; error -> none
retry.backoff.ms                      100
retry.backoff.max.ms                  1000         >= retry.backoff.ms
request.timeout.ms                    30000
socket.connection.setup.timeout.ms    10000        also passed to librdkafka
heartbeat.alignment                   group        ``group``: regular heartbeats on the group's
                                                   wall-clock ticks, so a hand-over needs one wait
                                                   (`member.grid`); ``none``: each member at its own
                                                   interval. Consumer protocol only
on_commit                             None         ``on_commit(err, partitions)``, called by kconsumer
                                                   for its own commits (librdkafka never commits here)
====================================  ===========  =========================================

**Classic protocol only** (``group.protocol=classic``), as in confluent-kafka:

====================================  ===========  =========================================
session.timeout.ms                    45000        1-3600000 (the broker's range applies too)
heartbeat.interval.ms                 3000         below session.timeout.ms
partition.assignment.strategy         range,       ``range``, ``roundrobin``, ``cooperative-sticky``,
                                      roundrobin   your PartitionAssignors or ``"module:Class"``
                                                   (all eager or all cooperative)
====================================  ===========  =========================================

With ``group.protocol=consumer`` these three are **refused because the consumer protocol moved them
to the broker**, as Kafka's consumer refuses them (the error says which broker or group setting to
use instead); ``group.remote.assignor`` and ``group.local.assignors`` are refused with classic.

**Passed through to the inner librdkafka handle** (the fetch path, `librdkafka_passthrough`): the
keys in `PASSTHROUGH_KEYS` and every key starting with one of `PASSTHROUGH_PREFIXES` (``fetch.``,
``ssl.``, ``sasl.``, ``socket.``, ``queued.``, ...). kconsumer checks only that their values are
plain values (or callables for the ``*_cb`` and ``logger`` keys); librdkafka validates them when the
runtime creates the handle. Keys that would let librdkafka manage the group or the offsets
(``rebalance_cb``, ...) are unknown keys here; ``enable.auto.offset.store`` is kconsumer's own.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..assignment.announcements import AnnouncedAssignor
from ..assignment.assignor import assignor_metadata
from ..errors import ConfigError
from .assignor_config import LocalAssignor, classic_strategies, local_assignors
from .member.model import ClassicSettings, MemberConfig, OffsetReset

MAX_INT32 = 2**31 - 1


#: librdkafka keys passed through as they are.
PASSTHROUGH_KEYS: frozenset[str] = frozenset(
    {
        "max.partition.fetch.bytes",
        "isolation.level",
        "security.protocol",
        "client.dns.lookup",
        "debug",
        "statistics.interval.ms",
        "check.crcs",
        "enable.partition.eof",
        "broker.address.family",
        "broker.address.ttl",
        "connections.max.idle.ms",
        "message.max.bytes",
        "receive.message.max.bytes",
        "log_level",
        "log.connection.close",
        "log.queue",
        "log.thread.name",
        "logger",
        "error_cb",
        "stats_cb",
        "throttle_cb",
        "oauth_cb",
        "enable.ssl.certificate.verification",
        "enable.sasl.oauthbearer.unsecure.jwt",
        "allow.auto.create.topics",
        "plugin.library.paths",
        "client.software.name",
        "client.software.version",
        "enable.metrics.push",
        # Global properties with no bearing on kconsumer's semantics, for the fetch handle.
        "message.copy.max.bytes",
        "max.in.flight.requests.per.connection",
        "max.in.flight",
        "topic.blacklist",
        "enabled_events",
        "enable.random.seed",
        "internal.termination.signal",
        "broker.version.fallback",
        "consume.callback.max.messages",
        "offset.store.method",
        "offset.store.path",
        "offset.store.sync.interval.ms",
    }
)

#: librdkafka keys confluent-kafka's consumer accepts that kconsumer accepts and does not apply,
#: with the reason (docs/parity.md lists them).
IGNORED_KEYS: Mapping[str, str] = MappingProxyType(
    {
        "coordinator.query.interval.ms": (
            "the member looks its coordinator up again when a request says it moved or fails, not on a timer"
        ),
        "auto.commit.enable": (
            "librdkafka's legacy simple-consumer property, which its high-level consumer ignores too "
            "(enable.auto.commit applies)"
        ),
        "max.poll.records": "a share-consumer setting (KIP-932): kconsumer has no share consumer",
        "share.acknowledgement.mode": "a share-consumer setting (KIP-932): kconsumer has no share consumer",
    }
)

#: Prefixes of librdkafka keys passed through as they are.
PASSTHROUGH_PREFIXES: tuple[str, ...] = (
    "fetch.",
    "ssl.",
    "sasl.",
    "socket.",
    "queued.",
    "reconnect.",
    "topic.metadata.",
    "metadata.",
    "api.version.",
    "https.",
)

_CALLABLE_PASSTHROUGH = frozenset({"logger", "error_cb", "stats_cb", "throttle_cb", "oauth_cb"})

#: Keys Kafka's consumer refuses with group.protocol=consumer, and what to use instead (with
#: classic they are the classic protocol's; ``group.protocol.type`` is accepted and ignored there:
#: kconsumer's classic members join as "consumer", the only type librdkafka supports).
REFUSED_KEYS: Mapping[str, str] = {
    "group.protocol.type": "only for group.protocol=classic, as librdkafka",
    "session.timeout.ms": (
        "not supported with group.protocol=consumer: the session timeout is set on the broker "
        "(group.consumer.session.timeout.ms) or per group (the group config consumer.session.timeout.ms)"
    ),
    "heartbeat.interval.ms": (
        "not supported with group.protocol=consumer: the coordinator sets the heartbeat interval "
        "(broker config group.consumer.heartbeat.interval.ms, or the group config "
        "consumer.heartbeat.interval.ms)"
    ),
    "partition.assignment.strategy": (
        "not supported with group.protocol=consumer: partitions are assigned by the coordinator; choose a "
        "server-side assignor with group.remote.assignor (one of the broker's group.consumer.assignors, "
        "for example uniform or range), or a client-side one with group.local.assignors"
    ),
}

_OFFSET_RESET: Mapping[str, OffsetReset] = {
    "earliest": OffsetReset.EARLIEST,
    "smallest": OffsetReset.EARLIEST,
    "beginning": OffsetReset.EARLIEST,
    "latest": OffsetReset.LATEST,
    "largest": OffsetReset.LATEST,
    "end": OffsetReset.LATEST,
    "none": OffsetReset.NONE,
    "error": OffsetReset.NONE,
}

# Own integer keys: (field, default, minimum, maximum).
_INTS: Mapping[str, tuple[str, int, int, int]] = {
    "max.poll.interval.ms": ("max_poll_interval_ms", 300_000, 1, 86_400_000),
    "auto.commit.interval.ms": ("auto_commit_interval_ms", 5_000, 1, 86_400_000),
    "retry.backoff.ms": ("retry_backoff_ms", 100, 1, 300_000),
    "retry.backoff.max.ms": ("retry_backoff_max_ms", 1_000, 1, 300_000),
    "request.timeout.ms": ("request_timeout_ms", 30_000, 1, 900_000),
    "socket.connection.setup.timeout.ms": ("socket_connection_setup_timeout_ms", 10_000, 1_000, MAX_INT32),
}
#: Integer keys of the classic protocol only.
_CLASSIC_INTS: Mapping[str, tuple[str, int, int, int]] = {
    "session.timeout.ms": ("session_timeout_ms", 45_000, 1, 3_600_000),
    "heartbeat.interval.ms": ("heartbeat_interval_ms", 3_000, 1, 3_600_000),
}
_OPTIONAL_STRINGS: Mapping[str, str] = {
    "group.id": "group_id",
    "group.instance.id": "group_instance_id",
    "client.rack": "client_rack",
    "group.remote.assignor": "group_remote_assignor",
}
_OWN_KEYS = frozenset(
    {
        "bootstrap.servers",
        "group.protocol",
        "client.id",
        "group.local.assignors",
        "enable.auto.commit",
        "enable.auto.offset.store",
        "auto.offset.reset",
        "heartbeat.alignment",
        "on_commit",
        *_INTS,
        *_OPTIONAL_STRINGS,
    }
)


#: librdkafka settings kconsumer's fetch handle uses unless the application sets them itself.
#: ``fetch.queue.backoff.ms`` (librdkafka: 1000): how long librdkafka postpones a partition's next
#: fetch once its local queue thresholds (``queued.min.messages``, ``queued.max.messages.kbytes``)
#: are exceeded. At 8 and 32 partitions the default left the handle idle most of the time (about
#: 260-290 k records/s against 1.7-1.9 M at 20 ms); 0 made a consumer whose application stops
#: polling spin a whole core re-checking full queues, 20 ms costs about 1 % of one.
#: ``queued.min.messages`` (librdkafka: 100,000): librdkafka compares it with the whole consumer
#: queue, every partition's records together, so with many partitions each backs off while the
#: application drains; 1,000,000 measured 12-20 % more records/s from 8 to 256 partitions. The
#: queue stays bounded by ``queued.max.messages.kbytes`` (64 MB of records, librdkafka's own
#: bound for bigger values). Measured in docs/benchmarks.md ("The fetch handle's defaults").
FETCH_HANDLE_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {"fetch.queue.backoff.ms": 20, "queued.min.messages": 1_000_000}
)


@dataclass(frozen=True)
class ConsumerConfig:
    """A validated consumer configuration (see the module docstring for every key)."""

    bootstrap_servers: str
    group_id: str | None = None
    group_protocol: str = "consumer"
    group_instance_id: str | None = None
    client_id: str = "kconsumer"
    client_rack: str | None = None
    group_remote_assignor: str | None = None
    group_local_assignors: tuple[LocalAssignor, ...] = ()
    max_poll_interval_ms: int = 300_000
    enable_auto_commit: bool = True
    enable_auto_offset_store: bool = True
    auto_commit_interval_ms: int = 5_000
    auto_offset_reset: OffsetReset = OffsetReset.LATEST
    heartbeat_alignment: str = "group"
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1_000
    request_timeout_ms: int = 30_000
    socket_connection_setup_timeout_ms: int = 10_000
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 3_000
    partition_assignment_strategy: tuple[str, ...] = ("range", "roundrobin")
    partition_assignment_cooperative: bool = False
    on_commit: Callable[..., Any] | None = None
    librdkafka_passthrough: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def from_dict(cls, config: Mapping[str, Any]) -> ConsumerConfig:
        """Validate confluent-kafka style `config`; raises `ConfigError` naming the first bad key."""
        if not isinstance(config, Mapping):
            raise ConfigError("<config>", f"expected a dict of settings, got {type(config).__name__}")
        config = _with_topic_config(config)
        values: dict[str, Any] = {}
        passthrough: dict[str, Any] = {}
        protocol = _string("group.protocol", config.get("group.protocol", "consumer")).lower()
        if protocol not in ("consumer", "classic"):
            raise ConfigError("group.protocol", f"must be 'consumer' or 'classic', got {protocol!r}")
        values["group_protocol"] = protocol
        for key, value in config.items():
            if not isinstance(key, str):
                raise ConfigError(repr(key), "configuration keys are strings")
            if key in REFUSED_KEYS:
                if protocol == "consumer":
                    raise ConfigError(key, REFUSED_KEYS[key])
                continue
            if key in _OWN_KEYS or key in IGNORED_KEYS:
                continue
            if key in PASSTHROUGH_KEYS or key.startswith(PASSTHROUGH_PREFIXES):
                passthrough[key] = _passthrough_value(key, value)
            else:
                raise ConfigError(key, _unknown(key))

        if "bootstrap.servers" not in config:
            raise ConfigError("bootstrap.servers", "required (host:port of at least one broker)")
        values["bootstrap_servers"] = _servers(config["bootstrap.servers"])
        if protocol == "classic":
            values.update(_classic_values(config))
        for key, name in _OPTIONAL_STRINGS.items():
            if config.get(key) is not None:
                values[name] = _string(key, config[key])
        if "client.id" in config:
            values["client_id"] = _string("client.id", config["client.id"])
        for key, (name, _default, low, high) in _INTS.items():
            if key in config:
                values[name] = _integer(key, config[key], low, high)
        session = values.get("session_timeout_ms", 45_000)
        if (
            protocol == "classic"
            and "max.poll.interval.ms" in config
            and values["max_poll_interval_ms"] < session
        ):
            # as librdkafka: a member would be removed for not polling before it could time out
            raise ConfigError(
                "max.poll.interval.ms", f"must be >= session.timeout.ms ({session}) with classic"
            )
        if "enable.auto.commit" in config:
            values["enable_auto_commit"] = boolean_setting("enable.auto.commit", config["enable.auto.commit"])
        if "enable.auto.offset.store" in config:
            values["enable_auto_offset_store"] = boolean_setting(
                "enable.auto.offset.store", config["enable.auto.offset.store"]
            )
        if "auto.offset.reset" in config:
            values["auto_offset_reset"] = _offset_reset(config["auto.offset.reset"])
        if "heartbeat.alignment" in config:
            values["heartbeat_alignment"] = _alignment(config["heartbeat.alignment"])
        if config.get("on_commit") is not None:
            if not callable(config["on_commit"]):
                raise ConfigError("on_commit", "must be callable: on_commit(err, partitions)")
            values["on_commit"] = config["on_commit"]
        if config.get("group.local.assignors") is not None:
            values["group_local_assignors"] = local_assignors(config["group.local.assignors"])

        if values.get("group_local_assignors") and values.get("group_remote_assignor"):
            raise ConfigError(
                "group.local.assignors",
                "cannot be used together with group.remote.assignor: choose a client-side or a "
                "server-side assignor",
            )
        backoff = values.get("retry_backoff_ms", 100)
        if values.get("retry_backoff_max_ms", 1_000) < backoff:
            raise ConfigError("retry.backoff.max.ms", f"must be >= retry.backoff.ms ({backoff})")
        values["librdkafka_passthrough"] = MappingProxyType(passthrough)
        return cls(**values)

    @property
    def classic(self) -> bool:
        """True with ``group.protocol=classic``."""
        return self.group_protocol == "classic"

    def require_group(self) -> str:
        """The group id; raises `ConfigError` when it is missing (subscribing needs one)."""
        if self.group_id is None:
            raise ConfigError("group.id", "required to subscribe (the consumer group to join)")
        return self.group_id

    def member_config(self, metadata: Mapping[str, tuple[int, bytes]] | None = None) -> MemberConfig:
        """The member core's configuration. `metadata` gives each local assignor's initial
        (metadata version, bytes); by default what its ``metadata()`` returns (without one: its
        maximum version and no bytes)."""
        metadata = metadata or {}
        assignors = []
        for assignor in () if self.classic else self.group_local_assignors:
            if assignor.name in metadata:
                reason, (version, data) = 0, metadata[assignor.name]
            else:
                meta = assignor_metadata(assignor)
                reason, version, data = meta.reason, meta.version, meta.data
            assignors.append(
                AnnouncedAssignor(
                    assignor.name, assignor.minimum_version, assignor.maximum_version, version, data, reason
                )
            )
        return MemberConfig(
            group_id=self.require_group(),
            instance_id=self.group_instance_id,
            rack_id=self.client_rack,
            rebalance_timeout_ms=self.max_poll_interval_ms,
            server_assignor=self.group_remote_assignor,
            client_assignors=tuple(assignors),
            auto_commit=self.enable_auto_commit,
            auto_commit_interval_ms=self.auto_commit_interval_ms,
            auto_offset_reset=self.auto_offset_reset,
            retry_backoff_ms=self.retry_backoff_ms,
            retry_backoff_max_ms=self.retry_backoff_max_ms,
            require_stable=self.librdkafka_passthrough.get("isolation.level") != "read_uncommitted",
            align_heartbeats=self.heartbeat_alignment == "group",
            classic=self._classic_settings(),
        )

    def _classic_settings(self) -> ClassicSettings | None:
        if not self.classic:
            return None
        refresh = self.librdkafka_passthrough.get("topic.metadata.refresh.interval.ms", 300_000)
        return ClassicSettings(
            strategies=self.partition_assignment_strategy,
            cooperative=self.partition_assignment_cooperative,
            local_strategies={a.name: assignor_metadata(a).data for a in self.group_local_assignors},
            session_timeout_ms=self.session_timeout_ms,
            heartbeat_interval_ms=self.heartbeat_interval_ms,
            # librdkafka's key (also given to the fetch handle); -1 there means never: 5 minutes
            metadata_refresh_ms=int(refresh) if int(refresh) > 0 else 300_000,
        )

    def librdkafka_config(self) -> dict[str, Any]:
        """The configuration of the inner librdkafka handle (manual assign, no group, no offset
        management): the passthrough keys plus what the fetch path needs from ours."""
        inner: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "client.id": self.client_id,
            "socket.connection.setup.timeout.ms": self.socket_connection_setup_timeout_ms,
            "auto.offset.reset": self.auto_offset_reset.value
            if self.auto_offset_reset is not OffsetReset.NONE
            else "error",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
        }
        if self.client_rack is not None:
            inner["client.rack"] = self.client_rack
        inner.update(FETCH_HANDLE_DEFAULTS)
        inner.update(self.librdkafka_passthrough)
        return inner


# -- value parsing ---------------------------------------------------------------------------------


def _unknown(key: str) -> str:
    known = sorted(_OWN_KEYS | PASSTHROUGH_KEYS | set(REFUSED_KEYS))
    close = difflib.get_close_matches(key, known, n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    return f"unknown configuration key{hint}"


def _with_topic_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """confluent-kafka's ``default.topic.config``: a dict of (topic) settings merged into the
    configuration; a key given at the top level wins."""
    if "default.topic.config" not in config:
        return config
    nested = config["default.topic.config"]
    if not isinstance(nested, Mapping):
        raise ConfigError("default.topic.config", f"must be a dict of settings, got {type(nested).__name__}")
    rest = {k: v for k, v in config.items() if k != "default.topic.config"}
    return {**nested, **rest}


def _string(key: str, value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)  # confluent-kafka hands librdkafka str(value): group.id=42 is "42"
    if not isinstance(value, str):
        raise ConfigError(key, f"must be a string, got {type(value).__name__}")
    if not value.strip():
        raise ConfigError(key, "must not be empty")
    return value


def _classic_values(config: Mapping[str, Any]) -> dict[str, Any]:
    """The classic protocol's own keys, validated (`ConfigError` naming the first bad one)."""
    values: dict[str, Any] = {}
    for key in ("group.remote.assignor", "group.local.assignors"):
        if config.get(key) is not None:
            raise ConfigError(
                key,
                "not supported with group.protocol=classic: the group's leader assigns with "
                "partition.assignment.strategy (range, roundrobin, cooperative-sticky or your own "
                "PartitionAssignor)",
            )
    if config.get("heartbeat.alignment") is not None:
        raise ConfigError(
            "heartbeat.alignment",
            "only for group.protocol=consumer (classic heartbeats keep heartbeat.interval.ms)",
        )
    for key, (name, _default, low, high) in _CLASSIC_INTS.items():
        if key in config:
            values[name] = _integer(key, config[key], low, high)
    session = values.get("session_timeout_ms", 45_000)
    if values.get("heartbeat_interval_ms", 3_000) >= session:
        raise ConfigError("heartbeat.interval.ms", f"must be below session.timeout.ms ({session})")
    if "partition.assignment.strategy" in config:
        strategies = classic_strategies(config["partition.assignment.strategy"])
        values["partition_assignment_strategy"] = strategies.names
        values["partition_assignment_cooperative"] = strategies.cooperative
        values["group_local_assignors"] = strategies.user_assignors
    return values


def _servers(value: Any) -> str:
    servers = _string("bootstrap.servers", value)
    entries = [entry.strip() for entry in servers.split(",")]
    if any(not entry for entry in entries):
        raise ConfigError("bootstrap.servers", f"empty entry in {servers!r}")
    return ",".join(entries)


def _integer(key: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool):
        raise ConfigError(key, f"must be an integer, got {value!r}")
    if isinstance(value, str):
        text = value.strip()
        if not text.lstrip("-").isdigit():
            raise ConfigError(key, f"must be an integer, got {value!r}")
        value = int(text)
    if isinstance(value, float) and math.isfinite(value):
        value = int(value)  # toward zero: confluent-kafka passes str(1.5), which librdkafka reads as 1
    if not isinstance(value, int):
        raise ConfigError(key, f"must be an integer, got {type(value).__name__}")
    if not low <= value <= high:
        raise ConfigError(key, f"must be between {low} and {high}, got {value}")
    return value


def boolean_setting(key: str, value: Any) -> bool:
    """A true/false setting as confluent-kafka accepts it (a bool, or "true"/"false"/"1"/"0")."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0"):
        return value.strip().lower() in ("true", "1")
    raise ConfigError(key, f"must be true or false, got {value!r}")


def _alignment(value: Any) -> str:
    text = _string("heartbeat.alignment", value).strip().lower()
    if text not in ("group", "none"):
        raise ConfigError("heartbeat.alignment", f"must be group or none; got {value!r}")
    return text


def _offset_reset(value: Any) -> OffsetReset:
    text = _string("auto.offset.reset", value).strip().lower()
    try:
        return _OFFSET_RESET[text]
    except KeyError:
        allowed = ", ".join(_OFFSET_RESET)
        raise ConfigError("auto.offset.reset", f"must be one of {allowed}; got {value!r}") from None


def _passthrough_value(key: str, value: Any) -> Any:
    if key in _CALLABLE_PASSTHROUGH:
        if not callable(value) and not (key == "logger" and value is not None):
            raise ConfigError(key, "must be callable")
        return value
    if isinstance(value, (str, int, float, bool)):
        return value
    raise ConfigError(
        key, f"must be a string, number or boolean (passed to librdkafka), got {type(value).__name__}"
    )
