"""Settings of the reference cluster's broker (the group coordinator has its own, `CoordinatorConfig`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import ConfigError
from ...protocol.headers import DEFAULT_MAX_FRAME_BYTES
from ..coordinator import CoordinatorConfig
from .security import Authorizer, SaslSettings

#: The broker's node id: it is node 1, leader of every partition and coordinator of every group.
NODE_ID = 1
#: The cluster id Metadata reports.
DEFAULT_CLUSTER_ID = "kconsumer-reference"


@dataclass(frozen=True)
class TlsListener:
    """The listener speaks TLS (security.protocol SSL) with this certificate and key (PEM files);
    with `client_ca`, clients must present a certificate signed by it (mutual TLS)."""

    certificate: str
    key: str
    client_ca: str | None = None


@dataclass(frozen=True)
class Listener:
    """One more listener every broker opens besides the main one (`ServerConfig.port`, `tls`,
    `sasl`): its own port (0: a free one), security and name. Metadata and FindCoordinator answer a
    connection with the brokers' addresses on the listener it came in on, as Kafka does."""

    name: str
    port: int = 0
    tls: TlsListener | None = None
    sasl: SaslSettings | None = None

    @property
    def security_protocol(self) -> str:
        return ("SASL_" if self.sasl else "") + ("SSL" if self.tls else "PLAINTEXT")


@dataclass(frozen=True)
class ServerConfig:
    """How the reference broker behaves.

    The defaults follow Kafka where Kafka has a setting: ``num.partitions`` (1) for topics created
    with -1 partitions or auto-created, ``auto.create.topics.enable`` (here **off** by default, so
    a typo in a topic name is an error rather than a new topic), ``socket.request.max.bytes``.
    """

    #: Address to listen on. Port 0 picks a free port (see `ReferenceServer.port`).
    host: str = "127.0.0.1"
    port: int = 0
    #: The host Metadata and FindCoordinator tell clients to connect to; None: `host`, or
    #: 127.0.0.1 when `host` is a wildcard address.
    advertised_host: str | None = None
    #: Create unknown topics named in Metadata requests that allow it (``auto.create.topics.enable``).
    auto_create_topics: bool = False
    #: Partitions of auto-created topics and of CreateTopics with NumPartitions -1 (``num.partitions``).
    default_partitions: int = 1
    #: Per-partition retention by bytes (``retention.bytes``); None keeps everything. When a
    #: partition grows past it, whole batches are dropped from its start and its log start offset moves.
    retention_bytes: int | None = None
    #: Frames announcing more bytes than this close the connection (``socket.request.max.bytes``).
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    #: Check the CRC-32C of every produced batch (Kafka does; CORRUPT_MESSAGE when it fails).
    verify_crc: bool = True
    #: Reported by Metadata.
    cluster_id: str = DEFAULT_CLUSTER_ID
    #: TLS on the listener (None: plaintext).
    tls: TlsListener | None = None
    #: SASL authentication on the listener (None: none); with `tls` the listener is SASL_SSL.
    sasl: SaslSettings | None = None
    #: More listeners on every broker (each its own port and security).
    extra_listeners: tuple[Listener, ...] = ()
    #: Who may do what (None: everyone may do everything, as Kafka without an authorizer).
    authorizer: Authorizer | None = None
    #: The group coordinator's settings.
    coordinator: CoordinatorConfig = field(default_factory=CoordinatorConfig)
    #: How many brokers (node ids 1..N, each with its own listener, sharing one metadata view).
    brokers: int = 1
    #: Kafka's ``offsets.topic.num.partitions``: groups are placed by hashing over these partitions.
    offsets_partitions: int = 50
    #: Keep every record the coordinator writes, which `Broker.fail_over_coordinator` replays.
    #: The log only grows (each offset commit adds to it), so a long-running server that never
    #: fails over turns it off.
    keep_coordinator_log: bool = True
    #: Kafka's ``group.coordinator.rebalance.protocols``: ``classic`` always; without ``consumer``
    #: the broker behaves as one without KIP-848 (before Kafka 4.0, or with the protocol turned
    #: off): ConsumerGroupHeartbeat and ConsumerGroupDescribe are not advertised and are answered
    #: UNSUPPORTED_VERSION.
    group_protocols: tuple[str, ...] = ("classic", "consumer")

    @property
    def consumer_protocol_enabled(self) -> bool:
        """The KIP-848 consumer group protocol is served."""
        return "consumer" in self.group_protocols

    @property
    def security_protocol(self) -> str:
        """The listener's ``security.protocol``: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL."""
        return ("SASL_" if self.sasl else "") + ("SSL" if self.tls else "PLAINTEXT")

    def listeners(self) -> list[Listener]:
        """Every listener of a broker: the main one (named after its security protocol) first."""
        main = Listener(self.security_protocol, self.port, self.tls, self.sasl)
        return [main, *self.extra_listeners]

    @property
    def advertised(self) -> str:
        """The host clients are told to connect to."""
        if self.advertised_host:
            return self.advertised_host
        return "127.0.0.1" if self.host in ("", "0.0.0.0", "::") else self.host

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ConfigError("port", f"must be between 0 and 65535, got {self.port}")
        if self.default_partitions <= 0:
            raise ConfigError("default_partitions", "must be positive")
        if self.retention_bytes is not None and self.retention_bytes <= 0:
            raise ConfigError("retention_bytes", "must be positive (or None to keep everything)")
        names = [listener.name for listener in self.listeners()]
        if len(set(names)) != len(names):
            raise ConfigError("extra_listeners", f"listener names must differ, got {names}")
        if self.brokers < 1:
            raise ConfigError("brokers", f"must be at least 1, got {self.brokers}")
        if self.offsets_partitions < 1:
            raise ConfigError("offsets_partitions", f"must be at least 1, got {self.offsets_partitions}")
        if "classic" not in self.group_protocols or not set(self.group_protocols) <= {"classic", "consumer"}:
            raise ConfigError(
                "group_protocols",
                f"must be classic, optionally with consumer, got {list(self.group_protocols)}",
            )
        if self.max_frame_bytes < 64:
            raise ConfigError("max_frame_bytes", "must be at least 64")
